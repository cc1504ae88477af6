/* Unit tests for the freestanding kernel-memory reader (kx.c) on
 * synthetic memory: page tables built by hand, then broken on purpose.
 * Whatever the bytes, every call must return an error code, never crash
 * (this runs under ASan/UBSan) and never loop without bound. */
#include "kx.h"
#include "ktarget.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures, passes;

#define CHECK(name, cond) do { \
	if (cond) { passes++; printf("PASS kx/%s\n", name); } \
	else { failures++; printf("FAIL kx/%s (%s:%d: %s)\n", name, __FILE__, __LINE__, #cond); } \
} while (0)

#define RAM_SIZE (16u << 20)
#define POB 0xffff888000000000ull     /* direct map */
#define PHYS_BASE 0x1000000ull
#define P 0x1ull                       /* present */
#define PS 0x80ull                     /* large page */

static uint8_t *ram;
static kx_mem M;

static void put64(uint64_t pa, uint64_t v) { memcpy(ram + pa, &v, 8); }

static void setup(uint32_t levels)
{
	memset(ram, 0, RAM_SIZE);
	memset(&M, 0, sizeof M);
	M.r[0] = (kx_range){0, RAM_SIZE, (uint64_t)(uintptr_t)ram};
	M.nranges = 1;
	M.phys_end = RAM_SIZE;
	M.levels = levels;
	M.page_offset_base = POB;
	M.phys_base = PHYS_BASE;
	M.pgd = 0x1000;
	M.pte_mask = 0x000ffffffffff000ull;
	M.image_size = 1ull << 30;
}

/* Map va to pa with a page of the given size (4K, 2M or 1G), building the
 * tables from a bump allocator starting at 0x2000. */
static uint64_t next_table = 0x2000;
static void map(uint64_t va, uint64_t pa, uint64_t size)
{
	static const uint32_t shift5[5] = {48, 39, 30, 21, 12};
	const uint32_t *sh = M.levels == 5 ? shift5 : shift5 + 1;
	uint64_t table = M.pgd;
	for (uint32_t l = 0; l < M.levels; l++) {
		uint64_t slot = table + ((va >> sh[l]) & 511) * 8, e;
		if (size == (1ull << sh[l])) {
			put64(slot, (pa & ~(size - 1)) | P | (size > 4096 ? PS : 0));
			return;
		}
		memcpy(&e, ram + slot, 8);
		if (!(e & P)) {
			e = next_table | P;
			next_table += 0x1000;
			put64(slot, e);
		}
		table = e & M.pte_mask;
	}
}

static void test_paths(uint32_t levels)
{
	char name[64];
	uint64_t pa, v;
	setup(levels);
	next_table = 0x2000;
	const uint64_t vm = levels == 5 ? 0xffa0000000000000ull : 0xffffc90000000000ull;
	map(vm + 0x5000, 0x300000, 4096);             /* 4 KiB page */
	map(vm + 0x40000000ull, 0x400000, 2u << 20);  /* 2 MiB page */
	map(vm + 0x80000000ull, 0x40000000ull, 1u << 30); /* 1 GiB page, beyond RAM */
	map(0xffffffffc0001000ull, 0x500000, 4096);   /* a module page, above the image */
	put64(0x300008, 0x1122334455667788ull);
	put64(0x500010, 77);
	put64(0x400000 + 0x1234 * 8, 42);
#define NAME(s) (snprintf(name, sizeof name, "%d-level %s", levels, s), name)
	CHECK(NAME("direct map"), kx_translate(&M, POB + 0x3008, &pa) == 0 && pa == 0x3008);
	CHECK(NAME("kernel text"), kx_translate(&M, 0xffffffff81000010ull, &pa) == 0 &&
	      pa == 0x1000010 + PHYS_BASE);
	CHECK(NAME("module area is walked, not offset"), kx_read64(&M, 0xffffffffc0001010ull, &v) == 0 && v == 77);
	CHECK(NAME("4K walk"), kx_read64(&M, vm + 0x5008, &v) == 0 && v == 0x1122334455667788ull);
	uint32_t w32;
	uint16_t w16;
	uint8_t w8;
	CHECK(NAME("sub-word reads"), kx_read32(&M, vm + 0x500c, &w32) == 0 && w32 == 0x11223344 &&
	      kx_read16(&M, vm + 0x5008, &w16) == 0 && w16 == 0x7788 && kx_read8(&M, vm + 0x500f, &w8) == 0 && w8 == 0x11);
	CHECK(NAME("2M page"), kx_read64(&M, vm + 0x40000000ull + 0x1234 * 8, &v) == 0 && v == 42);
	CHECK(NAME("1G page outside RAM is EFAULT"), kx_read64(&M, vm + 0x80000000ull, &v) == KX_EFAULT);
	CHECK(NAME("unmapped is ENOENT"), kx_read64(&M, vm + 0x9000, &v) == KX_ENOENT);
	CHECK(NAME("misaligned is EINVAL"), kx_read64(&M, vm + 0x5004, &v) == KX_EINVAL);
	/* a failed relocation's offset (RELO_POISON, bit 62) added to a
	 * pointer: no address, not the page it would alias in the walk */
	kx_tlb tlb;
	kx_tlb_init(&tlb);
	CHECK(NAME("non-canonical is EFAULT, not an alias"),
	      kx_read64(&M, vm + 0x5008 + (1ull << 62), &v) == KX_EFAULT &&
	      kx_read64(&M, 0xffffffffc0001010ull + (1ull << 62), &v) == KX_EFAULT &&
	      kx_read64(&M, (vm + 0x5008) & ~(1ull << 63), &v) == KX_EFAULT &&
	      kx_read64_cached(&M, &tlb, vm + 0x5008 + (1ull << 62), &v) == KX_EFAULT &&
	      kx_read64_cached(&M, &tlb, vm + 0x5008, &v) == 0 && v == 0x1122334455667788ull);
	CHECK(NAME("direct map past RAM is an error"), kx_read64(&M, POB + RAM_SIZE + 0x1000, &v) < 0);
	uint8_t buf[16];
	CHECK(NAME("read across into unmapped page fails"), kx_read(&M, vm + 0x5ff8, buf, 16) == KX_ENOENT);
	CHECK(NAME("physical bounds"), kx_phys_read64(&M, RAM_SIZE - 8, &v) == 0 &&
	      kx_phys_read64(&M, RAM_SIZE, &v) == KX_EFAULT && kx_phys_read64(&M, UINT64_MAX - 7, &v) == KX_EFAULT);
	/* a page-table entry pointing outside RAM */
	put64(M.pgd + ((vm >> (levels == 5 ? 48 : 39)) & 511) * 8, 0x7ff000000000ull | P);
	CHECK(NAME("table outside RAM is EFAULT"), kx_read64(&M, vm + 0x5008, &v) == KX_EFAULT);
#undef NAME
}

/* Garbage page tables: random bytes everywhere, many random addresses. */
static void test_garbage(void)
{
	setup(4);
	srand(1234);
	for (size_t i = 0; i < RAM_SIZE; i++)
		ram[i] = (uint8_t)rand();
	int ok = 0, err = 0, bad = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t va = ((uint64_t)rand() << 40) ^ ((uint64_t)rand() << 20) ^ (uint64_t)rand();
		va |= 0xffff800000000000ull;
		va &= ~7ull;
		uint64_t pa, v;
		int e = kx_walk(&M, va, &pa);
		if (e == 0) {
			e = kx_phys_read64(&M, pa & ~7ull, &v);
			ok += e == 0;
		}
		if (e) {
			err++;
			bad += !(e == KX_ENOENT || e == KX_EFAULT || e == KX_EINVAL);
		}
	}
	CHECK("garbage page tables give only error codes", bad == 0 && ok + err == 200000 && err > 0);
	M.levels = 5;
	for (int i = 0; i < 50000; i++) {
		uint64_t pa, va = ((uint64_t)rand() << 33) ^ (uint64_t)rand();
		int e = kx_walk(&M, va, &pa);
		bad += e != 0 && !(e == KX_ENOENT || e == KX_EFAULT);
	}
	CHECK("garbage 5-level tables give only error codes", bad == 0);
}

/* Lists: a good ring, a cycle that skips the head, a torn prev, no end. */
static void test_lists(void)
{
	setup(4);
	const uint64_t head = 0x10000;      /* physical; read through the direct map */
	uint64_t node[4] = {0x11000, 0x12000, 0x13000, 0x14000};
	put64(head, node[0]);
	put64(head + 8, node[3]);
	for (int i = 0; i < 4; i++) {
		put64(node[i], i < 3 ? node[i + 1] : head);
		put64(node[i] + 8, i ? node[i - 1] : head);
	}
	kx_list_iter it;
	uint64_t n;
	int r, count = 0;
	kx_list_begin(&it, POB + head, 100);
	/* the ring holds physical addresses; translate them as the kernel would */
	for (int i = 0; i < 4; i++) {
		put64(node[i], POB + (i < 3 ? node[i + 1] : head));
		put64(node[i] + 8, POB + (i ? node[i - 1] : head));
	}
	put64(head, POB + node[0]);
	put64(head + 8, POB + node[3]);
	while ((r = kx_list_next(&M, &it, &n)) > 0)
		count++;
	CHECK("list ring of 4", r == 0 && count == 4);
	kx_list_begin(&it, POB + head, 2);
	while ((r = kx_list_next(&M, &it, &n)) > 0)
		;
	CHECK("list longer than its cap is ELOOP", r == KX_ELOOP);
	put64(node[3], POB + node[1]);           /* cycle 1 -> 2 -> 3 -> 1, head never again */
	kx_list_begin(&it, POB + head, 1000000);
	count = 0;
	while ((r = kx_list_next(&M, &it, &n)) > 0)
		count++;
	CHECK("cycle that skips the head is caught by next->prev", r == KX_ELOOP && count < 5);
	put64(node[1] + 8, POB + node[3]);       /* and 1's prev agrees: only the loop check sees it */
	kx_list_begin(&it, POB + head, 1000000);
	count = 0;
	while ((r = kx_list_next(&M, &it, &n)) > 0)
		count++;
	CHECK("cycle whose prev pointers agree is ELOOP within a few laps, not at the cap", r == KX_ELOOP && count < 12);
	put64(node[1] + 8, POB + node[0]);
	put64(node[3], POB + head);
	put64(node[2] + 8, POB + 0x99000);       /* torn prev */
	kx_list_begin(&it, POB + head, 100);
	while ((r = kx_list_next(&M, &it, &n)) > 0)
		;
	CHECK("torn prev pointer is ELOOP", r == KX_ELOOP);
	put64(node[1], POB + RAM_SIZE * 4);      /* next points outside RAM */
	kx_list_begin(&it, POB + head, 100);
	while ((r = kx_list_next(&M, &it, &n)) > 0)
		;
	CHECK("next outside RAM is a read error", r < 0 && r != KX_ELOOP);
}

/* Brent's check alone: no false alarm on distinct nodes, a cycle of any
 * length found within three times its start plus its length */
static void test_loop_check(void)
{
	kx_loop l;
	int bad = 0;
	kx_loop_init(&l, 0);
	for (uint64_t i = 1; i < 100000; i++)
		bad += kx_loop_seen(&l, i);
	CHECK("loop check: 100,000 distinct nodes, no alarm", bad == 0);
	for (uint64_t start = 0; start < 40; start += 13)
		for (uint64_t len = 1; len < 300; len += 37) {
			kx_loop_init(&l, 1000);
			uint64_t i = 0;
			while (i < 100000 && !kx_loop_seen(&l, i < start ? i : start + (i - start) % len))
				i++;
			bad += i >= 3 * (start + len);
		}
	CHECK("loop check: every cycle found within three times its start plus its length", bad == 0);
}

static void test_seqcount(void)
{
	setup(4);
	uint32_t s;
	put64(0x20000, 7);                        /* odd: a writer holds it */
	CHECK("seqcount held by a writer is EAGAIN", kx_seq_begin(&M, POB + 0x20000, &s) == KX_EAGAIN);
	put64(0x20000, 8);
	CHECK("seqcount even begins", kx_seq_begin(&M, POB + 0x20000, &s) == 0 && s == 8);
	CHECK("seqcount unchanged: no retry", kx_seq_retry(&M, POB + 0x20000, s) == 0);
	put64(0x20000, 10);
	CHECK("seqcount moved: retry", kx_seq_retry(&M, POB + 0x20000, s) == 1);
}

/* Physical address of the page-table entry that maps va, `up` levels above
 * the PTE (0: the PTE, 1: the PMD entry). */
static uint64_t slot(uint64_t va, uint32_t up)
{
	static const uint32_t sh5[5] = {48, 39, 30, 21, 12};
	const uint32_t *sh = M.levels == 5 ? sh5 : sh5 + 1;
	uint64_t tbl = M.pgd, e;
	for (uint32_t l = 0; l + 1 + up < M.levels; l++) {
		memcpy(&e, ram + tbl + ((va >> sh[l]) & 511) * 8, 8);
		tbl = e & M.pte_mask;
	}
	return tbl + ((va >> sh[M.levels - 1 - up]) & 511) * 8;
}

/* The cache must never serve a translation the kernel has changed. */
static void test_tlb(uint32_t levels)
{
	char name[80];
	uint64_t v;
	kx_tlb *t = malloc(sizeof *t);
	setup(levels);
	next_table = 0x2000;
	kx_tlb_init(t);
	const uint64_t vm = levels == 5 ? 0xffa0000000000000ull : 0xffffc90000000000ull;
	map(vm + 0x5000, 0x300000, 4096);
	map(vm + 0x6000, 0x301000, 4096);
	map(vm + 0x40000000ull, 0x400000, 2u << 20);
	put64(0x300000, 1);
	put64(0x301000, 2);
	put64(0x302000, 3);
	put64(0x400000, 4);
	put64(0x600000, 5);
#define NAME(s) (snprintf(name, sizeof name, "%d-level tlb: %s", levels, s), name)
	CHECK(NAME("miss then hit"), kx_read64_cached(&M, t, vm + 0x5000, &v) == 0 && v == 1 &&
	      kx_read64_cached(&M, t, vm + 0x6000, &v) == 0 && v == 2 && t->hits == 1 && t->misses == 1);
	CHECK(NAME("2M page hit"), kx_read64_cached(&M, t, vm + 0x40000000ull, &v) == 0 && v == 4 &&
	      kx_read64_cached(&M, t, vm + 0x40000000ull, &v) == 0 && v == 4 && t->hits == 2);
	/* the kernel remaps the 4K page: the PTE is always re-read */
	uint64_t pte_slot = slot(vm + 0x5000, 0), pmd_slot = slot(vm + 0x5000, 1);
	put64(pte_slot, 0x302000 | P);
	CHECK(NAME("remapped PTE is seen"), kx_read64_cached(&M, t, vm + 0x5000, &v) == 0 && v == 3);
	put64(pte_slot, 0);
	CHECK(NAME("unmapped PTE is seen"), kx_read64_cached(&M, t, vm + 0x5000, &v) == KX_ENOENT);
	/* the PTE page is freed and the PMD entry points elsewhere: stale, rewalked */
	put64(pmd_slot, 0x600000 | P | PS);            /* now a 2 MiB page at 0x600000 */
	uint64_t before = t->stale;
	CHECK(NAME("replaced PMD is detected"), kx_read64_cached(&M, t, vm, &v) == 0 &&
	      v == 5 && t->stale == before + 1);
	put64(pmd_slot, 0);
	CHECK(NAME("cleared PMD is ENOENT, not a cached answer"), kx_read64_cached(&M, t, vm, &v) == KX_ENOENT);
	CHECK(NAME("direct map bypasses the cache"), kx_read64_cached(&M, t, POB + 0x302000, &v) == 0 && v == 3);
#undef NAME
	free(t);
}

/* Discovery on a hostile guest's RAM: every page begins with a fake
 * 'OSRELEASE=', which is what a guest does to make a host's scan
 * expensive.  The scan goes over RAM once (it went back to the start for
 * each candidate: 32,768 of them over 128 MiB never ended), gives up
 * after KT_VMCOREINFO_CANDIDATES, stops when cancelled and at its
 * deadline. */
#define FAKE_SIZE (128u << 20)

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *cancel_soon(void *arg)
{
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
	__atomic_store_n((int *)arg, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void test_fake_vmcoreinfo(void)
{
	char path[] = "/tmp/sentinel-test-kx.XXXXXX", spec[64], err[512];
	int fd = mkstemp(path);
	if (fd < 0) {
		CHECK("hostile: a scratch RAM file", 0);
		return;
	}
	static char page[4096];
	snprintf(page, sizeof page, "OSRELEASE=6.1.0-fake\nPAGESIZE=4096\n");
	bool wrote = true;
	for (uint32_t off = 0; off < FAKE_SIZE && wrote; off += sizeof page)
		wrote = write(fd, page, sizeof page) == (ssize_t)sizeof page;
	close(fd);
	snprintf(spec, sizeof spec, "ramfile:%s", path);
	MemSource *src = NULL;
	KTarget *t = NULL;
	CHECK("hostile: the fake RAM file opens", wrote && ms_open(spec, &src, err, sizeof err) == 0);
	if (!src)
		goto out;
	int r = kt_open(src, NULL, &t, err, sizeof err);
	CHECK("hostile: 32,768 fake VMCOREINFO pages: given up after the candidate cap", r == -E2BIG && !t &&
	      strstr(err, "16384 places in its RAM say 'OSRELEASE='"));
	printf("     %s\n", err);
	int cancel = 0;
	pthread_t th;
	KtOptions o = {.cancel = &cancel};
	bool started = pthread_create(&th, NULL, cancel_soon, &cancel) == 0;
	/* the cap out of the way: candidates are checked slowly enough that
	 * the thread's cancel comes first (16,384 take ~100 ms), else it
	 * ends with -E2BIG as above */
	r = kt_open(src, &o, &t, err, sizeof err);
	if (started)
		pthread_join(th, NULL);
	CHECK("hostile: cancelled mid-scan: -ECANCELED or the cap, never a hang", r == -ECANCELED || r == -E2BIG);
	KtOptions late = {.deadline_ns = mono_ns() - 1};
	r = kt_open(src, &late, &t, err, sizeof err);
	CHECK("hostile: past the deadline: -ETIMEDOUT, said so", r == -ETIMEDOUT && strstr(err, "gave up"));
	cancel = 1;
	r = kt_open(src, &o, &t, err, sizeof err);
	CHECK("hostile: cancelled before: -ECANCELED", r == -ECANCELED && strstr(err, "stopped"));
	ms_close(src);
out:
	unlink(path);
}

int main(void)
{
	ram = aligned_alloc(4096, RAM_SIZE);
	if (!ram)
		return 2;
	test_paths(4);
	test_paths(5);
	test_tlb(4);
	test_tlb(5);
	test_garbage();
	test_lists();
	test_loop_check();
	test_seqcount();
	test_fake_vmcoreinfo();
	free(ram);
	printf("kx: %d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
