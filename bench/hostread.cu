// hostread.cu - how one GPU thread's independent reads of mapped host memory
// overlap, by the kind of load: the question behind __llview_load's fast
// path (kernel-support/llview_rt.c).  A volatile load (what LLVM emits for
// a C volatile read) against ld.relaxed.sys, ld.global.cv and a plain
// load, N independent 8-byte reads per round, one thread, host memory far
// apart so no two share a line.
//
//   nvcc -O2 -o hostread bench/hostread.cu && ./hostread
//
// Prints, per kind and N, the mean time of a round (N reads, then their sum).
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define ROUNDS 2000

template <int KIND>
__device__ __forceinline__ uint64_t ld(const uint64_t *p)
{
	uint64_t v;
	if (KIND == 0)
		v = *(const volatile uint64_t *)p;
	else if (KIND == 1)
		asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
	else if (KIND == 2)
		asm volatile("ld.global.cv.u64 %0, [%1];" : "=l"(v) : "l"(p));
	else
		asm("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p));
	return v;
}

template <int KIND, int N>
__global__ void rounds(const uint64_t *mem, uint64_t words, uint64_t stride, uint64_t *out, uint64_t *ns)
{
	uint64_t sum = 0, t0, t1;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t v[N];
		uint64_t base = (uint64_t)r * 7919 * 512 + threadIdx.x * 4096 * 64;
#pragma unroll
		for (int i = 0; i < N; i++)
			v[i] = ld<KIND>(mem + (base + (uint64_t)i * (stride / 8)) % words);
#pragma unroll
		for (int i = 0; i < N; i++)
			sum += v[i];
		if (sum == 0x12345)       /* a use each round: the loads cannot be hoisted out */
			out[1] = r;
	}
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
	out[threadIdx.x + 2] = sum;
	if (threadIdx.x == 0)
		*ns = t1 - t0;
}

template <int KIND, int N>
static void run(const char *name, const uint64_t *dmem, uint64_t words, uint64_t *dout, uint64_t *dns)
{
	static const struct { int lanes; uint64_t stride; const char *what; } v[] = {
		{1, 4096, "1 lane, reads a page apart"}, {1, 64, "1 lane, reads a line apart"},
		{1, 8, "1 lane, adjacent words"}, {32, 64, "32 lanes, each a line apart"}};
	for (unsigned k = 0; k < sizeof v / sizeof *v; k++) {
		uint64_t ns = 0;
		rounds<KIND, N><<<1, v[k].lanes>>>(dmem, words, v[k].stride, dout, dns);
		cudaMemcpy(&ns, dns, 8, cudaMemcpyDeviceToHost);
		printf("%-16s N=%2d  %-28s %7.2f us a round  %6.3f us a read (a lane)\n", name, N, v[k].what,
		       ns / 1e3 / ROUNDS, ns / 1e3 / ROUNDS / N);
	}
}

int main(void)
{
	size_t bytes = (size_t)1 << 30;
	uint64_t *h, *dmem, *dout, *dns;
	if (cudaHostAlloc((void **)&h, bytes, cudaHostAllocMapped) != cudaSuccess) {
		fprintf(stderr, "hostread: cudaHostAlloc failed: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	for (size_t i = 0; i < bytes / 8; i += 512)
		h[i] = i;
	cudaHostGetDevicePointer((void **)&dmem, h, 0);
	cudaMalloc((void **)&dout, 64 * 8);
	cudaMalloc((void **)&dns, 8);
	uint64_t words = bytes / 8;
	cudaDeviceProp p;
	cudaGetDeviceProperties(&p, 0);
	printf("hostread: %s, one thread, %d rounds\n", p.name, ROUNDS);
#define KINDS(N) \
	run<0, N>("volatile", dmem, words, dout, dns); \
	run<1, N>("ld.relaxed.sys", dmem, words, dout, dns); \
	run<2, N>("ld.global.cv", dmem, words, dout, dns); \
	run<3, N>("ld.global.cg", dmem, words, dout, dns);
	KINDS(1) KINDS(16)
	return cudaGetLastError() != cudaSuccess;
}
