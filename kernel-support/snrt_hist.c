/* snrt_hist.c - the value tables as the jobs fill them (sn_put_*), each
 * value into its history (the histories' helpers are in snrt_int.h), and
 * the windows over the histories (sn_window).
 *
 * Part of the evaluation runtime (snrt.h): see snrt_int.h.
 */
#include "snrt_int.h"

extern inline uint64_t sn_stride_of(const sn_hist *H, uint64_t t);
extern inline void sn_ends_push(sn_hist *H, uint32_t e, uint64_t t, double v);
extern inline void sn_hist_add(sn_hist *H, uint32_t e, const sn_bucket *b);

/* ---- histories ------------------------------------------------------------- */

void sn_put_host(sn_world *w, uint32_t slot, int32_t hist, double v)
{
	if (simt_lane() != 0 || slot >= w->nhost)
		return;
	w->host[slot] = v;
	sn_count_error(w, v);
	sn_hist_push(w, hist, 0, v);
}

void sn_put_cpu(sn_world *w, uint32_t slot, int32_t hist, uint32_t cpu, double v)
{
	if (slot >= w->ncpuslots || cpu >= w->max_cpus)
		return;
	w->cpu[(uint64_t)slot * w->max_cpus + cpu] = v;
	if (w->cpu_on[cpu])
		sn_count_error(w, v);
	sn_hist_push(w, hist, cpu, v);
}

void sn_put_task(sn_world *w, uint32_t slot, int32_t hist, uint32_t row, double v)
{
	if (slot >= w->ntaskslots || row >= w->tasks.n)
		return;
	w->tasks.val[(uint64_t)slot * w->tasks.cap + row] = v;
	sn_count_error(w, v);
	sn_hist_push(w, hist, w->tasks.slot[row], v);
}

void sn_set_task(sn_world *w, uint32_t slot, uint32_t row, double v)
{
	if (slot < w->ntaskslots && row < w->tasks.n)
		w->tasks.val[(uint64_t)slot * w->tasks.cap + row] = v;
}

void sn_cpus_set(sn_world *w, uint32_t ids)
{
	if (simt_lane() == 0)
		w->ncpus = ids < w->max_cpus ? ids : w->max_cpus;
}

void sn_cpu_set_online(sn_world *w, uint32_t cpu, int online)
{
	if (cpu < w->max_cpus)
		w->cpu_on[cpu] = online > 0;
}

void sn_put_objs(sn_world *w, uint32_t k, uint32_t s, const double *vals)
{
	if (k >= SN_OBJ_KINDS || s >= w->objs[k].cap)
		return;
	sn_objs *O = &w->objs[k];
	uint32_t n = O->nslots < SN_OBJ_COLS ? O->nslots : SN_OBJ_COLS;
	for (uint32_t c = simt_lane(); c < n; c += simt_nlanes())
		sn_put_obj(w, O, c, s, vals[c]);
}

/* ---- windows ----------------------------------------------------------------------- */

/* Sums for a least-squares line through a window's items: x seconds
 * before the newest sample (at the item's mean time), y the item's mean,
 * each weighted by its known samples. */
typedef struct sn_fit {
	double w, x, y, xx, xy;
} sn_fit;

static void sn_fit_add(sn_fit *f, const sn_bucket *b, uint64_t now)
{
	if (!b->n)
		return;
	uint64_t mid = b->t0 + (b->t1 - b->t0) / 2;
	double n = (double)b->n, x = -(double)(now - mid) * 1e-9;
	f->w += n;
	f->x += n * x;
	f->y += b->sum;
	f->xx += n * x * x;
	f->xy += x * b->sum;
}

/* The slope (at = 0) or the line's value at the newest sample (at = 1). */
static double sn_fit_value(const sn_fit *f, int at)
{
	double d = f->w * f->xx - f->x * f->x;
	if (!(d > 1e-12 * f->w * f->w))          /* one point in time: no line */
		return SN_NAN;
	double slope = (f->w * f->xy - f->x * f->y) / d;
	return at ? (f->y - slope * f->x) / f->w : slope;
}

/* Whether item k of entity e's history starts before the window, whose
 * newest sample is at t1 and which reaches lim back from it. */
static inline int sn_win_before(const sn_hist *H, uint32_t e, uint32_t k, uint64_t t1, uint64_t lim)
{
	return t1 - sn_hist_item(H, e, k).t0 > lim;
}

/* The oldest of the len items of entity e's history that starts inside the
 * window (the newest, len - 1, if none before it does): the first k with
 * !sn_win_before(k) (items are in time order, so that is monotone).  The
 * answer of a binary search over [0, len - 1], found in constant time
 * where the items are evenly spaced, as a history's are once it has run a
 * while: the guess from the spacing (the stride, or the last two
 * samples'), then at most SN_WIN_STEPS items either way to where the
 * predicate changes; only a history with gaps (a paused target, a task's
 * first ticks) falls back to the search, over what the steps left.
 * Exactly the search's answer (test_snrt checks it against the search on
 * histories with gaps). */
#define SN_WIN_STEPS 3u
uint32_t sn_win_start(const sn_hist *H, uint32_t e, uint32_t len, uint64_t t0n, uint64_t t1, uint64_t lim,
		      uint64_t tick_ns)
{
	/* the spacing: a downsampled history's stride, else the last two
	 * samples' (next to each other in memory: the newest's line or the
	 * one before; the tick's when they are one), which follows ticks
	 * that run late */
	uint64_t sp = H->stride_ns;
	if (!sp && len >= 2) {
		uint64_t t0p = sn_hist_item(H, e, len - 2).t0;
		sp = t0n > t0p ? t0n - t0p : 0;
	}
	if (!sp)
		sp = tick_ns;
	uint64_t d = t1 - t0n;                   /* the newest item's own span */
	/* items back to the window's start: a guess (the steps below make it
	 * exact), so a double's division, not a 64-bit integer's (a routine
	 * of a hundred instructions on the GPU, once a window a tick) */
	uint64_t back = sp && lim > d ? (uint64_t)((double)(lim - d) / (double)sp) : 0;
	uint32_t lo = 0, hi = len - 1;
	uint32_t g = back >= hi ? 0 : hi - (uint32_t)back;
	/* forward while g is before the window */
	for (uint32_t s = 0; g < hi && sn_win_before(H, e, g, t1, lim); s++, g++)
		if (s == SN_WIN_STEPS) {
			lo = g + 1;
			goto search;
		}
	/* g is inside (or the newest): back while the one before it is too */
	for (uint32_t s = 0; g > 0 && !sn_win_before(H, e, g - 1, t1, lim); s++, g--)
		if (s == SN_WIN_STEPS) {
			hi = g - 1;
			goto search;
		}
	return g;
search:
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (sn_win_before(H, e, mid, t1, lim))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

double sn_window(const sn_world *w, uint32_t h, uint32_t entity, uint32_t fn, double window_s)
{
	uint32_t partial = fn & SN_W_PARTIAL;
	fn &= ~SN_W_PARTIAL;
	if (h >= w->nhist)
		return SN_NAN;
	const sn_hist *H = &w->hist[h];
	if (H->kind == SN_ENT_TASK) {
		if (entity >= w->tasks.n)
			return SN_NAN;
		entity = w->tasks.slot[entity];
	}
	if (entity >= H->entities)
		return SN_NAN;
	uint32_t len = H->len[entity];
	if (len == 0)
		return SN_NAN;
	uint64_t win = (uint64_t)(window_s * 1e9), slack = H->slack_ns;
	if (H->head && (fn == SN_W_RATE || fn == SN_W_DELTA) && win == H->win_ns) {
		/* an ends-only history over its own window: both ends in one
		 * line, once the push has kept the old end (sn_ends_push) */
		sn_head hd = H->head[entity];
		if (hd.t0 < hd.t) {
			if (fn == SN_W_DELTA)
				return hd.v - hd.v0;
			return hd.v < hd.v0 ? SN_NAN : (hd.v - hd.v0) / ((double)(hd.t - hd.t0) * 1e-9);
		}
	}
	/* from the newest item back while items start inside the window (and
	 * its slack); the last one taken is the oldest */
	const sn_bucket newest = sn_hist_item(H, entity, len - 1);
	sn_bucket oldest = newest;       /* the oldest item taken so far */
	double sum = newest.sum, mx = newest.max, mn = newest.min, changes = newest.changes;
	uint32_t n = newest.n, k = len - 1;
	int beyond = 0;                   /* the history reaches past the window's start */
	int line = fn == SN_W_DERIV || fn == SN_W_FIT;
	sn_fit fit = {0, 0, 0, 0, 0};
	if (line)
		sn_fit_add(&fit, &newest, newest.t1);
	if (fn == SN_W_RATE || fn == SN_W_DELTA) {
		/* only the ends count: the oldest item inside the window
		 * (sn_win_start: 2 reads next to each other where items are
		 * evenly spaced, instead of a walk or a search) */
		uint32_t lo = sn_win_start(H, entity, len, newest.t0, newest.t1, win + slack, w->tick_ns);
		if (lo < len - 1)
			oldest = sn_hist_item(H, entity, lo);
		beyond = lo > 0;
		k = 0;                           /* nothing left to walk */
	}
	while (k > 0) {
		sn_bucket b = sn_hist_item(H, entity, --k);
		if (newest.t1 - b.t0 > win + slack) {
			beyond = 1;
			break;
		}
		changes += b.changes + (oldest.v0 != b.v1);
		sum += b.sum;
		n += b.n;
		mx = __builtin_fmax(mx, b.max);
		mn = __builtin_fmin(mn, b.min);
		if (line)
			sn_fit_add(&fit, &b, newest.t1);
		oldest = b;
	}
	/* a window is known only once the history covers it (or, partial,
	 * from its second sample), and spans two samples */
	uint64_t span = newest.t1 - oldest.t0;
	int short_ = span + slack < win && !beyond;
	if (span == 0 || (short_ && !partial))
		return SN_NAN;
	switch (fn) {
	case SN_W_RATE:
		if (newest.v1 < oldest.v0)        /* a counter went back: the target rebooted */
			return SN_NAN;
		return (newest.v1 - oldest.v0) / ((double)(short_ ? win : span) * 1e-9);
	case SN_W_DELTA:
		return newest.v1 - oldest.v0;
	case SN_W_CHANGES:
		return changes;
	case SN_W_AVG:
		return n ? sum / n : SN_NAN;
	case SN_W_MAX:
		return mx;
	case SN_W_MIN:
		return mn;
	case SN_W_DERIV:
	case SN_W_FIT:
		return sn_fit_value(&fit, fn == SN_W_FIT);
	default:
		return SN_NAN;
	}
}
