/* Unit tests of the evaluation runtime (kernel-support/snrt.c) on the host: the
 * windowed histories laid out by the engine's own code (engine/world.c),
 * fed and read through the same functions the GPU and the CPU backend run,
 * on a simulated clock, so a 24-hour window takes milliseconds.
 *
 * For every tick from 1 ms to 60 s and windows from 2 ticks to 24 h:
 *  - a window is unknown (NaN) until the history covers it, and known from
 *    then on, at every tick (no flicker);
 *  - delta() and rate() of a counter are exact over the span they report,
 *    and the span is the window within the stated bound (slack + one tick);
 *  - max/min/avg/changes see exactly the samples of that span;
 *  - the tracker that keeps a window's aggregates as the samples come
 *    answers what the walk over the window's items does;
 *  - a reload that changes a window carries the history over;
 *  - a tick's alerts reach the ring in full up to its room, the rest are
 *    counted as dropped, and none is lost or half-written after a drain;
 *  - the task table: a task keeps its slot (and its history) from tick to
 *    tick, an exited task's slot goes to a new task with an empty history,
 *    more tasks than the table is an error with the rows that fit, and a
 *    failed walk keeps every slot for the next tick;
 *  - the alert state machine (sn_step): `for`, M of N, `clear` with
 *    `clear_for`, and unknown (NaN) values that hold every timer.
 */
#include "rx.h"
#include "snrt.h"
#include "snrt_int.h"
#include "world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, passes;

#define CHECK(name, cond, ...) do { \
	if (cond) { passes++; printf("PASS snrt/" name "\n", __VA_ARGS__); } \
	else { failures++; printf("FAIL snrt/" name " (%s:%d: %s)\n", __VA_ARGS__, __FILE__, __LINE__, #cond); } \
} while (0)

/* What a bundle's generated code and metric library give the runtime;
 * these tests call the runtime directly and have no kernel to read. */
void rules_collect(sn_world *w, uint32_t job) { (void)w; (void)job; }
/* Rules for the ring test: rule r is true while r < fire_n. */
static uint32_t fire_n;
static const sn_rdesc fire_desc = {.pid_slot = -1};
/* ... or, for the state machine test, rule 0 steps on these */
static const sn_rdesc *sm_desc;
static double sm_cond, sm_clear;
void rules_eval(sn_world *w, uint32_t rule)
{
	if (sm_desc)
		sn_step(w, rule, sm_desc, sm_cond, sm_clear, 1.0, -1);
	else
		sn_step(w, rule, &fire_desc, rule < fire_n, 0, (double)rule, -1);
}
void rules_task_row(sn_world *w, uint32_t row) { (void)w; (void)row; }
void rules_obj_row(sn_world *w, uint32_t kind, uint32_t slot) { (void)w; (void)kind; (void)slot; }
void rules_task_derive(sn_world *w, uint32_t row) { (void)w; (void)row; }
int km_pid_leaves(uint64_t *q, uint32_t cap, uint32_t *ctr, uint32_t stop, uint32_t *level)
{
	(void)q, (void)cap, (void)ctr, (void)stop, (void)level;
	return 0;
}
uint64_t km_pid_leaf(uint64_t twig, uint32_t slot, int *bad) { (void)twig, (void)slot, (void)bad; return 0; }
double km_task_pid(uint64_t t) { (void)t; return 0; }
uint64_t km_pid_task(uint64_t leaf, uint32_t slot, uint64_t nr, uint32_t *tgid)
{
	(void)leaf; (void)slot; (void)nr; (void)tgid;
	return 0;
}
int km_task_walk(uint64_t *out, uint32_t cap) { (void)out; (void)cap; return 0; }
/* the signal_struct "read" for a task: its address's, plus sig_gen (a new
 * process at an old address), and 0 while sig_fail; counted */
static unsigned sig_reads;
static uint64_t sig_gen;
static int sig_fail;
uint64_t km_task_signal(uint64_t t)
{
	sig_reads++;
	return sig_fail ? 0 : 0x5000000 + t * 16 + sig_gen;
}
int km_task_comm(uint64_t task, char *out16)
{
	snprintf(out16, 16, "task%llx", (unsigned long long)task);
	return 0;
}
/* the disk walk: what dk_found lists (dk_err < 0: the walk fails) */
static uint64_t dk_found[300];
static int dk_n, dk_err;
int km_disk_walk(uint64_t *out, uint32_t cap)
{
	if (dk_err)
		return dk_err;
	for (int i = 0; i < dk_n && (uint32_t)i < cap; i++)
		out[i] = dk_found[i];
	return dk_n;
}
int km_disk_name(uint64_t disk, char *out32)
{
	snprintf(out32, 32, "disk%llx", (unsigned long long)disk);
	return 0;
}

/* the cgroup walk: none (the tests here are about disks) */
int km_cgroup_walk(uint64_t *out, uint32_t cap) { (void)out; (void)cap; return 0; }
int km_cgroup_name(uint64_t cgroup, char *out, uint32_t size)
{
	snprintf(out, size, "cg%llx", (unsigned long long)cgroup);
	return 0;
}

int km_net_walk(uint64_t *out, uint32_t cap) { (void)out; (void)cap; return 0; }
int km_net_name(uint64_t dev, char *out, uint32_t size)
{
	snprintf(out, size, "if%llx", (unsigned long long)dev);
	return 0;
}

/* the mount walk: what fs_found lists; each mount's type ext4 or tmpfs
 * by its key, its device /dev/vdKEY (key 0xd0: one longer than a label
 * holds; key 0xe0: its reads fail) */
static uint64_t fs_found[8];
static int fs_n;
int km_fs_walk(uint64_t *out, uint32_t cap)
{
	for (int i = 0; i < fs_n && (uint32_t)i < cap; i++)
		out[i] = fs_found[i];
	return fs_n;
}
/* EDAC memory controllers: none here */
int km_edac_walk(uint64_t *out, uint32_t cap) { (void)out; (void)cap; return 0; }
int km_edac_name(uint64_t mci, char *out, uint32_t size)
{
	snprintf(out, size, "%llu", (unsigned long long)mci);
	return 0;
}
int km_fs_name(uint64_t mount, char *out, uint32_t size)
{
	snprintf(out, size, "/m%llx", (unsigned long long)mount);
	return 0;
}
int km_fs_fstype(uint64_t mount, char *out, uint32_t size)
{
	if (mount == 0xe0)
		return -14;
	snprintf(out, size, "%s", mount & 0x10 ? "tmpfs" : "ext4");
	return 0;
}
int km_fs_device(uint64_t mount, char *out, uint32_t size)
{
	if (mount == 0xe0)
		return -14;
	if (mount == 0xd0)
		for (uint32_t i = 0; i < size; i++)
			out[i] = 'd';         /* no NUL either: the runtime ends it */
	else
		snprintf(out, size, "/dev/vd%llx", (unsigned long long)mount);
	return 0;
}

/* A world with one host history of `window` seconds at tick tick_ns. */
typedef struct TW {
	Bundle b;
	BdHist h;
	WdLayout L;
	WdParams p;
	void *block;
	sn_world *w;
	sn_stats stats;
} TW;

/* the windows rulec would list as tracked (none: the window alone,
 * unless ends) */
static double tw_trk[BD_HIST_TRACKS];
static unsigned tw_ntrk;

/* ends: only rate(), delta() and increase() read it (an ends-only
 * history where the window is long enough to downsample) */
static int tw_open_ends(TW *t, double window, uint64_t tick_ns, bool ends)
{
	memset(t, 0, sizeof *t);
	t->h = (BdHist){.metric = MET_HOST_JIFFIES, .window = window, .ends = ends};
	for (unsigned k = 0; k < tw_ntrk; k++)
		t->h.trk[t->h.ntrk++] = tw_trk[k];
	if (!ends && !tw_ntrk)
		t->h.trk[t->h.ntrk++] = window;  /* read by avg and the rest: rulec lists the window */
	t->b.host_m[0] = MET_HOST_JIFFIES;
	t->b.nhost = 1;
	t->b.hist = &t->h;
	t->b.nhist = 1;
	t->p = (WdParams){.tick_ns = tick_ns, .max_cpus = 1, .task_cap = 16, .ring_cap = 16};
	char err[256];
	if (wd_layout(&t->b, &t->p, &t->L, err, sizeof err)) {
		printf("     layout: %s\n", err);
		return -1;
	}
	t->block = calloc(1, t->L.total);
	wd_build(&t->b, &t->p, &t->L, NULL, t->block, (uint64_t)(uintptr_t)t->block, 0,
		 (uint64_t)(uintptr_t)&t->stats);
	t->w = wd_world(t->block);
	return 0;
}

static int tw_open(TW *t, double window, uint64_t tick_ns) { return tw_open_ends(t, window, tick_ns, false); }

static void tw_close(TW *t) { free(t->block); }

static void tw_put(TW *t, uint64_t now, double v)
{
	t->w->now = now;
	sn_put_host(t->w, 0, 0, v);
}

static double tw_win(TW *t, SnWinFn fn, double window) { return sn_window(t->w, 0, 0, fn, window); }

/* A counter that grows by one a tick, with a gauge spike in the middle of
 * the run: follow it for three windows at every tick (or every k-th tick
 * where a run would check more than 300,000 times: then the pushes are still every
 * tick and only the checks are sparse). */
static void test_window(double window, double tick, bool ends)
{
	TW t;
	uint64_t tick_ns = (uint64_t)(tick * 1e9 + 0.5), win_ns = (uint64_t)(window * 1e9 + 0.5);
	if (tw_open_ends(&t, window, tick_ns, ends)) {
		CHECK("window %gs at tick %gs: laid out", 0, window, tick);
		return;
	}
	const sn_hist *H = &t.w->hist[0];
	uint64_t slack = H->slack_ns, bound = slack + tick_ns;
	uint64_t ticks = 3 * (win_ns / tick_ns) + 10;
	uint64_t every = ticks > 300000 ? ticks / 300000 + 1 : 1;
	uint64_t t0 = 1000000000000ull + 12345;       /* not aligned to anything */
	uint64_t first_known = 0, flicker = 0, early = 0, bad_span = 0, bad_rate = 0, bad_avg = 0, bad_line = 0;
	for (uint64_t k = 0; k < ticks; k++) {
		uint64_t now = t0 + k * tick_ns;
		tw_put(&t, now, (double)k);
		if (k % every && k + 1 != ticks)
			continue;
		double d = tw_win(&t, SN_W_DELTA, window);
		uint64_t elapsed = now - t0;
		if (isnan(d)) {
			if (first_known)
				flicker++;
			if (elapsed >= win_ns + bound)
				early++;                  /* covered, yet unknown */
			continue;
		}
		if (!first_known)
			first_known = elapsed ? elapsed : 1;
		if (elapsed + slack < win_ns)
			early++;                          /* known before it is covered */
		/* the counter gains one per tick: delta ticks is the span */
		double span = d * (double)tick_ns;
		if (fabs(span - (double)win_ns) > (double)bound)
			bad_span++;
		double r = tw_win(&t, SN_W_RATE, window);
		if (fabs(r * tick - 1) > 1e-9)
			bad_rate++;
		if (H->head)
			continue;                 /* ends-only: rate() and delta() alone */
		/* avg of k over the span: its middle; min and max its ends */
		double avg = tw_win(&t, SN_W_AVG, window), mn = tw_win(&t, SN_W_MIN, window);
		double mx = tw_win(&t, SN_W_MAX, window), ch = tw_win(&t, SN_W_CHANGES, window);
		if (mx != (double)k || mn != (double)k - d || fabs(avg - ((double)k - d / 2)) > 1e-6 * (double)k ||
		    ch != d)
			bad_avg++;
		/* the samples lie on a line of slope 1 a tick: deriv and the
		 * line's value now are exact, downsampled or not */
		double dv = tw_win(&t, SN_W_DERIV, window), fit = tw_win(&t, SN_W_FIT, window);
		if (!(fabs(dv * tick - 1) < 1e-6) || !(fabs(fit - (double)k) < 1e-6 * ((double)k + 1)))
			bad_line++;
	}
	CHECK("window %gs at tick %gs (%s, %u items, slack %gs): unknown until covered, then known "
	      "(first after %.3fs)", early == 0 && first_known && !!H->head == (ends && H->stride_ns), window, tick,
	      H->head ? "ends-only" : H->stride_ns ? "buckets" : "samples", H->cap, slack / 1e9, first_known / 1e9);
	if (early)
		printf("     %llu checks known before covered or unknown after\n", (unsigned long long)early);
	CHECK("window %gs at tick %gs: never unknown again once known", flicker == 0, window, tick);
	CHECK("window %gs at tick %gs: delta spans the window within slack + 1 tick (%gs)", bad_span == 0, window,
	      tick, bound / 1e9);
	if (!H->head)
		CHECK("window %gs at tick %gs: deriv and predict_linear's line exact on a line", bad_line == 0, window,
		      tick);
	if (bad_line)
		printf("     %llu checks off the line\n", (unsigned long long)bad_line);
	CHECK("window %gs at tick %gs: rate exact%s", bad_rate == 0 && bad_avg == 0, window, tick,
	      H->head ? " (ends-only)" : "; min/max/avg/changes exact over the span");
	if (bad_rate || bad_avg)
		printf("     rate wrong %llu times, min/max/avg/changes %llu times\n", (unsigned long long)bad_rate,
		       (unsigned long long)bad_avg);
	tw_close(&t);
}

/* Samples off any line (a parabola): deriv and the fitted value are the
 * least-squares line through exactly the samples the window holds. */
static void test_fit_parabola(void)
{
	TW t;
	double window = 2.0, tick = 0.1;
	uint64_t tick_ns = 100000000ull, t0 = 7000000000ull;
	if (tw_open(&t, window, tick_ns))
		return;
	uint64_t lim = (uint64_t)(window * 1e9) + t.w->hist[0].slack_ns;
	int ok = 1, known = 0;
	for (uint64_t k = 0; k < 60; k++) {
		uint64_t now = t0 + k * tick_ns;
		tw_put(&t, now, (double)(k * k) * 0.5);
		double dv = tw_win(&t, SN_W_DERIV, window), fit = tw_win(&t, SN_W_FIT, window);
		if (isnan(dv))
			continue;
		known++;
		double w = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
		for (uint64_t j = 0; j <= k && j * tick_ns <= lim; j++) {
			double x = -(double)j * tick, y = (double)((k - j) * (k - j)) * 0.5;
			w += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
		}
		double slope = (w * sxy - sx * sy) / (w * sxx - sx * sx), at0 = (sy - slope * sx) / w;
		if (fabs(dv - slope) > 1e-9 * fabs(slope) || fabs(fit - at0) > 1e-9 * (fabs(at0) + 1))
			ok = 0;
	}
	CHECK("deriv and the fitted value of a parabola are the least-squares line through the window's samples "
	      "(%d windows)", ok && known > 30, known);
	tw_close(&t);
}

/* A spike inside a long window is seen by max_over_time until it leaves
 * the window (within the bound), however much the history is downsampled. */
static void test_spike(double window, double tick)
{
	TW t;
	uint64_t tick_ns = (uint64_t)(tick * 1e9 + 0.5), win_ns = (uint64_t)(window * 1e9 + 0.5);
	if (tw_open(&t, window, tick_ns))
		return;
	uint64_t bound = t.w->hist[0].slack_ns + tick_ns, t0 = 5000000000ull;
	uint64_t ticks = 3 * (win_ns / tick_ns), spike = ticks / 2;
	int seen_ok = 1, gone_ok = 1;
	for (uint64_t k = 0; k < ticks; k++) {
		uint64_t now = t0 + k * tick_ns;
		tw_put(&t, now, k == spike ? 100.0 : 1.0);
		double mx = tw_win(&t, SN_W_MAX, window);
		if (k < spike || isnan(mx))
			continue;
		uint64_t age = (k - spike) * tick_ns;
		if (age + bound <= win_ns && mx != 100.0)
			seen_ok = 0;
		if (age > win_ns + bound && mx != 1.0)
			gone_ok = 0;
	}
	CHECK("window %gs at tick %gs: a one-tick spike is in max_over_time while inside the window, "
	      "and gone after", seen_ok && gone_ok, window, tick);
	tw_close(&t);
}

/* The tracker (sn_trk) against the walk it replaces, on a series with
 * all that a real one has: unknown samples, runs of one value, ticks
 * late and missed, gaps longer than the window: every window function at
 * every tick, partial or not.  changes, min and max are the walk's
 * exactly; avg of integers too (both sums exact); avg of other values and
 * deriv / predict_linear's line within the rounding the test states (the
 * tracker's sums are double-doubles, the walk's plain doubles). */
static uint64_t tk_rand(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return *s;
}

static int tk_same(double a, double b, double rel)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return a == b || fabs(a - b) <= rel * (fabs(a) + fabs(b));
}

static void test_tracker(double window, double tick, int integers, uint64_t seed, double shorter, int dense)
{
	TW t;
	uint64_t tick_ns = (uint64_t)(tick * 1e9 + 0.5), win_ns = (uint64_t)(window * 1e9 + 0.5);
	tw_ntrk = 0;
	if (shorter) {                        /* two rules: [window] and [shorter] */
		tw_trk[tw_ntrk++] = window;
		tw_trk[tw_ntrk++] = shorter;
	}
	int rc = tw_open(&t, window, tick_ns);
	tw_ntrk = 0;
	if (rc) {
		CHECK("tracker %gs at tick %gs: laid out", 0, window, tick);
		return;
	}
	const sn_hist *H = &t.w->hist[0];
	static const SnWinFn fns[] = {SN_W_CHANGES, SN_W_AVG, SN_W_MAX, SN_W_MIN, SN_W_DERIV, SN_W_FIT};
	uint64_t now = 3000000000000ull + seed * 7919, ticks = 6 * (win_ns / tick_ns) + 400, known = 0, checks = 0;
	uint64_t wrong[6] = {0};
	double worst[6] = {0}, v = 100, vmax = 100;
	for (uint64_t k = 0; k < ticks; k++) {
		uint64_t r = tk_rand(&seed);
		/* dense: two samples a tick (a replayed or re-bucketed
		 * history's pace), so the window spans the whole ring and the
		 * ring overwrites items still inside it */
		now += (dense ? tick_ns / 2 : tick_ns) + (r % 16 == 0 ? tick_ns / 3 : 0);   /* a late tick */
		if (r % 997 == 0)
			now += win_ns + win_ns / 2;                     /* a gap longer than the window */
		else if (r % 89 == 0)
			now += 5 * tick_ns;                             /* missed ticks */
		if (r % 5 == 0)
			v = integers ? (double)(r >> 40 & 1023) : (double)(r >> 11) * 0x1p-53 * 1e6 - 3e5;
		/* unknown samples, and now and then an infinite one (a
		 * cgroup's limit of "max") */
		tw_put(&t, now, r % 23 == 0 ? NAN : r % 401 == 0 ? (r & 1024 ? INFINITY : -INFINITY) : v);
		vmax = fmax(vmax, fabs(v));
		for (size_t f = 0; f < 6; f++)
			for (uint32_t part = 0; part <= SN_W_PARTIAL; part += SN_W_PARTIAL) {
				double wn = shorter && (k + f) % 2 ? shorter : window;
				double a = sn_window(t.w, 0, 0, fns[f] | part, wn);
				double b = sn_window(t.w, 0, 0, fns[f] | part | SN_W_WALK, wn);
				/* the walk's own rounding: n ulps of the largest
				 * sample (a sum of +-3e5 samples averaging 41);
				 * a line's slope of noise around 0 */
				double rel = fns[f] <= SN_W_MIN && (integers || fns[f] != SN_W_AVG) ? 0 :
					     fns[f] == SN_W_AVG ? 1e-13 : 1e-6;
				double abs_ = rel ? 1e-12 * vmax : 0;
				checks++;
				known += !isnan(b);
				if (!tk_same(a, b, rel) && !(fabs(a - b) <= abs_)) {
					if (!wrong[f]++)
						printf("     tick %llu: %d%s: tracker %.17g, walk %.17g\n", (unsigned long long)k,
						       (int)fns[f], part ? " partial" : "", a, b);
				} else if (!isnan(a) && fabs(a - b) > abs_) {
					double e = fabs(a - b) / (fabs(a) + fabs(b));
					if (e > worst[f])
						worst[f] = e;
				}
			}
	}
	uint64_t bad = 0;
	for (size_t f = 0; f < 6; f++)
		bad += wrong[f];
	CHECK("tracker %gs%s at tick %gs%s (%s, %s, some infinite): changes, min, max%s the walk's exactly, avg within 1e-13 "
	      "(or 1e-12 of the largest sample), the line within 1e-6 (or that) (%llu checks, %llu known; worst avg "
	      "%.1e, deriv %.1e, fit %.1e)", bad == 0 && H->ntrk == (shorter ? 2u : 1u) && known > checks / 4, window,
	      shorter ? " and a shorter one over the same metric" : "", tick, dense ? ", two samples a tick" : "",
	      H->stride_ns ? "buckets" : "samples",
	      integers ? "integers" : "reals", integers ? ", avg" : "", (unsigned long long)checks,
	      (unsigned long long)known, worst[1], worst[4], worst[5]);
	if (bad)
		printf("     wrong: changes %llu avg %llu max %llu min %llu deriv %llu fit %llu\n",
		       (unsigned long long)wrong[0], (unsigned long long)wrong[1], (unsigned long long)wrong[2],
		       (unsigned long long)wrong[3], (unsigned long long)wrong[4], (unsigned long long)wrong[5]);
	tw_close(&t);
}

/* A reload that changes a window's length: the new history starts with
 * the old one's samples (re-bucketed), so the longer window is known as
 * soon as the old history covers it. */
static void test_reload(double w_old, bool ends_old, double w_new, bool ends_new, double tick)
{
	TW a, b;
	uint64_t tick_ns = (uint64_t)(tick * 1e9 + 0.5);
	if (tw_open_ends(&a, w_old, tick_ns, ends_old) || tw_open_ends(&b, w_new, tick_ns, ends_new))
		return;
	const char *ka = a.w->hist[0].head ? " ends-only" : "", *kb = b.w->hist[0].head ? " ends-only" : "";
	uint64_t t0 = 7000000000ull, n = (uint64_t)(2 * fmax(w_old, w_new) / tick);
	for (uint64_t k = 0; k < n; k++)
		tw_put(&a, t0 + k * tick_ns, (double)k);
	int32_t from = 0;
	b.w->from = a.w;
	b.w->hist_from = &from;
	b.w->rule_from = NULL;
	sn_handoff(b.w, 0, 1);
	double da = tw_win(&a, SN_W_DELTA, fmin(w_old, w_new)), db = tw_win(&b, SN_W_DELTA, fmin(w_old, w_new));
	/* both histories' edge error; a finer history rebuilt from buckets
	 * has one sample at each end of each bucket (an ends-only one's
	 * first only): a whole stride apart */
	const sn_hist *ha = &a.w->hist[0], *hb = &b.w->hist[0];
	uint64_t gap = ha->stride_ns > hb->stride_ns ? ha->stride_ns : 0;
	double bound = (double)(ha->slack_ns + hb->slack_ns + gap + 2 * tick_ns) / (double)tick_ns;
	CHECK("reload %gs%s -> %gs%s window at tick %gs: the history carries over (delta %g, was %g)",
	      !isnan(db) && fabs(db - da) <= bound, w_old, ka, w_new, kb, tick, db, da);
	/* and it goes on from there */
	tw_put(&b, t0 + n * tick_ns, (double)n);
	double db2 = tw_win(&b, SN_W_DELTA, w_new);
	CHECK("reload %gs%s -> %gs%s window at tick %gs: the new window is known at once if the old history "
	      "covered it", (w_new > w_old * 1.05) == isnan(db2), w_old, ka, w_new, kb, tick);
	tw_close(&a);
	tw_close(&b);
}

/* An ends-only history's kept old end (sn_head) against the ring's own
 * answer: rate() and delta() over the history's window with head's copy,
 * and with it dropped for the call, the same to the bit, on a history
 * with pauses longer than the window, jittered ticks, a counter that goes
 * back (a reboot: unknown both ways) and a slot emptied for a new task. */
static void test_ends_kept(void)
{
	TW t;
	double window = 10;
	uint64_t tick = 10000000, now = 1000000000000ull, seed = 0x2545f4914f6cdd1dull;
	if (tw_open_ends(&t, window, tick, true))
		return;
	sn_hist *H = &t.w->hist[0];
	double v = 0;
	unsigned cases = 0, bad = 0, kept = 0, pauses = 0;
	for (unsigned k = 0; k < 200000; k++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t r = seed >> 11;
		now += tick + (r & 1 ? r % (tick / 4) : 0);
		if ((r >> 8) % 4000 == 0) {
			now += tick * (1 + (r >> 20) % 3000);      /* paused for up to 30 s */
			pauses++;
		}
		v = (r >> 32) % 20000 == 0 ? 0 : v + (double)((r >> 40) % 3);
		if ((r >> 24) % 50000 == 7)
			H->len[0] = H->pos[0] = 0;                 /* the slot's next task */
		tw_put(&t, now, v);
		for (int fn = SN_W_RATE; fn <= SN_W_DELTA; fn++) {
			double a = tw_win(&t, (SnWinFn)fn, window);
			sn_head save = H->head[0];
			H->head[0].t0 = UINT64_MAX;
			double b = tw_win(&t, (SnWinFn)fn, window);
			H->head[0] = save;
			kept += save.t0 < save.t;
			cases++;
			bad += memcmp(&a, &b, sizeof a) != 0;
		}
	}
	CHECK("ends-only: rate() and delta() from the kept old end = from the ring, to the bit (%u of %u calls "
	      "kept, %u pauses)", H->head && bad == 0 && kept > cases / 2 && pauses > 20, kept, cases, pauses);
	if (bad)
		printf("     %u calls differ\n", bad);
	tw_close(&t);
}

/* sn_stride_of (an ends-only push's stride, without a division) against
 * the division, at stride edges and anywhere, for strides from 1 us to
 * a day and clocks up to a century. */
static void test_stride_of(void)
{
	uint64_t seed = 0x853c49e6748fea9bull;
	unsigned bad = 0, cases = 0;
	for (unsigned c = 0; c < 200000; c++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t r = seed >> 11;
		uint64_t s = 1000ull + r % 86400000000000ull;
		sn_hist H = {.stride_ns = s, .stride_inv = 1.0 / (double)s};
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t t = (seed >> 2) % 3155760000000000000ull;      /* 100 years */
		uint64_t edge = t / s * s;
		uint64_t ts[4] = {t, edge, edge ? edge - 1 : 0, edge + s - 1};
		for (int k = 0; k < 4; k++, cases++)
			bad += sn_stride_of(&H, ts[k]) != ts[k] / s;
	}
	CHECK("a stride without a division = the division, %u times (edges, strides of 1 us to 1 d, clocks of up "
	      "to 100 years)", bad == 0, cases);
}

/* wd_carry (which rules carry their alert state over a reload, through a
 * hash of each side) against the pairs compared one by one: names and
 * groups from small pools (collisions, duplicates, no group), entities,
 * per-entity tables and hashes that differ. */
static void test_carry(void)
{
	static const char *names[] = {"A", "B", "HungTask", "DiskFull", "Rule1", "Rule10", "Rule100", "X"};
	static const char *groups[] = {NULL, "g", "h", "node"};
	enum { N = 300 };
	static BdRule ra[N], rb[N];
	int32_t from[N];
	bool carried[N];
	uint64_t seed = 0x1234567887654321ull;
	unsigned bad = 0, kept = 0, cases = 0;
	for (unsigned c = 0; c < 200; c++) {
		size_t na = 1 + c % N, nb = 1 + (c * 7) % N;
		BdRule *sets[2] = {ra, rb};
		size_t ns[2] = {na, nb};
		for (int k = 0; k < 2; k++)
			for (size_t i = 0; i < ns[k]; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				uint64_t r = seed >> 11;
				sets[k][i] = (BdRule){.name = (char *)names[r % 8], .group = (char *)groups[(r >> 3) % 4],
						      .entity = (int)((r >> 5) % 3) - 1, .per_entity = (r >> 7) & 1,
						      .max_alerts = 100, .hash = (r >> 8) % 2};
			}
		Bundle old = {.rules = ra, .nrules = na}, b = {.rules = rb, .nrules = nb};
		if (wd_carry(&b, &old, from, carried)) {
			bad++;
			continue;
		}
		for (size_t r = 0; r < nb; r++, cases++) {
			int32_t want = -1;
			for (size_t o = 0; o < na && want < 0; o++)
				if (!strcmp(rb[r].name, ra[o].name) &&
				    !strcmp(rb[r].group ? rb[r].group : "", ra[o].group ? ra[o].group : "") &&
				    rb[r].entity == ra[o].entity && rb[r].per_entity == ra[o].per_entity)
					want = (int32_t)o;
			bad += from[r] != want;
			kept += want >= 0;
		}
		for (size_t o = 0; o < na; o++) {
			bool want = false;
			for (size_t r = 0; r < nb && !want; r++)
				want = !strcmp(rb[r].name, ra[o].name) &&
				       !strcmp(rb[r].group ? rb[r].group : "", ra[o].group ? ra[o].group : "") &&
				       rb[r].entity == ra[o].entity && rb[r].per_entity == ra[o].per_entity;
			bad += carried[o] != want;
		}
	}
	CHECK("the rules a reload carries over, through a hash = compared pair by pair (%u rules, %u carried)",
	      bad == 0 && kept > 0 && kept < cases, cases, kept);
}

/* The memory a history costs, and the limit on it. */
static void test_memory(void)
{
	TW t;
	tw_open(&t, 86400, 1000000);
	const sn_hist *H = &t.w->hist[0];
	CHECK("24 h at a 1 ms tick keeps %u buckets of %zu bytes (%u KiB per entity)",
	      H->stride_ns && H->cap == WD_HIST_BUCKETS && sizeof(sn_bucket) == 64, H->cap, sizeof(sn_bucket),
	      (unsigned)(H->cap * sizeof(sn_bucket) / 1024));
	tw_close(&t);
	Bundle b = {0};
	BdHist h = {.metric = MET_TASK_CTX_SWITCHES, .window = 3600};
	b.task_m[0] = MET_TASK_CTX_SWITCHES;
	b.ntask = 1;
	b.hist = &h;
	b.nhist = 1;
	WdParams p = {.tick_ns = 100000000, .max_cpus = 4, .task_cap = 1 << 20, .ring_cap = 16, .hist_max = 1 << 30};
	WdLayout L;
	char err[512] = "";
	int r = wd_layout(&b, &p, &L, err, sizeof err);
	CHECK("a history over the limit is an error that says what to change: %s",
	      r < 0 && strstr(err, "history_memory") && strstr(err, "task.ctx_switches"), err);
	/* the largest by bytes, trackers counted: 64 buckets of 64 B (4 KiB)
	 * against 202 samples of 16 B and a tracker (3.7 KiB), then 252
	 * samples and a tracker (4.6 KiB) */
	BdHist two[2] = {{.metric = MET_TASK_CTX_SWITCHES, .window = 3600},
			 {.metric = MET_TASK_RSS, .window = 20, .trk = {20}, .ntrk = 1}};
	b.task_m[1] = MET_TASK_RSS;
	b.ntask = 2;
	b.hist = two;
	b.nhist = 2;
	WdParams small = {.tick_ns = 100000000, .max_cpus = 1, .task_cap = 1024, .ring_cap = 16, .hist_max = 1 << 20};
	r = wd_layout(&b, &small, &L, err, sizeof err);
	CHECK("the error names the largest history by its bytes, not its items: %s",
	      r < 0 && strstr(err, "task.ctx_switches keeps 1024 entities x 64 buckets"), err);
	two[1].window = two[1].trk[0] = 25;
	r = wd_layout(&b, &small, &L, err, sizeof err);
	CHECK("... and counts its trackers: %s",
	      r < 0 && strstr(err, "task.rss keeps 1024 entities x 252 samples of 16 B and a window's tracker"), err);
	/* HungTask's any(task.state == "D" and delta(task.ctx_switches[1m]) == 0)
	 * at 50,000 tasks and a 10 ms tick: sentineld grows the table to a
	 * quarter more than the tasks (63,488 rows); every table of the block */
	Bundle hb = {0};
	BdHist hh = {.metric = MET_TASK_CTX_SWITCHES, .window = 60, .ends = true};
	hb.task_m[0] = MET_TASK_STATE;
	hb.task_m[1] = MET_TASK_CTX_SWITCHES;
	hb.ntask = 2;
	hb.ntwin = 1;
	hb.hist = &hh;
	hb.nhist = 1;
	WdParams hp = {.tick_ns = 10000000, .max_cpus = 64, .task_cap = 63488, .ring_cap = 4096};
	r = wd_layout(&hb, &hp, &L, err, sizeof err);
	CHECK("a [1m] window read by delta() alone, 63,488 task slots: %.1f MiB of tables, %.1f MiB of it history "
	      "(%zu B a slot; at most 32 MiB)", r == 0 && L.total <= 32u << 20, L.total / 1048576.0,
	      L.hist_bytes / 1048576.0, L.hist_bytes / 63488);
	hh.ends = false;
	hh.trk[0] = 60;                       /* as rulec lists it: avg_over_time's window */
	hh.ntrk = 1;
	r = wd_layout(&hb, &hp, &L, err, sizeof err);
	CHECK("... and read by avg_over_time too: %.1f MiB of history (whole buckets, and the window's tracker: "
	      "%zu B a slot)", r == 0 && L.hist_bytes == 63488ull * (WD_HIST_BUCKETS * sizeof(sn_bucket) +
	      sizeof(sn_trk) + 2 * WD_HIST_BUCKETS), L.hist_bytes / 1048576.0, L.hist_bytes / 63488);
}

/* The alert ring: nrules rules fire on one tick into a ring of cap
 * records; then the host drains and they resolve on the next tick. */
static void ring_take(void *ctx, const sn_alert *a)
{
	uint32_t *seen = ctx;
	seen[a->rule] |= a->kind == SN_EV_FIRING ? 1 : a->kind == SN_EV_RESOLVED ? 2 : 4;
}

static void ring_take_none(void *ctx, const sn_alert *a)
{
	(void)ctx;
	(void)a;
}

static void test_ring(uint32_t nrules, uint32_t cap)
{
	Bundle b = {.nrules = nrules};
	WdParams p = {.tick_ns = 100000000, .max_cpus = 1, .task_cap = 16, .ring_cap = cap};
	WdLayout L;
	char err[256];
	sn_stats stats = {0};
	sn_ring *R = calloc(1, sizeof *R + (size_t)cap * sizeof(sn_alert));
	uint32_t *seen = calloc(nrules, sizeof *seen);
	void *block = NULL;
	if (!R || !seen || wd_layout(&b, &p, &L, err, sizeof err) || !(block = calloc(1, L.total))) {
		CHECK("ring of %u for %u rules: set up", 0, cap, nrules);
		goto out;
	}
	wd_ring_init(R, cap);
	wd_build(&b, &p, &L, NULL, block, (uint64_t)(uintptr_t)block, (uint64_t)(uintptr_t)R, (uint64_t)(uintptr_t)&stats);
	sn_world *w = wd_world(block);
	fire_n = nrules;
	sn_tick(w, 0, 1, 1000000000ull);
	uint32_t fit = nrules < cap ? nrules : cap;
	unsigned got = wd_ring_drain(R, ring_take, seen);
	uint32_t fired = 0;
	for (uint32_t r = 0; r < nrules; r++)
		fired += seen[r] == 1;
	CHECK("%u rules fire at once into a ring of %u: %u records (%u taken, %u firing), %llu counted dropped, head %llu",
	      got == fit && fired == fit && R->dropped == nrules - fit && R->head == fit && R->tail == fit, nrules, cap, fit,
	      got, fired, (unsigned long long)R->dropped, (unsigned long long)R->head);
	memset(seen, 0, nrules * sizeof *seen);
	fire_n = 0;
	sn_tick(w, 0, 1, 1100000000ull);
	got = wd_ring_drain(R, ring_take, seen);
	uint32_t resolved = 0;
	for (uint32_t r = 0; r < nrules; r++)
		resolved += seen[r] == 2;
	CHECK("the next tick, after a drain, their %u resolutions fit as far as there is room (%u taken)",
	      got == fit && resolved == fit, fit, got);
out:
	free(block);
	free(seen);
	free(R);
}

/* The task table through sn_tasks_begin (the phases the engine runs, on
 * one thread): keys stand for task_struct addresses. */
typedef struct TT {
	Bundle b;
	BdHist h;
	WdLayout L;
	void *block;
	sn_world *w;
	sn_stats stats;
} TT;

/* t's world for its bundle at p: laid out, allocated and built; 0, or -1
 * after a failed check named what */
static int tt_open(TT *t, const WdParams *p, const char *what)
{
	char err[256] = "";
	if (wd_layout(&t->b, p, &t->L, err, sizeof err) || !(t->block = calloc(1, t->L.total))) {
		CHECK("%s: set up (%s)", 0, what, err);
		return -1;
	}
	wd_build(&t->b, p, &t->L, NULL, t->block, (uint64_t)(uintptr_t)t->block, 0, (uint64_t)(uintptr_t)&t->stats);
	t->w = wd_world(t->block);
	return 0;
}

static uint32_t tt_tick(TT *t, const uint64_t *keys, int n, uint64_t now)
{
	for (int i = 0; i < n; i++)
		t->w->scratch[i] = keys[i];
	t->w->now = now;
	uint32_t rows = sn_tasks_begin(t->w, n);
	for (uint32_t r = 0; r < rows; r++)     /* one sample a row: its key */
		sn_put_task(t->w, 0, 0, r, (double)t->w->tasks.ptr[r]);
	return rows;
}

/* the slot of key k this tick, or -1 */
static int64_t tt_slot(TT *t, uint64_t k)
{
	for (uint32_t r = 0; r < t->w->tasks.n; r++)
		if (t->w->tasks.ptr[r] == k)
			return t->w->tasks.slot[r];
	return -1;
}

static void test_task_table(void)
{
	TT t;
	memset(&t, 0, sizeof t);
	t.h = (BdHist){.metric = MET_TASK_CTX_SWITCHES, .window = 10};
	t.b.task_m[0] = MET_TASK_CTX_SWITCHES;
	t.b.ntask = 1;
	t.b.hist = &t.h;
	t.b.nhist = 1;
	WdParams p = {.tick_ns = 100000000, .max_cpus = 1, .task_cap = 4, .ring_cap = 16};
	if (tt_open(&t, &p, "task table"))
		return;
	const sn_hist *H = &t.w->hist[0];
	uint64_t a[] = {0xa0, 0xb0, 0xc0}, b[] = {0xb0, 0xc0, 0xd0}, many[] = {1, 2, 3, 4, 5, 6};
	tt_tick(&t, a, 3, 1000000000);
	int64_t sa = tt_slot(&t, 0xa0), sb = tt_slot(&t, 0xb0), sc = tt_slot(&t, 0xc0);
	tt_tick(&t, a, 3, 1100000000);
	CHECK("task table: three tasks keep their slots (%lld %lld %lld) and their histories grow (%u samples)",
	      sa >= 0 && sb >= 0 && sc >= 0 && sa != sb && sb != sc && sa != sc && tt_slot(&t, 0xa0) == sa &&
	      tt_slot(&t, 0xc0) == sc && H->len[sb] == 2, (long long)sa, (long long)sb, (long long)sc, H->len[sb]);
	tt_tick(&t, b, 3, 1200000000);
	int64_t sd = tt_slot(&t, 0xd0);
	CHECK("task table: a task exits and another starts: the survivors keep their slots, the new one has "
	      "a slot of its own (%lld) with a history of one sample (%u)",
	      tt_slot(&t, 0xb0) == sb && tt_slot(&t, 0xc0) == sc && sd >= 0 && sd != sb && sd != sc &&
	      tt_slot(&t, 0xa0) < 0 && H->len[sd] == 1 && t.w->tasks.nfree == 1,
	      (long long)sd, sd >= 0 ? H->len[sd] : 0);
	sn_tasks_begin(t.w, -40);
	CHECK("task table: a failed walk is an error, no rows (%u), and read errors count it", t.w->tasks.n == 0 &&
	      t.w->tasks.err == -40 && t.stats.read_errors == 1, t.w->tasks.n);
	tt_tick(&t, b, 3, 1300000000);
	CHECK("task table: after it, the same tasks have the same slots and their histories (%u samples)",
	      tt_slot(&t, 0xb0) == sb && tt_slot(&t, 0xc0) == sc && tt_slot(&t, 0xd0) == sd && H->len[sb] == 4,
	      H->len[sb]);
	uint32_t rows = tt_tick(&t, many, 6, 1400000000);
	CHECK("task table: six tasks in a table of four: %u rows, error %d, %u found, every slot taken once",
	      rows == 4 && t.w->tasks.err == -34 && t.w->tasks.found == 6 && t.w->tasks.nfree == 0 &&
	      tt_slot(&t, 1) != tt_slot(&t, 2) && tt_slot(&t, 3) != tt_slot(&t, 4) && tt_slot(&t, 1) != tt_slot(&t, 4),
	      rows, t.w->tasks.err, t.w->tasks.found);
	/* the table grows (sentineld's answer to a full one): a world of 16
	 * takes the table over; the four tasks keep their slots and
	 * histories, the two that did not fit get new slots */
	int64_t s1 = tt_slot(&t, 1), s4 = tt_slot(&t, 4);
	uint32_t len1 = H->len[s1];
	TT g = t;
	WdParams pg = p;
	pg.task_cap = 16;
	if (tt_open(&g, &pg, "task table: a larger one")) {
		free(t.block);
		return;
	}
	int32_t hfrom = 0;
	g.w->from = t.w;
	g.w->hist_from = &hfrom;
	g.w->rule_from = NULL;
	g.w->tasks_from = 1;
	sn_handoff(g.w, 0, 1);
	rows = tt_tick(&g, many, 6, 1500000000);
	int64_t s5 = tt_slot(&g, 5), s6 = tt_slot(&g, 6);
	const sn_hist *G = &g.w->hist[0];
	CHECK("task table: grown from 4 to 16: all %u rows, no error (%d), the four keep their slots (%lld %lld) "
	      "and histories (%u samples), the two new ones have new slots (%lld %lld), %u free",
	      rows == 6 && g.w->tasks.err == 0 && tt_slot(&g, 1) == s1 && tt_slot(&g, 4) == s4 &&
	      G->len[s1] == len1 + 1 && s5 >= 4 && s6 >= 4 && s5 != s6 && G->len[s5] == 1 && g.w->tasks.nfree == 10,
	      rows, g.w->tasks.err, (long long)tt_slot(&g, 1), (long long)tt_slot(&g, 4), s1 >= 0 ? G->len[s1] : 0,
	      (long long)s5, (long long)s6, g.w->tasks.nfree);
	free(g.block);
	free(t.block);
}

/* A task's signal_struct, kept with its slot (sn_task_signal): read once
 * in the task's life; read again for another PID in the slot (a task
 * that died and left its address to a new one), a slot given to a new
 * task, an unread answer, and a table the list walk filled (no PIDs). */
static uint64_t ts_sig(TT *t, uint64_t k, uint32_t pid)
{
	for (uint32_t r = 0; r < t->w->tasks.n; r++)
		if (t->w->tasks.ptr[r] == k) {
			t->w->tasks.pid[r] = pid;
			return sn_task_signal(t->w, r, k);
		}
	return ~0ull;
}

static void test_task_signal(void)
{
	TT t;
	memset(&t, 0, sizeof t);
	t.b.task_m[0] = MET_TASK_KERNEL_TIME;
	t.b.ntask = 1;
	WdParams p = {.tick_ns = 100000000, .max_cpus = 1, .task_cap = 4, .ring_cap = 16};
	if (tt_open(&t, &p, "task signal"))
		return;
	uint64_t a[] = {0xa0, 0xb0}, b[] = {0xb0, 0xc0};
	sig_reads = 0;
	sig_gen = 0;
	sig_fail = 0;
	int ok = 1;
	for (int tick = 0; tick < 5; tick++) {
		tt_tick(&t, a, 2, 1000000000ull + tick * 100000000ull);
		ok &= ts_sig(&t, 0xa0, 10) == 0x5000000 + 0xa0 * 16 && ts_sig(&t, 0xb0, 11) == 0x5000000 + 0xb0 * 16;
	}
	CHECK("task signal: two tasks over five ticks: read twice (%u), the same answer each tick", ok && sig_reads == 2,
	      sig_reads);
	int64_t sa = tt_slot(&t, 0xa0);
	sig_gen = 1;
	tt_tick(&t, a, 2, 1600000000ull);
	uint64_t na = ts_sig(&t, 0xa0, 12), nb = ts_sig(&t, 0xb0, 11);
	CHECK("task signal: a new PID at an old address is read again (%u reads), the other is kept",
	      na == 0x5000000 + 0xa0 * 16 + 1 && nb == 0x5000000 + 0xb0 * 16 && sig_reads == 3, sig_reads);
	tt_tick(&t, b, 2, 1700000000ull);
	uint64_t nc = ts_sig(&t, 0xc0, 12);           /* 0xa0's slot, and even its PID */
	CHECK("task signal: a slot given to a new task (%lld, 0xa0's) reads its signal (%u reads), not the slot's "
	      "last one", tt_slot(&t, 0xc0) == sa && nc == 0x5000000 + 0xc0 * 16 + 1 && sig_reads == 4,
	      (long long)tt_slot(&t, 0xc0), sig_reads);
	sig_fail = 1;
	tt_tick(&t, b, 2, 1800000000ull);
	ts_sig(&t, 0xb0, 13);
	ts_sig(&t, 0xb0, 13);
	sig_fail = 0;
	uint64_t nb2 = ts_sig(&t, 0xb0, 13);
	CHECK("task signal: an answer not read (0) is not kept: read again until it is (%u reads)",
	      nb2 == 0x5000000 + 0xb0 * 16 + 1 && sig_reads == 7, sig_reads);
	tt_tick(&t, b, 2, 1900000000ull);
	ts_sig(&t, 0xb0, 13);
	for (int k = 1; k <= 3; k++) {                /* three ticks whose walks failed */
		t.w->now = 1900000000ull + k * 100000000ull;
		sn_tasks_begin(t.w, -40);
	}
	tt_tick(&t, b, 2, 2300000000ull);
	ts_sig(&t, 0xb0, 13);
	tt_tick(&t, b, 2, 2400000000ull);
	ts_sig(&t, 0xb0, 13);
	tt_tick(&t, b, 2, 3400000000ull);                  /* a stopped kernel's second */
	ts_sig(&t, 0xb0, 13);
	CHECK("task signal: kept from one tick to the next (%u reads), read again after failed walks and after "
	      "a second without ticks (a gap long enough for PIDs to wrap)", sig_reads == 9, sig_reads);
	t.w->tasks.by_list = 1;
	ts_sig(&t, 0xb0, 13);
	ts_sig(&t, 0xb0, 13);
	CHECK("task signal: rows the list walk found (no PID) are read every time (%u reads)", sig_reads == 11, sig_reads);
	free(t.block);
}

/* The alert state machine, one rule, fed conditions tick by tick; the
 * events it emits, as a string of letters (p pending, f firing, c
 * cancelled, r resolved, . none). */
typedef struct SM {
	Bundle b;
	WdLayout L;
	void *block;
	sn_world *w;
	sn_ring *R;
	sn_stats stats;
} SM;

static int sm_open(SM *m)
{
	memset(m, 0, sizeof *m);
	m->b.nrules = 1;
	WdParams p = {.tick_ns = 100000000, .max_cpus = 1, .task_cap = 16, .ring_cap = 64};
	char err[256];
	m->R = calloc(1, sizeof *m->R + 64 * sizeof(sn_alert));
	if (!m->R || wd_layout(&m->b, &p, &m->L, err, sizeof err) || !(m->block = calloc(1, m->L.total)))
		return -1;
	wd_ring_init(m->R, 64);
	wd_build(&m->b, &p, &m->L, NULL, m->block, (uint64_t)(uintptr_t)m->block, (uint64_t)(uintptr_t)m->R,
		 (uint64_t)(uintptr_t)&m->stats);
	m->w = wd_world(m->block);
	return 0;
}

static void sm_take(void *ctx, const sn_alert *a)
{
	char *c = ctx;
	*c = a->kind == SN_EV_PENDING ? 'p' : a->kind == SN_EV_FIRING ? 'f' : a->kind == SN_EV_CANCELLED ? 'c' :
	     a->kind == SN_EV_RESOLVED ? 'r' : '?';
}

/* conds: '1' true, '0' false, 'n' unknown; clears likewise (or NULL) */
static void sm_run(const char *what, const sn_rdesc *d, const char *conds, const char *clears, const char *want)
{
	SM m;
	char got[128] = "";
	if (sm_open(&m)) {
		CHECK("state machine: %s: set up", 0, what);
		goto out;
	}
	size_t n = strlen(conds);
	for (size_t i = 0; i < n && i < sizeof got - 1; i++) {
		sm_desc = d;
		sm_cond = conds[i] == 'n' ? NAN : conds[i] == '1';
		sm_clear = !clears ? 0 : clears[i] == 'n' ? NAN : clears[i] == '1';
		sn_tick(m.w, 0, 1, 1000000000ull + i * 100000000ull);   /* the engine's own tick: emit, step */
		sm_desc = NULL;
		got[i] = '.';
		wd_ring_drain(m.R, sm_take, &got[i]);
	}
	CHECK("state machine: %s: %s gives %s", !strcmp(got, want), what, conds, got);
out:
	free(m.block);
	free(m.R);
}

static void test_state_machine(void)
{
	sn_rdesc now = {.pid_slot = -1}, for3 = {.for_ns = 300000000, .pid_slot = -1};
	sn_rdesc mofn = {.m_of = 3, .n_of = 5, .pid_slot = -1};
	sn_rdesc clr = {.has_clear = 1, .clear_for_ns = 200000000, .pid_slot = -1};
	sm_run("no for", &now, "0110", NULL, ".f.r");
	sm_run("for 300 ms", &for3, "011110", NULL, ".p..fr");
	sm_run("for 300 ms, broken before it", &for3, "0110111", NULL, ".p.cp..");
	sm_run("unknown holds the timer", &for3, "01nn1100", NULL, ".p..f.r.");
	sm_run("3 of 5", &mofn, "1010100000", NULL, "p...fr....");
	sm_run("clear for 200 ms", &clr, "11111", "01110", "f..rf");
	sm_run("an unknown clear holds its timer", &clr, "1111111", "0n1n110", "f...rf.");
}

/* The object table (disks) through the engine's own find: an object keeps
 * its slot and its history while it exists; one gone frees its slot, which
 * the next new one takes with its history emptied; a full table says so and
 * keeps the objects it holds; a failed walk keeps last tick's objects. */
static void dk_tick(TW *t, uint64_t now, const uint64_t *keys, int n)
{
	dk_n = n;
	memcpy(dk_found, keys, (size_t)n * sizeof *keys);
	t->w->now = now;
	sn_objs_find(t->w, SN_OBJ_DISK);
	for (uint32_t s = 0; s < sn_nobjs(t->w, SN_OBJ_DISK); s++)
		if (sn_obj_on(t->w, SN_OBJ_DISK, s)) {  /* each disk's value: its key, a counter */
			double v = (double)sn_obj_key(t->w, SN_OBJ_DISK, s) + (double)now * 1e-9;
			sn_put_objs(t->w, SN_OBJ_DISK, s, &v);
		}
}

static int dk_slot(TW *t, uint64_t key)
{
	for (uint32_t s = 0; s < sn_nobjs(t->w, SN_OBJ_DISK); s++)
		if (sn_obj_on(t->w, SN_OBJ_DISK, s) && sn_obj_key(t->w, SN_OBJ_DISK, s) == key)
			return (int)s;
	return -1;
}

static void test_objects(void)
{
	TW t;
	memset(&t, 0, sizeof t);
	t.h = (BdHist){.metric = MET_DISK_READS, .window = 10};
	t.b.obj_m[0][0] = MET_DISK_READS;
	t.b.nobj[0] = 1;
	t.b.hist = &t.h;
	t.b.nhist = 1;
	t.p = (WdParams){.tick_ns = 1000000000, .max_cpus = 1, .task_cap = 16, .ring_cap = 16};
	char err[256];
	if (wd_layout(&t.b, &t.p, &t.L, err, sizeof err)) {
		CHECK("objects: laid out (%s)", 0, err);
		return;
	}
	t.block = calloc(1, t.L.total);
	wd_build(&t.b, &t.p, &t.L, NULL, t.block, (uint64_t)(uintptr_t)t.block, 0, (uint64_t)(uintptr_t)&t.stats);
	t.w = wd_world(t.block);
	sn_objs *O = &t.w->objs[SN_OBJ_DISK];
	CHECK("objects: %u slots, one column", O->cap == WD_OBJ_CAP && O->nslots == 1, O->cap);
	uint64_t ab[] = {0xa0, 0xb0}, b[] = {0xb0}, bc[] = {0xc0, 0xb0};
	uint64_t sec = 1000000000ull;
	for (int k = 0; k < 5; k++)
		dk_tick(&t, (uint64_t)(k + 1) * sec, ab, 2);
	int sa = dk_slot(&t, 0xa0), sb = dk_slot(&t, 0xb0);
	CHECK("objects: two disks in slots %d and %d, named", sa == 0 && sb == 1 && !strcmp(O->name[1], "diskb0"), sa, sb);
	/* =~ over the names: a pattern's DFA (rx.h) walked by the runtime */
	static const struct { const char *pat; int slot, want; } pm[] = {
		{"disk[a-f]0", 1, 1}, {"disk[a-f]0", 0, 1}, {"diska.", 1, 0}, {"disk", 1, 0}, {".*b0", 1, 1},
		{"(?i)DISKB0", 1, 1}, {"x*", 1, 0}, {"disk[a-f]0", 5, 0},
	};
	for (size_t i = 0; i < sizeof pm / sizeof *pm; i++) {
		Rx rx;
		RxErr re;
		int got = -1;
		if (rx_compile(pm[i].pat, strlen(pm[i].pat), &rx, &re) == 0) {
			got = sn_obj_str_match(t.w, SN_OBJ_DISK, SN_STR_NAME, (uint32_t)pm[i].slot, rx.cls, rx.next, rx.nclass, rx.accept);
			rx_free(&rx);
		}
		CHECK("objects: slot %d's name =~ \"%s\" is %d (wanted %d)", got == pm[i].want, pm[i].slot, pm[i].pat, got,
		      pm[i].want);
	}
	/* a name that fills its buffer without a NUL: read to its end, not into the next */
	char keep[2][SN_OBJ_NAME];
	memcpy(keep, O->name[1], sizeof keep);
	memset(O->name[1], 'x', SN_OBJ_NAME);
	O->name[2][0] = 'y';
	Rx xs;
	RxErr xe;
	int full = rx_compile("x*", 2, &xs, &xe) == 0 ?
		sn_obj_str_match(t.w, SN_OBJ_DISK, SN_STR_NAME, 1, xs.cls, xs.next, xs.nclass, xs.accept) : -1;
	int comm = sn_task_comm_match(t.w, 0, xs.cls, xs.next, xs.nclass, xs.accept);
	rx_free(&xs);
	memcpy(O->name[1], keep, sizeof keep);
	CHECK("objects: a name of %u bytes without a NUL matches within its buffer (%d); no task row matches (%d)",
	      full == 1 && comm == 0, SN_OBJ_NAME, full, comm);
	double d = sn_window(t.w, 0, (uint32_t)sb, SN_W_DELTA, 4);
	CHECK("objects: a disk's own history (delta over 4 s = %g)", d == 4, d);
	dk_tick(&t, 6 * sec, b, 1);
	CHECK("objects: one gone: its slot is free, the other kept its slot (%d)",
	      dk_slot(&t, 0xa0) < 0 && dk_slot(&t, 0xb0) == 1 && !sn_obj_on(t.w, SN_OBJ_DISK, 0) &&
	      sn_nobjs(t.w, SN_OBJ_DISK) == 2, dk_slot(&t, 0xb0));
	dk_tick(&t, 7 * sec, bc, 2);
	int sc = dk_slot(&t, 0xc0);
	double dc = sn_window(t.w, 0, (uint32_t)sc, SN_W_DELTA, 4);
	d = sn_window(t.w, 0, (uint32_t)dk_slot(&t, 0xb0), SN_W_DELTA, 4);
	CHECK("objects: a new one takes the freed slot %d with an empty history (delta %g), the other's goes on (%g)",
	      sc == 0 && isnan(dc) && d == 4, sc, dc, d);
	dk_err = -14;
	dk_tick(&t, 8 * sec, bc, 2);
	dk_err = 0;
	CHECK("objects: a failed walk is an error and keeps the disks (%d)",
	      O->err == -14 && dk_slot(&t, 0xc0) == 0 && dk_slot(&t, 0xb0) == 1, O->err);
	uint64_t many[WD_OBJ_CAP + 10];
	for (uint32_t i = 0; i < WD_OBJ_CAP + 10; i++)
		many[i] = 0x1000 + i * 8;
	many[0] = 0xb0;
	dk_tick(&t, 9 * sec, many, WD_OBJ_CAP + 10);
	CHECK("objects: more disks than slots is a full table (err %d, found %u) that holds %u",
	      O->err == -34 && O->found == WD_OBJ_CAP + 10 && O->hi == WD_OBJ_CAP && dk_slot(&t, 0xb0) == 1,
	      O->err, O->found, O->hi);
	CHECK("objects: and the stats say so, for sentineld (err %d, found %u)",
	      t.stats.objs_err[SN_OBJ_DISK] == -34 && t.stats.objs_found[SN_OBJ_DISK] == WD_OBJ_CAP + 10 &&
	      t.stats.objs_err[SN_OBJ_CGROUP] == 0, t.stats.objs_err[SN_OBJ_DISK], t.stats.objs_found[SN_OBJ_DISK]);
	/* a value the object does not have (a cgroup without the controller:
	 * the metric library's KM_ABSENT NaN) is unknown, not a read error;
	 * any other NaN is one */
	union { uint64_t u; double d; } absent = {.u = 0x7ff80000000005e1ull};
	uint64_t e0 = t.stats.read_errors;
	sn_put_objs(t.w, SN_OBJ_DISK, 1, &absent.d);
	uint64_t e1 = t.stats.read_errors;
	double nan = NAN;
	sn_put_objs(t.w, SN_OBJ_DISK, 1, &nan);
	CHECK("objects: an absent value is unknown (%g) and no read error (%llu more), a failed read is one (%llu more)",
	      isnan(sn_obj(t.w, SN_OBJ_DISK, 0, 1)) && e1 == e0 && t.stats.read_errors == e1 + 1,
	      sn_obj(t.w, SN_OBJ_DISK, 0, 1), (unsigned long long)(e1 - e0), (unsigned long long)(t.stats.read_errors - e1));
	free(t.block);
}

/* A mount's labels (its filesystem type and device): read with its name,
 * compared and matched as the name is, kept through a reload; other
 * kinds have none. */
static int fs_match(sn_world *w, uint32_t f, uint32_t s, const char *pat)
{
	Rx rx;
	RxErr re;
	if (rx_compile(pat, strlen(pat), &rx, &re))
		return -1;
	int got = sn_obj_str_match(w, SN_OBJ_FS, f, s, rx.cls, rx.next, rx.nclass, rx.accept);
	rx_free(&rx);
	return got;
}

static void test_fs_labels(void)
{
	TW t[2];
	sn_world *w[2];
	char err[256];
	for (int i = 0; i < 2; i++) {
		memset(&t[i], 0, sizeof t[i]);
		t[i].b.obj_m[SN_OBJ_FS][0] = MET_FS_SIZE;
		t[i].b.nobj[SN_OBJ_FS] = 1;
		t[i].b.obj_m[SN_OBJ_DISK][0] = MET_DISK_READS;
		t[i].b.nobj[SN_OBJ_DISK] = 1;
		t[i].p = (WdParams){.tick_ns = 1000000000, .max_cpus = 1, .task_cap = 16, .ring_cap = 16};
		if (wd_layout(&t[i].b, &t[i].p, &t[i].L, err, sizeof err)) {
			CHECK("fs labels: laid out (%s)", 0, err);
			return;
		}
		t[i].block = calloc(1, t[i].L.total);
		wd_build(&t[i].b, &t[i].p, &t[i].L, NULL, t[i].block, (uint64_t)(uintptr_t)t[i].block, 0,
			 (uint64_t)(uintptr_t)&t[i].stats);
		w[i] = wd_world(t[i].block);
	}
	static const uint64_t keys[] = {0xa0, 0xb0, 0xd0, 0xe0};
	fs_n = 4;
	memcpy(fs_found, keys, sizeof keys);
	w[0]->tick = 1;
	sn_objs_find(w[0], SN_OBJ_FS);
	const sn_objs *O = &w[0]->objs[SN_OBJ_FS];
	uint32_t zt = 0, zd = 0;
	const char *ty = sn_objs_str(O, SN_STR_FSTYPE, 1, &zt), *dv = sn_objs_str(O, SN_STR_DEVICE, 1, &zd);
	CHECK("fs labels: read with the name: slot 1 %s, type %s (%u bytes), device %s (%u bytes)",
	      ty && dv && !strcmp(O->name[1], "/mb0") && !strcmp(ty, "tmpfs") && zt == SN_FS_TYPE &&
	      !strcmp(dv, "/dev/vdb0") && zd == SN_FS_DEVICE, O->name[1], ty ? ty : "-", zt, dv ? dv : "-", zd);
	int eq[6] = {sn_obj_str_eq(w[0], SN_OBJ_FS, SN_STR_FSTYPE, 0, "ext4", 4),
		     sn_obj_str_eq(w[0], SN_OBJ_FS, SN_STR_FSTYPE, 0, "ext", 3),
		     sn_obj_str_eq(w[0], SN_OBJ_FS, SN_STR_FSTYPE, 0, "ext44", 5),
		     sn_obj_str_eq(w[0], SN_OBJ_FS, SN_STR_DEVICE, 0, "/dev/vda0", 9),
		     sn_obj_str_eq(w[0], SN_OBJ_FS, SN_STR_NAME, 0, "/ma0", 4),
		     sn_obj_str_eq(w[0], SN_OBJ_FS, SN_STR_FSTYPE, 5, "ext4", 4)};
	CHECK("fs labels: == on the type, the device and the name (%d%d%d%d%d%d)",
	      eq[0] && !eq[1] && !eq[2] && eq[3] && eq[4] && !eq[5], eq[0], eq[1], eq[2], eq[3], eq[4], eq[5]);
	int m[5] = {fs_match(w[0], SN_STR_FSTYPE, 0, "ext[234]"), fs_match(w[0], SN_STR_FSTYPE, 1, "ext[234]"),
		    fs_match(w[0], SN_STR_DEVICE, 1, "/dev/vd.*"), fs_match(w[0], SN_STR_DEVICE, 2, "d{100}d{27}"),
		    fs_match(w[0], SN_STR_DEVICE, 2, "d{100}d{28}")};
	CHECK("fs labels: =~ on the type and the device; a device longer than %u bytes is cut there (%d%d%d%d%d)",
	      m[0] == 1 && m[1] == 0 && m[2] == 1 && m[3] == 1 && m[4] == 0, SN_FS_DEVICE - 1, m[0], m[1], m[2], m[3],
	      m[4]);
	dv = sn_objs_str(O, SN_STR_DEVICE, 3, &zd);
	ty = sn_objs_str(O, SN_STR_FSTYPE, 3, &zt);
	CHECK("fs labels: labels that could not be read are empty (type \"%s\", device \"%s\"), the mount kept",
	      ty && dv && !*ty && !*dv && sn_obj_on(w[0], SN_OBJ_FS, 3), ty ? ty : "-", dv ? dv : "-");
	const sn_objs *D = &w[0]->objs[SN_OBJ_DISK];
	CHECK("fs labels: other kinds have none (a disk's type: %p, == %d; a label past the kinds: %p)",
	      !sn_objs_str(D, SN_STR_FSTYPE, 0, &zt) && !sn_obj_str_eq(w[0], SN_OBJ_DISK, SN_STR_FSTYPE, 0, "", 0) &&
	      !sn_objs_str(O, SN_STR__COUNT, 0, &zt) && !D->label,
	      (const void *)sn_objs_str(D, SN_STR_FSTYPE, 0, &zt),
	      sn_obj_str_eq(w[0], SN_OBJ_DISK, SN_STR_FSTYPE, 0, "", 0), (const void *)sn_objs_str(O, SN_STR__COUNT, 0, &zt));
	/* a reload: the new world keeps the slots and their labels, not read again until the name is */
	w[1]->from = w[0];
	w[1]->rule_from = NULL;
	w[1]->hist_from = NULL;
	sn_handoff(w[1], 0, 1);
	w[1]->tick = 2;
	sn_objs_find(w[1], SN_OBJ_FS);
	ty = sn_objs_str(&w[1]->objs[SN_OBJ_FS], SN_STR_FSTYPE, 1, &zt);
	dv = sn_objs_str(&w[1]->objs[SN_OBJ_FS], SN_STR_DEVICE, 0, &zd);
	CHECK("fs labels: kept over a reload (slot 1 %s, slot 0 %s)",
	      ty && dv && !strcmp(ty, "tmpfs") && !strcmp(dv, "/dev/vda0"), ty ? ty : "-", dv ? dv : "-");
	fs_n = 0;
	free(t[0].block);
	free(t[1].block);
}

/* A restart (sentineld's state file, eng_restore): a world copied as bytes
 * after a tick, adopted at another address (wd_adopt), taken over by a new
 * world on a clock 5,000 s ahead: the firing alert keeps firing with its
 * times moved, the history its samples at their real times, and the gap
 * between is a hole.  Then copies with bytes flipped at random: adopted
 * and taken over without a crash (ASan watches), whatever they hold. */
static void test_restore(void)
{
	BdRule rules[2] = {{.name = "Fires", .group = "g", .hash = 1, .entity = -1},
			   {.name = "Quiet", .group = "g", .hash = 2, .entity = -1}};
	BdHist h = {.metric = MET_HOST_JIFFIES, .window = 60};
	Bundle b = {.nrules = 2, .rules = rules, .hist = &h, .nhist = 1, .nhost = 1};
	b.host_m[0] = MET_HOST_JIFFIES;
	WdParams p = {.tick_ns = 1000000000ull, .max_cpus = 1, .task_cap = 16, .ring_cap = 64};
	WdLayout L;
	char err[256];
	sn_stats S = {0};
	sn_ring *R = calloc(1, sizeof *R + 64 * sizeof(sn_alert));
	char *a = NULL, *saved = NULL, *c = NULL;
	if (!R || wd_layout(&b, &p, &L, err, sizeof err) || !(a = calloc(1, L.total)) || !(saved = malloc(L.total)) ||
	    !(c = calloc(1, L.total))) {
		CHECK("restore: set up%s", 0, "");
		goto out;
	}
	wd_ring_init(R, 64);
	wd_build(&b, &p, &L, NULL, a, (uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)R, (uint64_t)(uintptr_t)&S);
	sn_world *wa = wd_world(a);
	fire_n = 1;
	sm_desc = NULL;
	uint64_t t0 = 1000000000000ull;
	for (uint64_t k = 0; k < 30; k++) {
		sn_tick(wa, 0, 1, t0 + k * p.tick_ns);
		sn_put_host(wa, 0, 0, (double)k);
	}
	sn_rstate was = wa->rstate[0];
	double max_a = sn_window(wa, 0, 0, SN_W_MAX, 20), rate_a = sn_window(wa, 0, 0, SN_W_RATE, 20);
	memcpy(saved, a, L.total);
	wd_ring_drain(R, ring_take_none, NULL);
	/* the file's copy, read back elsewhere: nothing in it is trusted */
	char *copy = malloc(L.total);
	memcpy(copy, saved, L.total);
	unsigned bad = wd_adopt(copy, &b, &p, &L, (uint64_t)(uintptr_t)copy);
	wd_build(&b, &p, &L, NULL, c, (uint64_t)(uintptr_t)c, (uint64_t)(uintptr_t)R, (uint64_t)(uintptr_t)&S);
	sn_world *wc = wd_world(c);
	unsigned kept = wd_link(c, &b, &L, (uint64_t)(uintptr_t)c, &b, &p, &p, (uint64_t)(uintptr_t)copy);
	int64_t shift = 5000000000000ll;              /* the new clock is 5,000 s ahead; no gap yet */
	wc->from_saved = 1;
	wc->from_shift = shift;
	sn_handoff(wc, 0, 1);
	wc->from = NULL;
	const sn_rstate *st = &wc->rstate[0];
	CHECK("restore: adopted with no index out of range (%u), both rules kept (%u), the alert still firing, "
	      "its times moved onto the new clock (fired_at %+lld ns, true_since %+lld ns)",
	      bad == 0 && kept == 2 && st->phase == SN_FIRING && st->fired_at == was.fired_at + (uint64_t)shift &&
	      st->true_since == was.true_since + (uint64_t)shift && wc->tick == wa->tick, bad, kept,
	      (long long)(st->fired_at - was.fired_at), (long long)(st->true_since - was.true_since));
	/* 10 s of gap, then a tick: the window holds the old samples at their times */
	uint64_t now = wa->now + (uint64_t)shift + 10 * p.tick_ns;
	sn_tick(wc, 0, 1, now);
	sn_put_host(wc, 0, 0, 39.0);
	double max_c = sn_window(wc, 0, 0, SN_W_MAX, 20), rate_c = sn_window(wc, 0, 0, SN_W_RATE, 20);
	CHECK("restore: after a 10 s gap a 20 s window sees the old samples at their times and none in the gap "
	      "(max %g, was %g; rate %g, was %g)", max_c == 39.0 && max_a == 29.0 && fabs(rate_c - rate_a) < 0.2,
	      max_c, max_a, rate_c, rate_a);
	uint32_t seen[2] = {0, 0};
	wd_ring_drain(R, ring_take, seen);
	CHECK("restore: the alert went on firing, with no new event (phase %u, events %u)",
	      wc->rstate[0].phase == SN_FIRING && !seen[0] && !seen[1], wc->rstate[0].phase, seen[0] | seen[1]);
	/* garbage: random bytes flipped anywhere, 300 times */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned crashes_not = 0, flagged = 0;
	for (int it = 0; it < 300; it++) {
		memcpy(copy, saved, L.total);
		for (int f = 0; f < 1 + it % 40; f++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t off = (size_t)(x % L.total);
			copy[off] ^= (char)(x >> 56 | 1);
		}
		unsigned nb = wd_adopt(copy, &b, &p, &L, (uint64_t)(uintptr_t)copy);
		flagged += nb > 0;
		memset(c, 0, L.total);
		wd_build(&b, &p, &L, NULL, c, (uint64_t)(uintptr_t)c, (uint64_t)(uintptr_t)R, (uint64_t)(uintptr_t)&S);
		wd_link(c, &b, &L, (uint64_t)(uintptr_t)c, &b, &p, &p, (uint64_t)(uintptr_t)copy);
		wc->from_saved = 1;
		wc->from_shift = shift;
		sn_handoff(wc, 0, 1);
		wc->from = NULL;
		sn_tick(wc, 0, 1, wc->now + p.tick_ns);
		sn_put_host(wc, 0, 0, 1.0);
		sn_window(wc, 0, 0, SN_W_RATE, 20);
		wd_ring_drain(R, ring_take_none, NULL);
		crashes_not++;
	}
	CHECK("restore: 300 copies with 1 to 40 bytes flipped: each adopted and taken over, no crash (%u ran, %u "
	      "with indexes reset)", crashes_not == 300, crashes_not, flagged);
	free(copy);
out:
	fire_n = 0;
	free(R);
	free(a);
	free(saved);
	free(c);
}

/* sn_win_start (rate() and delta()'s old end, found from the spacing of
 * items) against the binary search it replaced, on histories of every
 * kind it meets: evenly spaced, with gaps (a paused target), jittered
 * ticks, buckets of a stride with their first samples anywhere inside, a
 * ring that wrapped, windows shorter than one item and longer than all. */
static uint32_t ws_search(const sn_hist *H, uint32_t len, uint64_t t1, uint64_t lim)
{
	uint32_t lo = 0, hi = len - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint32_t i = (H->pos[0] + H->cap - len + mid) % H->cap;
		uint64_t t0 = H->stride_ns ? H->bkt[i].t0 : H->ring[i].t;
		if (t1 - t0 > lim)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void test_win_start(void)
{
	enum { CAP = 300 };
	static sn_sample ring[CAP];
	static sn_bucket bkt[CAP];
	uint32_t pos, len;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned bad = 0, cases = 0;
	for (unsigned c = 0; c < 20000; c++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t r = seed >> 11;
		int bucketed = r & 1, gaps = (r >> 1) % 4 == 0, jitter = (r >> 3) & 1;
		uint64_t tick = 1000000ull * (1 + (r >> 4) % 1000), stride = bucketed ? tick * (2 + (r >> 14) % 60) : 0;
		sn_hist H = {.cap = CAP, .entities = 1, .stride_ns = stride, .pos = &pos, .len = &len};
		if (bucketed)
			H.bkt = bkt;
		else
			H.ring = ring;
		len = 1 + (uint32_t)((r >> 20) % CAP);
		pos = (uint32_t)((r >> 30) % CAP);
		uint64_t t = 1000000000000ull, sp = stride ? stride : tick;
		for (uint32_t k = 0; k < len; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t q = seed >> 11;
			uint32_t i = (pos + CAP - len + k) % CAP;
			uint64_t t0 = stride ? t / stride * stride + (jitter ? q % stride : 0) : t + (jitter ? q % (tick / 4) : 0);
			if (stride) {
				uint64_t t1 = t0 + (q >> 20) % (stride - (t0 % stride));
				bkt[i] = (sn_bucket){.t0 = t0, .t1 = t1};
			} else {
				ring[i] = (sn_sample){t0, 0};
			}
			t += sp;
			if (gaps && (q >> 40) % 16 == 0)
				t += sp * (1 + (q >> 44) % 200);       /* a pause */
		}
		uint32_t newest = (pos + CAP - 1) % CAP;
		uint64_t t0n = stride ? bkt[newest].t0 : ring[newest].t, t1 = stride ? bkt[newest].t1 : t0n;
		for (unsigned j = 0; j < 8; j++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t lim = (seed >> 11) % (sp * (uint64_t)(len + 10) * (gaps ? 4 : 1) + 1);
			uint32_t want = ws_search(&H, len, t1, lim);
			uint32_t got = sn_win_start(&H, 0, len, t0n, t1, lim, tick);
			cases++;
			bad += got != want;
		}
	}
	CHECK("the window's old end from the items' spacing = the binary search's, %u cases (gaps, jitter, buckets, "
	      "wrapped rings)", bad == 0, cases);
}

int main(void)
{
	static const double ticks[] = {0.001, 0.01, 0.1, 1, 10, 60};
	static const double windows[] = {0.2, 1, 10, 25, 30, 90, 120, 300, 1800, 3600, 86400};
	for (size_t i = 0; i < sizeof ticks / sizeof *ticks; i++)
		for (size_t j = 0; j < sizeof windows / sizeof *windows; j++) {
			double tk = ticks[i], w = windows[j];
			if (w < 2 * tk || w / tk > 4e7)      /* fewer than two samples; or too slow to simulate */
				continue;
			test_window(w, tk, false);
			if (w / tk > WD_MAX_HIST_SAMPLES)
				test_window(w, tk, true);   /* ends-only where it downsamples */
		}
	test_spike(30, 0.1);
	test_spike(3600, 1);
	test_spike(86400, 10);
	test_fit_parabola();
	/* window, tick, whole numbers, seed, a shorter window beside, two samples a tick */
	static const struct { double w, tick; int ints; uint64_t seed; double shorter; int dense; } trk[] = {
		{2, 0.1, 1, 1, 0, 0}, {2, 0.1, 0, 2, 0, 0}, {25, 0.1, 0, 3, 0, 0}, {25, 0.1, 1, 8, 7, 0},
		{60, 0.1, 1, 4, 0, 0}, {60, 0.1, 0, 5, 0, 0}, {60, 0.1, 0, 9, 10, 0}, {3600, 1, 0, 6, 0, 0},
		{3600, 1, 0, 10, 300, 0}, {86400, 10, 1, 7, 0, 0}, {2, 0.1, 0, 11, 0, 1}, {25, 0.1, 1, 12, 7, 1},
		{60, 0.1, 0, 13, 10, 1},
	};
	for (size_t i = 0; i < sizeof trk / sizeof *trk; i++)
		test_tracker(trk[i].w, trk[i].tick, trk[i].ints, trk[i].seed, trk[i].shorter, trk[i].dense);
	test_win_start();
	test_reload(10, false, 120, false, 0.1);
	test_reload(120, false, 10, false, 0.1);
	test_reload(60, false, 3600, false, 1);
	test_reload(3600, false, 600, false, 1);
	/* a rule that adds or drops the last avg/min/max over a metric turns
	 * its history from ends-only to whole buckets or back */
	test_reload(120, true, 120, false, 0.1);
	test_reload(120, false, 120, true, 0.1);
	test_reload(10, true, 120, true, 0.01);
	test_reload(3600, true, 600, true, 1);
	test_reload(3600, true, 600, false, 1);
	test_ends_kept();
	test_stride_of();
	test_carry();
	test_memory();
	test_ring(10, 16);
	test_ring(1000, 1024);
	test_ring(1000, 256);
	test_task_table();
	test_task_signal();
	test_state_machine();
	test_objects();
	test_fs_labels();
	test_restore();
	printf("%d passed, %d failed\n", passes, failures);
	return failures != 0;
}
