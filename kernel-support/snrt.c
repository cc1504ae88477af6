/* snrt.c - the evaluation runtime (see snrt.h): the read budget, the task
 * table (found by the task job, its rows and slots in phases of the tick),
 * the ticks (the host's, fed ticks), the reload, the persistent GPU kernels
 * and the fleet's.  The rest is by job in snrt_*.c: see snrt_int.h.
 *
 * Freestanding: compiled by clang for nvptx64 and for the host, linked into
 * every bundle with the metric library and the generated rule code.
 */
#include "snrt_int.h"

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
#define KM_LEAF_PARENTS 6u      /* the xarray's shift at the leaves' parents */

void sn_tasks_find(sn_world *w)
{
	sn_tasks *T = &w->tasks;
	if (simt_lane() == 0) {
		T->found = T->nleaves = T->by_list = T->level = 0;
		T->err = 0;
	}
	simt_sync();
	/* The GPU stops at the leaves' parents: a warp read 900 leaves'
	 * nodes at 50,000 tasks one round trip after another (200 us, the
	 * tick's slowest job); the scan's threads read them side by side.
	 * The host reads each leaf once, here. */
#ifdef __NVPTX__
	uint32_t stop = KM_LEAF_PARENTS;
#else
	uint32_t stop = 0;
#endif
	uint32_t level = 0;
	int r = km_pid_leaves(w->tq, w->tq_cap, w->tq_ctr, stop, &level);
	if (r >= 0) {
		if (simt_lane() == 0) {
			T->nleaves = (uint32_t)r;
			T->leaf0 = w->tq_ctr[1];
			T->level = level;
		}
	} else {
		/* the tree did not check out (changing under us, or a kernel
		 * without it): the list, one task after the other.  A walk
		 * stopped at the read budget stays stopped. */
		int n = r == KX_EBUDGET ? r : km_task_walk(w->scratch, T->cap);
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

/* The PID tree's slots a thread each: leaf i / 64's slot i % 64, or
 * with the leaves' parents queued (level 6), parent i / 4096's leaf
 * i / 64 % 64 (the 64 threads of a leaf read its node: one request for
 * the warp) and its slot i % 64.  A leaf that does not check out, or
 * the tick's read budget spent, is the tick's error: its tasks are
 * unknown, and the table keeps last tick's. */
static uint32_t sn_tp_per(uint32_t level) { return level ? 4096u : 64u; }    /* PID slots under a queued node */
static uint32_t sn_tp_slots(const sn_tasks *T) { return T->nleaves * sn_tp_per(T->level); }

static void sn_tp_scan(sn_world *w, uint32_t gt, uint32_t nt)
{
	sn_tasks *T = &w->tasks;
	uint32_t total = sn_tp_slots(T), leaf0 = T->leaf0, per = sn_tp_per(T->level);
	for (uint32_t i = gt, k = 0; i < total; i += nt, k++) {
		if (!(k & 7) && kx_spent()) {        /* the read budget (every 8th slot): the tick's task error (kx.h) */
			if (!__atomic_exchange_n(&T->err, KX_EBUDGET, __ATOMIC_RELAXED))
				__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
			break;
		}
		uint64_t node = w->tq[2 * (leaf0 + i / per)], nr = w->tq[2 * (leaf0 + i / per) + 1] + i % per;
		uint64_t leaf = node;
		if (T->level) {
			int bad = 0;
			leaf = km_pid_leaf(node, i / 64 % 64, &bad);
			if (bad && !__atomic_exchange_n(&T->err, -40, __ATOMIC_RELAXED))   /* KX_ELOOP */
				__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
			if (!leaf)
				continue;
		}
		uint32_t tgid = 0;
		uint64_t t = km_pid_task(leaf, i % 64, nr, &tgid);
		if (!t || tgid != nr)
			continue;                    /* no task, or a thread: /proc lists the leaders */
		uint32_t row = __atomic_fetch_add(&T->found, 1, __ATOMIC_RELAXED);
		if (row < T->cap) {
			w->scratch[row] = t;
			if (T->pid)
				T->pid[row] = (uint32_t)nr;
		}
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
			if (T->sig)
				T->sig[slot].pid = 0;
			for (uint32_t h = 0; h < w->nhist; h++)
				if (w->hist[h].kind == SN_ENT_TASK && slot < w->hist[h].entities)
					sn_hist_clear(&w->hist[h], slot);
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
	if (w->now - T->sig_walked > 2 * w->tick_ns)
		T->sig_epoch++;                      /* a gap: forget the kept signals */
	T->sig_walked = w->now;
	T->n = sn_tp_rows(w);
	T->cur ^= 1;
	if (T->found > T->cap && !T->err) {
		T->err = -34;                        /* KX_ERANGE: more tasks than the table holds */
		__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
	}
	sn_tp_report(w);
}

/* Row r not read: the tick's read budget was spent before it (kx.h).
 * Its values are unknown, as the budget's target error says, not last
 * tick's (which were another task's, or this one's a tick old); its
 * histories take nothing.  (A row is one thread's: no lane waits for
 * another in it, so lanes may stop at different rows.) */
static void sn_tp_cut(sn_world *w, uint32_t r)
{
	for (uint32_t s = 0; s < w->ntaskslots; s++)
		w->tasks.val[(uint64_t)s * w->tasks.cap + r] = SN_NAN;
}

#ifdef __NVPTX__
/* The budget asked every 8th row of a thread: the count is a few
 * dependent loads away, and a thread has a handful of rows */
static void sn_tp_fields(sn_world *w, uint32_t gt, uint32_t nt)
{
	uint32_t n = sn_load_volatile32(&w->tasks.n), k = 0;
	int spent = 0;
	for (uint32_t r = gt; r < n; r += nt, k++) {
		if (!(k & 7))
			spent = kx_spent();
		if (spent)
			sn_tp_cut(w, r);
		else
			rules_task_row(w, r);
	}
}
#else
/* The host: a thread's first row learns which lines of its task_struct a
 * row reads (kx_learn), then each row asks for those lines of the task
 * SN_TP_AHEAD rows on (kx_prefetch), so that a row's misses overlap the
 * rows before it instead of waiting one after the other. */
#define SN_TP_AHEAD 3u
static void sn_tp_fields(sn_world *w, uint32_t gt, uint32_t nt)
{
	uint32_t n = sn_load_volatile32(&w->tasks.n);
	if (gt >= n)
		return;
	kx_learn(w->tasks.ptr[gt]);
	if (kx_spent())
		sn_tp_cut(w, gt);
	else
		rules_task_row(w, gt);
	kx_learn(0);
	for (uint32_t r = gt + nt; r < n; r += nt) {
		uint32_t a = r + SN_TP_AHEAD * nt;
		if (kx_spent()) {
			sn_tp_cut(w, r);
			continue;
		}
		if (a < n)
			kx_prefetch(w->tasks.ptr[a]);
		rules_task_row(w, r);
	}
}
#endif

/* The phases on one thread (fed ticks; tests) */
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

/* The scan checked the task's tgid against the PID it found it by: a
 * read a row saved (the list's walk reads no PID) */
double sn_task_found_pid(const sn_world *w, uint32_t row, uint64_t task)
{
	const sn_tasks *T = &w->tasks;
	if (T->pid && !T->by_list && row < T->n)
		return (double)T->pid[row];
	return km_task_pid(task);
}
/* A task_struct's signal never changes while it lives: its slot keeps
 * the one read for the PID the scan found it by, so a row reads it once
 * in the task's life, not once a tick.  Read again for another PID in the
 * slot (a task that died and left its address to a new one between two
 * ticks), after a gap in the walks (the epoch, sn_tp_commit: long enough
 * for PIDs to wrap and an address to be taken again), and always for
 * rows without a PID (the list walk's). */
uint64_t sn_task_signal(sn_world *w, uint32_t row, uint64_t task)
{
	sn_tasks *T = &w->tasks;
	uint32_t slot = row < T->n ? T->slot[row] : SN_NO_SLOT;
	uint32_t pid = T->pid && T->sig && !T->by_list && slot < T->cap ? T->pid[row] : 0;
	if (!pid)
		return km_task_signal(task);
	sn_tsig c = T->sig[slot];
	if (c.pid == pid && c.epoch == T->sig_epoch && c.sig)
		return c.sig;
	uint64_t sig = km_task_signal(task);
	T->sig[slot] = (sn_tsig){sig, sig ? pid : 0, T->sig_epoch};
	return sig;
}

char *sn_task_comm_buf(sn_world *w, uint32_t row) { return w->tasks.comm[row < w->tasks.cap ? row : 0]; }

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

/* ---- the host's tick (the GPU runs the same phases in sn_gpu_main) --------------- */
#ifndef __NVPTX__
/* the rules, a rule a thread (the GPU's: sn_eval_parts) */
static void sn_eval_all(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	for (uint32_t r = warp; r < w->nrules; r += nwarps)
		if (w->rstate[r].phase != SN_DISABLED)
			rules_eval(w, r);
}

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
				for (uint32_t c = 0; O->label && c < SN_OBJ_LABEL; c++)
					O->label[s][c] = F->label ? F->label[i][c] : 0;
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
static void sn_copy_hist(sn_hist *dst, const sn_hist *src, uint32_t e, int64_t shift)
{
	sn_hist_clear(dst, e);
	for (uint32_t k = 0; k < src->len[e]; k++) {
		sn_bucket b = sn_hist_item(src, e, k);
		b.t0 += (uint64_t)shift;
		b.t1 += (uint64_t)shift;
		sn_hist_add(dst, e, &b);
	}
}

/* A saved world's alert state on this clock (a time of 0 is none). */
static void sn_shift_state(sn_rstate *s, int64_t shift)
{
	if (s->true_since)
		s->true_since += (uint64_t)shift;
	if (s->clear_since)
		s->clear_since += (uint64_t)shift;
	if (s->fired_at)
		s->fired_at += (uint64_t)shift;
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

/* A per-entity rule's states (the same rule, the same table size; its
 * entities' slots the same: the task table taken over, the same objects
 * table), on the rule's warp. */
static void sn_handoff_ents(sn_world *w, const sn_world *o, uint32_t r, uint32_t f, bool changed)
{
	sn_etab *T = &w->etab[r];
	const sn_etab *A = &o->etab[f];
	uint32_t lane = simt_lane(), nl = simt_nlanes();
	if (!T->cap || T->cap != A->cap || w->rstate[r].phase == SN_DISABLED)
		return;
	/* which kind: the table's slots are those of its entities */
	bool tasks = T->nslots == w->tasks.cap && A->nslots == o->tasks.cap && T->nslots != A->nslots;
	if (T->nslots != A->nslots && !(tasks && w->tasks_from))
		return;
	for (uint32_t i = lane; i < T->cap; i += nl) {
		T->e[i] = A->e[i];
		T->free[i] = A->free[i];
		if (w->from_saved)
			sn_shift_state(&T->e[i].st, w->from_shift);
		if (changed) {
			T->e[i].st.mofn_count = T->e[i].st.mofn_pos = 0;
			for (int k = 0; k < 16; k++)
				T->e[i].st.mofn[k] = 0;
		}
	}
	for (uint32_t i = lane; i < T->nslots; i += nl)
		T->emap[i] = i < A->nslots ? A->emap[i] : -1;
	if (lane == 0) {
		T->nfree = A->nfree;
		T->last_overflow = A->last_overflow;
		T->npending = A->npending;
		T->nfiring = A->nfiring;
	}
}

void sn_handoff(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	const sn_world *o = w->from;
	if (!o)
		return;
	uint32_t lane = simt_lane(), nl = simt_nlanes();
	int64_t shift = w->from_saved ? w->from_shift : 0;
	if (warp == 0 && lane == 0) {
		w->tick = o->tick;
		w->now = o->now + (uint64_t)shift;
	}
	for (uint32_t r = warp; r < w->nrules; r += nwarps) {
		int32_t f = w->rule_from[r];
		bool changed = f >= 0 && (f & SN_FROM_CHANGED);
		f &= ~SN_FROM_CHANGED;
		if (lane == 0 && f >= 0 && (uint32_t)f < o->nrules && w->rstate[r].phase != SN_DISABLED &&
		    o->rstate[f].phase != SN_DISABLED) {
			/* a changed rule keeps its alert (Prometheus keeps it by
			 * group and name) and resolves it when it no longer holds;
			 * its M-of-N window counts the new expression's ticks only */
			w->rstate[r] = o->rstate[f];
			if (w->from_saved)
				sn_shift_state(&w->rstate[r], w->from_shift);
			if (changed) {
				w->rstate[r].mofn_count = 0;
				w->rstate[r].mofn_pos = 0;
				for (int i = 0; i < 16; i++)
					w->rstate[r].mofn[i] = 0;
			}
		}
		if (f >= 0 && (uint32_t)f < o->nrules && w->etab && o->etab)
			sn_handoff_ents(w, o, r, (uint32_t)f, changed);
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
			sn_copy_hist(dst, src, e, shift);
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
			for (uint32_t c = 0; b->label && a->label && c < SN_OBJ_LABEL; c++)
				b->label[s][c] = a->label[s][c];
		}
	}
	simt_sync();
}

#ifdef __NVPTX__
/* ---- the persistent kernels ---------------------------------------------------------------------- */

static uint64_t sn_clock(void) { return __nvvm_read_ptx_sreg_globaltimer(); }

/* A restart's saved world onto the GPU's clock (snrt.h, from_saved): its
 * last tick was from_gap_ns of real time before now. */
static void sn_saved_clock(sn_world *w)
{
	if (w->from_saved == 2) {
		*(volatile int64_t *)&w->from_shift = (int64_t)(sn_clock() - w->from_gap_ns - w->from->now);
		*(volatile uint32_t *)&w->from_saved = 1;
	}
	sn_fence_system();
}

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
		for (uint32_t i = 0; i < 32; i++) {      /* every warp runs its rules whole */
			sn_pw[i].part = 0;
			sn_pw[i].nparts = 1;
		}
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

/* Job j on this warp, timed (sn_stats.job_us) */
static void sn_job_timed(sn_world *w, uint32_t j)
{
	uint64_t t0 = sn_clock();
	rules_collect(w, j);
	if (j < SN_STAT_JOBS && w->stats && simt_lane() == 0)
		w->stats->job_us[j] = (uint32_t)((sn_clock() - t0) / 1000);
}

/* The jobs but `skip` (UINT32_MAX: none), a warp each */
static void sn_collect_timed(sn_world *w, uint32_t warp, uint32_t nwarps, uint32_t skip)
{
	for (uint32_t j = warp; j < w->njobs; j += nwarps)
		if (!(w->job_off && w->job_off[j]) && j != skip)
			sn_job_timed(w, j);
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
static uint32_t sn_task_blocks(sn_world *w)
{
	uint32_t bs = (uint32_t)__nvvm_read_ptx_sreg_ntid_x(), nb = sn_nblk;
	/* read by every thread after the jobs' barrier: the same answer in
	 * all (the scan adds to found only when the tree is walked, not the
	 * list) */
	uint64_t slots = (uint64_t)sn_load_volatile32(&w->tasks.nleaves) * sn_tp_per(sn_load_volatile32(&w->tasks.level));
	if (sn_load_volatile32(&w->tasks.by_list))
		slots = sn_load_volatile32(&w->tasks.found);
	uint64_t want = (slots + bs - 1) / bs, rb = ((uint64_t)w->nrules * 32u + bs - 1) / bs;
	uint32_t nbl = (uint32_t)(want > rb ? want : rb);
	if (nbl < 1)
		nbl = 1;
	return nbl > nb ? nb : nbl;
}

static void sn_tasks_grid(sn_world *w, uint32_t warp, uint32_t nwarps, uint64_t *t)
{
	uint32_t bs = (uint32_t)__nvvm_read_ptx_sreg_ntid_x();
	uint32_t gt = warp * 32 + simt_lane();
	(void)nwarps;
	if (!w->has_tasks) {
		for (uint32_t ph = SN_PH_SCAN; ph <= SN_PH_FIELDS; ph++)
			sn_phase(w, gt, ph, t);
		return;
	}
	uint32_t nbl = sn_task_blocks(w);
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

/* Rule r on this warp, timed: the tick's slowest (SN_SYNC_SLOW) */
static void sn_eval_timed(sn_world *w, uint32_t r)
{
	uint64_t t0 = sn_clock();
	rules_eval(w, r);
	uint64_t us = (sn_clock() - t0) / 1000;
	if (simt_lane() == 0)
		__atomic_fetch_max(&w->sync[SN_SYNC_SLOW], (us > 0xffffffffu ? 0xffffffffu : us) << 32 | r,
				   __ATOMIC_RELAXED);
}

/* The rules that can run in parts (rules_split), listed in the jobs
 * phase by a warp the jobs leave idle (rules over tasks: a handful). */
static void sn_part_list(sn_world *w)
{
	uint32_t n = w->nrules, cnt = 0, lane = simt_lane();
	if (n > w->npart_rules || !w->part_list)
		n = 0;
	for (uint32_t base = 0; base < n; base += 32) {
		uint32_t r = base + lane;
		int f = r < n && w->rstate[r].phase != SN_DISABLED && rules_split(w, r);
		uint32_t m = simt_ballot(f);
		if (f)
			w->part_list[cnt + (uint32_t)__builtin_popcount(m & ((1u << lane) - 1))] = r;
		cnt += (uint32_t)__builtin_popcount(m);
	}
	if (lane == 0)
		*(volatile uint32_t *)&w->npart_split = cnt;
}

/* The rules on the GPU.  A rule over tasks on a warp of its own has
 * 1,600 rows a lane at 50,000 tasks: half a millisecond, the longest part
 * of the rules.  Every rule runs on warp r (its part 0); where the task
 * phases' warps (sn_task_blocks: they have the rows) leave more, the rules
 * that can run in parts (sn_part_list) share them, each taking P - 1 more
 * (P at most SN_PARTS_MAX; snrt_rule.c).  A warp runs one part at most,
 * so every part of a rule runs at once: the parts' meetings end. */
static void sn_eval_parts(sn_world *w, uint32_t warp, uint32_t nwarps)
{
	uint32_t n = w->nrules, s = sn_load_volatile32(&w->npart_split);
	uint32_t avail = w->has_tasks ? sn_task_blocks(w) * ((uint32_t)__nvvm_read_ptx_sreg_ntid_x() / 32) : 0;
	uint32_t P = n && s && avail > n ? 1 + (avail - n) / s : 1;
	if (P > SN_PARTS_MAX)
		P = SN_PARTS_MAX;
	if (warp == 0 && simt_lane() == 0 && w->stats)
		w->stats->rule_parts = P;
	if (P < 2 || !w->part_buf) {
		for (uint32_t r = warp; r < n; r += nwarps)
			if (w->rstate[r].phase != SN_DISABLED)
				sn_eval_timed(w, r);
		return;
	}
	uint32_t r, part;
	if (warp < n) {
		r = warp;
		part = 0;
	} else if (warp - n < s * (P - 1)) {
		r = w->part_list[(warp - n) / (P - 1)];
		part = 1 + (warp - n) % (P - 1);
	} else {
		return;
	}
	if (w->rstate[r].phase == SN_DISABLED)
		return;
	uint32_t split = part || rules_split(w, r);
	if (simt_lane() == 0) {
		SN_PW.buf = w->part_buf + (uint64_t)r * 2 * SN_MEET_VALS * SN_PARTS_MAX;
		SN_PW.arrive = &w->part_arrive[r];
		SN_PW.part = part;
		SN_PW.nparts = split ? P : 1;
		SN_PW.k = 0;
	}
	simt_sync();
	sn_eval_timed(w, r);
	simt_sync();
	if (simt_lane() == 0) {
		SN_PW.part = 0;
		SN_PW.nparts = 1;
	}
	simt_sync();
}

/* With a task job: it runs first, alone (it finds the PID tree's nodes
 * the scan reads); then the task phases run on their blocks
 * (sn_task_blocks) while the blocks they leave run the other jobs and the
 * objects' rows beside them, with a barrier of their own, and say when
 * they are done (SN_SYNC_SIDE: the rules read what they collected).  No
 * block left: the other jobs, the objects, then the task phases, in turn.
 * The objects' phase time is then the side's, jobs and objects. */
static void sn_tick_tasks_first(sn_world *w, uint32_t warp, uint32_t nwarps, uint32_t tj, uint64_t *t)
{
	uint32_t gt = warp * 32 + simt_lane(), wpb = (uint32_t)__nvvm_read_ptx_sreg_ntid_x() / 32;
	if (warp == 0 && !(w->job_off && w->job_off[tj]))
		sn_job_timed(w, tj);
	sn_grid_sync(w, nwarps);
	sn_phase(w, gt, SN_PH_JOBS, t);
	uint32_t nbl = sn_task_blocks(w), nb = sn_nblk;
	if (nbl >= nb) {
		sn_collect_timed(w, warp, nwarps, tj);
		sn_grid_sync(w, nwarps);
		sn_objs_grid(w, warp, nwarps, t);
		sn_tasks_grid(w, warp, nwarps, t);
		return;
	}
	if (sn_blk >= nbl) {
		uint64_t t0 = sn_clock();
		uint32_t sw = warp - nbl * wpb, snw = (nb - nbl) * wpb;
		sn_collect_timed(w, sw, snw, tj);
		sn_blocks_sync(&w->sync[SN_SYNC_SCOUNT], nb - nbl);
		if (sn_has_objs(w)) {
			sn_obj_rows(w, sw, snw);
			sn_blocks_sync(&w->sync[SN_SYNC_SCOUNT], nb - nbl);
		}
		if (sw == 0 && simt_lane() == 0) {
			if (w->stats)
				w->stats->phase_us[SN_PH_OBJS] = (uint32_t)((sn_clock() - t0) / 1000);
			__nvvm_membar_gl();
			*(volatile uint64_t *)&w->sync[SN_SYNC_SIDE] = w->tick;
		}
		return;
	}
	sn_tasks_grid(w, warp, nwarps, t);
	if (simt_lane() == 0)
		while (sn_load_volatile(&w->sync[SN_SYNC_SIDE]) != w->tick)
			__nvvm_nanosleep(200);
	__nvvm_membar_gl();
	simt_sync();
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
	/* the rules' parts count in anew (sn_eval_parts; none runs until the rules) */
	for (uint32_t i = warp * 32 + simt_lane(); i < w->npart_rules && w->part_arrive; i += nwarps * 32)
		w->part_arrive[i] = 0;
	if (warp == 0 && simt_lane() == 0)
		w->sync[SN_SYNC_SLOW] = 0;
	if (warp == nwarps - 1)
		sn_part_list(w);
	uint32_t tj = w->has_tasks ? w->task_job : 0;
	if (!tj) {
		sn_collect_timed(w, warp, nwarps, UINT32_MAX);
		sn_grid_sync(w, nwarps);
		sn_phase(w, warp * 32 + simt_lane(), SN_PH_JOBS, &t);
		sn_objs_grid(w, warp, nwarps, &t);
		sn_tasks_grid(w, warp, nwarps, &t);
	} else {
		sn_tick_tasks_first(w, warp, nwarps, tj - 1, &t);
	}
	sn_eval_parts(w, warp, nwarps);
	sn_grid_sync(w, nwarps);
	sn_phase(w, warp * 32 + simt_lane(), SN_PH_RULES, &t);
	if (warp || simt_lane())
		return 0;
	sn_stats *S = w->stats;
	uint64_t len = sn_clock() - w->now;
	uint64_t slow = sn_load_volatile(&w->sync[SN_SYNC_SLOW]);
	S->slow_rule = (uint32_t)slow;
	S->slow_rule_us = (uint32_t)(slow >> 32);
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
	if (w->from && w->from_saved) {
		/* a restart: the saved world's times onto this clock, its
		 * state taken over, the schedule from now */
		if (warp == 0 && simt_lane() == 0)
			sn_saved_clock(w);
		sn_grid_sync(w, nwarps);
		sn_handoff(w, warp, nwarps);
		next = sn_clock();
		sn_grid_sync(w, nwarps);
	} else if (w->from) {
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
		if (w->from_saved) {
			if (leader)
				sn_saved_clock(w);
			sn_fleet_say(gs, nblk, &k, leader, 0);
		}
		sn_handoff(w, warp, nwarps);
		sn_fleet_say(gs, nblk, &k, leader, 0);
		if (leader) {
			/* a restart's member starts its schedule now */
			w->stats->last_tick_ns = w->from_saved ? 0 : sn_load_volatile(&o->stats->last_tick_ns);
			*(volatile uint64_t *)&w->from = 0;
			w->from_saved = 0;
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
