/* llview_rt.c - what LLView's rewritten loads call, and the SIMT helpers.
 *
 * The LLView pass (rulec/llview.c) turns every load that may read kernel
 * memory into __llview_load(address, size, &err): translate the kernel
 * virtual address (kx.c), bounds-check it against the mapped RAM, load.  A
 * failure records the first error in the calling metric's flag and yields
 * 0; the metric then returns NaN or a negative error (see kcore.h).
 *
 * Freestanding; compiled for nvptx64 and the host.  Functions named
 * __llview_*, kx_*, simt_* and sn_* are the runtime: LLView never rewrites
 * their loads.
 */
#include "kx.h"
#include "simt.h"

/* The target's RAM as this reader sees it; the loader fills it in. */
kx_mem KX_MEM_VAR;                  /* __sentinel_mem, by the name the engine looks for */
KX_SHARED kx_cur KX_CUR_VAR;        /* GPU: this block's target; both: the tick's read budget (kx.h) */

uint64_t __llview_load(uint64_t va, uint32_t size, int32_t *err);
uint64_t __llview_load_slow(uint64_t va, uint32_t size, int32_t *err);
typedef uint64_t llv_v2 __attribute__((vector_size(16)));
llv_v2 __llview_load16(uint64_t va, int32_t *err);
void __llview_copy(void *dst, uint64_t va, uint64_t n, int32_t *err);

/* The read budget (kx.h, kx_cur): count n reads of the tick in progress.
 * A read never fails for the budget: every lane of a warp must see what
 * the others see (reads that failed once the budget was spent hung the
 * GPU's fleet kernel, most likely a warp-collective metric whose lanes
 * disagreed going different ways into a warp barrier).  The walks ask
 * kx_spent() at each step instead.  On the GPU each
 * lane adds to the world's counter in device memory with a reduction
 * (red.global.add: nothing waits for it); on the host a relaxed load and
 * store, not a locked add (a locked add orders every load after it):
 * exact on one thread, and with [engine] threads > 1 an increment may be
 * lost to another thread's (the count is then low by those, never high). */
static inline __attribute__((always_inline)) void llv_count(uint64_t n)
{
	if (!KX_CUR_VAR.budget)
		return;
	uint64_t *r = KX_CUR_VAR.reads;
#ifdef __NVPTX__
	__atomic_fetch_add(r, n, __ATOMIC_RELAXED);
#else
	__atomic_store_n(r, __atomic_load_n(r, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
#endif
}

#ifndef __NVPTX__
/* kx.h, kx_learn: the lines of the object at `base` a row's reads touched */
static struct {
	uint64_t base;             /* 0: not learning */
	uint32_t n;
	uint16_t line[KX_LEARN_LINES];   /* offsets / 64 */
} llv_learned;

static inline __attribute__((always_inline)) void llv_learn_read(uint64_t va)
{
	if (__builtin_expect(!llv_learned.base, 1))
		return;
	uint64_t d = va - llv_learned.base;
	if (d >= 16384)
		return;
	uint16_t l = (uint16_t)(d >> 6);
	for (uint32_t i = 0; i < llv_learned.n; i++)
		if (llv_learned.line[i] == l)
			return;
	if (llv_learned.n < KX_LEARN_LINES)
		llv_learned.line[llv_learned.n++] = l;
}

void kx_learn(uint64_t base)
{
	if (base)
		llv_learned.n = 0;
	llv_learned.base = base;
}

void kx_prefetch(uint64_t va)
{
	const kx_mem *m = KX_MEM_NOW;
	uint64_t pa = va - m->page_offset_base, o0 = pa - m->r[0].phys, o1 = pa - m->r[1].phys;
	uint64_t p;
	if (va < m->page_offset_base || va - KX_START_KERNEL_MAP < m->image_size)
		return;                          /* only the direct map: slab objects */
	if (m->nranges > 0 && o0 < m->r[0].size)
		p = m->r[0].ptr + o0;
	else if (m->nranges > 1 && o1 < m->r[1].size)
		p = m->r[1].ptr + o1;
	else
		return;                          /* past a range's end a line may be unmapped: harmless, but no use */
	for (uint32_t i = 0; i < llv_learned.n; i++)
		__builtin_prefetch((const void *)(uintptr_t)(p + ((uint64_t)llv_learned.line[i] << 6)));
}
#else
#define llv_learn_read(va) ((void)0)
#endif

int kx_spent(void)
{
	uint64_t b = KX_CUR_VAR.budget;
	return b && __atomic_load_n(KX_CUR_VAR.reads, __ATOMIC_RELAXED) > b;
}

/* Where a read of `size` bytes at va (a power of two up to 16) lies in
 * our mapping on the fast path: va aligned to size, in the direct map or
 * the image, inside the first two RAM ranges, and the mapped copy aligned
 * too (a vmcore's RAM starts where its ELF segment does, 8-aligned at
 * best: a misaligned 16-byte load faults the GPU).  0: the full
 * translation instead.  __llview_load's and __llview_load16's one
 * translation. */
static inline __attribute__((always_inline)) uintptr_t llv_fast(const kx_mem *m, uint64_t va, uint32_t size)
{
	uint64_t img = va - KX_START_KERNEL_MAP;
	int in_img = img < m->image_size;
	uint64_t pa = in_img ? img + m->phys_base : va - m->page_offset_base;
	/* the first two RAM ranges: a guest's RAM below the PCI hole and
	 * above 4 GiB, where most of a big guest's slab objects are */
	uint64_t o0 = pa - m->r[0].phys, o1 = pa - m->r[1].phys;
	int in0 = m->nranges > 0 && o0 < m->r[0].size && m->r[0].size - o0 >= size;
	int in1 = m->nranges > 1 && o1 < m->r[1].size && m->r[1].size - o1 >= size;
	uintptr_t p = (uintptr_t)(in0 ? m->r[0].ptr + o0 : m->r[1].ptr + o1);
	if (!(in0 | in1) || ((va | p) & (size - 1)) || !(in_img || va >= m->page_offset_base))
		return 0;
	return p;
}

/* Most reads are naturally aligned scalars of the direct map (slab
 * objects: tasks, signal, mm) or the kernel image (globals), in the first
 * two RAM ranges: those are two bounds checks and one load, inlined where
 * the metric reads.  As a call, each read waited for the last: a task's
 * row was ~40 host-memory latencies in a row on the GPU.  (Inline, a
 * warp's reads of host memory still go out about one at a time, ~0.8 us
 * each on the H100 (bench/hostread.cu): metrics spread independent reads
 * over lanes, km_gather.)  The rest (vmalloc, other ranges, unaligned
 * reads) goes through the full translation, out of line. */
uint64_t __llview_load(uint64_t va, uint32_t size, int32_t *err)
{
	uintptr_t p = size == 8 || size == 4 || size == 2 || size == 1 ? llv_fast(KX_MEM_NOW, va, size) : 0;
	if (p) {
		llv_count(1);
		llv_learn_read(va);
		switch (size) {
		case 1: return *(const volatile uint8_t *)p;
		case 2: return *(const volatile uint16_t *)p;
		case 4: return *(const volatile uint32_t *)p;
		default: return *(const volatile uint64_t *)p;
		}
	}
	return __llview_load_slow(va, size, err);
}

/* Two adjacent words, 16-byte aligned, in one load (kmetric_int.h,
 * km_pair): on the GPU one request over the bus as an 8-byte read is
 * (ld.v2.u64; bench/hostread.cu measured both at the same rate), so it
 * counts as one read.  Off the fast path, two translated words. */
llv_v2 __llview_load16(uint64_t va, int32_t *err)
{
	uintptr_t p = llv_fast(KX_MEM_NOW, va, 16);
	if (p) {
		llv_count(1);
		llv_learn_read(va);
		return *(const volatile llv_v2 *)p;
	}
	llv_v2 v = {__llview_load_slow(va, 8, err), __llview_load_slow(va + 8, 8, err)};
	return v;
}

__attribute__((noinline)) uint64_t __llview_load_slow(uint64_t va, uint32_t size, int32_t *err)
{
	uint64_t v = 0;
	int e;
	llv_count(1);
	if (size == 8 && !(va & 7))
		e = kx_read64(KX_MEM_NOW, va, &v);
	else if (size <= 8 && (size & (size - 1)) == 0)
		e = kx_read(KX_MEM_NOW, va, &v, size);   /* unaligned or narrow */
	else
		e = KX_EINVAL;
	if (e) {
		if (!*err)
			*err = e;
		return 0;
	}
	return v;
}

__attribute__((noinline)) void __llview_copy(void *dst, uint64_t va, uint64_t n, int32_t *err)
{
	llv_count((n + 7) / 8);
	int e = kx_read(KX_MEM_NOW, va, dst, n);
	if (e) {
		uint8_t *d = (uint8_t *)dst;
		for (uint64_t i = 0; i < n; i++)
			d[i] = 0;
		if (!*err)
			*err = e;
	}
}

#ifdef __NVPTX__
#define FULL 0xffffffffu
unsigned simt_lane(void) { return __nvvm_read_ptx_sreg_laneid(); }
unsigned simt_nlanes(void) { return 32; }
void simt_sync(void) { __nvvm_bar_warp_sync(FULL); }
int simt_any(int v) { return __nvvm_vote_any_sync(FULL, v != 0); }
int simt_all(int v) { return __nvvm_vote_all_sync(FULL, v != 0); }
uint32_t simt_ballot(int v) { return __nvvm_vote_ballot_sync(FULL, v != 0); }

static uint64_t shfl_u64(uint64_t v, int delta)
{
	uint32_t lo = __nvvm_shfl_sync_bfly_i32(FULL, (int)(uint32_t)v, delta, 0x1f);
	uint32_t hi = __nvvm_shfl_sync_bfly_i32(FULL, (int)(uint32_t)(v >> 32), delta, 0x1f);
	return (uint64_t)hi << 32 | lo;
}

static double shfl_f64(double v, int delta)
{
	return __builtin_bit_cast(double, shfl_u64(__builtin_bit_cast(uint64_t, v), delta));
}

uint64_t simt_shfl_u64(uint64_t v, unsigned src)
{
	uint32_t lo = __nvvm_shfl_sync_idx_i32(FULL, (int)(uint32_t)v, (int)src, 0x1f);
	uint32_t hi = __nvvm_shfl_sync_idx_i32(FULL, (int)(uint32_t)(v >> 32), (int)src, 0x1f);
	return (uint64_t)hi << 32 | lo;
}

uint64_t simt_sum_u64(uint64_t v)
{
	for (int d = 16; d; d >>= 1)
		v += shfl_u64(v, d);
	return v;
}

double simt_sum_f64(double v)
{
	for (int d = 16; d; d >>= 1)
		v += shfl_f64(v, d);
	return v;
}

double simt_min_f64(double v)
{
	for (int d = 16; d; d >>= 1)
		v = __builtin_fmin(v, shfl_f64(v, d));
	return v;
}

double simt_max_f64(double v)
{
	for (int d = 16; d; d >>= 1)
		v = __builtin_fmax(v, shfl_f64(v, d));
	return v;
}
#else
unsigned simt_lane(void) { return 0; }
unsigned simt_nlanes(void) { return 1; }
void simt_sync(void) {}
int simt_any(int v) { return v != 0; }
int simt_all(int v) { return v != 0; }
uint32_t simt_ballot(int v) { return v != 0; }
uint64_t simt_sum_u64(uint64_t v) { return v; }
uint64_t simt_shfl_u64(uint64_t v, unsigned src) { (void)src; return v; }
double simt_sum_f64(double v) { return v; }
double simt_min_f64(double v) { return v; }
double simt_max_f64(double v) { return v; }
#endif
