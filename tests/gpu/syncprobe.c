/* syncprobe.c - which CUDA driver calls wait for a running kernel?
 *
 * sentineld's reload starts a second persistent kernel beside the first
 * and then frees the first one's resources, all in one context, with a
 * kernel always running.  A driver call that synchronizes the context
 * would wait forever there.  This program launches a kernel that spins on
 * a flag in mapped host memory, makes each call the reload path makes,
 * and reports the ones that did not return before a watchdog released the
 * kernel (2 s).  Run on a GPU machine:
 *
 *     build/syncprobe        (make build/syncprobe; tests/gpu/pack.sh packs it)
 *
 * What it found is why each engine has a CUDA context of its own (the
 * comment above gpu_ctx_get in engine/gpu.c; docs/engine.md).
 */
#define _GNU_SOURCE
#include "cudadrv.h"
#include "probe.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef CUresult (*MemAllocAsyncFn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*MemFreeAsyncFn)(CUdeviceptr, CUstream);
typedef CUresult (*CtxCreateFn)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*CtxDestroyFn)(CUcontext);
typedef CUresult (*LibraryLoadDataFn)(void **lib, const void *code, void *jo, void *jv, unsigned njo, void *lo,
				       void *lv, unsigned nlo);
typedef CUresult (*LibraryGetKernelFn)(void **k, void *lib, const char *name);
typedef CUresult (*KernelGetFunctionFn)(CUfunction *f, void *k);

typedef struct {
	int type, id;
} MemLocation;
typedef struct {
	int type, handle_types;
	MemLocation loc;
	void *win32;
	unsigned char compression, rdma;
	unsigned short usage;
	unsigned char reserved[4];
} MemProp;
typedef struct {
	MemLocation loc;
	int flags;
} MemAccess;
typedef CUresult (*MemCreateFn)(unsigned long long *h, size_t size, const MemProp *p, unsigned long long fl);
typedef CUresult (*MemAddressReserveFn)(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr,
					 unsigned long long fl);
typedef CUresult (*MemMapFn)(CUdeviceptr p, size_t size, size_t off, unsigned long long h, unsigned long long fl);
typedef CUresult (*MemSetAccessFn)(CUdeviceptr p, size_t size, const MemAccess *a, size_t n);
typedef CUresult (*MemUnmapFn)(CUdeviceptr p, size_t size);
typedef CUresult (*MemReleaseFn)(unsigned long long h);
typedef CUresult (*MemAddressFreeFn)(CUdeviceptr p, size_t size);

static CuDrv d;
static MemAllocAsyncFn mem_alloc_async;
static MemFreeAsyncFn mem_free_async;
static CtxCreateFn ctx_create;
static CtxDestroyFn ctx_destroy;
static LibraryLoadDataFn library_load;
static LibraryGetKernelFn library_kernel;
static KernelGetFunctionFn kernel_function;
static CUcontext ctx;                   /* the spinning kernel's context */
static volatile unsigned *flag;         /* mapped host memory the kernel spins on */
static CUfunction spin;
static CUstream run, other;
static CUdeviceptr dflag;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int busy;                        /* a call is in progress */
static int fired;                       /* the watchdog released the kernel */

static const char ptx[] =
	PROBE_SPIN_PTX
	".visible .entry poke(.param .u64 p)\n{\n  .reg .u64 %rd<2>;\n  .reg .u32 %r<2>;\n"
	"  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 7;\n  st.volatile.global.u32 [%rd1+4], %r1;\n  ret;\n}\n"
	".visible .entry peek(.param .u64 src, .param .u64 dst)\n{\n  .reg .u64 %rd<3>;\n  .reg .u32 %r<2>;\n"
	"  ld.param.u64 %rd1, [src];\n  ld.param.u64 %rd2, [dst];\n  ld.volatile.global.u32 %r1, [%rd1];\n"
	"  st.volatile.global.u32 [%rd2+8], %r1;\n  ret;\n}\n"
	".visible .global .align 8 .u64 g_value;\n";

/* ---- --wake: how late a stream wait + host function wakes the host ---- */

static int cmp_double(const void *a, const void *b);

static volatile double woke_at;

static void woke(void *arg)
{
	(void)arg;
	woke_at = now_s();
}

/* The host writes a doorbell in mapped host memory; a stream waits on it
 * (cuStreamWaitValue32) and then runs a host function: the delay from the
 * write to the function, n times, with and without a kernel running. */
static void wake_phase(const char *what, CUstream s, int n)
{
	CuStreamWaitValue32Fn wait_value;
	CuLaunchHostFuncFn host_func;
	*(void **)&wait_value = dlsym(d.lib, "cuStreamWaitValue32_v2");
	*(void **)&host_func = dlsym(d.lib, "cuLaunchHostFunc");
	volatile unsigned *bell = flag + 16;    /* same page, its own word */
	double lat[64];
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		*bell = (unsigned)(2 * i);
		__sync_synchronize();
		woke_at = 0;
		if (wait_value(s, dflag + 64, (unsigned)(2 * i + 1), CU_STREAM_WAIT_VALUE_GEQ) || host_func(s, woke, NULL)) {
			printf("wake: %s: the driver refused the wait\n", what);
			return;
		}
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);                  /* the wait is queued and polling */
		double t0 = now_s();
		*bell = (unsigned)(2 * i + 1);
		__sync_synchronize();
		while (!woke_at && now_s() - t0 < 5)
			;
		lat[i] = woke_at ? (woke_at - t0) * 1e3 : 5000;
	}
	qsort(lat, (size_t)n, sizeof *lat, cmp_double);
	printf("wake: %-44s median %8.3f ms, p90 %8.3f ms, max %8.3f ms (%d)\n", what, lat[n / 2], lat[n * 9 / 10],
	       lat[n - 1], n);
	fflush(stdout);
}

static void *watchdog(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!busy)
			pthread_cond_wait(&cond, &lock);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 2;
		int done = 0;
		while (busy == 1 && !done)
			done = pthread_cond_timedwait(&cond, &lock, &until) != 0;
		if (busy == 1 && done) {
			fired = 1;
			*flag = 1;              /* let the kernel end, so the call returns */
			__sync_synchronize();
		}
		while (busy)
			pthread_cond_wait(&cond, &lock);
	}
	return NULL;
}

static void launch(void)
{
	CUcontext cur = NULL;
	d.CtxGetCurrent(&cur);
	d.CtxSetCurrent(ctx);
	*flag = 0;
	__sync_synchronize();
	void *args[1] = {&dflag};
	CUresult c = d.LaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, run, args, NULL);
	if (c) {
		fprintf(stderr, "syncprobe: cannot launch the spinning kernel (%d)\n", c);
		exit(1);
	}
	/* make sure it is running */
	struct timespec ts = {0, 50000000};
	nanosleep(&ts, NULL);
	d.CtxSetCurrent(cur);
}

/* A kernel in another context runs (the spinning one is preempted). */
static CUresult run_poke(CUfunction poke, CUstream s)
{
	void *args[1] = {&dflag};
	CUresult c = d.LaunchKernel(poke, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
	return c ? c : d.StreamSynchronize(s);
}

static int nblocking;

#define PROBE(what, call) do { \
	pthread_mutex_lock(&lock); busy = 1; fired = 0; pthread_cond_broadcast(&cond); pthread_mutex_unlock(&lock); \
	double t0 = now_s(); \
	CUresult _c = (call); \
	double dt = now_s() - t0; \
	pthread_mutex_lock(&lock); busy = 0; int _f = fired; pthread_cond_broadcast(&cond); pthread_mutex_unlock(&lock); \
	printf("%-44s %-9s %8.3f ms  (result %d)\n", what, _f ? "WAITS" : "returns", dt * 1e3, _c); \
	nblocking += _f; \
	CUcontext _cur; d.CtxGetCurrent(&_cur); d.CtxSetCurrent(ctx); \
	if (_f || d.StreamQuery(run) == CUDA_SUCCESS) { d.StreamSynchronize(run); launch(); } \
	d.CtxSetCurrent(_cur); \
} while (0)

/* The host cost of an idle process that holds a CUDA context, per thread. */
static void idle_phase(const char *what, double secs)
{
	char n0[8][32], n1[8][32];
	unsigned long long ns0[8], r0[8], ns1[8], r1[8];
	int c0, c1;
	threads_sample(n0, ns0, r0, &c0);
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	threads_sample(n1, ns1, r1, &c1);
	printf("%-44s", what);
	for (int i = 0; i < c1; i++) {
		unsigned long long a = 0, b = 0;
		for (int k = 0; k < c0; k++)
			if (!strcmp(n0[k], n1[i]))
				a = ns0[k], b = r0[k];
		if (strcmp(n1[i], "syncprobe"))
			printf(" %s %.3f%% (%.0f runs/s)", n1[i], (double)(ns1[i] - a) / secs / 1e7, (double)(r1[i] - b) / secs);
	}
	printf("\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* How long cuCtxDestroy of an idle context takes (gpu_reap pauses the
 * persistent kernel for it): a bare context, or one that held what an
 * engine holds (a module, a stream, device and mapped host memory), all
 * freed before.  Twenty of each, a random pause between. */
static void destroy_phase(CUdevice dev, int used)
{
	enum { REPS = 20 };
	double t[REPS];
	int n = 0;
	for (int i = 0; ctx_create && ctx_destroy && i < REPS; i++) {
		CUcontext c2;
		if (ctx_create(&c2, 0, dev))
			break;
		if (used) {
			CUmodule m2;
			CUstream s2;
			CUdeviceptr p2;
			void *h2;
			if (d.ModuleLoadDataEx(&m2, ptx, 0, NULL, NULL) || d.StreamCreate(&s2, CU_STREAM_NON_BLOCKING) ||
			    d.MemAlloc(&p2, 64 << 20) || d.MemHostAlloc(&h2, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP))
				break;
			d.MemFree(p2);
			d.MemFreeHost(h2);
			d.StreamDestroy(s2);
			d.ModuleUnload(m2);
		}
		struct timespec ts = {0, (long)(rand() % 150) * 1000000};
		nanosleep(&ts, NULL);
		double t0 = now_s();
		ctx_destroy(c2);
		t[n++] = (now_s() - t0) * 1e3;
	}
	d.CtxSetCurrent(ctx);
	if (!n) {
		printf("  cuCtxDestroy (%s): could not create contexts\n", used ? "used" : "bare");
		return;
	}
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	printf("  cuCtxDestroy of an idle %s context, %d times: min %.1f ms, median %.1f ms, max %.1f ms\n",
	       used ? "used (module, stream, memory; freed)" : "bare", n, t[0], t[n / 2], t[n - 1]);
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: syncprobe [--idle|--destroy|--wake]\n\nLaunches a spinning kernel and reports which CUDA driver calls wait for it.\n"
		       "--idle: the host CPU of each thread of an idle process holding a context, with and\n"
		       "without a running kernel.\n"
		       "--destroy: how long cuCtxDestroy of an idle context takes (no kernel running).\n");
		return 0;
	}
	d.lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!d.lib) {
		fprintf(stderr, "syncprobe: no NVIDIA driver (%s)\n", dlerror());
		return 2;
	}
#define X(name, sym, params) *(void **)&d.name = dlsym(d.lib, sym);
	CUDRV_FUNCS(X)
#undef X
	*(void **)&mem_alloc_async = dlsym(d.lib, "cuMemAllocAsync");
	*(void **)&mem_free_async = dlsym(d.lib, "cuMemFreeAsync");
	*(void **)&ctx_create = dlsym(d.lib, "cuCtxCreate_v2");
	MemCreateFn mem_create;
	MemAddressReserveFn mem_reserve;
	MemMapFn mem_map;
	MemSetAccessFn mem_access;
	MemUnmapFn mem_unmap;
	MemReleaseFn mem_release;
	MemAddressFreeFn mem_addr_free;
	*(void **)&mem_create = dlsym(d.lib, "cuMemCreate");
	*(void **)&mem_reserve = dlsym(d.lib, "cuMemAddressReserve");
	*(void **)&mem_map = dlsym(d.lib, "cuMemMap");
	*(void **)&mem_access = dlsym(d.lib, "cuMemSetAccess");
	*(void **)&mem_unmap = dlsym(d.lib, "cuMemUnmap");
	*(void **)&mem_release = dlsym(d.lib, "cuMemRelease");
	*(void **)&mem_addr_free = dlsym(d.lib, "cuMemAddressFree");
	*(void **)&ctx_destroy = dlsym(d.lib, "cuCtxDestroy_v2");
	*(void **)&library_load = dlsym(d.lib, "cuLibraryLoadData");
	*(void **)&library_kernel = dlsym(d.lib, "cuLibraryGetKernel");
	*(void **)&kernel_function = dlsym(d.lib, "cuKernelGetFunction");
	CUdevice dev;
	int ver = 0;
	char name[128];
	if (d.Init(0) || d.DeviceGet(&dev, 0) || d.DevicePrimaryCtxRetain(&ctx, dev) || d.CtxSetCurrent(ctx)) {
		fprintf(stderr, "syncprobe: cannot open GPU 0\n");
		return 2;
	}
	d.DriverGetVersion(&ver);
	d.DeviceGetName(name, sizeof name, dev);
	const char *ml = getenv("CUDA_MODULE_LOADING");
	printf("syncprobe: %s, driver API %d.%d, CUDA_MODULE_LOADING=%s\n", name, ver / 1000, ver % 1000 / 10,
	       ml ? ml : "(default)");
	CUmodule mod;
	void *hflag;
	if (d.ModuleLoadDataEx(&mod, ptx, 0, NULL, NULL) || d.ModuleGetFunction(&spin, mod, "spin") ||
	    d.MemHostAlloc(&hflag, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) ||
	    d.MemHostGetDevicePointer(&dflag, hflag, 0) || d.StreamCreate(&run, CU_STREAM_NON_BLOCKING) ||
	    d.StreamCreate(&other, CU_STREAM_NON_BLOCKING)) {
		fprintf(stderr, "syncprobe: cannot set up\n");
		return 2;
	}
	flag = hflag;
	if (argc > 1 && !strcmp(argv[1], "--destroy")) {
		destroy_phase(dev, 0);
		destroy_phase(dev, 1);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--wake")) {
		wake_phase("no kernel running", other, 20);
		*flag = 0;
		void *args[1] = {&dflag};
		d.LaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, run, args, NULL);
		wake_phase("a kernel running (spinning, 1 block)", other, 20);
		typedef CUresult (*StreamPrioFn)(CUstream *, unsigned, int);
		StreamPrioFn prio;
		*(void **)&prio = dlsym(d.lib, "cuStreamCreateWithPriority");
		CUstream hi;
		if (prio && !prio(&hi, CU_STREAM_NON_BLOCKING, -5))
			wake_phase("a kernel running, the wait at high priority", hi, 20);
		*flag = 1;
		d.StreamSynchronize(run);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--idle")) {
		/* where the host time of an idle CUDA process goes (docs/benchmarks.md) */
		idle_phase("a context, no kernel", 10);
		*flag = 0;
		void *args[1] = {&dflag};
		d.LaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, run, args, NULL);
		idle_phase("a kernel running (spinning)", 10);
		*flag = 1;
		d.StreamSynchronize(run);
		idle_phase("the kernel ended", 10);
		static const struct { unsigned flags; const char *name; } sched[] = {
			{1, "SCHED_SPIN"}, {2, "SCHED_YIELD"}, {4, "SCHED_BLOCKING_SYNC"}};
		for (size_t i = 0; ctx_create && i < sizeof sched / sizeof *sched; i++) {
			CUcontext c2;
			CUmodule m2;
			CUfunction f2;
			CUstream s2;
			char what[64];
			if (ctx_create(&c2, sched[i].flags, dev) || d.ModuleLoadDataEx(&m2, ptx, 0, NULL, NULL) ||
			    d.ModuleGetFunction(&f2, m2, "spin") || d.StreamCreate(&s2, CU_STREAM_NON_BLOCKING))
				continue;
			*flag = 0;
			d.LaunchKernel(f2, 1, 1, 1, 32, 1, 1, 0, s2, args, NULL);
			snprintf(what, sizeof what, "a kernel in a %s context", sched[i].name);
			idle_phase(what, 10);
			*flag = 1;
			d.StreamSynchronize(s2);
			d.CtxSetCurrent(ctx);
			ctx_destroy(c2);
		}
		return 0;
	}
	pthread_t wd;
	pthread_create(&wd, NULL, watchdog, NULL);
	launch();

	CUmodule mod2 = NULL;
	CUlinkState ls = NULL;
	void *cubin;
	size_t size, have;
	CUdeviceptr p = 0, g = 0, pa = 0;
	void *host = NULL, *page = aligned_alloc(4096, 1 << 20);
	CUstream s2 = NULL;
	uint64_t v = 42;
	memset(page, 0, 1 << 20);

	PROBE("cuStreamCreate", d.StreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	PROBE("cuLinkCreate", d.LinkCreate(0, NULL, NULL, &ls));
	PROBE("cuLinkAddData (PTX)", d.LinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx, sizeof ptx, "p.ptx", 0, NULL, NULL));
	PROBE("cuLinkComplete", d.LinkComplete(ls, &cubin, &size));
	PROBE("cuModuleLoadDataEx (cubin)", d.ModuleLoadDataEx(&mod2, cubin, 0, NULL, NULL));
	PROBE("cuLinkDestroy", d.LinkDestroy(ls));
	PROBE("cuModuleGetGlobal", d.ModuleGetGlobal(&g, &have, mod2, "g_value"));
	PROBE("cuMemcpyHtoDAsync (pageable) + sync stream", d.MemcpyHtoDAsync(g, &v, 8, other) ?: d.StreamSynchronize(other));
	PROBE("cuMemAlloc", d.MemAlloc(&p, 1 << 20));
	PROBE("cuMemcpyHtoDAsync 1 MiB + sync stream", d.MemcpyHtoDAsync(p, page, 1 << 20, other) ?: d.StreamSynchronize(other));
	PROBE("cuMemHostAlloc (mapped)", d.MemHostAlloc(&host, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	PROBE("cuMemHostRegister", d.MemHostRegister(page, 1 << 20, CU_MEMHOSTREGISTER_DEVICEMAP));
	PROBE("cuMemHostUnregister", d.MemHostUnregister(page));
	PROBE("cuMemFreeHost", d.MemFreeHost(host));
	PROBE("cuMemFree", d.MemFree(p));
	if (mem_alloc_async && mem_free_async) {
		PROBE("cuMemAllocAsync + sync stream", mem_alloc_async(&pa, 1 << 20, other) ?: d.StreamSynchronize(other));
		PROBE("cuMemFreeAsync + sync stream", mem_free_async(pa, other) ?: d.StreamSynchronize(other));
	}
	PROBE("cuModuleUnload", d.ModuleUnload(mod2));
	PROBE("cuStreamDestroy", d.StreamDestroy(s2));

	/* a second context: its own module, memory and kernel beside the
	 * first context's running kernel */
	if (ctx_create && ctx_destroy) {
		CUcontext b = NULL;
		CUmodule mb = NULL;
		CUfunction poke = NULL;
		CUstream sb = NULL;
		CUdeviceptr pb = 0;
		void *hb = NULL;
		printf("-- a second context, the first one's kernel running --\n");
		PROBE("ctx2: cuCtxCreate", ctx_create(&b, 0, dev));
		d.CtxSetCurrent(b);
		PROBE("ctx2: cuModuleLoadDataEx (PTX)", d.ModuleLoadDataEx(&mb, ptx, 0, NULL, NULL));
		PROBE("ctx2: cuModuleGetFunction", d.ModuleGetFunction(&poke, mb, "poke"));
		PROBE("ctx2: cuStreamCreate", d.StreamCreate(&sb, CU_STREAM_NON_BLOCKING));
		PROBE("ctx2: cuMemAlloc", d.MemAlloc(&pb, 1 << 20));
		PROBE("ctx2: cuMemHostAlloc", d.MemHostAlloc(&hb, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
		flag[1] = 0;
		PROBE("ctx2: launch a kernel + sync its stream", run_poke(poke, sb));
		printf("ctx2: the kernel %s\n", flag[1] == 7 ? "ran (the contexts time-slice)" : "did NOT run");
		PROBE("ctx2: cuMemFree", d.MemFree(pb));
		PROBE("ctx2: cuMemFreeHost", d.MemFreeHost(hb));
		PROBE("ctx2: cuModuleUnload", d.ModuleUnload(mb));
		PROBE("ctx2: cuStreamDestroy", d.StreamDestroy(sb));
		PROBE("ctx2: cuCtxSynchronize", d.CtxSynchronize());
		d.CtxSetCurrent(ctx);
		PROBE("ctx2: cuCtxDestroy", ctx_destroy(b));
		d.CtxSetCurrent(ctx);
	}
	if (library_load && library_kernel && kernel_function) {
		void *lib = NULL, *k = NULL;
		CUfunction f = NULL;
		printf("-- cuLibrary (context-independent loading), same context --\n");
		PROBE("cuLibraryLoadData (PTX)", library_load(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
		PROBE("cuLibraryGetKernel", library_kernel(&k, lib, "poke"));
		PROBE("cuKernelGetFunction", kernel_function(&f, k));
		flag[1] = 0;
		PROBE("launch it + sync its stream", run_poke(f, other));
	}
	/* memory of one context read by a kernel of another */
	if (ctx_create && mem_create && mem_reserve && mem_map && mem_access) {
		printf("-- memory of the first context, read by a kernel in a second --\n");
		size_t sz = 2 << 20;
		unsigned long long h = 0;
		CUdeviceptr vmm = 0, plain = 0;
		MemProp prop = {.type = 1, .loc = {.type = 1, .id = dev}};
		MemAccess acc = {.loc = {.type = 1, .id = dev}, .flags = 3};
		uint32_t nine = 9, five = 5;
		PROBE("cuMemCreate 2 MiB", mem_create(&h, sz, &prop, 0));
		PROBE("cuMemAddressReserve", mem_reserve(&vmm, sz, 0, 0, 0));
		PROBE("cuMemMap", mem_map(vmm, sz, 0, h, 0));
		PROBE("cuMemSetAccess", mem_access(vmm, sz, &acc, 1));
		PROBE("write 9 there", d.MemcpyHtoDAsync(vmm, &nine, 4, other) ?: d.StreamSynchronize(other));
		PROBE("cuMemAlloc (plain)", d.MemAlloc(&plain, sz));
		PROBE("write 5 there", d.MemcpyHtoDAsync(plain, &five, 4, other) ?: d.StreamSynchronize(other));
		CUcontext b = NULL;
		CUmodule mb = NULL;
		CUfunction peek = NULL;
		CUstream sb = NULL;
		PROBE("ctx3: cuCtxCreate", ctx_create(&b, 0, dev));
		d.CtxSetCurrent(b);
		PROBE("ctx3: load, stream", d.ModuleLoadDataEx(&mb, ptx, 0, NULL, NULL) ?: d.ModuleGetFunction(&peek, mb, "peek")
						    ?: d.StreamCreate(&sb, CU_STREAM_NON_BLOCKING));
		flag[2] = 0;
		void *a1[2] = {&vmm, &dflag};
		PROBE("ctx3: kernel reads the VMM memory", d.LaunchKernel(peek, 1, 1, 1, 32, 1, 1, 0, sb, a1, NULL) ?:
							    d.StreamSynchronize(sb));
		printf("ctx3: it read %u (want 9)\n", flag[2]);
		flag[2] = 0;
		void *a2[2] = {&plain, &dflag};
		PROBE("ctx3: kernel reads the cuMemAlloc memory", d.LaunchKernel(peek, 1, 1, 1, 32, 1, 1, 0, sb, a2, NULL) ?:
								  d.StreamSynchronize(sb));
		printf("ctx3: it read %u (want 5)\n", flag[2]);
		d.CtxSetCurrent(ctx);
		PROBE("cuMemUnmap", mem_unmap(vmm, sz));
		PROBE("cuMemRelease", mem_release(h));
		PROBE("cuMemAddressFree", mem_addr_free(vmm, sz));
	}
	PROBE("cuCtxSynchronize (expected to wait)", d.CtxSynchronize());

	*flag = 1;
	d.StreamSynchronize(run);
	printf("syncprobe: %d call%s waited for the running kernel\n", nblocking, nblocking == 1 ? "" : "s");
	return 0;
}
