/* kx.h - the monitored kernel's memory, read from outside it.
 *
 * Freestanding C (no libc): the same kx.c compiles for the host tools, the
 * CPU backend and, through clang, for NVPTX.  Everything a reader needs to
 * turn a kernel virtual address into bytes: bounds-checked physical access
 * over the mapped RAM ranges, the direct map, the kernel text mapping, a
 * 4/5-level page-table walker with 2 MiB and 1 GiB pages, per-CPU
 * addressing, checked list walks and seqcount retries.  Loops are bounded;
 * nothing recurses; a bad address is an error code, never a fault.
 *
 * Ownership: a kx_mem describes mappings it does not own (the memory source
 * owns them); it is plain data, copyable to a GPU as is.
 */
#ifndef SENTINEL_KX_H
#define SENTINEL_KX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Errors: negative errno values, as the rest of Sentinel uses inside. */
#define KX_OK       0
#define KX_ENOENT  (-2)   /* address not mapped by the kernel's page tables */
#define KX_EAGAIN  (-11)  /* a seqcount kept changing: the value is being written */
#define KX_EFAULT  (-14)  /* physical address outside the mapped RAM */
#define KX_EINVAL  (-22)  /* misaligned or impossible request */
#define KX_ERANGE  (-34)  /* a value outside what the kernel can hold */
#define KX_ELOOP   (-40)  /* a list that is corrupt, cyclic or longer than its cap */
#define KX_EBUDGET (-122) /* a walk stopped: the tick read past its target's read budget (kx_cur) */

#define KX_MAX_RANGES 16
#define KX_MAX_CPUS   1024
#define KX_START_KERNEL_MAP 0xffffffff80000000ull
#define KX_PAGE_SIZE  4096ull

/* One physically contiguous piece of the target's RAM and where it is
 * mapped for the reader (a host pointer, or a GPU pointer, as an integer). */
typedef struct kx_range {
	uint64_t phys, size;
	uint64_t ptr;
} kx_range;

typedef struct kx_mem {
	kx_range r[KX_MAX_RANGES];
	uint32_t nranges;
	uint32_t levels;            /* page-table levels: 4 or 5 */
	uint64_t phys_end;          /* highest mapped physical address + 1 */
	uint64_t page_offset_base;  /* start of the direct map */
	uint64_t phys_base;         /* physical address the kernel image was loaded at, minus its link offset */
	uint64_t pgd;               /* physical address of init_top_pgt */
	uint64_t image_size;        /* KERNEL_IMAGE_SIZE: the image mapping's length; modules follow it */
	uint64_t pte_mask;          /* physical-address bits of a page-table entry (SME bit cleared) */
} kx_mem;

/* Per-CPU layout, filled by discovery. */
typedef struct kx_cpus {
	uint32_t nr_cpu_ids;
	uint32_t _pad;
	uint64_t offset[KX_MAX_CPUS];      /* __per_cpu_offset[] */
	uint64_t online[KX_MAX_CPUS / 64];  /* bitmap: __cpu_online_mask */
	uint64_t possible[KX_MAX_CPUS / 64];
} kx_cpus;

/* Physical access. */
int kx_phys_ptr(const kx_mem *m, uint64_t pa, uint64_t len, uint64_t *ptr);
int kx_phys_read64(const kx_mem *m, uint64_t pa, uint64_t *v);

/* Virtual -> physical for kernel addresses. */
int kx_translate(const kx_mem *m, uint64_t va, uint64_t *pa);
/* The same through the page tables only (no direct-map or text shortcut). */
int kx_walk(const kx_mem *m, uint64_t va, uint64_t *pa);

/* A translation cache that cannot serve stale data.
 *
 * It remembers, per 2 MiB region, where the kernel's PUD and PMD entries for
 * that region live and what they held.  A hit re-reads those entries and
 * uses the cache only if both still hold the same values; then it reads the
 * PTE (or not, for a 2 MiB page).  So a hit costs 1-3 dependent loads
 * instead of 4-5, and any change the kernel makes to the mapping -- a PTE
 * rewritten, a PTE or PMD page freed and its entry cleared or pointed
 * elsewhere -- is seen on the next read.  What makes the entry locations
 * safe to keep: x86-64 never frees the PUD pages of the kernel half (their
 * P4D/PUD pages are preallocated or kept for the kernel's lifetime); PMD and
 * PTE pages can be freed (huge ioremap), which the value checks catch.
 * One kx_tlb per reader (a CPU thread, a GPU warp); it holds no pointers. */
#define KX_TLB_WAYS 64

typedef struct kx_tlb_entry {
	uint64_t tag;          /* va >> 21, plus 1 (0 = empty) */
	uint64_t pud_pa, pud;  /* where the PUD entry is and what it held */
	uint64_t pmd_pa, pmd;  /* same for the PMD entry (pmd_pa 0: 1 GiB page) */
} kx_tlb_entry;

typedef struct kx_tlb {
	kx_tlb_entry e[KX_TLB_WAYS];
	uint64_t hits, misses, stale;
} kx_tlb;

void kx_tlb_init(kx_tlb *t);
/* kx_translate through the cache (t may be NULL: no cache). */
int kx_translate_cached(const kx_mem *m, kx_tlb *t, uint64_t va, uint64_t *pa);
int kx_read64_cached(const kx_mem *m, kx_tlb *t, uint64_t va, uint64_t *v);

/* Naturally aligned scalar reads of kernel virtual addresses. */
int kx_read64(const kx_mem *m, uint64_t va, uint64_t *v);
int kx_read32(const kx_mem *m, uint64_t va, uint32_t *v);
int kx_read16(const kx_mem *m, uint64_t va, uint16_t *v);
int kx_read8(const kx_mem *m, uint64_t va, uint8_t *v);
/* Copy n bytes starting at va (any alignment) into dst. */
int kx_read(const kx_mem *m, uint64_t va, void *dst, uint64_t n);

/* Per-CPU: the address of per-CPU symbol sym on cpu. */
int kx_percpu(const kx_cpus *c, uint64_t sym, uint32_t cpu, uint64_t *va);
bool kx_cpu_online(const kx_cpus *c, uint32_t cpu);
bool kx_cpu_possible(const kx_cpus *c, uint32_t cpu);

/* The translation runtime's memory description (llview_rt.c): one global
 * a loaded bundle, filled by the engine (engine/cpu.c, engine/gpu.c find
 * it by its name, KX_MEM_SYM) and read by every load LLView rewrote. */
#define KX_MEM_VAR __sentinel_mem
#define KX_STR_(x) #x
#define KX_STR(x) KX_STR_(x)
#define KX_MEM_SYM KX_STR(KX_MEM_VAR)
/* The relocation table of a loaded bundle (rulec/core.c makes it, the
 * engine fills it) */
#define KX_RELO_VAR __sentinel_relo
#define KX_RELO_SYM KX_STR(KX_RELO_VAR)

/* Which target a GPU block reads now, and what its tick may still read.
 * The fleet kernel (snrt.c, sn_gpu_fleet) runs several targets' ticks,
 * one after another on each group of blocks; before each it points its
 * blocks at that target's memory description and relocation table.  Per
 * block, in shared memory (NVPTX address space 3): translated loads
 * (llview_rt.c) read `mem`, and the GPU code's relocation loads
 * (rulec/core.c) read `relo`.  The one-target kernels point it at
 * KX_MEM_VAR and the relocation global.  On the host each loaded bundle
 * has one target, and those globals are read directly: the x86-64 code
 * has no such indirection; there KX_CUR_VAR is a plain global that only
 * the budget uses.
 *
 * The read budget: every translated read of the tick in progress counts
 * in *reads (the world's counter, sn_world.reads: all the tick's readers
 * of that target count there).  Once the count has passed `budget`,
 * kx_spent() says so, and every walk of a list or tree (kmetric_*.c: the
 * task list and the PID tree, cgroups, mounts, block devices,
 * interfaces, a process's threads) stops at its next step with
 * KX_EBUDGET: the tick ends near its budget however long the guest made
 * its lists, and a hostile or corrupt guest is cut off and reported
 * (sn_stats.over_budget), not waited on.  The task table's rows stop too
 * (snrt.c, sn_tp_cut): a row not begun by then is unknown for the tick.
 * What is no walk (a metric's few words, a row of the object tables)
 * reads on: the tables bound it.  A read itself never fails for the
 * budget: the lanes of a warp must all see the same values (a
 * warp-collective metric whose lanes disagreed would go different ways
 * into a warp barrier).  budget 0: no budget and no count (tools that read
 * once, tests). */
typedef struct kx_cur {
	const kx_mem *mem;
	const uint64_t *relo;
	uint64_t *reads;
	uint64_t budget;
} kx_cur;
#define KX_CUR_VAR __sentinel_cur
#define KX_CUR_SYM KX_STR(KX_CUR_VAR)
/* The tick has read more than its budget (llview_rt.c); 0 without one. */
int kx_spent(void);

#ifndef __NVPTX__
/* The host's prefetch of a task's row (llview_rt.c; the CPU backend, one
 * copy of the code a thread, so a thread's own).  A row's reads of its
 * task_struct are a few scattered cache lines, each a miss that the next
 * waits behind: the host's core has one row in flight where a GPU warp
 * has 32.  kx_learn(base) records the lines of [base, base + 16 KiB) that
 * the reads until kx_learn(0) touch (at most KX_LEARN_LINES); kx_prefetch
 * (va) then asks the core for those lines of another object at va, rows
 * ahead, so that its misses overlap the current row's.  A prefetch reads
 * nothing and cannot fault: a wrong guess costs a wasted line. */
#define KX_LEARN_LINES 24u
void kx_learn(uint64_t base);
void kx_prefetch(uint64_t va);
#endif
#ifdef __NVPTX__
#define KX_SHARED __attribute__((address_space(3)))
extern KX_SHARED kx_cur KX_CUR_VAR;
#define KX_MEM_NOW (KX_CUR_VAR.mem)
#else
#define KX_SHARED
extern kx_cur KX_CUR_VAR;
#define KX_MEM_NOW (&KX_MEM_VAR)
#endif

/* A walk's loop check (Brent's): give it every node the walk reaches, in
 * order; true once a node comes round again.  A list or tree the kernel
 * keeps never does that; a cycle that does not pass the head does, made by
 * corruption or by a hostile guest (two nodes whose next and prev agree),
 * and is caught within three times its start plus its length, instead of
 * at the walk's cap (a million steps for some).  No reads; the walk's
 * nodes may be a function of more state than the node (a depth), as long
 * as that state is finite: a walk that never ends still repeats. */
typedef struct kx_loop {
	uint64_t mark;
	uint32_t lam, power;
} kx_loop;

static inline void kx_loop_init(kx_loop *l, uint64_t start)
{
	l->mark = start;
	l->lam = 0;
	l->power = 1;
}

static inline bool kx_loop_seen(kx_loop *l, uint64_t node)
{
	if (node == l->mark)
		return true;
	if (++l->lam == l->power) {
		l->mark = node;
		l->power <<= 1;
		l->lam = 0;
	}
	return false;
}

/* A checked walk of a kernel list_head ring: each step verifies that
 * next->prev points back and that the walk has not come round (kx_loop),
 * and the walk stops with KX_ELOOP after cap nodes. */
typedef struct kx_list_iter {
	uint64_t head, cur;
	uint32_t n, cap;
	kx_loop loop;
} kx_list_iter;

void kx_list_begin(kx_list_iter *it, uint64_t head, uint32_t cap);
/* 1: *node is the next list_head; 0: back at the head; < 0: error. */
int kx_list_next(const kx_mem *m, kx_list_iter *it, uint64_t *node);

/* Seqcount: read a u32 sequence; an odd value means a writer is active. */
int kx_seq_begin(const kx_mem *m, uint64_t seq_va, uint32_t *seq);
/* 1: the sequence moved (retry the read), 0: the data read is consistent. */
int kx_seq_retry(const kx_mem *m, uint64_t seq_va, uint32_t seq);

#endif
