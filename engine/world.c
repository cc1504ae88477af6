/* world.c - lay out and initialise a bundle's memory (see world.h). */
#include "world.h"

_Static_assert(ENT_NOBJ == SN_OBJ_KINDS, "entity.def's objects are the runtime's object kinds");
_Static_assert(CAT_OBJ_NAME_MAX == SN_OBJ_NAME - 1, "an object's name");
_Static_assert(WD_MAX_HIST_SAMPLES <= 256 && WD_HIST_BUCKETS <= 256, "a tracker's deques hold ring positions in a byte");
_Static_assert(BD_HIST_TRACKS == SN_TRKS, "a history's trackers");

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t wd_take(size_t *at, size_t bytes)
{
	size_t o = *at;
	*at += (bytes + 63) & ~(size_t)63;         /* cache-line aligned pieces */
	return o;
}

/* A per-entity rule's slots: those of the kind its alerts are about. */
static uint32_t wd_ent_slots(const Bundle *b, const WdParams *p, const WdLayout *L, size_t r)
{
	int e = b->rules[r].entity;
	return e == ENT_CPU ? p->max_cpus : e == ENT_TASK ? p->task_cap : ent_is_obj(e) ? L->ocap[e - ENT_FIRST_OBJ] : 0;
}

/* Its states, slot map and free list (0: not a per-entity rule). */
static size_t wd_ent_bytes(const Bundle *b, const WdParams *p, const WdLayout *L, size_t r)
{
	const BdRule *x = b->rules ? &b->rules[r] : NULL;
	if (!x || !x->per_entity || !x->max_alerts)
		return 0;
	size_t cap = x->max_alerts;
	return ((cap * sizeof(sn_estate) + 63) & ~(size_t)63) + (((size_t)wd_ent_slots(b, p, L, r) * 4 + 63) & ~(size_t)63) +
	       ((cap * 4 + 63) & ~(size_t)63);
}

size_t wd_ent_at(const Bundle *b, const WdParams *p, const WdLayout *L, size_t r, uint32_t *cap)
{
	size_t at = L->o_ent;
	for (size_t i = 0; i < r; i++)
		at += wd_ent_bytes(b, p, L, i);
	*cap = wd_ent_bytes(b, p, L, r) ? b->rules[r].max_alerts : 0;
	return at;
}

int wd_layout(const Bundle *b, const WdParams *p, WdLayout *L, char *err, size_t n)
{
	memset(L, 0, sizeof *L);
	if (!p->tick_ns || !p->max_cpus || !p->task_cap || !p->ring_cap || (p->ring_cap & (p->ring_cap - 1))) {
		snprintf(err, n, "tick, CPUs, task capacity and a power-of-two ring size are required");
		return -EINVAL;
	}
	if (b->nhist > 64) {
		snprintf(err, n, "the bundle keeps %zu histories; this build handles 64", b->nhist);
		return -E2BIG;
	}
	size_t at = 0, cap = p->task_cap, cpus = p->max_cpus;
	uint32_t mc = 1;
	while (mc < 2 * p->task_cap)
		mc <<= 1;
	L->map_cap = mc;
	wd_take(&at, sizeof(sn_world));
	L->o_host = wd_take(&at, b->nhost * sizeof(double));
	L->o_cpu = wd_take(&at, b->ncpu * cpus * sizeof(double));
	L->o_cpu_on = wd_take(&at, cpus);
	L->o_tptr = wd_take(&at, cap * 8);
	L->o_tslot = wd_take(&at, cap * 4);
	L->o_tcomm = wd_take(&at, cap * 16);
	L->o_tval = wd_take(&at, (b->ntask + b->ntwin) * cap * sizeof(double));
	/* objects: with the value tables (eng_values copies them) */
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		size_t oc = L->ocap[k] = b->nobj[k] ? (p->obj_cap ? p->obj_cap : WD_OBJ_CAP) : 0;
		L->o_okey[k] = wd_take(&at, oc * 8);
		L->o_oon[k] = wd_take(&at, oc);
		L->o_oname[k] = wd_take(&at, oc * SN_OBJ_NAME);
		L->o_olabel[k] = wd_take(&at, k == SN_OBJ_FS ? oc * SN_OBJ_LABEL : 0);   /* a mount's fstype, device */
		L->o_oval[k] = wd_take(&at, b->nobj[k] * oc * sizeof(double));
		L->o_owalk[k] = wd_take(&at, oc * 8);
	}
	for (int i = 0; i < 2; i++) {
		L->o_tkey[i] = wd_take(&at, (size_t)mc * 8);
		L->o_tms[i] = wd_take(&at, (size_t)mc * 4);
	}
	L->o_tfree = wd_take(&at, cap * 4);
	L->o_hist = wd_take(&at, b->nhist * sizeof(sn_hist));
	size_t hb[64] = {0};                         /* each history's bytes (nhist <= 64, above) */
	for (size_t h = 0; h < b->nhist; h++) {
		Entity e = cat_metrics[b->hist[h].metric].entity;
		uint64_t win = (uint64_t)(b->hist[h].window * 1e9);
		uint64_t want = (win + p->tick_ns - 1) / p->tick_ns + 2;
		size_t item = sizeof(sn_sample), head = 0;
		if (want <= WD_MAX_HIST_SAMPLES) {
			L->hcap[h] = (uint32_t)want;
		} else if (b->hist[h].ends) {
			/* each stride's first sample, and the head; as below,
			 * WD_ENDS_ITEMS - 2 strides cover the window */
			L->hcap[h] = WD_ENDS_ITEMS;
			L->hstride[h] = (win + WD_ENDS_ITEMS - 3) / (WD_ENDS_ITEMS - 2);
			head = sizeof(sn_head);
		} else {
			/* WD_HIST_BUCKETS - 2 strides cover the window; one more
			 * reaches past its start, one is this tick's */
			L->hcap[h] = WD_HIST_BUCKETS;
			L->hstride[h] = (win + WD_HIST_BUCKETS - 3) / (WD_HIST_BUCKETS - 2);
			item = sizeof(sn_bucket);
		}
		L->hent[h] = e == ENT_HOST ? 1 : e == ENT_CPU ? (uint32_t)cpus :
			     ent_is_obj(e) ? L->ocap[e - ENT_FIRST_OBJ] : (uint32_t)cap;
		size_t bytes = (size_t)L->hent[h] * L->hcap[h] * item;
		/* a tracker a window rulec listed (none where only rate(),
		 * delta() and increase() read the metric: a per-tick history
		 * of theirs would pay a tracker's push for nothing); their
		 * deques hold ring positions in a byte */
		L->hntrk[h] = head ? 0 : b->hist[h].ntrk;
		size_t trk = (size_t)L->hent[h] * sizeof(sn_trk), dq = (size_t)L->hent[h] * 2 * L->hcap[h];
		hb[h] = bytes + (size_t)L->hent[h] * head + L->hntrk[h] * (trk + dq);
		L->hist_bytes += hb[h];
		L->o_hring[h] = wd_take(&at, bytes);
		L->o_hpos[h] = wd_take(&at, (size_t)L->hent[h] * 4);
		L->o_hlen[h] = wd_take(&at, (size_t)L->hent[h] * 4);
		L->o_hhead[h] = head ? wd_take(&at, (size_t)L->hent[h] * head) : 0;
		for (uint32_t j = 0; j < L->hntrk[h]; j++) {
			L->o_htrk[h][j] = wd_take(&at, trk);
			L->o_hdq[h][j] = wd_take(&at, dq);
		}
	}
	uint64_t hmax = p->hist_max ? p->hist_max : WD_DEFAULT_HIST_MEMORY;
	if (L->hist_bytes > hmax) {
		size_t big = 0;
		for (size_t h = 1; h < b->nhist; h++)
			if (hb[h] > hb[big])
				big = h;
		char trk[64] = "";
		if (L->hntrk[big] == 1)
			snprintf(trk, sizeof trk, " and a window's tracker");
		else if (L->hntrk[big])
			snprintf(trk, sizeof trk, " and the trackers of %u windows", L->hntrk[big]);
		snprintf(err, n, "the rules' windows need %.1f MiB of history, more than [engine] history_memory "
			 "(%.1f MiB): %s keeps %u entities x %u %s%s (%.1f MiB, the largest); raise history_memory, "
			 "lower [engine] tasks, or shorten its windows", L->hist_bytes / 1048576.0, hmax / 1048576.0,
			 cat_metrics[b->hist[big].metric].name, L->hent[big], L->hcap[big],
			 L->hstride[big] && !L->o_hhead[big] ? "buckets of 64 B" : "samples of 16 B", trk,
			 hb[big] / 1048576.0);
		return -E2BIG;
	}
	L->o_rstate = wd_take(&at, b->nrules * sizeof(sn_rstate));
	L->o_etab = wd_take(&at, b->nrules * sizeof(sn_etab));
	L->ent_bytes = 0;
	for (size_t r = 0; r < b->nrules; r++)
		L->ent_bytes += wd_ent_bytes(b, p, L, r);
	L->o_ent = wd_take(&at, L->ent_bytes);
	L->o_scratch = wd_take(&at, cap * 8);
	L->o_tpid = wd_take(&at, cap * 4);
	L->o_tsig = wd_take(&at, cap * sizeof(sn_tsig));
	L->o_tq = wd_take(&at, ((size_t)cap + WD_TQ_SPARE) * 16);
	L->o_tqctr = wd_take(&at, 8);
	L->o_sync = wd_take(&at, SN_SYNC_N * 8);
	size_t np = b->nrules <= SN_PART_RULES ? b->nrules : 0;
	L->o_partbuf = wd_take(&at, np * 2 * SN_MEET_VALS * SN_PARTS_MAX * sizeof(double));
	L->o_partarrive = wd_take(&at, np * 4);
	L->o_partlist = wd_take(&at, np * 4);
	L->o_joboff = wd_take(&at, b->njobs + 1);
	L->o_rulefrom = wd_take(&at, (b->nrules + 1) * 4);
	L->o_histfrom = wd_take(&at, (b->nhist + 1) * 4);
	L->total = at;
	L->ring_bytes = sizeof(sn_ring) + (size_t)p->ring_cap * sizeof(sn_alert);
	return 0;
}

void wd_ring_init(sn_ring *r, uint32_t cap)
{
	memset(r, 0, sizeof *r + (size_t)cap * sizeof(sn_alert));
	r->cap = cap;
}

unsigned wd_ring_drain(sn_ring *R, void (*fn)(void *ctx, const sn_alert *a), void *ctx)
{
	unsigned got = 0;
	for (;;) {
		uint64_t tail = R->tail;
		sn_alert *slot = &R->rec[tail & (R->cap - 1)];
		if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != tail + 1)
			break;                  /* not written yet */
		sn_alert a = *slot;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != tail + 1)
			continue;               /* changed under us: read it again */
		a.seq = tail + 1;
		fn(ctx, &a);
		got++;
		/* free the slot: producers read tail to see room */
		__atomic_store_n(&R->tail, tail + 1, __ATOMIC_RELEASE);
	}
	return got;
}

#define AT(o) (base + (o))

/* Every pointer and size of the block at stage for address base, all that
 * the layout decides (wd_build, wd_adopt); its tables untouched. */
static void wd_point(const Bundle *b, const WdParams *p, const WdLayout *L, const RlResult *res, void *stage,
		     uint64_t base)
{
	char *s = stage;
	sn_world *w = (sn_world *)s;
	w->abi = SN_ABI_VERSION;
	w->nrules = (uint32_t)b->nrules;
	w->njobs = (uint32_t)b->njobs;
	w->nhost = b->nhost;
	w->ncpuslots = b->ncpu;
	w->ntaskslots = b->ntask + b->ntwin;
	w->nhist = (uint32_t)b->nhist;
	w->max_cpus = p->max_cpus;
	w->tick_ns = p->tick_ns;
	w->read_budget = p->read_budget;
	w->host = (double *)(uintptr_t)AT(L->o_host);
	w->cpu = (double *)(uintptr_t)AT(L->o_cpu);
	w->cpu_on = (uint8_t *)(uintptr_t)AT(L->o_cpu_on);
	sn_tasks *T = &w->tasks;
	T->cap = p->task_cap;
	T->map_cap = L->map_cap;
	T->ptr = (uint64_t *)(uintptr_t)AT(L->o_tptr);
	T->slot = (uint32_t *)(uintptr_t)AT(L->o_tslot);
	T->comm = (char (*)[16])(uintptr_t)AT(L->o_tcomm);
	T->val = (double *)(uintptr_t)AT(L->o_tval);
	for (int i = 0; i < 2; i++) {
		T->key[i] = (uint64_t *)(uintptr_t)AT(L->o_tkey[i]);
		T->mslot[i] = (uint32_t *)(uintptr_t)AT(L->o_tms[i]);
	}
	T->free_slots = (uint32_t *)(uintptr_t)AT(L->o_tfree);
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		sn_objs *O = &w->objs[k];
		O->cap = L->ocap[k];
		O->nslots = b->nobj[k];
		O->key = (uint64_t *)(uintptr_t)AT(L->o_okey[k]);
		O->walk = (uint64_t *)(uintptr_t)AT(L->o_owalk[k]);
		O->on = (uint8_t *)(uintptr_t)AT(L->o_oon[k]);
		O->name = (char (*)[SN_OBJ_NAME])(uintptr_t)AT(L->o_oname[k]);
		O->label = k == SN_OBJ_FS && O->cap ? (char (*)[SN_OBJ_LABEL])(uintptr_t)AT(L->o_olabel[k]) : NULL;
		O->val = (double *)(uintptr_t)AT(L->o_oval[k]);
		O->col_off = 0;
		for (unsigned i = 0; i < b->nobj[k] && res; i++)
			if (!res->avail[b->obj_m[k][i]])
				O->col_off |= 1ull << i;
		for (unsigned i = 0; i < SN_OBJ_COLS; i++) {
			O->hist[i] = -1;
			for (size_t h = 0; h < b->nhist && i < b->nobj[k]; h++)
				if (b->hist[h].metric == b->obj_m[k][i])
					O->hist[i] = (int32_t)h;
		}
	}
	w->hist = (sn_hist *)(uintptr_t)AT(L->o_hist);
	sn_hist *H = (sn_hist *)(s + L->o_hist);
	for (size_t h = 0; h < b->nhist; h++) {
		Entity e = cat_metrics[b->hist[h].metric].entity;
		H[h].cap = L->hcap[h];
		H[h].entities = L->hent[h];
		H[h].kind = e == ENT_HOST ? SN_ENT_HOST : e == ENT_CPU ? SN_ENT_CPU :
			    ent_is_obj(e) ? SN_ENT_OBJ + (uint32_t)(e - ENT_FIRST_OBJ) : SN_ENT_TASK;
		H[h].stride_ns = L->hstride[h];
		uint64_t gap = L->hstride[h] > p->tick_ns ? L->hstride[h] : p->tick_ns;
		H[h].slack_ns = gap / 2;
		H[h].win_ns = (uint64_t)(b->hist[h].window * 1e9);
		H[h].stride_inv = L->hstride[h] ? 1.0 / (double)L->hstride[h] : 0;
		H[h].ring = (sn_sample *)(uintptr_t)AT(L->o_hring[h]);
		H[h].pos = (uint32_t *)(uintptr_t)AT(L->o_hpos[h]);
		H[h].len = (uint32_t *)(uintptr_t)AT(L->o_hlen[h]);
		H[h].head = L->o_hhead[h] ? (sn_head *)(uintptr_t)AT(L->o_hhead[h]) : NULL;
		H[h].ntrk = L->hntrk[h];
		for (uint32_t j = 0; j < L->hntrk[h]; j++) {
			H[h].trk_win[j] = (uint64_t)(b->hist[h].trk[j] * 1e9);
			H[h].trk[j] = (sn_trk *)(uintptr_t)AT(L->o_htrk[h][j]);
			H[h].dq[j] = (uint8_t *)(uintptr_t)AT(L->o_hdq[h][j]);
		}
	}
	w->rstate = (sn_rstate *)(uintptr_t)AT(L->o_rstate);
	w->etab = (sn_etab *)(uintptr_t)AT(L->o_etab);
	sn_etab *et = (sn_etab *)(s + L->o_etab);
	for (size_t r = 0, at = L->o_ent; r < b->nrules; r++) {
		size_t bytes = wd_ent_bytes(b, p, L, r);
		sn_etab *E = &et[r];
		if (!bytes) {
			*E = (sn_etab){0};
			continue;
		}
		E->cap = b->rules[r].max_alerts;
		E->nslots = wd_ent_slots(b, p, L, r);
		size_t o_e = at, o_map = o_e + ((E->cap * sizeof(sn_estate) + 63) & ~(size_t)63);
		size_t o_free = o_map + (((size_t)E->nslots * 4 + 63) & ~(size_t)63);
		E->e = (sn_estate *)(uintptr_t)AT(o_e);
		E->emap = (int32_t *)(uintptr_t)AT(o_map);
		E->free = (uint32_t *)(uintptr_t)AT(o_free);
		at += bytes;
	}
	w->scratch = (uint64_t *)(uintptr_t)AT(L->o_scratch);
	w->tasks.pid = (uint32_t *)(uintptr_t)AT(L->o_tpid);
	w->tasks.sig = (sn_tsig *)(uintptr_t)AT(L->o_tsig);
	w->tq = (uint64_t *)(uintptr_t)AT(L->o_tq);
	w->tq_ctr = (uint32_t *)(uintptr_t)AT(L->o_tqctr);
	w->tq_cap = p->task_cap + WD_TQ_SPARE;
	w->sync = (uint64_t *)(uintptr_t)AT(L->o_sync);
	w->npart_rules = b->nrules <= SN_PART_RULES ? (uint32_t)b->nrules : 0;
	w->part_buf = w->npart_rules ? (double *)(uintptr_t)AT(L->o_partbuf) : NULL;
	w->part_arrive = w->npart_rules ? (uint32_t *)(uintptr_t)AT(L->o_partarrive) : NULL;
	w->part_list = w->npart_rules ? (uint32_t *)(uintptr_t)AT(L->o_partlist) : NULL;
	w->job_off = (uint8_t *)(uintptr_t)AT(L->o_joboff);
	w->rule_from = (int32_t *)(uintptr_t)AT(L->o_rulefrom);
	w->hist_from = (int32_t *)(uintptr_t)AT(L->o_histfrom);
}

void wd_build(const Bundle *b, const WdParams *p, const WdLayout *L, const RlResult *res, void *stage,
	      uint64_t base, uint64_t ring, uint64_t stats)
{
	char *s = stage;
	sn_world *w = (sn_world *)s;
	wd_point(b, p, L, res, stage, base);
	uint32_t *fs = (uint32_t *)(s + L->o_tfree);
	for (uint32_t i = 0; i < p->task_cap; i++)
		fs[i] = p->task_cap - 1 - i;           /* slot 0 is taken first */
	w->tasks.nfree = p->task_cap;
	/* nothing read yet: NaN, so a rule never sees a zero that was not read */
	double *hv = (double *)(s + L->o_host), *cv = (double *)(s + L->o_cpu), *tv = (double *)(s + L->o_tval);
	for (size_t i = 0; i < b->nhost; i++)
		hv[i] = NAN;
	for (size_t i = 0; i < (size_t)b->ncpu * p->max_cpus; i++)
		cv[i] = NAN;
	for (size_t i = 0; i < (size_t)(b->ntask + b->ntwin) * p->task_cap; i++)
		tv[i] = NAN;
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		double *ov = (double *)(s + L->o_oval[k]);
		for (size_t i = 0; i < (size_t)b->nobj[k] * L->ocap[k]; i++)
			ov[i] = NAN;
	}
	sn_rstate *rs = (sn_rstate *)(s + L->o_rstate);
	for (size_t r = 0; r < b->nrules; r++) {
		rs[r].value = rs[r].cond = NAN;
		rs[r].entity = -1;
		if (res && rl_rule_blocked(b, res, r, NULL))
			rs[r].phase = SN_DISABLED;
	}
	sn_etab *et = (sn_etab *)(s + L->o_etab);
	for (size_t r = 0; r < b->nrules; r++) {
		sn_etab *E = &et[r];
		if (!E->cap)
			continue;
		E->nfree = E->cap;
		int32_t *map = (int32_t *)(s + ((uint64_t)(uintptr_t)E->emap - base));
		for (uint32_t i = 0; i < E->nslots; i++)
			map[i] = -1;
		uint32_t *fr = (uint32_t *)(s + ((uint64_t)(uintptr_t)E->free - base));
		for (uint32_t i = 0; i < E->cap; i++)
			fr[i] = E->cap - 1 - i;         /* state 0 is taken first */
	}
	w->ring = (sn_ring *)(uintptr_t)ring;
	w->stats = (sn_stats *)(uintptr_t)stats;
	uint8_t *off = (uint8_t *)(s + L->o_joboff);
	for (size_t j = 0; j < b->njobs && res; j++) {
		const BdJob *J = &b->jobs[j];
		bool ok = true;
		if (J->kind == BD_JOB_HOST || J->kind == BD_JOB_CPU)
			ok = res->avail[J->metric];
		else if (J->kind == BD_JOB_OBJS)        /* its unavailable metrics: sn_objs.col_off */
			ok = J->obj >= 0 && (unsigned)J->obj < SN_OBJ_KINDS && rl_entry_ok(b, res, rl_obj_fn(ENT_FIRST_OBJ + J->obj, "walk")) &&
			     rl_entry_ok(b, res, rl_obj_fn(ENT_FIRST_OBJ + J->obj, "name"));
		else if (J->kind == BD_JOB_TASKS)
			ok = rl_entry_ok(b, res, "km_task_walk");   /* the tree is tried first, the list is the floor */
		else
			ok = rl_entry_ok(b, res, "km_cpu_ids") && rl_entry_ok(b, res, "km_cpu_online");
		off[j] = !ok;
	}
	for (size_t j = 0; j < b->njobs; j++)
		if (b->jobs[j].kind == BD_JOB_TASKS && !off[j]) {
			w->has_tasks = 1;
			w->task_job = (uint32_t)j + 1;
		}
}

#define MOVE(p) ((p) = (void *)(uintptr_t)((uint64_t)(uintptr_t)(p) - from + to))

/* The value tables' pointers: what wd_rebase and wd_rebase_values share. */
static void wd_move_values(sn_world *w, uint64_t from, uint64_t to)
{
	MOVE(w->host);
	MOVE(w->cpu);
	MOVE(w->cpu_on);
	MOVE(w->tasks.ptr);
	MOVE(w->tasks.slot);
	MOVE(w->tasks.comm);
	MOVE(w->tasks.val);
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		MOVE(w->objs[k].key);
		MOVE(w->objs[k].on);
		MOVE(w->objs[k].name);
		if (w->objs[k].label)
			MOVE(w->objs[k].label);
		MOVE(w->objs[k].val);
		MOVE(w->objs[k].walk);
	}
}

void wd_rebase(void *block, const Bundle *b, const WdLayout *L, uint64_t from, uint64_t to)
{
	sn_world *w = block;
	wd_move_values(w, from, to);
	for (int i = 0; i < 2; i++) {
		MOVE(w->tasks.key[i]);
		MOVE(w->tasks.mslot[i]);
	}
	MOVE(w->tasks.free_slots);
	MOVE(w->hist);
	sn_hist *H = (sn_hist *)((char *)block + L->o_hist);
	for (size_t h = 0; h < b->nhist; h++) {
		MOVE(H[h].ring);
		MOVE(H[h].pos);
		MOVE(H[h].len);
		if (H[h].head)
			MOVE(H[h].head);
		for (uint32_t j = 0; j < L->hntrk[h]; j++) {
			MOVE(H[h].trk[j]);
			MOVE(H[h].dq[j]);
		}
	}
	MOVE(w->rstate);
	sn_etab *et = (sn_etab *)((char *)block + L->o_etab);
	for (size_t r = 0; r < b->nrules; r++)
		if (et[r].cap) {
			MOVE(et[r].e);
			MOVE(et[r].emap);
			MOVE(et[r].free);
		}
	MOVE(w->etab);
	MOVE(w->scratch);
	MOVE(w->tasks.pid);
	MOVE(w->tasks.sig);
	MOVE(w->tq);
	MOVE(w->tq_ctr);
	MOVE(w->sync);
	if (w->npart_rules) {
		MOVE(w->part_buf);
		MOVE(w->part_arrive);
		MOVE(w->part_list);
	}
	MOVE(w->job_off);
	MOVE(w->rule_from);
	MOVE(w->hist_from);
}
#undef MOVE

void wd_rebase_values(void *block, uint64_t from, uint64_t to)
{
	sn_world *w = block;
	wd_move_values(w, from, to);
	for (int i = 0; i < 2; i++) {
		w->tasks.key[i] = NULL;
		w->tasks.mslot[i] = NULL;
	}
	w->tasks.free_slots = NULL;
	w->tasks.pid = NULL;
	w->tasks.sig = NULL;
	w->hist = NULL;
	w->rstate = NULL;
	w->etab = NULL;
	w->scratch = NULL;
	w->tq = NULL;
	w->tq_ctr = NULL;
	w->sync = NULL;
	w->part_buf = NULL;
	w->part_arrive = NULL;
	w->part_list = NULL;
	w->job_off = NULL;
	w->rule_from = NULL;
	w->hist_from = NULL;
	w->ring = NULL;
	w->stats = NULL;
	w->from = NULL;
}

/* An index read from a saved block: i when it is under cap, else bad. */
static uint32_t wd_under(uint32_t i, uint32_t cap, unsigned *bad)
{
	if (i < cap)
		return i;
	++*bad;
	return 0;
}

unsigned wd_adopt(void *block, const Bundle *b, const WdParams *p, const WdLayout *L, uint64_t at)
{
	sn_world *w = block;
	sn_world was = *w;
	unsigned bad = 0;
	size_t nr = b->nrules;
	sn_etab *et = (sn_etab *)((char *)block + L->o_etab);
	sn_etab *et_was = malloc((nr ? nr : 1) * sizeof *et_was);
	if (!et_was)
		return ~0u;
	memcpy(et_was, et, nr * sizeof *et);
	wd_point(b, p, L, NULL, block, at);
	char *s = block;
	/* what the ticks change in the headers, in range */
	w->tick = was.tick;
	w->now = was.now;
	w->ring = NULL;
	w->stats = NULL;
	w->from = NULL;
	w->from_saved = 0;
	sn_tasks *T = &w->tasks;
	T->nfree = (int32_t)was.tasks.nfree < 0 ? 0 : was.tasks.nfree > T->cap ? (bad++, T->cap) : was.tasks.nfree;
	T->cur = was.tasks.cur & 1;
	T->n = 0;
	uint32_t *slot = (uint32_t *)(s + L->o_tslot), *fs = (uint32_t *)(s + L->o_tfree);
	for (uint32_t i = 0; i < T->cap; i++) {
		slot[i] = wd_under(slot[i], T->cap, &bad);
		fs[i] = wd_under(fs[i], T->cap, &bad);
	}
	/* a saved task's signal is not trusted across the gap: its address
	 * and PID may both have been taken again (sn_task_signal reads anew) */
	memset(s + L->o_tsig, 0, (size_t)T->cap * sizeof(sn_tsig));
	for (int m = 0; m < 2; m++) {
		uint32_t *ms = (uint32_t *)(s + L->o_tms[m]);
		for (uint32_t i = 0; i < T->map_cap; i++)
			ms[i] = (ms[i] & 0x80000000u) | wd_under(ms[i] & 0x7fffffffu, T->cap, &bad);
	}
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		sn_objs *O = &w->objs[k];
		O->hi = was.objs[k].hi > O->cap ? (bad++, O->cap) : was.objs[k].hi;
		for (uint32_t i = 0; i < O->cap; i++) {
			char *nm = s + L->o_oname[k] + (size_t)i * SN_OBJ_NAME;
			nm[SN_OBJ_NAME - 1] = 0;
		}
	}
	sn_hist *H = (sn_hist *)(s + L->o_hist);
	for (size_t h = 0; h < b->nhist; h++) {
		uint32_t *pos = (uint32_t *)(s + L->o_hpos[h]), *len = (uint32_t *)(s + L->o_hlen[h]);
		for (uint32_t e = 0; e < H[h].entities; e++)
			if (pos[e] >= H[h].cap || len[e] > H[h].cap) {
				pos[e] = len[e] = 0;
				bad++;
			}
	}
	sn_rstate *rs = (sn_rstate *)(s + L->o_rstate);
	for (size_t r = 0; r < nr; r++) {
		rs[r].mofn_pos = rs[r].mofn_pos < 1024 ? rs[r].mofn_pos : (bad++, 0);
		rs[r].ev_comm[SN_OBJ_NAME - 1] = 0;
		rs[r].phase = rs[r].phase <= SN_DISABLED ? rs[r].phase : (bad++, SN_INACTIVE);
		sn_etab *E = &et[r];
		if (!E->cap)
			continue;
		E->nfree = et_was[r].nfree > E->cap ? (bad++, E->cap) : et_was[r].nfree;
		E->last_overflow = et_was[r].last_overflow;
		E->npending = et_was[r].npending;
		E->nfiring = et_was[r].nfiring;
		E->nclaim = E->overflow = 0;
		sn_estate *es = (sn_estate *)(s + ((uint64_t)(uintptr_t)E->e - at));
		int32_t *map = (int32_t *)(s + ((uint64_t)(uintptr_t)E->emap - at));
		uint32_t *fr = (uint32_t *)(s + ((uint64_t)(uintptr_t)E->free - at));
		for (uint32_t i = 0; i < E->nslots; i++)
			if (map[i] < -1 || map[i] >= (int32_t)E->cap) {
				map[i] = -1;
				bad++;
			}
		for (uint32_t i = 0; i < E->cap; i++) {
			fr[i] = wd_under(fr[i], E->cap, &bad);
			es[i].slot = wd_under(es[i].slot, E->nslots, &bad);
			es[i].row = wd_under(es[i].row, E->nslots > T->cap ? E->nslots : T->cap, &bad);
			es[i].st.mofn_pos = es[i].st.mofn_pos < 1024 ? es[i].st.mofn_pos : (bad++, 0);
			es[i].st.ev_comm[SN_OBJ_NAME - 1] = 0;
			es[i].st.phase = es[i].st.phase <= SN_DISABLED ? es[i].st.phase : (bad++, SN_INACTIVE);
		}
	}
	free(et_was);
	return bad;
}

/* Whether new rule n carries old rule o's alert state over a reload: the
 * same group and name, about the same kind of entity (Prometheus keeps a
 * rule's alerts by group and name).  2: nothing that decides its state
 * changed either; 1: its expression (or for, clear, M of N) did. */
static int wd_carries(const BdRule *n, const BdRule *o)
{
	/* a per-entity rule's states carry over between tables of one size */
	if (strcmp(n->name, o->name) || strcmp(n->group ? n->group : "", o->group ? o->group : "") ||
	    n->entity != o->entity || n->per_entity != o->per_entity || n->max_alerts != o->max_alerts)
		return 0;
	return n->hash == o->hash ? 2 : 1;
}

/* A chained hash of a bundle's rules by group and name: head[bucket] the
 * lowest index with it, next[i] the next one up (-1: none). */
typedef struct WdRuleIx {
	uint32_t mask;
	int32_t *head, *next;
} WdRuleIx;

static uint32_t wd_rule_hash(const BdRule *r)
{
	uint32_t h = 2166136261u;
	for (const char *c = r->name; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	h = (h ^ 0xffu) * 16777619u;
	for (const char *c = r->group ? r->group : ""; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	return h;
}

static int wd_ix_build(WdRuleIx *ix, const Bundle *x)
{
	uint32_t cap = 16;
	while (cap < 2 * x->nrules)
		cap <<= 1;
	ix->mask = cap - 1;
	ix->head = malloc(cap * sizeof *ix->head);
	ix->next = malloc((x->nrules + 1) * sizeof *ix->next);
	if (!ix->head || !ix->next) {
		free(ix->head);
		free(ix->next);
		return -ENOMEM;
	}
	memset(ix->head, 0xff, cap * sizeof *ix->head);
	for (size_t i = x->nrules; i-- > 0;) {          /* from the top: chains go up */
		uint32_t k = wd_rule_hash(&x->rules[i]) & ix->mask;
		ix->next[i] = ix->head[k];
		ix->head[k] = (int32_t)i;
	}
	return 0;
}

/* The first rule of x (indexed by ix) that carries state to or from rule
 * q: x is the new bundle (q an old rule) when x_new, else the old one. */
static int32_t wd_ix_find(const WdRuleIx *ix, const Bundle *x, const BdRule *q, bool x_new)
{
	for (int32_t i = ix->head[wd_rule_hash(q) & ix->mask]; i >= 0; i = ix->next[i])
		if (x_new ? wd_carries(&x->rules[i], q) : wd_carries(q, &x->rules[i]))
			return i;
	return -1;
}

int wd_carry(const Bundle *b, const Bundle *old, int32_t *from, bool *carried)
{
	WdRuleIx ix;
	if (from) {
		if (wd_ix_build(&ix, old))
			return -ENOMEM;
		for (size_t r = 0; r < b->nrules; r++)
			from[r] = wd_ix_find(&ix, old, &b->rules[r], false);
		free(ix.head);
		free(ix.next);
	}
	if (carried) {
		if (wd_ix_build(&ix, b))
			return -ENOMEM;
		for (size_t o = 0; o < old->nrules; o++)
			carried[o] = wd_ix_find(&ix, b, &old->rules[o], true) >= 0;
		free(ix.head);
		free(ix.next);
	}
	return 0;
}

unsigned wd_link(void *stage, const Bundle *b, const WdLayout *L, uint64_t base, const Bundle *old,
		 const WdParams *oldp, const WdParams *p, uint64_t from)
{
	(void)base;
	sn_world *w = wd_world(stage);
	int32_t *rf = (int32_t *)((char *)stage + L->o_rulefrom), *hf = (int32_t *)((char *)stage + L->o_histfrom);
	unsigned kept = 0;
	if (wd_carry(b, old, rf, NULL))
		for (size_t r = 0; r < b->nrules; r++)
			rf[r] = -1;                      /* no memory for the index: nothing carried */
	for (size_t r = 0; r < b->nrules; r++) {
		int o = rf[r];
		rf[r] = o < 0 ? -1 : o | (wd_carries(&b->rules[r], &old->rules[o]) == 1 ? SN_FROM_CHANGED : 0);
		kept += o >= 0;
	}
	for (size_t h = 0; h < b->nhist; h++) {
		hf[h] = -1;
		for (size_t o = 0; o < old->nhist; o++)
			if (b->hist[h].metric == old->hist[o].metric)
				hf[h] = (int32_t)o;
	}
	w->from = (const sn_world *)(uintptr_t)from;
	/* the same table, or a larger one (sentineld grows it for a target with more tasks) */
	w->tasks_from = oldp->task_cap <= p->task_cap && oldp->max_cpus == p->max_cpus;
	return kept;
}
