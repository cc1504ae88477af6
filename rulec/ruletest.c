/* ruletest.c - the rule test file parser (see ruletest.h). */
#include "kstate.h"
#include "ruletest.h"
#include "snrt.h"
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct UtCtx {
	UtFile *f;
	DiagCtx *d;
} UtCtx;

static bool ut_expect(UtCtx *C, const YtNode *n, YtKind k, const char *what)
{
	if (n->kind == k)
		return true;
	diag_report(C->d, yt_loc(n), DIAG_EXPECTED_TYPE, "%s must be %s, not %s", what,
		    k == YT_MAP ? "a mapping" : k == YT_SEQ ? "a list" : "a string", yt_kind_name(n));
	return false;
}

/* Every key of map n must be one of keys (NULL-terminated); `ignored`
 * keys are promtool's that Sentinel accepts and does not need. */
static void ut_keys(UtCtx *C, const YtNode *n, const char *where, const char *const *keys, const char *const *ignored)
{
	for (size_t i = 0; i < n->u.map.n; i++) {
		const YtNode *k = n->u.map.v[i].key;
		const char *s = k->kind == YT_SCALAR ? k->u.scalar.s : "";
		bool ok = false;
		for (const char *const *p = keys; *p && !ok; p++)
			ok = !strcmp(s, *p);
		for (const char *const *p = ignored; p && *p && !ok; p++)
			ok = !strcmp(s, *p);
		if (ok)
			continue;
		StrBuf b = {0};
		for (const char *const *p = keys; *p; p++)
			sb_printf(&b, "%s%s", p == keys ? "" : ", ", *p);
		diag_report(C->d, yt_loc(k), DIAG_UNKNOWN_KEY, "unknown key '%s' in %s; the keys are %s", s, where, b.s);
		sb_free(&b);
	}
}

static bool ut_duration(UtCtx *C, const YtNode *n, const char *what, bool zero_ok, double *out)
{
	if (!ut_expect(C, n, YT_SCALAR, what))
		return false;
	double s;
	size_t bad;
	if (unit_parse_duration(n->u.scalar.s, n->u.scalar.len, &s, &bad) < 0 || (!zero_ok && s <= 0) ||
	    s > 366 * 86400.0) {
		diag_report(C->d, yt_loc(n), DIAG_BAD_DURATION,
			    "%s '%s' is not a duration from %s to 1 year; write one like 1m, 30s or 1h30m", what,
			    n->u.scalar.s, zero_ok ? "0s" : "1ns");
		return false;
	}
	*out = s;
	return true;
}

/* A string-to-string mapping (exp_labels, exp_annotations). */
static void ut_kv(UtCtx *C, const YtNode *n, const char *what, KV **out, size_t *nout)
{
	if (!ut_expect(C, n, YT_MAP, what))
		return;
	KV *v = arena_alloc(&C->f->arena, (n->u.map.n + 1) * sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < n->u.map.n; i++) {
		const YtPair *p = &n->u.map.v[i];
		if (!ut_expect(C, p->key, YT_SCALAR, "a key") || !ut_expect(C, p->value, YT_SCALAR, what))
			continue;
		v[k++] = (KV){p->key->u.scalar.s, p->value->u.scalar.s, p->key, p->value};
	}
	*out = v;
	*nout = k;
}

/* ---- values: promtool's expanding notation ------------------------------------------ */

static bool ut_push(double **v, size_t *n, size_t *cap, double x, size_t count)
{
	if (*n + count > UT_MAX_SAMPLES)
		return false;
	if (*n + count > *cap) {
		size_t c = *cap ? *cap : 64;
		while (c < *n + count)
			c *= 2;
		double *p = realloc(*v, c * sizeof *p);
		if (!p)
			return false;
		*v = p;
		*cap = c;
	}
	for (size_t i = 0; i < count; i++)
		(*v)[(*n)++] = x;
	return true;
}

/* token -> "_" | "_" "x" N | "stale" | NUM | NUM "x" N | NUM ("+"|"-") NUM "x" N | LETTER ["x" N] */
bool ut_expand(const char *s, const YtNode *n, bool letters, double **vout, size_t *nout, DiagCtx *d)
{
	double *v = NULL;
	size_t nv = 0, cap = 0;
	const char *p = s;
	bool ok = true;
	while (ok) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		const char *tok = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		size_t len = (size_t)(p - tok);
		char t[64];
		if (len >= sizeof t) {
			diag_report(d, yt_scalar_loc(n, (size_t)(tok - s), (unsigned)len), DIAG_BAD_SERIES,
				    "value '%.*s...' is too long", 20, tok);
			ok = false;
			break;
		}
		memcpy(t, tok, len);
		t[len] = 0;
		const char *why = NULL;
		char *x = strchr(t, 'x');
		unsigned long reps = 0;
		if (x) {
			char *e;
			errno = 0;
			reps = strtoul(x + 1, &e, 10);
			if (x[1] < '0' || x[1] > '9' || *e || errno || reps > UT_MAX_SAMPLES)
				why = "a repeat count after 'x' must be a whole number";
			*x = 0;
		}
		if (why) {
		} else if (!strcmp(t, "_")) {
			ok = ut_push(&v, &nv, &cap, UT_MISSING, x ? reps : 1);
		} else if (!strcmp(t, "stale") && !x) {
			ok = ut_push(&v, &nv, &cap, UT_STALE, 1);
		} else if (letters && strlen(t) == 1 && strchr(KSTATE_LETTERS, t[0])) {
			ok = ut_push(&v, &nv, &cap, (double)(unsigned char)t[0], x ? reps + 1 : 1);
		} else {
			char *e;
			double a = strtod(t, &e), b = 0;
			if (e == t) {
				why = letters ? "expected a number, a state letter (R S D T t Z X P I), _ or stale"
					      : "expected a number, _ or stale";
			} else if (*e == '+' || *e == '-') {
				char *e2;
				b = strtod(e + 1, &e2);
				if (e2 == e + 1 || *e2 || !x)
					why = "write a+bxN: a start, a step and a count";
				else if (*e == '-')
					b = -b;
			} else if (*e) {
				why = "expected a number, as in 5, 0.5 or 1e6";
			}
			if (!why) {
				if (!x)
					ok = ut_push(&v, &nv, &cap, a, 1);
				for (unsigned long i = 0; x && ok && i <= reps; i++)
					ok = ut_push(&v, &nv, &cap, a + b * (double)i, 1);
			}
		}
		if (why) {
			diag_report(d, yt_scalar_loc(n, (size_t)(tok - s), (unsigned)len), DIAG_BAD_SERIES,
				    "bad value '%.*s': %s", (int)len, tok, why);
			ok = false;
		} else if (!ok) {
			diag_report(d, yt_scalar_loc(n, (size_t)(tok - s), (unsigned)len), DIAG_BAD_SERIES,
				    "the series expands past %u samples", UT_MAX_SAMPLES);
		}
	}
	if (!ok) {
		free(v);
		return false;
	}
	*vout = v;
	*nout = nv;
	return true;
}

/* ---- series: metric{label="value", ...} ----------------------------------------------- */

/* selector -> METRIC [ "{" [ LABEL "=" STRING { "," LABEL "=" STRING } ] "}" ] */
static bool ut_selector(UtCtx *C, const YtNode *n, UtSeries *S)
{
	const char *s = n->u.scalar.s, *p = s;
	while (*p == ' ')
		p++;
	const char *m = p;
	while (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
		p++;
	S->metric = cat_lookup(m, (size_t)(p - m));
	S->cpu = S->pid = -1;
	S->comm = "";
	if (S->metric == MET__COUNT) {
		diag_report(C->d, yt_scalar_loc(n, (size_t)(m - s), (unsigned)(p > m ? p - m : 1)), DIAG_UNKNOWN_METRIC,
			    "unknown metric '%.*s' (rulec --list-metrics lists them)", (int)(p - m), m);
		return false;
	}
	Entity ent = cat_metrics[S->metric].entity;
	if (*p == '{') {
		p++;
		for (;;) {
			while (*p == ' ' || *p == ',')
				p++;
			if (*p == '}')
				break;
			const char *l = p;
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			size_t ll = (size_t)(p - l);
			while (*p == ' ')
				p++;
			if (!ll || *p != '=' || p[1] != '"' || !strchr(p + 2, '"')) {
				diag_report(C->d, yt_scalar_loc(n, (size_t)(l - s), 1), DIAG_BAD_SERIES,
					    "expected label=\"value\" in the series' {...}");
				return false;
			}
			const char *v = p + 2, *ve = strchr(v, '"');
			p = ve + 1;
			char val[64];
			snprintf(val, sizeof val, "%.*s", (int)(ve - v), v);
			char *e;
			bool cpu = ll == 3 && !memcmp(l, "cpu", 3), pid = ll == 3 && !memcmp(l, "pid", 3);
			bool comm = ll == 4 && !memcmp(l, "comm", 4);
			bool fstype = ll == 6 && !memcmp(l, "fstype", 6), device = ll == 6 && !memcmp(l, "device", 6);
			if ((cpu && ent == ENT_CPU) || (pid && ent == ENT_TASK)) {
				long x = strtol(val, &e, 10);
				if (!*val || *e || x < 0 || x > (cpu ? 8191 : 4194304)) {
					diag_report(C->d, yt_scalar_loc(n, (size_t)(v - s), (unsigned)(ve - v)), DIAG_BAD_SERIES,
						    "%s takes a number from 0 to %d", cpu ? "cpu" : "pid", cpu ? 8191 : 4194304);
					return false;
				}
				*(cpu ? &S->cpu : &S->pid) = x;
			} else if (ent_is_obj(ent) && ll == strlen(cat_entities[ent].label) &&
				   !memcmp(l, cat_entities[ent].label, ll)) {
				if (ve == v || ve - v > CAT_OBJ_NAME_MAX) {
					diag_report(C->d, yt_scalar_loc(n, (size_t)(v - s), (unsigned)(ve - v)), DIAG_BAD_SERIES,
						    "%s is a name of 1 to %d bytes", cat_entities[ent].label, CAT_OBJ_NAME_MAX);
					return false;
				}
				S->obj = arena_strndup(&C->f->arena, v, (size_t)(ve - v));
			} else if (comm && ent == ENT_TASK) {
				if (ve - v > 15) {
					diag_report(C->d, yt_scalar_loc(n, (size_t)(v - s), (unsigned)(ve - v)), DIAG_BAD_SERIES,
						    "comm is at most 15 bytes, as in the kernel");
					return false;
				}
				S->comm = arena_strndup(&C->f->arena, v, (size_t)(ve - v));
			} else if ((fstype || device) && ent == ENT_FS) {
				/* a mount's labels, as Sentinel keeps them (snrt.h) */
				unsigned max = fstype ? SN_FS_TYPE - 1 : SN_FS_DEVICE - 1;
				if (ve - v > (long)max) {
					diag_report(C->d, yt_scalar_loc(n, (size_t)(v - s), (unsigned)(ve - v)), DIAG_BAD_SERIES,
						    "%s is at most %u bytes, as Sentinel keeps it", fstype ? "fstype" : "device", max);
					return false;
				}
				*(fstype ? &S->fstype : &S->device) = arena_strndup(&C->f->arena, v, (size_t)(ve - v));
			} else {
				diag_report(C->d, yt_scalar_loc(n, (size_t)(l - s), (unsigned)ll), DIAG_BAD_SERIES,
					    "label '%.*s' does not apply to %s; %s", (int)ll, l, cat_metrics[S->metric].name,
					    ent == ENT_CPU ? "CPU series take cpu=\"N\"" :
					    ent == ENT_TASK ? "task series take pid=\"N\" and comm=\"NAME\"" :
					    ent == ENT_DISK ? "disk series take disk=\"NAME\"" :
					    ent == ENT_CGROUP ? "cgroup series take cgroup=\"PATH\"" :
					    ent == ENT_NET ? "interface series take interface=\"NAME\"" :
					    ent == ENT_FS ? "filesystem series take mountpoint=\"PATH\", fstype=\"TYPE\" and "
							    "device=\"DEVICE\"" :
					    "host series take no labels");
				return false;
			}
		}
		p++;
	}
	while (*p == ' ')
		p++;
	if (*p) {
		diag_report(C->d, yt_scalar_loc(n, (size_t)(p - s), 1), DIAG_BAD_SERIES,
			    "unexpected '%c' in the series; write metric{label=\"value\"}", *p);
		return false;
	}
	if (ent_is_obj(ent) && !S->obj) {
		diag_report(C->d, yt_loc(n), DIAG_BAD_SERIES, "%s is per %s: say which, as in %s{%s=\"vda\"}",
			    cat_metrics[S->metric].name, cat_entities[ent].noun, cat_metrics[S->metric].name,
			    cat_entities[ent].label);
		return false;
	}
	if ((ent == ENT_CPU && S->cpu < 0) || (ent == ENT_TASK && S->pid < 0)) {
		diag_report(C->d, yt_loc(n), DIAG_BAD_SERIES, "%s is per %s: say which, as in %s{%s=\"%s\"}",
			    cat_metrics[S->metric].name, ent == ENT_CPU ? "CPU" : "task", cat_metrics[S->metric].name,
			    ent == ENT_CPU ? "cpu" : "pid", ent == ENT_CPU ? "0" : "42");
		return false;
	}
	return true;
}

static void ut_series(UtCtx *C, const YtNode *n, UtGroup *G)
{
	static const char *const keys[] = {"series", "values", NULL};
	if (!ut_expect(C, n, YT_MAP, "an input series"))
		return;
	ut_keys(C, n, "an input series", keys, NULL);
	const YtNode *sel = yt_get(n, "series"), *vals = yt_get(n, "values");
	if (!sel || !vals) {
		diag_report(C->d, yt_loc(n), DIAG_MISSING_KEY, "an input series needs series: and values:");
		return;
	}
	UtSeries S = {.node = n};
	if (!ut_expect(C, sel, YT_SCALAR, "series") || !ut_expect(C, vals, YT_SCALAR, "values") || !ut_selector(C, sel, &S))
		return;
	double *v;
	if (!ut_expand(vals->u.scalar.s, vals, S.metric == MET_TASK_STATE, &v, &S.nv, C->d))
		return;
	S.v = arena_alloc(&C->f->arena, (S.nv + 1) * sizeof *S.v);
	memcpy(S.v, v, S.nv * sizeof *v);
	free(v);
	G->series[G->nseries++] = S;
}

static void ut_alert(UtCtx *C, const YtNode *n, UtAlertTest *T)
{
	static const char *const keys[] = {"exp_labels", "exp_annotations", NULL};
	if (!ut_expect(C, n, YT_MAP, "an expected alert"))
		return;
	ut_keys(C, n, "an expected alert", keys, NULL);
	UtExpAlert *A = &T->exp[T->nexp++];
	A->node = n;
	const YtNode *x;
	if ((x = yt_get(n, "exp_labels")) && !yt_is_null(x))
		ut_kv(C, x, "exp_labels", &A->labels, &A->nlabels);
	if ((x = yt_get(n, "exp_annotations")) && !yt_is_null(x))
		ut_kv(C, x, "exp_annotations", &A->annotations, &A->nannotations);
}

static void ut_alert_test(UtCtx *C, const YtNode *n, UtGroup *G)
{
	static const char *const keys[] = {"eval_time", "alertname", "exp_alerts", "state", "partial_labels", NULL};
	static const char *const states[] = {"firing", "pending", "resolved", "inactive"};
	if (!ut_expect(C, n, YT_MAP, "an alert test"))
		return;
	ut_keys(C, n, "an alert test", keys, NULL);
	UtAlertTest T = {.node = n};
	const YtNode *x;
	bool sok = true;
	if ((x = yt_get(n, "state")) && (sok = ut_expect(C, x, YT_SCALAR, "state"))) {
		sok = false;
		for (int i = 0; i < 4 && !sok; i++)
			if (!strcmp(x->u.scalar.s, states[i]))
				T.state = (UtState)i, sok = true;
		if (!sok)
			diag_report(C->d, yt_loc(x), DIAG_EXPECTED_TYPE,
				    "state takes firing, pending, resolved or inactive, not '%s'", x->u.scalar.s);
	}
	if ((x = yt_get(n, "partial_labels")) && ut_expect(C, x, YT_SCALAR, "partial_labels")) {
		T.partial = !strcmp(x->u.scalar.s, "true") || !strcmp(x->u.scalar.s, "yes");
		if (!T.partial && strcmp(x->u.scalar.s, "false") && strcmp(x->u.scalar.s, "no"))
			diag_report(C->d, yt_loc(x), DIAG_EXPECTED_TYPE, "partial_labels takes true or false");
	}
	const YtNode *et = yt_get(n, "eval_time"), *an = yt_get(n, "alertname"), *ex = yt_get(n, "exp_alerts");
	if (!et || !an) {
		diag_report(C->d, yt_loc(n), DIAG_MISSING_KEY, "an alert test needs eval_time: and alertname:");
		return;
	}
	bool ok = ut_duration(C, et, "eval_time", true, &T.eval_time) && sok;
	ok = ut_expect(C, an, YT_SCALAR, "alertname") && ok;
	T.alertname = an->u.scalar.s;
	if (ex && !yt_is_null(ex) && ut_expect(C, ex, YT_SEQ, "exp_alerts")) {
		T.exp = arena_alloc(&C->f->arena, (ex->u.seq.n + 1) * sizeof *T.exp);
		for (size_t i = 0; i < ex->u.seq.n; i++)
			ut_alert(C, ex->u.seq.v[i], &T);
	}
	if (ok)
		G->tests[G->ntests++] = T;
}

static void ut_group(UtCtx *C, const YtNode *n)
{
	static const char *const keys[] = {"name", "interval", "input_series", "alert_rule_test", NULL};
	static const char *const ignored[] = {"external_labels", "external_url", "start_timestamp",
					      "promql_expr_test" /* reported below */, NULL};
	if (!ut_expect(C, n, YT_MAP, "a test"))
		return;
	const YtNode *x;
	if ((x = yt_get(n, "promql_expr_test")))
		diag_report(C->d, yt_loc(x), DIAG_UNSUPPORTED,
			    "promql_expr_test is not supported: Sentinel rules are alerting rules; test them with "
			    "alert_rule_test");
	UtGroup *G = &C->f->groups[C->f->ngroups++];
	G->node = n;
	G->interval = C->f->eval_interval;
	ut_keys(C, n, "a test", keys, ignored);
	if ((x = yt_get(n, "name")) && ut_expect(C, x, YT_SCALAR, "name"))
		G->name = x->u.scalar.s;
	if ((x = yt_get(n, "interval")))
		ut_duration(C, x, "interval", false, &G->interval);
	if ((x = yt_get(n, "input_series")) && !yt_is_null(x) && ut_expect(C, x, YT_SEQ, "input_series")) {
		G->series = arena_alloc(&C->f->arena, (x->u.seq.n + 1) * sizeof *G->series);
		for (size_t i = 0; i < x->u.seq.n; i++)
			ut_series(C, x->u.seq.v[i], G);
	}
	if ((x = yt_get(n, "alert_rule_test")) && !yt_is_null(x) && ut_expect(C, x, YT_SEQ, "alert_rule_test")) {
		G->tests = arena_alloc(&C->f->arena, (x->u.seq.n + 1) * sizeof *G->tests);
		for (size_t i = 0; i < x->u.seq.n; i++)
			ut_alert_test(C, x->u.seq.v[i], G);
	}
}

/* file -> { rule_files: [PATH...], evaluation_interval: DURATION, tests: [test...] } */
static void ut_file(UtCtx *C, const YtNode *root)
{
	static const char *const keys[] = {"rule_files", "evaluation_interval", "tests", NULL};
	static const char *const ignored[] = {"group_eval_order", "fuzzy_compare", NULL};
	UtFile *f = C->f;
	if (!ut_expect(C, root, YT_MAP, "a rule test file"))
		return;
	ut_keys(C, root, "a rule test file", keys, ignored);
	const YtNode *x;
	f->eval_interval = 60;
	if ((x = yt_get(root, "evaluation_interval")))
		ut_duration(C, x, "evaluation_interval", false, &f->eval_interval);
	if (!(x = yt_get(root, "rule_files")) || yt_is_null(x)) {
		diag_report(C->d, yt_loc(root), DIAG_MISSING_KEY, "a rule test file needs rule_files: the rules it tests");
	} else if (ut_expect(C, x, YT_SEQ, "rule_files")) {
		f->rule_files = arena_alloc(&f->arena, (x->u.seq.n + 1) * sizeof *f->rule_files);
		f->rule_nodes = arena_alloc(&f->arena, (x->u.seq.n + 1) * sizeof *f->rule_nodes);
		const char *slash = strrchr(f->path, '/');
		for (size_t i = 0; i < x->u.seq.n; i++) {
			const YtNode *r = x->u.seq.v[i];
			if (!ut_expect(C, r, YT_SCALAR, "a rule file"))
				continue;
			/* relative to the test file, as promtool does */
			f->rule_nodes[f->nrule_files] = r;
			f->rule_files[f->nrule_files++] =
				r->u.scalar.s[0] == '/' || !slash ? arena_strdup(&f->arena, r->u.scalar.s)
								  : arena_printf(&f->arena, "%.*s/%s", (int)(slash - f->path),
										 f->path, r->u.scalar.s);
		}
	}
	if (!(x = yt_get(root, "tests")) || yt_is_null(x)) {
		diag_report(C->d, yt_loc(root), DIAG_MISSING_KEY, "a rule test file needs tests:");
	} else if (ut_expect(C, x, YT_SEQ, "tests")) {
		f->groups = arena_alloc(&f->arena, (x->u.seq.n + 1) * sizeof *f->groups);
		for (size_t i = 0; i < x->u.seq.n; i++)
			ut_group(C, x->u.seq.v[i]);
	}
}

int ut_load(const char *path, UtFile *f, DiagCtx *d)
{
	memset(f, 0, sizeof *f);
	f->path = path;
	char *text;
	size_t len;
	int err = u_read_file(path, YT_MAX_FILE, &text, &len);
	if (err) {
		f->src = src_new(path, NULL, 0);
		diag_report(d, (SrcLoc){f->src, 0, 0, 0}, DIAG_IO, "cannot read: %s", strerror(-err));
		return err;
	}
	f->src = src_new(path, text, len);
	UtCtx C = {f, d};
	const YtNode *root = yt_load(f->src, &f->arena, d);
	if (root)
		ut_file(&C, root);
	else if (!d->nerr)
		diag_report(d, (SrcLoc){f->src, 1, 1, 0}, DIAG_EMPTY_FILE, "the test file is empty");
	return 0;
}

void ut_free(UtFile *f)
{
	arena_free(&f->arena);
	src_free(f->src);
	memset(f, 0, sizeof *f);
}
