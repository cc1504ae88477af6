/* record.h - recordings of what the rules saw, tick by tick, and their
 * replay.
 *
 * A recording holds, for every tick, the values the engine's tables held
 * after it: every host metric, every online CPU's, every task's (with the
 * task's kernel address as its identity, and its name when the tick read
 * it).  `sentinel-inspect metrics --record FILE` records every catalog
 * metric; sentineld's `[engine] record = FILE` records what its rules read
 * (CPU backend).  `rulec test --replay FILE RULES...` runs rules over a
 * recording through their compiled code (engine/feed.h) and prints when
 * each would have been pending, firing and resolved: the same ticks a live
 * sentineld with the same rules produced.
 *
 * The file (little-endian, one header then one record per tick):
 *   header  "SNREC\0\0\1", u64 tick_ns, u32 nhost, ncpu, ntask, max_cpus,
 *           then nhost + ncpu + ntask metric names (u16 length, bytes)
 *   record  u32 "TICK", u32 bytes that follow, u64 now_ns, u64 tick,
 *           u32 ncpus, u32 ntasks, f64 host[nhost], u8 cpu_on[ncpus] (padded
 *           to 8), f64 cpu[ncpu][ncpus], then per task u64 key, char
 *           comm[16], f64 val[ntask]
 * A record cut short (the writer was killed) ends the recording.
 *
 * Ownership: a Recorder owns its file (rec_close); a RecReader its file
 * and the arrays of the RecTick it fills (valid until the next call).
 */
#ifndef SENTINEL_RECORD_H
#define SENTINEL_RECORD_H

#include "bundle.h"
#include "catalog.h"
#include "snrt.h"

#include <stdint.h>

typedef struct Recorder Recorder;

int rec_create(const char *path, const Bundle *b, uint64_t tick_ns, uint32_t max_cpus, Recorder **out, char *err,
	       size_t n);
/* Append the tables of world w after its tick (host pointers). */
int rec_tick(Recorder *r, const sn_world *w);
/* Records written, bytes written. */
void rec_stats(const Recorder *r, uint64_t *ticks, uint64_t *bytes);
int rec_close(Recorder *r);

typedef struct RecReader RecReader;

typedef struct RecTick {
	uint64_t now_ns, tick;
	uint32_t ncpus, ntasks;
	const double *host;        /* [nhost] */
	const uint8_t *cpu_on;     /* [ncpus] */
	const double *cpu;         /* [ncpu][ncpus] */
	const uint64_t *task_key;  /* [ntasks] */
	const char (*task_comm)[16];
	const double *task;        /* [ntasks][ntask] */
} RecTick;

typedef struct RecInfo {
	uint64_t tick_ns;
	uint32_t nhost, ncpu, ntask, max_cpus;
	const MetricId *host_m, *cpu_m, *task_m;   /* MET__COUNT: a name this build does not know */
} RecInfo;

int rec_open(const char *path, RecReader **out, char *err, size_t n);
const RecInfo *rec_info(const RecReader *r);
/* The next tick: 1, 0 at the end, < 0 on a damaged file (err says where). */
int rec_next(RecReader *r, RecTick *t, char *err, size_t n);
void rec_free(RecReader *r);

#endif
