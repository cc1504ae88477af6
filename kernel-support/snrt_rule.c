/* snrt_rule.c - what a rule's code reads (the value tables: sn_host,
 * sn_cpu, sn_task, ...) and the alert state machine its verdict goes
 * through (sn_step), with the entity an alert names and its record on
 * the alert ring.
 *
 * Part of the evaluation runtime (snrt.h): see snrt_int.h.
 */
#include "snrt_int.h"

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

int sn_task_comm_match(const sn_world *w, uint32_t row, const uint8_t *cls, const uint16_t *next,
		       uint32_t nclass, const uint8_t *accept)
{
	if (row >= w->tasks.n)
		return 0;
	return sn_dfa_match(w->tasks.comm[row], 16, cls, next, nclass, accept);
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
/* ---- alerts ---------------------------------------------------------------------------- */

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

void sn_machine_end(sn_world *w, uint32_t rule, sn_rstate *st, SnEventKind kind)
{
	st->true_since = st->clear_since = 0;
	sn_emit(w, rule, kind, st->value, st);
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
	if (d->obj && entity >= 0) {             /* an object: its name, and a mount's labels after it */
		uint32_t k = d->obj - 1, at = 0;
		if (k >= SN_OBJ_KINDS || (uint64_t)entity >= w->objs[k].cap)
			return;
		const sn_objs *O = &w->objs[k];
		for (; at + 1 < SN_OBJ_NAME && O->name[entity][at]; at++)
			st->ev_comm[at] = O->name[entity][at];
		/* "NAME\0FSTYPE\0DEVICE\0" while they fit (snrt.h, sn_alert.comm) */
		for (uint32_t f = SN_STR_FSTYPE; O->label && f <= SN_STR_DEVICE; f++) {
			uint32_t size, n = 0;
			const char *s = sn_objs_str(O, f, (uint32_t)entity, &size);
			while (s && n < size && s[n])
				n++;
			if (!s || at + 1 + n + 1 > SN_OBJ_NAME)
				return;
			at++;
			for (uint32_t i = 0; i < n; i++)
				st->ev_comm[at++] = s[i];
		}
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
	if (simt_lane() != 0 || rule >= w->nrules || w->rstate[rule].phase == SN_DISABLED)
		return;
#ifdef __NVPTX__
	if (SN_PW.part)
		return;                      /* every part has the verdict: part 0 steps */
#endif
	sn_machine(w, rule, d, &w->rstate[rule], cond, clear, value, entity);
}

/* One alert's state machine (a rule's, or one entity's of a per-entity
 * rule), from any lane. */
void sn_machine(sn_world *w, uint32_t rule, const sn_rdesc *d, sn_rstate *st, double cond, double clear,
		double value, int64_t entity)
{
	uint64_t now = w->now;
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

/* ---- a rule in parts ----------------------------------------------------------------
 *
 * On the GPU a rule over 50,000 tasks took half a millisecond on one warp
 * (1,600 rows a lane); sn_eval_parts (snrt.c) gives it up to
 * SN_PARTS_MAX warps, part p taking rows p x 32 + lane, stepping by
 * parts x 32.  Its code is the same: each sum, minimum or maximum over
 * entities ends in a meeting of the parts, each part's warp result then
 * reduced again, so every part goes on with the whole rule's answer. */
/* the tracker's three steps over the lanes (one on the host) */
static void sn_track_warp(double *kve, int32_t dir)
{
	double k = kve[0], K = dir > 0 ? simt_max_f64(k) : simt_min_f64(k);
	int mine = k == K;
	double E = simt_min_f64(mine ? kve[2] : __builtin_inf());
	kve[1] = simt_max_f64(mine && kve[2] == E ? kve[1] : SN_NAN);
	kve[0] = K;
	kve[2] = E;
}

#ifdef __NVPTX__
KX_SHARED sn_pwarp sn_pw[32];

uint32_t sn_row0(void) { return SN_PW.part * 32u + simt_lane(); }
uint32_t sn_rowstep(void) { return SN_PW.nparts * 32u; }

/* The parts that do not arrive within this are given up on, and the
 * meeting's answer is unknown: it cannot happen while every part's warp
 * is resident and runs no other rule (sn_eval_parts), but a wait that
 * cannot end would hang the GPU. */
#define SN_PART_WAIT_NS 2000000u

/* Meeting k of the tick: lane 0 leaves v[0..n) in the rule's buffer
 * (two rounds, k & 1: a part writes round k + 2 only once every part
 * arrived at k + 1, after it read round k), counts in, and waits for
 * every part; then x[i] in lane l is part l's v[i] (lanes past the
 * parts, part 0's).  Returns 0 where the wait was given up. */
static int sn_part_meet(const double *v, uint32_t n, double *x)
{
	uint32_t k = SN_PW.k, P = SN_PW.nparts, lane = simt_lane();
	double *buf = SN_PW.buf + (k & 1) * SN_MEET_VALS * SN_PARTS_MAX;
	uint32_t *arrive = SN_PW.arrive;
	int ok = 1;
	simt_sync();                         /* every lane read k */
	if (lane == 0) {
		SN_PW.k = k + 1;
		for (uint32_t i = 0; i < n; i++)
			*(volatile double *)&buf[i * SN_PARTS_MAX + SN_PW.part] = v[i];
		__nvvm_membar_gl();
		__atomic_fetch_add(arrive, 1, __ATOMIC_RELAXED);
		uint64_t t0 = __nvvm_read_ptx_sreg_globaltimer();
		while (*(volatile uint32_t *)arrive < P * (k + 1)) {
			if (__nvvm_read_ptx_sreg_globaltimer() - t0 > SN_PART_WAIT_NS) {
				ok = 0;
				break;
			}
		}
		__nvvm_membar_gl();
	}
	ok = simt_all(ok);
	for (uint32_t i = 0; i < n; i++)
		x[i] = *(volatile double *)&buf[i * SN_PARTS_MAX + (lane < P ? lane : 0)];
	return ok;
}

static double sn_red1(double v, uint32_t op)   /* op 0 sum, 1 min, 2 max */
{
	return op == 1 ? simt_min_f64(v) : op == 2 ? simt_max_f64(v) : simt_sum_f64(v);
}

void sn_red_n(double *v, uint32_t n, uint32_t minmask, uint32_t maxmask)
{
	double x[SN_MEET_VALS];
	n = n < SN_MEET_VALS ? n : SN_MEET_VALS;
	for (uint32_t i = 0; i < n; i++)
		v[i] = sn_red1(v[i], (minmask >> i & 1) ? 1 : (maxmask >> i & 1) ? 2 : 0);
	if (SN_PW.nparts <= 1)
		return;
	int ok = sn_part_meet(v, n, x);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t op = (minmask >> i & 1) ? 1 : (maxmask >> i & 1) ? 2 : 0;
		v[i] = !ok ? SN_NAN : sn_red1(op == 0 && simt_lane() >= SN_PW.nparts ? 0 : x[i], op);
	}
}

double sn_red_sum(double v)
{
	sn_red_n(&v, 1, 0, 0);
	return v;
}

double sn_red_min(double v)
{
	sn_red_n(&v, 1, 1, 0);
	return v;
}

double sn_red_max(double v)
{
	sn_red_n(&v, 1, 0, 1);
	return v;
}

void sn_red_track(double *kve, int32_t dir)
{
	double x[3];
	sn_track_warp(kve, dir);
	if (SN_PW.nparts <= 1)
		return;
	if (!sn_part_meet(kve, 3, x)) {
		kve[0] = kve[1] = SN_NAN;
		kve[2] = __builtin_inf();        /* no entity, value unknown */
		return;
	}
	for (uint32_t i = 0; i < 3; i++)
		kve[i] = x[i];
	sn_track_warp(kve, dir);
}

int sn_part_join(void)
{
	double x;
	if (SN_PW.nparts <= 1)
		return 1;
	sn_part_meet(&x, 0, &x);
	return SN_PW.part == 0;
}
#else
uint32_t sn_row0(void) { return simt_lane(); }
uint32_t sn_rowstep(void) { return simt_nlanes(); }
double sn_red_sum(double v) { return simt_sum_f64(v); }
double sn_red_min(double v) { return simt_min_f64(v); }
double sn_red_max(double v) { return simt_max_f64(v); }
void sn_red_n(double *v, uint32_t n, uint32_t minmask, uint32_t maxmask) { (void)v, (void)n, (void)minmask, (void)maxmask; }
void sn_red_track(double *kve, int32_t dir) { sn_track_warp(kve, dir); }
int sn_part_join(void) { return 1; }
#endif
