/* gpu.c - the CUDA backend (see gpu.h): the driver, the bundle's PTX, the
 * contexts, and opening and closing an engine's GpuCode.  The rest of it:
 *   gpumap.c   the target's RAM, mapped and registered with the GPU
 *   gpurun.c   the kernels (persistent, on demand), their tables, handover
 *   gpuwake.c  the doorbell that wakes the host for alerts
 *   gpufleet.c one persistent kernel over several targets */
#include "gpu_int.h"
#include "gpucap.h"

#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* SENTINEL_GPU_TRACE=1: every step of loading and running on stderr, with
 * the time, to see where a driver call waits. */
bool gpu_tracing(void)
{
	static int on = -1;
	if (on < 0)
		on = getenv("SENTINEL_GPU_TRACE") != NULL;
	return on;
}

void gpu_trace(const char *step)
{
	if (!gpu_tracing())
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "gpu-trace %ld.%06ld %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000, step);
}

/* Set once a kernel of this process faulted (gpu_lost). */
static int gpu_process_lost;

bool gpu_lost(void) { return __atomic_load_n(&gpu_process_lost, __ATOMIC_ACQUIRE); }

/* A kernel's fault: CUDA makes it sticky for the process, every context
 * in it (measured on an H200: the old kernel of a reload failed with the
 * new one's CUDA error 700, and no new context could be made after). */
static bool gpu_sticky(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_ILLEGAL_ADDRESS: case CUDA_ERROR_LAUNCH_TIMEOUT: case CUDA_ERROR_ASSERT:
	case CUDA_ERROR_HARDWARE_STACK_ERROR: case CUDA_ERROR_ILLEGAL_INSTRUCTION: case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE: case CUDA_ERROR_INVALID_PC: case CUDA_ERROR_LAUNCH_FAILED:
		return true;
	default:
		return false;
	}
}

/* The one place a CUresult becomes a message. */
int gpu_err(const GpuCode *g, CUresult r, char *err, size_t n, const char *fmt, ...)
{
	const char *name = NULL, *text = NULL;
	if (g && g->d.GetErrorName)
		g->d.GetErrorName(r, &name);
	if (g && g->d.GetErrorString)
		g->d.GetErrorString(r, &text);
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(err, n, "%s: %s (%s, CUDA error %d)%s", what, text ? text : "unknown error", name ? name : "?", r,
		 gpu_sticky(r) ? "; CUDA keeps such an error for the whole process, so it must start again" : "");
	if (gpu_sticky(r))
		__atomic_store_n(&gpu_process_lost, 1, __ATOMIC_RELEASE);
	return -EIO;
}


#ifdef SENTINEL_STATIC
/* The static build (make static) loads no driver: a static program cannot
 * take libcuda. */
static int gpu_load_driver(GpuCode *g, char *err, size_t n)
{
	(void)g;
	snprintf(err, n, "this is the static build (make static), which has no CUDA backend: use the packaged "
		 "sentineld for the GPU");
	return -ENOTSUP;
}
#else
/* Lift libcuda's cap on registered memory before it first asks sysinfo()
 * (at cuInit; engine/gpucap.h).  The targets Sentinel registers are made
 * of the machine's RAM, all of it on bare metal, where System RAM is a
 * little more than totalram (the page structs, reservations); and during
 * a reload two engines hold their registrations at once.  So the lift is
 * three times the RAM: the cap becomes four times it, less 0.6 GiB. */
static void gpu_lift_cap(void)
{
	struct sysinfo si;
	if (gpucap_lifted() || syscall(SYS_sysinfo, &si))
		return;
	gpucap_lift(3ull * si.totalram * (si.mem_unit ? si.mem_unit : 1));
}

static int gpu_load_driver(GpuCode *g, char *err, size_t n)
{
	gpu_lift_cap();
	/* never unloaded (RTLD_NODELETE): a context the driver could not
	 * destroy (after a fault) keeps its threads in libcuda's code, and the
	 * last dlclose would unmap it under them */
	g->d.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!g->d.lib) {
		snprintf(err, n, "no NVIDIA driver: cannot load libcuda.so.1 (%s); install the driver or use the "
			 "CPU backend (backend = cpu)", dlerror());
		return -ENOENT;
	}
#define X(name, sym, params) \
	if (!(*(void **)&g->d.name = dlsym(g->d.lib, sym))) { \
		snprintf(err, n, "libcuda.so.1 has no %s: the NVIDIA driver is too old (need CUDA 11.8 or later)", sym); \
		return -ENOSYS; \
	}
	CUDRV_FUNCS(X)
#undef X
	*(void **)&g->wait_value = dlsym(g->d.lib, "cuStreamWaitValue32_v2");
	*(void **)&g->host_func = dlsym(g->d.lib, "cuLaunchHostFunc");
	return 0;
}
#endif

/* The PTX to load: the newest architecture the GPU runs natively, else the
 * oldest (the driver compiles PTX for newer GPUs). */
static const BdPtx *gpu_pick_ptx(const GpuCode *g, const Bundle *b)
{
	const BdPtx *best = NULL, *oldest = NULL;
	int have = g->cc_major * 10 + g->cc_minor, best_v = -1, old_v = 1 << 30;
	for (size_t i = 0; i < b->nptx; i++) {
		int v = atoi(b->ptx[i].arch + 3);
		if (v <= have && v > best_v) {
			best = &b->ptx[i];
			best_v = v;
		}
		if (v < old_v) {
			oldest = &b->ptx[i];
			old_v = v;
		}
	}
	return best ? best : oldest;
}

/* Load PTX.  Through the driver's linker: it compiles PTX as relocatable
 * units, each function on its own (a whole-program compile of 1,000 rules
 * takes minutes; see docs/benchmarks.md), and each of rulec's parts as an
 * input of its own (ptxas's time on one module grows faster than the rule
 * count).  Plain cuModuleLoadDataEx if the linker is unavailable and the
 * PTX is one module. */
static CUresult gpu_load_ptx(GpuCode *g, const BdPtx *ptx, char *log, size_t loglen)
{
	int opts[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_SPLIT_COMPILE,
		       CU_JIT_OPTIMIZATION_LEVEL};
	void *vals[4] = {log, (void *)(uintptr_t)loglen, (void *)(uintptr_t)0, (void *)(uintptr_t)GPU_JIT_LEVEL};
	unsigned nopts = 4;
	const char *lv = getenv("SENTINEL_GPU_JIT_O");  /* for bench/engine.py's comparison */
	if (lv && *lv >= '0' && *lv <= '4' && !lv[1])
		vals[3] = (void *)(uintptr_t)(unsigned)(*lv - '0');
	/* the cubin of an earlier link of the same parts, on this GPU and
	 * driver, with these JIT options (gpucache.c) */
	BdKey key;
	int ident[4] = {g->cc_major, g->cc_minor, 0, (int)(uintptr_t)vals[3]};
	g->d.DriverGetVersion(&ident[2]);
	bd_key_init(&key, "sentinel cubin 1");
	bd_key_add(&key, ident, sizeof ident);
	bd_key_add(&key, ptx->text, ptx->len);
	size_t size;
	void *cubin = gpu_cache_get(&key, &size);
	if (cubin) {
		CUresult c = g->d.ModuleLoadDataEx(&g->mod, cubin, 2, opts, vals);
		free(cubin);
		gpu_trace("module loaded from the cache");
		if (c == CUDA_SUCCESS)
			return c;
		g->mod = NULL;
		gpu_cache_refused(&key, c);
	}
	CUlinkState ls = NULL;
	gpu_trace("link: create");
	CUresult c = g->d.LinkCreate(nopts, opts, vals, &ls);
	/* rulec splits large rule sets into parts, each an input of its own
	 * (kept until the link is complete) */
	char *part[256] = {0};
	size_t len, k = 0;
	for (const char *p = bd_ptx_part(ptx, NULL, &len); p && c == CUDA_SUCCESS; p = bd_ptx_part(ptx, p + len, &len)) {
		char name[32];
		if (k == sizeof part / sizeof *part || !(part[k] = malloc(len + 1))) {
			c = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		memcpy(part[k], p, len);
		part[k][len] = 0;
		snprintf(name, sizeof name, "bundle-%zu.ptx", k);
		c = g->d.LinkAddData(ls, CU_JIT_INPUT_PTX, part[k], len + 1, name, 0, NULL, NULL);
		k++;
		gpu_trace("link: ptx part added");
	}
	if (c == CUDA_SUCCESS)
		c = g->d.LinkComplete(ls, &cubin, &size);
	gpu_trace("link: complete");
	if (c == CUDA_SUCCESS)
		c = g->d.ModuleLoadDataEx(&g->mod, cubin, 2, opts, vals);
	gpu_trace("module loaded");
	if (c == CUDA_SUCCESS)
		gpu_cache_put(&key, cubin, size);
	if (ls)
		g->d.LinkDestroy(ls);
	for (size_t i = 0; i < k; i++)
		free(part[i]);
	if (c != CUDA_SUCCESS && !g->mod && !*log && k <= 1)      /* one module only */
		c = g->d.ModuleLoadDataEx(&g->mod, ptx->text, 2, opts, vals);
	return c;
}

/* ---- contexts --------------------------------------------------------------------------------
 *
 * Each engine has a CUDA context of its own, because a reload loads the new
 * rules' module while the old persistent kernel runs, and in the context
 * of a running kernel the driver waits for that kernel before it loads a
 * module, frees memory or unloads one (tests/gpu/syncprobe.c measured it:
 * cuModuleLoadData, cuMemFree, cuMemFreeHost, cuMemHostUnregister and
 * cuModuleUnload all wait; in another context none of them does).  Kernels
 * of two contexts time-slice, and device memory of one is readable by the
 * other's kernels (one address space), which is how the new kernel takes
 * the old one's state over.
 *
 * cuCtxDestroy waits for every kernel on the device, and each context
 * costs a driver thread that wakes ten times a second (0.08% of a core,
 * docs/engine.md), so a context freed by a reload goes back to the pool
 * and gpu_reap destroys it in a pause of the running kernel between two
 * ticks; at short ticks, where the pause would not fit, it stays for the
 * next reload.  Everything an engine uses lives in its own context (its
 * module, tables, ring and its own registration of the target's RAM).
 * (A kernel's fault ends them all: gpu_lost.) */
static struct { CUcontext ctx; CUdevice dev; bool used; } gpu_ctx_pool[4];
static unsigned gpu_ctx_users;
static pthread_mutex_t gpu_ctx_lock = PTHREAD_MUTEX_INITIALIZER;

/* Under gpu_ctx_lock: the pool's slot of an unused context on g's device,
 * made now if there is none; SIZE_MAX when the pool is full (*c success)
 * or the driver could not make one (*c its answer). */
static size_t gpu_ctx_slot(GpuCode *g, CUresult *c)
{
	size_t i, empty = SIZE_MAX, n = sizeof gpu_ctx_pool / sizeof *gpu_ctx_pool;
	*c = CUDA_SUCCESS;
	for (i = 0; i < n; i++) {
		if (gpu_ctx_pool[i].ctx && !gpu_ctx_pool[i].used && gpu_ctx_pool[i].dev == g->dev)
			return i;
		if (!gpu_ctx_pool[i].ctx && empty == SIZE_MAX)
			empty = i;
	}
	if (empty == SIZE_MAX)
		return SIZE_MAX;
	gpu_trace("context: create");
	if ((*c = g->d.CtxCreate(&gpu_ctx_pool[empty].ctx, 0, g->dev)) != CUDA_SUCCESS)
		return SIZE_MAX;
	gpu_ctx_pool[empty].dev = g->dev;
	return empty;
}

static CUresult gpu_ctx_get(GpuCode *g)
{
	CUresult c;
	pthread_mutex_lock(&gpu_ctx_lock);
	size_t i = gpu_ctx_slot(g, &c);
	if (i == SIZE_MAX && c == CUDA_SUCCESS)
		c = CUDA_ERROR_OUT_OF_MEMORY;                   /* the pool is full */
	if (i != SIZE_MAX) {
		gpu_ctx_pool[i].used = true;
		gpu_ctx_users++;
		g->ctx = gpu_ctx_pool[i].ctx;
		g->ctx_held = true;
		c = g->d.CtxSetCurrent(g->ctx);
	}
	pthread_mutex_unlock(&gpu_ctx_lock);
	return c;
}

static void gpu_ctx_put(GpuCode *g)
{
	pthread_mutex_lock(&gpu_ctx_lock);
	size_t n = sizeof gpu_ctx_pool / sizeof *gpu_ctx_pool;
	for (size_t i = 0; i < n; i++)
		if (gpu_ctx_pool[i].ctx == g->ctx && gpu_ctx_pool[i].used) {
			gpu_ctx_pool[i].used = false;
			gpu_ctx_users--;
		}
	if (!gpu_ctx_users) {                                   /* no kernel runs: destroying waits for none */
		for (size_t i = 0; i < n; i++)
			if (gpu_ctx_pool[i].ctx) {
				g->d.CtxDestroy(gpu_ctx_pool[i].ctx);
				gpu_ctx_pool[i].ctx = NULL;
			}
	}
	g->ctx_held = false;
	pthread_mutex_unlock(&gpu_ctx_lock);
}

/* Every entry point makes the engine's context current on the calling thread. */
void gpu_enter(const GpuCode *g)
{
	if (g->ctx_held)
		g->d.CtxSetCurrent(g->ctx);
}

/* The rules' data tables into the loaded module (bundle.h, BD_SEC_DATA):
 * each into its global, which must be exactly its size.  Before any
 * kernel of the module runs. */
static int gpu_write_data(GpuCode *g, const Bundle *b, char *err, size_t n)
{
	for (size_t i = 0; i < b->ndata; i++) {
		CUdeviceptr p = 0;
		size_t have = 0;
		CUresult c = g->d.ModuleGetGlobal(&p, &have, g->mod, b->data[i].name);
		if (c || have != b->data[i].len) {
			snprintf(err, n, "the bundle's PTX has %s of %zu bytes, its data %zu: a damaged bundle; recompile "
				 "the rules", b->data[i].name, c ? 0 : have, b->data[i].len);
			return -ENOEXEC;
		}
		if ((c = g->d.MemcpyHtoD(p, b->data[i].bytes, b->data[i].len))) {
			gpu_err(g, c, err, n, "cannot write the rules' table %s", b->data[i].name);
			return -EIO;
		}
	}
	return 0;
}

int gpu_open(const Bundle *b, int ordinal, GpuCode **out, char *err, size_t n)
{
	GpuCode *g = calloc(1, sizeof *g);
	if (g && !(g->wake = calloc(1, sizeof *g->wake))) {
		free(g);
		g = NULL;
	}
	if (!g)
		return -ENOMEM;
	int r = gpu_load_driver(g, err, n);
	if (r)
		goto fail;
	r = -EIO;
	CUresult c = g->d.Init(0);
	if (c) {
		gpu_err(g, c, err, n, "the NVIDIA driver did not start (no GPU, or no permission on /dev/nvidia*)");
		goto fail;
	}
	int count = 0;
	g->d.DeviceGetCount(&count);
	if (ordinal < 0 || ordinal >= count) {
		snprintf(err, n, "GPU %d does not exist: the driver sees %d GPU%s", ordinal, count, count == 1 ? "" : "s");
		r = -ENODEV;
		goto fail;
	}
	if ((c = g->d.DeviceGet(&g->dev, ordinal)) || (c = g->d.DeviceGetName(g->name, sizeof g->name, g->dev)) ||
	    (c = g->d.DeviceGetAttribute(&g->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev)) ||
	    (c = g->d.DeviceGetAttribute(&g->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev)) ||
	    (c = g->d.DeviceGetAttribute(&g->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev))) {
		gpu_err(g, c, err, n, "cannot query GPU %d", ordinal);
		goto fail;
	}
	int map = 0;
	g->d.DeviceGetAttribute(&map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, g->dev);
	if (!map) {
		snprintf(err, n, "%s cannot map host memory, which Sentinel reads the target through", g->name);
		r = -ENOTSUP;
		goto fail;
	}
	/* a context of its own (see above); cuCtxCreate_v2 is in every driver
	 * since CUDA 4, including CUDA 13's, whose header names the v4 one */
	if ((c = gpu_ctx_get(g))) {
		gpu_err(g, c, err, n, "cannot open a context on %s", g->name);
		goto fail;
	}
	const BdPtx *ptx = gpu_pick_ptx(g, b);
	if (!ptx) {
		snprintf(err, n, "the bundle has no PTX: compile the rules with rulec --gpu-arch=sm_%d%d",
			 g->cc_major, g->cc_minor);
		r = -ENOEXEC;
		goto fail;
	}
	g->arch = ptx->arch;
	char log[8192] = "";
	if ((c = gpu_load_ptx(g, ptx, log, sizeof log))) {
		char *nl = strchr(log, '\n');
		if (nl)
			*nl = 0;
		gpu_err(g, c, err, n, "%s rejected the bundle's %s PTX%s%s", g->name, ptx->arch, *log ? ": " : "", log);
		goto fail;
	}
	if ((c = g->d.ModuleGetFunction(&g->fn_tick, g->mod, "sn_gpu_tick")) ||
	    (c = g->d.ModuleGetFunction(&g->fn_main, g->mod, "sn_gpu_main"))) {
		gpu_err(g, c, err, n, "the bundle's PTX lacks the engine's kernels");
		goto fail;
	}
	int per_sm = 0;
	if ((c = g->d.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, g->fn_tick, GPU_BLOCK, 0)) || per_sm <= 0) {
		gpu_err(g, c, err, n, "cannot size the grid");
		goto fail;
	}
	g->grid = (unsigned)(per_sm * g->sms);
	int per_sm_main = 0;
	if ((c = g->d.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_main, g->fn_main, GPU_BLOCK, 0)) || per_sm_main <= 0) {
		gpu_err(g, c, err, n, "cannot size the persistent kernel's grid");
		goto fail;
	}
	/* half the GPU at most: a reload starts the next kernel beside this one */
	g->grid_main = (unsigned)(per_sm_main * g->sms) / 2;
	if (!g->grid_main)
		g->grid_main = 1;
	if ((c = g->d.StreamCreate(&g->run, CU_STREAM_NON_BLOCKING)) || (c = g->d.StreamCreate(&g->copy, CU_STREAM_NON_BLOCKING)) ||
	    (c = g->d.StreamCreate(&g->watch, CU_STREAM_NON_BLOCKING))) {
		gpu_err(g, c, err, n, "cannot create CUDA streams");
		goto fail;
	}
	if ((r = gpu_write_data(g, b, err, n)))
		goto fail;
	*out = g;
	return 0;
fail:
	gpu_close(g);
	return r;
}

const char *gpu_device_name(const GpuCode *g) { return g->name; }

int gpu_warm(int ordinal, char *err, size_t n)
{
	GpuCode g = {0};
	int count = 0, r = gpu_load_driver(&g, err, n);
	CUresult c = CUDA_SUCCESS;
	if (r)
		return r;
	if ((c = g.d.Init(0)) || (c = g.d.DeviceGetCount(&count)) || ordinal < 0 || ordinal >= count ||
	    (c = g.d.DeviceGet(&g.dev, ordinal))) {
		gpu_err(&g, c, err, n, "GPU %d cannot start", ordinal);
		return -ENODEV;
	}
	pthread_mutex_lock(&gpu_ctx_lock);
	gpu_ctx_slot(&g, &c);                            /* left unused: gpu_open takes it */
	pthread_mutex_unlock(&gpu_ctx_lock);
	if (c) {
		gpu_err(&g, c, err, n, "cannot open a context on GPU %d", ordinal);
		return -EIO;
	}
	return 0;
}

int gpu_probe_arch(char *arch, size_t n)
{
	GpuCode g = {0};
	char err[256];
	int r = -ENODEV, count = 0;
	CUdevice dev;
	if (!gpu_load_driver(&g, err, sizeof err) && g.d.Init(0) == CUDA_SUCCESS && g.d.DeviceGetCount(&count) == 0 &&
	    count > 0 && g.d.DeviceGet(&dev, 0) == 0 &&
	    !g.d.DeviceGetAttribute(&g.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) &&
	    !g.d.DeviceGetAttribute(&g.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) {
		snprintf(arch, n, "sm_%d%d", g.cc_major, g.cc_minor);
		r = 0;
	}
	if (g.d.lib)
		dlclose(g.d.lib);
	return r;
}

/* Kernel stops at a tick boundary; destroying the idle contexts waits for
 * it; the relaunched kernel keeps the schedule (snrt.c: next tick at
 * last_tick_ns + tick_ns).  Only where the pause fits in a tick with room
 * to spare. */
#define GPU_REAP_MIN_TICK_NS 100000000ull      /* cuCtxDestroy took 56-83 ms on an H100 (syncprobe --destroy) */

int gpu_reap(GpuCode *g, GpuReap *out, char *err, size_t n)
{
	memset(out, 0, sizeof *out);
	if (g->fleet)                /* the fleet has one context */
		return 0;
	pthread_mutex_lock(&gpu_ctx_lock);
	size_t np = sizeof gpu_ctx_pool / sizeof *gpu_ctx_pool;
	for (size_t i = 0; i < np; i++)
		out->idle += gpu_ctx_pool[i].ctx && !gpu_ctx_pool[i].used;
	pthread_mutex_unlock(&gpu_ctx_lock);
	if (!out->idle)
		return 0;
	if (g->running && g->tick_ns < GPU_REAP_MIN_TICK_NS) {
		out->kept = true;                       /* the pause would not fit: the next reload uses it */
		return 0;
	}
	gpu_enter(g);
	bool was_running = g->running;
	uint64_t late0 = __atomic_load_n(&g->stats->late, __ATOMIC_ACQUIRE), due = 0;
	if (was_running) {
		/* right after a tick ends, so the pause has the whole gap */
		uint64_t k = __atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE), t0 = u_now_ns();
		struct timespec ts = {0, 50000};
		while (__atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE) == k && u_now_ns() - t0 < 4 * g->tick_ns)
			nanosleep(&ts, NULL);
		gpu_trace("reap: pause");
		__atomic_store_n(&g->stats->stop, 1, __ATOMIC_SEQ_CST);
		CUresult c = gpu_wait_exit(g, 2 * g->tick_ns + 1000000000ull);
		if (c != CUDA_SUCCESS) {
			g->running = c == CUDA_ERROR_NOT_READY;
			return gpu_err(g, c, err, n, "the persistent kernel did not pause to release an idle context");
		}
		g->running = false;
		due = __atomic_load_n(&g->stats->last_tick_ns, __ATOMIC_ACQUIRE) + g->tick_ns;
		gpu_unwatch(g);                        /* a queued wait may count as work on the device */
	}
	uint64_t t1 = u_now_ns();
	gpu_trace("reap: destroy");
	pthread_mutex_lock(&gpu_ctx_lock);
	for (size_t i = 0; i < np; i++)
		if (gpu_ctx_pool[i].ctx && !gpu_ctx_pool[i].used) {
			g->d.CtxDestroy(gpu_ctx_pool[i].ctx);
			gpu_ctx_pool[i].ctx = NULL;
			out->destroyed++;
		}
	pthread_mutex_unlock(&gpu_ctx_lock);
	g->d.CtxSetCurrent(g->ctx);
	out->destroy_ns = u_now_ns() - t1;
	if (!was_running)
		return 0;
	/* the world no longer takes over from anyone: its old one is gone */
	int r = gpu_resume(g, err, n);
	out->pause_ns = u_now_ns() - t1;
	gpu_trace("reap: resumed");
	if (r)
		return r;
	/* its next tick tells whether the pause cost one */
	uint64_t k = __atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE), t2 = u_now_ns();
	struct timespec ts = {0, 1000000};
	while (__atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE) == k && u_now_ns() - t2 < 4 * g->tick_ns)
		nanosleep(&ts, NULL);
	out->late = __atomic_load_n(&g->stats->late, __ATOMIC_ACQUIRE) - late0;
	uint64_t first = __atomic_load_n(&g->stats->last_tick_ns, __ATOMIC_ACQUIRE);
	out->delay_ns = first > due ? first - due : 0;
	return 0;
}

void gpu_close(GpuCode *g)
{
	/* After a fault every CUDA call fails, and the driver's own threads
	 * still use what they have: tearing down streams, modules and the
	 * context then made one of them crash (SIGSEGV at 0x10 in libcuda, 2
	 * of 12 runs on an H200, tests/gpu/fault_repeat.py).  The process is
	 * ending (sentineld exits 3): all of it is left to the exit. */
	if (!g || gpu_lost())
		return;
	if (g->fleet) {
		gpu_fleet_drop(g);
		return;
	}
	if (g->d.lib && g->ctx_held) {
		char err[256];
		gpu_enter(g);
		if (g->running && g->stats)
			gpu_halt(g, 2000000000ull, err, sizeof err);
		if (!g->running)
			gpu_unwatch(g);
		g->d.CtxSynchronize();
		if (g->run)
			g->d.StreamDestroy(g->run);
		if (g->copy)
			g->d.StreamDestroy(g->copy);
		if (g->watch)
			g->d.StreamDestroy(g->watch);
		gpu_free_world(g);
		if (g->mod)
			g->d.ModuleUnload(g->mod);
		gpu_ctx_put(g);
	} else {
		gpu_free_world(g);           /* what is the host's alone: our mappings, the mirror */
	}
	if (g->d.lib)
		dlclose(g->d.lib);
	if (g->wake && !__atomic_load_n(&g->wake->armed, __ATOMIC_ACQUIRE))
		free(g->wake);
	free(g);
}
