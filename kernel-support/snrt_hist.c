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
extern inline void sn_ring_add(sn_hist *H, uint32_t e, uint64_t t, double v);

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

/* Sums for a least-squares line through a window's items: x seconds
 * before the newest sample (at the item's mean time), y the item's mean,
 * each weighted by its known samples. */
typedef struct sn_fit {
	double w, x, y, xx, xy;
	uint32_t pts;              /* items with a known sample */
} sn_fit;

static void sn_fit_add(sn_fit *f, const sn_bucket *b, uint64_t now)
{
	if (!b->n)
		return;
	uint64_t mid = b->t0 + (b->t1 - b->t0) / 2;
	double n = (double)b->n, x = -(double)(now - mid) * 1e-9;
	f->pts++;
	f->w += n;
	f->x += n * x;
	f->y += b->sum;
	f->xx += n * x * x;
	f->xy += x * b->sum;
}

/* The slope (at = 0) or the line's value at the newest sample (at = 1). */
static double sn_fit_value(const sn_fit *f, int at)
{
	/* one point in time: no line (a bucket of many samples is one
	 * point, whose d is rounding noise that may pass the test) */
	double d = f->w * f->xx - f->x * f->x;
	if (f->pts < 2 || !(d > 1e-12 * f->w * f->w))
		return SN_NAN;
	double slope = (f->w * f->xy - f->x * f->y) / d;
	return at ? (f->y - slope * f->x) / f->w : slope;
}

/* ---- the trackers: a window's aggregates kept up by the push ------------------------- */

/* a + x, and a + x y with nothing lost (x y's rounding error from an fma) */
static sn_dd sn_dd_add(sn_dd a, double x)
{
	double s = a.hi + x, bb = s - a.hi, e = (a.hi - (s - bb)) + (x - bb) + a.lo;
	double h = s + e;
	return (sn_dd){h, e - (h - s)};
}

static sn_dd sn_dd_addmul(sn_dd a, double x, double y)
{
	double p = x * y;
	return sn_dd_add(sn_dd_add(a, p), __builtin_fma(x, y, -p));
}

/* a y, to about 2^-104 of it */
static sn_dd sn_dd_mul(sn_dd a, double y)
{
	sn_dd r = sn_dd_addmul((sn_dd){0, 0}, a.hi, y);
	return sn_dd_add(r, a.lo * y);
}

static double sn_dd_val(sn_dd a) { return a.hi + a.lo; }

/* An item's mean time, seconds from the tracker's origin */
static double sn_trk_m(const sn_trk *k, const sn_bucket *b)
{
	uint64_t mid = b->t0 + (b->t1 - b->t0) / 2;
	return (double)(int64_t)(mid - k->origin) * 1e-9;
}

/* Item b's own terms in or out (sg 1 or -1) of the sums */
static void sn_trk_terms(sn_trk *k, const sn_bucket *b, double sg)
{
	k->n += sg > 0 ? b->n : -b->n;
	k->changes += sg > 0 ? b->changes : -b->changes;
	if (!b->n)
		return;
	k->kitems = (uint16_t)(k->kitems + (sg > 0 ? 1 : -1));
	if (!(__builtin_fabs(b->sum) <= 1e290)) {
		k->huge = (uint16_t)(k->huge + (sg > 0 ? 1 : -1));
		return;
	}
	double n = sg * (double)b->n, m = sn_trk_m(k, b), sum = sg * b->sum;
	k->sum = sn_dd_add(k->sum, sum);
	k->nm = sn_dd_addmul(k->nm, n, m);
	double mm = m * m, mme = __builtin_fma(m, m, -mm);
	k->nmm = sn_dd_add(sn_dd_addmul(k->nmm, n, mm), n * mme);
	k->msum = sn_dd_addmul(k->msum, m, sum);
}

/* Tracker j of entity e, and its deque d's bytes */
static sn_trk *sn_trk_of(const sn_hist *H, uint32_t j, uint32_t e) { return &H->trk[j][e]; }

static uint8_t *sn_trk_q(const sn_hist *H, uint32_t j, uint32_t e, int d)
{
	return H->dq[j] + ((uint64_t)e * 2 + (uint32_t)d) * H->cap;
}

/* deque d's entry i (0: the first) */
static uint32_t sn_trk_qat(const sn_hist *H, uint32_t j, uint32_t e, int d, uint32_t i)
{
	i += sn_trk_of(H, j, e)->q0[d];
	return sn_trk_q(H, j, e, d)[i >= H->cap ? i - H->cap : i];
}

/* the value deque d orders by: an item's max (d 0) or min (d 1) */
static double sn_trk_key(const sn_hist *H, uint32_t e, int d, uint32_t i)
{
	sn_bucket b = sn_hist_at(H, e, i);
	return d ? b.min : b.max;
}

/* Item p onto the back of deque d, past every entry it outranks (and any
 * unknown one: an unknown max or min is no candidate once a newer item
 * is in) */
static void sn_trk_qpush(const sn_hist *H, uint32_t j, uint32_t e, int d, uint32_t p)
{
	sn_trk *k = sn_trk_of(H, j, e);
	double v = sn_trk_key(H, e, d, p);
	while (k->qn[d]) {
		double bv = sn_trk_key(H, e, d, sn_trk_qat(H, j, e, d, k->qn[d] - 1u));
		if (!(sn_isnan(bv) || (d ? bv >= v : bv <= v)))
			break;
		k->qn[d]--;
	}
	uint32_t i = k->q0[d] + k->qn[d];
	sn_trk_q(H, j, e, d)[i >= H->cap ? i - H->cap : i] = (uint8_t)p;
	k->qn[d]++;
}

/* The window's oldest item out (there is a newer one) */
static void sn_trk_expire(const sn_hist *H, uint32_t j, uint32_t e)
{
	sn_trk *k = sn_trk_of(H, j, e);
	uint32_t cap = H->cap, lo = k->lo, nx = lo + 1 == cap ? 0 : lo + 1;
	sn_bucket b = sn_hist_at(H, e, lo), c = sn_hist_at(H, e, nx);
	sn_trk_terms(k, &b, -1);
	k->changes -= c.v0 != b.v1;
	for (int d = 0; d < 2; d++)
		if (k->qn[d] && sn_trk_qat(H, j, e, d, 0) == lo) {
			k->q0[d] = (uint16_t)(k->q0[d] + 1u == cap ? 0 : k->q0[d] + 1u);
			k->qn[d]--;
		}
	k->lo = (uint16_t)nx;
	k->items--;
}

void sn_trk_drop(sn_hist *H, uint32_t e, uint32_t p)
{
	for (uint32_t j = 0; j < H->ntrk; j++) {
		sn_trk *k = sn_trk_of(H, j, e);
		if (k->items > 1 && k->lo == p)
			sn_trk_expire(H, j, e);
	}
}

/* The exact inverse of sn_trk_put's adding item p, the newest */
void sn_trk_unput(sn_hist *H, uint32_t e, uint32_t p)
{
	sn_bucket b = sn_hist_at(H, e, p), a = sn_hist_at(H, e, p == 0 ? H->cap - 1 : p - 1);
	for (uint32_t j = 0; j < H->ntrk; j++) {
		sn_trk *k = sn_trk_of(H, j, e);
		if (!k->items)
			continue;
		sn_trk_terms(k, &b, -1);
		if (k->items > 1)
			k->changes -= b.v0 != a.v1;
		for (int d = 0; d < 2; d++)
			if (k->qn[d] && sn_trk_qat(H, j, e, d, k->qn[d] - 1u) == p)
				k->qn[d]--;
		k->items--;
	}
}

/* Item p, the newest, in; then out every item that no longer starts
 * inside the window that ends at it.  Items come in time order (the
 * clocks are monotonic): the window's items are then the newest ones, as
 * the walk finds them. */
void sn_trk_put(sn_hist *H, uint32_t e, uint32_t p)
{
	sn_bucket b = sn_hist_at(H, e, p), a = sn_hist_at(H, e, p == 0 ? H->cap - 1 : p - 1);
	for (uint32_t j = 0; j < H->ntrk; j++) {
		sn_trk *k = sn_trk_of(H, j, e);
		if (!k->items)
			*k = (sn_trk){.lo = (uint16_t)p, .origin = b.t0};
		else
			k->changes += b.v0 != a.v1;
		sn_trk_terms(k, &b, 1);
		sn_trk_qpush(H, j, e, 0, p);
		sn_trk_qpush(H, j, e, 1, p);
		k->items++;
		uint64_t lim = H->trk_win[j] + H->slack_ns;
		while (k->items > 1 && b.t1 - sn_hist_at(H, e, k->lo).t0 > lim)
			sn_trk_expire(H, j, e);
	}
}

/* fn over tracker j's window (sn_window's walk gives the same, the sums
 * to their rounding); newest: the history's newest item */
static double sn_trk_window(const sn_hist *H, uint32_t j, uint32_t e, uint32_t fn, uint32_t partial,
			    const sn_bucket *newest)
{
	const sn_trk *k = sn_trk_of(H, j, e);
	sn_bucket oldest = sn_hist_at(H, e, k->lo);
	uint32_t first = (H->pos[e] + H->cap - H->len[e]) % H->cap;
	uint64_t span = newest->t1 - oldest.t0, win = H->trk_win[j];
	int short_ = span + H->slack_ns < win && k->lo == first;
	if (span == 0 || (short_ && !partial))
		return SN_NAN;
	switch (fn) {
	case SN_W_CHANGES:
		return (double)k->changes;
	case SN_W_AVG:
		return k->n ? sn_dd_val(k->sum) / (double)k->n : SN_NAN;
	case SN_W_MAX:
		return sn_trk_key(H, e, 0, sn_trk_qat(H, j, e, 0, 0));
	case SN_W_MIN:
		return sn_trk_key(H, e, 1, sn_trk_qat(H, j, e, 1, 0));
	default:
		break;
	}
	/* the fit's sums with x = m - M, M the newest sample's time:
	 * sum n x = nm - M n, sum n x^2 = nmm - 2 M nm + M^2 n,
	 * sum x sum = msum - M sum */
	double n = (double)k->n, M = (double)(int64_t)(newest->t1 - k->origin) * 1e-9;
	sn_dd x = sn_dd_addmul(k->nm, -M, n);
	sn_dd xx = sn_dd_add(k->nmm, 0), t = sn_dd_mul(k->nm, -2 * M);
	xx = sn_dd_add(sn_dd_add(xx, t.hi), t.lo);
	t = sn_dd_mul(sn_dd_addmul((sn_dd){0, 0}, M, M), n);
	xx = sn_dd_add(sn_dd_add(xx, t.hi), t.lo);
	t = sn_dd_mul(k->sum, -M);
	sn_dd xy = sn_dd_add(sn_dd_add(k->msum, t.hi), t.lo);
	sn_fit f = {n, sn_dd_val(x), sn_dd_val(k->sum), sn_dd_val(xx), sn_dd_val(xy), k->kitems};
	return sn_fit_value(&f, fn == SN_W_FIT);
}

/* ---- windows ----------------------------------------------------------------------- */

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
	uint32_t partial = fn & SN_W_PARTIAL, walk = fn & SN_W_WALK;
	fn &= ~(SN_W_PARTIAL | SN_W_WALK);
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
	const sn_bucket newest = sn_hist_item(H, entity, len - 1);
	/* a window with a tracker (rulec lists each window a rule reads the
	 * metric with): the answer is kept */
	for (uint32_t j = 0; j < H->ntrk && !walk && fn != SN_W_RATE && fn != SN_W_DELTA; j++)
		if (win == H->trk_win[j] && H->trk[j][entity].items &&
		    !(H->trk[j][entity].huge && (fn == SN_W_AVG || fn == SN_W_DERIV || fn == SN_W_FIT)))
			return sn_trk_window(H, j, entity, fn, partial, &newest);
	/* from the newest item back while items start inside the window (and
	 * its slack); the last one taken is the oldest */
	sn_bucket oldest = newest;       /* the oldest item taken so far */
	double sum = newest.sum, mx = newest.max, mn = newest.min, changes = newest.changes;
	uint32_t n = newest.n, k = len - 1;
	int beyond = 0;                   /* the history reaches past the window's start */
	int line = fn == SN_W_DERIV || fn == SN_W_FIT;
	sn_fit fit = {0, 0, 0, 0, 0, 0};
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
