/* libFuzzer target: the code generator.  Every input that the front end
 * accepts is planned, generated for both targets, CO-RE relocated, passed
 * through LLView and verified by LLVM; a verifier failure or a crash is a
 * finding.  Fed by the rule fuzzer's corpus (tests/fuzz/run.sh). */
#include "cg.h"
#include "compile.h"
#include "fuzz_load.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RuleSet rs = {0};
	DiagCtx d = {.max_errors = 50};
	fuzz_load(data, size, &rs, &d);
	CgProg plan = {0};
	if (!d.nerr && rs.n && cg_analyse(&plan, &rs, &d)) {
		CompOpts co = {.verify_only = true};
		Bundle *b = NULL;
		char err[1024] = "";
		if (comp_build(&plan, &co, &b, err, sizeof err)) {
			fprintf(stderr, "code generation failed on rules the checker accepted: %s\n", err);
			abort();
		}
		bd_free(b);
	}
	cg_free(&plan);
	rs_free(&rs);
	diag_free(&d);
	return 0;
}
