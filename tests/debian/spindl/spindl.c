// SPDX-License-Identifier: GPL-2.0
/*
 * spindl: a spinlock deadlock on demand, for bench/side_by_side.py's
 * "spinlock" scenario.  Built into the Debian test image against its own
 * kernel (tests/debian/mkimage.sh).
 *
 * Loading it starts one kernel thread, bound to the last online CPU, that
 * takes a spinlock its caller already holds: the commonest spinlock
 * deadlock there is (a helper that locks what the code calling it locked).
 * That CPU then spins in kernel code with preemption off for good; the
 * other CPUs go on until they need the lock too.  The kernel's own
 * soft-lockup watchdog reports it after 2 * watchdog_thresh seconds (20 s
 * by default) and taints itself (L).
 *
 * There is no way back: the module has no exit function (rmmod refuses)
 * and the CPU never leaves the loop.  Reboot the machine.
 */
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/spinlock.h>

static DEFINE_SPINLOCK(spindl_lock);

/* the helper that takes the lock again: spins forever when its caller holds it */
static noinline void spindl_update(void)
{
	spin_lock(&spindl_lock);
	spin_unlock(&spindl_lock);
}

static int spindl_thread(void *unused)
{
	spin_lock(&spindl_lock);
	spindl_update();
	spin_unlock(&spindl_lock);
	return 0;
}

static int __init spindl_init(void)
{
	unsigned int cpu = cpumask_last(cpu_online_mask);
	struct task_struct *t;

	t = kthread_create(spindl_thread, NULL, "spindl/%u", cpu);
	if (IS_ERR(t))
		return PTR_ERR(t);
	kthread_bind(t, cpu);
	wake_up_process(t);
	pr_warn("spindl: CPU %u is about to deadlock on a spinlock it holds\n", cpu);
	return 0;
}
module_init(spindl_init);

MODULE_DESCRIPTION("A spinlock deadlock on demand (Sentinel's tests)");
MODULE_LICENSE("GPL");
