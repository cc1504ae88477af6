/* regprobe.c - can the GPU read a VM_IO|VM_PFNMAP mapping of host RAM?
 *
 * Bare metal (docs/design: the sentinel_pmem module) maps the host's RAM
 * with remap_pfn_range, which makes a VM_IO|VM_PFNMAP mapping, and gives it
 * to cuMemHostRegister with CU_MEMHOSTREGISTER_IOMEMORY.  NVIDIA's open
 * kernel modules issue #732 reports that since driver 550 such a
 * registration fails with "invalid argument".  This program finds out on
 * the machine it runs on, without our module, with the two mappings of
 * that kind a stock kernel offers:
 *
 *   /dev/mem, offset 0, 1 MiB: RAM (the BIOS area; CONFIG_STRICT_DEVMEM
 *       leaves the first MiB mappable), mapped by remap_pfn_range exactly
 *       as the module would map all of RAM;
 *   a prefetchable PCI memory BAR (/sys/bus/pci/devices/X/resourceN):
 *       MMIO, also remap_pfn_range (registration only, never read).
 *
 * For each it tries the flag sets sentineld could use and, for RAM that
 * registered, reads 256 bytes on the GPU and compares them with the CPU's
 * read.  Run on a GPU machine (as root):
 *
 *     build/regprobe         (make build/regprobe; tests/gpu/pack.sh packs it)
 */
#define _GNU_SOURCE
#include "cudadrv.h"
#include "probe.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static CuDrv d;

static const char copy_ptx[] = PROBE_COPY_PTX;

static const char *cu_name(CUresult r) { return probe_cu_name(&d, r); }

static CUfunction copy_fn;
static CUdeviceptr dbuf;

/* Register p..p+len with flags; for RAM, read 256 bytes through the GPU. */
static int try_register(const char *what, void *p, size_t len, unsigned flags, int read_it)
{
	char fl[64];
	snprintf(fl, sizeof fl, "%s%s%s", flags & CU_MEMHOSTREGISTER_DEVICEMAP ? "DEVICEMAP" : "",
		 flags & CU_MEMHOSTREGISTER_IOMEMORY ? "|IOMEMORY" : "", flags & CU_MEMHOSTREGISTER_READ_ONLY ? "|READ_ONLY" : "");
	CUresult r = d.MemHostRegister(p, len, flags);
	if (r) {
		printf("  %-34s %-28s register: %s (%d)\n", what, fl, cu_name(r), r);
		return 0;
	}
	CUdeviceptr dp = 0;
	r = d.MemHostGetDevicePointer(&dp, p, 0);
	printf("  %-34s %-28s register: ok; device pointer: %s", what, fl, r ? cu_name(r) : "ok");
	int ok = 1;
	if (!r && read_it) {
		uint64_t gpu[32], cpu[32];
		memcpy(cpu, p, sizeof cpu);
		void *args[2] = {&dp, &dbuf};
		r = d.LaunchKernel(copy_fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
		if (!r)
			r = d.CtxSynchronize();
		if (!r)
			r = d.MemcpyDtoH(gpu, dbuf, sizeof gpu);
		if (r)
			printf("; GPU read: %s\n", cu_name(r));
		else
			printf("; GPU read of 256 bytes %s the CPU's\n", memcmp(gpu, cpu, sizeof gpu) ? "DIFFERS from" : "equals");
		ok = !r && !memcmp(gpu, cpu, sizeof gpu);
	} else {
		printf("\n");
	}
	d.MemHostUnregister(p);
	return ok;
}

static void try_all(const char *what, void *p, size_t len, int read_it)
{
	static const unsigned sets[] = {
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY,
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY,
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY,
		CU_MEMHOSTREGISTER_DEVICEMAP,
	};
	for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
		try_register(what, p, len, sets[i], read_it);
}

/* A prefetchable memory BAR of some PCI device: resource file and size. */
static int find_bar(char *path, size_t n, size_t *len)
{
	DIR *dir = opendir("/sys/bus/pci/devices");
	struct dirent *de;
	int found = 0;
	while (!found && dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		char rp[300];
		snprintf(rp, sizeof rp, "/sys/bus/pci/devices/%s/resource", de->d_name);
		FILE *f = fopen(rp, "r");
		unsigned long long lo, hi, fl;
		for (int bar = 0; f && bar < 6 && fscanf(f, "%llx %llx %llx", &lo, &hi, &fl) == 3; bar++) {
			/* IORESOURCE_MEM 0x200, IORESOURCE_PREFETCH 0x2000 */
			if (!(fl & 0x200) || !(fl & 0x2000) || hi <= lo)
				continue;
			snprintf(path, n, "/sys/bus/pci/devices/%s/resource%d", de->d_name, bar);
			*len = hi - lo + 1 < (2u << 20) ? (size_t)(hi - lo + 1) : (2u << 20);
			found = access(path, R_OK) == 0;
			if (found)
				break;
		}
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
	return found;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: regprobe\n\nTries cuMemHostRegister on VM_IO|VM_PFNMAP mappings (/dev/mem's first MiB of RAM,\n"
		       "a prefetchable PCI BAR) with each flag set, and reads the RAM back on the GPU.\n");
		return 0;
	}
	d.lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!d.lib) {
		fprintf(stderr, "regprobe: no NVIDIA driver (%s)\n", dlerror());
		return 2;
	}
#define X(name, sym, params) *(void **)&d.name = dlsym(d.lib, sym);
	CUDRV_FUNCS(X)
#undef X
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	int ver = 0;
	char name[128] = "";
	if (d.Init(0) || d.DeviceGet(&dev, 0) || d.DevicePrimaryCtxRetain(&ctx, dev) || d.CtxSetCurrent(ctx) ||
	    d.ModuleLoadDataEx(&mod, copy_ptx, 0, NULL, NULL) || d.ModuleGetFunction(&copy_fn, mod, "copy") ||
	    d.MemAlloc(&dbuf, 256)) {
		fprintf(stderr, "regprobe: CUDA setup failed\n");
		return 2;
	}
	d.DriverGetVersion(&ver);
	d.DeviceGetName(name, sizeof name, dev);
	char kver[256] = "";
	FILE *f = fopen("/proc/sys/kernel/osrelease", "r");
	if (f) {
		if (!fgets(kver, sizeof kver, f))
			kver[0] = 0;
		kver[strcspn(kver, "\n")] = 0;
		fclose(f);
	}
	printf("regprobe: %s, CUDA driver API %d, Linux %s\n", name, ver, kver);

	/* the control: ordinary anonymous memory */
	size_t len = 1u << 20;
	void *anon = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon != MAP_FAILED) {
		memset(anon, 0x5a, len);
		try_register("anonymous memory (control)", anon, len, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY, 1);
		munmap(anon, len);
	}

	int fd = open("/dev/mem", O_RDONLY | O_SYNC);
	if (fd < 0) {
		printf("  /dev/mem: cannot open: %s\n", strerror(errno));
	} else {
		void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			printf("  /dev/mem: cannot map the first MiB: %s\n", strerror(errno));
		else {
			try_all("/dev/mem RAM, first MiB", p, len, 1);
			munmap(p, len);
		}
		close(fd);
	}

	char bar[320];
	size_t blen;
	if (!find_bar(bar, sizeof bar, &blen)) {
		printf("  no readable prefetchable PCI memory BAR\n");
	} else {
		/* sysfs wants the file open for writing to map it on some kernels */
		fd = open(bar, O_RDONLY | O_SYNC);
		void *p = fd < 0 ? MAP_FAILED : mmap(NULL, blen, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			printf("  %s, read-only: cannot map: %s\n", bar, strerror(errno));
			if (fd >= 0)
				close(fd);
			fd = open(bar, O_RDWR | O_SYNC);
			p = fd < 0 ? MAP_FAILED : mmap(NULL, blen, PROT_READ, MAP_SHARED, fd, 0);
		}
		if (p == MAP_FAILED)
			printf("  %s: cannot map: %s\n", bar, strerror(errno));
		else {
			try_all(bar + strlen("/sys/bus/pci/devices/"), p, blen, 0);
			munmap(p, blen);
		}
		if (fd >= 0)
			close(fd);
	}
	d.MemFree(dbuf);
	d.ModuleUnload(mod);
	d.DevicePrimaryCtxRelease(dev);
	return 0;
}
