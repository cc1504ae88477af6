/* cudadrv.h - the part of the CUDA driver API the CUDA backend uses.
 *
 * libcuda is loaded at run time with dlopen("libcuda.so.1"), so every
 * binary builds without the CUDA toolkit and runs, saying why it cannot use
 * the GPU, on machines without an NVIDIA driver.  The types and constants
 * below are the driver API's own (cuda.h, stable since CUDA 4); the entry
 * points are looked up under their versioned names (cuMemAlloc_v2, ...).
 */
#ifndef SENTINEL_CUDADRV_H
#define SENTINEL_CUDADRV_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUlinkState_st *CUlinkState;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
/* a kernel's fault: sticky for the whole process (gpu_err, gpu_lost) */
#define CUDA_ERROR_ILLEGAL_ADDRESS 700
#define CUDA_ERROR_LAUNCH_TIMEOUT 702
#define CUDA_ERROR_ASSERT 710
#define CUDA_ERROR_HARDWARE_STACK_ERROR 714
#define CUDA_ERROR_ILLEGAL_INSTRUCTION 715
#define CUDA_ERROR_MISALIGNED_ADDRESS 716
#define CUDA_ERROR_INVALID_ADDRESS_SPACE 717
#define CUDA_ERROR_INVALID_PC 718
#define CUDA_ERROR_LAUNCH_FAILED 719

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY 19
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_IOMEMORY 0x04
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08

#define CU_JIT_INFO_LOG_BUFFER 3
#define CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6

#define CU_JIT_WALL_TIME 2
#define CU_JIT_OPTIMIZATION_LEVEL 7
#define CU_JIT_SPLIT_COMPILE 34
#define CU_JIT_INPUT_PTX 1

#define CU_STREAM_NON_BLOCKING 0x1
#define CU_STREAM_WAIT_VALUE_GEQ 0x0       /* (int32_t)(*addr - value) >= 0 */

typedef void (*CUhostFn)(void *user);
/* Optional (looked up apart; the engine polls without them). */
typedef CUresult (*CuStreamWaitValue32Fn)(CUstream s, CUdeviceptr addr, unsigned value, unsigned flags);
typedef CUresult (*CuLaunchHostFuncFn)(CUstream s, CUhostFn fn, void *user);

/* X(name, "symbol", return, (params)) */
#define CUDRV_FUNCS(X) \
	X(Init, "cuInit", (unsigned flags)) \
	X(DriverGetVersion, "cuDriverGetVersion", (int *v)) \
	X(DeviceGet, "cuDeviceGet", (CUdevice *d, int ordinal)) \
	X(DeviceGetCount, "cuDeviceGetCount", (int *n)) \
	X(DeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice d)) \
	X(DeviceGetAttribute, "cuDeviceGetAttribute", (int *v, int attr, CUdevice d)) \
	X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *c, CUdevice d)) \
	X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice d)) \
	X(CtxSetCurrent, "cuCtxSetCurrent", (CUcontext c)) \
	X(CtxGetCurrent, "cuCtxGetCurrent", (CUcontext *c)) \
	X(CtxSynchronize, "cuCtxSynchronize", (void)) \
	X(CtxCreate, "cuCtxCreate_v2", (CUcontext *c, unsigned flags, CUdevice d)) \
	X(CtxDestroy, "cuCtxDestroy_v2", (CUcontext c)) \
	X(ModuleLoadDataEx, "cuModuleLoadDataEx", (CUmodule *m, const void *image, unsigned n, int *opts, void **vals)) \
	X(ModuleUnload, "cuModuleUnload", (CUmodule m)) \
	X(LinkCreate, "cuLinkCreate_v2", (unsigned n, int *opts, void **vals, CUlinkState *s)) \
	X(LinkAddData, "cuLinkAddData_v2", (CUlinkState s, int type, void *data, size_t size, const char *name, \
					    unsigned n, int *opts, void **vals)) \
	X(LinkComplete, "cuLinkComplete", (CUlinkState s, void **cubin, size_t *size)) \
	X(LinkDestroy, "cuLinkDestroy", (CUlinkState s)) \
	X(ModuleGetFunction, "cuModuleGetFunction", (CUfunction *f, CUmodule m, const char *name)) \
	X(ModuleGetGlobal, "cuModuleGetGlobal_v2", (CUdeviceptr *p, size_t *bytes, CUmodule m, const char *name)) \
	X(MemAlloc, "cuMemAlloc_v2", (CUdeviceptr *p, size_t bytes)) \
	X(MemFree, "cuMemFree_v2", (CUdeviceptr p)) \
	X(MemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr dst, const void *src, size_t bytes)) \
	X(MemcpyDtoH, "cuMemcpyDtoH_v2", (void *dst, CUdeviceptr src, size_t bytes)) \
	X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *dst, CUdeviceptr src, size_t bytes, CUstream s)) \
	X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr dst, const void *src, size_t bytes, CUstream s)) \
	X(MemHostAlloc, "cuMemHostAlloc", (void **p, size_t bytes, unsigned flags)) \
	X(MemFreeHost, "cuMemFreeHost", (void *p)) \
	X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", (CUdeviceptr *d, void *p, unsigned flags)) \
	X(MemHostRegister, "cuMemHostRegister_v2", (void *p, size_t bytes, unsigned flags)) \
	X(MemHostUnregister, "cuMemHostUnregister", (void *p)) \
	X(StreamCreate, "cuStreamCreate", (CUstream *s, unsigned flags)) \
	X(StreamDestroy, "cuStreamDestroy_v2", (CUstream s)) \
	X(StreamQuery, "cuStreamQuery", (CUstream s)) \
	X(StreamSynchronize, "cuStreamSynchronize", (CUstream s)) \
	X(LaunchKernel, "cuLaunchKernel", (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, \
					   unsigned by, unsigned bz, unsigned shmem, CUstream s, void **args, void **extra)) \
	X(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", \
	  (int *n, CUfunction f, int block, size_t shmem)) \
	X(GetErrorName, "cuGetErrorName", (CUresult e, const char **s)) \
	X(GetErrorString, "cuGetErrorString", (CUresult e, const char **s))

typedef struct CuDrv {
	void *lib;
#define X(name, sym, params) CUresult (*name) params;
	CUDRV_FUNCS(X)
#undef X
} CuDrv;

#endif
