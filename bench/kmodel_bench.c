/* kmodel_bench - time target discovery, and a tick of the metric library.
 *
 *   build/kmodel_bench SOURCE [RUNS [BUNDLE]]
 *
 * Discovery: kt_open() from nothing but the memory source, RUNS times.
 * Tick: one tick of BUNDLE (default: every catalog metric, compiled now)
 * on the CPU backend, one thread, RUNS times: the tasks read as the rules
 * read them (the PID tree, each task's fields), with everything else the
 * catalog reads.  Prints min and median of each. */
#include "ktarget.h"
#include "compile.h"
#include "engine.h"
#include "msrc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* the bundle: path, or every metric compiled now */
static int bench_bundle(const char *path, Bundle **b, char *err, size_t n)
{
	return path ? bd_read(path, b, err, n) : comp_build_all(SENTINEL_VERSION, b, err, n);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') {
		bool help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
		fprintf(help ? stdout : stderr, "usage: kmodel_bench SOURCE [RUNS [BUNDLE]]\n"
			"  time discovery of the kernel in SOURCE, and a tick of BUNDLE (default: every metric)\n");
		return help ? 0 : 2;
	}
	int runs = argc > 2 ? atoi(argv[2]) : 20;
	if (runs < 1)
		runs = 1;
	char err[1024];
	MemSource *s = NULL;
	KTarget *t = NULL;
	Bundle *b = NULL;
	Engine *e = NULL;
	int rc = 2;
	double *d = calloc((size_t)runs, sizeof *d), *w = calloc((size_t)runs, sizeof *w);
	if (!d || !w) {
		fprintf(stderr, "kmodel_bench: out of memory\n");
		goto out;
	}
	if (ms_open(argv[1], &s, err, sizeof err))
		goto fail;
	for (int i = 0; i < runs; i++) {
		if (t)
			kt_close(t);
		t = NULL;
		double t0 = now();
		if (kt_open(s, NULL, &t, err, sizeof err))
			goto fail;
		d[i] = now() - t0;
	}
	if (bench_bundle(argc > 3 ? argv[3] : NULL, &b, err, sizeof err))
		goto fail;
	EngOpts eo = {.backend = "cpu", .tick_ns = 100000000ull, .task_cap = 16384, .threads = 1};
	if (eng_open(b, t, &eo, &e, err, sizeof err))
		goto fail;
	uint32_t ntasks = 0;
	for (int i = 0; i < runs; i++) {
		double t0 = now();
		if (eng_tick(e, 0, err, sizeof err))
			goto fail;
		w[i] = now() - t0;
		const sn_world *v = eng_view(e, err, sizeof err);
		if (!v)
			goto fail;
		ntasks = v->tasks.n;
	}
	/* sentineld's check of every target, every second: still this kernel? */
	double c0 = now();
	unsigned same = 0;
	for (int i = 0; i < 100000; i++)
		same += kt_unchanged(t);
	double check = (now() - c0) / 100000;
	qsort(d, (size_t)runs, sizeof *d, cmp_d);
	qsort(w, (size_t)runs, sizeof *w, cmp_d);
	printf("kernel %s, %llu MiB, %zu symbols\n", t->release, ms_total(s) >> 20, t->nsyms);
	printf("discovery: min %.1f ms, median %.1f ms (%d runs)\n", d[0] * 1e3, d[runs / 2] * 1e3, runs);
	printf("tick (every metric, CPU backend, 1 thread): %u tasks, min %.3f ms, median %.3f ms\n", ntasks,
	       w[0] * 1e3, w[runs / 2] * 1e3);
	printf("target check (kt_unchanged, %zu of %zu bytes of VMCOREINFO, cache warm): %.0f ns%s\n",
	       t->vmcoreinfo_head, strlen(t->vmcoreinfo), check * 1e9, same == 100000 ? "" : " (CHANGED?)");
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "kmodel_bench: %s\n", err);
out:
	eng_close(e);
	bd_free(b);
	if (t)
		kt_close(t);
	ms_close(s);
	free(d);
	free(w);
	return rc;
}
