// hostread.cu - how one GPU thread's independent reads of mapped host memory
// overlap, by the kind of load: the question behind __llview_load's fast
// path (kernel-support/llview_rt.c).  A volatile load (what LLVM emits for
// a C volatile read) against ld.relaxed.sys, ld.global.cv and a plain
// load, N independent 8-byte reads per round, one thread, host memory far
// apart so no two share a line.
//
//   nvcc -O2 -o hostread bench/hostread.cu && ./hostread
//   ./hostread ceiling     the whole GPU's read rate, by the kind of read
//
// Prints, per kind and N, the mean time of a round (N reads, then their sum).
#include <cstdio>
#include <cstdint>
#include <cstring>
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

// ---- the ceiling: every SM's threads reading at once ----------------------------------------
//
// How many reads of mapped host memory a second the whole GPU gets, which
// bounds any collection that reads guest RAM through the mapping: each
// thread CROUNDS rounds of 4 independent reads at random places in the
// first `span` bytes of the buffer, over a grid of `warps` warps.  Kinds:
// one 8-byte word; one 16-byte load (ld.v2.u64: two adjacent words in one
// request); two 8-byte loads of one aligned 16 bytes; two of one 32-byte
// sector, 16 bytes apart.  Too many loads in flight, or too wide a span,
// and the rate falls: the sweep prints each, then the best of each kind.
#define CROUNDS 16

__device__ __forceinline__ uint64_t cmix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

template <int KIND>
__global__ void ceiling(const uint64_t *mem, uint64_t mask, uint64_t *out)
{
	uint64_t gt = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x, sum = 0;
	for (int r = 0; r < CROUNDS; r++) {
		uint64_t v[8];
#pragma unroll
		for (int i = 0; i < 4; i++) {
			uint64_t at = (cmix(gt * 1000003u + r * 4 + i) & mask) & ~3ull;   /* 32-byte aligned */
			const volatile uint64_t *p = (const volatile uint64_t *)(mem + at);
			if (KIND == 0) {
				v[2 * i] = p[0];
				v[2 * i + 1] = 0;
			} else if (KIND == 1) {
				uint64_t a, b;
				asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(mem + at));
				v[2 * i] = a;
				v[2 * i + 1] = b;
			} else if (KIND == 2) {
				v[2 * i] = p[0];
				v[2 * i + 1] = p[1];
			} else {
				v[2 * i] = p[0];
				v[2 * i + 1] = p[2];
			}
		}
#pragma unroll
		for (int i = 0; i < 8; i++)
			sum += v[i];
	}
	if (sum == 0x12345)
		out[0] = gt;
}

static float ceiling_once(int k, int blocks, int bs, const uint64_t *dmem, uint64_t mask, uint64_t *dout)
{
	cudaEvent_t a, b;
	cudaEventCreate(&a);
	cudaEventCreate(&b);
	float best = 1e30f;
	for (int rep = 0; rep < 3; rep++) {
		cudaEventRecord(a);
		switch (k) {
		case 0: ceiling<0><<<blocks, bs>>>(dmem, mask, dout); break;
		case 1: ceiling<1><<<blocks, bs>>>(dmem, mask, dout); break;
		case 2: ceiling<2><<<blocks, bs>>>(dmem, mask, dout); break;
		default: ceiling<3><<<blocks, bs>>>(dmem, mask, dout); break;
		}
		cudaEventRecord(b);
		cudaEventSynchronize(b);
		float ms = 0;
		cudaEventElapsedTime(&ms, a, b);
		if (ms < best)
			best = ms;
	}
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return best;
}

static void ceiling_run(const uint64_t *dmem, uint64_t words, uint64_t *dout)
{
	static const char *const what[] = {"one 8-byte read", "one 16-byte read (ld.v2.u64)",
					   "two 8-byte reads, one 16 bytes", "two 8-byte reads, 16 bytes apart"};
	static const int per[] = {1, 1, 2, 2};
	static const int warps[] = {128, 256, 512, 1024, 2048, 8448};
	static const uint64_t spans[] = {64ull << 20, 1ull << 30};
	int bs = 128;
	for (int k = 0; k < 4; k++) {
		double best = 0;
		int bw = 0;
		uint64_t bspan = 0;
		for (unsigned si = 0; si < sizeof spans / sizeof *spans; si++) {
			uint64_t span = spans[si] / 8 < words ? spans[si] : words * 8;
			for (unsigned wi = 0; wi < sizeof warps / sizeof *warps; wi++) {
				int blocks = warps[wi] * 32 / bs;
				float ms = ceiling_once(k, blocks, bs, dmem, span / 8 - 1, dout);
				double loads = (double)blocks * bs * CROUNDS * 4 * per[k];
				double rate = loads / ms / 1e3;
				printf("ceiling  %-34s %5d warps, %4llu MiB: %7.1f M loads/s\n", what[k], warps[wi],
				       (unsigned long long)(span >> 20), rate);
				if (rate > best) {
					best = rate;
					bw = warps[wi];
					bspan = span;
				}
			}
		}
		printf("ceiling  %-34s best %7.1f M loads/s, %7.1f M words/s (%d warps, %llu MiB)\n", what[k], best,
		       best / per[k] * (k ? 2 : 1), bw, (unsigned long long)(bspan >> 20));
	}
}

int main(int argc, char **argv)
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
	if (argc > 1 && !strcmp(argv[1], "ceiling")) {
		printf("hostread: %s, the whole GPU, %d rounds of 4 reads a thread\n", p.name, CROUNDS);
		ceiling_run(dmem, words, dout);
		return cudaGetLastError() != cudaSuccess;
	}
	printf("hostread: %s, one thread, %d rounds\n", p.name, ROUNDS);
#define KINDS(N) \
	run<0, N>("volatile", dmem, words, dout, dns); \
	run<1, N>("ld.relaxed.sys", dmem, words, dout, dns); \
	run<2, N>("ld.global.cv", dmem, words, dout, dns); \
	run<3, N>("ld.global.cg", dmem, words, dout, dns);
	KINDS(1) KINDS(16)
	return cudaGetLastError() != cudaSuccess;
}
