/* greenprobe.c - can a reload use green contexts instead of a second context?
 *
 * syncprobe showed that a reload needs a second CUDA context (module loads
 * and frees wait for a running kernel in their own context) and that each
 * context costs the host a driver thread waking 10 times a second.  Green
 * contexts (CUDA 12.4+) split one device's SMs between contexts built on
 * the primary one.  This asks, with a kernel spinning in green context A:
 * do module loads, frees and destroys in green context B wait for it, and
 * what does the driver's event thread cost with two of them?
 *
 *     make build/greenprobe      (needs the CUDA headers; run on a GPU machine)
 */
#define _GNU_SOURCE
#include <cuda.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

static volatile unsigned *flag;
static volatile int busy, fired;

static const char ptx[] =
	PROBE_SPIN_PTX;

/* releases the spinning kernel when a call has not returned in 2 s */
static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		while (!busy)
			usleep(1000);
		double t0 = now_s();
		while (busy && now_s() - t0 < 2)
			usleep(1000);
		if (busy) {
			fired = 1;
			*flag = 1;
		}
		while (busy)
			usleep(1000);
	}
	return NULL;
}

#define PROBE(what, call) do { \
	fired = 0; busy = 1; double t0 = now_s(); CUresult c_ = (call); double dt = now_s() - t0; busy = 0; \
	printf("%-40s %-8s %9.3f ms (result %d)\n", what, fired ? "WAITS" : "returns", dt * 1e3, (int)c_); \
	if (fired) { printf("greenprobe: the kernel was released; the rest is not meaningful\n"); } \
} while (0)

/* the driver's event threads: CPU ns and times they ran */
static unsigned long long evt_runs(double *cpu_ns)
{
	char names[8][32];
	unsigned long long ns[8], runs[8], r = 0;
	int n;
	threads_sample(names, ns, runs, &n);
	*cpu_ns = 0;
	for (int k = 0; k < n; k++)
		if (!strncmp(names[k], "cuda-EvtHandlr", 14)) {
			*cpu_ns += (double)ns[k];
			r += runs[k];
		}
	return r;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		printf("usage: greenprobe\n\nWith a kernel spinning in one green context, which calls in a second wait for it?\n");
		return 0;
	}
	CUdevice dev;
	CUcontext prim;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&prim, dev) || cuCtxSetCurrent(prim)) {
		fprintf(stderr, "greenprobe: no GPU\n");
		return 2;
	}
	CUdevResource all, groups[2], rest;
	unsigned n = 2;
	CUresult c = cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
	if (!c)
		c = cuDevSmResourceSplitByCount(groups, &n, &all, &rest, 0, 8);
	printf("greenprobe: %u SMs, split into %u groups of %u (result %d)\n", all.sm.smCount, n,
	       n ? groups[0].sm.smCount : 0, (int)c);
	CUgreenCtx g[2];
	CUcontext cx[2];
	CUstream st[2];
	for (unsigned i = 0; i < 2 && !c; i++) {
		CUdevResourceDesc desc;
		c = cuDevResourceGenerateDesc(&desc, &groups[i], 1);
		if (!c)
			c = cuGreenCtxCreate(&g[i], desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
		if (!c)
			c = cuCtxFromGreenCtx(&cx[i], g[i]);
		if (!c)
			c = cuGreenCtxStreamCreate(&st[i], g[i], CU_STREAM_NON_BLOCKING, 0);
	}
	if (c) {
		fprintf(stderr, "greenprobe: cannot make green contexts (%d)\n", (int)c);
		return 2;
	}
	void *hflag;
	CUdeviceptr dflag;
	CUmodule ma, mb = NULL;
	CUfunction spin;
	cuCtxSetCurrent(cx[0]);
	if (cuMemHostAlloc(&hflag, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) ||
	    cuMemHostGetDevicePointer(&dflag, hflag, 0) || cuModuleLoadDataEx(&ma, ptx, 0, NULL, NULL) ||
	    cuModuleGetFunction(&spin, ma, "spin")) {
		fprintf(stderr, "greenprobe: cannot set up\n");
		return 2;
	}
	flag = hflag;
	*flag = 0;
	pthread_t wd;
	pthread_create(&wd, NULL, watchdog, NULL);
	double cpu0, cpu1;
	unsigned long long r0 = evt_runs(&cpu0);
	sleep(5);
	unsigned long long r1 = evt_runs(&cpu1);
	printf("idle, two green contexts: cuda-EvtHandlr %.3f%% (%.0f runs/s)\n", (cpu1 - cpu0) / 5 / 1e7, (r1 - r0) / 5.0);
	void *args[1] = {&dflag};
	c = cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, st[0], args, NULL);
	printf("spinning kernel launched in green context A (result %d)\n", (int)c);
	usleep(100000);
	cuCtxSetCurrent(cx[1]);
	CUdeviceptr p = 0;
	void *h = NULL;
	PROBE("B: cuModuleLoadDataEx", cuModuleLoadDataEx(&mb, ptx, 0, NULL, NULL));
	PROBE("B: cuMemAlloc", cuMemAlloc(&p, 1 << 20));
	PROBE("B: cuMemHostAlloc", cuMemHostAlloc(&h, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP));
	PROBE("B: cuMemFree", cuMemFree(p));
	PROBE("B: cuMemFreeHost", cuMemFreeHost(h));
	PROBE("B: cuModuleUnload", cuModuleUnload(mb));
	r0 = evt_runs(&cpu0);
	sleep(5);
	r1 = evt_runs(&cpu1);
	printf("a kernel in A: cuda-EvtHandlr %.3f%% (%.0f runs/s)\n", (cpu1 - cpu0) / 5 / 1e7, (r1 - r0) / 5.0);
	cuCtxSetCurrent(prim);
	PROBE("cuStreamDestroy (B's stream)", cuStreamDestroy(st[1]));
	PROBE("cuGreenCtxDestroy B", cuGreenCtxDestroy(g[1]));
	*flag = 1;
	cuCtxSetCurrent(cx[0]);
	cuStreamSynchronize(st[0]);
	printf("greenprobe: done\n");
	return 0;
}
