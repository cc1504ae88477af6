/* engine.h - one bundle running against one target on one backend.
 *
 *   eng_open   resolve the bundle's relocations for the target (reloc.h),
 *              lay out its memory (world.h), load its code on the backend
 *              (the CPU: cpu.h; the GPU: gpu.h) and point it at the
 *              target's RAM;
 *   eng_tick   run one tick now (the CPU backend; the GPU's on-demand
 *              kernel), for tools and tests; sentineld's GPU path runs the
 *              persistent kernel instead;
 *   eng_view   the value tables and rule states as the host sees them
 *              (copied back from the GPU when they live there).
 *
 * Ownership: an Engine borrows the Bundle and the KTarget (both must
 * outlive it) and owns everything else; eng_close().
 */
#ifndef SENTINEL_ENGINE_H
#define SENTINEL_ENGINE_H

#include "bundle.h"
#include "ktarget.h"
#include "reloc.h"
#include "snrt.h"
#include "world.h"

typedef enum { ENG_CPU, ENG_CUDA } EngBackend;

typedef struct EngFleet EngFleet;

typedef struct EngOpts {
	const char *backend;      /* "cpu", "cuda" or "auto" (NULL: auto) */
	uint64_t tick_ns;         /* 0: 100 ms */
	uint32_t task_cap;        /* 0: WD_DEFAULT_TASKS */
	uint32_t obj_cap;         /* slots of each object kind (disks, cgroups, ...); 0: WD_OBJ_CAP */
	uint32_t ring_cap;        /* 0: WD_DEFAULT_RING */
	uint64_t hist_max;        /* bytes of history; 0: WD_DEFAULT_HIST_MEMORY */
	int gpu;                  /* CUDA device ordinal */
	uint32_t threads;         /* CPU backend: threads a tick runs on (0, 1: one; cpu_threads) */
	uint64_t reg_chunk;       /* CUDA backend: the target's RAM registered in pieces of at most this (0: 64 GiB) */
	int wake_fd;              /* > 0: an eventfd the engine writes when alerts wait in the ring (eng_arm) */
	/* CUDA: run in this fleet's kernel, with every other target opened
	 * with it (eng_fleet_open; the backend is then cuda) */
	EngFleet *fleet;
	/* the target's name and labels ([2 * nlabels] keys and values): a
	 * rule limited to targets by label (targets:) that this one is not
	 * runs disabled, with the reason (reloc.h, rl_limit) */
	const char *target_name;
	char *const *target_labels;
	size_t target_nlabels;
	/* CPU backend: called on the tick thread after every tick, with the
	 * world as the rules saw it (a recording, engine/record.h) */
	void (*on_tick)(void *ctx, const sn_world *w);
	void *on_tick_ctx;
	/* a reload's trial run of new rules, in a process of its own
	 * (sentineld --trial); only the fault tests look at it */
	bool trial;
	/* the most reads of the target one tick may make: past it the tick is
	 * cut off (kx.h, kx_cur; sn_stats.over_budget); 0: no budget */
	uint64_t read_budget;
} EngOpts;

/* The read budget sentineld gives a target by default ([engine]
 * read_budget = auto): room for a tick of every table full, rows of
 * task_cap tasks and obj_cap objects of each kind (see the function). */
uint64_t eng_read_budget_auto(uint32_t task_cap, uint32_t obj_cap);

typedef struct Engine Engine;

int eng_open(const Bundle *b, const KTarget *t, const EngOpts *o, Engine **out, char *err, size_t n);
void eng_close(Engine *e);

/* One tick at time now (ns; 0: the backend's clock). */
int eng_tick(Engine *e, uint64_t now, char *err, size_t n);
/* The world's tables as the host sees them: valid until the next call.
 * Pointers in the returned sn_world point into host memory. */
const sn_world *eng_view(Engine *e, char *err, size_t n);

/* The value tables of the last complete tick, copied while the engine runs
 * (a tick in progress is waited out, never half-read): host, CPU and task
 * values, task names and addresses.  Only those fields of the returned
 * world are valid (histories and rule states are not copied: on the GPU
 * this is a small read).  Valid until the next call; one caller thread. */
const sn_world *eng_values(Engine *e, char *err, size_t n);

/* Run continuously: the CPU backend on a thread of its own, ticking on
 * CLOCK_MONOTONIC; the GPU backend as the persistent kernel on the GPU's
 * own clock, needing nothing from the host.  eng_stop waits for the tick
 * in progress. */
int eng_start(Engine *e, char *err, size_t n);
int eng_stop(Engine *e, char *err, size_t n);
/* Whether the engine still runs: 0, or the error that stopped it (a GPU
 * fault, with the driver's message in err; a persistent kernel that ended
 * by itself; a kernel or tick thread that has not ticked for 10 s and 50
 * ticks).  Call it every second or so: it times the heartbeat. */
int eng_health(Engine *e, char *err, size_t n);
/* A GPU kernel of this process faulted: CUDA fails every later call in the
 * process (sentineld exits so that its service manager starts it again). */
bool eng_gpu_lost(void);

/* The alert records written since the last call, in order, to fn.  A record
 * the ring had no room for is counted in the statistics' drops. */
typedef void (*EngAlertFn)(void *ctx, const sn_alert *a);
/* After draining: ask to be woken through EngOpts.wake_fd when the next
 * alert is in the ring.  false: the backend cannot (no wake_fd, or a
 * driver without stream waits), so poll the ring. */
bool eng_arm(Engine *e);
unsigned eng_drain(Engine *e, EngAlertFn fn, void *ctx);
/* Statistics now: ticks, late ticks, tick lengths, read errors, ring drops. */
void eng_stats(const Engine *e, sn_stats *out, uint64_t *dropped);
/* The task table's size (rows and slots). */
uint32_t eng_task_cap(const Engine *e);
/* Its read budget (EngOpts.read_budget; 0: none). */
uint64_t eng_read_budget(const Engine *e);
/* A copy of every rule's alert state (nrules entries). */
int eng_rule_states(Engine *e, sn_rstate *out, char *err, size_t n);
/* A per-entity rule's alerts: the states of the entities pending or firing
 * now, *n of them in *out (malloc'd; NULL and 0 for another rule), and
 * how many entities held with no state of their own at the last tick.
 * (The rule's own sn_rstate is then its overflow alert's.) */
int eng_entity_states(Engine *e, size_t rule, sn_estate **out, uint32_t *n, uint32_t *overflow, char *err,
		      size_t errn);
/* Whether a reload to bundle b carries each old rule's alert state over
 * (a rule of the same group and name about the same kind of entity), in
 * carried[old->nrules]: one it does not carry is removed, and its alerts
 * end with the old engine.  -ENOMEM. */
int eng_rules_carried(const Bundle *b, const Bundle *old, bool *carried);

/* Reload without a gap: e (opened, not started, same target and backend)
 * takes over from the running engine old after old's next tick.  Rules with
 * the same name and hash keep their alert state, metrics their histories;
 * e continues old's tick count and schedule.  On success old has stopped
 * (close it) and e runs; on failure old runs on untouched. */
int eng_takeover(Engine *e, Engine *old, unsigned *kept, char *err, size_t n);
/* After a reload, once old is closed: give back what it leaves behind (on
 * CUDA its context, in a pause between two ticks; gpu_reap).  note says
 * what was done, empty when nothing was. */
int eng_settle(Engine *e, char *note, size_t nn, char *err, size_t n);

/* Test hook: whether the file named by SENTINEL_TEST_FAULTS holds the word
 * `what`: "handover" fails a reload's handover (CUDA: just after the old
 * kernel stopped; CPU: the new tick thread does not start);
 * "handover-stuck" makes one that never completes (the old kernel is not
 * told, the old thread does not take it) and the timeout 1 s;
 * "handover-kernel-fault" launches the new CUDA kernel on an address the
 * GPU has not mapped, a real fault (fatal to the process: eng_gpu_lost);
 * "kernel-exit" ends the persistent kernel on CUDA without the host
 * asking (a dead kernel: a target error, then a restart);
 * "stall" holds the CPU backend's tick thread before its tick, as a tick
 * stuck in a read would; "reload-oom N" makes a reload's compile run out
 * of memory at its Nth allocation (sentineld) (tests/engine).
 * eng_test_fault_n: the number after `what` (1 if none), 0 if absent. */
bool eng_test_fault(const char *what);
long eng_test_fault_n(const char *what);

/* Several targets on one GPU: one persistent kernel runs them all, each
 * engine opened with EngOpts.fleet a member of it (engine/gpu.h, "a
 * fleet").  eng_start adds an engine to the running kernel, eng_stop and
 * eng_close take it out (the kernel stops between two ticks and starts
 * again; every target keeps its schedule).  eng_takeover is not for
 * members yet.  Close the members first, then the fleet. */
int eng_fleet_open(const Bundle *b, const EngOpts *o, EngFleet **out, char *err, size_t n);
typedef struct EngFleetInfo {
	unsigned members, groups, group_blocks, grid;  /* now: targets, groups of blocks, blocks a group, of */
	uint64_t launches, passes, late_passes, max_pass_ns;  /* since it opened: groups' ticks */
	char device[128];
} EngFleetInfo;
void eng_fleet_info(EngFleet *f, EngFleetInfo *out);
/* Alerts wake the host through wake_fd (as eng_arm does for one engine):
 * eng_fleet_seen before draining the members (false: no record since the
 * last call, no need to), eng_fleet_arm before waiting (false: drain the
 * members' rings every tick). */
bool eng_fleet_seen(EngFleet *f);
bool eng_fleet_arm(EngFleet *f, int wake_fd);
/* Stop its kernel for good, before closing many members (shutting down). */
int eng_fleet_halt(EngFleet *f, char *err, size_t n);
/* Start (or stop) many members at once: between eng_fleet_batch(f, true)
 * and (f, false) eng_start and eng_stop only change the members, and the
 * kernel starts once over all of them at the end (its error, if any, is
 * the second call's).  The kernel does not run from the first change to
 * the end: open the targets before, not between. */
int eng_fleet_batch(EngFleet *f, bool on, char *err, size_t n);
/* A reload with new rules in fleet mode: new engines, opened in a new
 * fleet, take over from the old ones.  eng_fleet_pause stops a fleet's
 * kernel and holds it (eng_fleet_batch(f, false) launches it again);
 * eng_fleet_link links new member e to old member old (the state that
 * carries over: unchanged rules, histories, the task table, the schedule),
 * which e's kernel takes at its first launch, old's kernel stopped. */
int eng_fleet_pause(EngFleet *f, char *err, size_t n);
int eng_fleet_link(Engine *e, Engine *old, unsigned *kept, char *err, size_t n);
void eng_fleet_close(EngFleet *f);

/* Restarts (sentineld's state file).  eng_save: a copy of the whole
 * world (every table, history and alert state, L->total bytes, malloc'd)
 * as of the last complete tick (a tick in progress is waited out, as
 * eng_values does), and the address its pointers point into.
 * eng_restore, before eng_start: take over such a copy, made by rules ob
 * with sizes op (a manifest and parameters saved with it), gap_ns of
 * real time after its last tick, as a reload takes over a running engine
 * (rules of the same group and name keep their alert state, metrics
 * their histories, the task and object tables their slots): its times
 * move onto this engine's clock, the gap a hole in the histories.
 * Nothing in the block is trusted (wd_adopt): *bad says how many of its
 * indexes were out of range.  block is changed, and may be freed after. */
int eng_save(Engine *e, void **out, uint64_t *base, char *err, size_t n);
int eng_restore(Engine *e, const Bundle *ob, const WdParams *op, void *block, size_t len, uint64_t gap_ns,
		unsigned *kept, unsigned *bad, char *err, size_t n);
const WdParams *eng_params(const Engine *e);

EngBackend eng_backend(const Engine *e);
/* The rules e runs (eng_open's b): its alert records' rule indexes are into them. */
const Bundle *eng_bundle(const Engine *e);
/* Why the backend was chosen (e.g. "auto: no NVIDIA driver (libcuda.so.1: ...)"). */
const char *eng_backend_note(const Engine *e);
const RlResult *eng_relocs(const Engine *e);
const WdLayout *eng_layout(const Engine *e);

#endif
