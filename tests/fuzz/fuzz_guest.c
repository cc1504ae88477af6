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
 * (copy-on-write) mapping of the image (fuzz_image.h: the records' format:
 * bytes, a pointer to another read place, a nudged word, a wild value),
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
#include "fuzz_image.h"
#include "ktarget.h"
#include "msrc.h"
#include "world.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FG_MAX_WRITES 64

static KTarget *fg_t;
static Bundle *fg_b;
static Engine *fg_e;
static uint64_t fg_pob;             /* page_offset_base: the direct map */
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

static void fg_die(const char *what, const char *err) { fi_die("fuzz_guest", what, err); }

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	char err[1024];
	const char *img = getenv("SENTINEL_FUZZ_IMAGE"), *bundle = getenv("SENTINEL_FUZZ_BUNDLE");
	if (!img || !bundle)
		fg_die("usage", "set SENTINEL_FUZZ_IMAGE (a guest's raw RAM image) and SENTINEL_FUZZ_BUNDLE "
		       "(rulec -o FILE rules/); tests/fuzz/run.sh guest makes both");
	fi_open("fuzz_guest", img);      /* private and writable, between guard regions */
	char *base = fi_src->map;
	if (kt_open(fi_src, &(KtOptions){0}, &fg_t, err, sizeof err))
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

	fi_trace_begin();
	eng_tick(fg_e, 0, err, sizeof err);
	fi_trace_end("fuzz_guest", "a tick read no page of the image");
	if (backend && strcmp(backend, "cpu")) {
		/* every page written once, so each is the process's own before the
		 * GPU pins it: the inputs' writes then land where the GPU reads */
		for (size_t off = 0; off < fi_src->map_len; off += 4096)
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
		"%s; a clean tick %.0f us\n", fg_t->release, w ? w->tasks.n : 0, fi_npages, fi_npages * 4,
		fi_src->map_len >> 20, (unsigned)fg_b->nrules, eng_backend_note(fg_e), fg_clean_us);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FiUndo undo[FG_MAX_WRITES];
	unsigned nu = 0;
	char err[256];
	for (size_t i = 0, used; nu < FG_MAX_WRITES; i += used, nu++)
		if (!(used = fi_write(data + i, size - i, fg_pob, fi_pages, fi_npages, &undo[nu])))
			break;
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
	fi_undo(undo, nu);
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
