/* rulec_backend.h - what rulec loads only to compile (rulec_backend.c and
 * ruletest_run.c, built as librulec-backend.so).
 *
 * rulec itself is the front end: YAML, the checker, diagnostics.  Checking
 * rules needs nothing more, so it never maps libLLVM.  Everything else
 * rulec does goes through this table, found with dlopen next to the rulec
 * binary (a build tree) or in SENTINEL_PKGLIBDIR (an installation).  Both
 * sides are built from the same tree; RC_BACKEND_ABI guards against a
 * stale library.
 */
#ifndef SENTINEL_BACKEND_H
#define SENTINEL_BACKEND_H

#include "cg.h"
#include "diag.h"
#include "ktarget.h"
#include "rules.h"
#include "ruletest.h"

#include <stdbool.h>
#include <stddef.h>

#define RC_BACKEND_ABI 2u
#define RC_BACKEND_LIB "librulec-backend.so"
#define RC_BACKEND_SYM "rc_backend"

typedef struct RcBackend {
	unsigned abi;
	/* -o / --emit / --all-metrics (rs NULL): 0, 1 rule errors, 2 failure */
	int (*compile)(const RuleSet *rs, const char *output, const char *emit, const char *archs, bool verbose,
		       bool full);
	/* --pass=core,llview FILE.ll */
	int (*run_passes)(const char *passes, char **paths, size_t npaths);
	/* --target: reports what the kernel lacks to d; < 0 when it cannot be read */
	int (*check_target)(const RuleSet *rs, const CgProg *plan, const char *source, const KtOptions *ko,
			    DiagCtx *d, bool verbose);
	/* rulec test, rulec test --replay */
	int (*test)(char **paths, size_t n, const UtOpts *o);
	int (*replay)(const char *recording, const RuleSet *rs, const UtOpts *o);
} RcBackend;

const RcBackend *rc_backend(void);

#endif
