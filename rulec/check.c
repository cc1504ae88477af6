/* check.c - types, units, entity scope and sanity of rule expressions.
 *
 * Every expression gets a Ty: a value type (number, condition, string, task
 * state), the dimension of a number (seconds^a bytes^b), and the interval of
 * values it can take.  The interval drives the warnings: a comparison that
 * cannot be false (or true) is reported, as is a percentage above 100 held
 * against a quantity bounded by 100%.
 */
#include "kstate.h"
#include "rx.h"
#include "rules.h"
#include "units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef enum { TY_ERR, TY_NUM, TY_BOOL, TY_STR, TY_STATE } TyKind;

typedef struct Ty {
	TyKind k;
	Dim dim;
	bool bare;          /* a number literal without unit: takes the other side's unit */
	bool constant;      /* no metric below */
	bool percent;       /* a percent literal */
	double lo, hi;      /* values it can take */
} Ty;

typedef struct Chk {
	DiagCtx *d;
	const ExprSrc *src;
	const CheckOpts *o;
	const Expr *window_arg;   /* the metric a window function is reading */
	int agg;                  /* builtin id of the enclosing aggregation, or -1 */
	const Expr *agg_node;
	int agg_ent;              /* entity seen inside the aggregation, or -1 */
	int vec_ent;              /* entity of the metrics outside aggregations (one alert each), or -1 */
	const Expr *vec_node;     /* the first of them */
	const Expr *first_agg;    /* the first aggregation */
	bool failed;
} Chk;

static const Ty ty_err = {.k = TY_ERR};

static SrcLoc c_loc(const Chk *C, const Expr *e)
{
	return expr_loc(C->src, e->off, e->len ? e->len : 1);
}

static void c_error(Chk *C, SrcLoc loc, DiagCode code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void c_error(Chk *C, SrcLoc loc, DiagCode code, const char *fmt, ...)
{
	StrBuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&b, fmt, ap);
	va_end(ap);
	if (diag_default_severity(code) == SEV_ERROR)
		C->failed = true;
	diag_report_msg(C->d, loc, code, b.s);    /* takes the message */
}

/* The expression's own text, for messages. */
static const char *c_text(const Chk *C, const Expr *e, char *buf, size_t n)
{
	unsigned len = e->len < n - 4 ? e->len : (unsigned)(n - 4);
	snprintf(buf, n, "%.*s%s", (int)len, C->src->text + e->off, len < e->len ? "..." : "");
	return buf;
}

static const char *dim_name(Dim d)
{
	if (d.time == 0 && d.bytes == 0) return "a plain number or ratio";
	if (d.time == 1 && d.bytes == 0) return "a duration";
	if (d.time == 0 && d.bytes == 1) return "a size in bytes";
	if (d.time == -1 && d.bytes == 0) return "a rate per second";
	if (d.time == -1 && d.bytes == 1) return "bytes per second";
	static char buf[64];
	snprintf(buf, sizeof buf, "a quantity in s^%d*B^%d", d.time, d.bytes);
	return buf;
}

static bool dim_eq(Dim a, Dim b) { return a.time == b.time && a.bytes == b.bytes; }

static Ty c_expr(Chk *C, const Expr *e);

static Ty ty_num(Dim d, double lo, double hi)
{
	return (Ty){.k = TY_NUM, .dim = d, .lo = lo, .hi = hi};
}

static double c_mul(double a, double b)
{
	double r = a * b;
	return isnan(r) ? 0 : r;         /* 0 * inf: an endpoint that is 0 */
}

/* A bare number next to a duration or a size: warn, then let it adopt the unit. */
static void c_bare(Chk *C, const Expr *lit, const Ty *lt, const Ty *other)
{
	if (!lt->bare || other->bare || other->k != TY_NUM)
		return;
	Dim d = other->dim;
	if (lit->kind == N_NUM && lit->u.num.v != 0 && (d.time > 0 || d.bytes > 0) && d.time >= 0) {
		char b[64];
		c_error(C, c_loc(C, lit), DIAG_BARE_NUMBER,
			"%s has no unit but is compared with %s; write it with a unit (%s%s)",
			c_text(C, lit, b, sizeof b), dim_name(d), b,
			d.time > 0 ? "s, or ms, m, h" : "B, or KiB, MiB, GiB");
	}
}

/* The interval test of a comparison: 1 always true, 0 always false, -1 unknown. */
static int c_cmp_const(NodeKind k, const Ty *a, const Ty *b)
{
	switch (k) {
	case N_GT: if (a->lo > b->hi) return 1; if (a->hi <= b->lo) return 0; break;
	case N_GE: if (a->lo >= b->hi) return 1; if (a->hi < b->lo) return 0; break;
	case N_LT: if (a->hi < b->lo) return 1; if (a->lo >= b->hi) return 0; break;
	case N_LE: if (a->hi <= b->lo) return 1; if (a->lo > b->hi) return 0; break;
	case N_EQ:
		if (a->lo == a->hi && b->lo == b->hi) return a->lo == b->lo;
		if (a->hi < b->lo || a->lo > b->hi) return 0;
		break;
	case N_NE:
		if (a->lo == a->hi && b->lo == b->hi) return a->lo != b->lo;
		if (a->hi < b->lo || a->lo > b->hi) return 1;
		break;
	default: break;
	}
	return -1;
}

static const char *c_range(const Ty *t, char *buf, size_t n)
{
	if (t->lo == t->hi)
		snprintf(buf, n, "always %g", t->lo);
	else if (isinf(t->hi))
		snprintf(buf, n, "never below %g", t->lo);
	else if (isinf(t->lo))
		snprintf(buf, n, "never above %g", t->hi);
	else
		snprintf(buf, n, "between %g and %g", t->lo, t->hi);
	return buf;
}

static const char *const task_states = KSTATE_LETTERS;

static Ty c_compare(Chk *C, const Expr *e)
{
	Ty a = c_expr(C, e->a), b = c_expr(C, e->b);
#define oploc expr_loc(C->src, e->opoff, e->oplen)   /* computed only when reported */
	if (a.k == TY_ERR || b.k == TY_ERR)
		return ty_err;
	bool eqop = e->kind == N_EQ || e->kind == N_NE;
	/* strings and task states */
	if (a.k == TY_STR || a.k == TY_STATE || b.k == TY_STR || b.k == TY_STATE) {
		const Expr *lit = e->a->kind == N_STR ? e->a : e->b->kind == N_STR ? e->b : NULL;
		const Ty *other = lit == e->a ? &b : &a;
		if (!eqop) {
			c_error(C, oploc, DIAG_STRING_OP, "'%s' does not apply to strings; compare them with == or !=",
				ast_node_spelling[e->kind]);
			return ty_err;
		}
		if ((a.k == TY_STR || a.k == TY_STATE) != (b.k == TY_STR || b.k == TY_STATE)) {
			c_error(C, oploc, DIAG_STRING_OP, "cannot compare a string with %s",
				a.k == TY_NUM || b.k == TY_NUM ? "a number" : "a condition");
			return ty_err;
		}
		if (lit && other->k == TY_STATE) {
			const char *s = lit->u.str.s;
			if (lit->u.str.len != 1 || !strchr(task_states, s[0]))
				c_error(C, c_loc(C, lit), DIAG_BAD_STATE,
					"task state \"%s\" is not one of R, S, D, T, t, Z, X, P, I "
					"(as the third field of /proc/PID/stat)", s);
		}
		return (Ty){.k = TY_BOOL, .constant = a.constant && b.constant};
	}
	if (a.k != TY_NUM || b.k != TY_NUM) {
		const Expr *bad = a.k != TY_NUM ? e->a : e->b;
		char t[64];
		c_error(C, c_loc(C, bad), DIAG_TYPE_MISMATCH,
			"'%s' compares numbers, but %s is a condition", ast_node_spelling[e->kind],
			c_text(C, bad, t, sizeof t));
		return ty_err;
	}
	c_bare(C, e->a, &a, &b);
	c_bare(C, e->b, &b, &a);
	if (!a.bare && !b.bare && !dim_eq(a.dim, b.dim)) {
		char ta[64], tb[64];
		const char *hint = "";
		if ((a.percent && b.dim.bytes) || (b.percent && a.dim.bytes))
			hint = "; a percentage compares with a ratio such as host.mem_free / host.mem_total";
		else if ((a.percent && b.dim.time == 1) || (b.percent && a.dim.time == 1))
			hint = "; a time counter becomes a percentage through rate(), e.g. rate(cpu.busy_time[1s])";
		c_error(C, oploc, DIAG_UNIT_MISMATCH, "cannot compare %s (%s) with %s (%s)%s",
			c_text(C, e->a, ta, sizeof ta), dim_name(a.dim), c_text(C, e->b, tb, sizeof tb),
			dim_name(b.dim), hint);
		return ty_err;
	}
	Ty r = {.k = TY_BOOL, .constant = a.constant && b.constant};
	/* percentages above 100% against something bounded by 100% */
	const Ty *pct = a.percent && a.lo > 1 ? &a : b.percent && b.lo > 1 ? &b : NULL;
	const Ty *other = pct == &a ? &b : &a;
	if (pct && other->hi <= 1 && other->lo >= 0) {
		char t[64];
		const Expr *oe = pct == &a ? e->b : e->a;
		c_error(C, c_loc(C, pct == &a ? e->a : e->b), DIAG_PERCENT_OVER_100,
			"%g%% is above 100%%, and %s never exceeds 100%%; the comparison is constant",
			pct->lo * 100, c_text(C, oe, t, sizeof t));
		return r;
	}
	int k = c_cmp_const(e->kind, &a, &b);
	if (k >= 0) {
		char ra[64], rb[64], ta[64], tb[64];
		if (a.constant && b.constant)
			c_error(C, oploc, DIAG_CONSTANT_COND,
				"this comparison has no metric in it and is always %s", k ? "true" : "false");
		else if (a.constant || b.constant)
			c_error(C, oploc, DIAG_CONSTANT_COND, "this comparison is always %s: %s is %s",
				k ? "true" : "false", c_text(C, a.constant ? e->b : e->a, ta, sizeof ta),
				c_range(a.constant ? &b : &a, ra, sizeof ra));
		else
			c_error(C, oploc, DIAG_CONSTANT_COND,
				"this comparison is always %s: %s is %s and %s is %s", k ? "true" : "false",
				c_text(C, e->a, ta, sizeof ta), c_range(&a, ra, sizeof ra),
				c_text(C, e->b, tb, sizeof tb), c_range(&b, rb, sizeof rb));
	}
	return r;
#undef oploc
}

/* name =~ "pattern", name !~ "pattern": a string field on the left, a
 * string literal on the right, whose text (as written: no escapes are
 * processed before the pattern's own) compiles (rx.h).  A pattern's
 * error points into the literal. */
static Ty c_match(Chk *C, const Expr *e)
{
	Ty a = c_expr(C, e->a), b = c_expr(C, e->b);
	if (a.k == TY_ERR || b.k == TY_ERR)
		return ty_err;
	const char *op = ast_node_spelling[e->kind];
	char t[64];
	if (e->a->kind != N_METRIC || (a.k != TY_STR && a.k != TY_STATE)) {
		c_error(C, c_loc(C, e->a), DIAG_STRING_OP,
			"'%s' matches a string field (net.name, disk.name, fs.mountpoint, fs.fstype, fs.device, cgroup.name, "
			"task.comm, task.state) against a pattern; %s is %s", op, c_text(C, e->a, t, sizeof t),
			e->a->kind == N_STR ? "a literal" : a.k == TY_NUM ? "a number" : a.k == TY_BOOL ? "a condition" : "not a field");
		return ty_err;
	}
	if (e->b->kind != N_STR) {
		c_error(C, c_loc(C, e->b), DIAG_STRING_OP,
			"the right side of '%s' is a pattern in quotes, such as \"veth.*\"; %s is not one", op,
			c_text(C, e->b, t, sizeof t));
		return ty_err;
	}
	Rx rx;
	RxErr err;
	if (rx_compile(e->b->u.str.raw, e->b->u.str.rawlen, &rx, &err) < 0) {
		c_error(C, expr_loc(C->src, e->b->off + 1 + (unsigned)err.off, 1), DIAG_BAD_PATTERN, "%s", err.msg);
		return ty_err;
	}
	rx_free(&rx);
	return (Ty){.k = TY_BOOL};
}

static Ty c_arith(Chk *C, const Expr *e)
{
	Ty a = c_expr(C, e->a), b = c_expr(C, e->b);
	if (a.k == TY_ERR || b.k == TY_ERR)
		return ty_err;
	for (int i = 0; i < 2; i++) {
		const Ty *t = i ? &b : &a;
		const Expr *x = i ? e->b : e->a;
		char s[64];
		if (t->k == TY_STR || t->k == TY_STATE) {
			c_error(C, c_loc(C, x), DIAG_STRING_OP, "'%s' does not apply to the string %s",
				ast_node_spelling[e->kind], c_text(C, x, s, sizeof s));
			return ty_err;
		}
		if (t->k != TY_NUM) {
			c_error(C, c_loc(C, x), DIAG_TYPE_MISMATCH, "'%s' needs numbers, but %s is a condition",
				ast_node_spelling[e->kind], c_text(C, x, s, sizeof s));
			return ty_err;
		}
	}
	Ty r = {.k = TY_NUM, .constant = a.constant && b.constant};
	switch (e->kind) {
	case N_ADD:
	case N_SUB:
		c_bare(C, e->a, &a, &b);
		c_bare(C, e->b, &b, &a);
		if (!a.bare && !b.bare && !dim_eq(a.dim, b.dim)) {
			char ta[64], tb[64];
			c_error(C, expr_loc(C->src, e->a->off + e->a->len, 1), DIAG_UNIT_MISMATCH,
				"cannot %s %s (%s) and %s (%s)", e->kind == N_ADD ? "add" : "subtract",
				c_text(C, e->a, ta, sizeof ta), dim_name(a.dim), c_text(C, e->b, tb, sizeof tb),
				dim_name(b.dim));
			return ty_err;
		}
		r.dim = a.bare ? b.dim : a.dim;
		r.bare = a.bare && b.bare;
		if (e->kind == N_ADD) { r.lo = a.lo + b.lo; r.hi = a.hi + b.hi; }
		else { r.lo = a.lo - b.hi; r.hi = a.hi - b.lo; }
		break;
	case N_MUL:
	case N_DIV:
		if (e->kind == N_DIV && b.constant && b.lo == 0 && b.hi == 0) {
			c_error(C, c_loc(C, e->b), DIAG_DIV_ZERO, "division by zero");
			return ty_err;
		}
		r.dim.time = (signed char)(e->kind == N_MUL ? a.dim.time + b.dim.time : a.dim.time - b.dim.time);
		r.dim.bytes = (signed char)(e->kind == N_MUL ? a.dim.bytes + b.dim.bytes : a.dim.bytes - b.dim.bytes);
		r.bare = a.bare && b.bare;
		r.percent = false;
		if (e->kind == N_MUL) {
			double p[4] = {c_mul(a.lo, b.lo), c_mul(a.lo, b.hi), c_mul(a.hi, b.lo), c_mul(a.hi, b.hi)};
			r.lo = fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
			r.hi = fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
		} else if (b.lo > 0) {
			double p[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
			r.lo = fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
			r.hi = fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
			if (isnan(r.lo) || isnan(r.hi)) { r.lo = -INFINITY; r.hi = INFINITY; }
		} else if (a.lo >= 0 && b.lo >= 0) {
			r.lo = 0; r.hi = INFINITY;      /* a ratio of non-negative metrics */
		} else {
			r.lo = -INFINITY; r.hi = INFINITY;
		}
		break;
	default:
		break;
	}
	return r;
}

static Ty c_logic(Chk *C, const Expr *e)
{
	Ty a = c_expr(C, e->a), b = e->b ? c_expr(C, e->b) : (Ty){.k = TY_BOOL, .constant = true};
	if (a.k == TY_ERR || b.k == TY_ERR)
		return ty_err;
	for (int i = 0; i < 2; i++) {
		const Ty *t = i ? &b : &a;
		const Expr *x = i ? e->b : e->a;
		if (t->k != TY_BOOL) {
			char s[64];
			c_error(C, c_loc(C, x), DIAG_TYPE_MISMATCH,
				"'%s' takes conditions, but %s is %s; compare it, e.g. %s > 0",
				ast_node_spelling[e->kind], c_text(C, x, s, sizeof s),
				t->k == TY_NUM ? "a number" : "a string", s);
			return ty_err;
		}
	}
	return (Ty){.k = TY_BOOL, .constant = a.constant && b.constant};
}

static const char *ent_noun(int ent, bool plural)
{
	return plural ? cat_entities[ent].plural : cat_entities[ent].noun;
}

static Ty c_metric(Chk *C, const Expr *e)
{
	const Metric *m = &cat_metrics[e->u.metric.id];
	char b[64];
	if (m->entity != ENT_HOST) {
		if (C->agg < 0) {
			/* a vector: the rule raises one alert per entity */
			if (C->vec_ent >= 0 && C->vec_ent != (int)m->entity) {
				char v[64];
				c_error(C, c_loc(C, e), DIAG_MIXED_ENTITIES,
					"%s has one value per %s, but this rule's alerts are per %s (%s): one rule's "
					"alerts are about one kind; reduce one side to one value, e.g. max(%s)",
					m->name, ent_noun(m->entity, false), ent_noun(C->vec_ent, false),
					c_text(C, C->vec_node, v, sizeof v), m->name);
				return ty_err;
			}
			if (C->vec_ent < 0)
				C->vec_node = e;
			C->vec_ent = (int)m->entity;
		} else if (C->agg_ent >= 0 && C->agg_ent != (int)m->entity) {
			c_error(C, c_loc(C, e), DIAG_MIXED_ENTITIES,
				"%s is per-%s, but this %s() already ranges over %s; one aggregation ranges over one kind",
				m->name, ent_noun(m->entity, false), ast_builtins[C->agg].name,
				ent_noun(C->agg_ent, true));
			return ty_err;
		} else {
			C->agg_ent = (int)m->entity;
		}
	}
	if (e->u.metric.wlen && C->window_arg != e) {
		c_error(C, c_loc(C, e), DIAG_WINDOW_MISPLACED,
			"a [window] belongs inside rate(), increase(), delta(), changes(), deriv(), predict_linear() "
			"or *_over_time(), e.g. avg_over_time(%.*s)", (int)e->len, C->src->text + e->off);
		return ty_err;
	}
	if (m->kind == MK_COUNTER && C->window_arg != e) {
		c_error(C, c_loc(C, e), DIAG_COUNTER_RAW,
			"%s is a counter (it only grows); compare its rate, e.g. rate(%s[1s]), or delta(%s[1m]), "
			"or what it counted since boot, total(%s)", c_text(C, e, b, sizeof b), m->name, m->name, m->name);
		return ty_err;
	}
	switch (m->type) {
	case MT_BOOL: return (Ty){.k = TY_BOOL};
	case MT_STR: return (Ty){.k = TY_STR};
	case MT_STATE: return (Ty){.k = TY_STATE};
	default: break;
	}
	Dim d = {0, 0};
	if (m->unit == MU_SECONDS) d.time = 1;
	if (m->unit == MU_BYTES) d.bytes = 1;
	if (m->unit == MU_BYTES_PER_SECOND) d.bytes = 1, d.time = -1;
	return ty_num(d, (m->flags & MF_SIGNED) ? -INFINITY : 0, INFINITY);
}

/* predict_linear's t: a duration, or a bare number of seconds */
static bool c_horizon(Chk *C, const Expr *e)
{
	char s[64];
	Ty h = c_expr(C, e->b);
	if (h.k == TY_ERR)
		return false;
	if (h.k != TY_NUM || h.percent || (!h.bare && (h.dim.time != 1 || h.dim.bytes != 0))) {
		c_error(C, c_loc(C, e->b), DIAG_TYPE_MISMATCH,
			"predict_linear() looks ahead by a duration, such as predict_linear(host.mem_available[30m], 1h); "
			"%s is not one", c_text(C, e->b, s, sizeof s));
		return false;
	}
	return true;
}

static Ty c_window_fn(Chk *C, const Expr *e)
{
	const Builtin *bi = &ast_builtins[e->u.call.id];
	const Expr *x = e->a;
	char b[64], w1[32], w2[32];
	if (x->kind != N_METRIC || x->u.metric.wlen == 0) {
		if (x->kind == N_METRIC)
			c_error(C, c_loc(C, x), DIAG_NEEDS_WINDOW, "%s() needs a window: %s(%s[1s])",
				bi->name, bi->name, c_text(C, x, b, sizeof b));
		else
			c_error(C, c_loc(C, x), DIAG_NEEDS_WINDOW,
				"%s() takes a metric with a window, such as %s(host.forks[10s]), not an expression; "
				"for how often an expression held, use `for: M of N ticks`",
				bi->name, bi->name);
		return ty_err;
	}
	const Metric *m = &cat_metrics[x->u.metric.id];
	double w = x->u.metric.window;
#define wl expr_loc(C->src, x->u.metric.woff, x->u.metric.wlen)   /* only when reported */
	if (w <= 0 || w > RULE_MAX_WINDOW) {
		c_error(C, wl, DIAG_BAD_WINDOW, "window [%.*s] is %s; windows run from two ticks to %s",
			(int)x->u.metric.wlen, C->src->text + x->u.metric.woff,
			w <= 0 ? "empty" : "too long", unit_fmt_duration(RULE_MAX_WINDOW, w1, sizeof w1));
		return ty_err;
	}
	if (w < 2 * C->o->tick)
		c_error(C, wl, DIAG_WINDOW_BELOW_TICK,
			"a window of %s holds fewer than two samples at a %s tick; make it at least %s",
			unit_fmt_duration(w, w1, sizeof w1), unit_fmt_duration(C->o->tick, w2, sizeof w2),
			unit_fmt_duration(2 * C->o->tick, b, sizeof b));
	/* a condition is 1 or 0 in a history: changes() counts its flips, and
	 * min/max/avg_over_time say whether it held at every sample, at some
	 * sample, and at what fraction of them (Prometheus' min_over_time of a
	 * 0/1 series such as node_timex_sync_status) */
	bool of_cond = e->u.call.id == B_CHANGES || e->u.call.id == B_AVG_OVER_TIME ||
		       e->u.call.id == B_MAX_OVER_TIME || e->u.call.id == B_MIN_OVER_TIME;
	if (m->type != MT_NUM && !(m->type == MT_BOOL && of_cond)) {
		if (m->type == MT_BOOL)
			c_error(C, c_loc(C, x), DIAG_TYPE_MISMATCH,
				"%s() takes a number; %s is a condition, which min_over_time, max_over_time, "
				"avg_over_time and changes take", bi->name, m->name);
		else
			c_error(C, c_loc(C, x), DIAG_TYPE_MISMATCH, "%s() takes a number; %s is a %s",
				bi->name, m->name, m->type == MT_STR ? "string" : "task state");
		return ty_err;
	}
	if ((e->u.call.id == B_RATE || e->u.call.id == B_INCREASE) && m->kind != MK_COUNTER) {
		c_error(C, c_loc(C, x), DIAG_RATE_OF_GAUGE,
			"%s is a gauge; %s() needs a counter. For a gauge's change use delta(%s[%.*s])",
			m->name, bi->name, m->name, (int)x->u.metric.wlen, C->src->text + x->u.metric.woff);
		return ty_err;
	}
	bool over_time = e->u.call.id == B_AVG_OVER_TIME || e->u.call.id == B_MAX_OVER_TIME ||
			 e->u.call.id == B_MIN_OVER_TIME || e->u.call.id == B_DERIV ||
			 e->u.call.id == B_PREDICT_LINEAR;
	if (over_time && m->kind == MK_COUNTER) {
		c_error(C, c_loc(C, x), DIAG_COUNTER_RAW,
			"%s() of the counter %s only sees it grow; use rate(%s[...]) instead",
			bi->name, m->name, m->name);
		return ty_err;
	}
	const Expr *saved = C->window_arg;
	C->window_arg = x;
	Ty t = c_metric(C, x);
	C->window_arg = saved;
	if (t.k == TY_ERR)
		return t;
	switch (e->u.call.id) {
	case B_RATE:
		t.dim.time--;
		t.hi = (m->flags & MF_RATE_LE_1) ? 1 : INFINITY;
		break;
	case B_DELTA:
		if (m->kind != MK_COUNTER)
			t.lo = -INFINITY;
		break;
	case B_INCREASE:                        /* the counter's own unit, over the window */
		t.hi = (m->flags & MF_RATE_LE_1) ? x->u.metric.window : INFINITY;
		break;
	case B_CHANGES:
		t = ty_num((Dim){0, 0}, 0, INFINITY);   /* a count, of a number's or a condition's changes */
		break;
	case B_AVG_OVER_TIME:
	case B_MAX_OVER_TIME:
	case B_MIN_OVER_TIME:
		if (m->type == MT_BOOL)
			t = ty_num((Dim){0, 0}, 0, 1);  /* 1 or 0, or the fraction of samples it held */
		break;
	case B_DERIV:
		t.dim.time--;
		t.lo = -INFINITY;
		t.hi = INFINITY;
		break;
	case B_PREDICT_LINEAR:
		if (!c_horizon(C, e))
			return ty_err;
		t.lo = -INFINITY;
		t.hi = INFINITY;
		break;
	default:
		break;
	}
	return t;
#undef wl
}

static Ty c_aggregate(Chk *C, const Expr *e)
{
	const Builtin *bi = &ast_builtins[e->u.call.id];
	if (C->agg >= 0) {
		c_error(C, c_loc(C, e), DIAG_NESTED_AGGREGATE,
			"%s() inside %s(): aggregations do not nest; each ranges over all CPUs or all tasks",
			bi->name, ast_builtins[C->agg].name);
		return ty_err;
	}
	C->agg = (int)e->u.call.id;
	C->agg_node = e;
	C->agg_ent = -1;
	if (!C->first_agg)
		C->first_agg = e;
	Ty t = c_expr(C, e->a);
	Ty w = e->b ? c_expr(C, e->b) : (Ty){.k = TY_BOOL};
	int ent = C->agg_ent;
	C->agg = -1;
	if (t.k == TY_ERR || w.k == TY_ERR)
		return ty_err;
	char s[64];
	if (w.k != TY_BOOL) {
		c_error(C, c_loc(C, e->b), DIAG_TYPE_MISMATCH,
			"'where' takes a condition, such as 'where not task.kthread'; %s is not one",
			c_text(C, e->b, s, sizeof s));
		return ty_err;
	}
	if (ent < 0) {
		c_error(C, c_loc(C, e), DIAG_AGGREGATE_HOST,
			"%s() ranges over CPUs or tasks, but names no cpu.* or task.* metric", bi->name);
		return ty_err;
	}
	bool cond = e->u.call.id == B_ALL || e->u.call.id == B_ANY || e->u.call.id == B_COUNT;
	if (cond && t.k != TY_BOOL) {
		c_error(C, c_loc(C, e->a), DIAG_TYPE_MISMATCH,
			"%s() takes a condition, such as %s(rate(cpu.busy_time[1s]) > 90%%)", bi->name, bi->name);
		return ty_err;
	}
	if (!cond && t.k != TY_NUM) {
		c_error(C, c_loc(C, e->a), DIAG_TYPE_MISMATCH,
			"%s() takes a number, such as %s(rate(cpu.busy_time[1s])); %s is not one",
			bi->name, bi->name, c_text(C, e->a, s, sizeof s));
		return ty_err;
	}
	switch (e->u.call.id) {
	case B_ALL:
	case B_ANY:
		return (Ty){.k = TY_BOOL};
	case B_COUNT:
		return ty_num((Dim){0, 0}, 0, INFINITY);
	case B_SUM:
		t.lo = t.lo >= 0 ? 0 : -INFINITY;
		t.hi = t.hi <= 0 ? 0 : INFINITY;
		return t;
	default:
		return t;
	}
}

static Ty c_expr(Chk *C, const Expr *e)
{
	switch (e->kind) {
	case N_NUM: {
		Ty t = ty_num(e->u.num.dim, e->u.num.v, e->u.num.v);
		t.bare = !e->u.num.has_unit;
		t.percent = e->u.num.percent;
		t.constant = true;
		return t;
	}
	case N_STR:
		return (Ty){.k = TY_STR, .constant = true};
	case N_METRIC:
		return c_metric(C, e);
	case N_CALL: {
		const Builtin *bi = &ast_builtins[e->u.call.id];
		if (bi->cls == BC_WINDOW)
			return c_window_fn(C, e);
		if (bi->cls == BC_AGG)
			return c_aggregate(C, e);
		if (e->u.call.id == B_TOTAL) {  /* a counter's value since boot: the one raw read allowed */
			const Expr *m = e->a;
			if (!m || m->kind != N_METRIC || cat_metrics[m->u.metric.id].kind != MK_COUNTER || m->u.metric.wlen) {
				char s[64];
				c_error(C, c_loc(C, m ? m : e), DIAG_TYPE_MISMATCH,
					"total() takes a counter as it is, e.g. total(host.edac_uncorrectable_errors); %s is not one",
					m ? c_text(C, m, s, sizeof s) : "nothing");
				return ty_err;
			}
			const Expr *saved = C->window_arg;
			C->window_arg = m;
			Ty t = c_expr(C, m);
			C->window_arg = saved;
			return t;
		}
		Ty t = c_expr(C, e->a);        /* abs */
		if (t.k == TY_ERR)
			return t;
		if (t.k != TY_NUM) {
			c_error(C, c_loc(C, e->a), DIAG_TYPE_MISMATCH, "%s() takes a number", bi->name);
			return ty_err;
		}
		double m = fmax(fabs(t.lo), fabs(t.hi));
		t.lo = (t.lo <= 0 && t.hi >= 0) ? 0 : fmin(fabs(t.lo), fabs(t.hi));
		t.hi = m;
		t.percent = false;
		return t;
	}
	case N_NEG: {
		Ty t = c_expr(C, e->a);
		if (t.k == TY_ERR)
			return t;
		if (t.k != TY_NUM) {
			char s[64];
			c_error(C, c_loc(C, e->a), DIAG_TYPE_MISMATCH,
				"unary '-' needs a number; %s is not one (negate conditions with 'not')",
				c_text(C, e->a, s, sizeof s));
			return ty_err;
		}
		double lo = t.lo;
		t.lo = -t.hi;
		t.hi = -lo;
		t.percent = false;
		return t;
	}
	case N_ADD: case N_SUB: case N_MUL: case N_DIV:
		return c_arith(C, e);
	case N_LT: case N_LE: case N_GT: case N_GE: case N_EQ: case N_NE: {
		Ty t = c_compare(C, e);
		/* a subquery's max_over_time((m > c)[5m:]): the 1 or 0 of
		 * max_over_time(m[5m]) > c, a number as Prometheus' */
		return t.k == TY_BOOL && e->as_num ? ty_num((Dim){0, 0}, 0, 1) : t;
	}
	case N_MATCH: case N_NMATCH:
		return c_match(C, e);
	case N_AND: case N_OR: case N_NOT:
		return c_logic(C, e);
	default:
		return ty_err;
	}
}

bool chk_rule_expr(Rule *r, Expr *e, const ExprSrc *src, DiagCtx *d, const CheckOpts *o)
{
	(void)r;
	Chk C = {.d = d, .src = src, .o = o, .agg = -1, .agg_ent = -1, .vec_ent = -1};
	Ty t = c_expr(&C, e);
	if (t.k != TY_ERR && C.vec_ent >= 0 && C.first_agg) {
		char v[64];
		c_error(&C, c_loc(&C, C.first_agg), DIAG_ENTITY_SCOPE,
			"%s() in a rule whose alerts are per %s (%s has one value per %s): a per-entity rule "
			"cannot aggregate yet; make the aggregate its own rule, or wrap the rest in any(...)",
			ast_builtins[C.first_agg->u.call.id].name, ent_noun(C.vec_ent, false),
			c_text(&C, C.vec_node, v, sizeof v), ent_noun(C.vec_ent, false));
		return false;
	}
	if (t.k != TY_ERR && t.k != TY_BOOL) {
		char s[64];
		c_error(&C, c_loc(&C, e), DIAG_TYPE_MISMATCH,
			"the expression must be a condition, but %s is %s; compare it with a threshold: '%s > N'",
			c_text(&C, e, s, sizeof s), t.k == TY_NUM ? "a number" : "a string", s);
	}
	return !C.failed;
}
