/* probe.h - what the GPU probes share: a kernel that spins on a flag in
 * mapped host memory, one that copies 256 bytes, a clock, and per-thread
 * CPU accounting. */
#ifndef SENTINEL_PROBE_H
#define SENTINEL_PROBE_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* spin(flag): loops until *flag is not 0 */
#define PROBE_SPIN_PTX \
	".version 7.0\n.target sm_70\n.address_size 64\n" \
	".visible .entry spin(.param .u64 flag)\n{\n" \
	"  .reg .u64 %rd<2>;\n  .reg .u32 %r<2>;\n  .reg .pred %p<2>;\n" \
	"  ld.param.u64 %rd1, [flag];\n" \
	"LOOP:\n  ld.volatile.global.u32 %r1, [%rd1];\n  setp.eq.u32 %p1, %r1, 0;\n  @%p1 bra LOOP;\n  ret;\n}\n"

/* copy(src, dst): 32 u64 from src to dst, one thread each */
#define PROBE_COPY_PTX \
	".version 7.0\n.target sm_70\n.address_size 64\n" \
	".visible .entry copy(.param .u64 src, .param .u64 dst)\n{\n" \
	"  .reg .u64 %rd<6>;\n  .reg .u32 %r<2>;\n" \
	"  ld.param.u64 %rd1, [src];\n  ld.param.u64 %rd2, [dst];\n" \
	"  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 8;\n" \
	"  add.u64 %rd4, %rd1, %rd3;\n  add.u64 %rd5, %rd2, %rd3;\n" \
	"  ld.volatile.global.u64 %rd1, [%rd4];\n  st.global.u64 [%rd5], %rd1;\n  ret;\n}\n"

#ifdef SENTINEL_CUDADRV_H   /* probes that load libcuda through engine/cudadrv.h */
/* A CUresult's name ("CUDA_ERROR_INVALID_VALUE"), or "?" */
static inline const char *probe_cu_name(const CuDrv *drv, CUresult r)
{
	const char *s = NULL;
	if (drv->GetErrorName)
		drv->GetErrorName(r, &s);
	return s ? s : "?";
}
#endif

static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every thread of this process: CPU ns and times it ran, summed by name. */
static inline void threads_sample(char names[8][32], unsigned long long ns[8], unsigned long long runs[8], int *n)
{
	*n = 0;
	DIR *dir = opendir("/proc/self/task");
	struct dirent *de;
	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		char path[300], comm[32] = "";
		unsigned long long a = 0, b = 0, c = 0;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(comm, sizeof comm, f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", de->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%llu %llu %llu", &a, &b, &c) != 3)
				a = c = 0;
			fclose(f);
		}
		int k;
		for (k = 0; k < *n && strcmp(names[k], comm); k++)
			;
		if (k == *n && *n < 8) {
			snprintf(names[k], 32, "%s", comm);
			ns[k] = runs[k] = 0;
			(*n)++;
		}
		if (k < 8) {
			ns[k] += a;
			runs[k] += c;
		}
	}
	if (dir)
		closedir(dir);
}

#endif
