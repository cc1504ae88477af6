/* cg.h - code generation: a checked rule set becomes LLVM IR.
 *
 * cg_analyse() plans a program without LLVM: which metrics are read (one
 * value-table slot each, shared by every rule), which need a history ring
 * and how long, and the collection jobs (one per metric; one task walk).
 * rulec --check runs it too, so its errors (rules the compiler cannot
 * build) are reported with the checker's.
 *
 * cg_emit() adds to a module that already holds the runtime library:
 *   rules_collect(w, job)   job j of the plan (calls the metric library)
 *   rules_eval(w, rule)     rule i: condition, clear, value -> sn_step()
 * through the LLVM-C builder.  Conditions are three-valued doubles: 1, 0,
 * or NaN when a value could not be read (see docs/compiler.md).
 */
#ifndef SENTINEL_CG_H
#define SENTINEL_CG_H

#include "rules.h"

#include <stdbool.h>
#include <stdint.h>

/* The same order as bundle.h's BD_JOB_KINDS (compile.c checks). */
typedef enum { JOB_CPUS, JOB_HOST, JOB_CPU, JOB_TASKS, JOB_OBJS } CgJobKind;

typedef struct CgJob {
	CgJobKind kind;
	MetricId metric;          /* JOB_HOST, JOB_CPU */
	int obj;                  /* JOB_OBJS: the object kind; the job finds the objects and
				   * reads every metric of the kind the rules read */
} CgJob;

#define CG_MAX_TWIN 32

/* A window function (a builtin id) over a task metric. */
typedef struct CgTwin {
	MetricId m;
	unsigned fn;
	double window;
	bool partial;             /* known before it is covered (windows: partial) */
} CgTwin;

/* Rules that differ only in their numbers share one function, a shape
 * (cg_shape.c): its numbers and the rule's descriptor are loaded from the
 * rule's row of the data tables (sn_rule_*, cg.c), so a changed threshold
 * changes data, not code.  Owned by the CgProg; freed by cg_free. */
#define CG_MAX_LITS 64            /* numbers a shape loads; more stay in its code */
typedef struct CgShapes {
	unsigned n;               /* shapes */
	uint32_t *of;             /* [rules]: rule i's shape */
	uint32_t *first;          /* [n]: each shape's first rule, whose code is the shape's */
	uint32_t *cbase;          /* [rules]: where rule i's numbers start in consts */
	double *consts;           /* every rule's numbers, each rule's in cg_shape_lits' order */
	size_t nconsts;
} CgShapes;

#define CG_HIST_TRACKS 4       /* BD_HIST_TRACKS */
typedef struct CgProg {
	const RuleSet *rs;        /* NULL: every catalog metric, no rules */
	int slot[MET__COUNT];     /* value-table slot in its entity's table, -1 unused */
	int hist[MET__COUNT];     /* history ring, -1 none */
	double hist_win[MET__COUNT];  /* the longest window over it (seconds) */
	bool hist_full[MET__COUNT];   /* read through a window by more than rate(), delta(),
				       * increase(): its history keeps whole buckets */
	double hist_trk[MET__COUNT][CG_HIST_TRACKS];  /* the windows read so (BdHist.trk) */
	unsigned hist_ntrk[MET__COUNT];
	MetricId host_m[MET__COUNT], cpu_m[MET__COUNT], task_m[MET__COUNT], hist_m[MET__COUNT];
	unsigned nhost, ncpu, ntask, nhist;
	MetricId obj_m[ENT_NOBJ][MET__COUNT];   /* object kind k's table */
	unsigned nobj[ENT_NOBJ];
	bool comm;                /* task.comm is read */
	bool objname[ENT_NOBJ];   /* an object's name is compared (disk.name) */
	/* windows over task metrics, computed once a row by every thread
	 * (rules_task_row) into task slots ntask.. and read by the rules as
	 * values: a rule over 50,000 tasks then reads one value a task */
	CgTwin twin[CG_MAX_TWIN];
	unsigned ntwin;
	CgJob jobs[MET__COUNT + 2 + ENT_NOBJ];
	unsigned njobs;
	MetSet *rule_metrics;     /* [rs->n]: the metrics rule i reads */
	CgShapes shapes;          /* which rules share their code (cg_shape.c) */
} CgProg;

/* Plan rs (or, with rs NULL, every metric).  Errors go to d with the rule's
 * location; returns false when there were any. */
bool cg_analyse(CgProg *p, const RuleSet *rs, DiagCtx *d);
void cg_free(CgProg *p);

/* The shapes of rs (0, or -ENOMEM); cg_analyse calls it. */
int cg_shapes(CgShapes *s, const RuleSet *rs);
void cg_shapes_free(CgShapes *s);
/* The numbers r's shape loads, in order (at most CG_MAX_LITS); returns how many. */
unsigned cg_shape_lits(const Rule *r, const Expr **lits);

/* Generate rules_collect and rules_eval into m.  Returns 0, or -errno with
 * a message (a missing runtime function: a rulec bug). */
struct LLVMOpaqueModule;
int cg_emit(struct LLVMOpaqueModule *m, const CgProg *p, char *err, size_t n);

/* The rules' data tables (sn_rule_shape, sn_rule_desc, sn_rule_cbase,
 * sn_rule_const): cg_emit defines each as zeros of this size, and the
 * engine writes these bytes into the code it loads, so the code does not
 * change when only the rules' numbers do.  *n tables (0 without rules),
 * their bytes malloc'd (the caller frees them); 0 or -ENOMEM. */
#define CG_TABLES 4
typedef struct CgTable {
	const char *name;
	void *bytes;
	size_t len;
} CgTable;
int cg_table_bytes(const CgProg *p, CgTable out[CG_TABLES], unsigned *n);

/* a string literal or a string-valued metric (task.comm, task.state) */
bool cg_is_string(const Expr *e);
/* The entity (ENT_CPU, ENT_TASK, an object) of the first per-entity metric e names, else -1 */
int cg_entity_of(const Expr *e);
/* The node that gives a rule's value ($value): its first numeric comparison
 * or all()/any(), reached through and/or/not; NULL if none. */
const Expr *cg_value_node(const Expr *e);
/* What the rule's alerts are about: ENT_CPU (a CPU), ENT_TASK (a PID), an
 * object entity (a disk) or -1 (none: a host value). */
int cg_value_entity(const Expr *e);
/* A per-entity rule's entity: that of the metrics outside any aggregation
 * (the checker allows one kind), or -1: the expression is one value. */
int cg_vector_entity(const Expr *e);

#define CG_FANOUT 64      /* cases per dispatch function (dispatch_NAME_K) */

#endif
