/* kmodel_bench - time target discovery and task-list walks.
 *
 *   build/kmodel_bench SOURCE [RUNS]
 *
 * Discovery: kt_open() from nothing but the memory source, RUNS times.
 * Walk: the whole task list with pid, tgid, ppid, state and comm of each
 * task (what `sentinel-inspect tasks` and the task metrics read), RUNS times.
 * Prints min and median of each. */
#include "ktarget.h"
#include "kbtf.h"
#include "kwalk.h"
#include "msrc.h"

#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: kmodel_bench SOURCE [RUNS]\n");
		return 2;
	}
	int runs = argc > 2 ? atoi(argv[2]) : 20;
	char err[512];
	MemSource *s;
	if (ms_open(argv[1], &s, err, sizeof err)) {
		fprintf(stderr, "kmodel_bench: %s\n", err);
		return 2;
	}
	double *d = calloc((size_t)runs, sizeof *d), *w = calloc((size_t)runs, sizeof *w);
	KTarget *t = NULL;
	for (int i = 0; i < runs; i++) {
		if (t)
			kt_close(t);
		double t0 = now();
		if (kt_open(s, NULL, &t, err, sizeof err)) {
			fprintf(stderr, "kmodel_bench: %s\n", err);
			return 2;
		}
		d[i] = now() - t0;
	}
	KwTaskLayout L;
	uint64_t init;
	if (kw_task_layout(t->btf, &L, err, sizeof err) || kt_sym(t, "init_task", &init)) {
		fprintf(stderr, "kmodel_bench: no task layout: %s\n", err);
		return 2;
	}
	int ntasks = 0;
	for (int i = 0; i < runs; i++) {
		kx_list_iter it;
		uint64_t node;
		KwTask k;
		int r, n = 0;
		double t0 = now();
		kx_list_begin(&it, init + L.tasks, KW_MAX_TASKS);
		while ((r = kx_list_next(&t->mem, &it, &node)) > 0)
			n += kw_task_read(&t->mem, &L, node - L.tasks, &k) == 0;
		w[i] = now() - t0;
		if (r < 0) {
			fprintf(stderr, "kmodel_bench: walk failed after %d tasks (%d)\n", n, r);
			return 1;
		}
		ntasks = n;
	}
	qsort(d, (size_t)runs, sizeof *d, cmp_d);
	qsort(w, (size_t)runs, sizeof *w, cmp_d);
	printf("kernel %s, %llu MiB, %zu symbols\n", t->release, ms_total(s) >> 20, t->nsyms);
	printf("discovery: min %.1f ms, median %.1f ms (%d runs)\n", d[0] * 1e3, d[runs / 2] * 1e3, runs);
	printf("task walk: %d tasks, min %.3f ms, median %.3f ms, %.2f us/task\n", ntasks, w[0] * 1e3,
	       w[runs / 2] * 1e3, w[runs / 2] * 1e6 / (ntasks ? ntasks : 1));
	kt_close(t);
	ms_close(s);
	free(d);
	free(w);
	return 0;
}
