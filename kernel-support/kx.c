/* kx.c - freestanding kernel memory access (see kx.h).
 *
 * Compiled three ways from this one file: for host tools, for the CPU
 * backend, and for NVPTX.  No libc, no recursion, every loop bounded.
 */
#include "kx.h"

#define PTE_PRESENT 0x1ull
#define PTE_PSE     0x80ull

static uint64_t kx_load64(uint64_t ptr)
{
	/* volatile: the target is live, every read must reach memory */
	return *(const volatile uint64_t *)(uintptr_t)ptr;
}

int kx_phys_ptr(const kx_mem *m, uint64_t pa, uint64_t len, uint64_t *ptr)
{
	for (uint32_t i = 0; i < m->nranges && i < KX_MAX_RANGES; i++) {
		const kx_range *r = &m->r[i];
		if (pa >= r->phys && pa - r->phys < r->size && len <= r->size - (pa - r->phys)) {
			*ptr = r->ptr + (pa - r->phys);
			return KX_OK;
		}
	}
	return KX_EFAULT;
}

int kx_phys_read64(const kx_mem *m, uint64_t pa, uint64_t *v)
{
	uint64_t p;
	if (pa & 7)
		return KX_EINVAL;
	int err = kx_phys_ptr(m, pa, 8, &p);
	if (err)
		return err;
	*v = kx_load64(p);
	return KX_OK;
}


void kx_tlb_init(kx_tlb *t)
{
	for (uint32_t i = 0; i < KX_TLB_WAYS; i++)
		t->e[i].tag = 0;
	t->hits = t->misses = t->stale = 0;
}

/* Whether the CPU could use va: the bits above what the top level maps
 * (47 with 4 levels, 56 with 5) all copies of the highest mapped bit.  The
 * walk indexes with the mapped bits alone, so a non-canonical address (a
 * kernel pointer plus RELO_POISON, say) would alias a real one. */
static int kx_canonical(const kx_mem *m, uint64_t va)
{
	uint64_t top = va >> (m->levels == 5 ? 56 : 47);
	return top == 0 || top == (m->levels == 5 ? 0xffull : 0x1ffffull);
}

/* The page-table walk, 4 or 5 levels, with 2 MiB and 1 GiB pages; it also
 * reports where the PUD and PMD entries were, for the cache. */
static int kx_walk_record(const kx_mem *m, uint64_t va, uint64_t *pa, kx_tlb_entry *rec)
{
	uint64_t table = m->pgd;
	uint32_t levels = m->levels == 5 ? 5 : 4;
	if (!kx_canonical(m, va))
		return KX_EFAULT;
	static const uint32_t shift5[5] = {48, 39, 30, 21, 12};
	const uint32_t *shift = levels == 5 ? shift5 : shift5 + 1;
	rec->pud_pa = rec->pmd_pa = 0;
	for (uint32_t l = 0; l < levels; l++) {
		uint64_t slot = table + ((va >> shift[l]) & 511) * 8, e;
		int err = kx_phys_read64(m, slot, &e);
		if (err)
			return err;
		if (!(e & PTE_PRESENT))
			return KX_ENOENT;
		uint32_t left = levels - 1 - l;
		if (left == 2) {
			rec->pud_pa = slot;
			rec->pud = e;
		} else if (left == 1) {
			rec->pmd_pa = slot;
			rec->pmd = e;
		}
		uint64_t next = e & m->pte_mask;
		if ((left == 2 || left == 1) && (e & PTE_PSE)) {
			uint64_t size = 1ull << shift[l];
			*pa = (next & ~(size - 1)) | (va & (size - 1));
			return KX_OK;
		}
		if (left == 0) {
			*pa = next | (va & (KX_PAGE_SIZE - 1));
			return KX_OK;
		}
		table = next;
	}
	return KX_ENOENT;
}

int kx_walk(const kx_mem *m, uint64_t va, uint64_t *pa)
{
	kx_tlb_entry rec;
	return kx_walk_record(m, va, pa, &rec);
}

int kx_translate_cached(const kx_mem *m, kx_tlb *t, uint64_t va, uint64_t *pa)
{
	if (!t || (va >= KX_START_KERNEL_MAP && va - KX_START_KERNEL_MAP < m->image_size) ||
	    (va >= m->page_offset_base && va - m->page_offset_base < m->phys_end))
		return kx_translate(m, va, pa);          /* no walk to save */
	uint64_t tag = (va >> 21) + 1;
	kx_tlb_entry *e = &t->e[(va >> 21) % KX_TLB_WAYS];
	if (e->tag == tag) {
		uint64_t pud, pmd, pte;
		/* the cached entries must still hold what they held */
		if (kx_phys_read64(m, e->pud_pa, &pud) == KX_OK && pud == e->pud) {
			if (pud & PTE_PSE) {                  /* 1 GiB page */
				t->hits++;
				*pa = (pud & m->pte_mask & ~((1ull << 30) - 1)) | (va & ((1ull << 30) - 1));
				return KX_OK;
			}
			if (kx_phys_read64(m, e->pmd_pa, &pmd) == KX_OK && pmd == e->pmd) {
				t->hits++;
				if (pmd & PTE_PSE) {          /* 2 MiB page */
					*pa = (pmd & m->pte_mask & ~((1ull << 21) - 1)) | (va & ((1ull << 21) - 1));
					return KX_OK;
				}
				int err = kx_phys_read64(m, (pmd & m->pte_mask) + ((va >> 12) & 511) * 8, &pte);
				if (err)
					return err;
				if (!(pte & PTE_PRESENT))
					return KX_ENOENT;
				*pa = (pte & m->pte_mask) | (va & (KX_PAGE_SIZE - 1));
				return KX_OK;
			}
		}
		t->stale++;
		e->tag = 0;
	}
	t->misses++;
	kx_tlb_entry rec;
	int err = kx_walk_record(m, va, pa, &rec);
	if (err == KX_OK && rec.pud_pa && (rec.pmd_pa || (rec.pud & PTE_PSE))) {
		*e = rec;
		e->tag = tag;
	}
	return err;
}

int kx_read64_cached(const kx_mem *m, kx_tlb *t, uint64_t va, uint64_t *v)
{
	uint64_t pa;
	if (va & 7)
		return KX_EINVAL;
	int err = kx_translate_cached(m, t, va, &pa);
	return err ? err : kx_phys_read64(m, pa, v);
}

int kx_translate(const kx_mem *m, uint64_t va, uint64_t *pa)
{
	if (va >= KX_START_KERNEL_MAP && va - KX_START_KERNEL_MAP < m->image_size) {  /* the kernel image */
		*pa = va - KX_START_KERNEL_MAP + m->phys_base;
		return KX_OK;
	}
	if (va >= m->page_offset_base && va - m->page_offset_base < m->phys_end) {
		*pa = va - m->page_offset_base;     /* the direct map */
		return KX_OK;
	}
	return kx_walk(m, va, pa);               /* vmalloc, stacks, per-CPU chunks, ... */
}

int kx_read64(const kx_mem *m, uint64_t va, uint64_t *v)
{
	uint64_t pa;
	if (va & 7)
		return KX_EINVAL;
	int err = kx_translate(m, va, &pa);
	return err ? err : kx_phys_read64(m, pa, v);
}

/* Smaller reads load the aligned 8-byte word that holds them (x86-64 is
 * little-endian): one load, never a read past a page. */
static int kx_read_part(const kx_mem *m, uint64_t va, uint32_t size, uint64_t *v)
{
	uint64_t w;
	if (va & (size - 1))
		return KX_EINVAL;
	int err = kx_read64(m, va & ~7ull, &w);
	if (err)
		return err;
	w >>= (va & 7) * 8;
	*v = size == 8 ? w : w & ((1ull << (size * 8)) - 1);
	return KX_OK;
}

int kx_read32(const kx_mem *m, uint64_t va, uint32_t *v)
{
	uint64_t w;
	int err = kx_read_part(m, va, 4, &w);
	if (!err)
		*v = (uint32_t)w;
	return err;
}

int kx_read16(const kx_mem *m, uint64_t va, uint16_t *v)
{
	uint64_t w;
	int err = kx_read_part(m, va, 2, &w);
	if (!err)
		*v = (uint16_t)w;
	return err;
}

int kx_read8(const kx_mem *m, uint64_t va, uint8_t *v)
{
	uint64_t w;
	int err = kx_read_part(m, va, 1, &w);
	if (!err)
		*v = (uint8_t)w;
	return err;
}

int kx_read(const kx_mem *m, uint64_t va, void *dst, uint64_t n)
{
	uint8_t *out = (uint8_t *)dst;
	uint64_t done = 0;
	while (done < n) {
		uint64_t word = (va + done) & ~7ull, w;
		int err = kx_read64(m, word, &w);
		if (err)
			return err;
		for (uint64_t b = (va + done) & 7; b < 8 && done < n; b++)
			out[done++] = (uint8_t)(w >> (b * 8));
	}
	return KX_OK;
}

bool kx_cpu_online(const kx_cpus *c, uint32_t cpu)
{
	return cpu < c->nr_cpu_ids && cpu < KX_MAX_CPUS && (c->online[cpu / 64] >> (cpu % 64) & 1);
}

bool kx_cpu_possible(const kx_cpus *c, uint32_t cpu)
{
	return cpu < c->nr_cpu_ids && cpu < KX_MAX_CPUS && (c->possible[cpu / 64] >> (cpu % 64) & 1);
}

int kx_percpu(const kx_cpus *c, uint64_t sym, uint32_t cpu, uint64_t *va)
{
	if (!kx_cpu_possible(c, cpu))
		return KX_EINVAL;
	*va = sym + c->offset[cpu];
	return KX_OK;
}

void kx_list_begin(kx_list_iter *it, uint64_t head, uint32_t cap)
{
	it->head = head;
	it->cur = head;
	it->n = 0;
	it->cap = cap;
	kx_loop_init(&it->loop, head);
}

int kx_list_next(const kx_mem *m, kx_list_iter *it, uint64_t *node)
{
	uint64_t next, back;
	int err = kx_read64(m, it->cur, &next);          /* cur->next */
	if (err)
		return err;
	if (next == it->head)
		return 0;
	if (++it->n > it->cap)
		return KX_ELOOP;
	err = kx_read64(m, next + 8, &back);              /* next->prev */
	if (err)
		return err;
	if (back != it->cur || kx_loop_seen(&it->loop, next))
		return KX_ELOOP;                          /* torn, corrupt or a cycle */
	it->cur = next;
	*node = next;
	return 1;
}

int kx_seq_begin(const kx_mem *m, uint64_t seq_va, uint32_t *seq)
{
	for (int i = 0; i < 64; i++) {
		int err = kx_read32(m, seq_va, seq);
		if (err)
			return err;
		if (!(*seq & 1))
			return KX_OK;
	}
	return KX_EAGAIN;
}

int kx_seq_retry(const kx_mem *m, uint64_t seq_va, uint32_t seq)
{
	uint32_t now;
	int err = kx_read32(m, seq_va, &now);
	if (err)
		return err;
	return now != seq;
}
