/* gpu.c - the CUDA backend (see gpu.h). */
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

/* The target's RAM is registered in pieces of at most this (the driver
 * takes one physically contiguous range a call; [engine] gpu_register_chunk) */
#define GPU_REG_CHUNK (64ull << 30)

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
	snprintf(err, n, "%s: %s (%s, CUDA error %d)", what, text ? text : "unknown error", name ? name : "?", r);
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
	g->d.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
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
	CUlinkState ls = NULL;
	void *cubin;
	size_t size;
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
 * module, tables, ring and its own registration of the target's RAM). */
static struct { CUcontext ctx; CUdevice dev; bool used; } gpu_ctx_pool[4];
static unsigned gpu_ctx_users;
static pthread_mutex_t gpu_ctx_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult gpu_ctx_get(GpuCode *g)
{
	CUresult c = CUDA_ERROR_OUT_OF_MEMORY;                  /* the pool is full */
	pthread_mutex_lock(&gpu_ctx_lock);
	size_t i, empty = SIZE_MAX, n = sizeof gpu_ctx_pool / sizeof *gpu_ctx_pool;
	for (i = 0; i < n; i++) {
		if (gpu_ctx_pool[i].ctx && !gpu_ctx_pool[i].used && gpu_ctx_pool[i].dev == g->dev)
			break;
		if (!gpu_ctx_pool[i].ctx && empty == SIZE_MAX)
			empty = i;
	}
	if (i == n && empty != SIZE_MAX) {
		gpu_trace("context: create");
		if ((c = g->d.CtxCreate(&gpu_ctx_pool[empty].ctx, 0, g->dev)) == CUDA_SUCCESS) {
			gpu_ctx_pool[empty].dev = g->dev;
			i = empty;
		}
	}
	if (i < n) {
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

int gpu_open(const Bundle *b, int ordinal, GpuCode **out, char *err, size_t n)
{
	GpuCode *g = calloc(1, sizeof *g);
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
	*out = g;
	return 0;
fail:
	gpu_close(g);
	return r;
}

const char *gpu_device_name(const GpuCode *g) { return g->name; }

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

void gpu_set_register_chunk(GpuCode *g, uint64_t bytes)
{
	g->reg_chunk = bytes ? bytes & ~(uint64_t)(KX_PAGE_SIZE - 1) : GPU_REG_CHUNK;
}

const char *gpu_mapping(const GpuCode *g) { return g->mapping; }

static const char *gpu_flag_names(unsigned f)
{
	return (f & CU_MEMHOSTREGISTER_IOMEMORY) ? (f & CU_MEMHOSTREGISTER_READ_ONLY) ? "DEVICEMAP|IOMEMORY|READ_ONLY"
		: "DEVICEMAP|IOMEMORY" : (f & CU_MEMHOSTREGISTER_READ_ONLY) ? "DEVICEMAP|READ_ONLY" : "DEVICEMAP";
}

/* Register m's mapping in pieces of g->reg_chunk, with the first of
 * flags[] the driver takes (the first piece tries them; the rest take
 * what it took).  The pieces' GPU addresses must follow each other, so
 * that the range is one span on the GPU as it is on the host: with
 * unified addressing the driver gives the host addresses themselves. */
static int gpu_register(GpuCode *g, struct GpuMap *m, const unsigned *flags, unsigned nflags, char *err, size_t n)
{
	CUresult c = CUDA_SUCCESS;
	for (size_t off = 0; off < m->len; off += g->reg_chunk) {
		size_t len = m->len - off < g->reg_chunk ? m->len - off : g->reg_chunk;
		void *p = (char *)m->map + off;
		if (off == 0) {
			for (unsigned i = 0; i < nflags; i++) {
				c = g->d.MemHostRegister(p, len, flags[i]);
				if (!c) {
					m->flags = flags[i];
					break;
				}
			}
		} else {
			c = g->d.MemHostRegister(p, len, m->flags);
		}
		if (c)
			return gpu_err(g, c, err, n, "cannot map the target's RAM (%zu MiB at %zu MiB of a %zu MiB range, "
				       "%s) into %s; a registration above the driver's limit (about the host's RAM - "
				       "0.6 GiB) fails, and [engine] gpu_register_chunk sets the piece", len >> 20, off >> 20,
				       m->len >> 20, off ? gpu_flag_names(m->flags) : "every flag set", g->name);
		m->pieces++;
		CUdeviceptr dp;
		CU(g->d.MemHostGetDevicePointer(&dp, p, 0), "no GPU address for the target's RAM");
		if (off == 0) {
			m->dev = dp;
		} else if (dp != m->dev + off) {
			snprintf(err, n, "the GPU mapped the pieces of the target's RAM apart (%#llx after %#llx + %zu): raise "
				 "[engine] gpu_register_chunk to the range's size (%zu MiB)", (unsigned long long)dp,
				 (unsigned long long)m->dev, off, m->len >> 20);
			return -EIO;
		}
	}
	return 0;
}

/* The target's RAM, mapped into the GPU: each engine maps the source's
 * file again and registers its own mapping, read-only, in its own context.
 * Sharing one registration between the engines of a reload would tie the
 * new engine to the old one's context, which gpu_reap destroys.  The pmem
 * source is mapped a range at a time, at the range's physical address, as
 * the device wants; the driver takes the device's VM_IO|VM_PFNMAP mapping
 * with IOMEMORY, and a file standing in for it without. */
static int gpu_map_target(GpuCode *g, const kx_mem *mem, const MemSource *src, kx_mem *dmem, char *err, size_t n)
{
	static const unsigned pmem_flags[] = {
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY,
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY,
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY,
	}, file_flags[] = {CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY};
	if (!g->reg_chunk)
		g->reg_chunk = GPU_REG_CHUNK;
	if (src->kind == MS_KCORE) {
		snprintf(err, n, "the kcore source cannot be mapped into the GPU: use source = pmem, or backend = cpu");
		return -EINVAL;
	}
	*dmem = *mem;
	uint64_t bytes = 0;
	unsigned pieces = 0;
	for (uint32_t i = 0; i < mem->nranges; i++) {
		void *base;                          /* the source's mapping the range lies in */
		size_t len;
		off_t off;
		bool pmem = src->kind == MS_PMEM;
		if (pmem) {
			base = src->pmem_maps[i];
			len = mem->r[i].size;
			off = (off_t)mem->r[i].phys;
		} else {
			base = src->map;
			len = src->map_len;
			off = 0;
		}
		unsigned k;
		for (k = 0; k < g->nmaps && g->maps[k].src != base; k++)
			;
		if (k == g->nmaps) {
			void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, src->fd, off);
			if (p == MAP_FAILED) {
				snprintf(err, n, "cannot map the target's RAM (%s, %zu MiB) again for the GPU: %s", src->path,
					 len >> 20, strerror(errno));
				return -errno;
			}
			g->maps[k] = (struct GpuMap){.src = base, .map = p, .len = len};
			g->nmaps++;
			int r = pmem ? gpu_register(g, &g->maps[k], pmem_flags, 3, err, n)
				     : gpu_register(g, &g->maps[k], file_flags, 1, err, n);
			if (r)
				return r;
			bytes += len;
			pieces += g->maps[k].pieces;
		}
		dmem->r[i].ptr = g->maps[k].dev + (mem->r[i].ptr - (uint64_t)(uintptr_t)base);
	}
	snprintf(g->mapping, sizeof g->mapping, "%u MiB in %u range%s, %u piece%s, %s", (unsigned)(bytes >> 20),
		 g->nmaps, g->nmaps == 1 ? "" : "s", pieces, pieces == 1 ? "" : "s",
		 g->nmaps ? gpu_flag_names(g->maps[0].flags) : "none");
	return 0;
}

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

int gpu_run(GpuCode *g, char *err, size_t n)
{
	if (g->fleet)
		return gpu_fleet_join(g, err, n);
	gpu_enter(g);
	gpu_trace("run: launch persistent kernel");
	void *args[1] = {&g->dblock};
	CU(g->d.LaunchKernel(g->fn_main, g->grid_main, 1, 1, GPU_BLOCK, 1, 1, 0, g->run, args, NULL),
	   "cannot launch the persistent kernel on %s", g->name);
	g->running = true;
	return 0;
}


/* Launch a stopped kernel again on its own world, on its schedule: the
 * world no longer takes over from anyone (its old one may be gone). */
static int gpu_resume(GpuCode *g, char *err, size_t n)
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
static void gpu_takeover_undo(GpuCode *g, GpuCode *old, char *err, size_t n)
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
	char e2[256];
	if (gpu_resume(old, e2, sizeof e2)) {
		old->running = true;                      /* not running: gpu_poll says so */
		snprintf(err + len, n - len, "; the old rules could not be resumed: %s", e2);
		return;
	}
	snprintf(err + len, n - len, "; the old rules run on (resumed after tick %llu)",
		 (unsigned long long)__atomic_load_n(&old->stats->ticks, __ATOMIC_ACQUIRE));
}

int gpu_takeover(GpuCode *g, GpuCode *old, uint64_t timeout_ns, bool fault, char *err, size_t n)
{
	if (g->fleet || old->fleet) {
		snprintf(err, n, "a reload of several targets on the GPU is not supported yet (one kernel runs them "
			 "all): restart sentineld to load new rules, or run them on the CPU backend (backend = cpu)");
		return -ENOTSUP;
	}
	/* the new kernel waits for the old one's last tick, then takes over */
	int r = gpu_run(g, err, n);
	if (r)
		return r;
	gpu_trace("takeover: launched");
	uint64_t k = __atomic_load_n(&old->stats->ticks, __ATOMIC_ACQUIRE);
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
		if (old_done && fault) {
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
	gpu_takeover_undo(g, old, err, n);
	return r;
}

uint64_t gpu_block_addr(const GpuCode *g) { return g->dblock; }
void *gpu_mirror(GpuCode *g) { return g->mirror; }

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

int gpu_halt(GpuCode *g, uint64_t timeout_ns, char *err, size_t n)
{
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

void gpu_set_wake(GpuCode *g, int fd) { g->wake.fd = fd; }

bool gpu_arm(GpuCode *g)
{
	if (!g->wait_value || !g->host_func || g->wake.fd <= 0 || !g->running || !g->stats)
		return false;
	if (__atomic_load_n(&g->wake.armed, __ATOMIC_ACQUIRE))
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
	__atomic_store_n(&g->wake.armed, 1, __ATOMIC_RELEASE);
	if (g->wait_value(g->watch, g->dstats + offsetof(sn_stats, doorbell), want, CU_STREAM_WAIT_VALUE_GEQ) ||
	    g->host_func(g->watch, gpu_woken, &g->wake)) {
		/* not on this device or driver: poll from now on */
		g->wait_value = NULL;
		__atomic_store_n(&g->wake.armed, 0, __ATOMIC_RELEASE);
		return false;
	}
	return true;
}

/* With the kernel stopped: release the queued wait, let the host function
 * run, and put the doorbell back at the ring's head (no spurious wakeups
 * after a resume). */
static void gpu_unwatch(GpuCode *g)
{
	if (!g->stats || !g->watch)
		return;
	if (__atomic_load_n(&g->wake.armed, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&g->stats->doorbell, (uint32_t)g->ring->tail + 1, __ATOMIC_SEQ_CST);
		g->d.StreamSynchronize(g->watch);
	}
	__atomic_store_n(&g->stats->doorbell, (uint32_t)__atomic_load_n(&g->ring->head, __ATOMIC_ACQUIRE),
			 __ATOMIC_SEQ_CST);
}

/* Kernel stops at a tick boundary; destroying the idle contexts waits for
 * it; the relaunched kernel keeps the schedule (snrt.c: next tick at
 * last_tick_ns + tick_ns).  Only where the pause fits in a tick with room
 * to spare. */
#define GPU_REAP_MIN_TICK_NS 100000000ull      /* cuCtxDestroy took 56-83 ms on an H100 (syncprobe --destroy) */

uint64_t gpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait up to timeout_ns for the persistent kernel to leave. */
CUresult gpu_wait_exit(GpuCode *g, uint64_t timeout_ns)
{
	struct timespec ts = {0, 50000};
	for (uint64_t t0 = gpu_now(); gpu_now() - t0 < timeout_ns;) {
		CUresult c = g->d.StreamQuery(g->run);
		if (c != CUDA_ERROR_NOT_READY)
			return c;
		nanosleep(&ts, NULL);
	}
	return CUDA_ERROR_NOT_READY;
}

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
		uint64_t k = __atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE), t0 = gpu_now();
		struct timespec ts = {0, 50000};
		while (__atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE) == k && gpu_now() - t0 < 4 * g->tick_ns)
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
	uint64_t t1 = gpu_now();
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
	out->destroy_ns = gpu_now() - t1;
	if (!was_running)
		return 0;
	/* the world no longer takes over from anyone: its old one is gone */
	int r = gpu_resume(g, err, n);
	out->pause_ns = gpu_now() - t1;
	gpu_trace("reap: resumed");
	if (r)
		return r;
	/* its next tick tells whether the pause cost one */
	uint64_t k = __atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE), t2 = gpu_now();
	struct timespec ts = {0, 1000000};
	while (__atomic_load_n(&g->stats->ticks, __ATOMIC_ACQUIRE) == k && gpu_now() - t2 < 4 * g->tick_ns)
		nanosleep(&ts, NULL);
	out->late = __atomic_load_n(&g->stats->late, __ATOMIC_ACQUIRE) - late0;
	uint64_t first = __atomic_load_n(&g->stats->last_tick_ns, __ATOMIC_ACQUIRE);
	out->delay_ns = first > due ? first - due : 0;
	return 0;
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
		for (unsigned i = 0; i < g->nmaps; i++)
			for (unsigned k = 0; k < g->maps[i].pieces; k++)
				g->d.MemHostUnregister((char *)g->maps[i].map + k * g->reg_chunk);
		if (g->dblock)
			g->d.MemFree(g->dblock);
		if (g->dmem)
			g->d.MemFree(g->dmem);
		if (g->drelo)
			g->d.MemFree(g->drelo);
		if (g->ring)
			g->d.MemFreeHost(g->ring);
		if (g->stats)
			g->d.MemFreeHost(g->stats);
	}
	g->dblock = g->dmem = g->drelo = 0;
	g->ring = NULL;
	g->stats = NULL;
	for (unsigned i = 0; i < g->nmaps; i++)
		munmap(g->maps[i].map, g->maps[i].len);
	g->nmaps = 0;
	free(g->mirror);
	g->mirror = NULL;
}

void gpu_close(GpuCode *g)
{
	if (!g)
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
	free(g);
}
