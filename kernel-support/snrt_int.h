/* snrt_int.h - what the evaluation runtime's files share (private to them).
 *
 * The evaluation runtime (snrt.h) is freestanding: clang compiles each of
 * its files for nvptx64 and for the host, and they are linked into every
 * bundle with the metric library and the generated rule code.  By job:
 *
 *   snrt_hist.c   the value tables as the jobs fill them (sn_put_*), the
 *                 histories (a sample per tick, or 64 buckets for long
 *                 windows) and the windows over them (sn_window)
 *   snrt_obj.c    the objects (disks, cgroups, interfaces, mounts): found by
 *                 a walk, kept in stable slots, with their names
 *   snrt_rule.c   what a rule's code reads (sn_host, sn_task, ...) and the
 *                 alert state machine its verdict goes through (sn_step),
 *                 with the records it writes on the alert ring
 *   snrt.c        the read budget, the task table (the task job's walk,
 *                 the tick's phases that give tasks rows and slots), the
 *                 ticks (the host's, fed ticks), the reload, the persistent
 *                 GPU kernels and the fleet's
 *
 * The library is optimised when it is built (rulec's own pipeline is short:
 * rulec/lvm.c), so what a tick inlines stays visible where the tick is:
 * the helpers below are static inline, and the task table is in snrt.c
 * with the ticks whose phases it is.  A function one file defines for
 * another's rare path is declared at the end.
 */
#ifndef SENTINEL_SNRT_INT_H
#define SENTINEL_SNRT_INT_H

#include "snrt.h"
#include "simt.h"
#include "kx.h"

#define SN_NAN __builtin_nan("")
#define sn_isnan(x) ((x) != (x))

/* A pattern's DFA (rulec/rx.h) over the NUL-terminated s of at most
 * cap bytes: state 0 first, next[state * nclass + cls[byte]], 0xffff no
 * match; 1 when the whole string leaves it in an accepting state. */
static inline int sn_dfa_match(const char *s, uint32_t cap, const uint8_t *cls, const uint16_t *next,
			       uint32_t nclass, const uint8_t *accept)
{
	uint32_t st = 0;
	for (uint32_t i = 0; i < cap && s[i]; i++) {
		uint32_t t = next[st * nclass + cls[(uint8_t)s[i]]];
		if (t == 0xffffu)
			return 0;
		st = t;
	}
	return accept[st];
}

static inline uint64_t sn_load_volatile(const uint64_t *p) { return *(const volatile uint64_t *)p; }
static inline uint32_t sn_load_volatile32(const uint32_t *p) { return *(const volatile uint32_t *)p; }

static inline void sn_fence_system(void)
{
#ifdef __NVPTX__
	__nvvm_membar_sys();
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* ---- histories (snrt_hist.c; the reload copies them: snrt.c) ----------------------- */

static inline sn_bucket sn_one(uint64_t t, double v)
{
	int known = !sn_isnan(v);
	return (sn_bucket){t, t, v, v, v, v, known ? v : 0, (uint32_t)known, 0};
}

/* Which stride of H time t (below 2^63) falls in: t / stride_ns without a
 * division (a push made two a task a tick, a tenth of the tick of a rule
 * over 5,000 tasks): the double's estimate is off by about 2^-52 of
 * t / stride, so by at most one for any clock of less than centuries,
 * then corrected to the exact quotient. */
inline uint64_t sn_stride_of(const sn_hist *H, uint64_t t)
{
	uint64_t s = H->stride_ns, q = (uint64_t)((double)t * H->stride_inv);
	while (q && q * s > t)
		q--;
	while (t - q * s >= s)
		q++;
	return q;
}

/* An ends-only history's sample: into head[e], and into the ring when it
 * starts a new stride (the ring keeps each stride's first sample); then
 * the window's old end in head[e] moved on if this sample took it out of
 * the window.  A full ring drops the kept old end before it overwrites
 * the oldest item, so the one kept is always one of the ring's: rate()
 * over it is the same as over the ring (sn_win_start's answer).  A C99
 * inline definition like sn_hist_add's (below). */
inline void sn_ends_push(sn_hist *H, uint32_t e, uint64_t t, double v)
{
	sn_head *hd = &H->head[e];
	uint32_t p = H->pos[e], len = H->len[e], cap = H->cap;
	sn_sample *ring = H->ring + (uint64_t)e * cap;
	/* a new stride unless the last sample (not after t) is in t's */
	if (!len || t < hd->t || hd->t < sn_stride_of(H, t) * H->stride_ns) {
		if (!len || len == cap)
			hd->t0 = UINT64_MAX;
		ring[p] = (sn_sample){t, v};
		H->pos[e] = p = p + 1 == cap ? 0 : p + 1;
		H->len[e] = len = len + (len < cap);
	}
	hd->t = t;
	hd->v = v;
	uint64_t lim = H->win_ns + H->slack_ns;
	if (hd->t0 <= t && t - hd->t0 <= lim)
		return;                          /* the old end is still inside */
	uint32_t newest = p == 0 ? cap - 1 : p - 1;
	uint32_t lo = sn_win_start(H, e, len, ring[newest].t, t, lim, 0);
	/* kept only once the history reaches past the window (lo > 0):
	 * until then every read asks sn_win_start */
	if (lo > 0) {
		sn_sample o = ring[(p + cap - len + lo) % cap];
		hd->t0 = o.t;
		hd->v0 = o.v;
	}
}

/* The tracker (sn_trk) of a history that has one, at each change of its
 * ring (snrt_hist.c): before the item at ring position p is overwritten
 * (a full ring) or merged into (unput); after an item is written at p
 * or merged into it (put). */
void sn_trk_drop(sn_hist *H, uint32_t e, uint32_t p);
void sn_trk_unput(sn_hist *H, uint32_t e, uint32_t p);
void sn_trk_put(sn_hist *H, uint32_t e, uint32_t p);

/* Entity e's history emptied (a new task or object in its slot, a copy) */
static inline void sn_hist_clear(sn_hist *H, uint32_t e)
{
	H->len[e] = H->pos[e] = 0;
	for (uint32_t j = 0; j < H->ntrk; j++)
		H->trk[j][e].items = 0;
}

/* One sample onto entity e's per-tick ring: the tracker drops the item a
 * full ring overwrites, and takes the new one in (an inline definition,
 * as sn_hist_add's, which calls it) */
inline void sn_ring_add(sn_hist *H, uint32_t e, uint64_t t, double v)
{
	uint32_t p = H->pos[e], len = H->len[e], cap = H->cap;
	if (H->ntrk && len == cap)
		sn_trk_drop(H, e, p);
	H->ring[(uint64_t)e * cap + p] = (sn_sample){t, v};
	H->pos[e] = p + 1 == cap ? 0 : p + 1;
	H->len[e] = len + (len < cap);
	if (H->ntrk)
		sn_trk_put(H, e, p);
}

/* Append item b (a sample is a bucket of one) to entity e's history: into
 * the newest bucket when it falls in the same stride, else as a new item.
 * Items must come oldest first.  A C99 inline definition, its one external
 * definition in snrt_hist.c: the reload (snrt.c) and the GPU inline it, the
 * host's puts call it, as when it was one file's static function. */
inline void sn_hist_add(sn_hist *H, uint32_t e, const sn_bucket *b)
{
	uint32_t p = H->pos[e], len = H->len[e], cap = H->cap;
	if (H->head) {                            /* ends-only: a bucket is its two ends */
		if (b->t0 != b->t1)
			sn_ends_push(H, e, b->t0, b->v0);
		sn_ends_push(H, e, b->t1, b->v1);
		return;
	}
	if (!H->stride_ns) {
		if (b->t0 != b->t1)               /* a bucket replayed into a per-tick history */
			sn_ring_add(H, e, b->t0, b->v0);
		sn_ring_add(H, e, b->t1, b->v1);
		return;
	}
	sn_bucket *ring = H->bkt + (uint64_t)e * cap;
	if (len) {
		uint32_t lp = p == 0 ? cap - 1 : p - 1;
		sn_bucket *l = &ring[lp];
		if (b->t0 >= l->t1 && b->t0 < (sn_stride_of(H, l->t0) + 1) * H->stride_ns) {
			if (H->ntrk)
				sn_trk_unput(H, e, lp);
			l->changes += b->changes + (b->v0 != l->v1);
			l->t1 = b->t1;
			l->v1 = b->v1;
			l->min = __builtin_fmin(l->min, b->min);
			l->max = __builtin_fmax(l->max, b->max);
			l->sum += b->sum;
			l->n += b->n;
			if (H->ntrk)
				sn_trk_put(H, e, lp);
			return;
		}
	}
	if (H->ntrk && len == cap)
		sn_trk_drop(H, e, p);
	ring[p] = *b;
	H->pos[e] = p + 1 == cap ? 0 : p + 1;
	H->len[e] = len + (len < cap);
	if (H->ntrk)
		sn_trk_put(H, e, p);
}

static inline void sn_hist_push(sn_world *w, int32_t h, uint32_t entity, double v)
{
	if (h < 0 || (uint32_t)h >= w->nhist)
		return;
	sn_hist *H = &w->hist[h];
	if (entity >= H->entities)
		return;
	if (H->head) {
		sn_ends_push(H, entity, w->now, v);
		return;
	}
	sn_bucket one = sn_one(w->now, v);
	sn_hist_add(H, entity, &one);
}

/* Item i (a ring position) of entity e's history, as a bucket (not of
 * an ends-only history: sn_hist_item) */
static inline sn_bucket sn_hist_at(const sn_hist *H, uint32_t e, uint32_t i)
{
	if (H->stride_ns)
		return H->bkt[(uint64_t)e * H->cap + i];
	sn_sample s = H->ring[(uint64_t)e * H->cap + i];
	return sn_one(s.t, s.v);
}

/* Item k (0: the oldest held) of entity e's history, as a bucket. */
static inline sn_bucket sn_hist_item(const sn_hist *H, uint32_t e, uint32_t k)
{
	uint32_t cap = H->cap, i = (H->pos[e] + cap - H->len[e] + k) % cap;
	if (H->head) {
		/* ends-only: a stride's first sample; the newest stride ends
		 * at head's sample (min/max/avg of the two ends only) */
		sn_sample s = H->ring[(uint64_t)e * cap + i];
		sn_bucket b = sn_one(s.t, s.v);
		sn_head hd = H->head[e];
		if (k + 1 == H->len[e] && hd.t != s.t) {
			sn_bucket l = sn_one(hd.t, hd.v);
			b.t1 = l.t1;
			b.v1 = l.v1;
			b.min = __builtin_fmin(b.min, l.min);
			b.max = __builtin_fmax(b.max, l.max);
			b.sum += l.sum;
			b.n += l.n;
			b.changes = b.v0 != b.v1;
		}
		return b;
	}
	return sn_hist_at(H, e, i);
}


static inline void sn_count_error(sn_world *w, double v)
{
	union { double d; uint64_t u; } x = {.d = v};
	if (sn_isnan(v) && x.u != SN_ABSENT_BITS)
		__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
}

/* An object's value into its table and history (sn_put_objs; fed ticks: snrt.c) */
static inline void sn_put_obj(sn_world *w, sn_objs *O, uint32_t col, uint32_t s, double v)
{
	int off = (int)(O->col_off >> (col & 63) & 1);
	if (off)
		v = SN_NAN;                          /* its rules are disabled; not a read error */
	O->val[(uint64_t)col * O->cap + s] = v;
	if (O->on[s] && !off)
		sn_count_error(w, v);
	sn_hist_push(w, O->hist[col], s, v);
}

/* ---- the alert ring's reservation (sn_emit: snrt_rule.c) ------------------------------- */

/* A tick's alerts are reserved in the world's own memory, not on the ring:
 * the ring lives in host memory, where every atomic is a bus round trip,
 * and a CAS on its head from a thousand warps firing together took half a
 * second (measured on an H100).  sn_emit_begin, before the tick's rules
 * run, takes the head and the room left; each record then costs one
 * device-memory fetch-add; sn_emit_end, after every rule ran, publishes the
 * head and counts what did not fit.  The host reads records by their seq,
 * so one written early is taken early; the head only rings the bell. */
/* (the task phases' barrier among the first blocks has its own counter and
 * generation: the other blocks meanwhile count in at the tick's last one) */
/* SN_SYNC_SLOW: the tick's slowest rule so far, (µs << 32) | rule (the GPU's);
 * SN_SYNC_SCOUNT, _SGEN: the barrier of the blocks beside the task phases,
 * SN_SYNC_SIDE the tick they finished (sn_tick_run) */
enum { SN_SYNC_COUNT, SN_SYNC_GEN, SN_SYNC_STOP, SN_SYNC_EMIT, SN_SYNC_BASE, SN_SYNC_ROOM, SN_SYNC_PCOUNT, SN_SYNC_PGEN,
       SN_SYNC_SLOW, SN_SYNC_SCOUNT, SN_SYNC_SGEN, SN_SYNC_SIDE };
_Static_assert(SN_SYNC_SIDE < SN_SYNC_N, "the world's sync words");

static inline void sn_emit_begin(sn_world *w)
{
	sn_ring *R = w->ring;
	if (!R)
		return;
	uint64_t head = sn_load_volatile(&R->head), tail = sn_load_volatile(&R->tail);
	w->sync[SN_SYNC_BASE] = head;
	w->sync[SN_SYNC_ROOM] = head - tail >= R->cap ? 0 : R->cap - (head - tail);
	*(volatile uint64_t *)&w->sync[SN_SYNC_EMIT] = 0;
}

static inline void sn_emit_end(sn_world *w)
{
	sn_ring *R = w->ring;
	if (!R)
		return;
	uint64_t n = sn_load_volatile(&w->sync[SN_SYNC_EMIT]), room = w->sync[SN_SYNC_ROOM];
	if (n > room)
		R->dropped += n - room;
	*(volatile uint64_t *)&R->head = w->sync[SN_SYNC_BASE] + (n < room ? n : room);
}

/* ---- what one file defines for another -------------------------------------------------- */

/* snrt_obj.c: this tick's walk of kind k into slots (fed ticks: snrt.c) */
void sn_objs_assign(sn_world *w, uint32_t k, sn_objs *O, int n);

/* ---- alerts (snrt_rule.c; per-entity rules' states: snrt_ent.c) ---------------------- */

/* One alert's state machine, st: the rule's own (sn_step) or an
 * entity's; entity as sn_step takes it (a task row, made its PID). */
void sn_machine(sn_world *w, uint32_t rule, const sn_rdesc *d, sn_rstate *st, double cond, double clear,
		double value, int64_t entity);
/* Its alert ends outside the machine (an entity gone): the event, its last value. */
void sn_machine_end(sn_world *w, uint32_t rule, sn_rstate *st, SnEventKind kind);

/* ---- a rule in parts (snrt_rule.c; the GPU's dispatch: snrt.c, sn_eval_parts) ---------- */

#ifdef __NVPTX__
/* The rule part this warp runs: lane 0 of the warp sets it before the
 * rule's code and puts it back (nparts 1) after. */
typedef struct sn_pwarp {
	double *buf;               /* the rule's two rounds of partials (sn_world.part_buf) */
	uint32_t *arrive;          /* its parts' arrivals this tick */
	uint32_t part, nparts;
	uint32_t k;                /* the meetings so far in this tick */
} sn_pwarp;
extern KX_SHARED sn_pwarp sn_pw[32];
#define SN_PW (sn_pw[__nvvm_read_ptx_sreg_tid_x() / 32])
#endif
/* Every part of the warp's rule has put its entities: 1 in part 0 (it
 * then ends the tick for them), 0 in the others (always 1 run whole). */
int sn_part_join(void);

#endif
