/* gpu.c - the CUDA backend (see gpu.h). */
#include "gpu.h"
#include "core.h"
#include "cudadrv.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_BLOCK 128               /* threads per block: 4 warps */

struct GpuCode {
	CuDrv d;
	CUdevice dev;
	CUcontext ctx;
	bool ctx_held;
	CUmodule mod;
	CUfunction fn_tick, fn_main;
	char name[256];
	int cc_major, cc_minor, sms;
	const char *arch;
	unsigned grid;                /* blocks the on-demand kernel runs */
	/* the world */
	const Bundle *b;
	WdLayout L;
	CUdeviceptr dblock, dring, dstats;
	void *mirror;
	sn_ring *ring;
	sn_stats *stats;
	void *registered[KX_MAX_RANGES + 1];
	unsigned nregistered;
	size_t total;
};

/* The one place a CUresult becomes a message. */
static int gpu_err(const GpuCode *g, CUresult r, char *err, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int gpu_err(const GpuCode *g, CUresult r, char *err, size_t n, const char *fmt, ...)
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

#define CU(call, ...) do { CUresult _r = (call); if (_r != CUDA_SUCCESS) return gpu_err(g, _r, err, n, __VA_ARGS__); } while (0)

static int gpu_load_driver(GpuCode *g, char *err, size_t n)
{
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
	return 0;
}

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

/* Load PTX.  Through the driver's linker: it compiles PTX as a relocatable
 * unit, each function on its own, in time linear in the rule count (a
 * whole-program compile of 1,000 rules takes minutes; see
 * docs/benchmarks.md), on every core.  Plain cuModuleLoadDataEx if the
 * linker is unavailable. */
static CUresult gpu_load_ptx(GpuCode *g, const BdPtx *ptx, char *log, size_t loglen)
{
	int opts[3] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_SPLIT_COMPILE};
	void *vals[3] = {log, (void *)(uintptr_t)loglen, (void *)(uintptr_t)0};
	CUlinkState ls = NULL;
	void *cubin;
	size_t size;
	CUresult c = g->d.LinkCreate(3, opts, vals, &ls);
	if (c == CUDA_SUCCESS)
		c = g->d.LinkAddData(ls, CU_JIT_INPUT_PTX, ptx->text, ptx->len + 1, "bundle.ptx", 0, NULL, NULL);
	if (c == CUDA_SUCCESS)
		c = g->d.LinkComplete(ls, &cubin, &size);
	if (c == CUDA_SUCCESS)
		c = g->d.ModuleLoadDataEx(&g->mod, cubin, 2, opts, vals);
	if (ls)
		g->d.LinkDestroy(ls);
	if (c != CUDA_SUCCESS && !g->mod && !*log)
		c = g->d.ModuleLoadDataEx(&g->mod, ptx->text, 2, opts, vals);
	return c;
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
	/* the primary context: CUDA 13 changed cuCtxCreate's signature */
	if ((c = g->d.DevicePrimaryCtxRetain(&g->ctx, g->dev)) || (g->ctx_held = true, c = g->d.CtxSetCurrent(g->ctx))) {
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

/* The target's RAM, mapped into the GPU: each distinct host mapping of the
 * source registered once, read-only (IOMEMORY for the pmem device). */
static int gpu_map_target(GpuCode *g, const kx_mem *mem, const MemSource *src, kx_mem *dmem, char *err, size_t n)
{
	*dmem = *mem;
	for (uint32_t i = 0; i < mem->nranges; i++) {
		void *base;
		size_t len;
		unsigned flags = CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY;
		if (src->kind == MS_PMEM) {
			base = src->pmem_maps[i];
			len = mem->r[i].size;
			flags = CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY;
		} else {
			base = src->map;
			len = src->map_len;
		}
		bool done = false;
		for (unsigned k = 0; k < g->nregistered; k++)
			done = done || g->registered[k] == base;
		if (!done) {
			CU(g->d.MemHostRegister(base, len, flags),
			   "cannot map the target's RAM (%zu MiB at %p) into %s; a registration above the driver's limit "
			   "(about the host's RAM - 0.6 GiB) fails", len >> 20, base, g->name);
			g->registered[g->nregistered++] = base;
		}
		CUdeviceptr d;
		CU(g->d.MemHostGetDevicePointer(&d, base, 0), "no GPU address for the target's RAM");
		dmem->r[i].ptr = d + (mem->r[i].ptr - (uint64_t)(uintptr_t)base);
	}
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
	CU(g->d.MemcpyHtoD(p, data, bytes), "cannot write %s", name);
	return 0;
}

int gpu_start(GpuCode *g, const Bundle *b, const WdParams *p, const WdLayout *L, const RlResult *res,
	      const kx_mem *mem, const MemSource *src, void **mirror, sn_ring **ring, sn_stats **stats,
	      char *err, size_t n)
{
	g->b = b;
	g->L = *L;
	g->total = L->total;
	kx_mem dmem;
	int r = gpu_map_target(g, mem, src, &dmem, err, n);
	if (r)
		return r;
	if ((r = gpu_set_global(g, "__sentinel_mem", &dmem, sizeof dmem, err, n)) ||
	    (r = gpu_set_global(g, CORE_TABLE, res->value, res->n * sizeof *res->value, err, n)))
		return r;
	CU(g->d.MemAlloc(&g->dblock, L->total), "cannot allocate %zu MiB of GPU memory for the rule tables",
	   L->total >> 20);
	void *hring, *hstats;
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
	CU(g->d.MemcpyHtoD(g->dblock, g->mirror, L->total), "cannot copy the rule tables to the GPU");
	*mirror = g->mirror;
	*ring = g->ring;
	*stats = g->stats;
	/* the on-demand kernel's grid: enough warps for every job and rule,
	 * no more than can be resident at once (it has a grid barrier) */
	unsigned want = (unsigned)((b->nrules > b->njobs ? b->nrules : b->njobs) + 3) / 4;
	if (want < 1)
		want = 1;
	if (want < g->grid)
		g->grid = want;
	return 0;
}

int gpu_tick(GpuCode *g, uint64_t now, char *err, size_t n)
{
	void *args[2] = {&g->dblock, &now};
	CU(g->d.LaunchKernel(g->fn_tick, g->grid, 1, 1, GPU_BLOCK, 1, 1, 0, NULL, args, NULL),
	   "cannot launch the evaluation kernel");
	CU(g->d.CtxSynchronize(), "the evaluation kernel failed on %s", g->name);
	return 0;
}

const sn_world *gpu_view(GpuCode *g, char *err, size_t n)
{
	CUresult c = g->d.MemcpyDtoH(g->mirror, g->dblock, g->total);
	if (c) {
		gpu_err(g, c, err, n, "cannot read the rule tables back from the GPU");
		return NULL;
	}
	wd_rebase(g->mirror, g->b, &g->L, g->dblock, (uint64_t)(uintptr_t)g->mirror);
	return wd_world(g->mirror);
}

void gpu_close(GpuCode *g)
{
	if (!g)
		return;
	if (g->d.lib && g->ctx_held) {
		g->d.CtxSynchronize();
		for (unsigned i = 0; i < g->nregistered; i++)
			g->d.MemHostUnregister(g->registered[i]);
		if (g->dblock)
			g->d.MemFree(g->dblock);
		if (g->ring)
			g->d.MemFreeHost(g->ring);
		if (g->stats)
			g->d.MemFreeHost(g->stats);
		if (g->mod)
			g->d.ModuleUnload(g->mod);
		g->d.DevicePrimaryCtxRelease(g->dev);
	}
	free(g->mirror);
	if (g->d.lib)
		dlclose(g->d.lib);
	free(g);
}
