/* kmetric_cgroup.c - cgroups (km_cgroup_*): the v2 hierarchy, as
 * /sys/fs/cgroup.
 *
 * The metric library's entry points and helpers: see kmetric_int.h.
 */
#include "kmetric_int.h"

/* ---- cgroups: the v2 hierarchy, as /sys/fs/cgroup -----------------------------------------
 *
 * Every cgroup below the root of the default hierarchy (cgrp_dfl_root),
 * found by a pre-order walk of each css's children list, and kept while it
 * is online and not being removed (rmdir makes it dying at once, though a
 * memory cgroup can linger offline long after).  The root is the host,
 * whose metrics are host.*.  A controller's numbers come from its css in
 * `subsys[]`, which is NULL where the controller is not enabled for the
 * cgroup (its files are absent too): those metrics are then unknown, and
 * not read errors (KM_ABSENT). */

#define KM_MAX_CGROUP_STEPS (1u << 20)
#define KM_MAX_CGROUP_DEPTH 64u
#define KM_CSS_ONLINE (1u << 1)
#define KM_CSS_DYING (1u << 4)

enum { KG_CHILD, KG_SIB, KG_PARENT, KG_FLAGS, KG__N };

/* The lanes' exclusive prefix sum of k, and the warp's total. */
KM_INLINE u32 km_lane_prefix(u32 k, u32 *total)
{
	u32 lane = simt_lane(), nl = simt_nlanes(), before = 0, all = 0;
	for (u32 j = 0; j < nl; j++) {
		u32 kj = (u32)simt_shfl_u64(k, j);
		before += j < lane ? kj : 0;
		all += kj;
	}
	*total = all;
	return before;
}

#define KM_CG_CHUNK 8u

/* Level by level: the lanes take a level's cgroups 32 at a time, each
 * following its own cgroup's children list, a few children a round, and
 * write them after the other lanes' (a prefix sum).  The dependent reads
 * are about the tree's depth times its longest list, not one a cgroup:
 * the pre-order walk took 540 us for 200 cgroups on the H100.  out holds
 * every css found, level after level; then those online and not dying
 * are kept, in order, as their cgroups.  -1: the tree does not fit out. */
static int km_cgroup_levels(u64 *out, u32 cap)
{
	struct cgroup_subsys_state *root = KP(cgrp_dfl_root.cgrp.self);
	u32 lane = simt_lane(), nl = simt_nlanes(), lo = 0, hi = 1, n = 0, depth = 0;
	u64 dummy = km_addr(&jiffies_64);
	for (; lo < hi && depth <= KM_MAX_CGROUP_DEPTH; depth++) {
		u32 first = n;
		for (u32 p0 = lo; p0 < hi; p0 += nl) {
			u32 pi = p0 + lane;
			int mine = pi < hi;
			/* level 0's one parent is the root, which out does not hold */
			u64 par = !mine ? 0 : depth == 0 ? km_addr(root) : out[pi];
			struct cgroup_subsys_state *pc = (struct cgroup_subsys_state *)(unsigned long)par;
			u64 head = mine ? km_addr(KP(pc->children)) : 0;
			u64 cur = km_word(mine ? head : dummy);
			if (!mine)
				cur = head;
			kx_loop lp;
			kx_loop_init(&lp, head);
			int looped = 0, spent = 0;
			while (simt_any(cur != head)) {
				u64 buf[KM_CG_CHUNK];
				u32 k = 0, total;
				while (k < KM_CG_CHUNK && cur != head && !__llview_failed() && !(spent = km_spent()) &&
				       !(looped = kx_loop_seen(&lp, cur))) {
					buf[k++] = cur;          /* a child's sibling list_head; next is its first word */
					cur = km_word(cur);
				}
				if (__llview_failed() || looped || spent)
					cur = head;
				u32 at = n + km_lane_prefix(k, &total);
				for (u32 i = 0; i < k; i++)
					if (at + i < cap)
						out[at + i] = km_addr(kcontainer_of((struct list_head *)(unsigned long)buf[i],
										    struct cgroup_subsys_state, sibling));
				n += total;
				if (simt_any(__llview_failed()))
					return -14;
				if (simt_any(looped))
					return -40;             /* KX_ELOOP: a children list that comes round */
				if (simt_any(spent))
					return KM_EBUDGET;
				if (n > cap || n > KM_MAX_CGROUP_STEPS)
					return -1;
			}
		}
		simt_sync();                            /* the level's writes, for every lane */
		lo = first;
		hi = n;
	}
	/* keep the online ones: a flags read a lane, then compacted in order
	 * (a kept one moves down, never past one not yet read) */
	u32 m = 0;
	for (u32 i0 = 0; i0 < n; i0 += nl) {
		u32 i = i0 + lane, total;
		u64 css = i < n ? out[i] : 0;
		struct cgroup_subsys_state *c = (struct cgroup_subsys_state *)(unsigned long)css;
		u64 fl = km_word(css ? km_addr(KP(c->flags)) : dummy);
		int keep = css && (fl & KM_CSS_ONLINE) && !(fl & KM_CSS_DYING);
		u32 at = m + km_lane_prefix((u32)keep, &total);
		simt_sync();
		if (keep)
			out[at] = km_addr(kcontainer_of(c, struct cgroup, self));
		m += total;
		simt_sync();
	}
	return simt_any(__llview_failed()) ? -14 : (int)m;
}

/* Warp-collective: every lane gets the count, lane 0 writes out. */
int km_cgroup_walk(u64 *out, u32 cap)
{
	if (!&cgrp_dfl_root)
		return -2;                      /* KX_ENOENT: a kernel without cgroups */
	int r = km_cgroup_levels(out, cap);
	if (r != -1)
		return r;
	/* more cgroups than out holds: the pre-order walk counts them all */
	struct cgroup_subsys_state *root = KP(cgrp_dfl_root.cgrp.self), *cur = root;
	u32 depth = 0;
	int n = 0;
	kx_loop lp;                     /* the cgroups reached going down or across: each once */
	kx_loop_init(&lp, km_addr(root));
	for (u32 step = 0; step < KM_MAX_CGROUP_STEPS; step++) {
		if (step && kx_loop_seen(&lp, km_addr(cur)))
			return -40;             /* KX_ELOOP: a corrupt or endless tree */
		if (km_spent_all())
			return KM_EBUDGET;
		/* its first child, next sibling, parent and flags: one load for the warp */
		u64 a[KG__N], v[KG__N];
		a[KG_CHILD] = km_addr(KP(cur->children.next));
		a[KG_SIB] = km_addr(KP(cur->sibling.next));
		a[KG_PARENT] = km_addr(KP(cur->parent));
		a[KG_FLAGS] = km_addr(KP(cur->flags));
		km_gather(a, KG__N, v);
		if (simt_any(__llview_failed()))
			return -14;
		if (cur != root && (v[KG_FLAGS] & KM_CSS_ONLINE) && !(v[KG_FLAGS] & KM_CSS_DYING)) {
			if ((u32)n < cap && simt_lane() == 0)
				out[n] = km_addr(kcontainer_of(cur, struct cgroup, self));
			n++;
		}
		if (v[KG_CHILD] != km_addr(KP(cur->children)) && depth < KM_MAX_CGROUP_DEPTH) {
			cur = kcontainer_of((struct list_head *)(unsigned long)v[KG_CHILD], struct cgroup_subsys_state, sibling);
			depth++;
			continue;
		}
		/* no children (or too deep): the next sibling, or the nearest
		 * ancestor's; back at the root, the walk is done */
		for (;;) {
			if (cur == root)
				return n;
			struct cgroup_subsys_state *up = (struct cgroup_subsys_state *)(unsigned long)v[KG_PARENT];
			if (v[KG_SIB] != km_addr(KP(up->children))) {
				cur = kcontainer_of((struct list_head *)(unsigned long)v[KG_SIB], struct cgroup_subsys_state,
						    sibling);
				break;
			}
			cur = up;
			if (depth == 0 || ++step >= KM_MAX_CGROUP_STEPS)
				return -40;             /* KX_ELOOP: a corrupt or endless tree */
			depth--;
			u64 b[2] = {km_addr(KP(cur->sibling.next)), km_addr(KP(cur->parent))}, w[2];
			km_gather(b, 2, w);
			if (simt_any(__llview_failed()))
				return -14;
			v[KG_SIB] = w[0];
			v[KG_PARENT] = w[1];
		}
	}
	return -40;
}

/* The cgroup's path below the root ("system.slice/cron.service"): its
 * kernfs node's name and its parents' up to the root's, a word at a time,
 * at most size - 1 bytes (a longer one is cut).  One lane. */
int km_cgroup_name(u64 c, char *out, u32 size)
{
	struct cgroup *cg = (struct cgroup *)(unsigned long)c;
	struct kernfs_node *chain[KM_MAX_CGROUP_DEPTH];
	struct kernfs_node *kn = KR(cg->kn);
	u32 d = 0, o = 0;
	/* the parent link: kernfs_node.parent, 7.2's __parent */
	int np = KFIELD_EXISTS(kernfs_node, __parent), linked = np || KFIELD_EXISTS(kernfs_node, parent);
	while (linked && kn && d < KM_MAX_CGROUP_DEPTH && !__llview_failed()) {
		chain[d++] = kn;
		kn = np ? KR(kn->__parent) : KR(kn->parent);
	}
	/* chain[d - 1] is the hierarchy's root (no name); the path starts below it */
	for (u32 i = d > 0 ? d - 1 : 0; i-- > 0 && o + 1 < size && !__llview_failed();) {
		const char *s = KR(chain[i]->name);
		if (o)
			out[o++] = '/';
		int end = 0;
		for (u32 k = 0; !end && o + 1 < size && k < 256 && !__llview_failed(); k += 8) {
			u64 w = *(const u64 *)(s + k);
			for (u32 b = 0; b < 8 && !end && o + 1 < size; b++) {
				char ch = (char)(w >> (8 * b));
				end = ch == 0;
				if (!end)
					out[o++] = ch;
			}
		}
	}
	for (u32 i = o; i < size; i++)
		out[i] = 0;
	return __llview_failed() ? -14 : 0;
}

#define KM_CG_NPSI 7                 /* the pressure states a cgroup's block holds */
/* A cgroup's numbers, read once a tick into a block (km_cgroup_stats: the
 * cgroup's fields one gather, its controllers' one more, its own CPUs'
 * unflushed CPU time km_pcpu_sums); the metrics read the block. */
enum {
	KC_MEM_USAGE, KC_MEM_MAX, KC_MEM_HIGH, KC_EV_MAX, KC_EV_OOM, KC_EV_OOM_KILL,
	KC_PIDS_CUR, KC_PIDS_MAX,
	KC_CFS_PERIODS, KC_CFS_THROTTLED, KC_CFS_THR_TIME, KC_CFS_QUOTA, KC_CFS_PERIOD,
	/* cpu some, cpu full, memory some/full, io some/full, irq full */
	KC_PSI_TOTAL, KC_PSI_AVG10 = KC_PSI_TOTAL + KM_CG_NPSI, KC_PSI_AVG60 = KC_PSI_AVG10 + KM_CG_NPSI,
	KC_PSI_AVG300 = KC_PSI_AVG60 + KM_CG_NPSI,
	KC_GATHER = KC_PSI_AVG300 + KM_CG_NPSI,              /* the controllers' words, one gather */
	KC_USAGE = KC_GATHER, KC_UNFLUSHED,                  /* bstat's sum_exec_runtime; this CPU's deltas */
	KC_ABSENT, KC_FAILED, KC_PSI_NONE, KC__COUNT         /* KC_PSI_NONE: the states the kernel lacks, a bit each */
};
_Static_assert(KC__COUNT <= 64, "the block rulec gives km_cgroup_stats (CG_OBJ_BLOCK)");
/* KC_ABSENT's bits: which controllers the cgroup lacks */
enum { KC_NO_MEM = 1, KC_NO_PIDS = 2, KC_NO_CPU = 4, KC_NO_PSI = 8 };
enum { KF_MEM, KF_PIDS, KF_CPU, KF_PSI, KF_USAGE, KF_RSTAT, KF__N };

int km_cgroup_stats(u64 c, u64 *blk)
{
	struct cgroup *cg = (struct cgroup *)(unsigned long)c;
	u64 a[KC_GATHER], f[KF__N];
	a[KF_MEM] = km_addr(KP(cg->subsys[KENUM(cgroup_subsys_id, memory_cgrp_id)]));
	a[KF_PIDS] = km_addr(KP(cg->subsys[KENUM(cgroup_subsys_id, pids_cgrp_id)]));
	a[KF_CPU] = km_addr(KP(cg->subsys[KENUM(cgroup_subsys_id, cpu_cgrp_id)]));
	a[KF_PSI] = km_addr(KP(cg->psi));
	a[KF_USAGE] = km_addr(KP(cg->bstat.cputime.sum_exec_runtime));
	/* the per-CPU counters not yet flushed: cgroup.rstat_cpu, 7.2's
	 * cgroup.rstat_base_cpu (the same fields, a type of its own) */
	int rbase = KFIELD_EXISTS(cgroup, rstat_base_cpu) && KTYPE_EXISTS(cgroup_rstat_base_cpu);
	int rold = !rbase && KFIELD_EXISTS(cgroup, rstat_cpu) && KTYPE_EXISTS(cgroup_rstat_cpu);
	a[KF_RSTAT] = rbase ? km_addr(KP(cg->rstat_base_cpu)) : rold ? km_addr(KP(cg->rstat_cpu)) : a[KF_USAGE];
	km_gather(a, KF__N, f);
	struct mem_cgroup *mem = kcontainer_of((struct cgroup_subsys_state *)(unsigned long)f[KF_MEM], struct mem_cgroup, css);
	struct pids_cgroup *pids = kcontainer_of((struct cgroup_subsys_state *)(unsigned long)f[KF_PIDS], struct pids_cgroup, css);
	struct task_group *tg = kcontainer_of((struct cgroup_subsys_state *)(unsigned long)f[KF_CPU], struct task_group, css);
	struct psi_group *pg = (struct psi_group *)(unsigned long)f[KF_PSI];
	/* cgroup.psi is a pointer from 6.0 (when psi_group got its parent);
	 * before, the group was embedded, and is not read */
	int psi = KFIELD_EXISTS(psi_group, parent) && f[KF_PSI] && km_psi_on();
	u64 absent = (f[KF_MEM] ? 0 : KC_NO_MEM) | (f[KF_PIDS] ? 0 : KC_NO_PIDS) | (f[KF_CPU] ? 0 : KC_NO_CPU) |
		     (psi ? 0 : KC_NO_PSI);
	u64 d = km_dummy_addr();
	/* an absent controller's words are read from somewhere harmless */
	a[KC_MEM_USAGE] = f[KF_MEM] ? km_addr(KP(mem->memory.usage.counter)) : d;
	a[KC_MEM_MAX] = f[KF_MEM] ? km_addr(KP(mem->memory.max)) : d;
	a[KC_MEM_HIGH] = f[KF_MEM] ? km_addr(KP(mem->memory.high)) : d;
	a[KC_EV_MAX] = f[KF_MEM] ? km_addr(KP(mem->memory_events[KENUM(memcg_memory_event, MEMCG_MAX)])) : d;
	a[KC_EV_OOM] = f[KF_MEM] ? km_addr(KP(mem->memory_events[KENUM(memcg_memory_event, MEMCG_OOM)])) : d;
	a[KC_EV_OOM_KILL] = f[KF_MEM] ? km_addr(KP(mem->memory_events[KENUM(memcg_memory_event, MEMCG_OOM_KILL)])) : d;
	a[KC_PIDS_CUR] = f[KF_PIDS] ? km_addr(KP(pids->counter.counter)) : d;
	a[KC_PIDS_MAX] = f[KF_PIDS] ? km_addr(KP(pids->limit.counter)) : d;
	a[KC_CFS_PERIODS] = f[KF_CPU] ? km_addr(KP(tg->cfs_bandwidth.nr_periods)) : d;
	a[KC_CFS_THROTTLED] = f[KF_CPU] ? km_addr(KP(tg->cfs_bandwidth.nr_throttled)) : d;
	a[KC_CFS_THR_TIME] = f[KF_CPU] ? km_addr(KP(tg->cfs_bandwidth.throttled_time)) : d;
	a[KC_CFS_QUOTA] = f[KF_CPU] ? km_addr(KP(tg->cfs_bandwidth.quota)) : d;
	a[KC_CFS_PERIOD] = f[KF_CPU] ? km_addr(KP(tg->cfs_bandwidth.period)) : d;
	/* irq full (6.1+ with CONFIG_IRQ_TIME_ACCOUNTING): the enumerator
	 * is there only then, as is the cgroup's irq.pressure */
	u64 psi_none = 0;
	long st[KM_CG_NPSI] = {KENUM(psi_states, PSI_CPU_SOME), KENUM(psi_states, PSI_CPU_FULL),
			       KENUM(psi_states, PSI_MEM_SOME), KENUM(psi_states, PSI_MEM_FULL),
			       KENUM(psi_states, PSI_IO_SOME), KENUM(psi_states, PSI_IO_FULL),
			       KENUM_OPT(psi_states, PSI_IRQ_FULL)};
	for (int i = 0; i < KM_CG_NPSI; i++) {
		const u64 *t = (const u64 *)KP(pg->total);
		const unsigned long *av = (const unsigned long *)KP(pg->avg);
		int have = !(absent & KC_NO_PSI) && st[i] >= 0 && st[i] < 8;
		a[KC_PSI_TOTAL + i] = have ? km_addr(&t[st[i]]) : d;
		a[KC_PSI_AVG10 + i] = have ? km_addr(&av[st[i] * 3]) : d;
		a[KC_PSI_AVG60 + i] = have ? km_addr(&av[st[i] * 3 + 1]) : d;
		a[KC_PSI_AVG300 + i] = have ? km_addr(&av[st[i] * 3 + 2]) : d;
		if (!have)
			psi_none |= 1ull << i;
	}
	km_gather(a, KC_GATHER, blk);
	/* the two ints: km_word gives the word from the field up */
	blk[KC_CFS_PERIODS] &= 0xffffffffu;
	blk[KC_CFS_THROTTLED] &= 0xffffffffu;
	/* this cgroup's own tasks' CPU time not yet flushed into bstat */
	if (!rbase && !rold)
		f[KF_RSTAT] = 0;
	u64 off[2] = {0, 0}, sums[2] = {0, 0};
	if (rbase) {
		struct cgroup_rstat_base_cpu *rb = (struct cgroup_rstat_base_cpu *)(unsigned long)f[KF_RSTAT];
		off[0] = km_addr(KP(rb->bstat.cputime.sum_exec_runtime)) - km_addr(rb);
		off[1] = km_addr(KP(rb->last_bstat.cputime.sum_exec_runtime)) - km_addr(rb);
	} else {
		struct cgroup_rstat_cpu *rc = (struct cgroup_rstat_cpu *)(unsigned long)f[KF_RSTAT];
		off[0] = km_addr(KP(rc->bstat.cputime.sum_exec_runtime)) - km_addr(rc);
		off[1] = km_addr(KP(rc->last_bstat.cputime.sum_exec_runtime)) - km_addr(rc);
	}
	if (f[KF_RSTAT])
		km_pcpu_sums(f[KF_RSTAT], off, 2, sums);
	blk[KC_USAGE] = f[KF_USAGE];
	blk[KC_UNFLUSHED] = f[KF_RSTAT] && sums[0] > sums[1] ? sums[0] - sums[1] : 0;
	blk[KC_ABSENT] = absent;
	blk[KC_PSI_NONE] = psi_none;
	blk[KC_FAILED] = (u64)simt_any(__llview_failed());
	return 0;
}

/* block item i of a controller, times scale: KM_ABSENT without the
 * controller (returned as is: arithmetic on the GPU does not keep a NaN's
 * payload), NaN when the block could not be read */
KM_INLINE double km_cg(const u64 *blk, int i, u64 need, double scale)
{
	return blk[KC_FAILED] ? KM_NAN : (blk[KC_ABSENT] & need) ? KM_ABSENT : (double)blk[i] * scale;
}

#define KM_PAGE_COUNTER_MAX (0x7fffffffffffffffull / 4096)
#define KM_PIDS_MAX 4194305ull           /* PID_MAX_LIMIT + 1 (x86-64): "max" */

/* a limit: +Inf at the kernel's "max" */
KM_INLINE double km_cg_limit(const u64 *blk, int i, u64 need, u64 max, double scale)
{
	double v = km_cg(blk, i, need, scale);
	return v == v && blk[i] >= max ? __builtin_inf() : v;
}

double km_cgroup_memory_current(u64 c, const u64 *blk) { return km_cg(blk, KC_MEM_USAGE, KC_NO_MEM, KM_PAGE_SIZE); }
double km_cgroup_memory_max(u64 c, const u64 *blk)
{
	return km_cg_limit(blk, KC_MEM_MAX, KC_NO_MEM, KM_PAGE_COUNTER_MAX, KM_PAGE_SIZE);
}
double km_cgroup_memory_high(u64 c, const u64 *blk)
{
	return km_cg_limit(blk, KC_MEM_HIGH, KC_NO_MEM, KM_PAGE_COUNTER_MAX, KM_PAGE_SIZE);
}
double km_cgroup_memory_max_events(u64 c, const u64 *blk) { return km_cg(blk, KC_EV_MAX, KC_NO_MEM, 1); }
double km_cgroup_ooms(u64 c, const u64 *blk) { return km_cg(blk, KC_EV_OOM, KC_NO_MEM, 1); }
double km_cgroup_oom_kills(u64 c, const u64 *blk) { return km_cg(blk, KC_EV_OOM_KILL, KC_NO_MEM, 1); }
double km_cgroup_pids_current(u64 c, const u64 *blk) { return km_cg(blk, KC_PIDS_CUR, KC_NO_PIDS, 1); }
double km_cgroup_pids_max(u64 c, const u64 *blk) { return km_cg_limit(blk, KC_PIDS_MAX, KC_NO_PIDS, KM_PIDS_MAX, 1); }

/* cpu.stat's usage: the flushed sum plus this cgroup's own unflushed part
 * (descendants' arrive at the kernel's next flush: any read of cpu.stat,
 * and every 2 s with the memory controller) */
double km_cgroup_cpu_usage_time(u64 c, const u64 *blk)
{
	return blk[KC_FAILED] ? KM_NAN : (double)(blk[KC_USAGE] + blk[KC_UNFLUSHED]) * NSEC;
}

double km_cgroup_cpu_periods(u64 c, const u64 *blk) { return km_cg(blk, KC_CFS_PERIODS, KC_NO_CPU, 1); }
double km_cgroup_cpu_throttled_periods(u64 c, const u64 *blk) { return km_cg(blk, KC_CFS_THROTTLED, KC_NO_CPU, 1); }
double km_cgroup_cpu_throttled_time(u64 c, const u64 *blk) { return km_cg(blk, KC_CFS_THR_TIME, KC_NO_CPU, NSEC); }

/* cpu.max as CPUs: quota / period, +Inf for "max" (RUNTIME_INF) */
double km_cgroup_cpu_max(u64 c, const u64 *blk)
{
	double q = km_cg(blk, KC_CFS_QUOTA, KC_NO_CPU, 1);
	if (q != q)
		return q;
	if (blk[KC_CFS_QUOTA] == ~0ull || !blk[KC_CFS_PERIOD])
		return __builtin_inf();
	return (double)blk[KC_CFS_QUOTA] / (double)blk[KC_CFS_PERIOD];
}

/* pressure state i of the block: unknown where the kernel lacks it (irq) */
KM_INLINE double km_cg_psi(const u64 *blk, u32 at, u32 i, double scale)
{
	if (!blk[KC_FAILED] && ((blk[KC_PSI_NONE] >> i) & 1))
		return KM_ABSENT;
	return km_cg(blk, at + i, KC_NO_PSI, scale);
}

#define KM_CG_PSI(name, i)                                                                                      \
	double km_cgroup_pressure_##name##_time(u64 c, const u64 *blk)                                          \
	{ return km_cg_psi(blk, KC_PSI_TOTAL, i, NSEC); }                                                       \
	double km_cgroup_pressure_##name##_avg10(u64 c, const u64 *blk)                                         \
	{ return km_cg_psi(blk, KC_PSI_AVG10, i, 1.0 / 2048.0 / 100.0); }                                       \
	double km_cgroup_pressure_##name##_avg60(u64 c, const u64 *blk)                                         \
	{ return km_cg_psi(blk, KC_PSI_AVG60, i, 1.0 / 2048.0 / 100.0); }                                       \
	double km_cgroup_pressure_##name##_avg300(u64 c, const u64 *blk)                                        \
	{ return km_cg_psi(blk, KC_PSI_AVG300, i, 1.0 / 2048.0 / 100.0); }
KM_CG_PSI(cpu_some, 0)
KM_CG_PSI(cpu_full, 1)
KM_CG_PSI(memory_some, 2)
KM_CG_PSI(memory_full, 3)
KM_CG_PSI(io_some, 4)
KM_CG_PSI(io_full, 5)
KM_CG_PSI(irq_full, 6)
#undef KM_CG_PSI
