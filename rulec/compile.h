/* compile.h - from a checked rule set to a bundle.
 *
 * For each target (the host, NVPTX) in its own LLVM context: the runtime
 * library's bitcode, the generated rule code (cg.c), CO-RE relocation
 * (core.c), the LLView pass (llview.c), then internalise, optimise and emit
 * an x86-64 object and PTX for each requested GPU architecture.
 */
#ifndef SENTINEL_COMPILE_H
#define SENTINEL_COMPILE_H

#include "bundle.h"
#include "cg.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct CompOpts {
	const char *archs;        /* "sm_70,sm_90" (NULL: that default) */
	const char *emit;         /* NULL, or llvm, llvm-opt, llvm-host, ptx, manifest, llview-stats */
	FILE *emit_out;
	FILE *progress;           /* phase timings, or NULL */
	const char *version;
	bool verify_only;         /* generate, relocate, LLView, verify; no optimisation or code */
} CompOpts;

#define COMP_DEFAULT_ARCHS "sm_70,sm_90"

/* Compile plan p (made by cg_analyse from rs, or from NULL for every
 * metric).  With o->emit set, print that and make no bundle (*out NULL). */
int comp_build(const CgProg *p, const CompOpts *o, Bundle **out, char *err, size_t n);

#endif
