/* parse.c - lexer and recursive-descent parser for rule expressions.
 *
 * The grammar is written above each function (Lua lparser.c style).  One
 * syntax error abandons the expression it is in; the caller goes on with the
 * next rule, so every broken rule in every file is still reported.
 */
#include "ast.h"
#include "units.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const Builtin ast_builtins[B__COUNT] = {
#define BUILTIN(id, name, cls, nargs, sig, desc) {name, cls, nargs, sig, desc},
#include "ast.def"
#undef BUILTIN
};

const char *const ast_node_spelling[N__COUNT] = {
#define NODE(id, sp) sp,
#include "ast.def"
#undef NODE
};

#define EXPR_MAX_DEPTH 64

typedef enum {
	T_EOF, T_NUM, T_IDENT, T_STR, T_LP, T_RP, T_LB, T_RB, T_COMMA,
	T_PLUS, T_MINUS, T_STAR, T_SLASH,
	T_LT, T_LE, T_GT, T_GE, T_EQ, T_NE, T_MATCH, T_NMATCH,
	T_AND, T_OR, T_NOT, T_WHERE, T_ERR
} TokKind;


typedef struct Tok {
	TokKind k;
	unsigned off, len;
	double num;            /* T_NUM: value in base units */
	const Unit *unit;      /* T_NUM: its unit, or NULL */
} Tok;

typedef struct Parser {
	const ExprSrc *src;
	Arena *a;
	DiagCtx *d;
	size_t pos;            /* lexer position */
	Tok t;                 /* current token */
	int depth;
	bool failed;           /* an error was reported: unwind */
	/* a subquery, (expr)[5m:], parsed and not yet taken by the call
	 * around it (parse_subquery, p_take_subquery): its expression, and
	 * its window's seconds and span */
	Expr *subq;
	double subq_w;
	unsigned subq_woff, subq_wlen;
} Parser;

SrcLoc expr_loc(const ExprSrc *src, unsigned off, unsigned len)
{
	if (!src->node)
		return (SrcLoc){0};
	SrcLoc l = yt_scalar_loc(src->node, off, len);
	return l;
}

static void p_error(Parser *P, unsigned off, unsigned len, DiagCode code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void p_error(Parser *P, unsigned off, unsigned len, DiagCode code, const char *fmt, ...)
{
	if (P->failed)
		return;
	P->failed = true;
	SrcLoc loc = expr_loc(P->src, off, len ? len : 1);   /* first: it may allocate, and b is held after */
	StrBuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&b, fmt, ap);
	va_end(ap);
	diag_report_msg(P->d, loc, code, b.s);   /* takes the message */
}

/* ---- lexer (lex_) ---- */

static bool lex_isalpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool lex_isdigit(int c) { return c >= '0' && c <= '9'; }

static const char *lex_unit_suggest(const char *s, size_t n)
{
	static const struct { const char *bad, *good; } fix[] = {
		{"sec", "s"}, {"secs", "s"}, {"second", "s"}, {"seconds", "s"},
		{"msec", "ms"}, {"millis", "ms"}, {"mins", "m"}, {"minute", "m"},
		{"minutes", "m"}, {"hr", "h"}, {"hours", "h"}, {"kb", "KiB"}, {"Kb", "KiB"},
		{"k", "KiB"}, {"K", "KiB"}, {"M", "MiB"}, {"G", "GiB"}, {"mb", "MiB"},
		{"gb", "GiB"}, {"Mi", "MiB"}, {"Gi", "GiB"}, {"Ki", "KiB"}, {"b", "B"},
		{"bytes", "B"}, {"pct", "%"}, {"percent", "%"},
	};
	for (size_t i = 0; i < ARRAY_LEN(fix); i++)
		if (strlen(fix[i].bad) == n && !memcmp(fix[i].bad, s, n))
			return fix[i].good;
	return NULL;
}

/* NUMBER -> DIGITS [ '.' DIGITS ] [ ('e'|'E') ['+'|'-'] DIGITS ] [ UNIT ] */
static void lex_number(Parser *P, Tok *t)
{
	const char *s = P->src->text;
	size_t n = P->src->len, i = P->pos;
	while (i < n && lex_isdigit(s[i])) i++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && lex_isdigit(s[i])) i++;
	}
	if (i + 1 < n && (s[i] == 'e' || s[i] == 'E') &&
	    (lex_isdigit(s[i + 1]) || ((s[i + 1] == '+' || s[i + 1] == '-') && i + 2 < n && lex_isdigit(s[i + 2])))) {
		i += 2;
		while (i < n && lex_isdigit(s[i])) i++;
	}
	char buf[64];
	size_t nl = i - P->pos;
	if (nl >= sizeof buf) {
		p_error(P, (unsigned)P->pos, (unsigned)nl, DIAG_BAD_NUMBER, "number is too long");
		t->k = T_ERR;
		return;
	}
	memcpy(buf, s + P->pos, nl);
	buf[nl] = 0;
	errno = 0;
	char *e;
	double v = strtod(buf, &e);
	if (*e || errno == ERANGE || !isfinite(v)) {
		p_error(P, (unsigned)P->pos, (unsigned)nl, DIAG_BAD_NUMBER, "'%s' is not a valid number", buf);
		t->k = T_ERR;
		return;
	}
	size_t us = i;
	if (i < n && s[i] == '%')
		i++;
	else
		while (i < n && (lex_isalpha(s[i]) || (unsigned char)s[i] >= 0x80))
			i++;
	t->unit = NULL;
	if (i > us) {
		const Unit *u = unit_lookup(s + us, i - us);
		if (!u) {
			const char *fix = lex_unit_suggest(s + us, i - us);
			if (fix)
				p_error(P, (unsigned)us, (unsigned)(i - us), DIAG_UNKNOWN_UNIT,
					"unknown unit '%.*s'; did you mean '%s'?", (int)(i - us), s + us, fix);
			else
				p_error(P, (unsigned)us, (unsigned)(i - us), DIAG_UNKNOWN_UNIT,
					"unknown unit '%.*s'; units are %s", (int)(i - us), s + us, unit_all());
			t->k = T_ERR;
			return;
		}
		t->unit = u;
		v *= u->scale;
	}
	t->k = T_NUM;
	t->num = v;
	t->len = (unsigned)(i - P->pos);
	P->pos = i;
}

static void lex_next(Parser *P)
{
	const char *s = P->src->text;
	size_t n = P->src->len;
	Tok *t = &P->t;
	while (P->pos < n && (s[P->pos] == ' ' || s[P->pos] == '\t' || s[P->pos] == '\n' || s[P->pos] == '\r'))
		P->pos++;
	memset(t, 0, sizeof *t);
	t->off = (unsigned)P->pos;
	t->len = 1;
	if (P->pos >= n) {
		t->k = T_EOF;
		t->len = 0;
		return;
	}
	char c = s[P->pos], c1 = P->pos + 1 < n ? s[P->pos + 1] : 0;
	if (lex_isdigit(c) || (c == '.' && lex_isdigit(c1))) {
		lex_number(P, t);
		return;
	}
	if (lex_isalpha(c)) {
		size_t i = P->pos;
		while (i < n && (lex_isalpha(s[i]) || lex_isdigit(s[i]) || s[i] == '.'))
			i++;
		t->len = (unsigned)(i - P->pos);
		static const struct { const char *w; TokKind k; } kw[] = {
			{"and", T_AND}, {"or", T_OR}, {"not", T_NOT}, {"where", T_WHERE},
		};
		t->k = T_IDENT;
		for (size_t k = 0; k < ARRAY_LEN(kw); k++)
			if (strlen(kw[k].w) == t->len && !memcmp(kw[k].w, s + P->pos, t->len))
				t->k = kw[k].k;
		P->pos = i;
		return;
	}
	if (c == '"' || c == '\'') {
		size_t i = P->pos + 1;
		while (i < n && s[i] != c) {
			if (s[i] == '\\' && i + 1 < n)
				i++;
			i++;
		}
		if (i >= n) {
			p_error(P, t->off, (unsigned)(n - P->pos), DIAG_EXPR_SYNTAX,
				"string is not closed; add the missing %c", c);
			t->k = T_ERR;
			return;
		}
		t->k = T_STR;
		t->len = (unsigned)(i + 1 - P->pos);
		P->pos = i + 1;
		return;
	}
	P->pos++;
	switch (c) {
	case '(': t->k = T_LP; return;
	case ')': t->k = T_RP; return;
	case '[': t->k = T_LB; return;
	case ']': t->k = T_RB; return;
	case ',': t->k = T_COMMA; return;
	case '+': t->k = T_PLUS; return;
	case '-': t->k = T_MINUS; return;
	case '*': t->k = T_STAR; return;
	case '/': t->k = T_SLASH; return;
	case '<': if (c1 == '=') { P->pos++; t->k = T_LE; t->len = 2; } else t->k = T_LT; return;
	case '>': if (c1 == '=') { P->pos++; t->k = T_GE; t->len = 2; } else t->k = T_GT; return;
	case '=':
		if (c1 == '=') { P->pos++; t->k = T_EQ; t->len = 2; return; }
		if (c1 == '~') { P->pos++; t->k = T_MATCH; t->len = 2; return; }
		p_error(P, t->off, 1, DIAG_EXPR_SYNTAX, "'=' is not an operator; compare with '=='");
		t->k = T_ERR;
		return;
	case '!':
		if (c1 == '=') { P->pos++; t->k = T_NE; t->len = 2; return; }
		if (c1 == '~') { P->pos++; t->k = T_NMATCH; t->len = 2; return; }
		p_error(P, t->off, 1, DIAG_EXPR_SYNTAX, "'!' is not an operator; negate with 'not'");
		t->k = T_ERR;
		return;
	case '&':
	case '|':
		p_error(P, t->off, c1 == c ? 2 : 1, DIAG_EXPR_SYNTAX, "'%c%s' is not an operator; use '%s'",
			c, c1 == c ? (c == '&' ? "&" : "|") : "", c == '&' ? "and" : "or");
		t->k = T_ERR;
		return;
	default: {
		unsigned len = 1;
		while (P->pos < n && ((unsigned char)s[P->pos] & 0xc0) == 0x80) { P->pos++; len++; }
		p_error(P, t->off, 1, DIAG_EXPR_SYNTAX, "unexpected character '%.*s'", (int)len, s + t->off);
		t->k = T_ERR;
	}
	}
}

/* ---- parser (parse_) ---- */

static Expr *p_node(Parser *P, NodeKind k, unsigned off, unsigned len)
{
	Expr *e = arena_alloc(P->a, sizeof *e);
	e->kind = k;
	e->off = off;
	e->len = len;
	return e;
}

static Expr *p_binary(Parser *P, NodeKind k, Expr *a, Expr *b)
{
	Expr *e = p_node(P, k, a->off, b->off + b->len - a->off);
	e->a = a;
	e->b = b;
	return e;
}

static void p_unexpected(Parser *P, const char *wanted)
{
	if (P->t.k == T_ERR)
		return;
	const char *s = P->src->text;
	if (P->t.k == T_EOF)
		p_error(P, P->t.off, 1, DIAG_EXPR_SYNTAX, "expected %s, found the end of the expression", wanted);
	else
		p_error(P, P->t.off, P->t.len, DIAG_EXPR_SYNTAX, "expected %s, found '%.*s'", wanted,
			(int)P->t.len, s + P->t.off);
}

static bool p_expect(Parser *P, TokKind k, const char *wanted)
{
	if (P->t.k != k) {
		p_unexpected(P, wanted);
		return false;
	}
	lex_next(P);
	return true;
}

static Expr *parse_or(Parser *P);

/* The span [*b, *e) of s without the blanks around it */
static void p_trim(const char *s, size_t *b, size_t *e)
{
	while (*b < *e && s[*b] == ' ') ++*b;
	while (*e > *b && s[*e - 1] == ' ') --*e;
}

/* The duration in text [*b, *e), its span trimmed; false after an error
 * that says to write `like` */
static bool p_duration(Parser *P, size_t *b, size_t *e, double *sec, const char *like)
{
	const char *s = P->src->text;
	size_t bad;
	p_trim(s, b, e);
	if (unit_parse_duration(s + *b, *e - *b, sec, &bad) < 0) {
		p_error(P, (unsigned)*b, (unsigned)(*e - *b), DIAG_BAD_DURATION, "'%.*s' is not a duration; write %s",
			(int)(*e - *b), s + *b, like);
		return false;
	}
	return true;
}

/* window -> '[' DURATION ']' */
static bool parse_window(Parser *P, Expr *m)
{
	const char *s = P->src->text;
	size_t n = P->src->len, start = P->pos, i = start;
	while (i < n && s[i] != ']')
		i++;
	if (i >= n) {
		p_error(P, P->t.off, 1, DIAG_EXPR_SYNTAX, "'[' is not closed; a window looks like [1s]");
		return false;
	}
	double sec;
	size_t b = start, e = i;
	if (!p_duration(P, &b, &e, &sec, "a window like [500ms], [10s] or [1m30s]"))
		return false;
	m->u.metric.window = sec;
	m->u.metric.woff = (unsigned)b;
	m->u.metric.wlen = (unsigned)(e - b);
	m->len = (unsigned)(i + 1 - m->off);
	P->pos = i + 1;
	lex_next(P);
	return true;
}

/* subquery -> '(' expr ')' '[' DURATION ':' ']': kept in P->subq for the
 * call around it.  Prometheus' step (after the ':') is not taken: every
 * tick's sample counts. */
static bool parse_subquery(Parser *P, Expr *e)
{
	const char *s = P->src->text;
	size_t n = P->src->len, i = P->pos, colon = 0;
	while (i < n && s[i] != ']') {
		if (s[i] == ':' && !colon)
			colon = i;
		i++;
	}
	if (i >= n || !colon) {
		p_error(P, P->t.off, 1, DIAG_EXPR_SYNTAX,
			"a window follows a metric, not an expression (a subquery has a ':', "
			"max_over_time((host.load1 > 4)[5m:])); for how often a condition held, use "
			"`for: M of N ticks`, or a window over a condition metric (min_over_time(host.clock_synced[3m]))");
		return false;
	}
	size_t b = P->pos, en = colon, r = colon + 1;
	double sec;
	while (r < i && s[r] == ' ') r++;
	if (r < i) {
		p_trim(s, &b, &en);
		p_error(P, (unsigned)r, (unsigned)(i - r), DIAG_EXPR_SYNTAX,
			"a subquery's step is the tick here (every sample counts); leave it out: [%.*s:]",
			(int)(en - b), s + b);
		return false;
	}
	if (!p_duration(P, &b, &en, &sec, "a subquery's window like [5m:]"))
		return false;
	if (P->subq) {
		p_error(P, P->subq->off, P->subq->len, DIAG_EXPR_SYNTAX,
			"a subquery is taken only as the argument of max_over_time() or min_over_time()");
		return false;
	}
	P->subq = e;
	P->subq_w = sec;
	P->subq_woff = (unsigned)b;
	P->subq_wlen = (unsigned)(en - b);
	e->len = (unsigned)(i + 1 - e->off);
	P->pos = i + 1;
	lex_next(P);
	return true;
}

static bool p_has_metric(const Expr *e)
{
	return e && (e->kind == N_METRIC || e->kind == N_CALL || e->kind == N_STR || p_has_metric(e->a) ||
		     p_has_metric(e->b));
}

/* fn((m OP c)[w:]), fn max_over_time or min_over_time and OP an order:
 * whether the condition held at some sample, or at every sample, of the
 * window is the window's largest or smallest m against c.  Returns
 * (fn'(m[w]) OP c), taken as its 1 or 0 (Expr.as_num), in place of the
 * call e; NULL after an error. */
static Expr *p_take_subquery(Parser *P, Expr *e, Expr *x)
{
	BuiltinId id = e->u.call.id;
	Expr *q = P->subq;
	P->subq = NULL;
	if (id != B_MAX_OVER_TIME && id != B_MIN_OVER_TIME) {
		p_error(P, q->off, q->len, DIAG_EXPR_SYNTAX,
			"%s() of a subquery: not taken; max_over_time() and min_over_time() take one "
			"(whether it held at some sample, at every sample); for how often it held, use `for: M of N ticks`",
			ast_builtins[id].name);
		return NULL;
	}
	NodeKind k = x->kind;
	bool order = k == N_GT || k == N_GE || k == N_LT || k == N_LE;
	Expr *m = order ? x->a : NULL, *c = order ? x->b : NULL;
	if (order && !(m->kind == N_METRIC && !m->u.metric.wlen) && c->kind == N_METRIC && !c->u.metric.wlen) {
		Expr *t = m;                                   /* c < m: m > c */
		m = c;
		c = t;
		k = k == N_GT ? N_LT : k == N_GE ? N_LE : k == N_LT ? N_GT : N_GE;
	}
	if (!order || m->kind != N_METRIC || m->u.metric.wlen || p_has_metric(c)) {
		p_error(P, q->off, q->len, DIAG_EXPR_SYNTAX,
			"a subquery is taken where it compares one metric with a number, such as "
			"%s((host.load1 > 4)[5m:]); for how often another expression held, use `for: M of N ticks`",
			ast_builtins[id].name);
		return NULL;
	}
	/* held at some sample: above c at the largest, below it at the
	 * smallest; at every sample: the other way round */
	bool above = k == N_GT || k == N_GE;
	e->u.call.id = (id == B_MAX_OVER_TIME) == above ? B_MAX_OVER_TIME : B_MIN_OVER_TIME;
	m->u.metric.window = P->subq_w;
	m->u.metric.woff = P->subq_woff;
	m->u.metric.wlen = P->subq_wlen;
	e->a = m;
	x->kind = k;
	x->a = e;
	x->b = c;
	x->as_num = true;
	x->off = e->off;
	x->len = e->len;
	return x;
}

/* call -> NAME '(' [ expr { ',' expr } ] [ 'where' expr ] ')' */
static Expr *parse_call(Parser *P, Tok name)
{
	const char *s = P->src->text;
	Expr *e = p_node(P, N_CALL, name.off, name.len);
	int id = -1;
	for (int i = 0; i < B__COUNT; i++)
		if (strlen(ast_builtins[i].name) == name.len && !memcmp(ast_builtins[i].name, s + name.off, name.len))
			id = i;
	if (id < 0) {
		char nm[64];
		snprintf(nm, sizeof nm, "%.*s", (int)name.len, s + name.off);
		const char *best = NULL;
		int bestd = 3;
		for (int i = 0; i < B__COUNT; i++) {
			int d = u_edit_distance(nm, ast_builtins[i].name, bestd);
			if (d < bestd) { bestd = d; best = ast_builtins[i].name; }
		}
		if (best)
			p_error(P, name.off, name.len, DIAG_UNKNOWN_FUNCTION,
				"unknown function '%s'; did you mean '%s'?", nm, best);
		else
			p_error(P, name.off, name.len, DIAG_UNKNOWN_FUNCTION,
				"unknown function '%s'; see docs/rules.md for the functions", nm);
		return NULL;
	}
	e->u.call.id = (BuiltinId)id;
	lex_next(P);                           /* '(' */
	Expr *args[8];
	int nargs = 0;
	Expr *where = NULL;
	if (P->t.k != T_RP && P->t.k != T_WHERE) {
		for (;;) {
			Expr *x = parse_or(P);
			if (!x)
				return NULL;
			if (P->subq && (P->subq != x || nargs > 0 || ast_builtins[id].nargs != 1)) {
				p_error(P, P->subq->off, P->subq->len, DIAG_EXPR_SYNTAX,
					"a subquery is taken only as the argument of max_over_time() or min_over_time()");
				return NULL;
			}
			if (nargs < 8)
				args[nargs] = x;
			nargs++;
			if (P->t.k != T_COMMA)
				break;
			lex_next(P);
		}
	}
	if (P->t.k == T_WHERE) {
		unsigned woff = P->t.off;
		if (ast_builtins[id].cls != BC_AGG) {
			p_error(P, woff, 5, DIAG_EXPR_SYNTAX,
				"'where' filters an aggregation (all, any, count, min, max, sum, avg), not %s()",
				ast_builtins[id].name);
			return NULL;
		}
		lex_next(P);
		where = parse_or(P);
		if (!where)
			return NULL;
	}
	unsigned end = P->t.off + P->t.len;
	if (!p_expect(P, T_RP, nargs ? "',' or ')'" : "an argument or ')'"))
		return NULL;
	if (nargs != ast_builtins[id].nargs) {
		p_error(P, e->off, end - e->off, DIAG_ARG_COUNT, "%s() takes %d argument%s, got %d: %s",
			ast_builtins[id].name, ast_builtins[id].nargs,
			ast_builtins[id].nargs == 1 ? "" : "s", nargs, ast_builtins[id].sig);
		return NULL;
	}
	e->a = args[0];
	e->b = where ? where : nargs > 1 ? args[1] : NULL;   /* predict_linear's t */
	e->u.call.nargs = nargs;
	e->len = end - e->off;
	if (P->subq)
		return p_take_subquery(P, e, args[0]);
	return e;
}

/* primary -> NUMBER | STRING | '(' expr ')' | call | NAME [ window ] */
static Expr *parse_primary(Parser *P)
{
	const char *s = P->src->text;
	Tok t = P->t;
	switch (t.k) {
	case T_NUM: {
		Expr *e = p_node(P, N_NUM, t.off, t.len);
		e->u.num.v = t.num;
		if (t.unit) {
			e->u.num.dim = t.unit->dim;
			e->u.num.has_unit = true;
			e->u.num.percent = t.unit->percent;
		}
		lex_next(P);
		return e;
	}
	case T_STR: {
		Expr *e = p_node(P, N_STR, t.off, t.len);
		StrBuf b = {0};
		for (unsigned i = t.off + 1; i + 1 < t.off + t.len; i++) {
			if (s[i] == '\\' && i + 2 < t.off + t.len)
				i++;
			sb_putc(&b, s[i]);
		}
		e->u.str.s = arena_strndup(P->a, b.s ? b.s : "", b.len);
		e->u.str.len = b.len;
		e->u.str.raw = arena_strndup(P->a, s + t.off + 1, t.len - 2);
		e->u.str.rawlen = t.len - 2;
		sb_free(&b);
		lex_next(P);
		return e;
	}
	case T_LP: {
		lex_next(P);
		Expr *e = parse_or(P);
		if (!e)
			return NULL;
		unsigned end = P->t.off + P->t.len;
		if (!p_expect(P, T_RP, "')'"))
			return NULL;
		e->off = t.off;         /* widen the span over the parentheses */
		e->len = end - t.off;
		if (P->t.k == T_LB && !parse_subquery(P, e))   /* Prometheus' subquery, (expr)[5m:] */
			return NULL;
		return e;
	}
	case T_IDENT: {
		lex_next(P);
		if (P->t.k == T_LP)
			return parse_call(P, t);
		Expr *e = p_node(P, N_METRIC, t.off, t.len);
		e->u.metric.id = cat_lookup(s + t.off, t.len);
		if (e->u.metric.id == MET__COUNT) {
			char nm[128];
			snprintf(nm, sizeof nm, "%.*s", (int)t.len, s + t.off);
			const char *best = cat_suggest(nm);
			if (best)
				p_error(P, t.off, t.len, DIAG_UNKNOWN_METRIC,
					"unknown metric '%s'; did you mean '%s'?", nm, best);
			else
				p_error(P, t.off, t.len, DIAG_UNKNOWN_METRIC,
					"unknown metric '%s'; `rulec --list-metrics` shows them all", nm);
			return NULL;
		}
		if (P->t.k == T_LB && !parse_window(P, e))
			return NULL;
		return e;
	}
	default:
		p_unexpected(P, "a number, a metric, a function or '('");
		return NULL;
	}
}

static bool p_enter(Parser *P)
{
	if (++P->depth > EXPR_MAX_DEPTH) {
		p_error(P, P->t.off, P->t.len, DIAG_EXPR_DEPTH,
			"expression nested more than %d deep; split it up", EXPR_MAX_DEPTH);
		return false;
	}
	return true;
}

/* unary -> '-' unary | primary */
static Expr *parse_unary(Parser *P)
{
	Expr *e = NULL;
	if (!p_enter(P))
		return NULL;
	if (P->t.k == T_MINUS) {
		Tok t = P->t;
		lex_next(P);
		Expr *x = parse_unary(P);
		if (x) {
			e = p_node(P, N_NEG, t.off, x->off + x->len - t.off);
			e->a = x;
		}
	} else {
		e = parse_primary(P);
	}
	P->depth--;
	return e;
}

/* mulexp -> unary { ('*' | '/') unary } */
static Expr *parse_mul(Parser *P)
{
	Expr *e = parse_unary(P);
	while (e && (P->t.k == T_STAR || P->t.k == T_SLASH)) {
		NodeKind k = P->t.k == T_STAR ? N_MUL : N_DIV;
		lex_next(P);
		Expr *b = parse_unary(P);
		e = b ? p_binary(P, k, e, b) : NULL;
	}
	return e;
}

/* sumexp -> mulexp { ('+' | '-') mulexp } */
static Expr *parse_sum(Parser *P)
{
	Expr *e = parse_mul(P);
	while (e && (P->t.k == T_PLUS || P->t.k == T_MINUS)) {
		NodeKind k = P->t.k == T_PLUS ? N_ADD : N_SUB;
		lex_next(P);
		Expr *b = parse_mul(P);
		e = b ? p_binary(P, k, e, b) : NULL;
	}
	return e;
}

static int p_cmpop(TokKind k)
{
	switch (k) {
	case T_LT: return N_LT;
	case T_LE: return N_LE;
	case T_GT: return N_GT;
	case T_GE: return N_GE;
	case T_EQ: return N_EQ;
	case T_NE: return N_NE;
	case T_MATCH: return N_MATCH;
	case T_NMATCH: return N_NMATCH;
	default: return -1;
	}
}

/* cmpexp -> sumexp [ ('<'|'<='|'>'|'>='|'=='|'!='|'=~'|'!~') sumexp ] */
static Expr *parse_cmp(Parser *P)
{
	Expr *e = parse_sum(P);
	int k = p_cmpop(P->t.k);
	if (!e || k < 0)
		return e;
	unsigned opoff = P->t.off, oplen = P->t.len;
	lex_next(P);
	Expr *b = parse_sum(P);
	if (!b)
		return NULL;
	if (p_cmpop(P->t.k) >= 0) {
		p_error(P, P->t.off, P->t.len, DIAG_EXPR_SYNTAX,
			"comparisons do not chain; write 'a < b and b < c'");
		return NULL;
	}
	e = p_binary(P, (NodeKind)k, e, b);
	e->opoff = opoff;
	e->oplen = oplen;
	return e;
}

/* notexp -> 'not' notexp | cmpexp */
static Expr *parse_not(Parser *P)
{
	Expr *e = NULL;
	if (!p_enter(P))
		return NULL;
	if (P->t.k == T_NOT) {
		Tok t = P->t;
		lex_next(P);
		Expr *x = parse_not(P);
		if (x) {
			e = p_node(P, N_NOT, t.off, x->off + x->len - t.off);
			e->a = x;
		}
	} else {
		e = parse_cmp(P);
	}
	P->depth--;
	return e;
}

/* andexp -> notexp { 'and' notexp } */
static Expr *parse_and(Parser *P)
{
	Expr *e = parse_not(P);
	while (e && P->t.k == T_AND) {
		lex_next(P);
		Expr *b = parse_not(P);
		e = b ? p_binary(P, N_AND, e, b) : NULL;
	}
	return e;
}

/* orexp -> andexp { 'or' andexp } */
static Expr *parse_or(Parser *P)
{
	Expr *e = NULL;
	if (!p_enter(P))
		return NULL;
	e = parse_and(P);
	while (e && P->t.k == T_OR) {
		lex_next(P);
		Expr *b = parse_and(P);
		e = b ? p_binary(P, N_OR, e, b) : NULL;
	}
	P->depth--;
	return e;
}

/* expr -> orexp EOF */
Expr *parse_expr(const ExprSrc *src, Arena *a, DiagCtx *d)
{
	Parser P = {.src = src, .a = a, .d = d};
	lex_next(&P);
	if (P.t.k == T_EOF) {
		p_error(&P, 0, 1, DIAG_EXPR_SYNTAX, "empty expression; write a condition such as 'host.load1 > 8'");
		return NULL;
	}
	Expr *e = parse_or(&P);
	if (e && P.t.k != T_EOF)
		p_unexpected(&P, "an operator or the end of the expression");
	else if (e && P.subq)
		p_error(&P, P.subq->off, P.subq->len, DIAG_EXPR_SYNTAX,
			"a subquery is taken only as the argument of max_over_time() or min_over_time()");
	return P.failed ? NULL : e;
}
