/* kmetric_task.c - tasks (km_task_*): the thread-group leaders by the
 * task list or the PID namespace's xarray, and each task's metrics.
 *
 * The metric library's entry points and helpers: see kmetric_int.h.
 */
#include "kmetric_int.h"

/* task flags and states (include/linux/sched.h; stable since 2.6) */
#define PF_KTHREAD 0x00200000u

/* ---- tasks ------------------------------------------------------------------ */

/* The thread-group leaders, as /proc lists them: init_task.tasks, each step
 * checked (next->prev must point back, no node twice: kx_loop), at most
 * cap.  Lane 0 walks; the count (or a negative error) goes to every lane. */
int km_task_walk(u64 *out, u32 cap)
{
	int n = 0;
	if (simt_lane() == 0) {
		struct list_head *head = KP(init_task.tasks);
		struct list_head *cur = head;
		kx_loop lp;
		kx_loop_init(&lp, km_addr(head));
		for (;;) {
			struct list_head *next = cur->next;
			if (next == head || __llview_failed())
				break;
			if (km_spent()) {
				n = KM_EBUDGET;
				break;
			}
			if ((u32)n >= cap || next->prev != cur || kx_loop_seen(&lp, km_addr(next))) {
				n = -40;        /* KX_ELOOP: a corrupt, changing or too long list */
				break;
			}
			out[n++] = (u64)(unsigned long)kcontainer_of(next, struct task_struct, tasks);
			cur = next;
		}
		if (__llview_failed())
			n = -14;
	}
	return n;
}

/* ---- tasks by PID: the PID namespace's xarray ------------------------------------
 *
 * The list above costs two dependent reads per task, one after the other.
 * init_pid_ns.idr is a tree of 64-way nodes (an xarray, depth 3 below
 * PID 262,144, 4 above), the index /proc itself uses: its few inner nodes
 * are read level by level with the lanes side by side, and then every
 * slot of every leaf can be read at once, by every thread the caller has.
 * Each node read is checked against the tree (its shift, its parent, the
 * array it belongs to) and each task against its PID, so a node or a pid
 * freed and reused while we read is a walk error or a skipped slot, never
 * a phantom task. */
#define KM_EFAULT (-14)   /* KX_EFAULT, KX_ERANGE, KX_ELOOP (kx.h) */
#define KM_ERANGE (-34)
#define KM_ELOOP (-40)
#define KM_XA_SHIFT 6u
#define KM_XA_SLOTS 64u

KM_INLINE int km_xa_is_node(u64 e) { return (e & 3) == 2 && e > 4096; }

KM_INLINE struct xa_node *km_xa_node(u64 e) { return (struct xa_node *)(unsigned long)(e - 2); }

/* Warp-collective.  q is a queue of (node, first index) pairs, cap pairs
 * long; ctr[0] its length, ctr[1] where the nodes found start (both
 * written here).  Descends to the nodes of shift `stop` (0: the leaves;
 * 6: the leaves' parents, whose leaves the caller reads with every
 * thread it has: km_pid_leaf), or to a root below it; *level is the
 * found nodes' shift.  Returns their number, 0 for an empty tree, or a
 * negative KX_ error (a node that does not check out: KX_ELOOP; the
 * queue too short: KX_ERANGE; the tick's read budget spent before a
 * level: KX_EBUDGET).  Lane 0 writes ctr; lanes append with
 * atomics. */
int km_pid_leaves(u64 *q, u32 cap, u32 *ctr, u32 stop, u32 *level)
{
	struct xarray *xa = KP(init_pid_ns.idr.idr_rt);
	u64 head = (u64)(unsigned long)KR(xa->xa_head);
	if (simt_any(__llview_failed()))
		return KM_EFAULT;
	if (!km_xa_is_node(head))
		return 0;                            /* empty, or index 0 alone: no PID */
	u32 shift = KR(km_xa_node(head)->shift);
	if (simt_any(__llview_failed()))
		return KM_EFAULT;
	if (shift % KM_XA_SHIFT || shift > 5 * KM_XA_SHIFT || cap < 1)
		return KM_ELOOP;
	*level = shift < stop ? shift : stop;
	if (simt_lane() == 0) {
		q[0] = head - 2;
		q[1] = 0;
		ctr[0] = 1;
	}
	simt_sync();
	u32 lo = 0, hi = 1;
	int bad = 0;
	for (; shift > stop; shift -= KM_XA_SHIFT) {
		if (km_spent_all())
			return KM_EBUDGET;           /* a tree walk stops at the read budget (kx.h) */
		u32 cnt = (hi - lo) * KM_XA_SLOTS;
		for (u32 k = simt_lane(); k < cnt; k += simt_nlanes()) {
			u64 nd = q[2 * (lo + k / KM_XA_SLOTS)], base = q[2 * (lo + k / KM_XA_SLOTS) + 1];
			struct xa_node *n = (struct xa_node *)(unsigned long)nd;
			void **slots = KP(n->slots[0]);
			u64 e = (u64)(unsigned long)slots[k % KM_XA_SLOTS];
			if (!km_xa_is_node(e))
				continue;                    /* empty, a retry entry, or failed */
			struct xa_node *c = km_xa_node(e);
			u32 cs, co;                  /* the node's first two bytes: one read */
			km_two(km_addr(KP(c->shift)), 1, km_addr(KP(c->offset)), 1, &cs, &co);
			if (cs != shift - KM_XA_SHIFT || KR(c->parent) != n || KR(c->array) != xa || co != k % KM_XA_SLOTS) {
				bad = 1;                     /* freed and reused under us, or corrupt */
				continue;
			}
			u32 pos = __atomic_fetch_add(&ctr[0], 1, __ATOMIC_RELAXED);
			if (pos < cap) {
				q[2 * pos] = e - 2;
				q[2 * pos + 1] = base + ((u64)(k % KM_XA_SLOTS) << shift);
			}
		}
		simt_sync();
		if (simt_any(bad || __llview_failed()))
			return KM_ELOOP;
		lo = hi;
		hi = *(volatile u32 *)&ctr[0];
		simt_sync();                         /* every lane read it before a lane appends again */
		if (hi > cap)
			return KM_ERANGE;
	}
	if (simt_lane() == 0)
		ctr[1] = lo;
	simt_sync();
	return (int)(hi - lo);
}

/* One lane: leaf `slot` of node `twig` (shift 6, from km_pid_leaves),
 * checked as km_pid_leaves checks a node (its shift, its place, its
 * parent, its tree); 0 for none, and *bad set where it does not check out
 * (freed and reused under us, or corrupt). */
u64 km_pid_leaf(u64 twig, u32 slot, int *bad)
{
	struct xa_node *n = (struct xa_node *)(unsigned long)twig;
	void **slots = KP(n->slots[0]);
	u64 e = (u64)(unsigned long)slots[slot % KM_XA_SLOTS];
	if (!km_xa_is_node(e) || __llview_failed())
		return 0;
	struct xa_node *c = km_xa_node(e);
	u32 cs, co;
	km_two(km_addr(KP(c->shift)), 1, km_addr(KP(c->offset)), 1, &cs, &co);
	if (cs != 0 || KR(c->parent) != n || KR(c->array) != KP(init_pid_ns.idr.idr_rt) || co != slot % KM_XA_SLOTS ||
	    __llview_failed()) {
		*bad = 1;
		return 0;
	}
	return e - 2;
}

/* One lane: the task with PID nr, from slot `slot` of leaf node `leaf`
 * (whose first index is nr - slot); its thread group in *tgid.  0 when
 * the slot is empty or any read or check fails. */
u64 km_pid_task(u64 leaf, u32 slot, u64 nr, u32 *tgid)
{
	struct xa_node *n = (struct xa_node *)(unsigned long)leaf;
	void **slots = KP(n->slots[0]);
	u64 e = (u64)(unsigned long)slots[slot % KM_XA_SLOTS];
	if (!e || (e & 3))
		return 0;                            /* empty, internal or a value */
	struct pid *p = (struct pid *)(unsigned long)e;
	if ((u64)(unsigned)KR(p->numbers[0].nr) != nr)
		return 0;
	struct hlist_node *first = KR(p->tasks[0].first);
	if (!first)
		return 0;                            /* allocated, no task yet (or reaped) */
	struct task_struct *t = kcontainer_of(first, struct task_struct, pid_links[0]);
	u32 pid, tg;                         /* side by side since 2.6 (6.12: at 2432): one read */
	km_two(km_addr(KP(t->pid)), 4, km_addr(KP(t->tgid)), 4, &pid, &tg);
	if ((u64)pid != nr)
		return 0;
	*tgid = tg;
	return __llview_failed() ? 0 : (u64)(unsigned long)t;
}

KM_INLINE struct task_struct *km_task(u64 t) { return (struct task_struct *)(unsigned long)t; }

double km_task_pid(u64 t) { return (double)KR(km_task(t)->tgid); }

double km_task_ppid(u64 t)
{
	struct task_struct *parent = KR(km_task(t)->real_parent);
	return parent ? (double)KR(parent->tgid) : 0;
}

/* The /proc/PID/stat state letter as its character code. */
double km_task_state(u64 t)
{
	struct task_struct *p = km_task(t);
	unsigned int state;
	if (KFIELD_EXISTS(task_struct, __state))
		state = KR(p->__state);
	else
		state = (unsigned int)KR(((struct task_struct___pre514 *)p)->state);
	/* exit_state is set in exit_notify(), which a task runs (0) before
	 * it is TASK_DEAD (0x80): a sleeping task's is 0, not read (a
	 * request a row; a task that sleeps between the two in its last
	 * microseconds shows its sleep, not Z) */
	unsigned int ex = state == 0 || (state & 0x80u) ? (unsigned int)KR(p->exit_state) : 0;
	unsigned int s = (state | ex) & 0x7fu;                                /* TASK_REPORT */
	if (state == 0x402u)                                                  /* TASK_IDLE */
		return 'I';
	static const char letters[] = KSTATE_LETTERS;
	unsigned i = 0;
	while (s && i < 8) {               /* fls() */
		i++;
		s >>= 1;
	}
	return letters[i];
}

double km_task_kthread(u64 t) { return (KR(km_task(t)->flags) & PF_KTHREAD) ? 1 : 0; }

#define KM_MAX_THREADS 65536u

/* Every live thread's times added to *u, *s and *r: 1, or 0 for a cycle
 * or the cap (no sum is the group's then). */
KM_INLINE int km_group_sum(struct signal_struct *sig, u64 *u, u64 *s, u64 *r)
{
	struct list_head *head = KP(sig->thread_head), *n = head->next;
	kx_loop lp;
	kx_loop_init(&lp, km_addr(head));
	u32 i = 0;
	for (; n != head && i < KM_MAX_THREADS && !__llview_failed() && !km_spent(); i++) {
		struct task_struct *t = kcontainer_of(n, struct task_struct, thread_node);
		if (kx_loop_seen(&lp, km_addr(n)))
			break;
		u64 a, b;
		km_pair(km_addr(KP(t->utime)), km_addr(KP(t->stime)), &a, &b);
		*u += a;
		*s += b;
		*r += KR(t->se.sum_exec_runtime);
		n = n->next;
	}
	return n == head;
}

/* The thread group's user and system time as /proc/PID/stat shows them:
 * thread_group_cputime() (the dead threads' sums in signal_struct plus
 * every live thread), scaled by cputime_adjust() from tick samples to the
 * precise runtime and kept monotonic against signal->prev_cputime, the
 * kernel's last answer.  Nanoseconds. */
KM_INLINE void km_group_times(struct task_struct *p, struct signal_struct *sig, double *ut, double *st)
{
	*ut = *st = KM_NAN;
	/* read side by side (sig is known: the runtime keeps it with the
	 * task's slot, sn_task_signal): the task's own times, its runtime
	 * and its place in the thread list, and the signal's sums (one
	 * request each for the pairs where the kernel lays them in one
	 * aligned 16 bytes, as 6.12 does) */
	u64 tu, ts, nx, pv;
	km_pair(km_addr(KP(p->utime)), km_addr(KP(p->stime)), &tu, &ts);
	u64 tr = KR(p->se.sum_exec_runtime);
	km_pair(km_addr(KP(p->thread_node.next)), km_addr(KP(p->thread_node.prev)), &nx, &pv);
	if (!sig)
		return;
	u64 head = km_addr(KP(sig->thread_head)), u, s, r, pu8, ps8;
	km_pair(km_addr(KP(sig->utime)), km_addr(KP(sig->stime)), &u, &s);
	r = KR(sig->sum_sched_runtime);
	km_pair(km_addr(KP(sig->prev_cputime.utime)), km_addr(KP(sig->prev_cputime.stime)), &pu8, &ps8);
	if (nx == head && pv == head) {
		/* the group's one thread (most processes): no walk */
		u += tu;
		s += ts;
		r += tr;
	} else if (!km_group_sum(sig, &u, &s, &r)) {
		return;
	}
	double pu = (double)pu8, ps = (double)ps8;
	double rt = (double)r, sa, ua;
	if (ps + pu >= rt) {                     /* nothing new since the kernel's last answer */
		*ut = pu;
		*st = ps;
		return;
	}
	if (s == 0)
		sa = 0;
	else if (u == 0)
		sa = rt;
	else
		sa = rt * ((double)s / (double)(s + u));
	if (sa < ps)
		sa = ps;
	ua = rt - sa;
	if (ua < pu) {
		ua = pu;
		sa = rt - ua;
	}
	*ut = ua;
	*st = sa;
}

/* The task's signal_struct: copy_process() sets it and nothing changes
 * it while the task_struct lives (a thread group shares one), so the
 * runtime reads it once for a task it keeps in a slot (sn_task_signal)
 * and passes it to the _sig forms: a request a row less.  The entry
 * points without _sig read it themselves; each entry point inlines the
 * same helpers, so that its relocations are the metric's (rulec --check
 * --target and the loader ask km_task_kernel_time's, not its callees'). */
KM_INLINE u64 km_signal(u64 t) { return km_addr(KR(km_task(t)->signal)); }

KM_INLINE double km_times(u64 t, u64 sig, int user)
{
	double ut, st;
	km_group_times(km_task(t), (struct signal_struct *)sig, &ut, &st);
	return (user ? ut : st) * NSEC;
}

KM_INLINE double km_threads(u64 sig)
{
	struct signal_struct *s = (struct signal_struct *)sig;
	return s ? (double)KR(s->nr_threads) : KM_NAN;
}

u64 km_task_signal(u64 t)
{
	u64 sig = km_signal(t);
	return __llview_failed() ? 0 : sig;     /* 0: not read (the _sig forms' NaN) */
}
double km_task_kernel_time_sig(u64 t, u64 sig) { return km_times(t, sig, 0); }
double km_task_user_time_sig(u64 t, u64 sig) { return km_times(t, sig, 1); }
double km_task_threads_sig(u64 t, u64 sig) { (void)t; return km_threads(sig); }
double km_task_kernel_time(u64 t) { return km_times(t, km_signal(t), 0); }
double km_task_user_time(u64 t) { return km_times(t, km_signal(t), 1); }
double km_task_threads(u64 t) { return km_threads(km_signal(t)); }

double km_task_ctx_switches(u64 t)
{
	struct task_struct *p = km_task(t);
	u64 v, iv;
	km_pair(km_addr(KP(p->nvcsw)), km_addr(KP(p->nivcsw)), &v, &iv);
	return (double)(v + iv);
}

/* get_mm_rss(): file + anon + shmem pages, each clamped at 0, as
 * /proc/PID/stat and statm report them (so ps and top).  Before 6.2
 * mm->rss_stat.count[] is atomic_long_t; from 6.2 mm->rss_stat[] are
 * per-CPU counters and this is their central count, which the kernel's
 * get_mm_counter() reads too: each CPU folds its share in once it passes
 * the batch (max(32, 2 x CPUs) pages), so it lags the exact sum by less
 * than batch x CPUs pages per counter.  The exact sum (VmRSS from 6.16)
 * reads every CPU's share through the percpu chunk's page tables: 52
 * reads a task on 2 CPUs, hundreds on a server, against 4 here.  The
 * percpu_counter array is indexed by the kernel's struct size (KSIZEOF):
 * a plain [i] would step by the local view's size. */
KM_INLINE long km_rss_counter(struct mm_struct *mm, long item)
{
	if (KTYPE_EXISTS(mm_rss_stat))
		return km_clamp0(KR(mm->rss_stat.count[item].counter));
	struct mm_struct___pcp *m = (struct mm_struct___pcp *)mm;
	struct percpu_counter *c =
		(struct percpu_counter *)((char *)KP(m->rss_stat[0]) + (unsigned long)item * KSIZEOF(percpu_counter));
	return km_clamp0(KR(c->count));
}

double km_task_rss(u64 t)
{
	struct mm_struct *mm = KR(km_task(t)->mm);
	if (!mm)
		return 0;
	long pages = km_rss_counter(mm, KENUM(mm_counter_type, MM_FILEPAGES)) +
		     km_rss_counter(mm, KENUM(mm_counter_type, MM_ANONPAGES)) +
		     km_rss_counter(mm, KENUM(mm_counter_type, MM_SHMEMPAGES));
	return (double)pages * KM_PAGE_SIZE;
}

/* task.comm: 16 bytes, NUL-terminated by the reader. */
int km_task_comm(u64 t, char *out)
{
	struct task_struct *p = km_task(t);
	u64 a = km_addr(KP(p->comm[0])), w[2];
	km_pair(a, a + 8, &w[0], &w[1]);         /* one read where comm is 16-aligned */
	for (u32 i = 0; i < 16; i++)
		out[i] = (char)(w[i / 8] >> (8 * (i % 8)));
	out[15] = 0;
	return __llview_failed() ? -14 : 0;
}
