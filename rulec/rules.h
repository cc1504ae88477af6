/* rules.h - a checked rule set: what rulec hands to the compiler.
 *
 * Ownership: a RuleSet owns its rules, their expressions and strings (in its
 * Arena) and the SrcFiles it loaded; rs_free() releases everything.
 */
#ifndef SENTINEL_RULES_H
#define SENTINEL_RULES_H

#include "ast.h"
#include "diag.h"
#include "util.h"

typedef enum { SEVERITY_INFO, SEVERITY_WARNING, SEVERITY_CRITICAL } Severity;

typedef struct KV {
	const char *key, *value;
	const YtNode *knode, *vnode;
} KV;

typedef struct Rule {
	const char *name;
	const char *group;
	const YtNode *name_node;  /* the alert: value; yt_loc() gives its location */
	Expr *expr;               /* the firing condition */
	ExprSrc expr_src;
	Expr *clear;              /* NULL: the alert resolves when expr is false */
	ExprSrc clear_src;
	double for_s;             /* expr must hold this long (seconds) ... */
	unsigned m_of, n_of;      /* ... or in m_of of the last n_of ticks (n_of > 0) */
	double clear_for_s;       /* clear must hold this long */
	Severity severity;
	KV *labels, *annotations;
	size_t nlabels, nannotations;
	KV *targets;              /* targets: the labels a target must have for the rule to run on it */
	size_t ntargets;
	const char *description;
	unsigned max_alerts;      /* max_alerts: (0: RULE_MAX_ALERTS_DEFAULT), a per-entity rule's */
	bool partial_windows;     /* windows: partial (Prometheus' meaning), else covered */
} Rule;

typedef struct RuleSet {
	Rule *v;
	size_t n, cap;
	SrcFile **files;
	size_t nfiles;
	Arena arena;
	char *pending;            /* a file's text before its SrcFile holds it: rs_free frees it
				   * when the front end ran out of memory in between (u_oom) */
} RuleSet;

typedef struct CheckOpts {
	double tick;              /* the engine's tick, for warnings (seconds) */
} CheckOpts;

#define RULE_MAX_WINDOW (31 * 86400.0)   /* 64 buckets of 11.6 h at most (docs/rules.md) */
#define RULE_MAX_FOR (31 * 86400.0)
#define RULE_MAX_TICKS 1024
/* A per-entity rule's alerts at once (its states: snrt.h, sn_etab). */
#define RULE_MAX_ALERTS_DEFAULT 100u
#define RULE_MAX_ALERTS 10000u          /* bundle.h's BD_MAX_ALERTS */

/* Load, validate and type-check one rule file; rules are appended to rs.
 * Returns 0, or -errno when the file cannot be read (reported to d). */
int rf_load(RuleSet *rs, const char *path, DiagCtx *d, const CheckOpts *o);
/* Same, from a buffer (takes ownership of text, which must be NUL-terminated). */
void rf_load_buffer(RuleSet *rs, const char *name, char *text, size_t len, DiagCtx *d,
		    const CheckOpts *o);
/* Checks that span files: duplicate alert names. */
void rs_check_all(RuleSet *rs, DiagCtx *d);
void rs_free(RuleSet *rs);
/* Append dir's *.yaml and *.yml files (sorted) to paths; -errno if dir
 * cannot be read. */
int rs_list_dir(const char *dir, char ***paths, size_t *n);

/* Type-check one parsed expression (check.c). Returns false on errors. */
bool chk_rule_expr(Rule *r, Expr *e, const ExprSrc *src, DiagCtx *d, const CheckOpts *o);

const char *severity_name(Severity s);

#endif
