/* bundle.h - the compiled rule set: one versioned, checksummed file.
 *
 *   header   "SNTLBNDL", u32 format (BD_FORMAT), u32 sections,
 *            u64 payload bytes, u64 FNV-1a-64 of the payload
 *   payload  sections, each: u32 kind, u32 name bytes, u64 data bytes,
 *            name, data, zero padding to 8 bytes
 *
 * Sections: one JSON manifest (what the rules are and what the code needs:
 * value tables, histories, jobs, relocations, the rules with their labels,
 * annotations and source locations), one x86-64 ELF object (the CPU
 * backend), PTX, one section per GPU architecture, and the rules' data
 * tables (thresholds, descriptors: one section per table, named by its
 * symbol), which the engine writes into the loaded code: the code itself
 * does not change when only a rule's numbers do.  Little-endian.
 * docs/compiler.md describes the manifest.
 *
 * Ownership: a Bundle owns everything it points to; bd_free().
 */
#ifndef SENTINEL_BUNDLE_H
#define SENTINEL_BUNDLE_H

#include "catalog.h"
#include "relo.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BD_MAGIC "SNTLBNDL"
#define BD_FORMAT 1u
#define BD_MAX_PTX 4

typedef enum { BD_SEC_MANIFEST = 1, BD_SEC_HOST_OBJECT = 2, BD_SEC_PTX = 3, BD_SEC_DATA = 4 } BdSection;

#define BD_MAX_DATA 8

typedef struct BdKV {
	char *key, *value;
} BdKV;

/* A per-entity rule's most alerts (rulec's max_alerts: limit, rules.h). */
#define BD_MAX_ALERTS 10000u

typedef struct BdRule {
	char *name, *group, *severity, *file;
	unsigned line, col;
	char *expr, *clear, *description;
	double for_s, clear_for_s;
	unsigned m_of, n_of;
	BdKV *labels, *annotations;
	size_t nlabels, nannotations;
	BdKV *targets;            /* the labels a target must have for it to run there; none: every target */
	size_t ntargets;
	MetSet metrics;           /* the catalog metrics it reads */
	int entity;               /* what its alerts are about: ENT_CPU, ENT_TASK, an object entity, -1 none */
	bool per_entity;          /* one alert per entity (a vector over entity), not one for the rule */
	unsigned max_alerts;      /* ... at most this many (snrt.h, sn_etab) */
	uint64_t hash;            /* of everything that decides its alert state */
} BdRule;

#define BD_HIST_TRACKS 4
typedef struct BdHist {
	MetricId metric;
	double window;            /* the longest window over it, seconds */
	bool ends;                /* only rate(), delta() and increase() read it: its
				   * history may keep the ends only (engine/world.h) */
	double trk[BD_HIST_TRACKS]; /* the windows other functions read it with: each
				     * kept up by a tracker (snrt.h, sn_trk); past
				     * BD_HIST_TRACKS the rest walk their items */
	unsigned ntrk;
} BdHist;

/* Collection jobs, in the manifest by name. */
#define BD_JOB_KINDS(X) X(CPUS, "cpus") X(HOST, "host") X(CPU, "cpu") X(TASKS, "tasks") X(OBJS, "objects")
typedef enum {
#define X(id, name) BD_JOB_##id,
	BD_JOB_KINDS(X)
#undef X
	BD_JOB__COUNT
} BdJobKind;

typedef struct BdJob {
	int kind;                 /* BdJobKind */
	MetricId metric;          /* BD_JOB_HOST, BD_JOB_CPU */
	int obj;                  /* BD_JOB_OBJS: the object kind (entity ENT_FIRST_OBJ + obj) */
} BdJob;

typedef struct BdPtx {
	char arch[16];            /* "sm_70" */
	char *text;               /* one module, or parts (bd_ptx_part) */
	size_t len;
} BdPtx;

/* A data table: the bytes of the code's global `name` (zero in the code:
 * the engine writes these into every copy it loads, host and GPU alike,
 * and refuses code whose symbol is missing or of another size). */
typedef struct BdData {
	char name[32];
	void *bytes;
	size_t len;
} BdData;

/* Large rule sets are PTX in parts the driver compiles separately, one
 * after the other in the text, each after a line BD_PTX_PART "K of N". */
#define BD_PTX_PART "// sentinel: part "
/* The part of x that follows the one ending at end (NULL: the first),
 * without its mark line, and its length; NULL after the last.  A text
 * without parts is one part. */
const char *bd_ptx_part(const BdPtx *x, const char *end, size_t *len);

/* The most metrics of one entity a bundle's value tables hold: every
 * host metric of the catalog (sentinel-inspect compiles them all), and
 * an object kind's columns (the runtime's SN_OBJ_COLS). */
#define BD_TABLE_MAX 128u
#define BD_OBJ_TABLE_MAX 64u

typedef struct Bundle {
	char *rulec_version, *created;
	char **sources;
	size_t nsources;
	unsigned abi;
	/* value tables: slot i of each entity's table holds metric *_m[i] */
	MetricId host_m[BD_TABLE_MAX], cpu_m[BD_TABLE_MAX], task_m[BD_TABLE_MAX];
	unsigned nhost, ncpu, ntask;
	unsigned ntwin;           /* task slots after task_m[]: windows the rules take, derived each tick */
	MetricId obj_m[ENT_NOBJ][BD_OBJ_TABLE_MAX];  /* object kind k's table: slot i holds obj_m[k][i] */
	unsigned nobj[ENT_NOBJ];
	bool comm;
	BdHist *hist;
	size_t nhist;
	BdJob *jobs;
	size_t njobs;
	ReloSet relos;
	BdRule *rules;
	size_t nrules;
	void *host_obj;
	size_t host_len;
	BdPtx ptx[BD_MAX_PTX];
	size_t nptx;
	BdData data[BD_MAX_DATA];
	size_t ndata;
	void *image;              /* the file's bytes, once bd_image made them (NULL: not made) */
	size_t image_len;
} Bundle;

/* Write b to path (atomically: a temporary file, then rename). */
int bd_write(const Bundle *b, const char *path, char *err, size_t n);
/* Write b at the start of a seekable file descriptor (a memfd that
 * a child process reads: sentineld's reload trial); fd stays open. */
int bd_write_fd(const Bundle *b, int fd, char *err, size_t n);
/* The bytes bd_write would write, made once into b->image: each later
 * write is then a copy (a reload writes its bundle twice, for the trial
 * and the cache, and 10,000 rules' manifest takes 0.2 s to make);
 * bd_image_drop frees them.  Nothing else may change b meanwhile. */
int bd_image(Bundle *b, char *err, size_t n);
void bd_image_drop(Bundle *b);
/* Read and verify a bundle.  A wrong magic, format, checksum or manifest
 * is an error that says which. */
int bd_read(const char *path, Bundle **out, char *err, size_t n);
int bd_parse(const void *data, size_t len, const char *name, Bundle **out, char *err, size_t n);
/* A bundle of its manifest alone (bd_manifest_json's text: no code), for
 * what a saved world needs to know of the rules that made it. */
int bd_parse_manifest(const char *json, size_t len, const char *name, Bundle **out, char *err, size_t n);
void bd_free(Bundle *b);
/* The manifest as JSON text (malloc'd), for `rulec --emit=manifest`. */
char *bd_manifest_json(const Bundle *b);
/* What job j collects, for people: a metric's name ("cpu.usage"), an
 * object family ("disks"), "tasks" or "cpus"; static storage. */
const char *bd_job_label(const Bundle *b, size_t j);
/* The column of task metric m in the task table (task_m[]), -1 if b does
 * not read it. */
int bd_task_col(const Bundle *b, MetricId m);

uint64_t bd_fnv1a(const void *data, size_t len, uint64_t h);
#define BD_FNV_INIT 0xcbf29ce484222325ull

/* A content key of 128 bits: two FNV-1a hashes from different starts, each
 * input's length mixed in (the caches: rulec/compcache.c, engine/gpucache.c) */
typedef struct BdKey { uint64_t h[2]; } BdKey;
void bd_key_init(BdKey *k, const char *domain);
void bd_key_add(BdKey *k, const void *p, size_t n);

#endif
