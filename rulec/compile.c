/* compile.c - from a checked rule set to a bundle (see compile.h). */
#include "compile.h"
#include "core.h"
#include "llview.h"
#include "kx.h"
#include "lvm.h"
#include "snrt.h"

#include <llvm-c/DebugInfo.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(CG_HIST_TRACKS == BD_HIST_TRACKS, "a history's tracked windows");

typedef struct Target {
	LvmTarget t;
	LLVMContextRef ctx;
	LLVMModuleRef m;
	LvStats lv;
} Target;

static double comp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void comp_phase(const CompOpts *o, const char *what, double *t0)
{
	double t = comp_now();
	if (o->progress)
		fprintf(o->progress, "rulec: %-28s %7.3f s\n", what, t - *t0);
	*t0 = t;
}

/* Everything but the entry points becomes internal, so the optimiser
 * inlines the library into the rules and drops what no rule reads. */
static void comp_internalize(LLVMModuleRef m, bool host)
{
	static const char *const keep[] = {"sn_tick", "sn_tick_step", "sn_handoff", "sn_feed_tick", "sn_gpu_main",
					   "sn_gpu_tick", "sn_gpu_fleet", KX_MEM_SYM, CORE_TABLE,
					   /* the rules' data: one definition, in a part of its own */
					   "sn_rule_shape", "sn_rule_desc", "sn_rule_cbase", "sn_rule_const",
					   /* the host's read count, a thread's own (engine/cpu.c); on
					    * the GPU a block's, in shared memory */
					   KX_CUR_SYM};
	size_t nkeep = sizeof keep / sizeof *keep - !host;
	for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
		size_t len;
		const char *name = LLVMGetValueName2(f, &len);
		bool k = false;
		for (size_t i = 0; i < nkeep; i++)
			k = k || !strcmp(name, keep[i]);
		if (!LLVMIsDeclaration(f) && !k)
			LLVMSetLinkage(f, LLVMInternalLinkage);
		/* the target machine, not the library's build, picks the GPU */
		LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-cpu", 10);
		LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-features", 15);
		/* the library is freestanding ("no-builtins": no memcpy or
		 * memset calls conjured from loops); the generated code must be
		 * too, or the inliner refuses to inline the library's small
		 * accessors (sn_task, sn_host) into rules and rows */
		if (!LLVMIsDeclaration(f) && !LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "no-builtins", 11))
			LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
						LLVMCreateStringAttribute(LLVMGetModuleContext(m), "no-builtins", 11, "", 0));
		/* rules and jobs stay functions: readable PTX, and code size per rule */
		if (!strncmp(name, "rule_", 5) || !strncmp(name, "job_", 4) || !strncmp(name, "dispatch_", 9))
			LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
						LLVMCreateEnumAttribute(LLVMGetModuleContext(m),
									LLVMGetEnumAttributeKindForName("noinline", 8), 0));
	}
	for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g)) {
		size_t len;
		const char *name = LLVMGetValueName2(g, &len);
		bool k = false;
		for (size_t i = 0; i < nkeep; i++)
			k = k || !strcmp(name, keep[i]);
		if (!LLVMIsDeclaration(g) && !k)
			LLVMSetLinkage(g, LLVMInternalLinkage);
	}
}

/* A word of the caches' for the caller (CompOpts.cache_note, which
 * sentineld logs) and for -v. */
static void comp_note(const CompOpts *o, const char *note)
{
	if (!*note)
		return;
	if (o->cache_note)
		snprintf(o->cache_note, o->cache_note_len, "%s", note);
	if (o->progress)
		fprintf(o->progress, "rulec: %s\n", note);
}

static int comp_print(const CompOpts *o, LLVMModuleRef m)
{
	char *s = lvm_print(m);
	if (!s)
		return -ENOMEM;
	fputs(s, o->emit_out ? o->emit_out : stdout);
	free(s);
	return 0;
}

static uint64_t comp_rule_hash(const Rule *r)
{
	uint64_t h = BD_FNV_INIT;
	h = bd_fnv1a(r->expr_src.text, r->expr_src.len, h);
	h = bd_fnv1a("\0", 1, h);
	if (r->clear)
		h = bd_fnv1a(r->clear_src.text, r->clear_src.len, h);
	double nums[3] = {r->for_s, r->clear_for_s, (double)r->m_of * 4096 + r->n_of};
	if (r->partial_windows)
		h = bd_fnv1a("windows: partial", 16, h);
	return bd_fnv1a(nums, sizeof nums, h);
}

static char *comp_strndup(const char *s, size_t n)
{
	char *r = malloc(n + 1);
	if (r) {
		memcpy(r, s, n);
		r[n] = 0;
	}
	return r;
}

static BdKV *comp_kvs(const KV *kv, size_t n)
{
	BdKV *r = calloc(n + 1, sizeof *r);
	for (size_t i = 0; r && i < n; i++) {
		r[i].key = strdup(kv[i].key);
		r[i].value = strdup(kv[i].value ? kv[i].value : "");
	}
	return r;
}

/* The manifest's view of the plan and the rules. */
_Static_assert((int)JOB_CPUS == BD_JOB_CPUS && (int)JOB_HOST == BD_JOB_HOST && (int)JOB_CPU == BD_JOB_CPU &&
	       (int)JOB_TASKS == BD_JOB_TASKS && (int)JOB_OBJS == BD_JOB_OBJS, "cg.h's job kinds are bundle.h's");

static int comp_fill(Bundle *b, const CgProg *p, const CompOpts *o)
{
	b->abi = SN_ABI_VERSION;
	b->rulec_version = strdup(o->version ? o->version : "?");
	char when[32];
	time_t now = time(NULL);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	b->created = strdup(when);
	if (p->nhost > BD_TABLE_MAX || p->ncpu > BD_TABLE_MAX || p->ntask > BD_TABLE_MAX)
		return -E2BIG;
	memcpy(b->host_m, p->host_m, p->nhost * sizeof *p->host_m);
	memcpy(b->cpu_m, p->cpu_m, p->ncpu * sizeof *p->cpu_m);
	memcpy(b->task_m, p->task_m, p->ntask * sizeof *p->task_m);
	b->nhost = p->nhost;
	b->ncpu = p->ncpu;
	b->ntask = p->ntask;
	for (int k = 0; k < ENT_NOBJ; k++) {
		if (p->nobj[k] > BD_OBJ_TABLE_MAX)
			return -E2BIG;
		memcpy(b->obj_m[k], p->obj_m[k], p->nobj[k] * sizeof *p->obj_m[k]);
		b->nobj[k] = p->nobj[k];
	}
	b->ntwin = p->ntwin;
	b->comm = p->comm;
	b->hist = calloc(p->nhist + 1, sizeof *b->hist);
	b->jobs = calloc(p->njobs + 1, sizeof *b->jobs);
	if (!b->hist || !b->jobs)
		return -ENOMEM;
	for (unsigned i = 0; i < p->nhist; i++) {
		MetricId m = p->hist_m[i];
		BdHist *h = &b->hist[b->nhist++];
		*h = (BdHist){m, p->hist_win[m], !p->hist_full[m], {0}, p->hist_ntrk[m]};
		memcpy(h->trk, p->hist_trk[m], sizeof h->trk);
	}
	for (unsigned i = 0; i < p->njobs; i++)
		b->jobs[b->njobs++] = (BdJob){(int)p->jobs[i].kind, p->jobs[i].metric, p->jobs[i].obj};
	CgTable tab[CG_TABLES];
	unsigned ntab;
	if (cg_table_bytes(p, tab, &ntab))
		return -ENOMEM;
	_Static_assert(CG_TABLES <= BD_MAX_DATA, "a bundle holds every data table");
	for (unsigned t = 0; t < ntab; t++) {
		BdData *x = &b->data[b->ndata++];
		snprintf(x->name, sizeof x->name, "%s", tab[t].name);
		x->bytes = tab[t].bytes;
		x->len = tab[t].len;
	}
	const RuleSet *rs = p->rs;
	if (!rs)
		return 0;
	b->sources = calloc(rs->nfiles + 1, sizeof *b->sources);
	b->rules = calloc(rs->n + 1, sizeof *b->rules);
	if (!b->sources || !b->rules)
		return -ENOMEM;
	for (size_t i = 0; i < rs->nfiles; i++)
		b->sources[b->nsources++] = strdup(rs->files[i]->name);
	for (size_t i = 0; i < rs->n; i++) {
		const Rule *r = &rs->v[i];
		BdRule *x = &b->rules[b->nrules++];
		SrcLoc loc = yt_loc(r->name_node);
		x->name = strdup(r->name);
		x->group = r->group ? strdup(r->group) : NULL;
		x->severity = strdup(severity_name(r->severity));
		x->file = strdup(loc.file ? loc.file->name : "?");
		x->line = loc.line;
		x->col = loc.col;
		x->expr = comp_strndup(r->expr_src.text, r->expr_src.len);
		x->clear = r->clear ? comp_strndup(r->clear_src.text, r->clear_src.len) : NULL;
		x->description = r->description ? strdup(r->description) : NULL;
		x->for_s = r->for_s;
		x->clear_for_s = r->clear_for_s;
		x->m_of = r->m_of;
		x->n_of = r->n_of;
		x->labels = comp_kvs(r->labels, r->nlabels);
		x->nlabels = r->nlabels;
		x->annotations = comp_kvs(r->annotations, r->nannotations);
		x->nannotations = r->nannotations;
		if (r->ntargets) {
			x->targets = comp_kvs(r->targets, r->ntargets);
			x->ntargets = r->ntargets;
		}
		x->metrics = p->rule_metrics[i];
		x->entity = cg_value_entity(r->expr);
		x->per_entity = cg_vector_entity(r->expr) >= 0;
		x->max_alerts = x->per_entity ? (r->max_alerts ? r->max_alerts : RULE_MAX_ALERTS_DEFAULT) : 0;
		x->hash = comp_rule_hash(r);
	}
	return 0;
}

static int comp_front(Target *T, const CgProg *p, ReloSet *relos, char *err, size_t n)
{
	T->ctx = LLVMContextCreate();
	int e = lvm_load_library(T->ctx, T->t, &T->m, err, n);
	if (!e)
		e = cg_emit(T->m, p, err, n);
	if (!e)
		e = core_relocate(T->m, relos, err, n);
	return e;
}

static void comp_dispose(Target *T)
{
	if (T->m)
		LLVMDisposeModule(T->m);
	if (T->ctx)
		LLVMContextDispose(T->ctx);
}

/* Rule functions (shapes, cg_shape.c) per PTX part: ptxas's time on one
 * module grows faster than the rule count (docs/benchmarks.md), on parts
 * of this size it is linear.  A multiple of the dispatcher's fan-out
 * (cg.c), so each dispatch_rules_eval_K lives with its rules. */
#define COMP_PART_RULES 512u
_Static_assert(COMP_PART_RULES % CG_FANOUT == 0, "a part holds whole dispatch functions");

/* The parts of a rule set above COMP_PART_RULES rules: the kernel, the
 * runtime and the jobs; the shapes' functions, COMP_PART_RULES a part; the
 * rules' data tables (sn_rule_*, zeros the engine fills: cg_data) last,
 * alone, sized by the rule count, so that a rule set of another size
 * changes that small part and the driver's JIT cache keeps the rest. */
static unsigned comp_nparts(size_t nrules, unsigned nshapes)
{
	return nrules > COMP_PART_RULES ? 2 + (nshapes + COMP_PART_RULES - 1) / COMP_PART_RULES : 1;
}

/* rule_N and dispatch_rules_eval_K go to part 1 + N / COMP_PART_RULES,
 * the data tables to the last part; the rest to part 0. */
static unsigned comp_part_of(const char *name, void *arg)
{
	unsigned nparts = *(const unsigned *)arg;
	unsigned long k;
	char *end;
	if (!strncmp(name, "rule_", 5)) {
		k = strtoul(name + 5, &end, 10);
		return *end ? 0 : 1 + (unsigned)(k / COMP_PART_RULES);
	}
	if (!strncmp(name, "dispatch_rules_eval_", 20)) {
		k = strtoul(name + 20, &end, 10);
		return *end ? 0 : 1 + (unsigned)(k * CG_FANOUT / COMP_PART_RULES);
	}
	if (!strncmp(name, "sn_rule_", 8))
		return nparts - 1;
	return 0;
}

/* One PTX text per architecture; each from its own copy of the module
 * (code generation may rewrite the IR it is given).  Above COMP_PART_RULES
 * rules, in parts (lvm_emit_parts), which --emit=ptx prints as they are. */
static int comp_ptx(const Target *T, const char *archs, size_t nrules, unsigned nshapes, Bundle *b,
		    const CompOpts *o, char *err, size_t n)
{
	unsigned nparts = comp_nparts(nrules, nshapes);
	char list[128];
	const char *cpus[BD_MAX_PTX];
	unsigned ncpus = 0;
	snprintf(list, sizeof list, "%s", archs);
	for (char *save = NULL, *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
		if (strncmp(a, "sm_", 3) || ncpus == BD_MAX_PTX)
			return snprintf(err, n, "--gpu-arch: '%s' is not an architecture such as sm_70 "
				       "(at most %d)", a, BD_MAX_PTX), -EINVAL;
		cpus[ncpus++] = a;
	}
	char *text[BD_MAX_PTX] = {0};
	size_t len[BD_MAX_PTX] = {0};
	int e = 0;
	if (nparts > 1)
		e = lvm_emit_parts(T->m, nparts, comp_part_of, &nparts, cpus, ncpus, o->full, BD_PTX_PART, text, len, err, n);
	for (unsigned c = 0; c < ncpus && !e && nparts == 1; c++) {
		LLVMTargetMachineRef tm;
		e = lvm_machine(LVM_NVPTX, cpus[c], o->full, &tm, err, n);
		if (e)
			break;
		LLVMModuleRef copy = LLVMCloneModule(T->m);
		void *t = NULL;
		e = lvm_emit(copy, tm, &t, &len[c], err, n);
		text[c] = t;
		LLVMDisposeModule(copy);
		LLVMDisposeTargetMachine(tm);
	}
	for (unsigned c = 0; c < ncpus; c++) {
		if (e) {
			free(text[c]);
			continue;
		}
		BdPtx *x = &b->ptx[b->nptx++];
		x->text = text[c];
		x->len = len[c];
		snprintf(x->arch, sizeof x->arch, "%s", cpus[c]);
	}
	return e;
}

/* One target's back half: optimise, then the x86-64 object or the PTX. */
typedef struct Back {
	Target *T;
	Bundle *b;
	const CompOpts *o;
	const char *archs;        /* NVPTX: the architectures */
	size_t nrules;
	unsigned nshapes;
	int e;
	char err[1024];
	double secs;
} Back;

static void comp_back(Back *k)
{
	double t0 = comp_now();
	LLVMTargetMachineRef tm;
	k->e = lvm_machine(k->T->t, k->T->t == LVM_NVPTX ? "sm_70" : NULL, k->o->full, &tm, k->err, sizeof k->err);
	if (k->e)
		return;
	k->e = lvm_optimize(k->T->m, tm, k->o->full, k->err, sizeof k->err);
	if (!k->e && k->T->t == LVM_HOST)
		k->e = lvm_emit(k->T->m, tm, &k->b->host_obj, &k->b->host_len, k->err, sizeof k->err);
	LLVMDisposeTargetMachine(tm);
	if (!k->e && k->T->t == LVM_NVPTX)
		k->e = comp_ptx(k->T, k->archs, k->nrules, k->nshapes, k->b, k->o, k->err, sizeof k->err);
	k->secs = comp_now() - t0;
}

static void *comp_back_thread(void *arg)
{
	comp_back(arg);
	return NULL;
}

int comp_build(const CgProg *p, const CompOpts *o, Bundle **out, char *err, size_t n)
{
	Target T[2] = {{.t = LVM_HOST}, {.t = LVM_NVPTX}};
	Bundle *b = calloc(1, sizeof *b);
	double t0 = comp_now();
	int e = b ? 0 : -ENOMEM;
	*out = NULL;
	const char *emit = o->emit;
	/* the targets: the host's code, and the GPU's unless host_only */
	int nt = o->host_only && !emit ? 1 : 2;
	for (int i = 0; i < nt && !e; i++)
		e = comp_front(&T[i], p, &b->relos, err, n);
	if (!e)
		comp_phase(o, "generate and relocate", &t0);
	for (int i = 0; i < nt && !e; i++) {
		e = core_finish(T[i].m, &b->relos);
		if (!e)
			e = lv_rewrite(T[i].m, &T[i].lv, err, n);
		if (!e)
			e = lvm_verify(T[i].m, i ? "GPU code" : "host code", err, n);
	}
	if (!e)
		comp_phase(o, "LLView", &t0);
	if (!e && o->verify_only)
		goto out;
	if (!e && emit && !strcmp(emit, "llvm")) {
		e = comp_print(o, T[1].m);
		goto out;
	}
	if (!e && emit && !strcmp(emit, "llview-stats")) {
		for (int i = 0; i < 2; i++)
			fprintf(o->emit_out ? o->emit_out : stdout,
				"%s: %u kernel loads rewritten in %u functions, %u kernel copies, %u loads proved local\n",
				i ? "nvptx" : "host", T[i].lv.loads_kernel, T[i].lv.functions, T[i].lv.copies_kernel,
				T[i].lv.loads_local);
		goto out;
	}
	/* the same code as an earlier compile (only the rules' data differ):
	 * its object and PTX, and no back end (compcache.c) */
	BdKey ck;
	LLVMModuleRef ms[2] = {T[0].m, T[1].m};
	bool code_cached = false, code_keyed = !e && o->cache_dir && !emit && comp_code_key(ms, (unsigned)nt, o, &ck);
	if (code_keyed) {
		char note[1200];
		code_cached = !comp_code_get(o, &ck, b, note, sizeof note);
		comp_note(o, note);
		comp_phase(o, code_cached ? "code from the cache" : "code key", &t0);
	}
	for (int i = 0; i < nt && !e && !code_cached; i++) {
		comp_internalize(T[i].m, T[i].t != LVM_NVPTX);
		LLVMStripModuleDebugInfo(T[i].m);
	}
	if (!e && emit && (!strcmp(emit, "llvm-opt") || !strcmp(emit, "llvm-host"))) {
		int i = strcmp(emit, "llvm-host") ? 1 : 0;
		LLVMTargetMachineRef tm;
		e = lvm_machine(T[i].t, NULL, o->full, &tm, err, n);
		if (!e) {
			e = lvm_optimize(T[i].m, tm, o->full, err, n);
			LLVMDisposeTargetMachine(tm);
		}
		if (!e)
			e = comp_print(o, T[i].m);
		goto out;
	}
	/* the two targets' back halves are independent (own LLVM contexts):
	 * the host code on a thread of its own, the PTX here */
	if (!e && !code_cached) {
		Back host = {.T = &T[0], .b = b, .o = o};
		Back gpu = {.T = &T[1], .b = b, .o = o, .nrules = p->rs ? p->rs->n : 0, .nshapes = p->shapes.n,
			    .archs = emit && !strcmp(emit, "ptx") ? "sm_70" : o->archs ? o->archs : COMP_DEFAULT_ARCHS};
		pthread_t th;
		bool threaded = nt == 2 && pthread_create(&th, NULL, comp_back_thread, &host) == 0;
		if (!threaded)
			comp_back(&host);
		if (nt == 2)
			comp_back(&gpu);
		if (threaded)
			pthread_join(th, NULL);
		e = host.e ? host.e : gpu.e;
		if (e)
			snprintf(err, n, "%s", host.e ? host.err : gpu.err);
		else if (o->progress) {
			fprintf(o->progress, "rulec: %-28s %7.3f s\n", "host code (in parallel)", host.secs);
			fprintf(o->progress, "rulec: %-28s %7.3f s\n", "PTX", gpu.secs);
			for (size_t i = 0; i < b->nptx; i++)
				fprintf(o->progress, "rulec:   PTX for %-18s %7zu bytes\n", b->ptx[i].arch, b->ptx[i].len);
		}
		char note[1200];
		if (!e && code_keyed && comp_code_put(o, &ck, b, note, sizeof note))
			comp_note(o, note);
		t0 = comp_now();
	}
	if (!e && emit && !strcmp(emit, "ptx")) {
		fputs(b->ptx[0].text, o->emit_out ? o->emit_out : stdout);
		goto out;
	}
	if (!e) {
		e = comp_fill(b, p, o);
		comp_phase(o, "manifest", &t0);
	}
	if (!e && emit && !strcmp(emit, "manifest")) {
		char *s = bd_manifest_json(b);
		fprintf(o->emit_out ? o->emit_out : stdout, "%s\n", s ? s : "");
		free(s);
		goto out;
	}
	if (!e && emit) {
		snprintf(err, n, "--emit takes llvm, llvm-opt, llvm-host, ptx, manifest or llview-stats");
		e = -EINVAL;
	}
	if (!e) {
		*out = b;
		b = NULL;
	}
out:
	if (e == -ENOMEM && !*err)
		snprintf(err, n, "out of memory");
	for (int i = 0; i < 2; i++)
		comp_dispose(&T[i]);
	bd_free(b);
	return e;
}

int comp_relocs(const CgProg *p, ReloSet *out, char *err, size_t n)
{
	Target T = {.t = LVM_HOST};
	int e = comp_front(&T, p, out, err, n);
	comp_dispose(&T);
	return e;
}

/* What comp_dir holds while it runs, freed at its end: also when the front
 * end runs out of memory part way (u_oom), so on the heap and reached
 * through one pointer that setjmp's frame does not change. */
typedef struct CompDir {
	char **paths;
	size_t npaths;
	RuleSet rs;
	DiagCtx d;
	CgProg plan;
} CompDir;

static void comp_dir_free(CompDir *c)
{
	cg_free(&c->plan);
	rs_free(&c->rs);
	diag_free(&c->d);
	for (size_t i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	free(c);
}

static int comp_dir_run(CompDir *c, const char *dir, const CompOpts *o, Bundle **out, char **diags, char *err,
			size_t n)
{
	CheckOpts co = {.tick = o->tick_s > 0 ? o->tick_s : 0.1};
	double t0 = comp_now();
	int e = rs_list_dir(dir, &c->paths, &c->npaths);
	if (e) {
		snprintf(err, n, "%s: cannot read the rule directory: %s", dir, strerror(-e));
		return e;
	}
	if (!c->npaths) {
		snprintf(err, n, "%s: no rule files (*.yaml) in the rule directory", dir);
		return -ENOENT;
	}
	for (size_t i = 0; i < c->npaths; i++)
		rf_load(&c->rs, c->paths[i], &c->d, &co);
	rs_check_all(&c->rs, &c->d);
	comp_phase(o, "read and check", &t0);
	if (!c->d.nerr)
		cg_analyse(&c->plan, &c->rs, &c->d);
	comp_phase(o, "plan", &t0);
	const DiagCtx *d = &c->d;
	const RuleSet *rs = &c->rs;
	if (d->nerr || d->nwarn) {
		size_t len;
		FILE *m = open_memstream(diags, &len);
		if (m) {
			diag_sort(&c->d);
			diag_print_text(d, m, false);
			if (d->nerr)
				fprintf(m, "%u error%s in %zu rule%s from %zu file%s; the running rules are unchanged\n",
					d->nerr, d->nerr == 1 ? "" : "s", rs->n, rs->n == 1 ? "" : "s", rs->nfiles,
					rs->nfiles == 1 ? "" : "s");
			else
				fprintf(m, "%u warning%s in %zu rule%s from %zu file%s\n", d->nwarn, d->nwarn == 1 ? "" : "s",
					rs->n, rs->n == 1 ? "" : "s", rs->nfiles, rs->nfiles == 1 ? "" : "s");
			fclose(m);
		}
	}
	if (d->nerr)
		return 1;
	char note[4400];
	if (o->cache_note && o->cache_note_len)
		*o->cache_note = 0;
	if (o->keep)
		o->keep->want = false;
	e = comp_cache_get(&c->rs, o, out, note, sizeof note);
	if (e) {
		e = comp_build(&c->plan, o, out, err, n);
		t0 = comp_now();
		char put[1200];
		if (!e && comp_cache_put(&c->rs, o, *out, put, sizeof put) && !*note)
			snprintf(note, sizeof note, "%s", put);
		if (!e && o->cache_dir && !o->keep)
			comp_phase(o, "kept in the cache", &t0);
	}
	comp_note(o, note);                       /* (none: comp_build's stands, if it had one) */
	return e;
}

#define COMP_OOM "%s: out of memory checking the rules; nothing changed (free memory, then try again)"

/* comp_dir_run, with the front end's out-of-memory caught (u_oom): the
 * caller's rules stay, and what this compile had allocated is freed */
int comp_dir(const char *dir, const CompOpts *o, Bundle **out, char **diags, char *err, size_t n)
{
	*out = NULL;
	*diags = NULL;
	CompDir *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, n, COMP_OOM, dir);
		return -ENOMEM;
	}
	c->d.max_errors = 1000;
	jmp_buf jb;
	jmp_buf *prev = u_oom_catch(&jb);
	int e;
	if (setjmp(jb)) {
		free(*diags);
		*diags = NULL;
		snprintf(err, n, COMP_OOM, dir);
		e = -ENOMEM;
	} else {
		e = comp_dir_run(c, dir, o, out, diags, err, n);
	}
	u_oom_catch(prev);
	comp_dir_free(c);
	return e;
}

int comp_build_all(const char *version, Bundle **out, char *err, size_t n)
{
	CgProg plan;
	DiagCtx d = {0};
	cg_analyse(&plan, NULL, &d);
	diag_free(&d);
	CompOpts co = {.version = version};
	int r = comp_build(&plan, &co, out, err, n);
	cg_free(&plan);
	return r;
}
