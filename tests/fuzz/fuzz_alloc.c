/* fuzz_alloc.c - the discovery fuzzer's allocator for large blocks
 * (fuzz_alloc.h says why and what ASan still sees). */
#include "fuzz_alloc.h"

#undef malloc
#undef calloc
#undef realloc
#undef free

#include <sanitizer/allocator_interface.h>
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FA_MIN (128u << 10)         /* smaller blocks: malloc's */
#define FA_MAX (64u << 20)          /* larger: malloc's (libFuzzer's -malloc_limit_mb sees them) */
#define FA_REDZONE 4096u            /* poisoned before a block, and at least this much after it */
#define FA_REGION (8ull << 30)      /* address space reserved for the blocks (faulted in as used) */
#define FA_CLASSES 40

typedef struct FaMeta {
	unsigned cls;                /* the chunk is 1 << cls bytes */
	size_t n;                    /* bytes asked for; 0 while free */
	size_t next;                 /* free list of its class: chunk offset + 1 */
} FaMeta;

static char *fa_base;
static size_t fa_top;
static FaMeta fa_meta[FA_REGION / FA_MIN];
static size_t fa_head[FA_CLASSES];  /* each class's free chunks: offset + 1 */
static unsigned long fa_nlive;

unsigned long fa_live(void) { return fa_nlive; }

static int fa_ours(const void *p)
{
	return fa_base && (const char *)p >= fa_base && (const char *)p < fa_base + FA_REGION;
}

void *fa_malloc(size_t n)
{
	if (n < FA_MIN || n > FA_MAX)
		return malloc(n);
	if (!fa_base) {
		void *r = mmap(NULL, FA_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (r == MAP_FAILED)
			return malloc(n);
		fa_base = r;
	}
	unsigned c = 17;
	while ((1ul << c) < n + 2 * FA_REDZONE)
		c++;
	size_t sz = 1ul << c, off;
	if (fa_head[c]) {
		off = fa_head[c] - 1;
		fa_head[c] = fa_meta[off / FA_MIN].next;
	} else {
		off = (fa_top + sz - 1) & ~(sz - 1);
		if (off + sz > FA_REGION)
			return malloc(n);
		fa_top = off + sz;
	}
	fa_meta[off / FA_MIN] = (FaMeta){c, n, 0};
	char *p = fa_base + off + FA_REDZONE;
	__asan_poison_memory_region(fa_base + off, sz);
	__asan_unpoison_memory_region(p, n);
	memset(p, 0xbe, n < 4096 ? n : 4096);   /* as ASan's malloc fills a block's start */
	fa_nlive++;
	return p;
}

void fa_free(void *p)
{
	if (!p || !fa_ours(p)) {
		free(p);
		return;
	}
	size_t off = (size_t)((char *)p - fa_base) - FA_REDZONE;
	FaMeta *m = &fa_meta[off / FA_MIN];
	if (off % FA_MIN || !m->n) {
		fprintf(stderr, "fuzz_alloc: free of %p: not a block, or a block already freed\n", p);
		abort();
	}
	__asan_poison_memory_region(fa_base + off, 1ul << m->cls);
	m->n = 0;
	m->next = fa_head[m->cls];
	fa_head[m->cls] = off + 1;
	fa_nlive--;
}

void *fa_calloc(size_t k, size_t n)
{
	if (n && k > SIZE_MAX / n)
		return NULL;
	if (k * n < FA_MIN || k * n > FA_MAX)
		return calloc(k, n);
	void *p = fa_malloc(k * n);
	if (p)
		memset(p, 0, k * n);
	return p;
}

/* Always moves, as ASan's realloc does: a pointer kept from before is
 * stale (poisoned, until its chunk is handed out again). */
void *fa_realloc(void *p, size_t n)
{
	if (!p)
		return fa_malloc(n);
	size_t old = fa_ours(p) ? fa_meta[((size_t)((char *)p - fa_base) - FA_REDZONE) / FA_MIN].n
				: __sanitizer_get_allocated_size(p);
	if (!fa_ours(p) && (n < FA_MIN || n > FA_MAX))
		return realloc(p, n);
	void *q = fa_malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	fa_free(p);
	return q;
}
