/* world.h - lay out and initialise the memory a bundle runs in.
 *
 * One block holds the sn_world and every table, history ring and rule
 * state (snrt.h).  It is built in host memory (`stage`) with its pointers
 * already pointing where the block will live (`base`): the same address
 * for the CPU backend, a device address for CUDA, which then copies the
 * block to the GPU in one transfer.  The alert ring and the statistics
 * live apart, where the host can read them while the GPU writes.
 */
#ifndef SENTINEL_WORLD_H
#define SENTINEL_WORLD_H

#include "bundle.h"
#include "reloc.h"
#include "snrt.h"

#include <stddef.h>
#include <stdint.h>

/* A history keeps a sample per tick while the window holds at most
 * WD_MAX_HIST_SAMPLES (4 KiB per entity); a longer window keeps
 * WD_HIST_BUCKETS buckets of window / (WD_HIST_BUCKETS - 2) each (also
 * 4 KiB per entity, whatever the window's length), or, where only rate(),
 * delta() and increase() read the metric (BdHist.ends), WD_ENDS_ITEMS
 * samples of window / (WD_ENDS_ITEMS - 2) each and a 32-byte head
 * (sn_head: 352 B per entity).  A history also keeps the aggregates of
 * each window that other functions than those read it with up to date
 * (BdHist.trk; sn_trk, 96 B, and two deques of a byte an item: 608 B
 * per entity and window for samples, 224 B for buckets).
 * snrt.h has the rest. */
#define WD_MAX_HIST_SAMPLES 256u
#define WD_HIST_BUCKETS 64u
#define WD_ENDS_ITEMS 20u
#define WD_DEFAULT_HIST_MEMORY (1ull << 30)
#define WD_DEFAULT_TASKS 4096u
#define WD_DEFAULT_RING 4096u
/* Slots of an object kind (disks): more objects than this is a full table,
 * said as a target error. */
#define WD_OBJ_CAP 256u

/* The PID tree's node queue holds task_cap + this many nodes: inner nodes
 * and leaves (a leaf per task at worst, where PIDs are sparse); past it the
 * task list is walked instead. */
#define WD_TQ_SPARE 1024u

typedef struct WdParams {
	uint64_t tick_ns;
	uint32_t max_cpus;        /* CPU ids the tables hold (nr_cpu_ids of the target) */
	uint32_t task_cap;        /* tasks a tick can hold */
	uint32_t ring_cap;        /* alert records; a power of two */
	uint64_t hist_max;        /* bytes all histories may take; 0: WD_DEFAULT_HIST_MEMORY */
	uint32_t obj_cap;         /* slots of each object kind a rule reads; 0: WD_OBJ_CAP */
	uint64_t read_budget;     /* reads of the target a tick may make (kx.h, kx_cur); 0: no budget */
} WdParams;

typedef struct WdLayout {
	size_t total;             /* bytes of the block */
	size_t ring_bytes;        /* bytes of the alert ring (allocated apart) */
	size_t o_host, o_cpu, o_cpu_on, o_tptr, o_tslot, o_tcomm, o_tval, o_tkey[2], o_tms[2], o_tfree;
	size_t o_okey[SN_OBJ_KINDS], o_owalk[SN_OBJ_KINDS], o_oon[SN_OBJ_KINDS], o_oname[SN_OBJ_KINDS],
		o_olabel[SN_OBJ_KINDS], o_oval[SN_OBJ_KINDS];
	uint32_t ocap[SN_OBJ_KINDS]; /* slots of each object kind: 0 where no rule reads it */
	size_t o_hist, o_rstate, o_scratch, o_tq, o_tqctr, o_sync, o_joboff, o_rulefrom, o_histfrom;
	size_t o_partbuf, o_partarrive, o_partlist, o_tpid, o_tsig;   /* a rule in parts' meetings (snrt.h, part_buf) */
	size_t o_hring[64], o_hpos[64], o_hlen[64], o_hhead[64]; /* o_hhead: 0 unless ends-only */
	size_t o_htrk[64][SN_TRKS], o_hdq[64][SN_TRKS];  /* the trackers (sn_trk) and their deques */
	uint32_t hntrk[64];       /* trackers: none for ends-only */
	uint32_t hcap[64], hent[64];
	uint64_t hstride[64];
	size_t o_etab, o_ent;     /* the per-entity rules' tables, then their states, maps and free lists */
	size_t ent_bytes;
	size_t hist_bytes;        /* all histories together */
	uint32_t map_cap;
} WdLayout;

int wd_layout(const Bundle *b, const WdParams *p, WdLayout *L, char *err, size_t n);
/* Where rule r's per-entity states start in the block (sn_estate[*cap]);
 * *cap 0: not a per-entity rule. */
size_t wd_ent_at(const Bundle *b, const WdParams *p, const WdLayout *L, size_t r, uint32_t *cap);
/* Build the block in stage (L->total bytes, zeroed by the caller) for
 * address base.  ring and stats are the addresses (as the code will see
 * them) of the separately allocated alert ring and statistics.  Rules
 * that res blocks are disabled; jobs of unavailable metrics are off. */
void wd_build(const Bundle *b, const WdParams *p, const WdLayout *L, const RlResult *res, void *stage,
	      uint64_t base, uint64_t ring, uint64_t stats);
/* Reload: make the block in stage (built by wd_build for base) take over
 * from the world at address `from` (as the code sees it) of bundle `old`:
 * rules with the same group and name (and kind of entity) keep their
 * state (a changed one flagged SN_FROM_CHANGED), histories of the
 * same metric their samples, and the task table (same capacity) its slots.
 * Returns how many rules keep their state. */
/* Which rules carry alert state over a reload (the same group and name,
 * about the same kind of entity): from[r] (b->nrules) the rule of old
 * whose state b's rule r takes over (the first, -1: none); carried
 * (old->nrules) whether some rule of b takes over old's rule o; either may
 * be NULL.  A hash
 * of each side: O(n + m) (pairs compared one by one were 10^8 name
 * comparisons for two sets of 10,000 rules).  -ENOMEM. */
int wd_carry(const Bundle *b, const Bundle *old, int32_t *from, bool *carried);
unsigned wd_link(void *stage, const Bundle *b, const WdLayout *L, uint64_t base, const Bundle *old,
		 const WdParams *oldp, const WdParams *p, uint64_t from);

/* Initialise an alert ring of L->ring_bytes at r. */
void wd_ring_init(sn_ring *r, uint32_t cap);
/* Hand the records written since the last call to fn, in order, and free
 * their slots.  Returns how many. */
unsigned wd_ring_drain(sn_ring *R, void (*fn)(void *ctx, const sn_alert *a), void *ctx);

/* Move every pointer inside a block copied from address `from` so that it
 * points into the copy at `to` (the alert ring and statistics stay). */
void wd_rebase(void *block, const Bundle *b, const WdLayout *L, uint64_t from, uint64_t to);

/* A block read back from a file (sentineld's state file), for the
 * address `at` it will be read at: every pointer and size set from the
 * layout (none is taken from the file), the ring and statistics none, and
 * every index the runtime follows (slots, states, free lists, history
 * positions) brought in range.  Returns how many were out of range (0 for
 * a block this build wrote; ~0u: out of memory).  The block is then a
 * world to take over from (wd_link). */
unsigned wd_adopt(void *block, const Bundle *b, const WdParams *p, const WdLayout *L, uint64_t at);

/* The same for a copy of the block's value tables only (eng_values): the
 * header's value pointers move, every other pointer becomes NULL. */
void wd_rebase_values(void *block, uint64_t from, uint64_t to);

/* The world inside a block built by wd_build (a host pointer into stage). */
static inline sn_world *wd_world(void *stage) { return (sn_world *)stage; }

#endif
