/* ast.h - rule expressions.
 *
 * Every node keeps its byte span inside the expression text; the checker maps
 * spans back to file:line:col through the YAML scalar that held the text.
 * Ownership: nodes live in the rule file's Arena.
 */
#ifndef SENTINEL_AST_H
#define SENTINEL_AST_H

#include "catalog.h"
#include "diag.h"
#include "util.h"
#include "yamlt.h"

#include <stdbool.h>

typedef enum {
#define NODE(id, sp) N_##id,
#include "ast.def"
#undef NODE
	N__COUNT
} NodeKind;

typedef enum { BC_WINDOW, BC_AGG, BC_MATH } BuiltinClass;

typedef enum {
#define BUILTIN(id, name, cls, nargs, sig, desc) B_##id,
#include "ast.def"
#undef BUILTIN
	B__COUNT
} BuiltinId;

typedef struct Builtin {
	const char *name;
	BuiltinClass cls;
	int nargs;
	const char *sig, *desc;
} Builtin;

extern const Builtin ast_builtins[B__COUNT];
extern const char *const ast_node_spelling[N__COUNT];

/* Dimension of a quantity: exponents of seconds and bytes.  Counts, ratios
 * and percentages are dimensionless. */
typedef struct Dim {
	signed char time, bytes;
} Dim;

typedef struct Expr Expr;
struct Expr {
	NodeKind kind;
	unsigned off, len;        /* span in the expression text */
	unsigned opoff, oplen;    /* comparisons: span of the operator */
	Expr *a, *b;              /* operands; b is also a call's `where` filter,
				    * or a window function's second argument */
	bool as_num;              /* a comparison taken as its 1 or 0: a subquery
				   * max_over_time((m > c)[5m:]) as parsed (parse.c) */
	union {
		struct {
			double v;         /* in base units: seconds, bytes */
			Dim dim;
			bool has_unit, percent;
		} num;
		struct {
			char *s; size_t len;       /* the string, escapes processed */
			char *raw; size_t rawlen;  /* as written between the quotes: a pattern */
		} str;
		struct {
			MetricId id;
			double window;    /* seconds */
			unsigned woff, wlen; /* span of the window text; wlen 0: no [window] */
			bool partial;     /* its rule's windows: partial (a window known before it is covered) */
		} metric;
		struct { BuiltinId id; int nargs; } call;
	} u;
};

/* The text of one expression and where it came from. */
typedef struct ExprSrc {
	const char *text;
	size_t len;
	const YtNode *node;       /* the YAML scalar holding the text */
} ExprSrc;

SrcLoc expr_loc(const ExprSrc *src, unsigned off, unsigned len);

/* Parse src; returns NULL after reporting errors to d. */
Expr *parse_expr(const ExprSrc *src, Arena *a, DiagCtx *d);

#endif
