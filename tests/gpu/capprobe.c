/* capprobe.c - how libcuda caps registered host memory, and how the CUDA
 * backend registers a target the way the pmem source maps one.
 *
 * Links the engine's own sysinfo() (engine/gpucap.c, exported through
 * engine/gpucap.dynlist) and finds out, on the GPU machine:
 *
 *   1. the cap: with totalram pretended to be 2 GiB before cuInit, does
 *      registering 3 GiB fail; does gpucap_lift() then let it through; when
 *      does libcuda call sysinfo() (at cuInit, at each registration)?
 *   2. the flags: which of DEVICEMAP|IOMEMORY|READ_ONLY and its subsets a
 *      MAP_SHARED mapping of a /dev/shm file (a guest's RAM file) takes;
 *   3. ranges and chunks: two ranges mapped apart at their file offsets
 *      (as the pmem source maps /dev/sentinel_pmem, offset = physical
 *      address), the big one registered in 512 MiB chunks: are the chunks'
 *      device pointers contiguous (and the host pointers themselves), and
 *      does a GPU read across a chunk boundary equal the CPU's?
 *
 *     build/capprobe [MiB]      (default 3072; tests/gpu/run.sh capprobe)
 */
#define _GNU_SOURCE
#include "cudadrv.h"
#include "probe.h"
#include "gpucap.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define FLAGS_IO_RO (CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)
#define CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM 91

static CuDrv d;
static CUfunction copy_fn;
static CUdeviceptr dbuf;

static const char copy_ptx[] = PROBE_COPY_PTX;

static const char *cu_name(CUresult r) { return probe_cu_name(&d, r); }

static const char *flag_name(unsigned f)
{
	static char b[64];
	snprintf(b, sizeof b, "DEVICEMAP%s%s", f & CU_MEMHOSTREGISTER_IOMEMORY ? "|IOMEMORY" : "",
		 f & CU_MEMHOSTREGISTER_READ_ONLY ? "|READ_ONLY" : "");
	return b;
}

/* 256 bytes at device address dp read on the GPU equal the CPU's at p? */
static int gpu_equals(CUdeviceptr dp, const void *p)
{
	uint64_t gpu[32];
	void *args[2] = {&dp, &dbuf};
	CUresult r = d.LaunchKernel(copy_fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
	if (!r)
		r = d.CtxSynchronize();
	if (!r)
		r = d.MemcpyDtoH(gpu, dbuf, sizeof gpu);
	if (r) {
		printf("    GPU read at %#llx: %s\n", (unsigned long long)dp, cu_name(r));
		return 0;
	}
	return !memcmp(gpu, p, sizeof gpu);
}

static unsigned long long totalram(void)
{
	struct sysinfo si;
	return sysinfo(&si) ? 0 : (unsigned long long)si.totalram * (si.mem_unit ? si.mem_unit : 1);
}

static int cuda_up(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	d.lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!d.lib) {
		fprintf(stderr, "capprobe: no NVIDIA driver (%s)\n", dlerror());
		return -1;
	}
#define X(name, sym, params) *(void **)&d.name = dlsym(d.lib, sym);
	CUDRV_FUNCS(X)
#undef X
	if (d.Init(0) || d.DeviceGet(&dev, 0) || d.DevicePrimaryCtxRetain(&ctx, dev) || d.CtxSetCurrent(ctx) ||
	    d.ModuleLoadDataEx(&mod, copy_ptx, 0, NULL, NULL) || d.ModuleGetFunction(&copy_fn, mod, "copy") ||
	    d.MemAlloc(&dbuf, 256)) {
		fprintf(stderr, "capprobe: CUDA setup failed\n");
		return -1;
	}
	return 0;
}

/* A /dev/shm file of size bytes, each 8-byte word a page (and 64 words
 * each side of every 512 MiB) holding its own offset. */
static int shm_file(unsigned long long size)
{
	char path[64];
	snprintf(path, sizeof path, "/dev/shm/capprobe-%d", (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size)) {
		fprintf(stderr, "capprobe: %s: %s\n", path, strerror(errno));
		return -1;
	}
	unlink(path);
	uint64_t *w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w == MAP_FAILED) {
		perror("capprobe: mmap");
		return -1;
	}
	for (unsigned long long i = 0; i < size / 8; i += 512)
		w[i] = i * 8;
	for (unsigned long long e = 512 * MIB; e < size; e += 512 * MIB)
		for (unsigned long long i = e / 8 - 64; i < e / 8 + 64; i++)
			w[i] = i * 8;
	munmap(w, size);
	return fd;
}

/* In a child of its own (libcuda reads sysinfo() once, at cuInit): the
 * machine pretended to have `pretend` bytes, the lift set to `lift`, both
 * before cuInit; can `size` bytes be registered?  Exit 0 yes, 1 no. */
static int cap_case(const char *what, unsigned long long pretend, unsigned long long lift, unsigned long long size)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		gpucap_pretend_total(pretend);
		gpucap_lift(lift);
		unsigned long c0 = gpucap_sysinfo_calls();
		if (cuda_up())
			_exit(2);
		unsigned long c1 = gpucap_sysinfo_calls();
		int fd = shm_file(size);
		void *ro = fd < 0 ? MAP_FAILED : mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (ro == MAP_FAILED)
			_exit(2);
		CUresult r = d.MemHostRegister(ro, size, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY);
		unsigned long c2 = gpucap_sysinfo_calls();
		printf("   %-44s register %llu MiB: %s; sysinfo() calls at cuInit %lu, at the registration %lu\n", what,
		       size / MIB, r ? cu_name(r) : "ok", c1 - c0, c2 - c1);
		fflush(stdout);
		_exit(r ? 1 : 0);
	}
	int st = 0;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: capprobe [MIB]\n\nHow libcuda caps cuMemHostRegister (through sysinfo), which flags a /dev/shm\n"
		       "mapping takes, and ranges registered in chunks (default MIB 3072).\n");
		return 0;
	}
	unsigned long long size = (argc > 1 ? strtoull(argv[1], NULL, 0) : 3072) * MIB;
	unsigned long long real = totalram(), small = size - size / 3;
	printf("capprobe: the kernel's totalram %.1f GiB\n", real / 1073741824.0);

	/* 1. the cap, each case in a process of its own */
	printf("1. the cap: the machine pretended to have %.2f GiB (engine/gpucap.c's sysinfo)\n", small / 1073741824.0);
	int capped = cap_case("no lift:", small, 0, size);
	int lifted = cap_case("lifted by the registration's size:", small, size, size);
	int ok = capped == 1 && lifted == 0;
	printf("   => %s\n", ok ? "libcuda caps registrations by sysinfo()'s totalram, and the lift set before cuInit lifts it"
		   : capped == 0 ? "no cap at this size: the cap is not sysinfo()'s totalram"
		   : "the lift did not help");
	if (cuda_up())
		return 2;
	int ver = 0, hostptr = -1;
	char name[128] = "";
	CUdevice dev;
	d.DeviceGet(&dev, 0);
	d.DriverGetVersion(&ver);
	d.DeviceGetName(name, sizeof name, dev);
	d.DeviceGetAttribute(&hostptr, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, dev);
	printf("capprobe: %s, CUDA driver API %d; can use host pointers for registered memory: %d\n", name, ver, hostptr);
	int fd = shm_file(size);
	if (fd < 0)
		return 2;
	void *ro = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	CUresult r;

	/* 2. the flags on a tmpfs mapping, 64 MiB */
	printf("2. flags on a MAP_SHARED /dev/shm mapping (64 MiB)\n");
	static const unsigned sets[] = {FLAGS_IO_RO, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY,
					CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY,
					CU_MEMHOSTREGISTER_DEVICEMAP};
	unsigned good = 0;
	for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
		r = d.MemHostRegister(ro, 64 * MIB, sets[i]);
		CUdeviceptr dp = 0;
		int eq = 0;
		if (!r && !d.MemHostGetDevicePointer(&dp, ro, 0))
			eq = gpu_equals(dp + 4096, (char *)ro + 4096);
		printf("   %-30s %s%s\n", flag_name(sets[i]), r ? cu_name(r) : "ok",
		       r ? "" : eq ? "; GPU read equals the CPU's" : "; GPU read DIFFERS");
		if (!r) {
			d.MemHostUnregister(ro);
			if (!good && eq)
				good = sets[i];
		}
	}
	munmap(ro, size);
	if (!good) {
		printf("capprobe: no flag set works on a /dev/shm mapping\n");
		return 1;
	}

	/* 3. two ranges mapped apart at their offsets, the big one in chunks */
	printf("3. ranges [4 KiB, 636 KiB) and [1 MiB, %llu MiB), mapped apart, the second in 512 MiB chunks (%s)\n",
	       size / MIB, flag_name(good));
	char *ra = mmap(NULL, 632 * 1024, PROT_READ, MAP_SHARED, fd, 4096);
	char *rb = mmap(NULL, size - MIB, PROT_READ, MAP_SHARED, fd, (off_t)MIB);
	ok = ok && ra != MAP_FAILED && rb != MAP_FAILED;
	CUdeviceptr da = 0, dprev = 0, d0 = 0;
	r = d.MemHostRegister(ra, 632 * 1024, good);
	if (!r)
		r = d.MemHostGetDevicePointer(&da, ra, 0);
	printf("   range A: %s, device pointer %s the host pointer; GPU read %s\n", r ? cu_name(r) : "ok",
	       da == (CUdeviceptr)(uintptr_t)ra ? "equals" : "differs from",
	       !r && gpu_equals(da, ra) ? "equals the CPU's" : "FAILED");
	ok = ok && !r;
	int contiguous = 1, same = 1, nchunks = 0;
	unsigned long long chunk = 512 * MIB, len = size - MIB;
	for (unsigned long long off = 0; off < len && ok; off += chunk, nchunks++) {
		unsigned long long n = len - off < chunk ? len - off : chunk;
		CUdeviceptr dp = 0;
		r = d.MemHostRegister(rb + off, n, good);
		if (!r)
			r = d.MemHostGetDevicePointer(&dp, rb + off, 0);
		if (r) {
			printf("   chunk %d: %s\n", nchunks, cu_name(r));
			ok = 0;
			break;
		}
		if (off == 0)
			d0 = dp;
		else if (dp != dprev + chunk)
			contiguous = 0;
		if (dp != (CUdeviceptr)(uintptr_t)(rb + off))
			same = 0;
		dprev = dp;
	}
	printf("   range B: %d chunks registered; device pointers %s; %s the host pointers\n", nchunks,
	       contiguous ? "contiguous" : "NOT contiguous", same ? "equal to" : "differ from");
	int edges = 0, edges_ok = 0;
	if (ok && contiguous)
		for (unsigned long long e = chunk; e < len; e += chunk, edges++)
			edges_ok += gpu_equals(d0 + e - 128, rb + e - 128);     /* 128 bytes each side of the edge */
	printf("   GPU reads across %d chunk edges (through the first chunk's device pointer): %d equal the CPU's\n",
	       edges, edges_ok);
	ok = ok && contiguous && edges_ok == edges;
	printf("capprobe: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
