/* gpufleet.c - one persistent kernel over several targets (gpu.h, "a
 * fleet"; the kernel is snrt.c's sn_gpu_fleet).
 *
 * A fleet has one context and one module; its members are GpuCodes that
 * borrow them and own their worlds.  The set of members is fixed for a
 * launch, so a member comes or goes by stopping the kernel between two
 * ticks and launching it again: memory is allocated while it runs (no
 * driver call here waits for a running kernel), and freed while it is
 * stopped (cuMemFree and cuMemHostUnregister would wait for it).  Each
 * member's world keeps its schedule across launches (its stats'
 * last_tick_ns), so a launch costs no tick when it fits in the gap.
 */
#include "gpu_int.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How often the running kernel's state is asked of the driver. */
#define GPU_FLEET_POLL_NS 500000000ull

struct GpuFleet {
	GpuCode *g;                   /* the fleet's own: driver, context, module, run stream */
	CUfunction fn;
	unsigned grid;                /* blocks resident at once (half the GPU) */
	pthread_mutex_t lock;         /* members, launches */
	GpuCode **m;                  /* [n] the members in the kernel */
	unsigned n, cap;
	/* the launch's description, in device memory */
	CUdeviceptr dfleet, dmembers, dsync;
	size_t members_cap, sync_cap;
	sn_fleet_ctl *ctl;            /* mapped host memory */
	CUdeviceptr dctl;
	bool running;
	bool failed;                  /* the kernel faulted: the context is gone */
	bool halted;                  /* gpu_fleet_halt: no launch from now on */
	bool batch;                   /* gpu_fleet_batch: members change without a launch each */
	bool batch_stopped;           /* ... and the kernel was stopped for one: launch at its end */
	bool test_fault;              /* gpu_fleet_test_fault: the next launch faults */
	uint64_t tick_ns;
	uint64_t polled_ns;           /* when the kernel was last found running (gpu_fleet_poll) */
	unsigned groups, group_blocks;
	uint64_t launches;
	/* alerts wake the host: a wait on ctl->doorbell past seen, then a
	 * host function (gpu_woken) that writes wake.fd, on g's watch stream */
	GpuWake wake;
	uint32_t seen;                /* the doorbell before the host's last look at the rings */
	uint32_t want;                /* the queued wait's: until the doorbell reaches it */
};

int gpu_fleet_open(const Bundle *b, int ordinal, GpuFleet **out, char *err, size_t n)
{
	GpuFleet *f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	int r = gpu_open(b, ordinal, &f->g, err, n);
	if (r)
		goto fail;
	GpuCode *g = f->g;
	CUresult c;
	int per_sm = 0;
	if ((c = g->d.ModuleGetFunction(&f->fn, g->mod, "sn_gpu_fleet")) ||
	    (c = g->d.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f->fn, GPU_BLOCK, 0)) || per_sm <= 0) {
		r = gpu_err(g, c, err, n, "the bundle's PTX has no fleet kernel (sn_gpu_fleet): recompile the rules "
			    "with this version's rulec");
		goto fail;
	}
	/* half the GPU, as a one-target kernel: the ticks are chains of
	 * reads of host memory, and more blocks reading at once make each
	 * read slower (500 targets on an H100: 396 groups ran a target's
	 * tick in 21.7 ms and 0.5% of group ticks late, 198 in 8.0 ms and
	 * none; docs/benchmarks.md) */
	f->grid = (unsigned)(per_sm * g->sms) / 2;
	if (!f->grid)
		f->grid = 1;
	void *h;
	if ((c = g->d.MemHostAlloc(&h, sizeof *f->ctl, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE)) ||
	    (c = g->d.MemHostGetDevicePointer(&f->dctl, h, 0))) {
		r = gpu_err(g, c, err, n, "cannot allocate the fleet's control block");
		goto fail;
	}
	f->ctl = h;
	memset(f->ctl, 0, sizeof *f->ctl);
	if ((c = g->d.MemAlloc(&f->dfleet, sizeof(sn_fleet)))) {
		r = gpu_err(g, c, err, n, "cannot allocate the fleet's description");
		goto fail;
	}
	*out = f;
	return 0;
fail:
	gpu_fleet_close(f);
	return r;
}

int gpu_fleet_member(GpuFleet *f, GpuCode **out, char *err, size_t n)
{
	GpuCode *g = calloc(1, sizeof *g), *F = f->g;
	if (!g)
		return -ENOMEM;
	g->d = F->d;                  /* the driver's table; the fleet keeps the library */
	g->dev = F->dev;
	g->ctx = F->ctx;
	g->ctx_held = true;
	g->mod = F->mod;
	g->fn_tick = F->fn_tick;
	g->fn_main = F->fn_main;
	memcpy(g->name, F->name, sizeof g->name);
	g->cc_major = F->cc_major;
	g->cc_minor = F->cc_minor;
	g->sms = F->sms;
	g->arch = F->arch;
	g->grid = F->grid;
	g->grid_main = F->grid_main;
	g->run = F->run;
	g->fleet = f;
	gpu_enter(g);
	CUresult c = g->d.StreamCreate(&g->copy, CU_STREAM_NON_BLOCKING);
	if (c) {
		free(g);
		return gpu_err(F, c, err, n, "cannot create a CUDA stream");
	}
	*out = g;
	return 0;
}

/* ---- launches (f->lock held) -------------------------------------------------------------------- */

static void fl_unwatch(GpuFleet *f);

/* Stop the kernel between two ticks and wait for it to leave. */
static int fl_stop(GpuFleet *f, char *err, size_t n)
{
	GpuCode *g = f->g;
	if (!f->running)
		return 0;
	gpu_enter(g);
	__atomic_store_n(&f->ctl->stop, 1, __ATOMIC_SEQ_CST);
	CUresult c = gpu_wait_exit(g, 2 * f->tick_ns + 2000000000ull);
	if (c == CUDA_ERROR_NOT_READY) {
		snprintf(err, n, "the fleet's kernel on %s did not stop within %llu ms", g->name,
			 (unsigned long long)((2 * f->tick_ns + 2000000000ull) / 1000000));
		return -ETIMEDOUT;
	}
	f->running = false;
	if (c != CUDA_SUCCESS) {
		f->failed = true;
		return gpu_err(g, c, err, n, "the fleet's kernel failed on %s", g->name);
	}
	/* a queued wait is work on the device too: cuMemFree would wait for it */
	fl_unwatch(f);
	return 0;
}

/* Grow a device array to hold bytes (the kernel is stopped). */
static int fl_room(GpuFleet *f, CUdeviceptr *p, size_t *cap, size_t bytes, char *err, size_t n)
{
	GpuCode *g = f->g;
	if (*cap >= bytes)
		return 0;
	if (*p)
		g->d.MemFree(*p);
	*p = 0;
	*cap = 0;
	CU(g->d.MemAlloc(p, bytes), "cannot allocate %zu KiB for the fleet", bytes >> 10);
	*cap = bytes;
	return 0;
}

/* Launch the kernel over the members.  Groups: as many blocks a member as
 * the grid has for each (at most what one member's tick can use), and as
 * many groups as fit, each running its members in turn. */
static int fl_launch(GpuFleet *f, char *err, size_t n)
{
	GpuCode *g = f->g;
	if (!f->n || f->failed || f->halted)
		return 0;
	gpu_enter(g);
	unsigned want = 1;
	for (unsigned i = 0; i < f->n; i++)
		if (f->m[i]->want > want)
			want = f->m[i]->want;
	unsigned gb = f->grid / f->n;
	if (gb > want)
		gb = want;
	if (gb < 1)
		gb = 1;
	unsigned groups = f->grid / gb < f->n ? f->grid / gb : f->n;
	if (groups < 1)
		groups = 1;
	f->tick_ns = f->m[0]->tick_ns;
	unsigned per = (f->n + groups - 1) / groups;
	sn_fleet_member *hm = calloc(f->n, sizeof *hm);
	uint64_t *hs = calloc((size_t)groups * SN_FLEET_SYNC, sizeof *hs);
	int r = hm && hs ? 0 : -ENOMEM;
	if (r)
		snprintf(err, n, "out of memory");
	if (!r)
		r = fl_room(f, &f->dmembers, &f->members_cap, f->n * sizeof *hm, err, n);
	if (!r)
		r = fl_room(f, &f->dsync, &f->sync_cap, (size_t)groups * SN_FLEET_SYNC * sizeof *hs, err, n);
	if (r)
		goto out;
	for (unsigned i = 0; i < f->n; i++)
		hm[i] = (sn_fleet_member){.w = (sn_world *)(uintptr_t)f->m[i]->dblock,
					  .mem = (const void *)(uintptr_t)f->m[i]->dmem,
					  .relo = (const uint64_t *)(uintptr_t)f->m[i]->drelo};
	sn_fleet F = {.tick_ns = f->tick_ns, .share_ns = f->tick_ns / per, .nmembers = f->n, .ngroups = groups,
		      .group_blocks = gb, .m = (sn_fleet_member *)(uintptr_t)f->dmembers,
		      .sync = (uint64_t *)(uintptr_t)f->dsync, .ctl = (sn_fleet_ctl *)(uintptr_t)f->dctl};
	CUresult c;
	if ((c = g->d.MemcpyHtoDAsync(f->dmembers, hm, f->n * sizeof *hm, g->copy)) ||
	    (c = g->d.MemcpyHtoDAsync(f->dsync, hs, (size_t)groups * SN_FLEET_SYNC * sizeof *hs, g->copy)) ||
	    (c = g->d.MemcpyHtoDAsync(f->dfleet, &F, sizeof F, g->copy)) || (c = g->d.StreamSynchronize(g->copy))) {
		r = gpu_err(g, c, err, n, "cannot write the fleet's description");
		goto out;
	}
	__atomic_store_n(&f->ctl->stopped, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&f->ctl->stop, 0, __ATOMIC_SEQ_CST);
	CUdeviceptr bad = GPU_FAULT_ADDR;
	void *args[1] = {f->test_fault ? (void *)&bad : (void *)&f->dfleet};
	f->test_fault = false;
	gpu_trace("fleet: launch");
	if ((c = g->d.LaunchKernel(f->fn, groups * gb, 1, 1, GPU_BLOCK, 1, 1, 0, g->run, args, NULL))) {
		r = gpu_err(g, c, err, n, "cannot launch the fleet's kernel on %s", g->name);
		goto out;
	}
	f->running = true;
	f->groups = groups;
	f->group_blocks = gb;
	f->launches++;
out:
	free(hm);
	free(hs);
	return r;
}

/* Stop, change the members (remove g, or add it), launch again.  The
 * kernel is stopped while drop (if set) frees g's resources. */
static int fl_change(GpuCode *g, bool add, bool drop, char *err, size_t n)
{
	GpuFleet *f = g->fleet;
	pthread_mutex_lock(&f->lock);
	int r = 0;
	if (add && !g->joined && f->n == f->cap) {
		unsigned cap = f->cap ? 2 * f->cap : 16;
		GpuCode **m = realloc(f->m, cap * sizeof *m);
		if (!m) {
			snprintf(err, n, "out of memory");
			r = -ENOMEM;
			goto out;
		}
		f->m = m;
		f->cap = cap;
	}
	if ((add && g->joined) || (!add && !g->joined && !drop))
		goto out;                 /* nothing changes */
	if (!f->batch_stopped && (r = fl_stop(f, err, n)))
		goto out;
	f->batch_stopped = f->batch;
	if (add) {
		f->m[f->n++] = g;
		g->joined = true;
	} else if (g->joined) {
		unsigned k = 0;
		for (unsigned i = 0; i < f->n; i++)
			if (f->m[i] != g)
				f->m[k++] = f->m[i];
		f->n = k;
		g->joined = false;
	}
	if (drop)
		gpu_free_world(g);
	if (!f->batch)
		r = fl_launch(f, err, n);
out:
	pthread_mutex_unlock(&f->lock);
	return r;
}

int gpu_fleet_pause(GpuFleet *f, char *err, size_t n)
{
	pthread_mutex_lock(&f->lock);
	int r = fl_stop(f, err, n);
	if (!r) {
		f->batch = true;
		f->batch_stopped = true;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

void gpu_fleet_test_fault(GpuFleet *f)
{
	pthread_mutex_lock(&f->lock);
	f->test_fault = true;
	pthread_mutex_unlock(&f->lock);
}

int gpu_fleet_batch(GpuFleet *f, bool on, char *err, size_t n)
{
	pthread_mutex_lock(&f->lock);
	int r = 0;
	if (!on && f->batch_stopped)
		r = fl_launch(f, err, n);
	f->batch = on;
	f->batch_stopped = false;
	pthread_mutex_unlock(&f->lock);
	return r;
}

int gpu_fleet_join(GpuCode *g, char *err, size_t n) { return fl_change(g, true, false, err, n); }
int gpu_fleet_leave(GpuCode *g, char *err, size_t n) { return fl_change(g, false, false, err, n); }

void gpu_fleet_drop(GpuCode *g)
{
	char err[256];
	if (fl_change(g, false, true, err, sizeof err)) {
		fprintf(stderr, "sentinel: closing a target of the GPU fleet: %s\n", err);
		/* its world stays allocated (the kernel may read it): leaked, not freed under it */
	}
	if (g->copy) {
		gpu_enter(g);
		g->d.StreamDestroy(g->copy);
	}
	free(g);
}

int gpu_fleet_poll(GpuCode *g, char *err, size_t n)
{
	GpuFleet *f = g->fleet;
	if (!g->joined)
		return 0;
	pthread_mutex_lock(&f->lock);
	int r = 0;
	uint64_t now = u_now_ns();
	if (f->running && now - f->polled_ns < GPU_FLEET_POLL_NS) {
		/* asked for every member in turn, the driver once in a while:
		 * a cuStreamQuery per target and second, 500 targets took 23%
		 * of a core on an H100's host (docs/benchmarks.md) */
	} else if (f->running) {
		gpu_enter(f->g);
		CUresult c = f->g->d.StreamQuery(f->g->run);
		if (c == CUDA_ERROR_NOT_READY) {
			f->polled_ns = now;
		} else if (c == CUDA_SUCCESS) {
			f->running = false;
			snprintf(err, n, "the fleet's kernel on %s stopped by itself; no rule runs on its %u targets",
				 f->g->name, f->n);
			r = -EPIPE;
		} else {
			f->running = false;
			f->failed = true;
			r = gpu_err(f->g, c, err, n, "the fleet's kernel failed on %s", f->g->name);
		}
	} else {
		snprintf(err, n, "the fleet's kernel on %s is not running%s", f->g->name,
			 f->failed ? " (it failed)" : "");
		r = -EPIPE;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

/* ---- waking the host ------------------------------------------------------------------------------
 *
 * The kernel adds one to ctl->doorbell after a member's tick that wrote
 * alert records; gpu_fleet_arm queues a wait until it passes what the host
 * saw before it last drained the rings (gpu_fleet_seen), then a host
 * function that writes the wake fd, as gpu_arm does for one target.  The
 * wait outlives a relaunch: the doorbell is not reset. */
bool gpu_fleet_seen(GpuFleet *f)
{
	uint32_t bell = __atomic_load_n(&f->ctl->doorbell, __ATOMIC_ACQUIRE);
	bool moved = bell != f->seen;
	f->seen = bell;
	return moved;
}

bool gpu_fleet_arm(GpuFleet *f, int wake_fd)
{
	GpuCode *g = f->g;
	if (!g->wait_value || !g->host_func || wake_fd <= 0 || !g->watch)
		return false;
	if (__atomic_load_n(&f->wake.armed, __ATOMIC_ACQUIRE))
		return true;
	pthread_mutex_lock(&f->lock);
	bool ok = f->running;
	if (ok) {
		gpu_enter(g);
		f->wake.fd = wake_fd;
		__atomic_store_n(&f->wake.armed, 1, __ATOMIC_RELEASE);
		f->want = f->seen + 1;
		if (g->wait_value(g->watch, f->dctl + offsetof(sn_fleet_ctl, doorbell), f->want,
				  CU_STREAM_WAIT_VALUE_GEQ) || g->host_func(g->watch, gpu_woken, &f->wake)) {
			g->wait_value = NULL;        /* not on this device or driver: poll from now on */
			__atomic_store_n(&f->wake.armed, 0, __ATOMIC_RELEASE);
			ok = false;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return ok;
}

/* Release a queued wait (the kernel stopped: before memory is freed or
 * the context goes): the doorbell past it where the kernel did not ring,
 * and the host function run (a spurious wakeup; the host arms again). */
static void fl_unwatch(GpuFleet *f)
{
	GpuCode *g = f->g;
	if (!f->ctl || !g->watch || !__atomic_load_n(&f->wake.armed, __ATOMIC_ACQUIRE))
		return;
	gpu_enter(g);
	uint32_t b = __atomic_load_n(&f->ctl->doorbell, __ATOMIC_ACQUIRE);
	while ((int32_t)(b - f->want) < 0 &&
	       !__atomic_compare_exchange_n(&f->ctl->doorbell, &b, f->want, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	g->d.StreamSynchronize(g->watch);
}

void gpu_fleet_info(GpuFleet *f, GpuFleetInfo *out)
{
	pthread_mutex_lock(&f->lock);
	*out = (GpuFleetInfo){.members = f->n, .groups = f->running ? f->groups : 0,
			      .group_blocks = f->running ? f->group_blocks : 0, .grid = f->grid,
			      .launches = f->launches};
	if (f->ctl) {
		out->passes = __atomic_load_n(&f->ctl->passes, __ATOMIC_ACQUIRE);
		out->late_passes = __atomic_load_n(&f->ctl->late_passes, __ATOMIC_ACQUIRE);
		out->max_pass_ns = __atomic_load_n(&f->ctl->max_pass_ns, __ATOMIC_ACQUIRE);
	}
	pthread_mutex_unlock(&f->lock);
}

const char *gpu_fleet_device(const GpuFleet *f) { return f->g->name; }

int gpu_fleet_halt(GpuFleet *f, char *err, size_t n)
{
	pthread_mutex_lock(&f->lock);
	f->halted = true;
	int r = fl_stop(f, err, n);
	pthread_mutex_unlock(&f->lock);
	return r;
}

void gpu_fleet_close(GpuFleet *f)
{
	if (!f || gpu_lost())            /* as gpu_close: left to the exit */
		return;
	if (f->g) {
		char err[256];
		GpuCode *g = f->g;
		if (fl_stop(f, err, sizeof err))
			fprintf(stderr, "sentinel: closing the GPU fleet: %s\n", err);
		fl_unwatch(f);                /* (stopped before, by gpu_fleet_halt) */
		gpu_enter(g);
		if (f->dmembers)
			g->d.MemFree(f->dmembers);
		if (f->dsync)
			g->d.MemFree(f->dsync);
		if (f->dfleet)
			g->d.MemFree(f->dfleet);
		if (f->ctl)
			g->d.MemFreeHost(f->ctl);
		gpu_close(g);
	}
	free(f->m);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
