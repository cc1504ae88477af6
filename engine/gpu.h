/* gpu.h - the CUDA backend: a bundle's PTX on an NVIDIA GPU.
 *
 * The target's RAM is registered with the GPU (read-only, mapped), the
 * bundle's PTX for the best architecture the GPU runs is loaded with
 * cuModuleLoadDataEx, its relocation table and memory description are
 * written into the module's globals, and its tables live in device memory;
 * the alert ring and the statistics in mapped host memory.  gpu_tick runs
 * the on-demand kernel (sn_gpu_tick) once; sentineld runs the persistent
 * one (sn_gpu_main).  Every CUresult is translated in one place (gpu_err).
 *
 * Ownership: a GpuCode owns its context reference, module, registrations
 * and allocations; gpu_close().
 */
#ifndef SENTINEL_GPU_H
#define SENTINEL_GPU_H

#include "bundle.h"
#include "kx.h"
#include "msrc.h"
#include "reloc.h"
#include "world.h"

typedef struct GpuCode GpuCode;

/* What the driver's JIT made, kept under dir across restarts (gpucache.c):
 * its compute cache of each PTX part, and each link's cubin.  Once, before
 * the first gpu_open (NULL or "": no cache of ours).  0 or -errno. */
int gpu_cache_setup(const char *dir);
typedef struct GpuCacheStats {
	unsigned long hits, misses, refused, written, unwritten, evicted;   /* cubins */
	char last_note[600];      /* the last refusal or failed write, in words; "" none */
} GpuCacheStats;
void gpu_cache_stats(GpuCacheStats *out);

/* Load libcuda, pick the device, load the bundle's PTX.  On failure err
 * says why (no driver, no GPU, no PTX this GPU runs) and what to do. */
int gpu_open(const Bundle *b, int ordinal, GpuCode **out, char *err, size_t n);
const char *gpu_device_name(const GpuCode *g);
/* The target's RAM is registered in pieces of at most bytes (0: 64 GiB),
 * each range of it in as many as it takes (before gpu_start). */
void gpu_set_register_chunk(GpuCode *g, uint64_t bytes);
/* How the target's RAM is mapped into the GPU, in words: ranges, pieces,
 * the flags the driver took ("" before gpu_start). */
const char *gpu_mapping(const GpuCode *g);
/* The architecture ("sm_90") of GPU 0 of this machine, for the compiler's
 * native PTX; -ENODEV (and nothing written) when there is none. */
int gpu_probe_arch(char *arch, size_t n);
/* Start the driver and open a context on GPU ordinal now, into the pool
 * the next gpu_open takes its context from (a reload's trial run does
 * this while the rules compile: cuInit and a context are most of a new
 * process's start on the GPU).  0 or -errno and a message. */
int gpu_warm(int ordinal, char *err, size_t n);
/* Map the target and lay out the world on the GPU.  *mirror receives a host
 * copy of the world block (for views), *ring and *stats the host side of the
 * mapped ring and statistics. */
int gpu_start(GpuCode *g, const Bundle *b, const WdParams *p, const WdLayout *L, const RlResult *res,
	      const kx_mem *mem, const MemSource *src, void **mirror, sn_ring **ring, sn_stats **stats,
	      char *err, size_t n);
int gpu_tick(GpuCode *g, uint64_t now, char *err, size_t n);
/* The persistent kernel: started on a stream of its own, it runs every tick
 * on the GPU's clock until gpu_halt sets the stop flag.  Its grid takes at
 * most half the GPU, so a second one can start beside it on reload. */
int gpu_run(GpuCode *g, char *err, size_t n);
int gpu_halt(GpuCode *g, uint64_t timeout_ns, char *err, size_t n);
/* Whether a kernel of this process faulted: CUDA then fails every call in
 * every context of the process, for good; only a new process runs again. */
bool gpu_lost(void);
/* Test hook (eng_test_fault "kernel-exit"): the persistent kernel ends at
 * its next tick without the host asking, as a dead kernel would; gpu_poll
 * must then say so. */
void gpu_test_exit(GpuCode *g);
/* Test hook (eng_test_fault "trial-kernel-fault"): launch the persistent
 * kernel on an address the GPU has not mapped, so that it faults (CUDA
 * error 700: the process's CUDA is lost, gpu_lost). */
void gpu_test_run_faulting(GpuCode *g);
/* Reload: start g's persistent kernel, which takes over from old's after
 * old's next tick but one (stats->handoff_tick), without a gap; returns
 * once old has stopped and g has ticked on its own.  g's world must have
 * been linked to old's (wd_link).  On failure g is stopped and old runs
 * on, launched again if it had stopped (err says which); fault is a
 * test hook (eng_test_fault), GPU_FAULT_NONE but in tests. */
typedef enum GpuFault {
	GPU_FAULT_NONE,
	GPU_FAULT_AFTER_STOP,         /* fail just after old stopped */
	GPU_FAULT_STUCK,              /* old is never told: the handover times out */
	GPU_FAULT_KERNEL,             /* g's kernel reads an address the GPU has not mapped */
	GPU_FAULT_NO_RESUME,          /* as AFTER_STOP, and the old kernel's resume fails */
} GpuFault;
int gpu_takeover(GpuCode *g, GpuCode *old, uint64_t timeout_ns, GpuFault fault, char *err, size_t n);
/* After a reload: destroy the contexts that engines closed since (each
 * costs a driver thread), pausing g's persistent kernel between two ticks
 * while the driver does, since destroying a context waits for every kernel
 * on the device.  Below a 100 ms tick the pause is not taken and the idle
 * context is kept for the next reload (kept).  What it did goes in *out. */
typedef struct GpuReap {
	unsigned idle, destroyed;  /* idle contexts found, destroyed */
	bool kept;                 /* not destroyed: the tick is too short */
	uint64_t destroy_ns;       /* cuCtxDestroy, all of them */
	uint64_t pause_ns;         /* kernel left .. relaunched */
	uint64_t late;             /* ticks the pause made late (0 expected) */
	uint64_t delay_ns;         /* how much after its time the first tick after the pause ran */
} GpuReap;
int gpu_reap(GpuCode *g, GpuReap *out, char *err, size_t n);
/* The world block: its GPU address, its host copy, and copying that copy
 * (changed by wd_link) to the GPU again before the kernel starts. */
uint64_t gpu_block_addr(const GpuCode *g);
void *gpu_mirror(GpuCode *g);
int gpu_upload(GpuCode *g, char *err, size_t n);
/* A restart's saved world in device memory (freed with g's world): the
 * address first (the block's pointers are made to point there), then
 * the bytes. */
int gpu_saved_alloc(GpuCode *g, size_t bytes, uint64_t *addr, char *err, size_t n);
int gpu_saved_copy(GpuCode *g, const void *block, size_t bytes, char *err, size_t n);
/* Alerts wake the host: once armed, fd (an eventfd) is written when the
 * ring holds a record past the ones the host took (ring->tail).  Arm again
 * after each wakeup; false: this driver cannot, poll instead. */
void gpu_set_wake(GpuCode *g, int fd);
bool gpu_arm(GpuCode *g);
/* SENTINEL_GPU_TRACE is set (read once): the trace lines on stderr. */
bool gpu_tracing(void);
/* The kernel's state without waiting: 0 running (or done), else the error. */
int gpu_poll(GpuCode *g, char *err, size_t n);
/* Copy bytes at offset off of the world block to dst while the kernel runs. */
int gpu_read(GpuCode *g, size_t off, void *dst, size_t bytes, char *err, size_t n);
const sn_world *gpu_view(GpuCode *g, char *err, size_t n);
void gpu_close(GpuCode *g);

/* ---- a fleet: one persistent kernel over several targets (gpufleet.c) ----
 *
 * One context and one module for a bundle; each target a member (a
 * GpuCode of its own world, ring, statistics and mapping, opened with
 * gpu_fleet_member and started with gpu_start as usual).  gpu_run adds a
 * member to the running kernel, gpu_halt and gpu_close take it out: the
 * kernel stops between two ticks and is launched again with the new
 * members, which keep their schedules (snrt.h, sn_gpu_fleet).  A member's
 * gpu_poll says how the fleet's kernel is.  Not for a member: gpu_tick,
 * gpu_takeover (a reload of several targets on the GPU is to come).
 *
 * Ownership: the fleet owns its context and module; close its members
 * first, then gpu_fleet_close. */
typedef struct GpuFleet GpuFleet;
int gpu_fleet_open(const Bundle *b, int ordinal, GpuFleet **out, char *err, size_t n);
int gpu_fleet_member(GpuFleet *f, GpuCode **out, char *err, size_t n);
/* Groups and passes so far (snrt.h, sn_fleet_ctl); members now. */
typedef struct GpuFleetInfo {
	unsigned members, groups, group_blocks, grid;
	uint64_t launches, passes, late_passes, max_pass_ns;
} GpuFleetInfo;
void gpu_fleet_info(GpuFleet *f, GpuFleetInfo *out);
/* Alerts wake the host (as gpu_arm for one target): gpu_fleet_seen before
 * the host looks at the members' rings (false: no record came since the
 * last look, and the rings need no look now), then gpu_fleet_arm queues a
 * wait for the next member tick that writes a record, which writes
 * wake_fd.  false: the driver cannot (look at the rings every tick), or no
 * kernel runs. */
bool gpu_fleet_seen(GpuFleet *f);
bool gpu_fleet_arm(GpuFleet *f, int wake_fd);
const char *gpu_fleet_device(const GpuFleet *f);
/* Stop the kernel for good (shutting down: members then close without a
 * launch each). */
int gpu_fleet_halt(GpuFleet *f, char *err, size_t n);
/* Between gpu_fleet_batch(f, true) and (f, false), members join and leave
 * without a launch each: the kernel stops at the first change and starts
 * once, over all of them, at the end (500 targets started one by one
 * stopped and relaunched it 500 times). */
int gpu_fleet_batch(GpuFleet *f, bool on, char *err, size_t n);
/* Stop the kernel now (after its groups' current ticks) and hold it as a
 * batch does: gpu_fleet_batch(f, false) launches it again, members changed
 * or not.  A reload's fleet handover pauses the old fleet so. */
int gpu_fleet_pause(GpuFleet *f, char *err, size_t n);
/* Test hook (eng_test_fault "fleet-kernel-fault"): the fleet's next launch
 * reads its description at an address the GPU has not mapped, a real
 * fault (gpu_lost). */
void gpu_fleet_test_fault(GpuFleet *f);
void gpu_fleet_close(GpuFleet *f);

#endif
