/* rulefile.c - the rule file schema: YAML tree -> Rules.
 *
 *   file   -> { groups: [ group... ] }
 *   group  -> { name: STRING, rules: [ rule... ] }
 *   rule   -> { alert: NAME, expr: EXPR, for?: DURATION | "M of N ticks",
 *              clear?: EXPR, clear_for?: DURATION, severity?: SEVERITY,
 *              labels?: {NAME: STRING}, annotations?: {NAME: TEMPLATE},
 *              description?: TEMPLATE }
 */
#include "cg.h"
#include "rules.h"
#include "tmpl.h"
#include "units.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct RfCtx {
	RuleSet *rs;
	const SrcFile *f;
	DiagCtx *d;
	const CheckOpts *o;
} RfCtx;

const char *severity_name(Severity s)
{
	static const char *n[] = {"info", "warning", "critical"};
	return n[s];
}

static SrcLoc rf_key_loc(const YtNode *k) { return yt_loc(k); }
static SrcLoc rf_loc(const YtNode *n) { return yt_loc(n); }

/* Require kind k; report "expected a K for WHAT" otherwise. */
static bool rf_expect(RfCtx *C, const YtNode *n, YtKind k, const char *what)
{
	if (n->kind == k && !(k == YT_SCALAR && yt_is_null(n)))
		return true;
	static const char *kn[] = {"a string", "a list", "a mapping"};
	diag_report(C->d, rf_loc(n), DIAG_EXPECTED_TYPE, "%s must be %s, not %s", what, kn[k],
		    yt_kind_name(n));
	return false;
}

/* Report keys of map that are not in allowed[]; suggest the nearest. */
static void rf_unknown_keys(RfCtx *C, const YtNode *map, const char *const *allowed, const char *where)
{
	for (size_t i = 0; i < map->u.map.n; i++) {
		const YtNode *k = map->u.map.v[i].key;
		const char *ks = k->u.scalar.s;
		bool ok = false;
		for (const char *const *a = allowed; *a; a++)
			if (!strcmp(*a, ks)) { ok = true; break; }
		if (ok)
			continue;
		if (!strcmp(where, "a rule") && !strcmp(ks, "record")) {
			diag_report(C->d, rf_key_loc(k), DIAG_RECORDING_RULE,
				    "recording rules are not supported; Sentinel rules are alerts: "
				    "write 'alert: NAME' and a condition in 'expr'");
			continue;
		}
		const char *best = NULL;
		int bestd = 3;
		for (const char *const *a = allowed; *a; a++) {
			int dd = u_edit_distance(ks, *a, bestd);
			if (dd < bestd) { bestd = dd; best = *a; }
		}
		if (!strcmp(ks, "keep_firing_for"))
			best = "clear_for";
		SrcLoc loc = rf_key_loc(k);            /* first: it may allocate, and msg is held after */
		StrBuf msg = {0};
		if (best) {
			sb_printf(&msg, "unknown key '%s' in %s; did you mean '%s'?", ks, where, best);
		} else {
			sb_printf(&msg, "unknown key '%s' in %s; the keys are: ", ks, where);
			for (const char *const *a = allowed; *a; a++)
				sb_printf(&msg, "%s%s", a == allowed ? "" : ", ", *a);
		}
		diag_report_msg(C->d, loc, DIAG_UNKNOWN_KEY, msg.s);   /* takes the message */
	}
}

static bool rf_is_ident(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* duration -> DURATION ; zero allowed when allow_zero */
static bool rf_duration(RfCtx *C, const YtNode *n, const char *what, double max, double *out)
{
	double sec;
	size_t bad;
	const char *s = n->u.scalar.s;
	size_t len = n->u.scalar.len;
	char buf[32];
	if (unit_parse_duration(s, len, &sec, &bad) < 0) {
		bool digits = len > 0;
		for (size_t i = 0; i < len; i++)
			digits &= (s[i] >= '0' && s[i] <= '9');
		if (digits)
			diag_report(C->d, rf_loc(n), DIAG_BAD_DURATION,
				    "%s: '%s' has no unit; write %ss (or ms, m, h)", what, s, s);
		else
			diag_report(C->d, rf_loc(n), DIAG_BAD_DURATION,
				    "%s: '%s' is not a duration; write e.g. 500ms, 5s, 1m30s", what, s);
		return false;
	}
	if (sec > max) {
		diag_report(C->d, rf_loc(n), DIAG_BAD_DURATION, "%s: %s is longer than the maximum, %s",
			    what, s, unit_fmt_duration(max, buf, sizeof buf));
		return false;
	}
	*out = sec;
	return true;
}

/* max_alerts -> INT: a per-entity rule's alerts at once */
static void rf_max_alerts(RfCtx *C, Rule *r, const YtNode *n)
{
	char *end;
	long v = strtol(n->u.scalar.s, &end, 10);
	if (end == n->u.scalar.s || *end || v < 1 || v > (long)RULE_MAX_ALERTS) {
		diag_report(C->d, rf_loc(n), DIAG_BAD_NUMBER, "max_alerts: '%s' is not a number from 1 to %u",
			    n->u.scalar.s, RULE_MAX_ALERTS);
		return;
	}
	if (r->expr && cg_vector_entity(r->expr) < 0) {
		diag_report(C->d, rf_loc(n), DIAG_UNSUPPORTED,
			    "max_alerts: bounds the alerts of a rule with one alert per entity (a vector such as "
			    "fs.avail_bytes / fs.size_bytes < 10%%); rule '%s' has one alert: remove it", r->name);
		return;
	}
	r->max_alerts = (unsigned)v;
}

/* for -> DURATION | INT 'of' INT [ 'ticks' ] */
static void rf_for(RfCtx *C, Rule *r, const YtNode *n)
{
	const char *s = n->u.scalar.s;
	const char *of = strstr(s, " of ");
	if (!of) {
		double sec;
		if (rf_duration(C, n, "for", RULE_MAX_FOR, &sec)) {
			r->for_s = sec;
			char b1[32], b2[32];
			if (sec > 0 && sec < C->o->tick)
				diag_report(C->d, rf_loc(n), DIAG_FOR_BELOW_TICK,
					    "for: %s is shorter than one tick (%s); it acts like 'for: 0s'",
					    unit_fmt_duration(sec, b1, sizeof b1),
					    unit_fmt_duration(C->o->tick, b2, sizeof b2));
		}
		return;
	}
	char *e1, *e2;
	long m = strtol(s, &e1, 10);
	long nn = strtol(of + 4, &e2, 10);
	while (*e2 == ' ') e2++;
	bool tail_ok = !*e2 || !strcmp(e2, "ticks") || !strcmp(e2, "tick");
	if (e1 == s || e1 != of || e2 == of + 4 || !tail_ok) {
		diag_report(C->d, rf_loc(n), DIAG_BAD_M_OF_N,
			    "for: '%s' is not 'M of N ticks'; write e.g. '5 of 10 ticks'", s);
		return;
	}
	if (m < 1 || nn < 1 || m > nn || nn > RULE_MAX_TICKS) {
		diag_report(C->d, rf_loc(n), DIAG_BAD_M_OF_N,
			    "for: '%s' needs 1 <= M <= N <= %d", s, RULE_MAX_TICKS);
		return;
	}
	r->m_of = (unsigned)m;
	r->n_of = (unsigned)nn;
}

static bool rf_severity(RfCtx *C, Rule *r, const YtNode *n)
{
	static const struct { const char *w; Severity s; } sev[] = {
		{"info", SEVERITY_INFO}, {"warning", SEVERITY_WARNING}, {"critical", SEVERITY_CRITICAL},
	};
	for (size_t i = 0; i < ARRAY_LEN(sev); i++)
		if (!strcmp(n->u.scalar.s, sev[i].w)) {
			r->severity = sev[i].s;
			return true;
		}
	static const struct { const char *bad, *good; } fix[] = {
		{"warn", "warning"}, {"crit", "critical"}, {"error", "critical"}, {"fatal", "critical"},
		{"page", "critical"}, {"notice", "info"}, {"debug", "info"},
	};
	const char *best = NULL;
	for (size_t i = 0; i < ARRAY_LEN(fix); i++)
		if (!strcmp(n->u.scalar.s, fix[i].bad))
			best = fix[i].good;
	for (size_t i = 0; !best && i < ARRAY_LEN(sev); i++)
		if (u_edit_distance(n->u.scalar.s, sev[i].w, 2) <= 2)
			best = sev[i].w;
	if (best)
		diag_report(C->d, rf_loc(n), DIAG_BAD_SEVERITY,
			    "severity '%s' is not info, warning or critical; did you mean '%s'?",
			    n->u.scalar.s, best);
	else
		diag_report(C->d, rf_loc(n), DIAG_BAD_SEVERITY,
			    "severity '%s' is not info, warning or critical", n->u.scalar.s);
	return false;
}

/* labels -> { NAME: STRING ... } */
static void rf_kv(RfCtx *C, const YtNode *n, const char *what, bool names, KV **out, size_t *nout)
{
	if (!rf_expect(C, n, YT_MAP, what))
		return;
	KV *v = arena_alloc(&C->rs->arena, (n->u.map.n + 1) * sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < n->u.map.n; i++) {
		const YtNode *key = n->u.map.v[i].key, *val = n->u.map.v[i].value;
		if (names && !rf_is_ident(key->u.scalar.s)) {
			diag_report(C->d, rf_key_loc(key), DIAG_BAD_NAME,
				    "label name '%s' must be ASCII letters, digits and '_', not starting with a digit",
				    key->u.scalar.s);
			continue;
		}
		if (val->kind != YT_SCALAR) {
			char w[96];
			snprintf(w, sizeof w, "%s value '%s'", what, key->u.scalar.s);
			rf_expect(C, val, YT_SCALAR, w);
			continue;
		}
		v[k++] = (KV){key->u.scalar.s, val->u.scalar.s, key, val};
	}
	*out = v;
	*nout = k;
}

/* A template (grammar in tmpl.h): every variable and format must exist; a
 * label the rule does not set is a warning. */
static void rf_template(RfCtx *C, const Rule *r, const YtNode *n)
{
	const char *s = n->u.scalar.s;
	size_t pos = 0;
	TpPart p;
	while (tp_next(s, &pos, &p)) {
		if (p.kind == TP_UNCLOSED) {
			diag_report(C->d, yt_scalar_loc(n, p.off, 2), DIAG_TEMPLATE_SYNTAX,
				    "'{{' is not closed; a variable looks like {{ $value }}");
			return;
		}
		if (p.kind != TP_VAR)
			continue;
		if (p.var == TPV_LABEL) {
			bool found = false;
			for (size_t i = 0; i < r->nlabels; i++)
				found |= strlen(r->labels[i].key) == p.label_len &&
					 !memcmp(r->labels[i].key, s + p.label_off, p.label_len);
			/* the entity's labels: which task (any()/all() over tasks) or CPU */
			int ent = r->expr ? cg_value_entity(r->expr) : -1;
#define LBL(x) (p.label_len == strlen(x) && !memcmp(s + p.label_off, x, p.label_len))
			/* the entity the label names (a task's: pid and comm; a
			 * mount's: mountpoint, device and fstype), or -1 */
			int lent = LBL("comm") ? ENT_TASK : LBL("device") || LBL("fstype") ? ENT_FS : -1;
			for (int e = ENT_CPU; e < ENT__COUNT && lent < 0; e++)
				if (LBL(cat_entities[e].label))
					lent = e;
			found |= lent >= 0 && lent == ent;
			/* a per-entity rule's overflow alert (max_alerts) */
			found |= LBL("overflow") && r->expr && cg_vector_entity(r->expr) >= 0;
			char names[96];
			if (ent > ENT_HOST && ent < ENT__COUNT)
				snprintf(names, sizeof names, "this rule's alerts name a %s ($labels.%s%s)", cat_entities[ent].noun,
					 cat_entities[ent].label, ent == ENT_TASK ? ", $labels.comm" :
					 ent == ENT_FS ? ", $labels.device, $labels.fstype" : "");
			else
				snprintf(names, sizeof names, "this rule's alerts name no entity");
			if (!found && lent >= 0)
				diag_report(C->d, yt_scalar_loc(n, p.var_off, (unsigned)p.var_len), DIAG_TEMPLATE_LABEL,
					    "label '%.*s' names the %s an alert is about, for rules whose value comes from "
					    "any() or all() over %s; %s, so it will print empty",
					    (int)p.label_len, s + p.label_off, cat_entities[lent].noun, cat_entities[lent].plural,
					    names);
			else if (!found)
				diag_report(C->d, yt_scalar_loc(n, p.var_off, (unsigned)p.var_len), DIAG_TEMPLATE_LABEL,
					    "template names label '%.*s', which this rule does not set; it will print empty",
					    (int)p.label_len, s + p.label_off);
#undef LBL
		}
		if (p.var == TPV_UNKNOWN) {
			diag_report(C->d, yt_scalar_loc(n, p.var_off, (unsigned)(p.var_len ? p.var_len : 1)), DIAG_TEMPLATE_VAR,
				    "unknown template variable '%.*s'; use $value, $alert, $severity, $target, $kernel_log or $labels.NAME",
				    (int)p.var_len, s + p.var_off);
		} else if (p.var == TPV_KERNEL_LOG && p.has_fmt) {
			diag_report(C->d, yt_scalar_loc(n, p.fmt_off, (unsigned)(p.fmt_len ? p.fmt_len : 1)),
				    DIAG_TEMPLATE_VAR, "$kernel_log is text and takes no format");
		} else if (p.fmt == TPF_UNKNOWN) {
			diag_report(C->d, yt_scalar_loc(n, p.fmt_off, (unsigned)(p.fmt_len ? p.fmt_len : 1)),
				    DIAG_TEMPLATE_VAR, "unknown format '%.*s'; use humanize, percent, bytes or duration",
				    (int)p.fmt_len, s + p.fmt_off);
		}
	}
}

/* Every window of e (and its operands') in the rule's windows: mode. */
static void rf_mark_partial(Expr *e)
{
	if (!e)
		return;
	if (e->kind == N_METRIC && e->u.metric.wlen)
		e->u.metric.partial = true;
	rf_mark_partial(e->a);
	rf_mark_partial(e->b);
}

/* windows -> covered | partial: what a window not yet covered by its
 * history is (docs/rules.md, "Windows at start") */
static void rf_windows(RfCtx *C, Rule *r, const YtNode *n)
{
	const char *v = n->u.scalar.s;
	if (!strcmp(v, "partial")) {
		r->partial_windows = true;
		rf_mark_partial(r->expr);
		rf_mark_partial(r->clear);
	} else if (strcmp(v, "covered")) {
		diag_report(C->d, rf_loc(n), DIAG_BAD_WINDOWS,
			    "windows: '%s' is not covered (the default: a window is unknown until sentineld has "
			    "watched for its whole length) or partial (Prometheus' meaning: whatever samples it holds)",
			    v);
	}
}

static Expr *rf_expr(RfCtx *C, Rule *r, const YtNode *n, ExprSrc *src, const char *what)
{
	if (!rf_expect(C, n, YT_SCALAR, what))
		return NULL;
	src->text = n->u.scalar.s;
	src->len = n->u.scalar.len;
	src->node = n;
	Expr *e = parse_expr(src, &C->rs->arena, C->d);
	if (e && !chk_rule_expr(r, e, src, C->d, C->o))
		return NULL;
	return e;
}

static void rf_rule(RfCtx *C, const YtNode *n, const char *group)
{
	static const char *const keys[] = {"alert", "expr", "for", "clear", "clear_for", "severity",
					   "labels", "annotations", "description", "targets", "max_alerts", "windows", NULL};
	if (!rf_expect(C, n, YT_MAP, "a rule"))
		return;
	rf_unknown_keys(C, n, keys, "a rule");
	const YtNode *alert = yt_get(n, "alert"), *expr = yt_get(n, "expr"), *x;
	if (!alert) {
		if (!yt_get(n, "record"))
			diag_report(C->d, yt_loc(n), DIAG_MISSING_KEY, "rule has no 'alert:' name");
		return;
	}
	if (!rf_expect(C, alert, YT_SCALAR, "alert"))
		return;
	if (!rf_is_ident(alert->u.scalar.s)) {
		diag_report(C->d, rf_loc(alert), DIAG_BAD_NAME,
			    "alert name '%s' must be ASCII letters, digits and '_', not starting with a digit "
			    "(e.g. CpuOverload)", alert->u.scalar.s);
	}
	RuleSet *rs = C->rs;
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 64;
		rs->v = u_xrealloc(rs->v, rs->cap * sizeof *rs->v);
	}
	Rule *r = &rs->v[rs->n];
	memset(r, 0, sizeof *r);
	r->name = alert->u.scalar.s;
	r->group = group;
	r->name_node = alert;
	r->severity = SEVERITY_WARNING;
	bool ok = true;
	if ((x = yt_get(n, "labels")))
		rf_kv(C, x, "labels", true, &r->labels, &r->nlabels);
	if ((x = yt_get(n, "severity")))
		ok &= rf_expect(C, x, YT_SCALAR, "severity") && rf_severity(C, r, x);
	if (!expr) {
		diag_report(C->d, rf_loc(alert), DIAG_MISSING_KEY, "rule '%s' has no 'expr:' condition", r->name);
		ok = false;
	} else {
		r->expr = rf_expr(C, r, expr, &r->expr_src, "expr");
		ok &= r->expr != NULL;
	}
	if ((x = yt_get(n, "for")) && rf_expect(C, x, YT_SCALAR, "for"))
		rf_for(C, r, x);
	if ((x = yt_get(n, "clear"))) {
		r->clear = rf_expr(C, r, x, &r->clear_src, "clear");
		ok &= r->clear != NULL;
	}
	if ((x = yt_get(n, "clear_for")) && rf_expect(C, x, YT_SCALAR, "clear_for")) {
		if (!yt_get(n, "clear"))
			diag_report(C->d, rf_loc(x), DIAG_MISSING_KEY,
				    "clear_for: needs a clear: condition in rule '%s'", r->name);
		rf_duration(C, x, "clear_for", RULE_MAX_FOR, &r->clear_for_s);
	}
	if (r->expr && r->clear && cg_vector_entity(r->clear) >= 0 &&
	    cg_vector_entity(r->clear) != cg_vector_entity(r->expr)) {
		int ce = cg_vector_entity(r->clear), ee = cg_vector_entity(r->expr);
		diag_report(C->d, rf_loc(yt_get(n, "clear")), DIAG_MIXED_ENTITIES,
			    "clear: has one value per %s, but the rule's alerts are %s%s: the clear condition is "
			    "about the alert's own entity, or a host value", cat_entities[ce].noun,
			    ee >= 0 ? "per " : "one for the rule", ee >= 0 ? cat_entities[ee].noun : "");
	}
	if ((x = yt_get(n, "max_alerts")) && rf_expect(C, x, YT_SCALAR, "max_alerts"))
		rf_max_alerts(C, r, x);
	if ((x = yt_get(n, "windows")) && rf_expect(C, x, YT_SCALAR, "windows"))
		rf_windows(C, r, x);
	if ((x = yt_get(n, "annotations"))) {
		rf_kv(C, x, "annotations", true, &r->annotations, &r->nannotations);
		for (size_t i = 0; i < r->nannotations; i++)
			rf_template(C, r, r->annotations[i].vnode);
	}
	/* targets: {role: db}: only on targets with these labels (sentineld's
	 * [target NAME] labels; `target` is the target's name) */
	if ((x = yt_get(n, "targets"))) {
		rf_kv(C, x, "targets", true, &r->targets, &r->ntargets);
		if (x->kind == YT_MAP && !x->u.map.n)
			diag_report(C->d, rf_loc(x), DIAG_MISSING_KEY,
				    "targets: names labels a target must have (e.g. targets: {role: db}); an empty map "
				    "limits nothing: remove it");
	}
	if ((x = yt_get(n, "description")) && rf_expect(C, x, YT_SCALAR, "description")) {
		r->description = x->u.scalar.s;
		rf_template(C, r, x);
	}
	(void)ok;
	rs->n++;
}

static void rf_group(RfCtx *C, const YtNode *g, const YtNode **names, size_t *nnames)
{
	static const char *const keys[] = {"name", "rules", NULL};
	if (!rf_expect(C, g, YT_MAP, "a group"))
		return;
	rf_unknown_keys(C, g, keys, "a group");
	const YtNode *name = yt_get(g, "name"), *rules = yt_get(g, "rules");
	const char *gname = "";
	if (!name) {
		diag_report(C->d, yt_loc(g), DIAG_MISSING_KEY, "group has no 'name:'");
	} else if (rf_expect(C, name, YT_SCALAR, "group name")) {
		gname = name->u.scalar.s;
		for (size_t i = 0; i < *nnames; i++)
			if (!strcmp(names[i]->u.scalar.s, gname)) {
				diag_report(C->d, rf_loc(name), DIAG_DUPLICATE_GROUP,
					    "group '%s' is defined twice in this file; give each group its own name", gname);
				diag_note(C->d, rf_loc(names[i]), "first defined here");
				break;
			}
		names[(*nnames)++] = name;
	}
	if (!rules) {
		diag_report(C->d, name ? rf_loc(name) : yt_loc(g), DIAG_MISSING_KEY,
			    "group '%s' has no 'rules:' list", gname);
		return;
	}
	if (rules->kind == YT_SEQ && rules->u.seq.n == 0) {
		diag_report(C->d, yt_loc(rules), DIAG_EMPTY_GROUP, "group '%s' has no rules", gname);
		return;
	}
	if (yt_is_null(rules)) {
		diag_report(C->d, name ? rf_loc(name) : yt_loc(g), DIAG_EMPTY_GROUP, "group '%s' has no rules", gname);
		return;
	}
	if (!rf_expect(C, rules, YT_SEQ, "rules"))
		return;
	for (size_t i = 0; i < rules->u.seq.n; i++)
		rf_rule(C, rules->u.seq.v[i], gname);
}

static void rf_file(RfCtx *C, const YtNode *root)
{
	static const char *const keys[] = {"groups", NULL};
	if (!rf_expect(C, root, YT_MAP, "a rule file"))
		return;
	rf_unknown_keys(C, root, keys, "the file");
	const YtNode *groups = yt_get(root, "groups");
	if (!groups) {
		diag_report(C->d, yt_loc(root), DIAG_MISSING_KEY, "the file has no 'groups:' list");
		return;
	}
	if (!rf_expect(C, groups, YT_SEQ, "groups"))
		return;
	/* in the arena: nothing to free, also when a group runs out of memory (u_oom) */
	const YtNode **names = arena_alloc(&C->rs->arena, (groups->u.seq.n + 1) * sizeof *names);
	size_t nnames = 0;
	for (size_t i = 0; i < groups->u.seq.n; i++)
		rf_group(C, groups->u.seq.v[i], names, &nnames);
}

/* text (malloc'd, or NULL) is rs's from here on, whatever fails */
static SrcFile *rs_add_file(RuleSet *rs, const char *name, char *text, size_t len)
{
	rs->pending = text;
	rs->files = u_xrealloc(rs->files, (rs->nfiles + 1) * sizeof *rs->files);
	SrcFile *f = src_new(name, text, len);
	rs->pending = NULL;
	f->index = (unsigned)rs->nfiles;
	rs->files[rs->nfiles++] = f;
	return f;
}

void rf_load_buffer(RuleSet *rs, const char *name, char *text, size_t len, DiagCtx *d, const CheckOpts *o)
{
	SrcFile *f = rs_add_file(rs, name, text, len);
	RfCtx C = {rs, f, d, o};
	YtNode *root = yt_load(f, &rs->arena, d);
	if (root)
		rf_file(&C, root);
}

int rf_load(RuleSet *rs, const char *path, DiagCtx *d, const CheckOpts *o)
{
	char *text;
	size_t len;
	int err = u_read_file(path, YT_MAX_FILE, &text, &len);
	if (err) {
		SrcFile *f = rs_add_file(rs, path, NULL, 0);
		if (err == -EFBIG)
			diag_report(d, (SrcLoc){f, 0, 0, 0}, DIAG_FILE_TOO_LARGE,
				    "file is larger than %u MiB; split the rules into several files", YT_MAX_FILE >> 20);
		else
			diag_report(d, (SrcLoc){f, 0, 0, 0}, DIAG_IO, "cannot read: %s", strerror(-err));
		return err;
	}
	rf_load_buffer(rs, path, text, len, d, o);
	return 0;
}

/* Duplicate alert names across every file: a hash table of names. */
void rs_check_all(RuleSet *rs, DiagCtx *d)
{
	size_t cap = 16;
	while (cap < rs->n * 2)
		cap *= 2;
	Rule **tab = arena_alloc(&rs->arena, cap * sizeof *tab);   /* rs's: nothing to free (u_oom) */
	for (size_t i = 0; i < rs->n; i++) {
		Rule *r = &rs->v[i];
		unsigned long h = 5381;
		for (const char *s = r->name; *s; s++)
			h = h * 33 + (unsigned char)*s;
		for (size_t j = h & (cap - 1);; j = (j + 1) & (cap - 1)) {
			if (!tab[j]) {
				tab[j] = r;
				break;
			}
			if (!strcmp(tab[j]->name, r->name)) {
				diag_report(d, yt_loc(r->name_node), DIAG_DUPLICATE_ALERT,
					    "alert '%s' is defined twice; alert names must be unique across all rule files",
					    r->name);
				diag_note(d, yt_loc(tab[j]->name_node), "first defined here");
				break;
			}
		}
	}
}

void rs_free(RuleSet *rs)
{
	for (size_t i = 0; i < rs->nfiles; i++)
		src_free(rs->files[i]);
	free(rs->files);
	free(rs->v);
	free(rs->pending);
	arena_free(&rs->arena);
	memset(rs, 0, sizeof *rs);
}

static int rs_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rs_list_dir(const char *dir, char ***paths, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *de;
	size_t first = *n;
	int e = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.' ||
		    !((l > 5 && !strcmp(de->d_name + l - 5, ".yaml")) || (l > 4 && !strcmp(de->d_name + l - 4, ".yml"))))
			continue;
		char *p = malloc(strlen(dir) + l + 2);
		char **np = realloc(*paths, (*n + 1) * sizeof **paths);
		if (!p || !np) {
			free(p);
			if (np)
				*paths = np;
			e = -ENOMEM;
			break;
		}
		sprintf(p, "%s/%s", dir, de->d_name);
		*paths = np;
		(*paths)[(*n)++] = p;
	}
	closedir(d);
	if (*n > first)              /* (an empty directory: no array to sort) */
		qsort(*paths + first, *n - first, sizeof **paths, rs_cmp_str);
	return e;
}
