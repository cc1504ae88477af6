/* fuzz_guest.c - libFuzzer target: a hostile guest (hypervisor mode).
 *
 * A guest's RAM is written by the guest: a broken or malicious kernel can
 * make its lists loop, point into other memory, tear a pointer, or hold any
 * number where a count belongs.  This target takes one real guest's RAM
 * image (SENTINEL_FUZZ_IMAGE, raw), discovers its kernel once, and opens
 * a bundle (SENTINEL_FUZZ_BUNDLE: the shipped rules) on the CPU backend, as
 * sentineld does.  It then runs one clean tick with the image's pages
 * unreadable, recording every page the tick reads (a SIGSEGV per new page):
 * the task list and task_structs, the PID tree, per-CPU areas, runqueues,
 * the kernel's page tables, disks, cgroups, interfaces, mounts.
 *
 * Every input is a list of writes into those pages, made in a private
 * (copy-on-write) mapping of the image:
 *
 *   record -> op SEL:u16 OFF:u16 body
 *   op & 3 == 0   bytes:    N = body[0] % 16 + 1, then N bytes
 *   op & 3 == 1   pointer:  SEL2:u16 OFF2:u16; the direct-map address of
 *                           that place in another read page (a list that
 *                           loops, a task that is another's, a tree whose
 *                           child is its parent)
 *   op & 3 == 2   nudge:    D:s8; the 8-byte word there += D * 8 (a torn
 *                           or shifted pointer, a count off by some)
 *   op & 3 == 3   wild:     8 bytes; with op & 4 a kernel-half address
 *                           (into no RAM, a hole, a non-canonical one)
 *
 * then one tick runs (collection and every rule), its alerts are drained,
 * and the writes are undone: the next input starts from the clean image
 * while the engine keeps its state (histories, task slots, pending
 * alerts) from tick to tick, as it would against a guest that turns
 * hostile.  Nothing may crash, hang (libFuzzer's -timeout), or read outside
 * the image: the image sits between two inaccessible guard regions.
 *
 * Ticks have sentineld's default read budget (SENTINEL_FUZZ_READ_BUDGET
 * sets another).  SENTINEL_FUZZ_BACKEND=cuda ticks on the GPU instead (the pages are still
 * traced by a CPU tick, the same code): no input may fault the GPU.  Built
 * with -DFG_STANDALONE (no libFuzzer: the GPU machines have no clang), main()
 * below feeds it random inputs: fuzz_guest_gpu RUNS [SEED].
 */
#include "bundle.h"
#include "engine.h"
#include "ktarget.h"
#include "msrc.h"
#include "world.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define FG_MAX_WRITES 64
#define FG_GUARD (64ul << 20)

static MemSource *fg_src;
static KTarget *fg_t;
static Bundle *fg_b;
static Engine *fg_e;
static uint64_t fg_pob;             /* page_offset_base: the direct map */
static uint32_t *fg_pages;          /* the pages a clean tick read, as page numbers in the image */
static size_t fg_npages, fg_cap;
static unsigned long fg_alerts, fg_runs;
static double fg_clean_us, fg_slow_us;   /* a clean tick; the slowest hostile one */
static clockid_t fg_clock = CLOCK_THREAD_CPUTIME_ID;

/* What a tick costs: the thread's CPU time on the CPU backend (not what
 * preempted it), the wall clock on the GPU (the host waits) */
static double fg_now_us(void)
{
	struct timespec ts;
	clock_gettime(fg_clock, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void fg_die(const char *what, const char *err)
{
	fprintf(stderr, "fuzz_guest: %s: %s\n", what, err);
	exit(2);
}

/* The tracing tick's SIGSEGV: a first read of an image page.  Record it,
 * open it, retry the access.  Anything else is a real fault: the default
 * action, which the sanitizer reports. */
static void fg_on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *a = si->si_addr, *base = fg_src->map;
	if (a < base || a >= base + fg_src->map_len) {
		signal(sig, SIG_DFL);
		return;
	}
	size_t pg = (size_t)(a - base) >> 12;
	if (fg_npages < fg_cap)
		fg_pages[fg_npages++] = (uint32_t)pg;
	mprotect(base + (pg << 12), 4096, PROT_READ | PROT_WRITE);
}

/* The image's physical address of byte off of the mapping (its range). */
static uint64_t fg_phys(size_t off)
{
	uint64_t host = (uint64_t)(uintptr_t)fg_src->map + off;
	for (unsigned i = 0; i < fg_src->nranges; i++)
		if (host >= fg_src->r[i].ptr && host - fg_src->r[i].ptr < fg_src->r[i].size)
			return fg_src->r[i].phys + (host - fg_src->r[i].ptr);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	char err[1024], spec[4096];
	const char *img = getenv("SENTINEL_FUZZ_IMAGE"), *bundle = getenv("SENTINEL_FUZZ_BUNDLE");
	if (!img || !bundle)
		fg_die("usage", "set SENTINEL_FUZZ_IMAGE (a guest's raw RAM image) and SENTINEL_FUZZ_BUNDLE "
		       "(rulec -o FILE rules/); tests/fuzz/run.sh guest makes both");
	snprintf(spec, sizeof spec, "raw:%s", img);
	if (ms_open(spec, &fg_src, err, sizeof err))
		fg_die(img, err);
	/* the same file, private and writable, between two guard regions:
	 * moved there before discovery, so every range points into it */
	size_t len = (fg_src->map_len + 4095) & ~4095ul;
	char *res = mmap(NULL, len + 2 * FG_GUARD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED || mmap(res + FG_GUARD, fg_src->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
				      fg_src->fd, 0) != res + FG_GUARD)
		fg_die("mmap", "cannot map the image privately between guard regions");
	char *was = fg_src->map, *base = res + FG_GUARD;
	for (unsigned i = 0; i < fg_src->nranges; i++)
		fg_src->r[i].ptr += (uint64_t)(uintptr_t)base - (uint64_t)(uintptr_t)was;
	munmap(was, fg_src->map_len);
	fg_src->map = base;
	if (kt_open(fg_src, &(KtOptions){0}, &fg_t, err, sizeof err))
		fg_die("discovery", err);
	fg_pob = fg_t->mem.page_offset_base;
	if (bd_read(bundle, &fg_b, err, sizeof err))
		fg_die(bundle, err);
	/* the read budget sentineld gives a target of the default table ([engine]
	 * read_budget = auto): a hostile input is cut off there, as it would be;
	 * SENTINEL_FUZZ_READ_BUDGET=N, below a clean tick's reads, cuts every
	 * tick's walks short: the cut itself under hostile inputs */
	const char *rb = getenv("SENTINEL_FUZZ_READ_BUDGET");
	EngOpts eo = {.backend = "cpu", .tick_ns = 100000000ull, .threads = 1,
		      .read_budget = rb ? strtoull(rb, NULL, 10) : eng_read_budget_auto(WD_DEFAULT_TASKS, 0)};
	if (eng_open(fg_b, fg_t, &eo, &fg_e, err, sizeof err))
		fg_die("eng_open", err);
	const char *backend = getenv("SENTINEL_FUZZ_BACKEND");
	eng_tick(fg_e, 0, err, sizeof err);    /* first tick: lazily built state, before tracing */

	fg_cap = (fg_src->map_len + 4095) >> 12;      /* every page, at most: no allocation in the handler */
	if (!(fg_pages = calloc(fg_cap, sizeof *fg_pages)))
		fg_die("tracing", "out of memory");
	struct sigaction sa = {.sa_sigaction = fg_on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER}, old;
	sigaction(SIGSEGV, &sa, &old);
	mprotect(base, fg_src->map_len, PROT_NONE);
	eng_tick(fg_e, 0, err, sizeof err);
	mprotect(base, fg_src->map_len, PROT_READ | PROT_WRITE);
	sigaction(SIGSEGV, &old, NULL);
	if (!fg_npages)
		fg_die("tracing", "a tick read no page of the image");
	if (backend && strcmp(backend, "cpu")) {
		/* every page written once, so each is the process's own before the
		 * GPU pins it: the inputs' writes then land where the GPU reads */
		for (size_t off = 0; off < fg_src->map_len; off += 4096)
			((volatile char *)base)[off] = base[off];
		eng_close(fg_e);
		eo.backend = backend;
		if (eng_open(fg_b, fg_t, &eo, &fg_e, err, sizeof err))
			fg_die("eng_open", err);
		fg_clock = CLOCK_MONOTONIC;
	}
	for (int i = 0; i < 100; i++) {
		double t0 = fg_now_us();
		if (eng_tick(fg_e, 0, err, sizeof err))
			fg_die("a clean tick", err);
		double us = fg_now_us() - t0;
		if (!i || us < fg_clean_us)
			fg_clean_us = us;
	}
	const sn_world *w = eng_view(fg_e, err, sizeof err);
	fprintf(stderr, "fuzz_guest: Linux %s, %u tasks, a tick reads %zu pages (%zu KiB) of %zu MiB; %u rules; "
		"%s; a clean tick %.0f us\n", fg_t->release, w ? w->tasks.n : 0, fg_npages, fg_npages * 4,
		fg_src->map_len >> 20, (unsigned)fg_b->nrules, eng_backend_note(fg_e), fg_clean_us);
	return 0;
}

/* The most reads of a tick so far, and the ticks cut off at the budget. */
static void fg_reads(uint64_t *most, uint64_t *cut)
{
	sn_stats S;
	eng_stats(fg_e, &S, NULL);
	*most = S.max_reads;
	*cut = S.over_budget;
}

static void fg_on_alert(void *ctx, const sn_alert *a)
{
	(void)ctx, (void)a;
	fg_alerts++;
}

typedef struct {
	size_t off;
	uint8_t old[16];
	unsigned n;
} FgUndo;

static uint16_t fg_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FgUndo undo[FG_MAX_WRITES];
	unsigned nu = 0;
	char *base = fg_src->map, err[256];
	for (size_t i = 0; i + 5 <= size && nu < FG_MAX_WRITES;) {
		uint8_t op = data[i];
		size_t off = (size_t)fg_pages[fg_u16(data + i + 1) % fg_npages] << 12 | (fg_u16(data + i + 3) & 0xfff);
		const uint8_t *body = data + i + 5;
		size_t left = size - i - 5;
		uint8_t v[16];
		unsigned n = 8, used;
		if ((op & 3) == 0) {                   /* bytes */
			if (!left)
				break;
			n = body[0] % 16 + 1;
			used = 1 + n;
			if (left < used)
				break;
			memcpy(v, body + 1, n);
		} else if ((op & 3) == 1) {            /* a pointer to another read place */
			if (left < 4)
				break;
			size_t to = (size_t)fg_pages[fg_u16(body) % fg_npages] << 12 | (fg_u16(body + 2) & 0xfff);
			uint64_t p = fg_pob + fg_phys(to);
			memcpy(v, &p, 8);
			used = 4;
		} else if ((op & 3) == 2) {            /* nudge a word */
			if (left < 1)
				break;
			off &= ~7ul;
			uint64_t x;
			memcpy(&x, base + off, 8);
			x += (uint64_t)(int64_t)(int8_t)body[0] * 8;
			memcpy(v, &x, 8);
			used = 1;
		} else {                               /* a wild value */
			if (left < 8)
				break;
			uint64_t x;
			memcpy(&x, body, 8);
			if (op & 4)
				x |= 0xffff800000000000ull;
			memcpy(v, &x, 8);
			used = 8;
		}
		if (off + n > fg_src->map_len)
			n = (unsigned)(fg_src->map_len - off);
		undo[nu].off = off;
		undo[nu].n = n;
		memcpy(undo[nu].old, base + off, n);
		memcpy(base + off, v, n);
		nu++;
		i += 5 + used;
	}
	double t0 = fg_now_us();
	if (eng_tick(fg_e, 0, err, sizeof err)) {  /* the GPU's fault: a finding */
		fprintf(stderr, "fuzz_guest: input %lu: the tick failed: %s\n", fg_runs, err);
		abort();
	}
	double us = fg_now_us() - t0;
	if (us > fg_slow_us) {                    /* kept, to be run again: a guest's lever, or a hiccup? */
		fg_slow_us = us;
		const char *keep = getenv("SENTINEL_FUZZ_SLOWEST");
		FILE *f = keep ? fopen(keep, "wb") : NULL;
		if (f) {
			fwrite(data, 1, size, f);
			fclose(f);
			const sn_world *w = eng_view(fg_e, err, sizeof err);
			if (w)
				fprintf(stderr, "fuzz_guest: slowest so far %.0f us: %u task rows of %u (%u found, %s, error "
					"%d)\n", us, w->tasks.n, w->tasks.cap, w->tasks.found,
					w->tasks.by_list ? "list" : "tree", w->tasks.err);
		}
	}
	eng_drain(fg_e, fg_on_alert, NULL);
	while (nu--)                               /* undone in reverse: overlapping writes restore */
		memcpy(base + undo[nu].off, undo[nu].old, undo[nu].n);
	if (++fg_runs % 100000 == 0) {
		uint64_t most, cut;
		fg_reads(&most, &cut);
		fprintf(stderr, "fuzz_guest: %lu inputs, %lu alerts, the slowest tick %.0f us (clean %.0f us); the most "
			"reads of a tick %llu, %llu ticks cut off at the read budget (%llu)\n", fg_runs, fg_alerts,
			fg_slow_us, fg_clean_us, (unsigned long long)most, (unsigned long long)cut,
			(unsigned long long)eng_read_budget(fg_e));
	}
	return 0;
}

#ifdef FG_STANDALONE
/* xorshift64*: the inputs of a run are its seed's */
static uint64_t fg_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dull;
}

int main(int argc, char **argv)
{
	long runs = argc > 1 ? atol(argv[1]) : 100000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1, x = seed ? seed : 1;
	if (runs <= 0) {
		fprintf(stderr, "usage: fuzz_guest_gpu RUNS [SEED]   (SENTINEL_FUZZ_IMAGE, SENTINEL_FUZZ_BUNDLE, "
			"SENTINEL_FUZZ_BACKEND=cuda)\n");
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	uint8_t buf[1024];
	for (long i = 0; i < runs; i++) {
		size_t n = 5 + fg_rand(&x) % (sizeof buf - 5);
		for (size_t j = 0; j < n; j++)
			buf[j] = (uint8_t)fg_rand(&x);
		LLVMFuzzerTestOneInput(buf, n);
	}
	uint64_t most, cut;
	fg_reads(&most, &cut);
	fprintf(stderr, "fuzz_guest: %ld random inputs (seed %llu), nothing found: %lu alerts, the slowest tick %.0f us "
		"(clean %.0f us); the most reads of a tick %llu, %llu ticks cut off at the read budget (%llu)\n", runs,
		(unsigned long long)seed, fg_alerts, fg_slow_us, fg_clean_us, (unsigned long long)most,
		(unsigned long long)cut, (unsigned long long)eng_read_budget(fg_e));
	return 0;
}
#endif
