/* gpu_int.h - the CUDA backend's insides, shared by its files: gpu.c
 * (driver, contexts, open and close), gpumap.c (the target's RAM),
 * gpurun.c (one target's kernels), gpuwake.c (the doorbell) and
 * gpufleet.c (one kernel over several targets); nothing here is for the
 * rest of the engine, which uses gpu.h. */
#ifndef SENTINEL_GPU_INT_H
#define SENTINEL_GPU_INT_H

#include "gpu.h"
#include "cudadrv.h"
#include "util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_BLOCK 128               /* threads per block: 4 warps */
#define GPU_FAULT_ADDR ((CUdeviceptr)4096)  /* the fault tests': an address the GPU has not mapped */
#define GPU_JIT_LEVEL 4             /* ptxas -O level of the driver's JIT (docs/benchmarks.md) */

/* A wakeup the driver's thread delivers (a host function queued behind a
 * stream wait on a doorbell): it clears armed and writes fd, an eventfd.
 * One engine's (GpuCode) and the fleet's (GpuFleet) alike. */
typedef struct GpuWake {
	int fd;
	int armed;                    /* a wait is queued (atomic: the driver's thread clears it) */
} GpuWake;
/* the host function; arg: its GpuWake */
void gpu_woken(void *arg);

/* The cubin cached for k (bundle.h's BdKey of what decides the link),
 * malloc'd, or NULL: none, or refused (removed; the stats' last_note says
 * which file and why) */
void *gpu_cache_get(const BdKey *k, size_t *len);
/* Keep cubin for k; a failure is counted and said in the stats */
void gpu_cache_put(const BdKey *k, const void *cubin, size_t len);
/* A cubin the driver would not load from the cache: counted and said */
void gpu_cache_refused(const BdKey *k, int cuerr);

struct GpuCode {
	CuDrv d;
	CUdevice dev;
	CUcontext ctx;                /* from the context pool (gpu_ctx_get) */
	bool ctx_held;
	CUmodule mod;
	CUfunction fn_tick, fn_main;
	char name[256];
	int cc_major, cc_minor, sms;
	const char *arch;
	unsigned grid;                /* blocks the on-demand kernel runs */
	unsigned grid_main;           /* blocks the persistent kernel runs */
	CUstream run, copy;           /* the persistent kernel's stream; reads while it runs */
	bool running;
	/* alerts wake the host: a wait on stats->doorbell, then a host function
	 * that writes wake.fd, queued on the watch stream (gpu_arm) */
	CuStreamWaitValue32Fn wait_value;
	CuLaunchHostFuncFn host_func;
	CUstream watch;
	GpuWake *wake;                /* fd 0: none.  Its own allocation: a host
	                               * function still queued when the context
	                               * failed may run after g is gone, so
	                               * gpu_close leaves an armed one behind */
	/* the world */
	const Bundle *b;
	WdLayout L;
	CUdeviceptr dblock, dring, dstats;
	void *mirror;
	sn_ring *ring;
	sn_stats *stats;
	struct GpuMap {               /* the target's RAM: our own mapping of the source, registered */
		void *src, *map;      /* the source's mapping, ours */
		size_t len;
		CUdeviceptr dev;      /* the first piece's; the others follow it */
		unsigned pieces;      /* registered, each reg_chunk bytes but the last */
		unsigned flags;       /* the CU_MEMHOSTREGISTER_ flags the driver took */
	} maps[KX_MAX_RANGES];
	unsigned nmaps;
	uint64_t reg_chunk;
	char mapping[160];
	uint64_t tick_ns;
	size_t total;
	unsigned want;                /* blocks its tick can use (gpu_start) */
	/* a member of a fleet (gpufleet.c): the context, module and run
	 * stream are the fleet's, borrowed; its memory description and
	 * relocation table live in device memory, not in the module's globals */
	GpuFleet *fleet;
	bool joined;                  /* in the fleet's kernel now */
	CUdeviceptr dmem, drelo;
	CUdeviceptr dsaved;           /* a restart's saved world (gpu_saved), freed with the world */
};


/* The one place a CUresult becomes a message (in err; returns -EIO). */
int gpu_err(const GpuCode *g, CUresult r, char *err, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
#define CU(call, ...) do { CUresult _r = (call); if (_r != CUDA_SUCCESS) return gpu_err(g, _r, err, n, __VA_ARGS__); } while (0)
/* SENTINEL_GPU_TRACE: one step, timed, on stderr. */
void gpu_trace(const char *step);
/* Make g's context current on this thread. */
void gpu_enter(const GpuCode *g);
/* Wait up to timeout_ns for the kernel on g->run to leave. */
CUresult gpu_wait_exit(GpuCode *g, uint64_t timeout_ns);

/* gpumap.c: map the source's RAM again and register it with g's
 * context; dmem gets mem with GPU addresses.  gpu_unmap_target undoes it. */
int gpu_map_target(GpuCode *g, const kx_mem *mem, const MemSource *src, kx_mem *dmem, char *err, size_t n);
void gpu_unmap_target(GpuCode *g);
/* gpurun.c: launch a stopped persistent kernel again on its own world. */
int gpu_resume(GpuCode *g, char *err, size_t n);
/* gpuwake.c: with the kernel stopped, release a queued wait and put the
 * doorbell back at the ring's head. */
void gpu_unwatch(GpuCode *g);

/* gpufleet.c: what gpu.c's entry points do for a fleet member. */
int gpu_fleet_join(GpuCode *g, char *err, size_t n);
int gpu_fleet_leave(GpuCode *g, char *err, size_t n);
int gpu_fleet_poll(GpuCode *g, char *err, size_t n);
/* Close a member: its resources are freed while the fleet's kernel is
 * stopped (freeing waits for a running kernel of the context). */
void gpu_fleet_drop(GpuCode *g);
/* Free what gpu_start allocated for g (the kernel that used it stopped). */
void gpu_free_world(GpuCode *g);

#endif
