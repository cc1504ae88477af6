/* snrt.c - the evaluation runtime (see snrt.h).
 *
 * Freestanding: compiled by clang for nvptx64 and for the host, linked into
 * every bundle with the metric library and the generated rule code.
 */
#include "snrt.h"
#include "simt.h"
#include "kx.h"

#define SN_NAN __builtin_nan("")
#define sn_isnan(x) ((x) != (x))

static uint64_t sn_load_volatile(const uint64_t *p) { return *(const volatile uint64_t *)p; }
static uint32_t sn_load_volatile32(const uint32_t *p) { return *(const volatile uint32_t *)p; }

static void sn_fence_system(void)
{
#ifdef __NVPTX__
	__nvvm_membar_sys();
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* ---- histories ------------------------------------------------------------- */

static sn_bucket sn_one(uint64_t t, double v)
{
	int known = !sn_isnan(v);
	return (sn_bucket){t, t, v, v, v, v, known ? v : 0, (uint32_t)known, 0};
}

/* Append item b (a sample is a bucket of one) to entity e's history: into
 * the newest bucket when it falls in the same stride, else as a new item.
 * Items must come oldest first. */
static void sn_hist_add(sn_hist *H, uint32_t e, const sn_bucket *b)
{
	uint32_t p = H->pos[e], len = H->len[e], cap = H->cap;
	if (!H->stride_ns) {
		sn_sample *ring = H->ring + (uint64_t)e * cap;
		if (b->t0 != b->t1) {             /* a bucket replayed into a per-tick history */
			ring[p] = (sn_sample){b->t0, b->v0};
			p = p + 1 == cap ? 0 : p + 1;
			len += len < cap;
		}
		ring[p] = (sn_sample){b->t1, b->v1};
		H->pos[e] = p + 1 == cap ? 0 : p + 1;
		H->len[e] = len + (len < cap);
		return;
	}
	sn_bucket *ring = H->bkt + (uint64_t)e * cap;
	if (len) {
		sn_bucket *l = &ring[p == 0 ? cap - 1 : p - 1];
		if (b->t0 / H->stride_ns == l->t0 / H->stride_ns && b->t0 >= l->t1) {
			l->changes += b->changes + (b->v0 != l->v1);
			l->t1 = b->t1;
			l->v1 = b->v1;
			l->min = __builtin_fmin(l->min, b->min);
			l->max = __builtin_fmax(l->max, b->max);
			l->sum += b->sum;
			l->n += b->n;
			return;
		}
	}
	ring[p] = *b;
	H->pos[e] = p + 1 == cap ? 0 : p + 1;
	H->len[e] = len + (len < cap);
}

static void sn_hist_push(sn_world *w, int32_t h, uint32_t entity, double v)
{
	if (h < 0 || (uint32_t)h >= w->nhist)
		return;
	sn_hist *H = &w->hist[h];
	if (entity >= H->entities)
		return;
	sn_bucket one = sn_one(w->now, v);
	sn_hist_add(H, entity, &one);
}

/* Item k (0: the oldest held) of entity e's history, as a bucket. */
static sn_bucket sn_hist_item(const sn_hist *H, uint32_t e, uint32_t k)
{
	uint32_t cap = H->cap, i = (H->pos[e] + cap - H->len[e] + k) % cap;
	if (H->stride_ns)
		return H->bkt[(uint64_t)e * cap + i];
	sn_sample s = H->ring[(uint64_t)e * cap + i];
	return sn_one(s.t, s.v);
}

/* The metric library's "not applicable here" (a cgroup without the
 * controller: KM_ABSENT in kmetric_int.h): unknown, but not a read error. */
#define SN_ABSENT_BITS 0x7ff80000000005e1ull

static void sn_count_error(sn_world *w, double v)
{
	union { double d; uint64_t u; } x = {.d = v};
	if (sn_isnan(v) && x.u != SN_ABSENT_BITS)
		__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
}

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

/* ---- the task table ------------------------------------------------------------- */

#define SN_TAKEN 0x80000000u

static uint32_t sn_hash(uint64_t k, uint32_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t)k & mask;
}

/* ---- finding the tasks, and their rows and slots ---------------------------------
 *
 * One warp finds (sn_tasks_find, the bundle's task job); then every thread
 * of the grid takes part in each phase below, thread gt of nt, with a
 * barrier between phases (the GPU: sn_grid_sync; the host runs them in
 * order on one thread):
 *   scan     each slot of each leaf of the PID tree: a task, a row
 *   claim    each row: its slot from the last tick's map, if it had one
 *   release  each entry of the last tick's map not claimed: its slot free
 *   alloc    each row without a slot: a free one, its histories emptied;
 *            every row into this tick's map
 *   rows     the rules' task metrics, a row per thread (rules_task_row)
 * Row order follows the threads (the host: PID order); slots, and so the
 * histories, follow the task. */
#define SN_NO_SLOT 0xffffffffu

void sn_tasks_find(sn_world *w)
{
	sn_tasks *T = &w->tasks;
	if (simt_lane() == 0) {
		T->found = T->nleaves = T->by_list = 0;
		T->err = 0;
	}
	simt_sync();
	int r = km_pid_leaves(w->tq, w->tq_cap, w->tq_ctr);
	if (r >= 0) {
		if (simt_lane() == 0) {
			T->nleaves = (uint32_t)r;
			T->leaf0 = w->tq_ctr[1];
		}
	} else {
		/* the tree did not check out (changing under us, or a kernel
		 * without it): the list, one task after the other */
		int n = km_task_walk(w->scratch, T->cap);
		if (simt_lane() == 0) {
			T->by_list = 1;
			if (n < 0) {
				T->err = n;
				__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
			} else {
				T->found = (uint32_t)n;
			}
		}
	}
	simt_sync();
}

static void sn_tp_scan(sn_world *w, uint32_t gt, uint32_t nt)
{
	sn_tasks *T = &w->tasks;
	uint32_t total = T->nleaves * 64u, leaf0 = T->leaf0;
	for (uint32_t i = gt; i < total; i += nt) {
		uint64_t leaf = w->tq[2 * (leaf0 + i / 64)], nr = w->tq[2 * (leaf0 + i / 64) + 1] + i % 64;
		uint32_t tgid = 0;
		uint64_t t = km_pid_task(leaf, i % 64, nr, &tgid);
		if (!t || tgid != nr)
			continue;                    /* no task, or a thread: /proc lists the leaders */
		uint32_t row = __atomic_fetch_add(&T->found, 1, __ATOMIC_RELAXED);
		if (row < T->cap)
			w->scratch[row] = t;
	}
}

static uint32_t sn_tp_rows(const sn_world *w)
{
	uint32_t f = sn_load_volatile32(&w->tasks.found);
	return f < w->tasks.cap ? f : w->tasks.cap;
}

static void sn_tp_claim(sn_world *w, uint32_t gt, uint32_t nt)
{
	sn_tasks *T = &w->tasks;
	if (T->err)
		return;                          /* a failed walk keeps last tick's slots */
	uint32_t mask = T->map_cap - 1, n = sn_tp_rows(w);
	uint64_t *pkey = T->key[T->cur];
	uint32_t *pms = T->mslot[T->cur];
	for (uint32_t r = gt; r < n; r += nt) {
		uint64_t a = w->scratch[r];
		uint32_t slot = SN_NO_SLOT;
		for (uint32_t i = sn_hash(a, mask), k = 0; a && k < T->map_cap && pkey[i]; i = (i + 1) & mask, k++)
			if (pkey[i] == a) {
				uint32_t old = __atomic_fetch_or(&pms[i], SN_TAKEN, __ATOMIC_RELAXED);
				if (!(old & SN_TAKEN))
					slot = old;
				break;
			}
		T->ptr[r] = a;
		T->slot[r] = slot;
		T->comm[r][0] = 0;
	}
}

static void sn_tp_release(sn_world *w, uint32_t gt, uint32_t nt)
{
	sn_tasks *T = &w->tasks;
	if (T->err)
		return;
	uint64_t *pkey = T->key[T->cur];
	uint32_t *pms = T->mslot[T->cur];
	for (uint32_t i = gt; i < T->map_cap; i += nt) {
		if (pkey[i] && !(pms[i] & SN_TAKEN)) {
			uint32_t k = __atomic_fetch_add(&T->nfree, 1, __ATOMIC_RELAXED);
			if (k < T->cap)
				T->free_slots[k] = pms[i];
		}
		pkey[i] = 0;
	}
}

static void sn_tp_alloc(sn_world *w, uint32_t gt, uint32_t nt)
{
	sn_tasks *T = &w->tasks;
	if (T->err)
		return;
	uint32_t mask = T->map_cap - 1, n = sn_tp_rows(w);
	uint64_t *key = T->key[T->cur ^ 1];
	uint32_t *ms = T->mslot[T->cur ^ 1];
	for (uint32_t r = gt; r < n; r += nt) {
		uint32_t slot = T->slot[r];
		if (slot == SN_NO_SLOT) {
			int32_t k = (int32_t)__atomic_fetch_sub(&T->nfree, 1, __ATOMIC_RELAXED);
			if (k <= 0 || k > (int32_t)T->cap)
				continue;                /* none free: the row keeps no history this tick */
			slot = T->free_slots[k - 1];
			for (uint32_t h = 0; h < w->nhist; h++)
				if (w->hist[h].kind == SN_ENT_TASK && slot < w->hist[h].entities)
					w->hist[h].len[slot] = w->hist[h].pos[slot] = 0;
			T->slot[r] = slot;
		}
		uint64_t a = T->ptr[r];
		for (uint32_t i = sn_hash(a, mask), k = 0; a && k < T->map_cap; i = (i + 1) & mask, k++) {
			uint64_t empty = 0;
			if (__atomic_compare_exchange_n(&key[i], &empty, a, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				ms[i] = slot;
				break;
			}
		}
	}
}

/* What the host shows (sentinelctl status) and warns of: a full table. */
static void sn_tp_report(sn_world *w)
{
	if (!w->stats)
		return;
	w->stats->tasks = w->tasks.n;
	w->stats->tasks_found = w->tasks.found;
	w->stats->task_err = w->tasks.err;
}

/* After alloc, before rows: one thread. */
static void sn_tp_commit(sn_world *w)
{
	sn_tasks *T = &w->tasks;
	if (T->err) {
		T->n = 0;
		sn_tp_report(w);
		return;
	}
	if ((int32_t)T->nfree < 0)
		T->nfree = 0;
	T->n = sn_tp_rows(w);
	T->cur ^= 1;
	if (T->found > T->cap && !T->err) {
		T->err = -34;                        /* KX_ERANGE: more tasks than the table holds */
		__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
	}
	sn_tp_report(w);
}

static void sn_tp_fields(sn_world *w, uint32_t gt, uint32_t nt)
{
	uint32_t n = sn_load_volatile32(&w->tasks.n);
	for (uint32_t r = gt; r < n; r += nt)
		rules_task_row(w, r);
}

uint32_t sn_tasks_begin(sn_world *w, int walked)
{
	sn_tasks *T = &w->tasks;
	T->found = walked > 0 ? (uint32_t)walked : 0;
	T->err = walked < 0 ? walked : 0;
	if (walked < 0)
		__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
	sn_tp_claim(w, 0, 1);
	sn_tp_release(w, 0, 1);
	sn_tp_alloc(w, 0, 1);
	sn_tp_commit(w);
	return T->n;
}

uint64_t sn_task_ptr(const sn_world *w, uint32_t row) { return row < w->tasks.n ? w->tasks.ptr[row] : 0; }
char *sn_task_comm_buf(sn_world *w, uint32_t row) { return w->tasks.comm[row < w->tasks.cap ? row : 0]; }

/* ---- objects (disks): found by a walk, kept in stable slots ---------------------------- */

static int sn_obj_walk(uint32_t k, uint64_t *out, uint32_t cap)
{
	switch (k) {
	case SN_OBJ_DISK: return km_disk_walk(out, cap);
	case SN_OBJ_CGROUP: return km_cgroup_walk(out, cap);
	case SN_OBJ_NET: return km_net_walk(out, cap);
	case SN_OBJ_FS: return km_fs_walk(out, cap);
	default: return -22;                     /* KX_EINVAL */
	}
}

static void sn_obj_name(uint32_t k, uint64_t key, char *out)
{
	int r = -22;
	if (k == SN_OBJ_DISK)
		r = km_disk_name(key, out);
	else if (k == SN_OBJ_CGROUP)
		r = km_cgroup_name(key, out, SN_OBJ_NAME);
	else if (k == SN_OBJ_NET)
		r = km_net_name(key, out, SN_OBJ_NAME);
	else if (k == SN_OBJ_FS)
		r = km_fs_name(key, out, SN_OBJ_NAME);
	if (r < 0)
		out[0] = 0;
	out[SN_OBJ_NAME - 1] = 0;
}

/* This tick's walk into slots, by the warp: an object keeps its slot; one
 * gone frees it; a new one takes the lowest free slot, its histories
 * emptied.  Loops run over the slots in use (hi), lanes side by side: on
 * the GPU each step is a load of the world's memory.  A failed walk keeps
 * last tick's objects (their reads fail in turn). */
static void sn_objs_assign(sn_world *w, uint32_t k, sn_objs *O, int n)
{
	uint32_t lane = simt_lane(), nl = simt_nlanes(), hi = O->hi;
	if (n < 0) {
		if (lane == 0) {
			O->err = n;
			__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
			w->stats->objs_err[k] = n;
		}
		return;
	}
	uint32_t m = (uint32_t)n < O->cap ? (uint32_t)n : O->cap;
	for (uint32_t s = lane; s < hi; s += nl)
		O->on[s] = 0;
	simt_sync();
	for (uint32_t i = lane; i < m; i += nl)        /* each object looks for its slot */
		for (uint32_t s = 0; s < hi; s++)
			if (O->key[s] && O->key[s] == O->walk[i]) {
				O->on[s] = 1;
				O->walk[i] = 0;
				break;
			}
	simt_sync();
	for (uint32_t s = lane; s < hi; s += nl)
		if (!O->on[s])
			O->key[s] = 0;
	simt_sync();
	if (lane == 0) {
		O->found = (uint32_t)n;
		O->err = (uint32_t)n > O->cap ? -34 : 0;     /* KX_ERANGE: more than the table holds */
		w->stats->objs_found[k] = O->found;
		w->stats->objs_err[k] = O->err;
		uint32_t free = 0;
		for (uint32_t i = 0; i < m; i++) {
			if (!O->walk[i])
				continue;                    /* kept its slot */
			while (free < O->cap && O->key[free])
				free++;
			if (free == O->cap)
				break;
			O->key[free] = O->walk[i];
			O->on[free] = 2;                     /* new: its name is read this tick */
			for (uint32_t h = 0; h < w->nhist; h++)
				if (w->hist[h].kind == SN_ENT_OBJ + k && free < w->hist[h].entities)
					w->hist[h].len[free] = w->hist[h].pos[free] = 0;
			if (free + 1 > hi)
				hi = free + 1;
		}
		while (hi > 0 && !O->on[hi - 1])
			hi--;
		O->hi = hi;
	}
	simt_sync();
}

void sn_objs_find(sn_world *w, uint32_t k)
{
	if (k >= SN_OBJ_KINDS || !w->objs[k].cap)
		return;
	sn_objs *O = &w->objs[k];
	int walked = sn_obj_walk(k, O->walk, O->cap);   /* the warp walks; every lane gets the count */
	simt_sync();
	sn_objs_assign(w, k, O, walked);
	/* names: a new object's now, every object's every 64 ticks (a
	 * network interface may be renamed) */
	int all = (w->tick & 63) == 0;
	for (uint32_t s = simt_lane(); s < O->hi; s += simt_nlanes())
		if (O->on[s] == 2 || (O->on[s] && all))
			sn_obj_name(k, O->key[s], O->name[s]);
	simt_sync();
}

uint64_t sn_obj_key(const sn_world *w, uint32_t k, uint32_t s)
{
	return k < SN_OBJ_KINDS && s < w->objs[k].cap && w->objs[k].on[s] ? w->objs[k].key[s] : 0;
}

static void sn_put_obj(sn_world *w, sn_objs *O, uint32_t col, uint32_t s, double v)
{
	int off = (int)(O->col_off >> (col & 63) & 1);
	if (off)
		v = SN_NAN;                          /* its rules are disabled; not a read error */
	O->val[(uint64_t)col * O->cap + s] = v;
	if (O->on[s] && !off)
		sn_count_error(w, v);
	sn_hist_push(w, O->hist[col], s, v);
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

uint32_t sn_nobjs(const sn_world *w, uint32_t k) { return k < SN_OBJ_KINDS ? w->objs[k].hi : 0; }

int sn_obj_on(const sn_world *w, uint32_t k, uint32_t s)
{
	return k < SN_OBJ_KINDS && s < w->objs[k].hi && w->objs[k].on[s];
}

double sn_obj(const sn_world *w, uint32_t k, uint32_t slot, uint32_t s)
{
	if (k >= SN_OBJ_KINDS)
		return SN_NAN;
	const sn_objs *O = &w->objs[k];
	return slot < O->nslots && s < O->cap && O->on[s] ? O->val[(uint64_t)slot * O->cap + s] : SN_NAN;
}

int sn_obj_name_eq(const sn_world *w, uint32_t k, uint32_t s, const char *str, uint32_t len)
{
	if (!sn_obj_on(w, k, s) || len >= SN_OBJ_NAME)
		return 0;
	const char *n = w->objs[k].name[s];
	for (uint32_t i = 0; i < len; i++)
		if (n[i] != str[i])
			return 0;
	return n[len] == 0;
}

/* ---- reading the tables ------------------------------------------------------------ */

double sn_host(const sn_world *w, uint32_t slot) { return slot < w->nhost ? w->host[slot] : SN_NAN; }

double sn_cpu(const sn_world *w, uint32_t slot, uint32_t cpu)
{
	return slot < w->ncpuslots && cpu < w->max_cpus ? w->cpu[(uint64_t)slot * w->max_cpus + cpu] : SN_NAN;
}

double sn_task(const sn_world *w, uint32_t slot, uint32_t row)
{
	return slot < w->ntaskslots && row < w->tasks.n ? w->tasks.val[(uint64_t)slot * w->tasks.cap + row] : SN_NAN;
}

const double *sn_task_col(const sn_world *w, uint32_t slot)
{
	return slot < w->ntaskslots ? w->tasks.val + (uint64_t)slot * w->tasks.cap : 0;
}

int sn_cpu_on(const sn_world *w, uint32_t cpu) { return cpu < w->ncpus && w->cpu_on[cpu]; }
uint32_t sn_ncpus(const sn_world *w) { return w->ncpus; }
uint32_t sn_ntasks(const sn_world *w) { return w->tasks.n; }

int64_t sn_task_pid(const sn_world *w, uint32_t row, uint32_t pid_slot)
{
	double p = sn_task(w, pid_slot, row);
	return sn_isnan(p) ? -1 : (int64_t)p;
}

int sn_task_comm_eq(const sn_world *w, uint32_t row, const char *s, uint32_t len)
{
	if (row >= w->tasks.n || len > 15)
		return 0;
	const char *c = w->tasks.comm[row];
	for (uint32_t i = 0; i < len; i++)
		if (c[i] != s[i])
			return 0;
	return c[len] == 0;
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

double sn_window(const sn_world *w, uint32_t h, uint32_t entity, uint32_t fn, double window_s)
{
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
	/* from the newest item back while items start inside the window (and
	 * its slack); the last one taken is the oldest */
	const sn_bucket newest = sn_hist_item(H, entity, len - 1);
	uint64_t win = (uint64_t)(window_s * 1e9), slack = H->slack_ns;
	sn_bucket oldest = newest;       /* the oldest item taken so far */
	double sum = newest.sum, mx = newest.max, mn = newest.min, changes = newest.changes;
	uint32_t n = newest.n, k = len - 1;
	int beyond = 0;                   /* the history reaches past the window's start */
	int line = fn == SN_W_DERIV || fn == SN_W_FIT;
	sn_fit fit = {0, 0, 0, 0, 0};
	if (line)
		sn_fit_add(&fit, &newest, newest.t1);
	if (fn == SN_W_RATE || fn == SN_W_DELTA) {
		/* only the ends count: the oldest item inside the window by
		 * binary search (items are in time order), 8 reads for 256
		 * items instead of up to 256; a rule over 50,000 tasks reads
		 * this once a task a tick */
		uint32_t lo = 0, hi = len - 1;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (newest.t1 - sn_hist_item(H, entity, mid).t0 > win + slack)
				lo = mid + 1;
			else
				hi = mid;
		}
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
	/* a window is known only once the history covers it, and spans two samples */
	uint64_t span = newest.t1 - oldest.t0;
	if (span == 0 || (span + slack < win && !beyond))
		return SN_NAN;
	switch (fn) {
	case SN_W_RATE:
		if (newest.v1 < oldest.v0)        /* a counter went back: the target rebooted */
			return SN_NAN;
		return (newest.v1 - oldest.v0) / ((double)span * 1e-9);
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

/* ---- the read budget (kx.h, kx_cur) ------------------------------------------------------- */

/* Before the tick's first read (the leader, then a barrier): its count
 * starts at 0; on the host the loaded bundle's one budget points at it
 * (the GPU's blocks point theirs at it in sn_enter). */
static void sn_budget_begin(sn_world *w)
{
	*(volatile uint64_t *)&w->reads = 0;
#ifndef __NVPTX__
	KX_CUR_VAR.reads = &w->reads;
	KX_CUR_VAR.budget = w->read_budget;
#endif
}

/* After the tick's last read (the leader): what it read, and whether it
 * was cut off. */
static void sn_budget_end(sn_world *w)
{
	sn_stats *S = w->stats;
	uint64_t r = sn_load_volatile(&w->reads);
	if (!S)
		return;
	S->reads = r;
	if (r > S->max_reads)
		S->max_reads = r;
	if (w->read_budget && r > w->read_budget)
		S->over_budget++;
}

/* ---- alerts ---------------------------------------------------------------------------- */

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
enum { SN_SYNC_COUNT, SN_SYNC_GEN, SN_SYNC_STOP, SN_SYNC_EMIT, SN_SYNC_BASE, SN_SYNC_ROOM, SN_SYNC_PCOUNT, SN_SYNC_PGEN };
_Static_assert(SN_SYNC_PGEN < SN_SYNC_N, "the world's sync words");

static void sn_emit_begin(sn_world *w)
{
	sn_ring *R = w->ring;
	if (!R)
		return;
	uint64_t head = sn_load_volatile(&R->head), tail = sn_load_volatile(&R->tail);
	w->sync[SN_SYNC_BASE] = head;
	w->sync[SN_SYNC_ROOM] = head - tail >= R->cap ? 0 : R->cap - (head - tail);
	*(volatile uint64_t *)&w->sync[SN_SYNC_EMIT] = 0;
}

static void sn_emit_end(sn_world *w)
{
	sn_ring *R = w->ring;
	if (!R)
		return;
	uint64_t n = sn_load_volatile(&w->sync[SN_SYNC_EMIT]), room = w->sync[SN_SYNC_ROOM];
	if (n > room)
		R->dropped += n - room;
	*(volatile uint64_t *)&R->head = w->sync[SN_SYNC_BASE] + (n < room ? n : room);
}

static void sn_emit(sn_world *w, uint32_t rule, SnEventKind kind, double value, const sn_rstate *st)
{
	sn_ring *R = w->ring;
	if (!R)
		return;
	/* volatile: another SM wrote them, after this one last cached the line */
	uint64_t k = __atomic_fetch_add(&w->sync[SN_SYNC_EMIT], 1, __ATOMIC_RELAXED);
	if (k >= sn_load_volatile(&w->sync[SN_SYNC_ROOM]))
		return;                              /* full: counted by sn_emit_end */
	uint64_t h = sn_load_volatile(&w->sync[SN_SYNC_BASE]) + k;
	sn_alert *a = &R->rec[h & (R->cap - 1)];
	a->time_ns = w->now;
	a->rule = rule;
	a->kind = kind;
	a->value = value;
	a->entity = st->ev_entity;
	for (uint32_t i = 0; i < SN_OBJ_NAME; i++)
		a->comm[i] = st->ev_comm[i];
	a->tick = w->tick;
	sn_fence_system();
	*(volatile uint64_t *)&a->seq = h + 1;
}

static int sn_mofn(sn_rstate *st, const sn_rdesc *d, int c)
{
	uint32_t n = d->n_of > 1024 ? 1024 : d->n_of, p = st->mofn_pos;
	uint64_t bit = 1ull << (p % 64);
	if (st->mofn[p / 64] & bit)
		st->mofn_count--;
	if (c) {
		st->mofn[p / 64] |= bit;
		st->mofn_count++;
	} else {
		st->mofn[p / 64] &= ~bit;
	}
	st->mofn_pos = p + 1 >= n ? 0 : p + 1;
	return st->mofn_count >= d->m_of;
}

/* A new pending or firing alert is about this entity (its PID and name for
 * a task row), and stays so until it resolves or is cancelled. */
static void sn_name_entity(sn_world *w, sn_rstate *st, const sn_rdesc *d, uint32_t row, int64_t entity)
{
	st->ev_entity = entity;
	for (uint32_t i = 0; i < SN_OBJ_NAME; i++)
		st->ev_comm[i] = 0;
	if (d->obj && entity >= 0) {             /* an object: its name */
		uint32_t k = d->obj - 1;
		if (k < SN_OBJ_KINDS && (uint64_t)entity < w->objs[k].cap)
			for (uint32_t i = 0; i + 1 < SN_OBJ_NAME && w->objs[k].name[entity][i]; i++)
				st->ev_comm[i] = w->objs[k].name[entity][i];
		return;
	}
	if (d->pid_slot < 0 || entity < 0)
		return;
	if (w->tasks.comm[row][0]) {            /* this tick read it already (task.comm rules, feeds) */
		for (int i = 0; i < 15; i++)
			st->ev_comm[i] = w->tasks.comm[row][i];
	} else if (km_task_comm(w->tasks.ptr[row], st->ev_comm) < 0) {
		st->ev_comm[0] = 0;
	}
	st->ev_comm[15] = 0;
}

void sn_step(sn_world *w, uint32_t rule, const sn_rdesc *d, double cond, double clear, double value,
	     int64_t entity)
{
	if (simt_lane() != 0 || rule >= w->nrules)
		return;
	sn_rstate *st = &w->rstate[rule];
	uint64_t now = w->now;
	if (st->phase == SN_DISABLED)
		return;
	st->evals++;
	if (sn_isnan(cond)) {            /* unknown: hold every timer and the phase */
		st->unknown++;
		st->cond = cond;
		return;
	}
	int c = cond != 0;
	uint32_t row = (uint32_t)entity;
	if (d->pid_slot >= 0)             /* a task row: its PID */
		entity = entity >= 0 && row < w->tasks.n ? sn_task_pid(w, row, (uint32_t)d->pid_slot) : -1;
	st->cond = c;
	st->value = value;
	st->entity = entity;
	int sat;
	if (d->n_of) {
		sat = sn_mofn(st, d, c);
	} else {
		if (c && !st->true_since)
			st->true_since = now;
		if (!c)
			st->true_since = 0;
		sat = c && now - st->true_since >= d->for_ns;
	}
	switch (st->phase) {
	case SN_INACTIVE:
	case SN_PENDING:
		if (sat) {
			st->phase = SN_FIRING;
			st->fired_at = now;
			st->clear_since = 0;
			sn_name_entity(w, st, d, row, entity);
			sn_emit(w, rule, SN_EV_FIRING, value, st);
		} else if (st->phase == SN_INACTIVE && c) {
			st->phase = SN_PENDING;
			sn_name_entity(w, st, d, row, entity);
			sn_emit(w, rule, SN_EV_PENDING, value, st);
		} else if (st->phase == SN_PENDING && (d->n_of ? st->mofn_count == 0 : !c)) {
			st->phase = SN_INACTIVE;
			sn_emit(w, rule, SN_EV_CANCELLED, value, st);
		}
		break;
	case SN_FIRING: {
		/* with clear: resolved when clear held for clear_for; without:
		 * when the firing criterion stopped holding for clear_for */
		double cl = d->has_clear ? clear : (sat ? 0.0 : 1.0);
		if (sn_isnan(cl))
			break;
		if (cl != 0) {
			if (!st->clear_since)
				st->clear_since = now;
			if (now - st->clear_since >= d->clear_for_ns) {
				st->phase = SN_INACTIVE;
				st->clear_since = 0;
				st->true_since = c ? now : 0;
				sn_emit(w, rule, SN_EV_RESOLVED, value, st);
			}
		} else {
			st->clear_since = 0;
		}
		break;
	}
	default:
		st->phase = SN_INACTIVE;
	}
}

/* ---- ticks --------------------------------------------------------------------------------- */

#ifdef __NVPTX__
/* Whether the bundle collects any object kind (the same answer everywhere:
 * the capacities are the configuration's). */
static int sn_has_objs(const sn_world *w)
{
	for (uint32_t k = 0; k < SN_OBJ_KINDS; k++)
		if (w->objs[k].cap)
			return 1;
	return 0;
}
#endif

/* The objects' rows, once the jobs found them: every (kind, slot) below
 * each kind's hi, numbered one after the other, row i on warp i % nwarps
 * (rules_obj_row skips a slot not present).  One warp doing them all made
 * 200 cgroups cost 5 ms on the H100, a chain of dependent reads. */
static void sn_obj_rows(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	uint32_t base = 0;
	for (uint32_t k = 0; k < SN_OBJ_KINDS; k++) {
		uint32_t hi = w->objs[k].cap ? sn_load_volatile32(&w->objs[k].hi) : 0;
		for (uint32_t s = (warp + nwarps - base % nwarps) % nwarps; s < hi; s += nwarps)
			rules_obj_row(w, k, s);
		base += hi;
	}
}

static void sn_eval_all(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	for (uint32_t r = warp; r < w->nrules; r += nwarps)
		if (w->rstate[r].phase != SN_DISABLED)
			rules_eval(w, r);
}

/* ---- the host's tick (the GPU runs the same phases in sn_gpu_main) --------------- */
#ifndef __NVPTX__
/* the jobs (the GPU times each: sn_collect_timed) */
static void sn_collect_all(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	for (uint32_t j = warp; j < w->njobs; j += nwarps)
		if (!w->job_off || !w->job_off[j])
			rules_collect(w, j);
}

static void sn_tp_commit_one(sn_world *w, uint32_t t, uint32_t T)
{
	(void)T;
	if (t == 0)
		sn_tp_commit(w);
}

/* the task steps, SN_STEP_SCAN to SN_STEP_ROWS */
static void (*const sn_task_steps[])(sn_world *, uint32_t, uint32_t) = {
	sn_tp_scan, sn_tp_claim, sn_tp_release, sn_tp_alloc, sn_tp_commit_one, sn_tp_fields,
};
_Static_assert(sizeof sn_task_steps / sizeof *sn_task_steps == SN_STEP_ROWS - SN_STEP_SCAN + 1, "the task steps");

/* One step of a tick for thread t of T (the CPU backend's threads, with
 * a barrier between steps): the GPU's phases, the same code. */
void sn_tick_step(sn_world *w, uint32_t step, uint32_t t, uint32_t T, uint64_t now)
{
	if (step == SN_STEP_BEGIN && t == 0) {
		w->now = now;
		w->tick++;
		sn_budget_begin(w);
		sn_emit_begin(w);
	} else if (step == SN_STEP_JOBS) {
		sn_collect_all(w, t, T);
	} else if (step == SN_STEP_OBJS) {
		sn_obj_rows(w, t, T);
	} else if (step >= SN_STEP_SCAN && step <= SN_STEP_ROWS) {
		if (w->has_tasks)
			sn_task_steps[step - SN_STEP_SCAN](w, t, T);
	} else if (step == SN_STEP_RULES) {
		sn_eval_all(w, t, T);
	} else if (step == SN_STEP_END && t == 0) {
		sn_budget_end(w);
		sn_emit_end(w);
	}
}

void sn_tick(sn_world *w, uint32_t warp, uint32_t nwarps, uint64_t now)
{
	/* one thread (the host), or a warp of lanes that run the steps in order */
	for (uint32_t step = 0; step < SN_STEPS; step++) {
		sn_tick_step(w, step, warp, nwarps, now);
		simt_sync();
	}
}

void sn_feed_tick(sn_world *w, uint64_t now, const sn_feed *f)
{
	w->now = now;
	w->tick++;
	for (uint32_t s = 0; s < w->nhost; s++)
		sn_put_host(w, s, f->host_hist[s], f->host[s]);
	sn_cpus_set(w, f->ncpus);
	for (uint32_t c = 0; c < w->max_cpus; c++)
		sn_cpu_set_online(w, c, f->cpu_on[c]);
	for (uint32_t s = 0; s < w->ncpuslots; s++)
		for (uint32_t c = 0; c < w->max_cpus; c++)
			sn_put_cpu(w, s, f->cpu_hist[s], c, f->cpu[(uint64_t)s * w->max_cpus + c]);
	uint32_t n = f->ntasks < w->tasks.cap ? f->ntasks : w->tasks.cap;
	for (uint32_t r = 0; r < n; r++)
		w->scratch[r] = f->task_key[r];
	n = sn_tasks_begin(w, (int)n);           /* keys are nonzero: row r is task r */
	for (uint32_t r = 0; r < n; r++)
		for (int i = 0; i < 16; i++)
			w->tasks.comm[r][i] = f->task_comm[r][i];
	for (uint32_t s = 0; s < f->ntaskfed && s < w->ntaskslots; s++)
		for (uint32_t r = 0; r < n; r++)
			sn_put_task(w, s, f->task_hist[s], r, f->task[(uint64_t)s * f->task_stride + r]);
	for (uint32_t r = 0; r < n; r++)
		rules_task_derive(w, r);
	for (uint32_t k = 0; k < SN_OBJ_KINDS; k++) {
		sn_objs *O = &w->objs[k];
		const struct sn_feed_objs *F = &f->objs[k];
		if (!O->cap)
			continue;
		uint32_t m = F->n < O->cap ? F->n : O->cap;
		for (uint32_t i = 0; i < m; i++)
			O->walk[i] = F->key[i];
		sn_objs_assign(w, k, O, (int)m);
		for (uint32_t i = 0; i < m; i++)
			for (uint32_t s = 0; s < O->hi; s++) {
				if (!O->on[s] || O->key[s] != F->key[i])
					continue;
				for (uint32_t c = 0; c < SN_OBJ_NAME; c++)
					O->name[s][c] = F->name[i][c];
				for (uint32_t v = 0; v < O->nslots && v < SN_OBJ_COLS; v++)
					sn_put_obj(w, O, v, s, F->val[(uint64_t)v * F->stride + i]);
				break;
			}
	}
	sn_emit_begin(w);
	sn_eval_all(w, 0, 1);
	sn_emit_end(w);
}
#endif

/* ---- reload ---------------------------------------------------------------------------------------- */

/* Entity e's history from src into dst, oldest first, re-bucketed when the
 * two keep different strides (a rule's window changed). */
static void sn_copy_hist(sn_hist *dst, const sn_hist *src, uint32_t e)
{
	dst->len[e] = dst->pos[e] = 0;
	for (uint32_t k = 0; k < src->len[e]; k++) {
		sn_bucket b = sn_hist_item(src, e, k);
		sn_hist_add(dst, e, &b);
	}
}

/* The task table from o into w (one warp): every task keeps its slot,
 * and so its histories.  The same size: a copy.  A larger table (a grown
 * one, sentineld's answer to more tasks than rows): last tick's map is
 * rehashed into the larger map, and the new slots join the free ones. */
static void sn_handoff_tasks(sn_world *w, const sn_world *o)
{
	const sn_tasks *a = &o->tasks;
	sn_tasks *b = &w->tasks;
	uint32_t lane = simt_lane(), nl = simt_nlanes();
	for (uint32_t i = lane; i < a->cap; i += nl) {
		b->ptr[i] = a->ptr[i];
		b->slot[i] = a->slot[i];
	}
	if (a->cap == b->cap) {
		for (uint32_t i = lane; i < a->map_cap; i += nl)
			for (int m = 0; m < 2; m++) {
				b->key[m][i] = a->key[m][i];
				b->mslot[m][i] = a->mslot[m][i];
			}
		for (uint32_t i = lane; i < a->cap; i += nl)
			b->free_slots[i] = a->free_slots[i];
		if (lane == 0)
			b->nfree = a->nfree;
	} else {
		/* w's maps are empty (a new world); last tick's is a's current */
		uint32_t mask = b->map_cap - 1, added = b->cap - a->cap;
		const uint64_t *akey = a->key[a->cur];
		const uint32_t *ams = a->mslot[a->cur];
		uint64_t *key = b->key[a->cur];
		uint32_t *ms = b->mslot[a->cur];
		for (uint32_t i = lane; i < a->map_cap; i += nl) {
			uint64_t k = akey[i];
			for (uint32_t j = sn_hash(k, mask), n = 0; k && n < b->map_cap; j = (j + 1) & mask, n++) {
				uint64_t empty = 0;
				if (__atomic_compare_exchange_n(&key[j], &empty, k, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
					ms[j] = ams[i];
					break;
				}
			}
		}
		/* the stack pops from the top: the old free slots first, then
		 * the new ones, lowest first */
		uint32_t nf = (int32_t)a->nfree < 0 ? 0 : a->nfree > a->cap ? a->cap : a->nfree;
		for (uint32_t i = lane; i < added; i += nl)
			b->free_slots[i] = b->cap - 1 - i;
		for (uint32_t i = lane; i < nf; i += nl)
			b->free_slots[added + i] = a->free_slots[i];
		if (lane == 0)
			b->nfree = added + nf;
	}
	if (lane == 0) {
		b->cur = a->cur;
		b->n = 0;                          /* rows are rebuilt by the next walk */
	}
}

void sn_handoff(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	const sn_world *o = w->from;
	if (!o)
		return;
	uint32_t lane = simt_lane(), nl = simt_nlanes();
	if (warp == 0 && lane == 0) {
		w->tick = o->tick;
		w->now = o->now;
	}
	for (uint32_t r = warp; r < w->nrules; r += nwarps) {
		int32_t f = w->rule_from[r];
		if (lane == 0 && f >= 0 && (uint32_t)f < o->nrules && w->rstate[r].phase != SN_DISABLED &&
		    o->rstate[f].phase != SN_DISABLED)
			w->rstate[r] = o->rstate[f];
	}
	for (uint32_t h = warp; h < w->nhist; h += nwarps) {
		int32_t f = w->hist_from[h];
		if (f < 0 || (uint32_t)f >= o->nhist)
			continue;
		const sn_hist *src = &o->hist[f];
		sn_hist *dst = &w->hist[h];
		if (src->kind != dst->kind || (dst->kind == SN_ENT_TASK && !w->tasks_from))
			continue;
		if (dst->kind >= SN_ENT_OBJ && (dst->kind - SN_ENT_OBJ >= SN_OBJ_KINDS ||
						w->objs[dst->kind - SN_ENT_OBJ].cap != o->objs[dst->kind - SN_ENT_OBJ].cap))
			continue;
		uint32_t ents = src->entities < dst->entities ? src->entities : dst->entities;
		for (uint32_t e = lane; e < ents; e += nl)
			sn_copy_hist(dst, src, e);
	}
	if (w->tasks_from && warp == (nwarps > 1 ? 1 : 0))
		sn_handoff_tasks(w, o);
	/* objects keep their slots, and so their histories */
	for (uint32_t k = warp; k < SN_OBJ_KINDS; k += nwarps) {
		sn_objs *b = &w->objs[k];
		const sn_objs *a = &o->objs[k];
		if (!b->cap || a->cap != b->cap)
			continue;
		for (uint32_t s = lane; s < a->cap; s += nl) {
			b->key[s] = a->key[s];
			b->on[s] = 0;                  /* the next walk decides */
			for (uint32_t c = 0; c < SN_OBJ_NAME; c++)
				b->name[s][c] = a->name[s][c];
		}
	}
	simt_sync();
}

#ifdef __NVPTX__
/* ---- the persistent kernels ---------------------------------------------------------------------- */

static uint64_t sn_clock(void) { return __nvvm_read_ptx_sreg_globaltimer(); }

/* This block's place among the blocks that run its world: the whole grid
 * for the one-target kernels, its group for the fleet's (sn_enter). */
static KX_SHARED uint32_t sn_blk, sn_nblk;

/* The one-target kernels read the bundle's globals, which the loader fills
 * (llview_rt.c, and rulec/core.c's table). */
extern kx_mem KX_MEM_VAR;
extern const uint64_t KX_RELO_VAR[];

/* Every thread of a block: from here the block is block blk of nblk, and
 * reads the target described by mem and relo for world w, within its
 * read budget (kx.h, kx_cur). */
static void sn_enter(uint32_t blk, uint32_t nblk, sn_world *w, const kx_mem *mem, const uint64_t *relo)
{
	if (__nvvm_read_ptx_sreg_tid_x() == 0) {
		sn_blk = blk;
		sn_nblk = nblk;
		KX_CUR_VAR.mem = mem;
		KX_CUR_VAR.relo = relo;
		KX_CUR_VAR.reads = &w->reads;
		KX_CUR_VAR.budget = w->read_budget;
	}
	__nvvm_barrier_sync(0);
}

/* The first `blocks` blocks of the world's blocks meet here (all blocks
 * are resident: the loader sizes the grid by occupancy), counting on
 * sync[0] and sync[1].  Every thread of those blocks calls it; the block
 * meets first, then its thread 0 counts in for the block, so a barrier
 * costs one atomic per block. */
static void sn_blocks_sync(uint64_t *sync, uint32_t blocks)
{
	__nvvm_barrier_sync(0);
	if (__nvvm_read_ptx_sreg_tid_x() == 0) {
		uint64_t *count = &sync[0], *gen = &sync[1];
		__nvvm_membar_gl();
		uint64_t g = sn_load_volatile(gen);
		if (__atomic_fetch_add(count, 1, __ATOMIC_RELAXED) == blocks - 1) {
			*(volatile uint64_t *)count = 0;
			__nvvm_membar_gl();
			__atomic_fetch_add(gen, 1, __ATOMIC_RELAXED);
		} else {
			while (sn_load_volatile(gen) == g)
				__nvvm_nanosleep(100);
		}
		__nvvm_membar_gl();
	}
	__nvvm_barrier_sync(0);
}

/* The task phases' blocks (sn_tasks_grid). */
static void sn_grid_sync_n(sn_world *w, uint32_t blocks) { sn_blocks_sync(&w->sync[SN_SYNC_PCOUNT], blocks); }

/* All of the world's blocks. */
static void sn_grid_sync(sn_world *w, uint32_t nwarps)
{
	(void)nwarps;
	sn_blocks_sync(&w->sync[SN_SYNC_COUNT], sn_nblk);
}

/* The jobs, each timed on its warp (sn_stats.job_us) */
static void sn_collect_timed(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	for (uint32_t j = warp; j < w->njobs; j += nwarps) {
		if (w->job_off && w->job_off[j])
			continue;
		uint64_t t0 = sn_clock();
		rules_collect(w, j);
		if (j < SN_STAT_JOBS && w->stats && simt_lane() == 0)
			w->stats->job_us[j] = (uint32_t)((sn_clock() - t0) / 1000);
	}
}

/* Thread 0, after a barrier: the phase that ended took since *t. */
static void sn_phase(sn_world *w, uint32_t gt, uint32_t ph, uint64_t *t)
{
	if (gt || !w->stats)
		return;
	uint64_t now = sn_clock();
	w->stats->phase_us[ph] = (uint32_t)((now - *t) / 1000);
	*t = now;
}

/* The objects' rows over all the world's blocks (sn_obj_rows), when the
 * bundle collects objects. */
static void sn_objs_grid(sn_world *w, uint32_t warp, uint32_t nwarps, uint64_t *t)
{
	if (sn_has_objs(w)) {
		sn_obj_rows(w, warp, nwarps);
		sn_grid_sync(w, nwarps);
	}
	sn_phase(w, warp * 32 + simt_lane(), SN_PH_OBJS, t);
}

/* The task phases (see sn_tasks_find) over the world's first blocks: as
 * many as the PID tree's slots need (a thread a slot), and at least those
 * whose warps evaluate rules, which read the rows next.  The other blocks
 * wait at the tick's last barrier: a small task table pays for a few
 * blocks' barriers, not all of them. */
static void sn_tasks_grid(sn_world *w, uint32_t warp, uint32_t nwarps, uint64_t *t)
{
	uint32_t bs = (uint32_t)__nvvm_read_ptx_sreg_ntid_x(), nb = sn_nblk;
	uint32_t gt = warp * 32 + simt_lane();
	(void)nwarps;
	if (!w->has_tasks) {
		for (uint32_t ph = SN_PH_SCAN; ph <= SN_PH_FIELDS; ph++)
			sn_phase(w, gt, ph, t);
		return;
	}
	/* read by every thread after the jobs' barrier: the same answer in all */
	uint64_t slots = (uint64_t)sn_load_volatile32(&w->tasks.nleaves) * 64u;
	if (sn_load_volatile32(&w->tasks.by_list))
		slots = sn_load_volatile32(&w->tasks.found);
	uint64_t want = (slots + bs - 1) / bs, rb = ((uint64_t)w->nrules * 32u + bs - 1) / bs;
	uint32_t nbl = (uint32_t)(want > rb ? want : rb);
	if (nbl < 1)
		nbl = 1;
	if (nbl > nb)
		nbl = nb;
	if (sn_blk >= nbl)
		return;
	uint32_t nt = nbl * bs;
	sn_tp_scan(w, gt, nt);
	sn_grid_sync_n(w, nbl);
	sn_phase(w, gt, SN_PH_SCAN, t);
	sn_tp_claim(w, gt, nt);
	sn_grid_sync_n(w, nbl);
	sn_tp_release(w, gt, nt);
	sn_grid_sync_n(w, nbl);
	sn_tp_alloc(w, gt, nt);
	sn_grid_sync_n(w, nbl);
	if (gt == 0)
		sn_tp_commit(w);
	sn_grid_sync_n(w, nbl);
	sn_phase(w, gt, SN_PH_SLOTS, t);
	sn_tp_fields(w, gt, nt);
	sn_grid_sync_n(w, nbl);
	sn_phase(w, gt, SN_PH_FIELDS, t);
}

/* The leader (the world's warp 0, lane 0): tick w begins at t, due at due. */
static void sn_tick_begin(sn_world *w, uint64_t t, uint64_t due)
{
	sn_stats *S = w->stats;
	if (t - due > w->tick_ns)
		S->late++;
	w->now = t;
	w->tick++;
	if (!S->first_tick) {
		S->first_tick = w->tick;
		S->first_tick_ns = t;
	}
	S->heartbeat++;
	sn_budget_begin(w);
	sn_emit_begin(w);
}

/* One tick of w over its blocks, begun by the leader (sn_tick_begin)
 * before a barrier: the jobs, the objects, the tasks, the rules; then the
 * leader ends it (statistics, the ring's head, the doorbell).  Returns the
 * tick's length (in the leader). */
static uint64_t sn_tick_run(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	uint64_t t = w->now;              /* thread 0's: the phases' times */
	sn_collect_timed(w, warp, nwarps);
	sn_grid_sync(w, nwarps);
	sn_phase(w, warp * 32 + simt_lane(), SN_PH_JOBS, &t);
	sn_objs_grid(w, warp, nwarps, &t);
	sn_tasks_grid(w, warp, nwarps, &t);
	sn_eval_all(w, warp, nwarps);
	sn_grid_sync(w, nwarps);
	sn_phase(w, warp * 32 + simt_lane(), SN_PH_RULES, &t);
	if (warp || simt_lane())
		return 0;
	sn_stats *S = w->stats;
	uint64_t len = sn_clock() - w->now;
	S->last_tick_ns = w->now;
	S->last_tick_len_ns = len;
	if (len > S->max_tick_len_ns)
		S->max_tick_len_ns = len;
	sn_budget_end(w);
	sn_emit_end(w);
	sn_fence_system();
	*(volatile uint64_t *)&S->ticks = w->tick;
	*(volatile uint32_t *)&S->doorbell = (uint32_t)sn_load_volatile(&w->ring->head);
	return len;
}

__attribute__((nvptx_kernel)) void sn_gpu_main(sn_world *w)
{
	sn_enter((uint32_t)__nvvm_read_ptx_sreg_ctaid_x(), (uint32_t)__nvvm_read_ptx_sreg_nctaid_x(), w, &KX_MEM_VAR,
		 KX_RELO_VAR);
	uint32_t warps_per_block = __nvvm_read_ptx_sreg_ntid_x() / 32;
	uint32_t warp = sn_blk * warps_per_block + __nvvm_read_ptx_sreg_tid_x() / 32;
	uint32_t nwarps = sn_nblk * warps_per_block;
	sn_stats *S = w->stats;
	/* a first start ticks now; a kernel resumed after a pause (the loader
	 * destroying an idle context, gpu_reap) keeps its schedule */
	uint64_t next = S->last_tick_ns ? S->last_tick_ns + w->tick_ns : sn_clock();
	if (w->from) {
		/* a reload: the old kernel stops after its stats->handoff_tick;
		 * take its state over then, and keep its schedule */
		const sn_stats *OS = w->from->stats;
		if (warp == 0 && simt_lane() == 0) {
			uint64_t h;
			while (!(h = sn_load_volatile(&OS->handoff_tick)) || sn_load_volatile(&OS->ticks) < h) {
				if (*(volatile uint32_t *)&S->stop)
					break;
				__nvvm_nanosleep(2000);
			}
		}
		sn_grid_sync(w, nwarps);
		sn_handoff(w, warp, nwarps);
		next = sn_load_volatile(&OS->last_tick_ns) + w->tick_ns;
		sn_grid_sync(w, nwarps);
	}
	for (;;) {
		/* warp 0 decides, before the barrier, whether this tick runs:
		 * every warp then reads the same answer (w->sync[SN_SYNC_STOP]) */
		if (warp == 0 && simt_lane() == 0) {
			uint64_t h = sn_load_volatile(&S->handoff_tick);
			uint64_t quit = *(volatile uint32_t *)&S->stop || (h && w->tick >= h);
			uint64_t t = sn_clock();
			while (!quit && (t = sn_clock()) < next) {
				__nvvm_nanosleep(1000);
				quit = *(volatile uint32_t *)&S->stop;
			}
			*(volatile uint64_t *)&w->sync[SN_SYNC_STOP] = quit;
			if (!quit) {
				sn_tick_begin(w, t, next);
				next += w->tick_ns;
				if (next < t)              /* far behind: skip, do not burst */
					next = t + w->tick_ns;
			}
		}
		sn_grid_sync(w, nwarps);
		if (sn_load_volatile(&w->sync[SN_SYNC_STOP]))
			break;
		sn_tick_run(w, warp, nwarps);
	}
	if (warp == 0 && simt_lane() == 0) {
		sn_fence_system();
		*(volatile uint32_t *)&S->stopped = 1;
	}
}

/* One tick on demand (tests and `sentinel-inspect metrics --backend cuda`):
 * the persistent kernel's tick, once, at now (0: the GPU's clock). */
__attribute__((nvptx_kernel)) void sn_gpu_tick(sn_world *w, uint64_t now)
{
	sn_enter((uint32_t)__nvvm_read_ptx_sreg_ctaid_x(), (uint32_t)__nvvm_read_ptx_sreg_nctaid_x(), w, &KX_MEM_VAR,
		 KX_RELO_VAR);
	uint32_t warps_per_block = __nvvm_read_ptx_sreg_ntid_x() / 32;
	uint32_t warp = sn_blk * warps_per_block + __nvvm_read_ptx_sreg_tid_x() / 32;
	uint32_t nwarps = sn_nblk * warps_per_block;
	if (warp == 0 && simt_lane() == 0) {
		uint64_t t = now ? now : sn_clock();
		sn_tick_begin(w, t, t);
	}
	sn_grid_sync(w, nwarps);
	sn_tick_run(w, warp, nwarps);
}

/* ---- the fleet kernel (snrt.h, sn_fleet) ---------------------------------------------------------- */

/* A group's words: its barrier (count, generation), two decision words
 * used in turn (a block may still read the last one when the leader writes
 * the next: it passed the barrier but has not looked yet; it has before
 * the barrier after that), and how many groups left. */
enum { SN_FL_COUNT, SN_FL_GEN, SN_FL_SAY0, SN_FL_SAY1 };
_Static_assert(SN_FL_SAY1 < SN_FLEET_SYNC, "a fleet group's sync words");

/* The leader said v; after the barrier every thread of the group reads it. */
static uint64_t sn_fleet_say(uint64_t *gs, uint32_t nblk, uint32_t *k, int leader, uint64_t v)
{
	uint64_t *say = &gs[SN_FL_SAY0 + (*k & 1)];
	++*k;
	if (leader)
		*(volatile uint64_t *)say = v;
	sn_blocks_sync(gs, nblk);
	return sn_load_volatile(say);
}

__attribute__((nvptx_kernel)) void sn_gpu_fleet(const sn_fleet *F)
{
	uint32_t g = (uint32_t)__nvvm_read_ptx_sreg_ctaid_x() / F->group_blocks;
	if (g >= F->ngroups)
		return;                           /* a block past the last group */
	uint32_t blk = (uint32_t)__nvvm_read_ptx_sreg_ctaid_x() % F->group_blocks, nblk = F->group_blocks;
	uint32_t warps_per_block = __nvvm_read_ptx_sreg_ntid_x() / 32;
	uint32_t warp = blk * warps_per_block + __nvvm_read_ptx_sreg_tid_x() / 32;
	uint32_t nwarps = nblk * warps_per_block, k = 0;
	int leader = warp == 0 && simt_lane() == 0;
	uint64_t *gs = &F->sync[(uint64_t)g * SN_FLEET_SYNC];
	sn_fleet_ctl *C = F->ctl;
	uint64_t next = 0, due = 0;
	/* the group's members are g, g + ngroups, ...: mg of them; a pass
	 * runs them from its first (the leader's choice, said to all) */
	uint32_t mg = (F->nmembers - g + F->ngroups - 1) / F->ngroups, first = 0;
	/* a reload's new fleet (the old one's kernel stopped before this
	 * launch): each member takes its old world's state and schedule over
	 * (w->from, as sn_gpu_main does), on the group's warps, once */
	for (uint32_t j = 0; j < mg; j++) {
		sn_world *w = F->m[g + j * F->ngroups].w;
		const sn_world *o = (const sn_world *)(uintptr_t)sn_load_volatile((const uint64_t *)&w->from);
		if (!o)
			continue;
		sn_handoff(w, warp, nwarps);
		sn_fleet_say(gs, nblk, &k, leader, 0);
		if (leader) {
			w->stats->last_tick_ns = sn_load_volatile(&o->stats->last_tick_ns);
			*(volatile uint64_t *)&w->from = 0;
		}
	}
	if (leader) {
		/* the group's schedule goes on from its members' (a launch
		 * after a membership change) or starts now */
		for (uint32_t i = g; i < F->nmembers; i += F->ngroups) {
			const sn_stats *S = F->m[i].w->stats;
			if (S->last_tick_ns && S->last_tick_ns + F->tick_ns > next)
				next = S->last_tick_ns + F->tick_ns;
		}
		if (!next)
			next = sn_clock();
	}
	for (;;) {
		uint64_t quit = 0;
		if (leader) {
			uint64_t t;
			quit = *(volatile uint32_t *)&C->stop;
			while (!quit && (t = sn_clock()) < next) {
				__nvvm_nanosleep(1000);
				quit = *(volatile uint32_t *)&C->stop;
			}
			due = next;
		}
		uint64_t start = sn_fleet_say(gs, nblk, &k, leader, quit ? UINT64_MAX : first);
		if (start == UINT64_MAX)
			break;
		uint32_t first_skipped = UINT32_MAX;
		for (uint32_t j = 0; j < mg; j++) {
			uint32_t at = (uint32_t)((start + j) % mg);
			const sn_fleet_member *M = &F->m[g + at * F->ngroups];
			sn_world *w = M->w;
			uint64_t skip = 0;
			if (leader) {
				/* the group's tick is over: the rest wait for the next,
				 * which starts with the first of them (else the members
				 * after a slow one would never tick: 500 targets at 10 ms
				 * never all started) */
				uint64_t t = sn_clock();
				skip = t - due >= F->tick_ns;
				if (skip) {
					w->stats->skipped++;
					w->stats->late++;
					if (first_skipped == UINT32_MAX)
						first_skipped = at;
				} else {
					sn_tick_begin(w, t, due);
				}
			}
			sn_enter(blk, nblk, w, (const kx_mem *)M->mem, M->relo);
			if (sn_fleet_say(gs, nblk, &k, leader, skip))
				continue;
			uint64_t len = sn_tick_run(w, warp, nwarps);
			if (leader && F->share_ns && len > F->share_ns)
				w->stats->over_share++;
			/* new records (their head is out: sn_tick_run's fence): ring the fleet's bell */
			if (leader && w->ring && sn_load_volatile(&w->sync[SN_SYNC_EMIT])) {
				sn_fence_system();
				__atomic_fetch_add(&C->doorbell, 1, __ATOMIC_RELAXED);
			}
		}
		if (leader) {
			uint64_t t = sn_clock(), len = t - due;
			if (first_skipped != UINT32_MAX)
				first = first_skipped;
			__atomic_fetch_add(&C->passes, 1, __ATOMIC_RELAXED);
			if (len > F->tick_ns)
				__atomic_fetch_add(&C->late_passes, 1, __ATOMIC_RELAXED);
			if (len > sn_load_volatile(&C->max_pass_ns))
				*(volatile uint64_t *)&C->max_pass_ns = len;   /* a race between groups loses a sample */
			next = due + F->tick_ns;
			if (next < t)                     /* far behind: skip, do not burst */
				next = t + F->tick_ns;
		}
	}
	if (leader) {
		sn_fence_system();
		__atomic_fetch_add(&C->stopped, 1, __ATOMIC_RELAXED);
	}
}
#endif
