/* rulec_backend.c - the part of rulec that needs LLVM, the kernel model and the
 * CPU backend: compiling (-o, --emit, --all-metrics), compiler passes
 * (--pass), --target checks and `rulec test`.  Built as
 * librulec-backend.so and loaded by rulec only when one of those is asked
 * for, so `rulec --check` never maps libLLVM (52 MiB of relocations before
 * reading a rule).  See rulec_backend.h.  A program's part (tools/): it
 * reaches the compiler, the kernel model and the engine, which rulec's
 * library folder does not.
 */
#include "rulec_backend.h"
#include "catalog.h"
#include "bundle.h"
#include "cg.h"
#include "compile.h"
#include "core.h"
#include "diag.h"
#include "gpu.h"
#include "ktarget.h"
#include "llview.h"
#include "lvm.h"
#include "msrc.h"
#include "reloc.h"
#include "rules.h"
#include "ruletest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rulec --check --target: every rule's metrics against a real kernel. */
static int rb_check_target(const RuleSet *rs, const CgProg *plan, const char *source, const KtOptions *ko, DiagCtx *d,
			bool verbose)
{
	char err[1024] = "";
	MemSource *s = NULL;
	KTarget *t = NULL;
	Bundle b = {0};
	RlResult res = {0};
	int e = comp_relocs(plan, &b.relos, err, sizeof err);
	if (!e)
		e = ms_open(source, &s, err, sizeof err);
	if (!e && (e = kt_open(s, ko, &t, err, sizeof err)))
		fprintf(stderr, "rulec: %s: ", source);
	if (!e)
		e = rl_resolve(&b, t, &res, err, sizeof err);
	if (e) {
		fprintf(stderr, "rulec: --target: %s\n", err);
		goto out;
	}
	for (size_t i = 0; i < rs->n; i++) {
		for (int m = 0; m < MET__COUNT; m++) {
			if (!met_has(&plan->rule_metrics[i], (MetricId)m) || res.avail[m])
				continue;
			diag_report(d, yt_loc(rs->v[i].name_node), DIAG_TARGET_MISSING,
				    "rule %s cannot run on Linux %s: %s", rs->v[i].name, t->release, res.reason[m]);
			break;
		}
	}
	fprintf(stderr, "rulec: --target: Linux %s, %zu relocations, %u unresolved%s\n", t->release, res.n, res.failed,
		res.failed && !verbose ? " (-v lists them)" : "");
	for (size_t i = 0; verbose && i < res.n; i++) {
		if (res.ok[i])
			continue;
		char what[256];
		relo_describe(&b.relos.v[i], what, sizeof what);
		fprintf(stderr, "rulec:   unresolved %s: %s\n", what, res.why[i]);
	}
out:
	rl_free(&res);
	relo_free(&b.relos);
	kt_close(t);
	ms_close(s);
	return e;
}

/* rulec -o / --emit: plan, compile, write. */
static int rb_compile(const RuleSet *rs, const char *output, const char *emit, const char *archs, bool verbose,
		   bool full)
{
	DiagCtx d = {0};
	CgProg plan;
	if (!cg_analyse(&plan, rs, &d)) {       /* reported by the check already */
		cg_free(&plan);
		diag_free(&d);
		return 1;
	}
	diag_free(&d);
	if (!output && !emit) {
		fprintf(stderr, "rulec: --all-metrics needs -o FILE or --emit=WHAT\n");
		cg_free(&plan);
		return 2;
	}
	/* the baseline PTX, and the native one of a GPU on this machine */
	char native[16], list[64];
	if (!archs && !emit && !gpu_probe_arch(native, sizeof native) && strcmp(native, COMP_DEFAULT_ARCHS)) {
		snprintf(list, sizeof list, "%s,%s", COMP_DEFAULT_ARCHS, native);
		archs = list;
		if (verbose)
			fprintf(stderr, "rulec: adding native PTX for the %s GPU of this machine\n", native);
	}
	CompOpts o = {.archs = archs, .emit = emit, .progress = verbose ? stderr : NULL, .version = SENTINEL_VERSION,
		      .full = full};
	Bundle *b = NULL;
	char err[1024] = "";
	int e = comp_build(&plan, &o, &b, err, sizeof err);
	cg_free(&plan);
	if (e) {
		fprintf(stderr, "rulec: %s\n", err);
		return 2;
	}
	if (!b)
		return 0;
	e = bd_write(b, output, err, sizeof err);
	if (e)
		fprintf(stderr, "rulec: %s\n", err);
	else
		fprintf(stderr, "rulec: %zu rule%s compiled into %s (x86-64 %zu KiB, PTX %zu arch%s)\n", b->nrules,
			b->nrules == 1 ? "" : "s", output, (b->host_len + 1023) / 1024, b->nptx, b->nptx == 1 ? "" : "s");
	bd_free(b);
	return e ? 2 : 0;
}

/* rulec --pass=core,llview FILE.ll: run compiler passes on IR, print it. */
static int rb_run_passes(const char *passes, char **paths, size_t npaths)
{
	if (npaths != 1) {
		fprintf(stderr, "rulec: --pass takes one LLVM IR file\n");
		return 2;
	}
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef m;
	char err[1024] = "";
	int e = lvm_load_file(ctx, paths[0], &m, err, sizeof err), rc = 0;
	if (e) {
		fprintf(stderr, "rulec: %s\n", err);
		LLVMContextDispose(ctx);
		return 2;
	}
	ReloSet r = {0};
	if (strstr(passes, "core")) {
		e = core_relocate(m, &r, err, sizeof err);
		if (!e)
			e = core_finish(m, &r);
	}
	LvStats st;
	if (!e && strstr(passes, "llview"))
		e = lv_rewrite(m, &st, err, sizeof err);
	if (e) {
		fprintf(stderr, "%s\n", err);
		rc = 1;
	} else {
		char *s = lvm_print(m);
		fputs(s, stdout);
		free(s);
		for (size_t i = 0; i < r.n; i++) {
			char d[256];
			relo_describe(&r.v[i], d, sizeof d);
			printf("; relocation %zu: %s%s\n", i, d, r.v[i].weak ? " (weak)" : "");
		}
		for (size_t i = 0; i < r.nuse; i++)
			for (size_t k = 0; k < r.use[i].n; k++)
				printf("; %s needs relocation %u%s\n", r.use[i].fn, r.use[i].idx[k],
				       r.use[i].required[k] ? "" : " (optional)");
	}
	relo_free(&r);
	LLVMDisposeModule(m);
	LLVMContextDispose(ctx);
	return rc;
}


static const RcBackend rb_table = {
	.abi = RC_BACKEND_ABI,
	.compile = rb_compile,
	.run_passes = rb_run_passes,
	.check_target = rb_check_target,
	.test = ut_run,
	.replay = ut_replay,
};

const RcBackend *rc_backend(void)
{
	return &rb_table;
}
