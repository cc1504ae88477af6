/* feed.h - run a bundle's rules on values the host supplies, on a clock
 * the caller sets: the CPU backend's compiled code (the same x86-64 code
 * sentineld runs), no target kernel.  `rulec test` drives it; a replay of
 * a recording would too.
 *
 * Per tick: fd_begin, then the values (a metric not given is unknown:
 * NaN, as a read error), then fd_eval, then fd_drain for the events.
 *
 * Ownership: a Feed owns its JIT'd code and its world; fd_close().  The
 * bundle must outlive it.
 */
#ifndef SENTINEL_FEED_H
#define SENTINEL_FEED_H

#include "bundle.h"
#include "catalog.h"
#include "snrt.h"

#include <stdint.h>

typedef struct Feed Feed;

typedef struct FdParams {
	uint64_t tick_ns;         /* the rules' tick: `for` and windows count in it */
	uint32_t max_cpus;        /* CPU ids, >= 1 */
	uint32_t task_cap;        /* tasks at once, >= 1 */
} FdParams;

int fd_open(const Bundle *b, const FdParams *p, Feed **out, char *err, size_t n);
void fd_close(Feed *f);

/* Start the tick at time now (ns): every value unknown, no CPU online, no task. */
void fd_begin(Feed *f, uint64_t now);
/* Values of metric m (ignored when the rules do not read it). */
void fd_host(Feed *f, MetricId m, double v);
void fd_cpu(Feed *f, MetricId m, uint32_t cpu, double v);   /* also marks the CPU online */
/* The CPU ids this tick (nr_cpu_ids; else one past the highest CPU given). */
void fd_cpu_ids(Feed *f, uint32_t ids);
/* Task `key` (nonzero, stable while the task lives: its PID + 1) exists this
 * tick, named comm; returns its row for fd_task, or -1 past task_cap. */
int fd_task_add(Feed *f, uint64_t key, const char *comm);
void fd_task(Feed *f, MetricId m, int row, double v);
/* Object `key` (nonzero, stable: a disk's number + 1) of entity e exists this
 * tick, named name; returns its row for fd_obj, or -1 past the table. */
int fd_obj_add(Feed *f, Entity e, uint64_t key, const char *name);
/* Its string str (SN_STR_FSTYPE or SN_STR_DEVICE of a mount; "" unless given). */
void fd_obj_str(Feed *f, Entity e, int row, unsigned str, const char *s);
void fd_obj(Feed *f, MetricId m, int row, double v);
/* Evaluate every rule on this tick's values. */
void fd_eval(Feed *f);
unsigned fd_drain(Feed *f, void (*fn)(void *ctx, const sn_alert *a), void *ctx);
/* Every rule's alert state now (the world's own table). */
const sn_rstate *fd_states(const Feed *f);

#endif
