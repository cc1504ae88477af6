/* gpuwake.c - the doorbell that wakes the host for alerts (see gpu_int.h). */
#include "gpu_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- waking the host ---------------------------------------------------------------------------
 *
 * The persistent kernel writes the ring's head into stats->doorbell after
 * every tick.  gpu_arm queues, on a stream of its own, a wait until the
 * doorbell passes the records the host has taken, then a host function
 * that writes wake.fd: the driver's thread, awake anyway, runs it, and
 * sentineld sleeps until there are alerts.  Without the two calls (drivers
 * before CUDA 11.7) the caller polls. */
void gpu_woken(void *arg)
{
	GpuWake *w = arg;
	gpu_trace("wake: host function");
	__atomic_store_n(&w->armed, 0, __ATOMIC_RELEASE);
	uint64_t one = 1;
	ssize_t r = write(w->fd, &one, sizeof one);
	(void)r;                                     /* a full counter wakes the host just as well */
}

void gpu_set_wake(GpuCode *g, int fd)
{
	if (g->wake)                     /* a fleet's member has none: the fleet rings */
		g->wake->fd = fd;
}

bool gpu_arm(GpuCode *g)
{
	if (!g->wake || !g->wait_value || !g->host_func || g->wake->fd <= 0 || !g->running || !g->stats)
		return false;
	if (__atomic_load_n(&g->wake->armed, __ATOMIC_ACQUIRE))
		return true;
	gpu_enter(g);
	uint32_t want = (uint32_t)__atomic_load_n(&g->ring->tail, __ATOMIC_ACQUIRE) + 1;
	if (gpu_tracing()) {
		char t[160];
		snprintf(t, sizeof t, "wake: armed, want %u, doorbell %u, head %llu, ticks %llu", want,
			 __atomic_load_n(&g->stats->doorbell, __ATOMIC_ACQUIRE),
			 (unsigned long long)__atomic_load_n(&g->ring->head, __ATOMIC_ACQUIRE),
			 (unsigned long long)__atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE));
		gpu_trace(t);
	}
	__atomic_store_n(&g->wake->armed, 1, __ATOMIC_RELEASE);
	if (g->wait_value(g->watch, g->dstats + offsetof(sn_stats, doorbell), want, CU_STREAM_WAIT_VALUE_GEQ) ||
	    g->host_func(g->watch, gpu_woken, g->wake)) {
		/* not on this device or driver: poll from now on */
		g->wait_value = NULL;
		__atomic_store_n(&g->wake->armed, 0, __ATOMIC_RELEASE);
		return false;
	}
	return true;
}

/* With the kernel stopped: release the queued wait, let the host function
 * run, and put the doorbell back at the ring's head (no spurious wakeups
 * after a resume). */
void gpu_unwatch(GpuCode *g)
{
	if (!g->stats || !g->watch || !g->wake)
		return;
	if (__atomic_load_n(&g->wake->armed, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&g->stats->doorbell, (uint32_t)g->ring->tail + 1, __ATOMIC_SEQ_CST);
		g->d.StreamSynchronize(g->watch);
	}
	__atomic_store_n(&g->stats->doorbell, (uint32_t)__atomic_load_n(&g->ring->head, __ATOMIC_ACQUIRE),
			 __ATOMIC_SEQ_CST);
}
