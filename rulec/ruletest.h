/* ruletest.h - unit tests for rules: promtool's test file format with
 * Sentinel's metrics as series (`rulec test`, docs/rules.md "Testing rules").
 *
 *   rule_files: [rules.yaml, ...]          relative to the test file
 *   evaluation_interval: 1m                the engine's tick in the test
 *   tests:
 *     - name: ...
 *       interval: 1m                       between a series' samples
 *       input_series:
 *         - series: 'host.forks'           host.*, cpu.*{cpu="N"},
 *           values: '0+10x100'             task.*{pid="N", comm="NAME"},
 *                                          disk.*{disk="NAME"}, fs.*{mountpoint=
 *                                          "PATH", fstype="T", device="D"}
 *       alert_rule_test:
 *         - eval_time: 10m
 *           alertname: ForkBomb
 *           exp_alerts:                    the firing alerts at eval_time
 *             - exp_labels: {severity: critical}
 *               exp_annotations: {summary: "..."}
 *           state: pending                 beyond promtool: firing (default),
 *                                          pending, resolved, inactive
 *           partial_labels: true           exp_labels a subset of the alert's
 *
 * Values use promtool's expanding notation: `a+bxN` (N+1 samples a, a+b,
 * ..., a+N*b), `a-bxN`, `axN` (a, N+1 times), `_` (no sample), `_xN` (N
 * missing), `stale` (the series ends until its next sample).  For
 * task.state a value may be its /proc letter: `D`, `Dx10`.
 *
 * This file is the parser: no LLVM.  Every problem is a diagnostic with
 * file:line:col, like the rule checker's.  The runner is ruletest_run.c.
 *
 * Ownership: everything a UtFile holds lives in its arena; ut_free().
 */
#ifndef SENTINEL_RULETEST_H
#define SENTINEL_RULETEST_H

#include "catalog.h"
#include "diag.h"
#include "rules.h"
#include "util.h"
#include "yamlt.h"

#include <stdbool.h>
#include <stddef.h>

#define UT_MISSING (-1.7e308)         /* `_`: no sample at this step */
#define UT_STALE (-1.6e308)           /* `stale`: the series ends here */
#define UT_MAX_SAMPLES 10000000u      /* per series, after expansion */

typedef struct UtSeries {
	MetricId metric;
	long cpu;                 /* cpu.*: its label; else -1 */
	long pid;                 /* task.*: its label; else -1 */
	const char *comm;         /* task.*: its label, or "" */
	const char *obj;          /* disk.*: the object's name (its label); else NULL */
	const char *fstype;       /* fs.*: its fstype="..." label; else NULL */
	const char *device;       /* fs.*: its device="..." label; else NULL */
	double *v;                /* [nv]: a value, UT_MISSING or UT_STALE */
	size_t nv;
	const YtNode *node;
} UtSeries;

typedef struct UtExpAlert {
	KV *labels, *annotations;
	size_t nlabels, nannotations;
	const YtNode *node;
} UtExpAlert;

/* What an alert test asserts (`state:`, a Sentinel extension; promtool
 * compares firing alerts only). */
typedef enum { UT_FIRING, UT_PENDING, UT_RESOLVED, UT_INACTIVE } UtState;

typedef struct UtAlertTest {
	double eval_time;         /* seconds from the start */
	const char *alertname;
	UtState state;            /* exp_alerts are the alerts in this state (UT_INACTIVE: none at all) */
	bool partial;             /* partial_labels: exp_labels need only be a subset */
	UtExpAlert *exp;
	size_t nexp;
	const YtNode *node;
} UtAlertTest;

typedef struct UtGroup {
	const char *name;         /* NULL: "test N" */
	double interval;          /* seconds between samples */
	UtSeries *series;
	size_t nseries;
	UtAlertTest *tests;
	size_t ntests;
	const YtNode *node;
} UtGroup;

typedef struct UtFile {
	const char *path;
	SrcFile *src;
	char **rule_files;        /* paths as the runner opens them */
	const YtNode **rule_nodes;
	size_t nrule_files;
	double eval_interval;     /* seconds */
	UtGroup *groups;
	size_t ngroups;
	Arena arena;
} UtFile;

/* Read and parse the test file at path.  Returns 0 with *out filled (also
 * when there were diagnostics: d->nerr says), -errno when it cannot be read
 * (reported to d too). */
int ut_load(const char *path, UtFile *out, DiagCtx *d);
void ut_free(UtFile *f);

typedef struct UtOpts {
	const char *run;          /* only test groups whose name matches this extended regex */
	const char *junit;        /* also write a JUnit XML report here */
	const char *version;
	bool verbose;             /* a line per passing test too */
	bool quiet;               /* no summary lines */
	bool color;               /* diagnostics in colour */
} UtOpts;

/* `rulec test`: run every test of the files (ruletest_run.c, which needs
 * the compiler and the CPU backend).  Returns 0 when all passed, 1 when a
 * test failed, 2 when a file could not be used (its errors printed). */
int ut_run(char **paths, size_t n, const UtOpts *o);

/* `rulec test --replay FILE RULES...`: the checked rules rs over the
 * recording at path (engine/record.h); prints every event with its tick.
 * Returns 0, or 2 when the recording or the rules cannot be used. */
int ut_replay(const char *path, const RuleSet *rs, const UtOpts *o);

/* One `values:` string: expand it into v (malloc'd).  For task.state,
 * letters are allowed.  Errors go to d at n's location. */
bool ut_expand(const char *s, const YtNode *n, bool letters, double **v, size_t *nv, DiagCtx *d);

#endif
