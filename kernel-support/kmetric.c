/* kmetric.c - every catalog metric, read the way kernel code reads it.
 *
 * Written against kcore.h's local views of kernel types and symbols; rulec
 * relocates it for the target kernel (CO-RE) and turns its loads into
 * translated reads of the target's RAM (LLView).  clang compiles this one
 * file for nvptx64 and for the host; see docs/compiler.md.
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
 *   int km_pid_leaves(u64 *q, u32 cap, u32 *ctr)  the PID xarray's leaves
 *   u64 km_pid_task(u64 leaf, u32 slot, u64 nr, u32 *tgid)  one PID's task
 *   int km_task_comm(u64 task, char *out16)
 *   u32 km_cpu_ids(void), int km_cpu_online(u32 cpu)
 *
 * A value that cannot be read is NaN (LLView makes a double-returning entry
 * return NaN when any of its loads failed); an int entry returns a negative
 * KX_ error.  Values are in base units: seconds, bytes, counts.
 *
 * Helpers are static and always inlined into the entry points: LLView sees
 * each metric as one function.
 */
#include "kcore.h"
#include "kstate.h"
#include "kx.h"

#define KM_INLINE static inline __attribute__((always_inline))
#define KM_NAN __builtin_nan("")
#define KM_PAGE_SIZE 4096.0
#define NSEC 1e-9

/* task flags and states (include/linux/sched.h; stable since 2.6) */
#define PF_KTHREAD 0x00200000u
#define KM_MAX_CPUS 1024u
#define KM_MAX_NODES 64u

/* ---- helpers ----------------------------------------------------------- */

/* Unknown because the kernel has no such thing here (a cgroup without the
 * controller, a disk that is not an md array, an interface that is not a
 * bond, a module not loaded, a kernel built without the feature), not a
 * failed read: snrt.c counts NaNs as read errors, but not this one. */
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

KM_INLINE u64 km_cpustat(u32 cpu, long item)
{
	struct kernel_cpustat *kcs = per_cpu_ptr(&kernel_cpustat, cpu);
	return KR(kcs->cpustat[item]);
}

/* USER+NICE+SYSTEM+IRQ+SOFTIRQ+STEAL, as /proc/stat's non-idle fields */
KM_INLINE u64 km_cpu_busy_ns(u32 cpu)
{
	struct kernel_cpustat *kcs = per_cpu_ptr(&kernel_cpustat, cpu);
	return KR(kcs->cpustat[KENUM(cpu_usage_stat, CPUTIME_USER)]) +
	       KR(kcs->cpustat[KENUM(cpu_usage_stat, CPUTIME_NICE)]) +
	       KR(kcs->cpustat[KENUM(cpu_usage_stat, CPUTIME_SYSTEM)]) +
	       KR(kcs->cpustat[KENUM(cpu_usage_stat, CPUTIME_IRQ)]) +
	       KR(kcs->cpustat[KENUM(cpu_usage_stat, CPUTIME_SOFTIRQ)]) +
	       KR(kcs->cpustat[KENUM(cpu_usage_stat, CPUTIME_STEAL)]);
}

/* Idle and iowait as /proc/stat computes them (get_idle_time()): on a
 * NO_HZ kernel the tick_sched sleep times, else cpustat (and always
 * cpustat on 7.2, which keeps the NO_HZ sleep times there too).  The current idle
 * period of a CPU that is idle right now is not in memory until it wakes;
 * docs/metrics.md says what that means for rules. */
KM_INLINE u64 km_cpu_idle_ns(u32 cpu, int iowait)
{
	if (KFIELD_EXISTS(tick_sched, idle_sleeptime) && KFIELD_EXISTS(tick_sched, iowait_sleeptime) &&
	    &tick_nohz_active && &tick_cpu_sched && tick_nohz_active) {
		struct tick_sched *ts = per_cpu_ptr(&tick_cpu_sched, cpu);
		return (u64)(iowait ? KR(ts->iowait_sleeptime) : KR(ts->idle_sleeptime));
	}
	return km_cpustat(cpu, iowait ? KENUM(cpu_usage_stat, CPUTIME_IOWAIT) : KENUM(cpu_usage_stat, CPUTIME_IDLE));
}

KM_INLINE u64 km_vm_event(u32 cpu, long item)
{
	struct vm_event_state *ev = per_cpu_ptr(&vm_event_states, cpu);
	return KR(ev->event[item]);
}

KM_INLINE long km_zone_stat(long item) { return km_clamp0(KR(vm_zone_stat[item].counter)); }
KM_INLINE long km_node_stat(long item) { return km_clamp0(KR(vm_node_stat[item].counter)); }

/* ---- host: CPU time ----------------------------------------------------- */

double km_host_cpus(void)
{
	u64 n = KM_SUM_ONLINE(1);
	return km_collective((double)n);
}

double km_host_cpu_busy_time(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_cpu_busy_ns(cpu)) * NSEC);
}

double km_host_cpu_user_time(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_USER)) +
						   km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_NICE))) * NSEC);
}

double km_host_cpu_system_time(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_SYSTEM))) * NSEC);
}

double km_host_cpu_idle_time(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_cpu_idle_ns(cpu, 0)) * NSEC);
}

double km_host_cpu_iowait_time(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_cpu_idle_ns(cpu, 1)) * NSEC);
}

double km_host_cpu_irq_time(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_IRQ)) +
						   km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_SOFTIRQ))) * NSEC);
}

double km_host_cpu_steal_time(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_STEAL))) * NSEC);
}

/* ---- host: scheduler ---------------------------------------------------- */

double km_host_ctx_switches(void)
{
	return km_collective((double)KM_SUM_ONLINE(KR(per_cpu_ptr(&runqueues, cpu)->nr_switches)));
}

double km_host_forks(void) { return km_collective((double)total_forks); }

double km_host_threads(void) { return km_collective((double)nr_threads); }

double km_host_procs_running(void)
{
	return km_collective((double)KM_SUM_ONLINE(KR(per_cpu_ptr(&runqueues, cpu)->nr_running)));
}

double km_host_procs_blocked(void)
{
	/* nr_iowait() sums every possible CPU's counter, but offline ones hold 0 */
	return km_collective((double)KM_SUM_ONLINE((u32)KR(per_cpu_ptr(&runqueues, cpu)->nr_iowait.counter)));
}

double km_host_load1(void) { return km_collective((double)avenrun[0] / 2048.0); }
double km_host_load5(void) { return km_collective((double)avenrun[1] / 2048.0); }
double km_host_load15(void) { return km_collective((double)avenrun[2] / 2048.0); }

double km_host_jiffies(void) { return km_collective((double)jiffies_64); }

/* ---- host: kernel health -------------------------------------------------- */

#define KM_TAINT_DIE 7
#define KM_TAINT_WARN 9

double km_host_panicked(void) { return km_collective(KR(panic_cpu.counter) != -1 ? 1 : 0); }
double km_host_tainted(void) { return km_collective((double)tainted_mask); }
double km_host_oopsed(void) { return km_collective((double)((tainted_mask >> KM_TAINT_DIE) & 1)); }
double km_host_warned(void) { return km_collective((double)((tainted_mask >> KM_TAINT_WARN) & 1)); }

double km_host_oopses(void)
{
	if (!&oops_count)
		return KM_ABSENT;
	return km_collective((double)KR(oops_count.counter));
}

double km_host_warnings(void)
{
	if (!&warn_count)
		return KM_ABSENT;
	return km_collective((double)KR(warn_count.counter));
}

/* ---- host: memory --------------------------------------------------------- */

double km_host_mem_total(void) { return km_collective((double)_totalram_pages.counter * KM_PAGE_SIZE); }

double km_host_mem_free(void)
{
	return km_collective((double)km_zone_stat(KENUM(zone_stat_item, NR_FREE_PAGES)) * KM_PAGE_SIZE);
}

/* The low watermarks of every zone (for_each_zone in si_mem_available()). */
KM_INLINE unsigned long km_wmark_low_zone(struct pglist_data *pg, u32 z)
{
	struct zone *zn = (struct zone *)((char *)KP(pg->node_zones[0]) + (unsigned long)z * KSIZEOF(zone));
	return KR(zn->_watermark[KENUM(zone_watermarks, WMARK_LOW)]) + KR(zn->watermark_boost);
}

KM_INLINE unsigned long km_wmark_low(void)
{
	unsigned long w = 0;
	u32 zones = (u32)KENUM(zone_type, __MAX_NR_ZONES);
	if (zones > 8)
		zones = 8;
	if (node_data) {
		u32 nodes = &nr_node_ids ? nr_node_ids : 1;
		if (nodes > KM_MAX_NODES)
			nodes = KM_MAX_NODES;
		for (u32 nid = 0; nid < nodes; nid++) {
			struct pglist_data *pg = node_data[nid];
			if (!pg)
				continue;
			for (u32 z = 0; z < zones; z++)
				w += km_wmark_low_zone(pg, z);
		}
	} else if (&contig_page_data) {
		for (u32 z = 0; z < zones; z++)
			w += km_wmark_low_zone(&contig_page_data, z);
	}
	return w;
}

/* si_mem_available(), mm/show_mem.c (6.1 and 6.12 agree) */
double km_host_mem_available(void)
{
	unsigned long wmark_low = km_wmark_low();
	long avail = km_zone_stat(KENUM(zone_stat_item, NR_FREE_PAGES)) - (long)totalreserve_pages;
	unsigned long pagecache = (unsigned long)(km_node_stat(KENUM(node_stat_item, NR_ACTIVE_FILE)) +
						  km_node_stat(KENUM(node_stat_item, NR_INACTIVE_FILE)));
	unsigned long half = pagecache / 2;
	pagecache -= half < wmark_low ? half : wmark_low;
	avail += (long)pagecache;
	unsigned long recl = (unsigned long)(km_node_stat(KENUM(node_stat_item, NR_SLAB_RECLAIMABLE_B)) +
					     km_node_stat(KENUM(node_stat_item, NR_KERNEL_MISC_RECLAIMABLE)));
	half = recl / 2;
	avail += (long)(recl - (half < wmark_low ? half : wmark_low));
	return km_collective((double)km_clamp0(avail) * KM_PAGE_SIZE);
}

double km_host_swap_total(void) { return km_collective((double)total_swap_pages * KM_PAGE_SIZE); }

double km_host_swap_free(void)
{
	return km_collective((double)km_clamp0(nr_swap_pages.counter) * KM_PAGE_SIZE);
}

double km_host_swap_ins(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_vm_event(cpu, KENUM(vm_event_item, PSWPIN))));
}

double km_host_swap_outs(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_vm_event(cpu, KENUM(vm_event_item, PSWPOUT))));
}

double km_host_major_faults(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_vm_event(cpu, KENUM(vm_event_item, PGMAJFAULT))));
}

double km_host_oom_kills(void)
{
	return km_collective((double)KM_SUM_ONLINE(km_vm_event(cpu, KENUM(vm_event_item, OOM_KILL))));
}

/* ---- host: pressure stall information ------------------------------------ */

/* What /proc/pressure/RES shows, from psi_system: the stall time's sum
 * (total[PSI_AVGS][state], ns) and the running averages (avg[state][w],
 * percent << 11).  The kernel folds the per-CPU times into them every 2 s
 * while the system is busy, and when /proc/pressure is read; from outside
 * they are what the last of those left (up to 2 s old).  Unknown when the
 * kernel has no PSI or was booted with psi=0 (no /proc/pressure either). */
KM_INLINE int km_psi_on(void) { return &psi_system && !(&psi_disabled && KR(psi_disabled.key.enabled.counter)); }

KM_INLINE double km_psi_total(long state)
{
	if (!km_psi_on())
		return KM_ABSENT;
	const u64 *t = (const u64 *)KP(psi_system.total);
	return km_collective((double)t[state] * NSEC);
}

KM_INLINE double km_psi_avg(long state, int w)
{
	if (!km_psi_on())
		return KM_ABSENT;
	const unsigned long *a = (const unsigned long *)KP(psi_system.avg);
	return km_collective((double)a[state * 3 + w] / 2048.0 / 100.0);
}

#define KM_PSI(res, kind, STATE)                                                                          \
	double km_host_pressure_##res##_##kind##_time(void) { return km_psi_total(KENUM(psi_states, STATE)); } \
	double km_host_pressure_##res##_##kind##_avg10(void) { return km_psi_avg(KENUM(psi_states, STATE), 0); } \
	double km_host_pressure_##res##_##kind##_avg60(void) { return km_psi_avg(KENUM(psi_states, STATE), 1); } \
	double km_host_pressure_##res##_##kind##_avg300(void) { return km_psi_avg(KENUM(psi_states, STATE), 2); }
KM_PSI(cpu, some, PSI_CPU_SOME)
KM_PSI(memory, some, PSI_MEM_SOME)
KM_PSI(memory, full, PSI_MEM_FULL)
KM_PSI(io, some, PSI_IO_SOME)
KM_PSI(io, full, PSI_IO_FULL)
KM_PSI(irq, full, PSI_IRQ_FULL)
#undef KM_PSI

/* ---- host: the clock -------------------------------------------------------- */

/* What adjtimex(2) reports (kernel/time/ntp.c): file-static variables
 * to 6.12, found through kallsyms; from 6.13 the fields of tk_ntp_data
 * (the system clock's, element 0 where it became an array).  Without
 * CONFIG_NTP_PPS, which Debian and most distributions leave off,
 * TIME_ERROR is exactly STA_UNSYNC or STA_CLOCKERR. */
#define KM_STA_UNSYNC 0x0040
#define KM_STA_CLOCKERR 0x1000
#define KM_USEC 1e-6

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

double km_host_clock_synced(void)
{
	int st;
	if (km_ntp_data())
		st = KR(tk_ntp_data.time_status);
	else if (&time_status)
		st = KR(time_status);
	else
		return KM_ABSENT;
	return km_collective((st & (KM_STA_UNSYNC | KM_STA_CLOCKERR)) ? 0 : 1);
}

double km_host_clock_maxerror(void)
{
	if (km_ntp_data())
		return km_collective((double)KR(tk_ntp_data.time_maxerror) * KM_USEC);
	return &time_maxerror ? km_collective((double)KR(time_maxerror) * KM_USEC) : KM_ABSENT;
}

double km_host_clock_esterror(void)
{
	if (km_ntp_data())
		return km_collective((double)KR(tk_ntp_data.time_esterror) * KM_USEC);
	return &time_esterror ? km_collective((double)KR(time_esterror) * KM_USEC) : KM_ABSENT;
}

/* adjtimex's offset is time_offset * NTP_INTERVAL_FREQ >> NTP_SCALE_SHIFT
 * (ns), and NTP_INTERVAL_FREQ is HZ (km_hz_of). */
double km_host_clock_offset(void)
{
	s64 o;
	u64 at = km_hz_at();
	if (km_ntp_data())
		o = KR(tk_ntp_data.time_offset);
	else if (&time_offset)
		o = KR(time_offset);
	else
		return KM_ABSENT;
	if (!at)
		return KM_ABSENT;
	unsigned long hz = km_hz_of(km_word(at));
	if (!hz)
		return km_collective(KM_NAN);
	return km_collective((double)o * (double)hz / 4294967296.0 * NSEC);
}

/* ---- host: conntrack ------------------------------------------------------- */

/* The connection tracking table of the initial namespace, as
 * /proc/sys/net/netfilter/nf_conntrack_count and _max show it: the
 * nf_conntrack module's variables (unknown while it is not loaded, or was
 * loaded after the target was found). */
double km_host_conntrack_entries(void)
{
	if (!&init_net)
		return KM_ABSENT;
	if (KFIELD_EXISTS(nf_conntrack_net, count)) {
		if (!&nf_conntrack_net_id)
			return KM_ABSENT;
		struct net_generic *ng = KR(init_net.gen);
		u32 id = KR(nf_conntrack_net_id);
		struct nf_conntrack_net *cn = KR(ng->ptr[id]);
		return km_collective((double)(u32)KR(cn->count.counter));
	}
	if (!&nf_conntrack_max)          /* before 5.19: net->ct.count, while the module is loaded */
		return KM_ABSENT;
	return km_collective((double)(u32)KR(((struct net___pre519 *)&init_net)->ct.count.counter));
}

double km_host_conntrack_limit(void)
{
	return &nf_conntrack_max ? km_collective((double)KR(nf_conntrack_max)) : KM_ABSENT;
}

/* ---- host: EDAC ---------------------------------------------------------- */

/* Memory errors the EDAC memory controllers counted, summed over them
 * (node_exporter's node_edac_*_errors_total, per controller there: each
 * /sys/devices/system/edac/mc/mcN/{ce,ue}_count is its mem_ctl_info's
 * ce_mc/ue_mc).  0 where EDAC has no controller (a VM); unknown without
 * EDAC, or on a corrupt or changing list. */
#define KM_MAX_MCS 1024u
KM_INLINE double km_edac_sum(int ue)
{
	if (!&mc_devices || !KTYPE_EXISTS(mem_ctl_info))
		return KM_ABSENT;
	long link = (long)koffsetof(struct mem_ctl_info, link);
	long f = (long)(ue ? koffsetof(struct mem_ctl_info, ue_mc) : koffsetof(struct mem_ctl_info, ce_mc)) - link;
	km_list w;
	km_list_init(&w, &mc_devices, KM_MAX_MCS);
	u64 sum = 0, v;
	int r;
	while ((r = km_list_step(&w, f, &v)) > 0)
		sum += (u32)v;
	return r < 0 ? KM_NAN : km_collective((double)sum);
}

double km_host_edac_correctable_errors(void) { return km_edac_sum(0); }
double km_host_edac_uncorrectable_errors(void) { return km_edac_sum(1); }

/* ---- per CPU -------------------------------------------------------------- */

u32 km_cpu_ids(void) { return km_nr_cpu_ids(); }

int km_cpu_online(u32 cpu)
{
	if (cpu >= km_nr_cpu_ids())
		return 0;
	int on = km_online(cpu);
	return __llview_failed() ? -14 : on;
}

double km_cpu_busy_time(u32 cpu) { return (double)km_cpu_busy_ns(cpu) * NSEC; }

double km_cpu_user_time(u32 cpu)
{
	return (double)(km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_USER)) +
			km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_NICE))) * NSEC;
}

double km_cpu_system_time(u32 cpu) { return (double)km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_SYSTEM)) * NSEC; }
double km_cpu_idle_time(u32 cpu) { return (double)km_cpu_idle_ns(cpu, 0) * NSEC; }
double km_cpu_iowait_time(u32 cpu) { return (double)km_cpu_idle_ns(cpu, 1) * NSEC; }

double km_cpu_irq_time(u32 cpu)
{
	return (double)(km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_IRQ)) +
			km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_SOFTIRQ))) * NSEC;
}

double km_cpu_steal_time(u32 cpu) { return (double)km_cpustat(cpu, KENUM(cpu_usage_stat, CPUTIME_STEAL)) * NSEC; }
double km_cpu_ctx_switches(u32 cpu) { return (double)KR(per_cpu_ptr(&runqueues, cpu)->nr_switches); }
double km_cpu_nr_running(u32 cpu) { return (double)KR(per_cpu_ptr(&runqueues, cpu)->nr_running); }

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
 * long; ctr[0] its length, ctr[1] where the leaves start (both written
 * here).  Returns the number of leaf nodes, 0 for an empty tree, or a
 * negative KX_ error (a node that does not check out: KX_ELOOP; the queue
 * too short: KX_ERANGE).  Lane 0 writes ctr; lanes append with atomics. */
int km_pid_leaves(u64 *q, u32 cap, u32 *ctr)
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
	if (simt_lane() == 0) {
		q[0] = head - 2;
		q[1] = 0;
		ctr[0] = 1;
	}
	simt_sync();
	u32 lo = 0, hi = 1;
	int bad = 0;
	for (; shift > 0; shift -= KM_XA_SHIFT) {
		u32 cnt = (hi - lo) * KM_XA_SLOTS;
		for (u32 k = simt_lane(); k < cnt; k += simt_nlanes()) {
			u64 nd = q[2 * (lo + k / KM_XA_SLOTS)], base = q[2 * (lo + k / KM_XA_SLOTS) + 1];
			struct xa_node *n = (struct xa_node *)(unsigned long)nd;
			void **slots = KP(n->slots[0]);
			u64 e = (u64)(unsigned long)slots[k % KM_XA_SLOTS];
			if (!km_xa_is_node(e))
				continue;                    /* empty, a retry entry, or failed */
			struct xa_node *c = km_xa_node(e);
			if (KR(c->shift) != shift - KM_XA_SHIFT || KR(c->parent) != n || KR(c->array) != xa ||
			    KR(c->offset) != k % KM_XA_SLOTS) {
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
	if ((u64)(unsigned)KR(t->pid) != nr)
		return 0;
	*tgid = (u32)KR(t->tgid);
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
	unsigned int s = (state | (unsigned int)KR(p->exit_state)) & 0x7fu;   /* TASK_REPORT */
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
/* The thread group's user and system time as /proc/PID/stat shows them:
 * thread_group_cputime() (the dead threads' sums in signal_struct plus
 * every live thread), scaled by cputime_adjust() from tick samples to the
 * precise runtime and kept monotonic against signal->prev_cputime, the
 * kernel's last answer.  Nanoseconds. */
#define KM_MAX_THREADS 65536u
KM_INLINE void km_group_times(struct task_struct *p, double *ut, double *st)
{
	struct signal_struct *sig = KR(p->signal);
	*ut = *st = KM_NAN;
	if (!sig)
		return;
	u64 u = KR(sig->utime), s = KR(sig->stime), r = KR(sig->sum_sched_runtime);
	struct list_head *head = KP(sig->thread_head), *n = head->next;
	kx_loop lp;
	kx_loop_init(&lp, km_addr(head));
	u32 i = 0;
	for (; n != head && i < KM_MAX_THREADS && !__llview_failed() && !km_spent(); i++) {
		struct task_struct *t = kcontainer_of(n, struct task_struct, thread_node);
		if (kx_loop_seen(&lp, km_addr(n)))
			break;
		u += KR(t->utime);
		s += KR(t->stime);
		r += KR(t->se.sum_exec_runtime);
		n = n->next;
	}
	if (n != head)                           /* a cycle, or the cap: no sum is the group's */
		return;
	double pu = (double)KR(sig->prev_cputime.utime), ps = (double)KR(sig->prev_cputime.stime);
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

double km_task_kernel_time(u64 t)
{
	double ut, st;
	km_group_times(km_task(t), &ut, &st);
	return st * NSEC;
}

double km_task_user_time(u64 t)
{
	double ut, st;
	km_group_times(km_task(t), &ut, &st);
	return ut * NSEC;
}

double km_task_ctx_switches(u64 t)
{
	struct task_struct *p = km_task(t);
	return (double)(KR(p->nvcsw) + KR(p->nivcsw));
}

double km_task_threads(u64 t)
{
	struct signal_struct *sig = KR(km_task(t)->signal);
	return sig ? (double)KR(sig->nr_threads) : 0;
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
	for (u32 i = 0; i < 16; i += 8) {
		u64 w = *(u64 *)((char *)KP(p->comm[0]) + i);
		for (u32 b = 0; b < 8; b++)
			out[i + b] = (char)(w >> (8 * b));
	}
	out[15] = 0;
	return __llview_failed() ? -14 : 0;
}

/* ---- disks: block devices, as /proc/diskstats -------------------------------------
 *
 * Every disk and partition is a block_device inside an inode of the bdev
 * pseudo filesystem (struct bdev_inode), on blockdev_superblock's inode
 * list; one that is added is hashed (bdev_add), one deleted is unhashed,
 * the filesystem's root has no disk.  /proc/diskstats walks block_class
 * instead and shows the same devices, except hidden ones (never hashed)
 * and partitions of no sectors (skipped by both).  5.11+: before, a
 * partition's block_device existed only while it was open.  The counters
 * are per CPU, summed over the possible CPUs as diskstats does; a
 * partition's are in its disk's as well. */

#define KM_MAX_BDEV_INODES 1048576u

KM_INLINE struct block_device *km_bdev(u64 d) { return (struct block_device *)(unsigned long)d; }

/* Where the partition number and the read-only flag are: their own
 * fields up to 6.9, one flags word from 6.10 (BD_PARTNO 0xff, BD_READ_ONLY
 * 1 << 8); read through km_word, the number is the low byte either way. */
KM_INLINE u64 km_bdev_partno_at(struct block_device *b)
{
	if (KFIELD_EXISTS(block_device, bd_partno))
		return km_addr(KP(b->bd_partno));
	return km_addr(KP(((struct block_device___610 *)b)->__bd_flags.counter));
}

KM_INLINE u64 km_bdev_ro_at(struct block_device *b)
{
	if (KFIELD_EXISTS(block_device, bd_read_only))
		return km_addr(KP(b->bd_read_only));
	return km_addr(KP(((struct block_device___610 *)b)->__bd_flags.counter));
}

KM_INLINE int km_bdev_ro_of(u64 word)
{
	if (KFIELD_EXISTS(block_device, bd_read_only))
		return (word & 0xff) != 0;
	return (int)((word >> 8) & 1);
}

/* Warp-collective: every lane gets the count, lane 0 writes out. */
enum { KW_NEXT, KW_PREV, KW_HASHED, KW_DISK, KW_STATS, KW_PARTNO, KW_SECTORS, KW__N };

int km_disk_walk(u64 *out, u32 cap)
{
	struct super_block *sb = blockdev_superblock;
	struct list_head *head = KP(sb->s_inodes), *cur = head, *next = KR(head->next);
	unsigned long back = koffsetof(struct bdev_inode, vfs_inode);
	int n = 0;
	kx_loop lp;
	kx_loop_init(&lp, km_addr(head));
	for (u32 seen = 0;; seen++) {
		if (next == head || simt_any(__llview_failed()))
			break;
		struct inode *ino = kcontainer_of(next, struct inode, i_sb_list);
		struct block_device *b = (struct block_device *)((char *)ino - back);
		/* an inode's fields and its next link, a field a lane: one
		 * load for the warp an inode */
		u64 a[KW__N], v[KW__N];
		a[KW_NEXT] = km_addr(&next->next);
		a[KW_PREV] = km_addr(&next->prev);
		a[KW_HASHED] = km_addr(KP(ino->i_hash.pprev));
		a[KW_DISK] = km_addr(KP(b->bd_disk));
		a[KW_STATS] = km_addr(KP(b->bd_stats));
		a[KW_PARTNO] = km_bdev_partno_at(b);
		a[KW_SECTORS] = km_addr(KP(b->bd_nr_sectors));
		km_gather(a, KW__N, v);
		if (seen >= KM_MAX_BDEV_INODES || v[KW_PREV] != km_addr(cur) || kx_loop_seen(&lp, km_addr(next)))
			return -40;             /* KX_ELOOP: a corrupt, changing or endless list */
		if (km_spent_all())
			return KM_EBUDGET;
		if (v[KW_HASHED] && v[KW_DISK] && v[KW_STATS] && (!(v[KW_PARTNO] & 0xff) || v[KW_SECTORS])) {
			if ((u32)n < cap && simt_lane() == 0)
				out[n] = km_addr(b);
			n++;
		}
		cur = next;
		next = (struct list_head *)(unsigned long)v[KW_NEXT];
	}
	return simt_any(__llview_failed()) ? -14 : n;
}

/* The device's name ("vda", "vda1"): its kobject's, a kmalloc'd string
 * read a word at a time up to its NUL (at most 31 characters). */
int km_disk_name(u64 d, char *out)
{
	const char *s = KR(km_bdev(d)->bd_device.kobj.name);
	u32 i = 0;
	int end = 0;
	for (; i < 32 && !end && !__llview_failed(); i += 8) {
		u64 w = *(const u64 *)(s + i);
		for (u32 b = 0; b < 8; b++) {
			out[i + b] = end ? 0 : (char)(w >> (8 * b));
			end |= out[i + b] == 0;
		}
	}
	for (; i < 32; i++)
		out[i] = 0;
	out[31] = 0;
	return __llview_failed() ? -14 : 0;
}

/* A disk's counters, summed over the possible CPUs once a tick into a
 * block (km_disk_stats: the device's fields one gather, the counters
 * km_pcpu_sums); its metrics are then read from the block.  One pass over
 * the CPUs instead of one per metric. */
enum {
	KD_NSECS = 0, KD_SECTORS = 4, KD_IOS = 8, KD_MERGES = 12,   /* [stat_group] each */
	KD_IO_TICKS = 16, KD_INFLIGHT = 17,                          /* in_flight[2]: summed into the first */
	KD_WORDS = 19,                                               /* the per-CPU words */
	/* the device's own fields, read once with the counters */
	KD_SIZE = KD_WORDS, KD_PARTNO, KD_RO, KD_STAMP, KD_JIFFIES, KD_HZ,
	KD_MD, KD_MD_ACTIVE, KD_MD_DEGRADED, KD_MD_DISKS,            /* an md array's (KD_MD: it is one) */
	KD_FAILED, KD__COUNT
};
_Static_assert(KD__COUNT <= 32, "the block rulec gives km_disk_stats (CG_OBJ_BLOCK)");
_Static_assert(KD_WORDS <= KM_PCPU_WORDS, "km_pcpu_sums");

/* the device's fields and the clock, one gather */
enum { KH_STATS, KH_DISK, KH_SECTORS, KH_STAMP, KH_PARTNO, KH_RO, KH_JIFFIES, KH_TICK, KH__N };

int km_disk_stats(u64 d, u64 *blk)
{
	struct block_device *b = km_bdev(d);
	u64 a[KH__N], h[KH__N];
	a[KH_STATS] = km_addr(KP(b->bd_stats));
	a[KH_DISK] = km_addr(KP(b->bd_disk));
	a[KH_SECTORS] = km_addr(KP(b->bd_nr_sectors));
	a[KH_STAMP] = km_addr(KP(b->bd_stamp));
	a[KH_PARTNO] = km_bdev_partno_at(b);
	a[KH_RO] = km_bdev_ro_at(b);
	a[KH_JIFFIES] = km_addr(&jiffies_64);
	u64 hz_at = km_hz_at();
	a[KH_TICK] = hz_at ? hz_at : a[KH_JIFFIES];
	km_gather(a, KH__N, h);
	struct disk_stats *st = (struct disk_stats *)(unsigned long)h[KH_STATS];
	struct gendisk *g = (struct gendisk *)(unsigned long)h[KH_DISK];
	/* the whole disk's read-only flags, and whether it is an md array:
	 * four reads more */
	u64 ga[4] = {km_addr(KP(g->state)), km_addr(KP(g->part0)), km_addr(KP(g->major)), km_addr(KP(g->private_data))},
	    gv[4], wa, wv;
	km_gather(ga, 4, gv);
	wa = km_bdev_ro_at((struct block_device *)(unsigned long)gv[1]);
	km_gather(&wa, 1, &wv);
	/* the counters' offsets in struct disk_stats, relocated */
	u64 off[KD_WORDS];
	for (u32 k = 0; k < 4; k++) {
		off[KD_NSECS + k] = km_addr(KP(st->nsecs[k])) - km_addr(st);
		off[KD_SECTORS + k] = km_addr(KP(st->sectors[k])) - km_addr(st);
		off[KD_IOS + k] = km_addr(KP(st->ios[k])) - km_addr(st);
		off[KD_MERGES + k] = km_addr(KP(st->merges[k])) - km_addr(st);
	}
	off[KD_IO_TICKS] = km_addr(KP(st->io_ticks)) - km_addr(st);
	off[KD_INFLIGHT] = km_addr(KP(st->in_flight[0])) - km_addr(st);
	off[KD_INFLIGHT + 1] = km_addr(KP(st->in_flight[1])) - km_addr(st);
	km_pcpu_sums(km_addr(st), off, KD_WORDS, blk);
	blk[KD_INFLIGHT] += blk[KD_INFLIGHT + 1];
	blk[KD_SIZE] = h[KH_SECTORS] * 512;
	blk[KD_PARTNO] = h[KH_PARTNO] & 0xff;
	blk[KD_STAMP] = h[KH_STAMP];
	blk[KD_JIFFIES] = h[KH_JIFFIES];
	blk[KD_HZ] = hz_at ? km_hz_of(h[KH_TICK]) : 0;
	blk[KD_RO] = (u64)(km_bdev_ro_of(h[KH_RO]) | ((gv[0] >> 1) & 1) | km_bdev_ro_of(wv));
	/* an md array (the whole disk, not a partition of it): its mddev,
	 * where md_mod is loaded (/sys/block/mdN/md: array_state, degraded,
	 * raid_disks) */
	blk[KD_MD] = 0;
	if (KTYPE_EXISTS(mddev) && (u32)gv[2] == 9 && gv[3] && !blk[KD_PARTNO]) {
		struct mddev *md = (struct mddev *)(unsigned long)gv[3];
		u64 ma[3] = {km_addr(KP(md->pers)), km_addr(KP(md->degraded)), km_addr(KP(md->raid_disks))}, mv[3];
		km_gather(ma, 3, mv);
		blk[KD_MD] = 1;
		blk[KD_MD_ACTIVE] = mv[0] != 0;
		blk[KD_MD_DEGRADED] = (u32)mv[1];
		blk[KD_MD_DISKS] = (u32)mv[2];
	}
	blk[KD_FAILED] = (u64)simt_any(__llview_failed());
	return 0;
}

/* block item i as a double; NaN when the block could not be read */
KM_INLINE double km_blk(const u64 *blk, long i) { return blk[KD_FAILED] ? KM_NAN : (double)blk[i]; }

#define KM_RD KENUM(stat_group, STAT_READ)
#define KM_WR KENUM(stat_group, STAT_WRITE)

double km_disk_partition(u64 d, const u64 *blk) { return blk[KD_FAILED] ? KM_NAN : blk[KD_PARTNO] != 0; }
double km_disk_size(u64 d, const u64 *blk) { return km_blk(blk, KD_SIZE); }
/* the device's flag, its disk's (whole-disk device) or the disk's GD_READ_ONLY */
double km_disk_read_only(u64 d, const u64 *blk) { return blk[KD_FAILED] ? KM_NAN : blk[KD_RO] != 0; }

/* md RAID: unknown for a device that is not an md array */
KM_INLINE double km_md(const u64 *blk, long i)
{
	return blk[KD_FAILED] ? KM_NAN : !blk[KD_MD] ? KM_ABSENT : (double)blk[i];
}
double km_disk_md_active(u64 d, const u64 *blk) { return km_md(blk, KD_MD_ACTIVE); }
double km_disk_md_degraded(u64 d, const u64 *blk) { return km_md(blk, KD_MD_DEGRADED); }
double km_disk_md_disks(u64 d, const u64 *blk) { return km_md(blk, KD_MD_DISKS); }
double km_disk_reads(u64 d, const u64 *blk) { return km_blk(blk, KD_IOS + KM_RD); }
double km_disk_reads_merged(u64 d, const u64 *blk) { return km_blk(blk, KD_MERGES + KM_RD); }
double km_disk_read_bytes(u64 d, const u64 *blk) { return km_blk(blk, KD_SECTORS + KM_RD) * 512.0; }
double km_disk_read_time(u64 d, const u64 *blk) { return km_blk(blk, KD_NSECS + KM_RD) * NSEC; }
double km_disk_writes(u64 d, const u64 *blk) { return km_blk(blk, KD_IOS + KM_WR); }
double km_disk_writes_merged(u64 d, const u64 *blk) { return km_blk(blk, KD_MERGES + KM_WR); }
double km_disk_written_bytes(u64 d, const u64 *blk) { return km_blk(blk, KD_SECTORS + KM_WR) * 512.0; }
double km_disk_write_time(u64 d, const u64 *blk) { return km_blk(blk, KD_NSECS + KM_WR) * NSEC; }

double km_disk_weighted_io_time(u64 d, const u64 *blk)
{
	if (blk[KD_FAILED])
		return KM_NAN;
	return (double)(blk[KD_NSECS] + blk[KD_NSECS + 1] + blk[KD_NSECS + 2] + blk[KD_NSECS + 3]) * NSEC;
}

/* In flight: the per-CPU counts (exact from 6.10; on 6.1 a blk-mq disk's
 * diskstats counts its tags instead, which these approach from above). */
KM_INLINE long km_disk_inflight(const u64 *blk)
{
	long v = (long)blk[KD_INFLIGHT];
	return v < 0 ? 0 : v;
}

double km_disk_in_flight(u64 d, const u64 *blk) { return blk[KD_FAILED] ? KM_NAN : (double)km_disk_inflight(blk); }

/* io_ticks as diskstats prints it: with I/O in flight, the kernel adds
 * the jiffies since bd_stamp before printing (5.18+); so do we.  Seconds
 * at the kernel's HZ (km_hz_of). */
double km_disk_io_time(u64 d, const u64 *blk)
{
	if (blk[KD_FAILED] || !blk[KD_HZ])
		return KM_NAN;
	u64 ticks = blk[KD_IO_TICKS];
	unsigned long stamp = (unsigned long)blk[KD_STAMP], now = (unsigned long)blk[KD_JIFFIES];
	if (km_disk_inflight(blk) > 0 && now > stamp)
		ticks += now - stamp;
	return (double)ticks / (double)blk[KD_HZ];
}

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

/* ---- network devices: every namespace's, as each one's /proc/net/dev ----------------------
 *
 * Every net_device of every namespace, on its dev_base_head (registered
 * and not yet unregistered): the initial namespace's by their names, a
 * container's (the other end of its veth, its own lo) as NAME@INUM, INUM
 * the namespace's inode number (/proc/PID/ns/net, lsns -t net).  Each
 * namespace's /proc/net/dev prints dev_get_stats(): the driver's
 * ndo_get_stats64 when it has one, else (6.7+) the core's per-CPU tstats
 * or dstats over dev->stats as pcpu_stat_type says, else dev->stats, plus
 * the core's drop counts.  From outside there is no calling the driver,
 * so the counters are read where each driver keeps them: loopback's
 * per-CPU lstats, virtio_net's per-queue stats (its types come from the
 * module's BTF), dev->stats and the per-CPU tstats for a driver whose
 * callback is dev_get_tstats64 (a bridge, vxlan, ip tunnels), dummy's
 * lstats (its callback fills the transmits alone), dev->stats with the
 * core's tstats or dstats for a driver without a callback, veth's tstats
 * with its peer's transmits as its receives.  Any other driver's counters
 * (bonding's) are unknown (KM_ABSENT), never a guess. */

#define KM_MAX_NETDEVS 65536u
#define KM_IFF_UP 0x1u
#define KM_IFF_LOOPBACK 0x8u

#define KM_MAX_NETNS 65536u

/* Warp-collective: every lane gets the count, lane 0 writes out.  Every
 * namespace's devices (net_namespace_list: init_net's first, then the
 * containers'), or init_net's alone where the list cannot be read. */
int km_net_walk(u64 *out, u32 cap)
{
	if (!&init_net)
		return -2;                      /* KX_ENOENT: a kernel without networking */
	int all = &net_namespace_list && KFIELD_EXISTS(net, list);
	km_list ns;
	if (all)
		km_list_init(&ns, KP(net_namespace_list), KM_MAX_NETNS);
	int n = 0, r = 0, done = 0;
	u64 v;
	while (!done) {
		/* through an integer: LLView reads a kernel address there (ns.cur
		 * sits in the detector's own memory) */
		u64 at = km_addr(&init_net);
		if (all) {
			if ((r = km_list_step(&ns, KM_LIST_NONE, &v)) <= 0)
				break;
			at = km_addr(ns.cur) - (u64)koffsetof(struct net, list);
		} else {
			done = 1;
		}
		struct net *net = (struct net *)(unsigned long)at;
		km_list w;
		km_list_init(&w, KP(net->dev_base_head), KM_MAX_NETDEVS);
		int rd;
		while ((rd = km_list_step(&w, KM_LIST_NONE, &v)) > 0) {
			if ((u32)n < cap && simt_lane() == 0)
				out[n] = km_addr(kcontainer_of(w.cur, struct net_device, dev_list));
			n++;
		}
		if (rd < 0)
			return w.spent ? KM_EBUDGET : -40;  /* KX_ELOOP: a corrupt, changing or endless list */
		if (simt_any(__llview_failed()))
			return -14;
		if (n > (int)KM_MAX_NETDEVS)
			return -40;
	}
	if (r < 0)
		return ns.spent ? KM_EBUDGET : -40;
	return simt_any(__llview_failed()) ? -14 : n;
}

/* The interface's name ("eth0"): IFNAMSIZ bytes inline.  One lane. */
int km_net_name(u64 d, char *out, u32 size)
{
	const u64 *p = (const u64 *)KP(((struct net_device *)(unsigned long)d)->name);
	u64 w[2] = {p[0], p[1]};
	u32 i = 0;
	for (; i < 16 && i + 1 < size; i++) {
		char c = (char)(w[i / 8] >> (8 * (i % 8)));
		if (!c)
			break;
		out[i] = c;
	}
	/* a device of another namespace (a container's end of a veth):
	 * NAME@INUM, INUM its namespace's, as /proc/PID/ns/net says net:[INUM] */
	u64 na = KFIELD_EXISTS(net_device, nd_net) ? km_addr(KR(((struct net_device *)(unsigned long)d)->nd_net)) : 0;
	if (na && na != km_addr(&init_net)) {
		u32 inum = KR(((struct net *)(unsigned long)na)->ns.inum), k = 0;
		char dig[10];
		do
			dig[k++] = (char)('0' + inum % 10);
		while ((inum /= 10) && k < 10);
		if (i + 1 < size)
			out[i++] = '@';
		while (k && i + 1 < size)
			out[i++] = dig[--k];
	}
	for (; i < size; i++)
		out[i] = 0;
	return __llview_failed() ? -14 : 0;
}

/* A device's counters, read once a tick into a block (km_net_stats: its
 * fields one gather, its driver's name two more, the core's drops and
 * loopback's counters km_pcpu_sums, virtio_net's queues a (queue, field)
 * pair a lane); the metrics read the block. */
enum {
	KN_RX_PACKETS, KN_TX_PACKETS, KN_RX_BYTES, KN_TX_BYTES, KN_RX_ERRORS, KN_TX_ERRORS, KN_RX_DROPPED,
	KN_TX_DROPPED, KN_RX_MISSED,                             /* dev->stats */
	KN_FLAGS, KN_STATE, KN_OPS, KN_CORE, KN_LSTATS, KN_PARENT, KN_OPER,
	KN_G1,                                                   /* the device's words, one gather */
	KN_CORE_RXD = KN_G1, KN_CORE_TXD,                        /* the core's drops, summed over CPUs */
	KN_LO_PACKETS, KN_LO_BYTES,                              /* loopback */
	KN_V_RXP, KN_V_RXB, KN_V_RXD, KN_V_TXP, KN_V_TXB, KN_V_TXE, /* virtio_net's queues, summed */
	KN_V_SPEED,                                              /* virtio_net's link speed (Mb/s) */
	KN_BOND, KN_BOND_SLAVES, KN_BOND_UP,                     /* a bond's (KN_BOND: it is one) */
	KN_P_RXP, KN_P_RXB, KN_P_TXP, KN_P_TXB, KN_P_RXD, KN_P_TXD, /* per-CPU tstats, dstats or dummy's lstats */
	KN_VE_TXD,                                               /* veth: its transmits the peer dropped */
	KN_KIND, KN_FAILED, KN__COUNT
};
_Static_assert(KN__COUNT <= 64, "the block rulec gives km_net_stats (CG_OBJ_BLOCK)");
/* how dev_get_stats() gets a driver's counters, and so how they are read:
 * dev->stats (GENERIC), per-CPU lstats (LOOPBACK), virtio_net's queues,
 * dev->stats plus the per-CPU tstats (dev_get_tstats64: bridge, vxlan,
 * ip tunnels...) or dstats (6.7+, the core's, for a driver without a
 * callback), dummy's lstats (its transmits alone) */
enum { KN_GENERIC, KN_LOOPBACK, KN_VIRTIO, KN_TSTATS, KN_DSTATS, KN_DUMMY, KN_VETH, KN_UNKNOWN };
enum { KM_PCPU_STAT_TSTATS = 2, KM_PCPU_STAT_DSTATS = 3 };      /* enum netdev_stat_type */

#define KM_IFF_MASTER 0x400u
#define KM_MAX_SLAVES 256u

/* A bond (the bonding module's netdev_ops, where it was loaded when the
 * target was found): its slaves are its lower devices, each adjacency's
 * private its struct slave (bond_for_each_slave); a slave is active when
 * its link is BOND_LINK_UP (0), as /sys/class/net/BOND/lower_IF/
 * bonding_slave/mii_status says "up".  A corrupt or changing list leaves
 * the counts unknown. */
KM_INLINE void km_bond(struct net_device *dev, u64 *blk)
{
	blk[KN_BOND] = blk[KN_BOND_SLAVES] = blk[KN_BOND_UP] = 0;
	if (!(blk[KN_FLAGS] & KM_IFF_MASTER) || !&bond_netdev_ops || blk[KN_OPS] != km_addr(&bond_netdev_ops) ||
	    !KTYPE_EXISTS(slave) || !KTYPE_EXISTS(netdev_adjacent))
		return;
	long priv = (long)koffsetof(struct netdev_adjacent, private) - (long)koffsetof(struct netdev_adjacent, list);
	km_list w;
	km_list_init(&w, KP(dev->adj_list[1]), KM_MAX_SLAVES);
	u32 up = 0;
	u64 v, la, lv;
	int r;
	while ((r = km_list_step(&w, priv, &v)) > 0) {
		la = v ? km_addr(KP(((struct slave *)(unsigned long)v)->link)) : km_dummy_addr();
		km_gather(&la, 1, &lv);
		up += v && (s8)(lv & 0xff) == 0;
	}
	if (r < 0)
		return;
	blk[KN_BOND] = 1;
	blk[KN_BOND_SLAVES] = w.n;
	blk[KN_BOND_UP] = up;
}

/* virtio_net's types are the module's: present only while it is loaded */
KM_INLINE int km_virtio_types(void)
{
	return KTYPE_EXISTS(virtnet_info) && KTYPE_EXISTS(receive_queue) && KTYPE_EXISTS(send_queue) &&
	       KTYPE_EXISTS(virtnet_rq_stats) && KTYPE_EXISTS(virtnet_sq_stats);
}

/* virtio_net: each queue pair's counters, as virtnet_stats sums them */
KM_INLINE void km_virtio_queues(struct net_device *dev, u64 *blk)
{
	u64 priv = KFIELD_EXISTS(net_device, priv) ? km_addr(KP(dev->priv))
						   : km_addr(dev) + ((KSIZEOF(net_device) + 31) & ~31ul);
	struct virtnet_info *vi = (struct virtnet_info *)(unsigned long)priv;
	u64 a[4] = {km_addr(KP(vi->sq)), km_addr(KP(vi->rq)), km_addr(KP(vi->max_queue_pairs)),
		    KFIELD_EXISTS(virtnet_info, speed) ? km_addr(KP(vi->speed)) : km_dummy_addr()}, v[4];
	km_gather(a, 4, v);
	/* SPEED_UNKNOWN (-1) until the host tells (VIRTIO_NET_F_SPEED_DUPLEX) */
	blk[KN_V_SPEED] = KFIELD_EXISTS(virtnet_info, speed) ? v[3] & 0xffffffffu : 0xffffffffu;
	struct send_queue *sq = (struct send_queue *)(unsigned long)v[0];
	struct receive_queue *rq = (struct receive_queue *)(unsigned long)v[1];
	u32 nq = (u32)(v[2] & 0xffff), lane = simt_lane(), nl = simt_nlanes();
	if (nq > 1024)
		nq = 1024;
	u64 base[6] = {km_addr(KP(rq->stats.packets)), km_addr(KP(rq->stats.bytes)), km_addr(KP(rq->stats.drops)),
		       km_addr(KP(sq->stats.packets)), km_addr(KP(sq->stats.bytes)), km_addr(KP(sq->stats.tx_timeouts))};
	u64 stride[6] = {KSIZEOF(receive_queue), KSIZEOF(receive_queue), KSIZEOF(receive_queue),
			 KSIZEOF(send_queue), KSIZEOF(send_queue), KSIZEOF(send_queue)};
	u64 acc[6] = {0, 0, 0, 0, 0, 0};
	for (u32 j = lane; j < nq * 6; j += nl) {
		u32 q = j / 6, f = j % 6;
		acc[f] += km_word(base[f] + (u64)q * stride[f]);
	}
	for (u32 f = 0; f < 6; f++)
		blk[KN_V_RXP + f] = simt_sum_u64(acc[f]);
}

/* veth: veth_get_stats64 sums its tstats (what it sent) and its peer's
 * transmits as its receives (what one end sends the other receives), and
 * adds priv->dropped (sends the peer could not take) to its transmit
 * drops.  Its XDP counters (per receive queue, veth_rq_stats: packets an
 * XDP program redirected or dropped) are not read: 0 without XDP.  The
 * totals go in virtio_net's slots, which a veth does not use. */
KM_INLINE void km_veth(struct net_device *dev, u64 *blk)
{
	u64 priv = KFIELD_EXISTS(net_device, priv) ? km_addr(KP(dev->priv))
						   : km_addr(dev) + ((KSIZEOF(net_device) + 31) & ~31ul);
	struct veth_priv *vp = (struct veth_priv *)(unsigned long)priv;
	u64 a[2] = {km_addr(KP(vp->peer)), km_addr(KP(vp->dropped.counter))}, v[2];
	km_gather(a, 2, v);
	blk[KN_VE_TXD] = v[1];
	u64 s[2] = {0, 0};
	struct net_device___pcpu *peer = (struct net_device___pcpu *)(unsigned long)v[0];
	if (peer) {                              /* no peer: its end is being deleted */
		u64 ta = km_addr(KP(peer->tstats)), tv;
		km_gather(&ta, 1, &tv);
		struct pcpu_sw_netstats *t = (struct pcpu_sw_netstats *)(unsigned long)tv;
		u64 off[2] = {km_addr(KP(t->tx_packets)) - tv, km_addr(KP(t->tx_bytes)) - tv};
		if (tv)
			km_pcpu_sums(tv, off, 2, s);
	}
	blk[KN_V_RXP] = blk[KN_P_RXP] + s[0];
	blk[KN_V_RXB] = blk[KN_P_RXB] + s[1];
	blk[KN_V_TXP] = blk[KN_P_TXP];
	blk[KN_V_TXB] = blk[KN_P_TXB];
}

KM_INLINE u64 km_net_kind(struct net_device *dev, u64 flags, int virtio, u64 get64, u64 get)
{
	if (flags & KM_IFF_LOOPBACK)
		return KN_LOOPBACK;
	if (virtio)
		return km_virtio_types() ? KN_VIRTIO : KN_UNKNOWN;
	/* veth keeps tstats since 6.7 (commit 6f2684bf2b44; 6.1.120's
	 * backport too), and says so in the core's pcpu_stat_type, which came
	 * with it; before, its lstats (its transmits alone): not read */
	if (get64 && get64 == km_addr(veth_get_stats64) && &veth_get_stats64)
		return KTYPE_EXISTS(veth_priv) && KFIELD_EXISTS(net_device___pcpu, tstats) &&
		       KFIELD_EXISTS(net_device___pcpu, pcpu_stat_type) &&
		       (KR(((struct net_device___pcpu *)dev)->pcpu_stat_type) & 0xff) == KM_PCPU_STAT_TSTATS
		       ? KN_VETH : KN_UNKNOWN;
	if (get64)
		return get64 == km_addr(dev_get_tstats64) && &dev_get_tstats64 ? KN_TSTATS
		       : get64 == km_addr(dummy_get_stats64) && &dummy_get_stats64 ? KN_DUMMY : KN_UNKNOWN;
	if (get)
		return KN_UNKNOWN;
	if (!KFIELD_EXISTS(net_device___pcpu, pcpu_stat_type))
		return KN_GENERIC;                      /* before 6.7: dev->stats */
	u64 t = KR(((struct net_device___pcpu *)dev)->pcpu_stat_type) & 0xff;
	return t == KM_PCPU_STAT_TSTATS ? KN_TSTATS : t == KM_PCPU_STAT_DSTATS ? KN_DSTATS : KN_GENERIC;
}

/* The per-CPU counters dev_get_stats() adds for the kind: tstats' or
 * dstats' four (six) sums, or dummy's transmits and, as its callback
 * fills nothing else, the core's drops alone */
KM_INLINE void km_net_pcpu(struct net_device *dev, u64 kind, u64 *blk)
{
	for (u32 f = 0; f < 6; f++)
		blk[KN_P_RXP + f] = 0;
	if (kind == KN_VETH)
		kind = KN_TSTATS;                   /* its own: the core's tstats */
	if (kind == KN_TSTATS || kind == KN_DSTATS) {
		struct net_device___pcpu *pd = (struct net_device___pcpu *)dev;
		u64 dm = km_dummy_addr(), v[2], s[6];
		u64 a[2] = {KFIELD_EXISTS(net_device___pcpu, tstats) ? km_addr(KP(pd->tstats)) : dm,
			    KFIELD_EXISTS(net_device___pcpu, dstats) ? km_addr(KP(pd->dstats)) : dm};
		km_gather(a, 2, v);
		if (!KFIELD_EXISTS(net_device___pcpu, tstats))
			v[0] = 0;
		if (!KFIELD_EXISTS(net_device___pcpu, dstats))
			v[1] = 0;
		if (kind == KN_TSTATS && v[0]) {
			struct pcpu_sw_netstats *t = (struct pcpu_sw_netstats *)(unsigned long)v[0];
			u64 off[4] = {km_addr(KP(t->rx_packets)) - v[0], km_addr(KP(t->rx_bytes)) - v[0],
				      km_addr(KP(t->tx_packets)) - v[0], km_addr(KP(t->tx_bytes)) - v[0]};
			km_pcpu_sums(v[0], off, 4, s);
			s[4] = s[5] = 0;
		} else if (kind == KN_DSTATS && v[1] && KTYPE_EXISTS(pcpu_dstats___511)) {
			struct pcpu_dstats___511 *t = (struct pcpu_dstats___511 *)(unsigned long)v[1];
			u64 off[6] = {km_addr(KP(t->rx_packets)) - v[1], km_addr(KP(t->rx_bytes)) - v[1],
				      km_addr(KP(t->tx_packets)) - v[1], km_addr(KP(t->tx_bytes)) - v[1],
				      km_addr(KP(t->rx_drops)) - v[1], km_addr(KP(t->tx_drops)) - v[1]};
			km_pcpu_sums(v[1], off, 6, s);
		} else {
			return;
		}
		for (u32 f = 0; f < 6; f++)
			blk[KN_P_RXP + f] = s[f];
	} else if (kind == KN_DUMMY) {              /* its lstats' sums (km_net_stats): the transmits */
		blk[KN_P_TXP] = blk[KN_LO_PACKETS];
		blk[KN_P_TXB] = blk[KN_LO_BYTES];
	}
}

int km_net_stats(u64 d, u64 *blk)
{
	struct net_device *dev = (struct net_device *)(unsigned long)d;
	u64 a[KN_G1];
	a[KN_RX_PACKETS] = km_addr(KP(dev->stats.rx_packets));
	a[KN_TX_PACKETS] = km_addr(KP(dev->stats.tx_packets));
	a[KN_RX_BYTES] = km_addr(KP(dev->stats.rx_bytes));
	a[KN_TX_BYTES] = km_addr(KP(dev->stats.tx_bytes));
	a[KN_RX_ERRORS] = km_addr(KP(dev->stats.rx_errors));
	a[KN_TX_ERRORS] = km_addr(KP(dev->stats.tx_errors));
	a[KN_RX_DROPPED] = km_addr(KP(dev->stats.rx_dropped));
	a[KN_TX_DROPPED] = km_addr(KP(dev->stats.tx_dropped));
	a[KN_RX_MISSED] = km_addr(KP(dev->stats.rx_missed_errors));
	a[KN_FLAGS] = km_addr(KP(dev->flags));
	a[KN_STATE] = km_addr(KP(dev->state));
	a[KN_OPS] = km_addr(KP(dev->netdev_ops));
	a[KN_CORE] = KFIELD_EXISTS(net_device, core_stats) ? km_addr(KP(dev->core_stats)) : km_dummy_addr();
	a[KN_LSTATS] = km_addr(KP(dev->lstats));
	a[KN_PARENT] = km_addr(KP(dev->dev.parent));
	a[KN_OPER] = km_addr(KP(dev->operstate));
	km_gather(a, KN_G1, blk);
	blk[KN_FLAGS] &= 0xffffffffu;
	blk[KN_OPER] &= 0xffu;
	if (!KFIELD_EXISTS(net_device, core_stats))
		blk[KN_CORE] = 0;
	/* the driver: its stats callbacks, and its name through the parent device */
	const struct net_device_ops *ops = (const struct net_device_ops *)(unsigned long)blk[KN_OPS];
	struct device *parent = (struct device *)(unsigned long)blk[KN_PARENT];
	u64 dm = km_dummy_addr(), b[3], w[3];
	b[0] = ops ? km_addr(KP(ops->ndo_get_stats64)) : dm;
	b[1] = ops ? km_addr(KP(ops->ndo_get_stats)) : dm;
	b[2] = parent ? km_addr(KP(parent->driver)) : dm;
	km_gather(b, 3, w);
	u64 get64 = ops ? w[0] : 0, get = ops ? w[1] : 0;
	struct device_driver *drv = (struct device_driver *)(unsigned long)(parent ? w[2] : 0);
	u64 nm[2] = {0, 0};
	if (drv) {
		/* its first 11 bytes ("virtio_net" and the NUL): a string at any
		 * alignment, so the aligned words that hold them and no more */
		u64 na = km_addr(KP(drv->name)), np;
		km_gather(&na, 1, &np);
		u64 al = np & ~7ul, sh = (np & 7) * 8, sa[3], ww[3] = {0, 0, 0};
		u32 cnt = (u32)(((np & 7) + 11 + 7) / 8);
		for (u32 i = 0; i < 3; i++)
			sa[i] = np && i < cnt ? al + 8 * i : dm;
		km_gather(sa, 3, ww);
		nm[0] = sh ? (ww[0] >> sh) | (ww[1] << (64 - sh)) : ww[0];
		nm[1] = sh ? (ww[1] >> sh) | (ww[2] << (64 - sh)) : ww[1];
	}
	/* "virtio_net\0", little-endian */
	int virtio = drv && nm[0] == 0x6e5f6f6974726976ull && (nm[1] & 0xffffff) == 0x7465ull;
	u64 kind = km_net_kind(dev, blk[KN_FLAGS], virtio, get64, get);
	/* the core's drops: per CPU (6.0+), else two atomics in the device */
	u64 core = blk[KN_CORE];
	if (core && KTYPE_EXISTS(net_device_core_stats)) {     /* 6.0+ (5.10 has no such type) */
		struct net_device_core_stats *cs = (struct net_device_core_stats *)(unsigned long)core;
		u64 off[2] = {km_addr(KP(cs->rx_dropped)) - core, km_addr(KP(cs->tx_dropped)) - core}, s[2];
		km_pcpu_sums(core, off, 2, s);
		blk[KN_CORE_RXD] = s[0];
		blk[KN_CORE_TXD] = s[1];
	} else if (KFIELD_EXISTS(net_device___510, rx_dropped)) {
		struct net_device___510 *old = (struct net_device___510 *)dev;
		u64 oa[2] = {km_addr(KP(old->rx_dropped)), km_addr(KP(old->tx_dropped))}, ov[2];
		km_gather(oa, 2, ov);
		blk[KN_CORE_RXD] = ov[0];
		blk[KN_CORE_TXD] = ov[1];
	} else {
		blk[KN_CORE_RXD] = blk[KN_CORE_TXD] = 0;
	}
	/* the per-CPU lstats: loopback's (rx = tx), dummy's (its transmits) */
	blk[KN_LO_PACKETS] = blk[KN_LO_BYTES] = 0;
	if ((kind == KN_LOOPBACK || kind == KN_DUMMY) && blk[KN_LSTATS]) {
		struct pcpu_lstats *ls = (struct pcpu_lstats *)(unsigned long)blk[KN_LSTATS];
		u64 off[2] = {km_addr(KP(ls->packets)) - km_addr(ls), km_addr(KP(ls->bytes)) - km_addr(ls)}, s[2];
		km_pcpu_sums(km_addr(ls), off, 2, s);
		blk[KN_LO_PACKETS] = s[0];
		blk[KN_LO_BYTES] = s[1];
	}
	km_net_pcpu(dev, kind, blk);
	for (u32 f = 0; f < 6; f++)
		blk[KN_V_RXP + f] = 0;
	blk[KN_V_SPEED] = 0xffffffffu;
	if (kind == KN_VIRTIO && km_virtio_types())
		km_virtio_queues(dev, blk);
	blk[KN_VE_TXD] = 0;
	if (kind == KN_VETH)
		km_veth(dev, blk);
	km_bond(dev, blk);
	blk[KN_KIND] = kind;
	blk[KN_FAILED] = (u64)simt_any(__llview_failed());
	return 0;
}

/* a counter: by the driver's kind (dev_get_stats: lo for loopback,
 * virtio for virtio_net, generic from dev->stats, which tstats and dstats
 * add their per-CPU sums to, dummy's these sums alone); KM_ABSENT for a
 * driver whose counters are not read, NaN when the block could not be read */
KM_INLINE double km_nc(const u64 *blk, u64 lo, u64 virtio, u64 generic, u64 percpu)
{
	if (blk[KN_FAILED])
		return KM_NAN;
	switch (blk[KN_KIND]) {
	case KN_LOOPBACK: return (double)lo;
	case KN_VIRTIO:
	case KN_VETH: return (double)virtio;     /* (km_veth: its totals in virtio's slots) */
	case KN_GENERIC: return (double)generic;
	case KN_TSTATS:
	case KN_DSTATS: return (double)(generic + percpu);
	case KN_DUMMY: return (double)percpu;
	default: return KM_ABSENT;
	}
}

/* up: administratively up (IFF_UP) with a carrier, what `ip link` shows as UP,LOWER_UP */
double km_net_up(u64 d, const u64 *blk)
{
	if (blk[KN_FAILED])
		return KM_NAN;
	long nocarrier = KENUM(netdev_state_t, __LINK_STATE_NOCARRIER);
	return (blk[KN_FLAGS] & KM_IFF_UP) && !((blk[KN_STATE] >> nocarrier) & 1);
}

/* the RFC 2863 operational state, as /sys/class/net/IF/operstate names it */
double km_net_operstate(u64 d, const u64 *blk)
{
	return blk[KN_FAILED] ? KM_NAN : (double)blk[KN_OPER];
}

double km_net_rx_packets(u64 d, const u64 *blk)
{
	return km_nc(blk, blk[KN_LO_PACKETS], blk[KN_V_RXP], blk[KN_RX_PACKETS], blk[KN_P_RXP]);
}
double km_net_tx_packets(u64 d, const u64 *blk)
{
	return km_nc(blk, blk[KN_LO_PACKETS], blk[KN_V_TXP], blk[KN_TX_PACKETS], blk[KN_P_TXP]);
}
double km_net_rx_bytes(u64 d, const u64 *blk)
{
	return km_nc(blk, blk[KN_LO_BYTES], blk[KN_V_RXB], blk[KN_RX_BYTES], blk[KN_P_RXB]);
}
double km_net_tx_bytes(u64 d, const u64 *blk)
{
	return km_nc(blk, blk[KN_LO_BYTES], blk[KN_V_TXB], blk[KN_TX_BYTES], blk[KN_P_TXB]);
}
double km_net_rx_errors(u64 d, const u64 *blk) { return km_nc(blk, 0, 0, blk[KN_RX_ERRORS], 0); }
double km_net_tx_errors(u64 d, const u64 *blk) { return km_nc(blk, 0, blk[KN_V_TXE], blk[KN_TX_ERRORS], 0); }
/* /proc/net/dev's receive "drop": rx_dropped + rx_missed_errors, and the core's */
double km_net_rx_dropped(u64 d, const u64 *blk)
{
	u64 core = blk[KN_CORE_RXD];
	if (blk[KN_KIND] == KN_DUMMY)
		return km_nc(blk, 0, 0, 0, core);
	return km_nc(blk, core, core + blk[KN_V_RXD], core + blk[KN_RX_DROPPED] + blk[KN_RX_MISSED], blk[KN_P_RXD]);
}
/* the host's own device, not a container's (km_net_name: NAME@INUM) */
double km_net_init_namespace(u64 d, const u64 *blk)
{
	u64 home = km_addr(&init_net);
	u64 na = KFIELD_EXISTS(net_device, nd_net) ? km_addr(KR(((struct net_device *)(unsigned long)d)->nd_net)) : home;
	return km_collective(na == home);
}

/* bonding: unknown for an interface that is not a bond */
KM_INLINE double km_bondv(const u64 *blk, long i)
{
	return blk[KN_FAILED] ? KM_NAN : !blk[KN_BOND] ? KM_ABSENT : (double)blk[i];
}
double km_net_bond_slaves(u64 d, const u64 *blk) { return km_bondv(blk, KN_BOND_SLAVES); }
double km_net_bond_active(u64 d, const u64 *blk) { return km_bondv(blk, KN_BOND_UP); }

/* /sys/class/net/IF/speed, in bytes a second: virtio_net's own field, and
 * veth's constant (veth_get_link_ksettings: SPEED_10000); no other driver
 * keeps one (ethtool asks the driver) */
double km_net_speed(u64 d, const u64 *blk)
{
	if (blk[KN_FAILED])
		return KM_NAN;
	if (blk[KN_KIND] == KN_VETH)
		return 10000.0 * 125000.0;
	u64 mbps = blk[KN_V_SPEED];
	if (blk[KN_KIND] != KN_VIRTIO || mbps == 0 || mbps >= 0x7fffffffu)
		return KM_ABSENT;       /* SPEED_UNKNOWN, or no driver we read */
	return (double)mbps * 125000.0;
}

double km_net_tx_dropped(u64 d, const u64 *blk)
{
	u64 core = blk[KN_CORE_TXD];
	if (blk[KN_KIND] == KN_DUMMY)
		return km_nc(blk, 0, 0, 0, core);
	if (blk[KN_KIND] == KN_VETH)
		return km_nc(blk, 0, core + blk[KN_VE_TXD], 0, 0);
	return km_nc(blk, core, core + blk[KN_TX_DROPPED], core + blk[KN_TX_DROPPED], blk[KN_P_TXD]);
}

/* ---- filesystems: the initial mount namespace's mounts, as /proc/mounts ------------------
 *
 * Every mount of init's mount namespace (`init_task.nsproxy->mnt_ns`: a
 * list up to 6.7, a tree keyed by mount ID from 6.8) whose superblock is
 * ext2/3/4 (ext4's driver), tmpfs, xfs or btrfs, in mount order; the name
 * is the mount point, built as d_path does (each dentry's name up to the
 * mount's root, then on from where it is mounted).  What statfs() reports
 * is what each filesystem's statfs adds up from its superblock's counters,
 * so each is read where it keeps them: ext4's per-CPU cluster and inode
 * counters and its on-disk superblock (ext4_statfs), tmpfs's block counter
 * and limits (shmem_statfs), xfs's per-CPU counters and in-memory
 * superblock (xfs_fs_statfs), btrfs's space_info totals, global reserve
 * and devices (btrfs_statfs). */

#define KM_MAX_MOUNTS 65536u
#define KM_MAX_PATH_DEPTH 64u
#define KM_MNT_READONLY 0x40u
#define KM_MNT_CURSOR 0x10000000u        /* up to 6.7: a /proc/mounts reader's place in the list */
#define KM_SB_RDONLY 1u
#define KM_EXT4_MAGIC 0xef53ul
#define KM_TMPFS_MAGIC 0x01021994ul
#define KM_XFS_MAGIC 0x58465342ul
#define KM_BTRFS_MAGIC 0x9123683eul
#define KM_EXT4_64BIT 0x80u              /* s_feature_incompat */
#define KM_EXT4_MINIX_DF 0x80u           /* s_mount_opt: no overhead subtracted */
#define KM_BOGO_INODE_SIZE 1024ul        /* tmpfs 6.6+: free_ispace per inode */

/* n (the walk's count so far) plus one when mount m is listed: lane 0
 * writes its address */
KM_INLINE int km_fs_keep(struct mount *m, u64 sb, u64 flags, u32 skip, u64 *out, u32 cap, int n)
{
	if (!sb || ((u32)flags & skip))
		return n;
	u64 magic = KR(((struct super_block___fs *)(unsigned long)sb)->s_magic);
	if (magic != KM_EXT4_MAGIC && magic != KM_TMPFS_MAGIC && magic != KM_XFS_MAGIC && magic != KM_BTRFS_MAGIC)
		return n;
	if ((u32)n < cap && simt_lane() == 0)
		out[n] = km_addr(m);
	return n + 1;
}

/* up to 6.7: mnt_namespace.list, skipping readers' cursors */
static int km_mnt_list(struct mnt_namespace___list *ns, u64 *out, u32 cap)
{
	struct list_head *head = KP(ns->list), *cur = head, *next = KR(head->next);
	int n = 0;
	kx_loop lp;
	kx_loop_init(&lp, km_addr(head));
	for (u32 seen = 0;; seen++) {
		if (next == head || simt_any(__llview_failed()))
			break;
		struct mount *m = (struct mount *)kcontainer_of(next, struct mount___list, mnt_list);
		u64 a[4] = {km_addr(&next->next), km_addr(&next->prev), km_addr(KP(m->mnt.mnt_sb)),
			    km_addr(KP(m->mnt.mnt_flags))}, v[4];
		km_gather(a, 4, v);
		if (seen >= KM_MAX_MOUNTS || v[1] != km_addr(cur) || kx_loop_seen(&lp, km_addr(next)))
			return -40;             /* KX_ELOOP: a corrupt, changing or endless list */
		if (km_spent_all())
			return KM_EBUDGET;
		n = km_fs_keep(m, v[2], v[3], KM_MNT_CURSOR, out, cap, n);
		cur = next;
		next = (struct list_head *)(unsigned long)v[0];
	}
	return simt_any(__llview_failed()) ? -14 : n;
}

/* 6.8+: mnt_namespace.mounts, in order (rb_next through parent pointers) */
static int km_mnt_tree(struct mnt_namespace___rb *ns, u64 *out, u32 cap)
{
	struct rb_node *node = KR(ns->mounts.rb_node), *l;
	u32 steps = 0;
	int n = 0;
	kx_loop lp;                                 /* in order, each mount once */
	kx_loop_init(&lp, 0);
	while (node && (l = KR(node->rb_left)) && steps++ < KM_MAX_MOUNTS)
		node = l;
	while (node) {
		if (simt_any(__llview_failed()))
			return -14;
		if (++steps > 4 * KM_MAX_MOUNTS || kx_loop_seen(&lp, km_addr(node)))
			return -40;
		if (km_spent_all())
			return KM_EBUDGET;
		struct mount *m = (struct mount *)kcontainer_of(node, struct mount___list, mnt_node);
		u64 a[4] = {km_addr(KP(node->rb_right)), km_addr(KP(node->__rb_parent_color)),
			    km_addr(KP(m->mnt.mnt_sb)), km_addr(KP(m->mnt.mnt_flags))}, v[4];
		km_gather(a, 4, v);
		n = km_fs_keep(m, v[2], v[3], 0, out, cap, n);
		struct rb_node *r = (struct rb_node *)(unsigned long)v[0];
		if (r) {
			node = r;
			while ((l = KR(node->rb_left)) && steps++ < 4 * KM_MAX_MOUNTS && !__llview_failed())
				node = l;
			continue;
		}
		struct rb_node *p = (struct rb_node *)(unsigned long)(v[1] & ~3ul);
		while (p && node == KR(p->rb_right) && steps++ < 4 * KM_MAX_MOUNTS && !__llview_failed()) {
			node = p;
			p = (struct rb_node *)(unsigned long)(KR(p->__rb_parent_color) & ~3ul);
		}
		node = p;
	}
	return simt_any(__llview_failed()) ? -14 : n;
}

/* Warp-collective: every lane gets the count, lane 0 writes out. */
int km_fs_walk(u64 *out, u32 cap)
{
	struct task_struct___ns *it = (struct task_struct___ns *)&init_task;
	struct nsproxy *np = KR(it->nsproxy);
	if (simt_any(__llview_failed()))
		return -14;
	if (!np)
		return -2;                      /* KX_ENOENT */
	/* (no `np ? ... : 0`: a pointer that may be the kernel's or null is
	 * one LLView refuses to read through) */
	struct mnt_namespace *ns = KR(np->mnt_ns);
	if (simt_any(__llview_failed()))
		return -14;
	if (!ns)
		return -2;
	if (KFIELD_EXISTS(mnt_namespace___rb, nr_mounts))
		return km_mnt_tree((struct mnt_namespace___rb *)ns, out, cap);
	return km_mnt_list((struct mnt_namespace___list *)ns, out, cap);
}

/* The mount point ("/", "/var/lib"), as d_path builds it from the
 * namespace's root: the dentries' names up to each mount's root, then on
 * from the dentry it is mounted on; at most size - 1 bytes.  One lane. */
int km_fs_name(u64 key, char *out, u32 size)
{
	struct mount *mnt = (struct mount *)(unsigned long)key;
	struct dentry *d = KR(mnt->mnt.mnt_root);
	const unsigned char *nm[KM_MAX_PATH_DEPTH];
	u32 len[KM_MAX_PATH_DEPTH], depth = 0;
	for (u32 step = 0; step < 4 * KM_MAX_PATH_DEPTH && !__llview_failed(); step++) {
		if (d == KR(mnt->mnt.mnt_root)) {
			struct mount *p = KR(mnt->mnt_parent);
			if (!p || p == mnt)
				break;          /* the namespace's root */
			d = KR(mnt->mnt_mountpoint);
			mnt = p;
			continue;
		}
		struct dentry *up = KR(d->d_parent);
		if (!up || up == d || depth == KM_MAX_PATH_DEPTH)
			break;
		nm[depth] = KR(d->d_name.name);
		len[depth] = (u32)(KR(d->d_name.hash_len) >> 32);
		depth++;
		d = up;
	}
	u32 o = 0;
	if (!depth && size > 1)
		out[o++] = '/';
	for (u32 i = depth; i-- > 0 && o + 1 < size && !__llview_failed();) {
		out[o++] = '/';
		u64 a = km_addr(nm[i]), w = 0;
		for (u32 k = 0; k < len[i] && k < 255 && o + 1 < size; k++) {
			u64 at = a + k;
			if (k == 0 || (at & 7) == 0)
				w = *(const u64 *)(unsigned long)(at & ~7ul);
			out[o++] = (char)(w >> ((at & 7) * 8));
		}
	}
	for (u32 i = o; i < size; i++)
		out[i] = 0;
	return __llview_failed() ? -14 : 0;
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

/* A mount's statfs numbers, read once a tick into a block (km_fs_stats:
 * the mount's words, its superblock's, its filesystem's, then the per-CPU
 * counters); the metrics read the block. */
enum {
	KV_MNT_FLAGS, KV_SB_FLAGS, KV_BSIZE, KV_BLOCKS, KV_BFREE, KV_BAVAIL, KV_FILES, KV_FFREE,
	KV_KIND, KV_FAILED, KV_NOAVAIL, KV__COUNT
};
_Static_assert(KV__COUNT <= 64, "the block rulec gives km_fs_stats (CG_OBJ_BLOCK)");
enum { KV_OTHER, KV_EXT4, KV_TMPFS, KV_XFS, KV_BTRFS };

KM_INLINE s64 km_pos(s64 v) { return v < 0 ? 0 : v; }

/* ext4_statfs */
KM_INLINE void km_ext4_statfs(u64 sbp, struct ext4_sb_info *sbi, u64 *blk)
{
	enum { E_ES, E_OVH, E_CB, E_OPT, E_RESV, E_FREE, E_FREEP, E_DIRTY, E_DIRTYP, E_INO, E_INOP, E_SB, E__N };
	u64 a[E__N], v[E__N];
	a[E_ES] = km_addr(KP(sbi->s_es));
	a[E_OVH] = km_addr(KP(sbi->s_overhead));
	a[E_CB] = km_addr(KP(sbi->s_cluster_bits));
	a[E_OPT] = km_addr(KP(sbi->s_mount_opt));
	a[E_RESV] = km_addr(KP(sbi->s_resv_clusters.counter));
	a[E_FREE] = km_addr(KP(sbi->s_freeclusters_counter.count));
	a[E_FREEP] = km_addr(KP(sbi->s_freeclusters_counter.counters));
	a[E_DIRTY] = km_addr(KP(sbi->s_dirtyclusters_counter.count));
	a[E_DIRTYP] = km_addr(KP(sbi->s_dirtyclusters_counter.counters));
	a[E_INO] = km_addr(KP(sbi->s_freeinodes_counter.count));
	a[E_INOP] = km_addr(KP(sbi->s_freeinodes_counter.counters));
	a[E_SB] = km_addr(KP(sbi->s_sb));
	km_gather(a, E__N, v);
	if (v[E_SB] != sbp || !v[E_ES])
		return;                         /* not ext4's: ext2's own driver, say */
	struct ext4_super_block *es = (struct ext4_super_block *)(unsigned long)v[E_ES];
	u64 b[6] = {km_addr(KP(es->s_inodes_count)), km_addr(KP(es->s_blocks_count_lo)),
		    km_addr(KP(es->s_r_blocks_count_lo)), km_addr(KP(es->s_feature_incompat)),
		    km_addr(KP(es->s_blocks_count_hi)), km_addr(KP(es->s_r_blocks_count_hi))}, w[6];
	km_gather(b, 6, w);
	u64 cnt[3] = {v[E_FREE], v[E_DIRTY], v[E_INO]}, pc[3] = {v[E_FREEP], v[E_DIRTYP], v[E_INOP]};
	s64 s[3];
	km_pcpu_counters(cnt, pc, 3, s);
	u32 cb = (u32)v[E_CB] & 63;
	int big = ((u32)w[3] & KM_EXT4_64BIT) != 0;
	u64 blocks = (w[1] & 0xffffffffu) | (big ? (w[4] & 0xffffffffu) << 32 : 0);
	u64 r = (w[2] & 0xffffffffu) | (big ? (w[5] & 0xffffffffu) << 32 : 0);
	u64 ovh = ((u32)v[E_OPT] & KM_EXT4_MINIX_DF) ? 0 : v[E_OVH];
	u64 resv = v[E_RESV] << cb;
	s64 bfree = km_pos(s[0]) - km_pos(s[1]);
	blk[KV_BLOCKS] = blocks - (ovh << cb);
	blk[KV_BFREE] = (u64)km_pos(bfree) << cb;
	blk[KV_BAVAIL] = blk[KV_BFREE] < r + resv ? 0 : blk[KV_BFREE] - (r + resv);
	blk[KV_FILES] = w[0] & 0xffffffffu;
	blk[KV_FFREE] = (u64)km_pos(s[2]);
	blk[KV_KIND] = KV_EXT4;
}

/* xfs_fs_statfs (6.1, 6.12 and 7.2 alike: 7.2 keeps the free blocks in
 * m_free[XC_FREE_BLOCKS], where m_fdblocks was) for the mount's root directory;
 * a realtime directory (its rt device's extents) or a project quota's
 * (its limits) would report otherwise, and is not told apart here */
#define KM_XFS_MAXINUMBER ((1ull << 56) - 1)
KM_INLINE void km_xfs_statfs(u64 sbp, struct xfs_mount *mp, u64 *blk)
{
	enum { X_SUPER, X_DBLOCKS, X_LOGSTART, X_LOGBLOCKS, X_SBICOUNT, X_INOPBLOG, X_ICOUNT, X_ICOUNTP, X_IFREE,
	       X_IFREEP, X_FDB, X_FDBP, X_ASIDE, X_ALLOCBT, X_MAXI, X__N };
	u64 a[X__N], v[X__N];
	a[X_SUPER] = km_addr(KP(mp->m_super));
	a[X_DBLOCKS] = km_addr(KP(mp->m_sb.sb_dblocks));
	a[X_LOGSTART] = km_addr(KP(mp->m_sb.sb_logstart));
	a[X_LOGBLOCKS] = km_addr(KP(mp->m_sb.sb_logblocks));
	a[X_SBICOUNT] = km_addr(KP(mp->m_sb.sb_icount));
	a[X_INOPBLOG] = km_addr(KP(mp->m_sb.sb_inopblog));
	a[X_ICOUNT] = km_addr(KP(mp->m_icount.count));
	a[X_ICOUNTP] = km_addr(KP(mp->m_icount.counters));
	a[X_IFREE] = km_addr(KP(mp->m_ifree.count));
	a[X_IFREEP] = km_addr(KP(mp->m_ifree.counters));
	if (KFIELD_EXISTS(xfs_mount, m_free) && KTYPE_EXISTS(xfs_freecounter)) {
		a[X_FDB] = km_addr(KP(mp->m_free[0].count.count));
		a[X_FDBP] = km_addr(KP(mp->m_free[0].count.counters));
	} else if (KFIELD_EXISTS(xfs_mount, m_fdblocks)) {
		a[X_FDB] = km_addr(KP(mp->m_fdblocks.count));
		a[X_FDBP] = km_addr(KP(mp->m_fdblocks.counters));
	} else
		return;
	a[X_ASIDE] = km_addr(KP(mp->m_alloc_set_aside));
	a[X_ALLOCBT] = km_addr(KP(mp->m_allocbt_blks.counter));
	a[X_MAXI] = km_addr(KP(mp->m_ino_geo.maxicount));
	km_gather(a, X__N, v);
	if (v[X_SUPER] != sbp)
		return;
	u64 cnt[3] = {v[X_ICOUNT], v[X_IFREE], v[X_FDB]}, pc[3] = {v[X_ICOUNTP], v[X_IFREEP], v[X_FDBP]};
	s64 s[3];                               /* icount, ifree, fdblocks */
	km_pcpu_counters(cnt, pc, 3, s);
	u64 lsize = v[X_LOGSTART] ? (v[X_LOGBLOCKS] & 0xffffffffu) : 0;
	blk[KV_BLOCKS] = v[X_DBLOCKS] - lsize;
	blk[KV_BFREE] = blk[KV_BAVAIL] = (u64)km_pos(s[2] - (s64)((v[X_ASIDE] & 0xffffffffu) + v[X_ALLOCBT]));
	/* inodes: those allocated, and as many more as the free blocks hold */
	u64 files = (u64)s[0] + (blk[KV_BFREE] << (v[X_INOPBLOG] & 0x3f));
	if (files > KM_XFS_MAXINUMBER)
		files = KM_XFS_MAXINUMBER;
	if (v[X_MAXI] && files > v[X_MAXI])
		files = v[X_MAXI];
	if (files < v[X_SBICOUNT])
		files = v[X_SBICOUNT];
	blk[KV_FILES] = files;
	blk[KV_FFREE] = (u64)km_pos((s64)files - (s[0] - s[1]));
	blk[KV_KIND] = KV_XFS;
}

/* btrfs_statfs (6.1 and 6.12 alike).  Size and free are the space_info
 * totals scaled by the data profile's copies, less the global block
 * reserve; available is the data space_info's unused part plus what chunk
 * allocation could still give data over the devices (the kernel's
 * btrfs_calc_avail_data_space, simulated here over at most
 * KM_BTRFS_MAX_DEVS devices), zero once metadata can take no more chunks
 * and its free space is under the reserve plus 4 MiB.  btrfs reports no
 * inode counts (0, as df -i shows).  Not followed: a balance converting
 * the data profile (the kernel allocates for its target profile; read
 * here as the profile already in use), so available is approximate then. */
#define KM_BTRFS_NR_RAID 9u              /* enum btrfs_raid_types, 5.5+ */
#define KM_BTRFS_MAX_SPACE 16u           /* space_info entries: 3 in practice */
#define KM_BTRFS_MAX_RO 256u             /* read-only block groups walked */
#define KM_BTRFS_MAX_DEVS 32u
#define KM_BG_DATA 0x1ull
#define KM_BG_METADATA 0x4ull
#define KM_BG_RAID0 0x8ull
#define KM_BG_RAID1 0x10ull
#define KM_BG_DUP 0x20ull
#define KM_BG_RAID10 0x40ull
#define KM_BG_RAID5 0x80ull
#define KM_BG_RAID6 0x100ull
#define KM_BG_RAID1C3 0x200ull
#define KM_BG_RAID1C4 0x400ull
#define KM_BG_PROFILE_MASK 0x7f8ull
#define KM_BTRFS_STRIPE_LEN (64ull << 10)
#define KM_BTRFS_RANGE_RESERVED (1ull << 20)
#define KM_BTRFS_DEV_IN_FS_METADATA 1
#define KM_BTRFS_DEV_REPLACE_TGT 3
#define KM_BTRFS_META_THRESH (4ull << 20)

/* btrfs_raid_array[i]: the kernel's table, at its own stride */
KM_INLINE const struct btrfs_raid_attr *km_raid_attr(u32 i)
{
	return (const struct btrfs_raid_attr *)((const char *)btrfs_raid_array + (u64)i * KSIZEOF(btrfs_raid_attr));
}

/* The raid table's columns: bg_flag, ncopies, devs_min, dev_stripes */
struct km_raid { u64 flag[KM_BTRFS_NR_RAID]; u32 copies[KM_BTRFS_NR_RAID], devs_min[KM_BTRFS_NR_RAID],
		 dev_stripes[KM_BTRFS_NR_RAID]; };

KM_INLINE void km_raid_table(struct km_raid *t)
{
	u64 a[4 * KM_BTRFS_NR_RAID], v[4 * KM_BTRFS_NR_RAID];
	for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++) {
		const struct btrfs_raid_attr *r = km_raid_attr(i);
		a[i] = km_addr(KP(r->bg_flag));
		a[KM_BTRFS_NR_RAID + i] = km_addr(KP(r->ncopies));
		a[2 * KM_BTRFS_NR_RAID + i] = km_addr(KP(r->devs_min));
		a[3 * KM_BTRFS_NR_RAID + i] = km_addr(KP(r->dev_stripes));
	}
	km_gather(a, 4 * KM_BTRFS_NR_RAID, v);
	for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++) {
		t->flag[i] = v[i];
		t->copies[i] = (u32)v[KM_BTRFS_NR_RAID + i] & 0xff;
		t->devs_min[i] = (u32)v[2 * KM_BTRFS_NR_RAID + i] & 0xff;
		t->dev_stripes[i] = (u32)v[3 * KM_BTRFS_NR_RAID + i] & 0xff;
	}
}

/* the raid index of a profile (btrfs_bg_flags_to_raid_index): the entry
 * whose flag it is, SINGLE's (flag 0) for none */
KM_INLINE u32 km_raid_index(const struct km_raid *t, u64 flags)
{
	u64 p = flags & KM_BG_PROFILE_MASK;
	u32 idx = KM_BTRFS_NR_RAID;
	for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++)
		if (t->flag[i] == p)
			idx = i;
	return idx;
}

/* The data allocation profile (btrfs_data_alloc_profile: the profiles
 * data has, those the writable devices allow, the most redundant) */
KM_INLINE u64 km_btrfs_data_profile(const struct km_raid *t, u64 avail_bits, u64 rw_devices)
{
	u64 allowed = 0;
	for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++)
		if (rw_devices >= t->devs_min[i])
			allowed |= t->flag[i];
	allowed &= avail_bits | KM_BG_DATA;
	/* the most redundant first: RAID1C4, RAID6, RAID1C3, RAID5, RAID10,
	 * RAID1, DUP, RAID0, their flags' bit numbers a nibble each */
	for (u32 k = 0; k < 8; k++) {
		u32 bit = (u32)(0x3546798aull >> (4 * k)) & 0xf;
		if ((allowed >> bit) & 1)
			return 1ull << bit;
	}
	return 0;
}

/* the free space of a space_info's read-only block groups (balance and
 * scrub set them so), each times its profile's copies
 * (btrfs_account_ro_block_groups_free_space); -1: too many to walk, a
 * corrupt list, a failed read or the read budget spent */
KM_INLINE s64 km_btrfs_ro_free(struct btrfs_space_info *si, const struct km_raid *t)
{
	km_list w;
	km_list_init(&w, KP(si->ro_bgs), KM_BTRFS_MAX_RO);
	u64 sum = 0, nv;
	int r;
	while ((r = km_list_step(&w, KM_LIST_NONE, &nv)) > 0) {
		struct btrfs_block_group *bg = (struct btrfs_block_group *)kcontainer_of(w.cur, struct btrfs_block_group,
											 ro_list);
		u64 a[4] = {km_addr(KP(bg->length)), km_addr(KP(bg->used)), km_addr(KP(bg->flags)),
			    km_addr(KP(bg->ro))}, v[4];
		km_gather(a, 4, v);
		u32 i = km_raid_index(t, v[2]);
		if ((u32)v[3] && i < KM_BTRFS_NR_RAID)
			sum += (v[0] - v[1]) * t->copies[i];
	}
	return r < 0 || simt_any(__llview_failed()) ? -1 : (s64)sum;
}

/* btrfs_calc_avail_data_space: each usable device's unallocated space
 * (stripe-aligned, less the 1 MiB at its start), sorted, then chunks of
 * the data profile handed out from the smallest up; -1: not computed */
KM_INLINE s64 km_btrfs_dev_avail(struct btrfs_fs_devices *fd, const struct km_raid *t, u64 profile,
				 u64 open_devices)
{
	u32 ri = km_raid_index(t, profile);
	if (ri >= KM_BTRFS_NR_RAID || open_devices > KM_BTRFS_MAX_DEVS)
		return -1;
	u64 nr = open_devices;
	u32 stripes = 1;
	if (profile & KM_BG_RAID0)
		stripes = (u32)nr;
	else if (profile & (KM_BG_RAID1 | KM_BG_RAID1C3 | KM_BG_RAID1C4))
		stripes = t->copies[ri];
	else if (profile & KM_BG_RAID10)
		stripes = 4;
	u64 min_stripe = t->dev_stripes[ri] * KM_BTRFS_STRIPE_LEN;
	u64 avail[KM_BTRFS_MAX_DEVS], nv;
	u32 n = 0;
	km_list w;
	km_list_init(&w, KP(fd->devices), 4 * KM_BTRFS_MAX_DEVS);
	int r = 0;
	while (n < nr && (r = km_list_step(&w, KM_LIST_NONE, &nv)) > 0) {
		struct btrfs_device *d = (struct btrfs_device *)kcontainer_of(w.cur, struct btrfs_device, dev_list);
		u64 a[4] = {km_addr(KP(d->bdev)), km_addr(KP(d->dev_state)), km_addr(KP(d->total_bytes)),
			    km_addr(KP(d->bytes_used))}, v[4];
		km_gather(a, 4, v);
		if (!(v[1] & (1ul << KM_BTRFS_DEV_IN_FS_METADATA)) || !v[0] || (v[1] & (1ul << KM_BTRFS_DEV_REPLACE_TGT)))
			continue;
		u64 av = (v[2] - v[3]) / KM_BTRFS_STRIPE_LEN * KM_BTRFS_STRIPE_LEN;
		if (av <= KM_BTRFS_RANGE_RESERVED + min_stripe)
			continue;
		avail[n++] = av - KM_BTRFS_RANGE_RESERVED;
	}
	if (n < nr && r < 0)
		return -1;                      /* a corrupt list, or the read budget spent */
	if (simt_any(__llview_failed()))
		return -1;
	for (u32 i = 1; i < n; i++)             /* descending */
		for (u32 j = i; j > 0 && avail[j - 1] < avail[j]; j--) {
			u64 x = avail[j];
			avail[j] = avail[j - 1];
			avail[j - 1] = x;
		}
	u64 total = 0;
	for (u32 left = n; left >= t->devs_min[ri] && left > 0; left--) {
		u32 i = left - 1;
		if (stripes > left)
			stripes = left;
		if (avail[i] >= min_stripe) {
			u64 sz = avail[i];
			total += sz * stripes;
			for (u32 j = i + 1 - stripes; j <= i; j++)
				avail[j] -= sz;
		}
	}
	return (s64)total;
}

/* every btrfs type read (the module's BTF, 5.11+): a kernel without them
 * leaves btrfs's sizes unknown and the other filesystems' read */
KM_INLINE int km_btrfs_types(void)
{
	return KTYPE_EXISTS(btrfs_fs_info) && KTYPE_EXISTS(btrfs_space_info) && KTYPE_EXISTS(btrfs_raid_attr) &&
	       KTYPE_EXISTS(btrfs_block_rsv) && KTYPE_EXISTS(btrfs_super_block) && KTYPE_EXISTS(btrfs_fs_devices) &&
	       KTYPE_EXISTS(btrfs_device) && KTYPE_EXISTS(btrfs_block_group);
}

KM_INLINE void km_btrfs_statfs(u64 sbp, u64 bsize, struct btrfs_fs_info *fi, u64 *blk)
{
	if (!&btrfs_raid_array || !bsize || (bsize & (bsize - 1)))
		return;
	enum { B_SB, B_SUPER, B_DEVS, B_RSV, B_RSVSI, B_AVAIL, B__N };
	u64 a[B__N], v[B__N];
	a[B_SB] = km_addr(KP(fi->sb));
	a[B_SUPER] = km_addr(KP(fi->super_copy));
	a[B_DEVS] = km_addr(KP(fi->fs_devices));
	a[B_RSV] = km_addr(KP(fi->global_block_rsv.size));
	a[B_RSVSI] = km_addr(KP(fi->global_block_rsv.space_info));
	a[B_AVAIL] = km_addr(KP(fi->avail_data_alloc_bits));
	km_gather(a, B__N, v);
	if (v[B_SB] != sbp || !v[B_SUPER] || !v[B_DEVS] || !v[B_RSVSI])
		return;
	struct btrfs_super_block *sup = (struct btrfs_super_block *)(unsigned long)v[B_SUPER];
	struct btrfs_fs_devices *fd = (struct btrfs_fs_devices *)(unsigned long)v[B_DEVS];
	struct btrfs_space_info *rsi = (struct btrfs_space_info *)(unsigned long)v[B_RSVSI];
	u64 b[4] = {km_addr(KP(sup->total_bytes)), km_addr(KP(fd->open_devices)), km_addr(KP(fd->rw_devices)),
		    km_addr(KP(rsi->full))}, w[4];
	km_gather(b, 4, w);
	struct km_raid t;
	km_raid_table(&t);

	u64 used = 0, free_data = 0, free_meta = 0, factor = 1;
	int mixed = 0, noavail = 0, r;
	km_list sw;
	km_list_init(&sw, KP(fi->space_info), KM_BTRFS_MAX_SPACE);
	u64 nv;
	while ((r = km_list_step(&sw, KM_LIST_NONE, &nv)) > 0) {
		struct btrfs_space_info *si = (struct btrfs_space_info *)kcontainer_of(sw.cur, struct btrfs_space_info, list);
		enum { S_FLAGS, S_USED, S_TOTAL, S_RO, S_BG, S__N = S_BG + KM_BTRFS_NR_RAID };
		u64 c[S__N], x[S__N];
		c[S_FLAGS] = km_addr(KP(si->flags));
		c[S_USED] = km_addr(KP(si->disk_used));
		c[S_TOTAL] = km_addr(KP(si->disk_total));
		c[S_RO] = km_addr(KP(si->ro_bgs.next));
		for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++)
			c[S_BG + i] = km_addr(KP(si->block_groups[i].next));
		km_gather(c, S__N, x);
		if (x[S_FLAGS] & KM_BG_DATA) {
			free_data += x[S_TOTAL] - x[S_USED];
			if (x[S_RO] != km_addr(KP(si->ro_bgs))) {
				s64 ro = km_btrfs_ro_free(si, &t);
				if (ro < 0)
					noavail = 1;
				else
					free_data -= (u64)ro;
			}
			for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++)
				if (x[S_BG + i] != km_addr(KP(si->block_groups[i])) && t.copies[i])
					factor = t.copies[i];
		}
		if (!mixed && (x[S_FLAGS] & KM_BG_METADATA)) {
			if (x[S_FLAGS] & KM_BG_DATA)
				mixed = 1;
			else
				free_meta += x[S_TOTAL] - x[S_USED];
		}
		used += x[S_USED];
	}
	if (r < 0 || simt_any(__llview_failed()))
		return;                         /* not a list we recognise: unknown */

	u32 bits = (u32)__builtin_ctzll(bsize);
	u64 blocks = (w[0] / factor) >> bits;
	u64 bfree = blocks - ((used / factor) >> bits);
	u64 rsv = v[B_RSV] >> bits;
	bfree = bfree >= rsv ? bfree - rsv : 0;
	u64 profile = km_btrfs_data_profile(&t, v[B_AVAIL], w[2]);
	s64 dev = km_btrfs_dev_avail(fd, &t, profile, w[1]);
	if (dev < 0)
		noavail = 1;
	u64 bavail = (free_data / factor + (dev < 0 ? 0 : (u64)dev) / factor) >> bits;
	if (!mixed && (w[3] & 0xff) &&
	    (free_meta < KM_BTRFS_META_THRESH || free_meta - KM_BTRFS_META_THRESH < v[B_RSV]))
		bavail = 0;
	/* in bytes: the block is in units of bsize, as statfs */
	blk[KV_BLOCKS] = blocks;
	blk[KV_BFREE] = bfree;
	blk[KV_BAVAIL] = bavail;
	blk[KV_FILES] = blk[KV_FFREE] = 0;
	blk[KV_NOAVAIL] = (u64)noavail;
	blk[KV_KIND] = KV_BTRFS;
}

/* shmem_statfs: a limit of 0 (none) reports 0, as df shows */
KM_INLINE void km_tmpfs_statfs(struct shmem_sb_info *sbi, u64 *blk)
{
	int ispace = KFIELD_EXISTS(shmem_sb_info___ispace, free_ispace);
	struct shmem_sb_info___ispace *six = (struct shmem_sb_info___ispace *)sbi;
	struct shmem_sb_info___inodes *sin = (struct shmem_sb_info___inodes *)sbi;
	u64 a[5] = {km_addr(KP(sbi->max_blocks)), km_addr(KP(sbi->used_blocks.count)),
		    km_addr(KP(sbi->used_blocks.counters)), km_addr(KP(sbi->max_inodes)),
		    ispace ? km_addr(KP(six->free_ispace)) : km_addr(KP(sin->free_inodes))}, v[5];
	km_gather(a, 5, v);
	s64 used;
	km_pcpu_counters(&v[1], &v[2], 1, &used);
	blk[KV_BLOCKS] = v[0];
	blk[KV_BFREE] = blk[KV_BAVAIL] = v[0] ? v[0] - (u64)used : 0;
	blk[KV_FILES] = v[3];
	blk[KV_FFREE] = !v[3] ? 0 : ispace ? v[4] / KM_BOGO_INODE_SIZE : v[4];
	blk[KV_KIND] = KV_TMPFS;
}

int km_fs_stats(u64 key, u64 *blk)
{
	struct mount *m = (struct mount *)(unsigned long)key;
	u64 a[2] = {km_addr(KP(m->mnt.mnt_sb)), km_addr(KP(m->mnt.mnt_flags))}, v[2];
	km_gather(a, 2, v);
	struct super_block___fs *sb = (struct super_block___fs *)(unsigned long)v[0];
	u64 d = km_dummy_addr(), b[4], w[4];
	b[0] = sb ? km_addr(KP(sb->s_flags)) : d;
	b[1] = sb ? km_addr(KP(sb->s_magic)) : d;
	b[2] = sb ? km_addr(KP(sb->s_blocksize)) : d;
	b[3] = sb ? km_addr(KP(sb->s_fs_info)) : d;
	km_gather(b, 4, w);
	for (u32 i = KV_BLOCKS; i <= KV_FFREE; i++)
		blk[i] = 0;
	blk[KV_NOAVAIL] = 0;
	blk[KV_MNT_FLAGS] = v[1] & 0xffffffffu;
	blk[KV_SB_FLAGS] = w[0];
	blk[KV_BSIZE] = w[2];
	blk[KV_KIND] = KV_OTHER;
	if (sb && w[3] && w[1] == KM_EXT4_MAGIC && KTYPE_EXISTS(ext4_sb_info) && KTYPE_EXISTS(ext4_super_block))
		km_ext4_statfs(v[0], (struct ext4_sb_info *)(unsigned long)w[3], blk);
	else if (sb && w[3] && w[1] == KM_TMPFS_MAGIC)
		km_tmpfs_statfs((struct shmem_sb_info *)(unsigned long)w[3], blk);
	else if (sb && w[3] && w[1] == KM_XFS_MAGIC && KTYPE_EXISTS(xfs_mount) && KTYPE_EXISTS(xfs_sb) &&
		 KTYPE_EXISTS(xfs_ino_geometry))
		km_xfs_statfs(v[0], (struct xfs_mount *)(unsigned long)w[3], blk);
	else if (sb && w[3] && w[1] == KM_BTRFS_MAGIC && km_btrfs_types())
		km_btrfs_statfs(v[0], w[2], (struct btrfs_fs_info *)(unsigned long)w[3], blk);
	blk[KV_FAILED] = (u64)simt_any(__llview_failed()) || !sb;
	return 0;
}

/* a count of blocks in bytes, or a count: unknown for a filesystem whose
 * counters are not read, NaN when the block could not be read */
KM_INLINE double km_fsv(const u64 *blk, u64 v, double scale)
{
	return blk[KV_FAILED] ? KM_NAN : blk[KV_KIND] == KV_OTHER ? KM_ABSENT : (double)v * scale;
}

double km_fs_size_bytes(u64 k, const u64 *blk) { return km_fsv(blk, blk[KV_BLOCKS], (double)blk[KV_BSIZE]); }
double km_fs_free_bytes(u64 k, const u64 *blk) { return km_fsv(blk, blk[KV_BFREE], (double)blk[KV_BSIZE]); }
double km_fs_avail_bytes(u64 k, const u64 *blk)
{
	return blk[KV_NOAVAIL] && !blk[KV_FAILED] ? KM_ABSENT : km_fsv(blk, blk[KV_BAVAIL], (double)blk[KV_BSIZE]);
}
double km_fs_files(u64 k, const u64 *blk) { return km_fsv(blk, blk[KV_FILES], 1); }
double km_fs_files_free(u64 k, const u64 *blk) { return km_fsv(blk, blk[KV_FFREE], 1); }
/* read-only as /proc/mounts says "ro": the mount's flag or the superblock's */
double km_fs_readonly(u64 k, const u64 *blk)
{
	if (blk[KV_FAILED])
		return KM_NAN;
	return (blk[KV_MNT_FLAGS] & KM_MNT_READONLY) || (blk[KV_SB_FLAGS] & KM_SB_RDONLY);
}
