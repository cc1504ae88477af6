/* kmetric_host.c - the host's metrics (km_host_*) but its CPU time
 * (kmetric_cpu.c): scheduler, kernel health, memory, pressure stall
 * information, the clock, conntrack, EDAC.
 *
 * The metric library's entry points and helpers: see kmetric_int.h.
 */
#include "kmetric_int.h"

#define KM_MAX_NODES 64u

KM_INLINE u64 km_vm_event(u32 cpu, long item)
{
	struct vm_event_state *ev = per_cpu_ptr(&vm_event_states, cpu);
	return KR(ev->event[item]);
}

KM_INLINE long km_zone_stat(long item) { return km_clamp0(KR(vm_zone_stat[item].counter)); }
KM_INLINE long km_node_stat(long item) { return km_clamp0(KR(vm_node_stat[item].counter)); }

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
 * kernel has no PSI or was booted with psi=0 (no /proc/pressure either:
 * km_psi_on, in kmetric_int.h). */
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
 * TIME_ERROR is exactly STA_UNSYNC or STA_CLOCKERR.  Which the target
 * keeps, and HZ, are in kmetric_int.h (km_ntp_data, km_hz_at, km_hz_of):
 * the disks' metrics use HZ too. */
#define KM_STA_UNSYNC 0x0040
#define KM_STA_CLOCKERR 0x1000
#define KM_USEC 1e-6

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

/* ---- host: open files ---------------------------------------------------- */

/* Open file handles (struct file) as the kernel counts them: nr_files,
 * summed over the CPUs as percpu_counter_sum_positive() does (what
 * alloc_empty_file() checks against the limit, and what
 * /proc/sys/fs/file-nr's first field prints on Debian's 7.2; on 6.1 and
 * 6.12 it prints the shared count alone, percpu_counter_read_positive,
 * up to percpu_counter_batch a CPU away from the sum). */
double km_host_file_handles(void)
{
	u64 cnt = (u64)KR(nr_files.count), pc = km_addr(KR(nr_files.counters));
	s64 sum;
	km_pcpu_counters(&cnt, &pc, 1, &sum);
	return km_collective((double)km_clamp0(sum));
}

double km_host_file_handles_max(void) { return km_collective((double)KR(files_stat.max_files)); }

/* ---- host: EDAC ---------------------------------------------------------- */

/* Memory errors the EDAC memory controllers counted, summed over them
 * (node_exporter's node_edac_*_errors_total, per controller there: each
 * /sys/devices/system/edac/mc/mcN/{ce,ue}_count is its mem_ctl_info's
 * ce_mc/ue_mc).  0 where EDAC has no controller (a VM); unknown without
 * EDAC, or on a corrupt or changing list. */
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
