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
	bool full;                /* LLVM's default<O2> and full code generation (slower) */
	bool host_only;           /* no GPU code: the bundle is for the CPU backend alone */
	double tick_s;            /* comp_dir: the engine's tick, for the checker's warnings (a for:
				   * or window shorter than it); 0: 100 ms */
	/* comp_dir: a directory that keeps each compiled bundle (compcache.c),
	 * NULL none; what it did (a hit, a refused file) in cache_note */
	const char *cache_dir;
	char *cache_note;
	size_t cache_note_len;
	/* comp_dir with keep: the bundle is not kept in cache_dir there;
	 * keep->want says whether it is to be, under keep->key, by
	 * comp_cache_keep (a reload keeps it off its critical path) */
	struct CompKeep *keep;
} CompOpts;

typedef struct CompKeep {
	bool want;
	BdKey key;
} CompKeep;

/* The baseline PTX every GPU since Volta runs (the driver compiles it for
 * newer ones); rulec adds the native one of a GPU it finds (rulec.c). */
#define COMP_DEFAULT_ARCHS "sm_70"

/* Compile plan p (made by cg_analyse from rs, or from NULL for every
 * metric).  With o->emit set, print that and make no bundle (*out NULL). */
int comp_build(const CgProg *p, const CompOpts *o, Bundle **out, char *err, size_t n);
/* A bundle of every catalog metric and no rule (what sentinel-inspect
 * metrics and tasks run without --bundle), stamped with version: about a
 * second. */
int comp_build_all(const char *version, Bundle **out, char *err, size_t n);

/* Everything rulec -o does for a directory of rule files: load, check,
 * plan, compile.  On rule errors returns 1 and *diags holds them as
 * `rulec --check` prints them (malloc'd); -errno on other failures.  A
 * success with warnings returns 0 and *diags holds those. */
int comp_dir(const char *dir, const CompOpts *o, Bundle **out, char **diags, char *err, size_t n);

/* compcache.c: the bundle an earlier compile of the same files, options
 * and compiler kept in o->cache_dir (0), or none (-errno; note says why
 * when a file was refused); keep b for them (0, or -errno and a note). */
int comp_cache_get(const RuleSet *rs, const CompOpts *o, Bundle **out, char *note, size_t n);
int comp_cache_put(const RuleSet *rs, const CompOpts *o, const Bundle *b, char *note, size_t n);
/* What comp_dir left to keep (CompOpts.keep): b under k; 0 or -errno and a note. */
int comp_cache_keep(const CompOpts *o, const CompKeep *k, const Bundle *b, char *note, size_t n);
/* The code alone (compcache.c): k from the compiler, the options and the
 * back end's input modules (false: no key, out of memory); an earlier
 * compile's x86-64 object and PTX for it into b (0; b owns them), or none
 * (-errno, a note when a file was refused); keep b's code for k. */
struct LLVMOpaqueModule;
bool comp_code_key(struct LLVMOpaqueModule *const *m, unsigned nm, const CompOpts *o, BdKey *k);
int comp_code_get(const CompOpts *o, const BdKey *k, Bundle *b, char *note, size_t n);
int comp_code_put(const CompOpts *o, const BdKey *k, const Bundle *b, char *note, size_t n);

/* Only what the plan's code would need from a kernel: generate and
 * relocate the host code, keep the relocations (rulec --check --target). */
int comp_relocs(const CgProg *p, ReloSet *out, char *err, size_t n);

#endif
