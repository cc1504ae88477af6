/* snrt_ent.c - per-entity alerts: a state per entity whose condition
 * holds, from a fixed table per rule (snrt.h, sn_etab).
 *
 * Within a rule's warp: the rule's code evaluates every entity, lanes
 * striding, and hands each verdict to sn_ent_put, which finds the entity's
 * state through the slot map (a stable slot: the CPU, the task's table
 * slot, the object's slot; the key tells a slot's new tenant from the old
 * one) or claims a free one if the condition holds.  sn_ent_end then
 * settles the claims, steps every state in use (lanes striding over the
 * table) and gives back those whose alert ended or whose entity is gone;
 * the rule's own state is the overflow alert.
 *
 * Part of the evaluation runtime (snrt.h): see snrt_int.h.
 */
#include "snrt_int.h"

/* The slot and key of entity ent (a CPU, a task row, an object slot) of
 * kind d->vec - 1; 0 key: none. */
static uint64_t sn_ent_key(const sn_world *w, const sn_rdesc *d, uint32_t ent, uint32_t *slot)
{
	uint32_t kind = d->vec - 1;
	if (kind == SN_ENT_CPU) {
		*slot = ent;
		return ent < w->max_cpus ? (uint64_t)ent + 1 : 0;
	}
	if (kind == SN_ENT_TASK) {
		if (ent >= w->tasks.n)
			return 0;
		*slot = w->tasks.slot[ent];
		return w->tasks.ptr[ent];
	}
	uint32_t k = kind - SN_ENT_OBJ;
	if (kind < SN_ENT_OBJ || k >= SN_OBJ_KINDS || ent >= w->objs[k].cap)
		return 0;
	*slot = ent;
	return w->objs[k].key[ent];
}

static void sn_ent_clear(sn_rstate *st)
{
	char *p = (char *)st;
	for (uint32_t i = 0; i < sizeof *st; i++)
		p[i] = 0;
	st->ev_entity = -1;
	st->entity = -1;
}

int sn_ent_busy(const sn_world *w, uint32_t rule)
{
	return rule < w->nrules && w->etab && w->etab[rule].nfree < w->etab[rule].cap;
}

void sn_ent_put(sn_world *w, uint32_t rule, const sn_rdesc *d, uint32_t ent, double cond, double clear,
		double value)
{
	if (rule >= w->nrules || !w->etab || w->rstate[rule].phase == SN_DISABLED)
		return;
	sn_etab *T = &w->etab[rule];
	uint32_t slot = 0;
	uint64_t key = T->cap ? sn_ent_key(w, d, ent, &slot) : 0;
	if (!key || slot >= T->nslots)
		return;
	int32_t i = T->emap[slot];
	sn_estate *s = i >= 0 && (uint32_t)i < T->cap ? &T->e[i] : 0;
	if (s && s->key != key)
		s = 0;                       /* the slot's entity is new: the old one's state ends unseen */
	if (!s) {
		if (sn_isnan(cond) || cond == 0)
			return;                  /* no alert, no state */
		/* the table full: no claim can succeed.  A read, not the claim's
		 * atomic, which returns its answer: where every task holds (25,000
		 * of them against a cap of 100), a warp's claims waited for one
		 * round trip after another, most of the rule's time */
		if (__atomic_load_n(&T->nclaim, __ATOMIC_RELAXED) >= T->nfree) {
			__atomic_fetch_add(&T->overflow, 1, __ATOMIC_RELAXED);
			return;
		}
		uint32_t k = __atomic_fetch_add(&T->nclaim, 1, __ATOMIC_RELAXED);
		if (k >= T->nfree) {
			__atomic_fetch_add(&T->overflow, 1, __ATOMIC_RELAXED);
			return;
		}
		i = (int32_t)T->free[T->nfree - 1 - k];
		s = &T->e[i];
		sn_ent_clear(&s->st);
		s->key = key;
		s->slot = slot;
		T->emap[slot] = i;
	}
	s->seen = w->tick + 1;
	s->cond = cond;
	s->clear = clear;
	s->value = value;
	s->row = ent;
}

void sn_ent_end(sn_world *w, uint32_t rule, const sn_rdesc *d)
{
	if (!sn_part_join())
		return;                          /* a rule in parts: part 0 ends the tick */
	if (rule >= w->nrules || !w->etab || !w->etab[rule].cap || w->rstate[rule].phase == SN_DISABLED)
		return;
	sn_etab *T = &w->etab[rule];
	uint32_t lane = simt_lane(), nl = simt_nlanes();
	simt_sync();                          /* every lane's puts */
	uint32_t nfree = T->nfree, claimed = T->nclaim < nfree ? T->nclaim : nfree;
	simt_sync();                          /* (read before lane 0 changes them) */
	if (lane == 0) {
		T->nfree = nfree - claimed;
		T->nclaim = 0;
		T->last_overflow = T->overflow;
		T->overflow = 0;
		T->npending = T->nfiring = 0;
	}
	simt_sync();
	uint64_t seen = w->tick + 1;
	for (uint32_t i = lane; i < T->cap; i += nl) {
		sn_estate *s = &T->e[i];
		if (!s->key)
			continue;
		sn_rstate *st = &s->st;
		if (s->seen == seen) {
			sn_machine(w, rule, d, st, s->cond, s->clear, s->value, (int64_t)s->row);
		} else if (st->phase == SN_FIRING || st->phase == SN_PENDING) {
			/* the entity is gone (or no longer evaluated): its alert ends */
			SnEventKind k = st->phase == SN_FIRING ? SN_EV_RESOLVED : SN_EV_CANCELLED;
			st->phase = SN_INACTIVE;
			sn_machine_end(w, rule, st, k);
		} else {
			st->phase = SN_INACTIVE;
			st->mofn_count = 0;
		}
		if (st->phase == SN_PENDING)
			__atomic_fetch_add(&T->npending, 1, __ATOMIC_RELAXED);
		else if (st->phase == SN_FIRING)
			__atomic_fetch_add(&T->nfiring, 1, __ATOMIC_RELAXED);
		/* no alert, and nothing counted toward one: the state goes */
		if (st->phase == SN_INACTIVE && !(d->n_of && st->mofn_count && s->seen == seen)) {
			if (T->emap[s->slot] == (int32_t)i)
				T->emap[s->slot] = -1;
			s->key = 0;
			T->free[__atomic_fetch_add(&T->nfree, 1, __ATOMIC_RELAXED)] = i;
		}
	}
	simt_sync();
	if (lane == 0) {
		/* the overflow alert: entities that held with no state left */
		sn_rdesc od = {.pid_slot = -1};
		double n = (double)T->last_overflow;
		sn_machine(w, rule, &od, &w->rstate[rule], n > 0 ? 1.0 : 0.0, 0.0, n, SN_ENT_OVERFLOW);
	}
}
