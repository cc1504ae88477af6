/* kmetric_int.h - what the metric library's files share (private to them).
 *
 * The metric library is every catalog metric, read the way kernel code
 * reads it, a file per family: kmetric_cpu.c (CPU time, the host's and each
 * CPU's), kmetric_host.c (the rest of host.*: scheduler, kernel health,
 * memory, pressure, clock, open files, conntrack, EDAC), kmetric_task.c (tasks: the
 * list and the PID tree), kmetric_disk.c, kmetric_cgroup.c, kmetric_net.c
 * and kmetric_fs.c (the objects: walks, names, stats).
 *
 * Written against kcore.h's local views of kernel types and symbols; rulec
 * relocates it for the target kernel (CO-RE) and turns its loads into
 * translated reads of the target's RAM (LLView).  clang compiles each file
 * for nvptx64 and for the host and llvm-link joins them with the rest of
 * the runtime; see docs/compiler.md.
 *
 * The entry points, by kind (the prefix tells rulec and LLView the kind):
 *
 *   double km_host_NAME(void)          warp-collective: every lane of the
 *                                      warp calls it, every lane gets the value
 *   double km_cpu_NAME(u32 cpu)        one lane, one CPU
 *   double km_task_NAME(u64 task)      one lane, one task_struct address
 *   double km_disk_NAME(u64 disk, const u64 *blk)  warp-collective; blk is
 *                                      what km_disk_stats(disk, blk) summed
 *   int km_disk_walk(u64 *out, u32 cap), int km_disk_name(u64 disk, char *out32)
 *   int km_task_walk(u64 *out, u32 cap)  the thread-group leaders
 *   int km_pid_leaves(u64 *q, u32 cap, u32 *ctr, u32 stop, u32 *level)  the PID xarray's
 *       leaves (stop 0) or their parents (6); u64 km_pid_leaf(u64 twig, u32 slot, int *bad)
 *   u64 km_pid_task(u64 leaf, u32 slot, u64 nr, u32 *tgid)  one PID's task
 *   int km_task_comm(u64 task, char *out16)
 *   u64 km_task_signal(u64 task), and km_task_{kernel_time,user_time,threads}_sig(u64 task,
 *       u64 sig): the signal_struct read once for a task the runtime keeps (0: not read)
 *   u32 km_cpu_ids(void), int km_cpu_online(u32 cpu)
 *
 * A value that cannot be read is NaN (LLView makes a double-returning entry
 * return NaN when any of its loads failed); an int entry returns a negative
 * KX_ error.  Values are in base units: seconds, bytes, counts.
 *
 * Helpers are static and always inlined into the entry points: LLView sees
 * each metric as one function.  Those that several families use are here
 * (KM_INLINE), each family's own in its file.
 */
#ifndef SENTINEL_KMETRIC_INT_H
#define SENTINEL_KMETRIC_INT_H

#include "kcore.h"
#include "kstate.h"
#include "kx.h"

#define KM_INLINE static inline __attribute__((always_inline))
#define KM_NAN __builtin_nan("")
#define KM_PAGE_SIZE 4096.0
#define NSEC 1e-9
#define KM_MAX_CPUS 1024u
#define KM_MAX_MCS 1024u          /* EDAC memory controllers on mc_devices */

/* ---- helpers ----------------------------------------------------------- */

/* Unknown because the kernel has no such thing here (a cgroup without the
 * controller, a disk that is not an md array, an interface that is not a
 * bond, a module not loaded, a kernel built without the feature), not a
 * failed read: the runtime counts NaNs as read errors (sn_count_error,
 * snrt_int.h), but not this one. */
#define KM_ABSENT __builtin_nan("0x5e1")

/* A warp-collective result: NaN on every lane if any lane failed. */
KM_INLINE double km_collective(double v)
{
	return simt_any(__llview_failed()) ? KM_NAN : v;
}

/* The tick has read past its target's read budget (kx.h, kx_cur): a walk
 * stops at its next step with KM_EBUDGET.  km_spent for a walk of one
 * lane; km_spent_all for a warp's walk, every lane the same answer. */
#define KM_EBUDGET (-122)
KM_INLINE int km_spent(void) { return kx_spent(); }
KM_INLINE int km_spent_all(void) { return simt_any(kx_spent()); }

KM_INLINE u32 km_nr_cpu_ids(void)
{
	u32 n = nr_cpu_ids;
	return n > KM_MAX_CPUS ? KM_MAX_CPUS : n;
}

KM_INLINE int km_online(u32 cpu)
{
	unsigned long w = __cpu_online_mask.bits[cpu / 64];
	return (int)((w >> (cpu % 64)) & 1);
}

/* One per-CPU u64 summed over online CPUs, lanes splitting the CPUs.
 * field(cpu) is an expression of `cpu`. */
#define KM_SUM_ONLINE(expr) ({ \
	u64 _s = 0; \
	u32 _n = km_nr_cpu_ids(); \
	for (u32 cpu = simt_lane(); cpu < _n; cpu += simt_nlanes()) \
		if (km_online(cpu)) \
			_s += (u64)(expr); \
	simt_sum_u64(_s); })

KM_INLINE long km_clamp0(long v) { return v < 0 ? 0 : v; }

/* ---- warp gathers --------------------------------------------------------
 *
 * A warp's reads of host memory go out about one at a time: on the H100
 * 16 independent reads of one lane take 12 us, one read on each of 32 lanes
 * 2.2 us (bench/hostread.cu).  So fields that do not depend on each other
 * are read a field a lane, one load for the warp, then shared
 * (km_gather); on the host one lane reads them in turn. */

/* The naturally aligned field of at most 8 bytes at kernel address a,
 * through the aligned word that holds it (x86-64 is little-endian):
 * shifted down, not masked. */
KM_INLINE u64 km_word(u64 a)
{
	return *(const u64 *)(unsigned long)(a & ~7ul) >> ((a & 7) * 8);
}

KM_INLINE u64 km_addr(const volatile void *p) { return (u64)(unsigned long)p; }

/* Two naturally aligned fields of at most 4 bytes, at kernel addresses a
 * and b > a, wa and wb bytes wide: one read where an aligned word holds
 * both (a task's pid and tgid, an xa_node's shift and offset), two where
 * the kernel laid them out apart. */
KM_INLINE void km_two(u64 a, u32 wa, u64 b, u32 wb, u32 *va, u32 *vb)
{
	u64 x = km_word(a);
	u64 y = (a & ~7ul) == (b & ~7ul) && b > a ? x >> ((b - a) * 8) : km_word(b);
	*va = (u32)(x & (wa >= 4 ? 0xffffffffull : (1ull << (8 * wa)) - 1));
	*vb = (u32)(y & (wb >= 4 ? 0xffffffffull : (1ull << (8 * wb)) - 1));
}

/* Two 8-byte fields at kernel addresses a and b: one 16-byte read where
 * they are the two halves of an aligned 16 bytes (a task's utime and
 * stime, a list_head's next and prev), else two.  A 16-byte read is one
 * request over the bus, as an 8-byte one (bench/hostread.cu): a row's
 * reads are what the task phase's time is made of. */
typedef u64 km_v2 __attribute__((vector_size(16)));
KM_INLINE void km_pair(u64 a, u64 b, u64 *va, u64 *vb)
{
	/* volatile: else LLVM splits a vector load whose halves are used
	 * apart back into two scalar loads, before LLView sees it */
	if (b == a + 8 && !(a & 15)) {
		km_v2 v = *(const volatile km_v2 *)(unsigned long)a;
		*va = v[0];
		*vb = v[1];
	} else if (a == b + 8 && !(b & 15)) {
		km_v2 v = *(const volatile km_v2 *)(unsigned long)b;
		*va = v[1];
		*vb = v[0];
	} else {
		*va = *(const u64 *)(unsigned long)a;
		*vb = *(const u64 *)(unsigned long)b;
	}
}

/* out[i] = km_word(a[i]) for i < n (n >= 1): a read a lane, n / 32 loads
 * for the warp.  Every lane calls it with the same a and n. */
KM_INLINE void km_gather(const u64 *a, u32 n, u64 *out)
{
	u32 lane = simt_lane(), nl = simt_nlanes();
	for (u32 base = 0; base < n; base += nl) {
		u64 mine = km_word(a[base + lane < n ? base + lane : 0]);
		for (u32 j = 0; j < nl && base + j < n; j++)
			out[base + j] = simt_shfl_u64(mine, j);
	}
}

/* An address any read succeeds at, for the lanes a gather has no use for */
KM_INLINE u64 km_dummy_addr(void) { return km_addr(&jiffies_64); }

/* A checked walk of a kernel list_head ring (warp-collective), as kx.h's
 * kx_list_next on the host: each step reads the node's next and prev and
 * one word of the node's struct (`field`: its offset from the node, or
 * KM_LIST_NONE), in one gather; it checks that prev points back and that
 * the walk has not come round (kx_loop), and stops after `max` nodes. */
#define KM_LIST_NONE ((long)1 << 62)
typedef struct km_list {
	struct list_head *head, *cur, *next;
	u32 n, max;
	int spent;                 /* it stopped at the read budget */
	kx_loop lp;
} km_list;

KM_INLINE void km_list_init(km_list *w, struct list_head *head, u32 max)
{
	w->head = w->cur = head;
	w->next = KR(head->next);
	w->n = 0;
	w->max = max;
	w->spent = 0;
	kx_loop_init(&w->lp, km_addr(head));
}

/* 1: w->cur is the next node, *val its word; 0: back at the head, or a
 * read failed (the caller asks __llview_failed); -1: a corrupt, changing
 * or endless list, or the tick's read budget spent (w->spent). */
KM_INLINE int km_list_step(km_list *w, long field, u64 *val)
{
	if (w->next == w->head || simt_any(__llview_failed()))
		return 0;
	if (km_spent_all()) {
		w->spent = 1;
		return -1;
	}
	u64 at = km_addr(w->next), v[3];
	if (w->n >= w->max || kx_loop_seen(&w->lp, at))
		return -1;
	u64 a[3] = {km_addr(&w->next->next), km_addr(&w->next->prev),
		    field == KM_LIST_NONE ? km_dummy_addr() : at + (u64)field};
	km_gather(a, 3, v);
	if (v[1] != km_addr(w->cur))
		return -1;
	w->cur = w->next;
	w->next = (struct list_head *)(unsigned long)v[0];
	w->n++;
	*val = v[2];
	return 1;
}

/* Per-CPU words summed over the possible CPUs: sum[f] is the sum of the
 * u64 (half: the s32) at base[f] + offset(cpu), f < nw (a
 * base of 0 adds nothing); km_pcpu_sums: a per-CPU object's words, at
 * p + off[f].  Lanes read a block
 * of CPUs' offsets (one load), then (CPU, word) pairs a pair a lane: a
 * 19-word object on 4 CPUs is 4 loads for the warp, not 20 a lane. */
#define KM_PCPU_WORDS 24
#define KM_NOCPU (~0ul)

KM_INLINE void km_pcpu_add(const u64 *base, u32 nw, int half, u64 *sum)
{
	u32 lane = simt_lane(), nl = simt_nlanes(), n = km_nr_cpu_ids();
	u64 acc[KM_PCPU_WORDS];
	for (u32 f = 0; f < nw; f++)
		acc[f] = 0;
	for (u32 c0 = 0; c0 < n; c0 += nl) {
		u32 m = n - c0 < nl ? n - c0 : nl, cpu = c0 + lane;
		u64 o = KM_NOCPU;
		if (lane < m) {
			u64 at = __per_cpu_offset[cpu], bits = __cpu_possible_mask.bits[cpu / 64];
			if ((bits >> (cpu % 64)) & 1)
				o = at;
		}
		for (u32 j0 = 0; j0 < m * nw; j0 += nl) {
			u32 j = j0 + lane, in = j < m * nw, f = in ? j % nw : 0;
			u64 oc = simt_shfl_u64(o, in ? j / nw : 0);
			int on = in && oc != KM_NOCPU && base[f];
			u64 v = km_word(on ? base[f] + oc : km_addr(&jiffies_64));
			if (on)
				acc[f] += half ? (u64)(s64)(s32)(u32)v : v;
		}
	}
	for (u32 f = 0; f < nw; f++)
		sum[f] = simt_sum_u64(acc[f]);
}

KM_INLINE void km_pcpu_sums(u64 p, const u64 *off, u32 nw, u64 *sum)
{
	u64 base[KM_PCPU_WORDS];
	for (u32 f = 0; f < nw; f++)
		base[f] = p + off[f];
	km_pcpu_add(base, nw, 0, sum);
}

/* percpu_counter_sum() of nc counters (nc <= 4): each one's count plus
 * its CPUs' s32 deltas, over the possible CPUs (a CPU that went offline
 * had its delta folded into the count).  Warp-collective, as km_pcpu_sums. */
KM_INLINE void km_pcpu_counters(const u64 *count, const u64 *pcpu, u32 nc, s64 *sum)
{
	u64 d[4];
	km_pcpu_add(pcpu, nc, 1, d);
	for (u32 f = 0; f < nc; f++)
		sum[f] = (s64)(count[f] + d[f]);
}

/* A kernel string at s (any alignment) into out: at most size - 1 bytes,
 * up to its NUL, the rest of out zeroed.  Read an aligned word at a time
 * (no read crosses a page the string does not reach).  One lane; < 0
 * when a read failed. */
KM_INLINE int km_string(const char *s, char *out, u32 size)
{
	u64 a = km_addr(s), w = 0;
	u32 o = 0;
	for (; o + 1 < size && !__llview_failed(); o++) {
		u64 at = a + o;
		if (o == 0 || (at & 7) == 0)
			w = *(const u64 *)(unsigned long)(at & ~7ul);
		char c = (char)(w >> ((at & 7) * 8));
		if (!c)
			break;
		out[o] = c;
	}
	for (u32 i = o; i < size; i++)
		out[i] = 0;
	return __llview_failed() ? -14 : 0;
}

/* 1 when the kernel has pressure stall information and was not booted
 * with psi=0 (kmetric_host.c: the host's pressure; kmetric_cgroup.c: a
 * cgroup's) */
KM_INLINE int km_psi_on(void) { return &psi_system && !(&psi_disabled && KR(psi_disabled.key.enabled.counter)); }

/* 1 when the target keeps the NTP state in tk_ntp_data (6.13+) */
KM_INLINE int km_ntp_data(void)
{
	return KTYPE_EXISTS(ntp_data) && &tk_ntp_data;
}

/* HZ, the tick's rate: from tick_nsec (ns a tick) to 6.12, from the NTP
 * state's tick_length_base (ns a tick << 32) after; either is within
 * NTP's frequency correction (500 ppm at most) of 1e9 / HZ.  km_hz_at:
 * the word to read (0: neither); km_hz_of: HZ from its value (0: unknown). */
KM_INLINE u64 km_hz_at(void)
{
	if (&tick_nsec)
		return km_addr(&tick_nsec);
	return km_ntp_data() ? km_addr(KP(tk_ntp_data.tick_length_base)) : 0;
}

KM_INLINE unsigned long km_hz_of(u64 w)
{
	if (!w)
		return 0;
	if (&tick_nsec)
		return (unsigned long)((1000000000ull + w / 2) / w);
	return (unsigned long)(((1000000000ull << 32) + w / 2) / w);
}

#endif
