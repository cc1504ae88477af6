/* ruletest_run.c - `rulec test`: run rule unit tests (see ruletest.h).
 *
 * Each test file's rule files are checked and compiled like `rulec -o`
 * (x86-64 code only), then every test group runs them on the CPU backend's
 * compiled code (engine/feed.h) on a simulated clock: one tick per
 * evaluation_interval from 0 to the last eval_time, each series' value at
 * a tick its latest sample at or before it (within 5 minutes, as
 * Prometheus looks back).  An alert test compares the alert firing at its
 * eval_time with the expected ones: labels (severity, the rule's labels,
 * the entity's pid/comm or cpu) and rendered annotations.
 */
#include "ruletest.h"
#include "cg.h"
#include "compile.h"
#include "feed.h"
#include "notify.h"
#include "record.h"
#include "tmpl.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UT_LOOKBACK 300.0             /* seconds, Prometheus' default */
#define UT_BASE_NS 1000000000000ull   /* simulated time 0 (the engine treats 0 as "never") */

/* One rule's alert as the sinks last heard of it. */
typedef struct UtAlert {
	uint32_t kind;            /* SnEventKind of its last event; 0 none */
	double value;
	int64_t entity;
	char comm[SN_OBJ_NAME];
} UtAlert;

/* A rule's alerts: one, or (a per-entity rule) one per entity seen. */
typedef struct UtAlerts {
	UtAlert *v;
	size_t n, cap;
} UtAlerts;

typedef struct UtRun {
	const UtOpts *o;
	const Bundle *b;
	UtAlerts *alert;          /* [nrules] */
	unsigned passed, failed;
	StrBuf junit;             /* <testcase> elements of this file */
} UtRun;

static void ut_event(void *ctx, const sn_alert *a)
{
	UtRun *R = ctx;
	if (a->rule >= R->b->nrules)
		return;
	UtAlerts *L = &R->alert[a->rule];
	size_t i = 0;
	/* a per-entity rule: the entity's alert (by its id and name) */
	while (R->b->rules[a->rule].per_entity && i < L->n &&
	       (L->v[i].entity != a->entity || strncmp(L->v[i].comm, a->comm, sizeof L->v[i].comm)))
		i++;
	if (i == L->n) {
		if (L->n == L->cap) {
			size_t cap = L->cap ? 2 * L->cap : 4;
			UtAlert *v = realloc(L->v, cap * sizeof *v);
			if (!v)
				return;
			L->v = v;
			L->cap = cap;
		}
		L->n++;
	}
	UtAlert *A = &L->v[i];
	A->kind = a->kind;
	A->value = a->value;
	A->entity = a->entity;
	memcpy(A->comm, a->comm, sizeof A->comm);
	A->comm[sizeof A->comm - 1] = 0;
}

/* The value of series S at time t (seconds), or NAN when it has none. */
static double ut_value_at(const UtSeries *S, double interval, double t)
{
	double k = floor(t / interval + 1e-9);
	if (k < 0)
		return NAN;
	for (size_t i = k >= (double)S->nv ? S->nv - 1 : (size_t)k; S->nv; i--) {
		if (t - (double)i * interval > UT_LOOKBACK + 1e-9 || S->v[i] == UT_STALE)
			return NAN;
		if (S->v[i] != UT_MISSING)
			return S->v[i];
		if (i == 0)
			break;
	}
	return NAN;
}

/* ---- what an alert looks like to a sink, and to a test ------------------------------------ */

static const char *ut_kv_get(const KV *v, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].key, key))
			return v[i].value;
	return NULL;
}

/* labels: severity, the rule's own, the entity's (a rule label wins);
 * they match want exactly, or (partial) contain it */
static void ut_labels(const BdRule *r, const UtAlert *A, StrBuf *b, const KV *want, size_t nwant, bool partial,
		      bool *match)
{
	const char *key[NT_ENTITY_LABELS + 64];
	const char *val[NT_ENTITY_LABELS + 64];
	char ev[NT_ENTITY_LABELS][NT_LABEL_MAX];
	size_t n = 0;
	key[n] = "severity", val[n++] = r->severity;
	for (size_t i = 0; i < r->nlabels && n < 64; i++)
		key[n] = r->labels[i].key, val[n++] = r->labels[i].value;
	NtEvent e = {.rule = r, .entity = A->entity, .comm = A->comm};
	const char *ek[NT_ENTITY_LABELS];
	for (int i = 0, k = nt_entity_labels(&e, ek, ev); i < k; i++) {
		bool own = false;
		for (size_t j = 0; j < r->nlabels; j++)
			own |= !strcmp(r->labels[j].key, ek[i]);
		if (!own)
			key[n] = ek[i], val[n++] = ev[i];
	}
	*match = partial ? nwant <= n : n == nwant;
	sb_putc(b, '{');
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "%s%s=\"%s\"", i ? ", " : "", key[i], val[i]);
	sb_putc(b, '}');
	for (size_t j = 0; j < nwant && *match; j++) {
		size_t i = 0;
		while (i < n && strcmp(key[i], want[j].key))
			i++;
		*match = i < n && !strcmp(val[i], want[j].value);
	}
}

static void ut_annotations(const BdRule *r, const UtAlert *A, StrBuf *b, const KV *want, size_t nwant, bool *match)
{
	/* no kernel here: $kernel_log renders as a placeholder tests can expect */
	NtEvent e = {.rule = r, .kind = SN_EV_FIRING, .value = A->value, .entity = A->entity, .comm = A->comm,
		     .kernel_log = "<kernel log>"};
	*match = r->nannotations == nwant;
	for (size_t i = 0; i < r->nannotations; i++) {
		char *t = nt_render(r->annotations[i].value, &e, "test");
		sb_printf(b, " %s=\"%s\"", r->annotations[i].key, t ? t : "");
		const char *w = want ? ut_kv_get(want, nwant, r->annotations[i].key) : NULL;
		*match = *match && w && t && !strcmp(w, t);
		free(t);
	}
}

static void ut_expected(StrBuf *b, const UtExpAlert *x)
{
	sb_printf(b, "{");
	for (size_t i = 0; i < x->nlabels; i++)
		sb_printf(b, "%s%s=\"%s\"", i ? ", " : "", x->labels[i].key, x->labels[i].value);
	sb_printf(b, "}");
	for (size_t i = 0; i < x->nannotations; i++)
		sb_printf(b, " %s=\"%s\"", x->annotations[i].key, x->annotations[i].value);
}

/* An eval_time as a test file writes it: 1h30m, 90s, 1500ms. */
static void ut_fmt_time(double t, char *buf, size_t n)
{
	long long ms = llround(t * 1000), h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60;
	size_t l = 0;
	buf[0] = 0;
	if (ms % 1000 || !ms) {
		snprintf(buf, n, "%lldms", ms);
		return;
	}
	if (h)
		l += (size_t)snprintf(buf + l, n - l, "%lldh", h);
	if (m && l < n)
		l += (size_t)snprintf(buf + l, n - l, "%lldm", m);
	if (s && l < n)
		snprintf(buf + l, n - l, "%llds", s);
}

static void ut_xml(StrBuf *b, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': sb_puts(b, "&lt;"); break;
		case '>': sb_puts(b, "&gt;"); break;
		case '&': sb_puts(b, "&amp;"); break;
		case '"': sb_puts(b, "&quot;"); break;
		default: sb_putc(b, *s);
		}
}

/* Compare the alerts of T's rule now with what T expects; report.  The
 * alerts in T's state must be the expected ones, each matched by its
 * labels and annotations (a per-entity rule has one per entity). */
static void ut_compare(UtRun *R, const UtFile *f, const UtGroup *G, size_t gi, const UtAlertTest *T, size_t rule)
{
	static const char *const names[] = {"firing", "pending", "resolved", "inactive"};
	static const uint32_t kinds[] = {SN_EV_FIRING, SN_EV_PENDING, SN_EV_RESOLVED, 0};
	const BdRule *r = &R->b->rules[rule];
	const UtAlerts *L = &R->alert[rule];
	StrBuf got = {0}, exp = {0};
	sb_puts(&got, "");
	sb_puts(&exp, "");
	size_t nin = 0, matched = 0;
	bool used[64] = {0}, ok;
	/* inactive: none pending nor firing; else the alerts in that state */
	for (size_t a = 0; a < L->n; a++) {
		const UtAlert *A = &L->v[a];
		bool active = A->kind == SN_EV_PENDING || A->kind == SN_EV_FIRING;
		if (T->state == UT_INACTIVE ? !active : A->kind != kinds[T->state])
			continue;
		nin++;
		for (size_t k = 0; k < T->nexp && k < 64; k++) {
			if (used[k])
				continue;
			const UtExpAlert *x = &T->exp[k];
			StrBuf scratch = {0};
			bool lm = false, am = false;
			ut_labels(r, A, &scratch, x->labels, x->nlabels, T->partial, &lm);
			ut_annotations(r, A, &scratch, x->annotations, x->nannotations, &am);
			sb_free(&scratch);
			if (lm && (am || (T->partial && !x->nannotations))) {
				used[k] = true;
				matched++;
				break;
			}
		}
	}
	if (T->state == UT_INACTIVE)
		ok = nin == 0 && T->nexp == 0;
	else
		ok = nin == T->nexp && matched == T->nexp;
	/* what was raised: those in the state asked about, else every one */
	size_t shown = 0;
	uint32_t now_kind = 0;
	for (int pass = 0; pass < 2 && !shown; pass++)
		for (size_t a = 0; a < L->n; a++) {
			const UtAlert *A = &L->v[a];
			if (!A->kind || (!pass && (T->state == UT_INACTIVE || A->kind != kinds[T->state])))
				continue;
			bool lm, am;
			sb_puts(&got, shown ? ",\n                " : "");
			if (L->n > 1)
				sb_printf(&got, "%s ", A->kind == SN_EV_PENDING ? "pending" : A->kind == SN_EV_FIRING ? "firing" :
					  A->kind == SN_EV_RESOLVED ? "resolved" : "cancelled");
			ut_labels(r, A, &got, NULL, 0, false, &lm);
			ut_annotations(r, A, &got, NULL, 0, &am);
			now_kind = A->kind;
			shown++;
		}
	for (size_t i = 0; i < T->nexp; i++) {
		sb_puts(&exp, i ? ",\n                " : "");
		ut_expected(&exp, &T->exp[i]);
	}
	char when[32];
	ut_fmt_time(T->eval_time, when, sizeof when);
	SrcLoc loc = yt_loc(T->node);
	char gname[64];
	snprintf(gname, sizeof gname, "%s", G->name ? G->name : "");
	if (!G->name)
		snprintf(gname, sizeof gname, "test %zu", gi + 1);
	if (ok) {
		R->passed++;
		if (R->o->verbose)
			printf("%s:%u:%u: ok: %s: %s at %s\n", f->path, loc.line, loc.col, gname, T->alertname, when);
	} else {
		R->failed++;
		printf("%s:%u:%u: FAILED: %s: alertname %s at %s\n", f->path, loc.line, loc.col, gname, T->alertname, when);
		/* one alert shown: its state first, as before; several: each says its own */
		const char *now = L->n > 1 ? "" : now_kind == SN_EV_PENDING ? "pending" : now_kind == SN_EV_FIRING ? "firing" :
				  now_kind == SN_EV_RESOLVED ? "resolved" : now_kind == SN_EV_CANCELLED ? "cancelled" : "never raised";
		if (T->state == UT_INACTIVE)
			printf("    expected: neither pending nor firing\n");
		else if (T->nexp)
			printf("    expected: %s %s\n", names[T->state], exp.s);
		else
			printf("    expected: no alert %s\n", names[T->state]);
		printf("    got:      %s%s%s\n", now, shown && *now ? " " : "", shown ? got.s : "");
		if (T->nexp > 1 && !r->per_entity)
			printf("    note: this rule raises one alert naming one entity (docs/rules.md), never %zu; a rule "
			       "whose expression is a vector over the entities (no any() or all()) raises one per entity\n",
			       T->nexp);
	}
	sb_printf(&R->junit, "    <testcase classname=\"");
	ut_xml(&R->junit, f->path);
	sb_printf(&R->junit, "\" name=\"");
	ut_xml(&R->junit, gname);
	sb_printf(&R->junit, ": %s at %s\"", T->alertname, when);
	if (ok) {
		sb_puts(&R->junit, "/>\n");
	} else {
		sb_puts(&R->junit, ">\n      <failure message=\"expected: ");
		ut_xml(&R->junit, T->nexp ? exp.s : "no alert");
		sb_puts(&R->junit, "; got: ");
		ut_xml(&R->junit, shown ? got.s : "no alert");
		sb_puts(&R->junit, "\"/>\n    </testcase>\n");
	}
	sb_free(&got);
	sb_free(&exp);
}

static long ut_rule_of(const Bundle *b, const char *name)
{
	for (size_t i = 0; i < b->nrules; i++)
		if (!strcmp(b->rules[i].name, name))
			return (long)i;
	return -1;
}

/* One test group: a fresh engine, ticks from 0 to its last eval_time. */
static int ut_group_run(UtRun *R, const UtFile *f, const UtGroup *G, size_t gi, char *err, size_t n)
{
	const Bundle *b = R->b;
	double last = 0;
	for (size_t i = 0; i < G->ntests; i++)
		last = fmax(last, G->tests[i].eval_time);
	/* CPUs and tasks: from the series' labels; a task's key is its PID + 1 */
	long max_cpu = 0;
	size_t ntask = 0;
	long *pids = calloc(G->nseries + 1, sizeof *pids);
	const char **comms = calloc(G->nseries + 1, sizeof *comms);
	int *row = calloc(G->nseries + 1, sizeof *row);
	long *task_of = calloc(G->nseries + 1, sizeof *task_of);      /* series -> task index, -1 */
	double *val = calloc(G->nseries + 1, sizeof *val);
	/* objects (disks): by entity and name; a key is the index + 1 */
	size_t nobj = 0;
	const char **oname = calloc(G->nseries + 1, sizeof *oname);
	Entity *oent = calloc(G->nseries + 1, sizeof *oent);
	long *obj_of = calloc(G->nseries + 1, sizeof *obj_of);
	int *orow = calloc(G->nseries + 1, sizeof *orow);
	const char **ostr = calloc(2 * G->nseries + 2, sizeof *ostr);  /* a mount's fstype and device, or NULL */
	if (!pids || !comms || !row || !task_of || !val || !oname || !oent || !obj_of || !orow || !ostr) {
		free(pids), free(comms), free(row), free(task_of), free(val);
		free(oname), free(oent), free(obj_of), free(orow), free(ostr);
		snprintf(err, n, "out of memory");
		return -1;
	}
	for (size_t s = 0; s < G->nseries; s++) {
		const UtSeries *S = &G->series[s];
		max_cpu = S->cpu > max_cpu ? S->cpu : max_cpu;
		task_of[s] = obj_of[s] = -1;
		if (S->obj) {
			Entity e = cat_metrics[S->metric].entity;
			size_t k = 0;
			while (k < nobj && (oent[k] != e || strcmp(oname[k], S->obj)))
				k++;
			if (k == nobj)
				oname[nobj] = S->obj, oent[nobj++] = e;
			obj_of[s] = (long)k;
			if (S->fstype)                     /* any of its series may say them */
				ostr[2 * k] = S->fstype;
			if (S->device)
				ostr[2 * k + 1] = S->device;
			continue;
		}
		if (S->pid < 0)
			continue;
		/* a task's series usually follow each other: look from the last one back */
		size_t k = ntask;
		while (k > 0 && pids[k - 1] != S->pid)
			k--;
		k = k ? k - 1 : ntask;
		if (k == ntask)
			pids[ntask++] = S->pid, comms[k] = "";
		if (S->comm[0])
			comms[k] = S->comm;
		task_of[s] = (long)k;
	}
	FdParams p = {.tick_ns = (uint64_t)(f->eval_interval * 1e9 + 0.5), .max_cpus = (uint32_t)max_cpu + 1,
		      .task_cap = ntask ? (uint32_t)ntask : 1};
	Feed *fd = NULL;
	int rc = fd_open(b, &p, &fd, err, n);
	if (rc) {
		free(pids), free(comms), free(row), free(task_of), free(val);
		free(oname), free(oent), free(obj_of), free(orow), free(ostr);
		return -1;
	}
	for (size_t i = 0; i < b->nrules; i++)
		R->alert[i].n = 0;
	long steps = (long)floor(last / f->eval_interval + 1e-9);
	for (long k = 0; k <= steps; k++) {
		double t = (double)k * f->eval_interval;
		fd_begin(fd, UT_BASE_NS + (uint64_t)((double)k * f->eval_interval * 1e9 + 0.5));
		/* every series' value now; a task exists when one of its series has one */
		for (size_t i = 0; i < ntask; i++)
			row[i] = -1;
		for (size_t i = 0; i < nobj; i++)
			orow[i] = -1;
		for (size_t s = 0; s < G->nseries; s++) {
			val[s] = ut_value_at(&G->series[s], G->interval, t);
			if (task_of[s] >= 0 && !isnan(val[s]))
				row[task_of[s]] = 0;
			if (obj_of[s] >= 0 && !isnan(val[s]))
				orow[obj_of[s]] = 0;
		}
		for (size_t i = 0; i < nobj; i++) {
			if (orow[i] < 0)
				continue;
			orow[i] = fd_obj_add(fd, oent[i], (uint64_t)i + 1, oname[i]);
			if (oent[i] == ENT_DISK)      /* a whole disk unless said otherwise */
				fd_obj(fd, MET_DISK_PARTITION, orow[i], 0);
			fd_obj_str(fd, oent[i], orow[i], SN_STR_FSTYPE, ostr[2 * i]);
			fd_obj_str(fd, oent[i], orow[i], SN_STR_DEVICE, ostr[2 * i + 1]);
		}
		for (size_t i = 0; i < ntask; i++) {
			if (row[i] < 0)
				continue;
			row[i] = fd_task_add(fd, (uint64_t)pids[i] + 1, comms[i]);
			fd_task(fd, MET_TASK_PID, row[i], (double)pids[i]);
			fd_task(fd, MET_TASK_KTHREAD, row[i], 0);
		}
		for (size_t s = 0; s < G->nseries; s++) {
			const UtSeries *S = &G->series[s];
			if (isnan(val[s]))
				continue;
			Entity e = cat_metrics[S->metric].entity;
			if (e == ENT_HOST)
				fd_host(fd, S->metric, val[s]);
			else if (e == ENT_CPU)
				fd_cpu(fd, S->metric, (uint32_t)S->cpu, val[s]);
			else if (ent_is_obj(e))
				fd_obj(fd, S->metric, orow[obj_of[s]], val[s]);
			else
				fd_task(fd, S->metric, row[task_of[s]], val[s]);
		}
		fd_eval(fd);
		fd_drain(fd, ut_event, R);
		/* the tests at this tick: eval_time rounds down to a tick */
		for (size_t i = 0; i < G->ntests; i++) {
			const UtAlertTest *T = &G->tests[i];
			if ((long)floor(T->eval_time / f->eval_interval + 1e-9) != k)
				continue;
			long r = ut_rule_of(b, T->alertname);
			if (r >= 0)
				ut_compare(R, f, G, gi, T, (size_t)r);
		}
	}
	fd_close(fd);
	free(pids), free(comms), free(row), free(task_of), free(val);
	free(oname), free(oent), free(obj_of), free(orow), free(ostr);
	return 0;
}

/* Load, check and compile the rules of test file f; the bundle, or NULL
 * with the diagnostics printed. */
static Bundle *ut_compile(const UtFile *f, DiagCtx *d, const UtOpts *o)
{
	RuleSet rs = {0};
	CheckOpts co = {.tick = f->eval_interval};
	for (size_t i = 0; i < f->nrule_files; i++)
		if (rf_load(&rs, f->rule_files[i], d, &co) < 0)
			diag_note(d, yt_loc(f->rule_nodes[i]), "rule file named here (relative to the test file)");
	rs_check_all(&rs, d);
	/* every alert a test names must exist */
	for (size_t g = 0; g < f->ngroups; g++)
		for (size_t i = 0; i < f->groups[g].ntests; i++) {
			const UtAlertTest *T = &f->groups[g].tests[i];
			bool found = false;
			for (size_t r = 0; r < rs.n && !found; r++)
				found = !strcmp(rs.v[r].name, T->alertname);
			if (!found)
				diag_report(d, yt_loc(yt_get(T->node, "alertname")), DIAG_UNKNOWN_ALERT,
					    "no rule in the rule files is named '%s'", T->alertname);
		}
	Bundle *b = NULL;
	if (!d->nerr) {
		CgProg plan;
		if (cg_analyse(&plan, &rs, d)) {
			CompOpts co2 = {.host_only = true, .version = o->version};
			char err[1024] = "";
			if (comp_build(&plan, &co2, &b, err, sizeof err))
				fprintf(stderr, "rulec test: %s: %s\n", f->path, err);
		}
		cg_free(&plan);
	}
	/* print now: the diagnostics cite the rule files, freed below */
	if (d->n) {
		diag_sort(d);
		diag_print_text(d, stderr, o->color);
	}
	rs_free(&rs);
	return b;
}

static int ut_file_run(const char *path, const UtOpts *o, UtRun *R, FILE *junit)
{
	UtFile f;
	DiagCtx d = {.max_errors = 100};
	int rc = 0;
	ut_load(path, &f, &d);
	Bundle *b = NULL;
	if (d.nerr) {
		diag_sort(&d);
		diag_print_text(&d, stderr, o->color);
	} else {
		b = ut_compile(&f, &d, o);
	}
	if (!b) {
		rc = 2;
		goto out;
	}
	regex_t re;
	bool filter = o->run && !regcomp(&re, o->run, REG_EXTENDED | REG_NOSUB);
	R->b = b;
	R->alert = calloc(b->nrules + 1, sizeof *R->alert);
	unsigned p0 = R->passed, f0 = R->failed;
	sb_free(&R->junit);
	sb_puts(&R->junit, "");
	for (size_t g = 0; g < f.ngroups && R->alert; g++) {
		const UtGroup *G = &f.groups[g];
		char gname[64];
		snprintf(gname, sizeof gname, "%s", G->name ? G->name : "");
		if (!G->name)
			snprintf(gname, sizeof gname, "test %zu", g + 1);
		if (filter && regexec(&re, gname, 0, NULL, 0))
			continue;
		char err[512];
		if (ut_group_run(R, &f, G, g, err, sizeof err)) {
			fprintf(stderr, "rulec test: %s: %s: %s\n", path, gname, err);
			rc = 2;
		}
	}
	if (filter)
		regfree(&re);
	unsigned np = R->passed - p0, nf = R->failed - f0;
	if (!o->quiet)
		printf("rulec test: %s: %u passed, %u failed\n", path, np, nf);
	if (junit)
		fprintf(junit, "  <testsuite name=\"%s\" tests=\"%u\" failures=\"%u\">\n%s  </testsuite>\n", path,
			np + nf, nf, R->junit.s ? R->junit.s : "");
	for (size_t i = 0; R->alert && i < b->nrules; i++)
		free(R->alert[i].v);
	free(R->alert);
	R->alert = NULL;
	bd_free(b);
out:
	diag_free(&d);
	ut_free(&f);
	return rc;
}

int ut_run(char **paths, size_t n, const UtOpts *o)
{
	UtRun R = {.o = o};
	int rc = 0;
	FILE *junit = NULL;
	if (o->junit && !(junit = fopen(o->junit, "w"))) {
		perror(o->junit);
		return 2;
	}
	if (junit)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n", junit);
	for (size_t i = 0; i < n; i++) {
		int r = ut_file_run(paths[i], o, &R, junit);
		rc = r > rc ? r : rc;
	}
	if (junit) {
		fputs("</testsuites>\n", junit);
		fclose(junit);
	}
	sb_free(&R.junit);
	if (n > 1 && !o->quiet)
		printf("rulec test: %u passed, %u failed in %zu files\n", R.passed, R.failed, n);
	return rc ? rc : R.failed ? 1 : 0;
}

/* ---- replay: rules over a recording ------------------------------------------------------- */

typedef struct UtReplay {
	const Bundle *b;
	const RecTick *t;
	uint64_t t0;
	unsigned events;
	FILE *out;
} UtReplay;

static void ut_replay_event(void *ctx, const sn_alert *a)
{
	UtReplay *P = ctx;
	if (a->rule >= P->b->nrules)
		return;
	const BdRule *r = &P->b->rules[a->rule];
	NtEvent e = {.rule = r, .kind = (SnEventKind)a->kind, .value = a->value, .entity = a->entity, .comm = a->comm};
	char val[64], labels[96] = "";
	const char *key[NT_ENTITY_LABELS];
	char ev[NT_ENTITY_LABELS][NT_LABEL_MAX];
	tp_format(a->value, TPF_NONE, val, sizeof val);
	for (int i = 0, k = nt_entity_labels(&e, key, ev), l = 0; i < k; i++)
		l += snprintf(labels + l, sizeof labels - (size_t)l, " %s=%s", key[i], ev[i]);
	fprintf(P->out, "tick %llu  +%.3fs  %-9s %s  value %s%s\n", (unsigned long long)P->t->tick,
		(double)(P->t->now_ns - P->t0) / 1e9, nt_kind_name((SnEventKind)a->kind), r->name, val, labels);
	P->events++;
}

int ut_replay(const char *path, const RuleSet *rs, const UtOpts *o)
{
	char err[1024] = "";
	RecReader *rr = NULL;
	Bundle *b = NULL;
	Feed *fd = NULL;
	int rc = 2;
	if (rec_open(path, &rr, err, sizeof err))
		goto out;
	const RecInfo *I = rec_info(rr);
	DiagCtx d = {0};
	CgProg plan;
	if (cg_analyse(&plan, rs, &d)) {
		CompOpts co = {.host_only = true, .version = o->version};
		if (comp_build(&plan, &co, &b, err, sizeof err))
			b = NULL;
	}
	cg_free(&plan);
	diag_free(&d);
	if (!b)
		goto out;
	/* every metric the rules read must be in the recording */
	for (size_t i = 0; i < b->nrules; i++)
		for (int m = 0; m < MET__COUNT; m++) {
			if (!met_has(&b->rules[i].metrics, (MetricId)m) || m == MET_TASK_PID || m == MET_TASK_COMM)
				continue;
			bool have = false;
			for (uint32_t k = 0; k < I->nhost; k++)
				have |= I->host_m[k] == (MetricId)m;
			for (uint32_t k = 0; k < I->ncpu; k++)
				have |= I->cpu_m[k] == (MetricId)m;
			for (uint32_t k = 0; k < I->ntask; k++)
				have |= I->task_m[k] == (MetricId)m;
			if (!have && ent_is_obj(cat_metrics[m].entity)) {
				snprintf(err, sizeof err, "rule %s reads %s: recordings hold host, CPU and task metrics, "
					 "not yet %s ones; test it with rulec test (input series %s{%s=\"NAME\"})",
					 b->rules[i].name, cat_metrics[m].name, cat_entities[cat_metrics[m].entity].prefix,
					 cat_metrics[m].name, cat_entities[cat_metrics[m].entity].label);
				goto out;
			}
			if (!have) {
				snprintf(err, sizeof err, "rule %s reads %s, which %s did not record (record with "
					 "sentinel-inspect metrics --record: every metric)", b->rules[i].name, cat_metrics[m].name,
					 path);
				goto out;
			}
		}
	/* tasks at once: the most any record holds */
	uint32_t tcap = 1;
	RecTick t;
	int r;
	while ((r = rec_next(rr, &t, err, sizeof err)) > 0)
		tcap = t.ntasks > tcap ? t.ntasks : tcap;
	if (r < 0)
		goto out;
	rec_free(rr);
	rr = NULL;
	if (rec_open(path, &rr, err, sizeof err))
		goto out;
	I = rec_info(rr);                 /* the reader was opened again */
	FdParams p = {.tick_ns = I->tick_ns, .max_cpus = I->max_cpus, .task_cap = tcap};
	if (fd_open(b, &p, &fd, err, sizeof err))
		goto out;
	UtReplay P = {.b = b, .t = &t, .out = stdout};
	uint64_t n = 0, last = 0;
	while ((r = rec_next(rr, &t, err, sizeof err)) > 0) {
		if (!n)
			P.t0 = t.now_ns;
		fd_begin(fd, t.now_ns);
		fd_cpu_ids(fd, t.ncpus);
		for (uint32_t k = 0; k < I->nhost; k++)
			if (I->host_m[k] != MET__COUNT)
				fd_host(fd, I->host_m[k], t.host[k]);
		for (uint32_t c = 0; c < t.ncpus; c++)
			for (uint32_t k = 0; k < I->ncpu && t.cpu_on[c]; k++)
				if (I->cpu_m[k] != MET__COUNT)
					fd_cpu(fd, I->cpu_m[k], c, t.cpu[(size_t)k * t.ncpus + c]);
		for (uint32_t i = 0; i < t.ntasks; i++) {
			int row = fd_task_add(fd, t.task_key[i], t.task_comm[i]);
			for (uint32_t k = 0; k < I->ntask; k++)
				if (I->task_m[k] != MET__COUNT)
					fd_task(fd, I->task_m[k], row, t.task[(size_t)i * I->ntask + k]);
		}
		fd_eval(fd);
		fd_drain(fd, ut_replay_event, &P);
		n++;
		last = t.now_ns;
	}
	if (r < 0)
		goto out;
	if (!o->quiet)
		fprintf(stderr, "rulec test --replay: %s: %llu ticks of %.0f ms (%.1f s), %zu rules, %u events\n", path,
			(unsigned long long)n, (double)I->tick_ns / 1e6, n ? (double)(last - P.t0) / 1e9 : 0.0, b->nrules,
			P.events);
	rc = 0;
out:
	if (*err)
		fprintf(stderr, "rulec test --replay: %s\n", err);
	fd_close(fd);
	bd_free(b);
	rec_free(rr);
	return rc;
}
