/* fuzz_alloc.h - the discovery fuzzer's allocator for large blocks,
 * force-included (-include) into kernel-support's sources and
 * fuzz_discover.c when the Makefile builds build/fuzz_discover.
 *
 * Why: ASan maps every block over 128 KiB afresh (and unmaps it when it
 * leaves the quarantine), so each run faults in every page of the tables
 * discovery builds (kallsyms' 16 MiB, the modules' symbols that realloc
 * copies once per module, the printk rings' copies), and a page fault
 * costs 30 to 40 us on the 2-core development VM (nested paging): a third
 * of a run.  Here a block of 128 KiB or more (up to FA_MAX) comes from a
 * few mappings kept per size class (powers of two), faulted in once; the
 * parsers' code is the same, only where their memory comes from differs.
 *
 * What ASan still sees: a block is poisoned from its end to its class's end
 * (at least FA_REDZONE bytes past it) and FA_REDZONE bytes before it, so an
 * overflow either way is a finding; a freed block is poisoned whole until
 * it is handed out again (a use after free is a finding until then, not
 * after: no quarantine).  A leak: fa_live() counts the blocks out, which
 * the fuzzer compares before and after each run (LeakSanitizer does not
 * see these).  Larger blocks (over FA_MAX) go to malloc, where libFuzzer's
 * -malloc_limit_mb sees them; so do smaller ones.  Not thread-safe: the
 * fuzzer runs one thread.
 */
#ifndef SENTINEL_FUZZ_ALLOC_H
#define SENTINEL_FUZZ_ALLOC_H

#include <stddef.h>   /* no more: included first, before a file's _GNU_SOURCE (the C library's
			* headers, included after, declare fa_malloc ... as they would malloc) */

void *fa_malloc(size_t n);
void *fa_calloc(size_t k, size_t n);
void *fa_realloc(void *p, size_t n);
void fa_free(void *p);
unsigned long fa_live(void);

#define malloc(n) fa_malloc(n)
#define calloc(k, n) fa_calloc(k, n)
#define realloc(p, n) fa_realloc(p, n)
#define free(p) fa_free(p)

#endif
