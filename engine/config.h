/* config.h - sentineld's configuration file (INI, read with inih).
 *
 *   [target]   source = ramfile:/dev/shm/vm.ram   (required)
 *              name = web-01                        ($target in alerts)
 *              kallsyms = FILE, btf = FILE          (overrides)
 *              labels = role=db, rack=r12           (on every alert of the target)
 *   [target NAME]  the same keys, once per target: one sentineld watches
 *              several machines (a hypervisor's VMs), every rule against
 *              every target; NAME is $target (letters, digits, . _ -)
 *   [targets]  directory = /etc/sentinel/targets.d  (drop-ins: *.conf files of
 *              [target NAME] sections, read at start and at every reload)
 *   [rules]    directory = /etc/sentinel/rules   (compiled at start and reload)
 *              bundle = FILE                    (or: one made by rulec -o)
 *   [engine]   backend = auto | cuda | cpu,  gpu = 0,  tick = 100ms,
 *              tasks = 4096,  max_tasks = 1048576  (the task table's first size,
 *                                        and how far it grows),
 *              threads = auto | N               (the CPU backend's tick threads),
 *              ring = 4096,  history_memory = 1GiB,
 *              record = FILE                    (every tick's values; backend = cpu)
 *              reload_trial = yes               (a reload's new rules run a few ticks in
 *                                        a child process first: a fault fails the reload)
 *              state = auto | none | DIR        (alert state and windows kept across a
 *                                        restart: DIR/TARGET.state; auto: $STATE_DIRECTORY
 *                                        or /var/lib/sentinel where it exists),
 *              state_interval = 1m,  state_tolerance = 1h  (how often it is written; an
 *                                        older one is not restored)
 *              cache = auto | none | DIR        (the compiled rules and what the GPU driver's
 *                                        JIT made of them, kept across restarts:
 *                                        rulec/compcache.c, engine/gpucache.c; auto:
 *                                        $CACHE_DIRECTORY or /var/cache/sentinel where it exists)
 *   [notify]   log = yes,  log_pending = no,  jsonl = /var/log/sentinel/alerts.jsonl,
 *              delay = 250ms                    (how often the host collects alerts)
 *              alertmanager = URL[,URL],  webhook = URL[,URL],  external_url = URL,
 *              resend = 1m                      (firing alerts re-sent to Alertmanager)
 *              spool = DIR,  spool_max = 64MiB  (undelivered alerts survive outages and restarts)
 *              kernel_log_lines = 20            (the target's log in critical alerts, $kernel_log)
 *   [control]  socket = /run/sentinel/sentinel.sock,  mode = 0600
 *   [metrics]  listen = 127.0.0.1:9101              (Prometheus /metrics; off by default)
 *
 * Every unknown section or key and every bad value is an error with the
 * file and line; all of them are reported, and sentineld does not start.
 * examples/sentinel.conf is the annotated template.
 *
 * Ownership: a Config owns its strings; cf_free().
 */
#ifndef SENTINEL_CONFIG_H
#define SENTINEL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* One machine watched: its [target] or [target NAME] section. */
typedef struct CfTarget {
	char *name;                /* $target: NAME, or name =, or the source's last path element */
	char *source, *kallsyms, *btf;
	char *file;                /* the file it is in: the configuration, or a drop-in */
	unsigned line;             /* the line of its section header */
	char **labels;             /* labels = k=v, ...: [2 * nlabels] keys and values, on its every alert */
	unsigned nlabels;
	uint64_t read_budget;      /* read_budget =: CF_BUDGET_AUTO, CF_BUDGET_NONE or a number; 0: [engine]'s */
} CfTarget;

/* read_budget: the most reads of a target one tick may make (kx.h, kx_cur).
 * auto: room for a tick with every table full (eng_read_budget_auto);
 * none: no budget. */
#define CF_BUDGET_AUTO (UINT64_MAX - 1)
#define CF_BUDGET_NONE UINT64_MAX

#define CF_MAX_LABELS 16u

#define CF_MAX_TARGETS 1024u

typedef struct Config {
	char *path;
	CfTarget *targets;         /* [ntargets]: the file's in order, then the drop-ins' */
	unsigned ntargets;
	char *targets_dir;         /* [targets] directory: drop-in files of [target NAME] sections, or NULL */
	char *rules_dir;
	char *bundle;
	char *backend;
	int gpu;
	uint64_t tick_ns;
	uint32_t tasks, ring;
	uint32_t max_tasks;        /* the task table grows up to this (sentineld, d_watch_tasks) */
	uint32_t objects;          /* slots of each object kind: disks, cgroups, interfaces, mounts, memory controllers */
	uint32_t threads;          /* the CPU backend's tick threads; 0: auto (a quarter of the CPUs, 1 to 8) */
	uint64_t read_budget;      /* every target's, where its section gives none: CF_BUDGET_* or a number */
	uint64_t hist_max;         /* bytes for all windows' histories; 0: the default */
	uint64_t reg_chunk;        /* CUDA: the target's RAM registered in pieces of at most this; 0: 64 GiB */
	char *record;              /* a recording of every tick's values (engine/record.h), or NULL */
	bool reload_trial;         /* a reload first runs the new rules in a child process (sentineld --trial) */
	char *state;               /* state = auto (NULL too), none, or a directory (sentineld/state.c) */
	char *cache;               /* cache = auto (NULL too), none, or a directory (engine/gpucache.c) */
	uint64_t state_every_ns;   /* state_interval */
	uint64_t state_tolerance_ns; /* state_tolerance: an older state file is not restored */
	bool log, log_pending;
	char *jsonl;
	uint64_t delay_ns;         /* the host wakes this often to deliver alerts */
	char *alertmanager, *webhook, *external_url;   /* remote sinks (notifier/http.h), or NULL */
	char *spool;               /* their spool folder, or NULL */
	uint64_t spool_max;
	uint64_t resend_ns;        /* 0: 1 min */
	unsigned kernel_log_lines; /* $kernel_log and critical alerts' kernel_log: this many lines (0: none) */
	char *socket;
	char *metrics_listen;      /* [metrics] listen = ADDR:PORT, or NULL: no /metrics */
	unsigned mode;
} Config;

/* Read path into c (defaults first).  Errors are printed to errs as
 * FILE:LINE: error: ...; returns how many there were (0: c is usable), or
 * -errno if the file cannot be read. */
int cf_load(Config *c, const char *path, FILE *errs);
void cf_free(Config *c);

/* A target's section, copied (the copy owns its strings; cf_target_free). */
int cf_target_copy(CfTarget *dst, const CfTarget *src);
void cf_target_free(CfTarget *t);
/* Whether a and b are the same machine read the same way (name, source, overrides). */
bool cf_target_same(const CfTarget *a, const CfTarget *b);

#endif
