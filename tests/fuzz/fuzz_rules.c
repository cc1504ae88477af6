/* libFuzzer target: the whole rulec front end (YAML loader, schema, lexer,
 * parser, checker and the diagnostic formatter) on arbitrary bytes. */
#include "fuzz_load.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RuleSet rs = {0};
	DiagCtx d = {.max_errors = 200};
	fuzz_load(data, size, &rs, &d);
	diag_sort(&d);
	/* format everything, as rulec would, into a null sink */
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		diag_print_text(&d, null, true);
		diag_print_json(&d, null);
		fclose(null);
	}
	rs_free(&rs);
	diag_free(&d);
	return 0;
}
