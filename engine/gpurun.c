/* gpurun.c - the CUDA backend's kernels: the world they run on (gpu_start),
 * the persistent kernel's launch, handover, polling and halt, and the
 * on-demand tick (see gpu.h). */
#include "gpu_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int gpu_set_global(GpuCode *g, const char *name, const void *data, size_t bytes, char *err, size_t n)
{
	CUdeviceptr p;
	size_t have;
	CU(g->d.ModuleGetGlobal(&p, &have, g->mod, name), "the bundle's PTX has no %s", name);
	if (have < bytes) {
		snprintf(err, n, "%s holds %zu bytes in the PTX, the loader has %zu: a bundle and engine mismatch", name,
			 have, bytes);
		return -EINVAL;
	}
	CU(g->d.MemcpyHtoDAsync(p, data, bytes, g->copy), "cannot write %s", name);
	CU(g->d.StreamSynchronize(g->copy), "cannot write %s", name);
	return 0;
}

int gpu_start(GpuCode *g, const Bundle *b, const WdParams *p, const WdLayout *L, const RlResult *res,
	      const kx_mem *mem, const MemSource *src, void **mirror, sn_ring **ring, sn_stats **stats,
	      char *err, size_t n)
{
	gpu_enter(g);
	g->b = b;
	g->L = *L;
	g->total = L->total;
	g->tick_ns = p->tick_ns;
	kx_mem dmem;
	gpu_trace("start: map target");
	int r = gpu_map_target(g, mem, src, &dmem, err, n);
	if (r)
		return r;
	gpu_trace("start: globals");
	if (g->fleet) {              /* its own copies, which the fleet's kernel points its blocks at */
		size_t rb = (res->n ? res->n : 1) * sizeof *res->value;
		CU(g->d.MemAlloc(&g->dmem, sizeof dmem), "cannot allocate the target's memory description");
		CU(g->d.MemAlloc(&g->drelo, rb), "cannot allocate the target's relocation table");
		CU(g->d.MemcpyHtoDAsync(g->dmem, &dmem, sizeof dmem, g->copy), "cannot write the memory description");
		if (res->n)
			CU(g->d.MemcpyHtoDAsync(g->drelo, res->value, rb, g->copy), "cannot write the relocation table");
		CU(g->d.StreamSynchronize(g->copy), "cannot write the target's tables");
	} else if ((r = gpu_set_global(g, KX_MEM_SYM, &dmem, sizeof dmem, err, n)) ||
		   (r = gpu_set_global(g, KX_RELO_SYM, res->value, res->n * sizeof *res->value, err, n))) {
		return r;
	}
	gpu_trace("start: alloc");
	CU(g->d.MemAlloc(&g->dblock, L->total), "cannot allocate %zu MiB of GPU memory for the rule tables",
	   L->total >> 20);
	void *hring, *hstats;
	gpu_trace("start: host alloc");
	CU(g->d.MemHostAlloc(&hring, L->ring_bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
	   "cannot allocate the alert ring");
	g->ring = hring;
	CU(g->d.MemHostAlloc(&hstats, sizeof(sn_stats), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
	   "cannot allocate the statistics");
	g->stats = hstats;
	CU(g->d.MemHostGetDevicePointer(&g->dring, hring, 0), "no GPU address for the alert ring");
	CU(g->d.MemHostGetDevicePointer(&g->dstats, hstats, 0), "no GPU address for the statistics");
	wd_ring_init(g->ring, p->ring_cap);
	memset(g->stats, 0, sizeof *g->stats);
	g->mirror = calloc(1, L->total);
	if (!g->mirror) {
		snprintf(err, n, "out of memory");
		return -ENOMEM;
	}
	wd_build(b, p, L, res, g->mirror, g->dblock, g->dring, g->dstats);
	gpu_trace("start: copy tables");
	CU(g->d.MemcpyHtoDAsync(g->dblock, g->mirror, L->total, g->copy), "cannot copy the rule tables to the GPU");
	CU(g->d.StreamSynchronize(g->copy), "cannot copy the rule tables to the GPU");
	gpu_trace("start: done");
	*mirror = g->mirror;
	*ring = g->ring;
	*stats = g->stats;
	/* the grid: enough warps for every job and rule and, with a task
	 * job, a thread for each of the task table's rows; no more than can
	 * be resident at once (it has a grid barrier).  A tick's task phases
	 * run on as many of these blocks as the tick's tasks need. */
	size_t warps = b->nrules > b->njobs ? b->nrules : b->njobs;
	for (size_t j = 0; j < b->njobs; j++)
		if (b->jobs[j].kind == BD_JOB_TASKS && warps < (p->task_cap + 31) / 32)
			warps = (p->task_cap + 31) / 32;
	unsigned want = (unsigned)((warps + GPU_BLOCK / 32 - 1) / (GPU_BLOCK / 32));
	if (want < 1)
		want = 1;
	g->want = want;
	if (want < g->grid)
		g->grid = want;
	if (want < g->grid_main)
		g->grid_main = want;
	return 0;
}

/* Launch the persistent kernel on the world at block (g->dblock but in a
 * fault test). */
static int gpu_launch(GpuCode *g, CUdeviceptr block, char *err, size_t n)
{
	gpu_enter(g);
	gpu_trace("run: launch persistent kernel");
	void *args[1] = {&block};
	CU(g->d.LaunchKernel(g->fn_main, g->grid_main, 1, 1, GPU_BLOCK, 1, 1, 0, g->run, args, NULL),
	   "cannot launch the persistent kernel on %s", g->name);
	g->running = true;
	return 0;
}

int gpu_run(GpuCode *g, char *err, size_t n)
{
	if (g->fleet)
		return gpu_fleet_join(g, err, n);
	return gpu_launch(g, g->dblock, err, n);
}

void gpu_test_run_faulting(GpuCode *g)
{
	char err[256];
	if (!g->fleet)
		gpu_launch(g, GPU_FAULT_ADDR, err, sizeof err);
}


/* Launch a stopped kernel again on its own world, on its schedule: the
 * world no longer takes over from anyone (its old one may be gone). */
int gpu_resume(GpuCode *g, char *err, size_t n)
{
	static const uint64_t zero;
	gpu_enter(g);
	CU(g->d.MemcpyHtoDAsync(g->dblock + offsetof(sn_world, from), &zero, sizeof zero, g->copy),
	   "cannot resume the persistent kernel");
	CU(g->d.StreamSynchronize(g->copy), "cannot resume the persistent kernel");
	__atomic_store_n(&g->stats->handoff_tick, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&g->stats->stopped, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&g->stats->stop, 0, __ATOMIC_SEQ_CST);
	return gpu_run(g, err, n);
}

/* A handover that failed: the new kernel stops, the old one runs on.  The
 * old kernel was told to stop after handoff_tick; the order is withdrawn,
 * and a kernel that had already stopped is launched again.  On success
 * err gets what happened to the old rules, appended. */
static void gpu_takeover_undo(GpuCode *g, GpuCode *old, GpuFault fault, char *err, size_t n)
{
	size_t len = strlen(err);
	gpu_enter(g);
	__atomic_store_n(&g->stats->stop, 1, __ATOMIC_SEQ_CST);
	CUresult c = gpu_wait_exit(g, 2 * g->tick_ns + 1000000000ull);
	g->running = c == CUDA_ERROR_NOT_READY;       /* a kernel that will not stop stays counted */
	__atomic_store_n(&old->stats->handoff_tick, 0, __ATOMIC_SEQ_CST);
	/* a tick that had read the order before it was withdrawn stops the
	 * kernel within a tick: wait that long before deciding it runs on */
	gpu_enter(old);
	c = gpu_wait_exit(old, 2 * old->tick_ns + 1000000ull);
	if (c == CUDA_ERROR_NOT_READY) {
		snprintf(err + len, n - len, "; the old rules run on");
		return;
	}
	if (c != CUDA_SUCCESS) {                      /* failed: gpu_poll reports it */
		snprintf(err + len, n - len, "; the old persistent kernel failed too");
		return;
	}
	gpu_trace("takeover: undo, resume the old kernel");
	char e2[256] = "injected: SENTINEL_TEST_FAULTS";
	if (fault == GPU_FAULT_NO_RESUME || gpu_resume(old, e2, sizeof e2)) {
		old->running = true;                      /* not running: gpu_poll says so (sentineld checks at once) */
		snprintf(err + len, n - len, "; the old rules could not be resumed: %s", e2);
		return;
	}
	snprintf(err + len, n - len, "; the old rules run on (resumed after tick %llu)",
		 (unsigned long long)__atomic_load_n(&old->stats->ticks, __ATOMIC_ACQUIRE));
}

int gpu_takeover(GpuCode *g, GpuCode *old, uint64_t timeout_ns, GpuFault fault, char *err, size_t n)
{
	if (g->fleet || old->fleet) {
		snprintf(err, n, "a reload of several targets on the GPU is not supported yet (one kernel runs them "
			 "all): restart sentineld to load new rules, or run them on the CPU backend (backend = cpu)");
		return -ENOTSUP;
	}
	/* the new kernel waits for the old one's last tick, then takes over
	 * (in the fault test, from a world at 4 KiB: no GPU mapping has it) */
	int r = gpu_launch(g, fault == GPU_FAULT_KERNEL ? GPU_FAULT_ADDR : g->dblock, err, n);
	if (r)
		return r;
	gpu_trace("takeover: launched");
	uint64_t k = __atomic_load_n(&old->stats->ticks, __ATOMIC_ACQUIRE);
	if (fault != GPU_FAULT_STUCK)
		__atomic_store_n(&old->stats->handoff_tick, k + 2, __ATOMIC_RELEASE);
	struct timespec ts = {0, 1000000};
	for (uint64_t waited = 0; waited < timeout_ns; waited += 1000000) {
		gpu_enter(old);
		CUresult c = old->d.StreamQuery(old->run);
		bool old_done = c == CUDA_SUCCESS;
		if (c != CUDA_SUCCESS && c != CUDA_ERROR_NOT_READY) {
			r = gpu_err(old, c, err, n, "the old persistent kernel failed during the reload");
			goto undo;
		}
		if (old_done && (fault == GPU_FAULT_AFTER_STOP || fault == GPU_FAULT_NO_RESUME)) {
			snprintf(err, n, "the new persistent kernel failed (injected: SENTINEL_TEST_FAULTS)");
			r = -EIO;
			goto undo;
		}
		/* the old world may go once the new kernel has ticked on its own */
		if (old_done && __atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE) > k + 2) {
			gpu_trace("takeover: done");
			old->running = false;
			return 0;
		}
		if ((r = gpu_poll(g, err, n)))
			goto undo;
		nanosleep(&ts, NULL);
	}
	snprintf(err, n, "the reload's handover did not complete within %llu ms",
		 (unsigned long long)(timeout_ns / 1000000));
	r = -ETIMEDOUT;
undo:
	gpu_takeover_undo(g, old, fault, err, n);
	return r;
}

uint64_t gpu_block_addr(const GpuCode *g) { return g->dblock; }
void *gpu_mirror(GpuCode *g) { return g->mirror; }

int gpu_saved_alloc(GpuCode *g, size_t bytes, uint64_t *addr, char *err, size_t n)
{
	gpu_enter(g);
	if (g->dsaved)
		g->d.MemFree(g->dsaved);
	g->dsaved = 0;
	CU(g->d.MemAlloc(&g->dsaved, bytes ? bytes : 1), "cannot allocate %zu MiB of GPU memory for the saved state",
	   bytes >> 20);
	*addr = g->dsaved;
	return 0;
}

int gpu_saved_copy(GpuCode *g, const void *block, size_t bytes, char *err, size_t n)
{
	gpu_enter(g);
	CU(g->d.MemcpyHtoDAsync(g->dsaved, block, bytes, g->copy), "cannot copy the saved state to the GPU");
	CU(g->d.StreamSynchronize(g->copy), "cannot copy the saved state to the GPU");
	return 0;
}

int gpu_upload(GpuCode *g, char *err, size_t n)
{
	gpu_enter(g);
	gpu_trace("upload");
	CU(g->d.MemcpyHtoDAsync(g->dblock, g->mirror, g->total, g->copy), "cannot copy the rule tables to the GPU");
	CU(g->d.StreamSynchronize(g->copy), "cannot copy the rule tables to the GPU");
	gpu_trace("upload: done");
	return 0;
}

int gpu_poll(GpuCode *g, char *err, size_t n)
{
	if (g->fleet)
		return gpu_fleet_poll(g, err, n);
	if (!g->running)
		return 0;
	gpu_enter(g);
	CUresult c = g->d.StreamQuery(g->run);
	if (c == CUDA_ERROR_NOT_READY)
		return 0;
	g->running = false;
	if (c == CUDA_SUCCESS) {                 /* it only ends when told to (gpu_halt, a handover) */
		snprintf(err, n, "the persistent kernel on %s stopped by itself after tick %llu; no rule runs",
			 g->name, (unsigned long long)__atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE));
		return -EPIPE;
	}
	return gpu_err(g, c, err, n, "the persistent kernel failed on %s", g->name);
}

void gpu_test_exit(GpuCode *g)
{
	if (!g->fleet && g->running && g->stats)
		__atomic_store_n(&g->stats->stop, 1, __ATOMIC_SEQ_CST);
}

int gpu_halt(GpuCode *g, uint64_t timeout_ns, char *err, size_t n)
{
	if (gpu_lost())                  /* nothing runs, and no call would work (gpu_close) */
		return 0;
	if (g->fleet)
		return gpu_fleet_leave(g, err, n);
	if (!g->running)
		return 0;
	gpu_enter(g);
	*(volatile uint32_t *)&g->stats->stop = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	struct timespec ts = {0, 1000000};
	for (uint64_t waited = 0; waited < timeout_ns; waited += 1000000) {
		CUresult c = g->d.StreamQuery(g->run);
		if (c == CUDA_SUCCESS) {
			g->running = false;
			return 0;
		}
		if (c != CUDA_ERROR_NOT_READY) {
			g->running = false;
			return gpu_err(g, c, err, n, "the persistent kernel failed on %s", g->name);
		}
		nanosleep(&ts, NULL);
	}
	snprintf(err, n, "the persistent kernel on %s did not stop within %llu ms", g->name,
		 (unsigned long long)(timeout_ns / 1000000));
	return -ETIMEDOUT;
}
/* Wait up to timeout_ns for the persistent kernel to leave. */
CUresult gpu_wait_exit(GpuCode *g, uint64_t timeout_ns)
{
	struct timespec ts = {0, 50000};
	for (uint64_t t0 = u_now_ns(); u_now_ns() - t0 < timeout_ns;) {
		CUresult c = g->d.StreamQuery(g->run);
		if (c != CUDA_ERROR_NOT_READY)
			return c;
		nanosleep(&ts, NULL);
	}
	return CUDA_ERROR_NOT_READY;
}
int gpu_read(GpuCode *g, size_t off, void *dst, size_t bytes, char *err, size_t n)
{
	gpu_enter(g);
	CU(g->d.MemcpyDtoHAsync(dst, g->dblock + off, bytes, g->copy), "cannot read the GPU's tables");
	CU(g->d.StreamSynchronize(g->copy), "cannot read the GPU's tables");
	return 0;
}

int gpu_tick(GpuCode *g, uint64_t now, char *err, size_t n)
{
	if (g->fleet) {
		snprintf(err, n, "a fleet member has no on-demand tick: its fleet's kernel ticks it");
		return -ENOTSUP;
	}
	gpu_enter(g);
	void *args[2] = {&g->dblock, &now};
	CU(g->d.LaunchKernel(g->fn_tick, g->grid, 1, 1, GPU_BLOCK, 1, 1, 0, NULL, args, NULL),
	   "cannot launch the evaluation kernel");
	CU(g->d.CtxSynchronize(), "the evaluation kernel failed on %s", g->name);
	return 0;
}

const sn_world *gpu_view(GpuCode *g, char *err, size_t n)
{
	if (gpu_read(g, 0, g->mirror, g->total, err, n))
		return NULL;
	wd_rebase(g->mirror, g->b, &g->L, g->dblock, (uint64_t)(uintptr_t)g->mirror);
	return wd_world(g->mirror);
}

/* Everything gpu_start made: the world, ring and statistics, the
 * registrations of the target's RAM and our mappings of it. */
void gpu_free_world(GpuCode *g)
{
	if (g->d.lib && g->ctx_held) {
		gpu_enter(g);
		if (g->dblock)
			g->d.MemFree(g->dblock);
		if (g->dmem)
			g->d.MemFree(g->dmem);
		if (g->drelo)
			g->d.MemFree(g->drelo);
		if (g->dsaved)
			g->d.MemFree(g->dsaved);
		if (g->ring)
			g->d.MemFreeHost(g->ring);
		if (g->stats)
			g->d.MemFreeHost(g->stats);
	}
	g->dblock = g->dmem = g->drelo = g->dsaved = 0;
	g->ring = NULL;
	g->stats = NULL;
	gpu_unmap_target(g);
	free(g->mirror);
	g->mirror = NULL;
}
