/* cpu.c - the CPU backend (see cpu.h). */
#include "cpu.h"
#include "elfload.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A worker of the tick's threads: thread t of the pool (0 is the caller). */
typedef struct CpuWorker {
	struct CpuCode *c;
	uint32_t t;
	pthread_t th;
} CpuWorker;

struct CpuCode {
	ElfImage *img;             /* the bundle's x86-64 code, linked in (elfload.h) */
	void (*tick)(sn_world *, uint32_t, uint32_t, uint64_t);
	void (*step)(sn_world *, uint32_t, uint32_t, uint32_t, uint64_t);
	/* [engine] threads > 1: T - 1 workers beside the caller, meeting at
	 * `start` for a tick and at `bar` after each of its steps */
	uint32_t T;
	CpuWorker *workers;
	pthread_barrier_t start, bar;
	sn_world *w;               /* this tick's, set before `start` */
	uint64_t now;
	int quit;
	/* a worker waits here until every one is started (gate 1) or a start
	 * failed (gate 2: it leaves) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int gate;
	void (*handoff)(sn_world *, uint32_t, uint32_t);
	void (*feed)(sn_world *, uint64_t, const sn_feed *);
	kx_mem *mem;
	uint64_t *relo;
	size_t nrelo;
};

static int cpu_lookup(CpuCode *c, const char *name, void **out, char *err, size_t n)
{
	*out = el_sym(c->img, name);
	if (*out)
		return 0;
	snprintf(err, n, "the bundle's x86-64 code has no %s: a bundle and engine mismatch; recompile the rules", name);
	return -ENOEXEC;
}

int cpu_open(const Bundle *b, CpuCode **out, char *err, size_t n)
{
	if (!b->host_obj || !b->host_len) {
		snprintf(err, n, "the bundle has no x86-64 code for the CPU backend");
		return -ENOEXEC;
	}
	CpuCode *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	int r = el_load(b->host_obj, b->host_len, &c->img, err, n);
	if (r) {
		free(c);
		return r;
	}
	void *tick = NULL, *mem = NULL, *relo = NULL, *handoff = NULL, *feed = NULL, *step = NULL;
	r = cpu_lookup(c, "sn_tick", &tick, err, n);
	if (!r)
		r = cpu_lookup(c, "sn_tick_step", &step, err, n);
	if (!r)
		r = cpu_lookup(c, "sn_handoff", &handoff, err, n);
	if (!r)
		r = cpu_lookup(c, "sn_feed_tick", &feed, err, n);
	if (!r)
		r = cpu_lookup(c, KX_MEM_SYM, &mem, err, n);
	if (!r)
		r = cpu_lookup(c, KX_RELO_SYM, &relo, err, n);
	if (r) {
		cpu_close(c);
		return r;
	}
	c->tick = (void (*)(sn_world *, uint32_t, uint32_t, uint64_t))tick;
	c->step = (void (*)(sn_world *, uint32_t, uint32_t, uint32_t, uint64_t))step;
	c->T = 1;
	c->handoff = (void (*)(sn_world *, uint32_t, uint32_t))handoff;
	c->feed = (void (*)(sn_world *, uint64_t, const sn_feed *))feed;
	c->mem = mem;
	c->relo = relo;
	c->nrelo = b->relos.n;
	*out = c;
	return 0;
}

int cpu_bind(CpuCode *c, const kx_mem *mem, const uint64_t *relo, size_t nrelo, char *err, size_t n)
{
	if (nrelo != c->nrelo) {
		snprintf(err, n, "relocation table of %zu entries for code that has %zu", nrelo, c->nrelo);
		return -EINVAL;
	}
	memcpy(c->mem, mem, sizeof *mem);
	memcpy(c->relo, relo, nrelo * sizeof *relo);
	return 0;
}

/* Thread t's part of a tick: every step, and the barrier after it. */
static void cpu_steps(CpuCode *c, uint32_t t)
{
	for (uint32_t s = 0; s < SN_STEPS; s++) {
		c->step(c->w, s, t, c->T, c->now);
		pthread_barrier_wait(&c->bar);
	}
}

static void *cpu_worker(void *arg)
{
	CpuWorker *k = arg;
	CpuCode *c = k->c;
	pthread_mutex_lock(&c->mu);
	while (!c->gate)
		pthread_cond_wait(&c->cv, &c->mu);
	int go = c->gate == 1;
	pthread_mutex_unlock(&c->mu);
	while (go) {
		pthread_barrier_wait(&c->start);
		if (__atomic_load_n(&c->quit, __ATOMIC_ACQUIRE))
			break;
		cpu_steps(c, k->t);
	}
	return NULL;
}

static void cpu_gate(CpuCode *c, int gate)
{
	pthread_mutex_lock(&c->mu);
	c->gate = gate;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* Stop the workers (c->T - 1 of them, all started and past the gate). */
static void cpu_threads_stop(CpuCode *c)
{
	if (!c->workers)
		return;
	__atomic_store_n(&c->quit, 1, __ATOMIC_RELEASE);
	pthread_barrier_wait(&c->start);
	for (uint32_t i = 0; i + 1 < c->T; i++)
		pthread_join(c->workers[i].th, NULL);
	pthread_barrier_destroy(&c->start);
	pthread_barrier_destroy(&c->bar);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c->workers);
	c->workers = NULL;
	c->T = 1;
}

int cpu_threads(CpuCode *c, uint32_t threads, char *err, size_t n)
{
	if (threads <= 1 || c->workers)
		return 0;
	CpuWorker *ws = calloc(threads - 1, sizeof *ws);
	if (!ws)
		return -ENOMEM;
	int e = pthread_barrier_init(&c->start, NULL, threads);
	if (!e && (e = pthread_barrier_init(&c->bar, NULL, threads)))
		pthread_barrier_destroy(&c->start);
	if (e) {
		free(ws);
		snprintf(err, n, "cannot set up the tick's %u threads: %s", threads, strerror(e));
		return -e;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->gate = 0;
	uint32_t started = 0;
	for (; started + 1 < threads; started++) {
		ws[started] = (CpuWorker){.c = c, .t = started + 1};
		if ((e = pthread_create(&ws[started].th, NULL, cpu_worker, &ws[started])))
			break;
	}
	if (e) {
		cpu_gate(c, 2);                     /* the started ones leave before any barrier */
		for (uint32_t i = 0; i < started; i++)
			pthread_join(ws[i].th, NULL);
		pthread_barrier_destroy(&c->start);
		pthread_barrier_destroy(&c->bar);
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->cv);
		free(ws);
		snprintf(err, n, "cannot start the tick's thread %u of %u: %s; set [engine] threads lower", started + 2,
			 threads, strerror(e));
		return -e;
	}
	c->workers = ws;
	c->T = threads;
	cpu_gate(c, 1);
	return 0;
}

void cpu_tick(CpuCode *c, sn_world *w, uint64_t now, uint32_t min_rows)
{
	if (c->T > 1 && w->tasks.n >= min_rows) {
		c->w = w;
		c->now = now;
		pthread_barrier_wait(&c->start);
		cpu_steps(c, 0);
		return;
	}
	c->tick(w, 0, 1, now);
}

void cpu_handoff(CpuCode *c, sn_world *w)
{
	c->handoff(w, 0, 1);
}

void cpu_feed_tick(CpuCode *c, sn_world *w, uint64_t now, const sn_feed *f)
{
	c->feed(w, now, f);
}

void cpu_close(CpuCode *c)
{
	if (!c)
		return;
	cpu_threads_stop(c);
	el_free(c->img);
	free(c);
}
