/* kmetric_cpu.c - CPU time: the host's (km_host_cpu*, summed over the
 * online CPUs) and each CPU's (km_cpu_*), and which CPUs there are.
 *
 * The metric library's entry points and helpers: see kmetric_int.h.
 */
#include "kmetric_int.h"

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
