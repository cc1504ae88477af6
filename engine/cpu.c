/* cpu.c - the CPU backend (see cpu.h). */
#include "cpu.h"
#include "elfload.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A barrier for the tick's threads: a thread that arrives early spins for
 * up to CPU_BAR_SPIN_NS, then sleeps on a futex.  pthread_barrier_wait
 * sleeps at once, and a tick passes a barrier after each of its ~11 steps:
 * each wake is a trip through the scheduler (tens of microseconds in a
 * VM), most of a millisecond a tick at 25,000 tasks.  gen counts the
 * rounds (the futex word); the last to arrive starts the next round and
 * wakes the sleepers, if any. */
#define CPU_BAR_SPIN_NS 50000u
typedef struct CpuBar {
	uint32_t n;                /* threads */
	uint32_t count;            /* arrived this round */
	uint32_t gen;
	uint32_t sleepers;
} CpuBar;

static void cpu_bar_wait(CpuBar *b)
{
	uint32_t g = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == b->n) {
		__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->gen, g + 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST))
			syscall(SYS_futex, &b->gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		return;
	}
	uint64_t t0 = u_now_ns();
	for (uint32_t i = 1; __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == g; i++) {
		__builtin_ia32_pause();
		if (i % 256 == 0 && u_now_ns() - t0 > CPU_BAR_SPIN_NS)
			break;
	}
	while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == g) {
		/* the count before the wait: the last arrival stores gen and
		 * then reads sleepers (both seq_cst), so either it sees this
		 * one or the futex sees the new gen and returns at once */
		__atomic_add_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &b->gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
		__atomic_sub_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
	}
}

/* Thread t of a tick's pool (0 is the caller).  Each has its own copy of
 * the bundle's code (el_load, the same object): its own globals, so its
 * read count (kx_cur, llview_rt.c) is its own.  One shared counter,
 * incremented by every read of every thread, was a cache line passed
 * between the cores on each read. */
typedef struct CpuWorker {
	struct CpuCode *c;
	uint32_t t;
	pthread_t th;
	ElfImage *img;             /* workers' own; thread 0 uses CpuCode.img */
	void (*step)(sn_world *, uint32_t, uint32_t, uint32_t, uint64_t);
	kx_cur *cur;               /* that code's kx_cur */
	uint64_t reads;            /* the count its reads add to (kx_cur.reads) */
	uint64_t base;             /* the tick's count when this step began */
} __attribute__((aligned(64))) CpuWorker;

struct CpuCode {
	ElfImage *img;             /* the bundle's x86-64 code, linked in (elfload.h) */
	void (*tick)(sn_world *, uint32_t, uint32_t, uint64_t);
	void (*step)(sn_world *, uint32_t, uint32_t, uint32_t, uint64_t);
	/* [engine] threads > 1: T workers, [0] the caller, meeting at
	 * `start` for a tick and at `bar` after each of its steps */
	uint32_t T;
	CpuWorker *workers;
	CpuBar start, bar;
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
	kx_cur *cur;
	size_t nrelo;
	const void *obj;           /* the bundle's object, for the workers' copies (cpu_threads) */
	size_t objlen;
	const BdData *data;        /* the bundle's data tables, written into every copy */
	size_t ndata;
};

static int cpu_lookup_in(ElfImage *img, const char *name, void **out, char *err, size_t n)
{
	*out = el_sym(img, name);
	if (*out)
		return 0;
	snprintf(err, n, "the bundle's x86-64 code has no %s: a bundle and engine mismatch; recompile the rules", name);
	return -ENOEXEC;
}

/* The rules' data tables into a copy of the code (bundle.h, BD_SEC_DATA):
 * each into its symbol, which must be exactly its size. */
static int cpu_write_data(ElfImage *img, const BdData *d, size_t nd, char *err, size_t n)
{
	for (size_t i = 0; i < nd; i++) {
		size_t have = 0;
		void *p = el_sym_size(img, d[i].name, &have);
		if (!p || have != d[i].len) {
			snprintf(err, n, "the bundle's x86-64 code has %s of %zu bytes, its data %zu: a damaged bundle; "
				 "recompile the rules", d[i].name, p ? have : 0, d[i].len);
			return -ENOEXEC;
		}
		memcpy(p, d[i].bytes, d[i].len);
	}
	return 0;
}

static int cpu_lookup(CpuCode *c, const char *name, void **out, char *err, size_t n)
{
	return cpu_lookup_in(c->img, name, out, err, n);
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
	void *tick = NULL, *mem = NULL, *relo = NULL, *handoff = NULL, *feed = NULL, *step = NULL, *cur = NULL;
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
	if (!r)
		r = cpu_lookup(c, KX_CUR_SYM, &cur, err, n);
	if (!r)
		r = cpu_write_data(c->img, b->data, b->ndata, err, n);
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
	c->cur = cur;
	c->nrelo = b->relos.n;
	c->obj = b->host_obj;
	c->objlen = b->host_len;
	c->data = b->data;
	c->ndata = b->ndata;
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
	for (uint32_t t = 1; c->workers && t < c->T; t++) {
		ElfImage *im = c->workers[t].img;
		memcpy(el_sym(im, KX_MEM_SYM), mem, sizeof *mem);
		memcpy(el_sym(im, KX_RELO_SYM), relo, nrelo * sizeof *relo);
	}
	return 0;
}

/* Thread t's part of a tick: every step, and the barrier after it.  The
 * leader's BEGIN starts the tick's count (sn_budget_begin, at the world's
 * counter); from then on each thread counts its own reads from the
 * tick's count so far (its walks stop at the budget on that) and adds
 * them to the world's before the barrier.  Within a step the threads'
 * walks may together read up to T times what the budget has left. */
static void cpu_steps(CpuCode *c, uint32_t t)
{
	CpuWorker *k = &c->workers[t];
	sn_world *w = c->w;
	for (uint32_t s = 0; s < SN_STEPS; s++) {
		if (s > SN_STEP_BEGIN && s < SN_STEP_END) {
			k->base = k->reads = __atomic_load_n(&w->reads, __ATOMIC_RELAXED);
			k->cur->reads = &k->reads;
			k->cur->budget = w->read_budget;
		}
		k->step(w, s, t, c->T, c->now);
		if (s > SN_STEP_BEGIN && s < SN_STEP_END && k->reads != k->base)
			__atomic_fetch_add(&w->reads, k->reads - k->base, __ATOMIC_RELAXED);
		cpu_bar_wait(&c->bar);
	}
	/* the leader's code counts at the world's again on a tick on one
	 * thread: its sn_budget_begin points it there */
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
		cpu_bar_wait(&c->start);
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

/* Stop the workers (c->T - 1 of them, all started and past the gate) and
 * free their code. */
static void cpu_threads_stop(CpuCode *c)
{
	if (!c->workers)
		return;
	__atomic_store_n(&c->quit, 1, __ATOMIC_RELEASE);
	cpu_bar_wait(&c->start);
	for (uint32_t t = 1; t < c->T; t++)
		pthread_join(c->workers[t].th, NULL);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	for (uint32_t t = 1; t < c->T; t++)
		el_free(c->workers[t].img);
	free(c->workers);
	c->workers = NULL;
	c->T = 1;
}

/* Worker t's own copy of the code, bound as the leader's is. */
static int cpu_worker_code(CpuCode *c, CpuWorker *k, char *err, size_t n)
{
	void *step = NULL, *mem = NULL, *relo = NULL, *cur = NULL;
	int r = el_load(c->obj, c->objlen, &k->img, err, n);
	if (!r)
		r = cpu_lookup_in(k->img, "sn_tick_step", &step, err, n);
	if (!r)
		r = cpu_lookup_in(k->img, KX_MEM_SYM, &mem, err, n);
	if (!r)
		r = cpu_lookup_in(k->img, KX_RELO_SYM, &relo, err, n);
	if (!r)
		r = cpu_lookup_in(k->img, KX_CUR_SYM, &cur, err, n);
	if (!r)
		r = cpu_write_data(k->img, c->data, c->ndata, err, n);
	if (r)
		return r;
	k->step = (void (*)(sn_world *, uint32_t, uint32_t, uint32_t, uint64_t))step;
	k->cur = cur;
	memcpy(mem, c->mem, sizeof *c->mem);
	memcpy(relo, c->relo, c->nrelo * sizeof *c->relo);
	return 0;
}

int cpu_threads(CpuCode *c, uint32_t threads, char *err, size_t n)
{
	if (threads <= 1 || c->workers)
		return 0;
	CpuWorker *ws = aligned_alloc(64, threads * sizeof *ws);
	if (!ws)
		return -ENOMEM;
	memset(ws, 0, threads * sizeof *ws);
	ws[0] = (CpuWorker){.c = c, .t = 0, .img = c->img, .step = c->step, .cur = c->cur};
	int e = 0;
	for (uint32_t t = 1; t < threads && !e; t++) {
		ws[t] = (CpuWorker){.c = c, .t = t};
		e = cpu_worker_code(c, &ws[t], err, n);   /* says what failed */
	}
	if (e) {
		for (uint32_t t = 1; t < threads; t++)
			el_free(ws[t].img);
		free(ws);
		return e;
	}
	c->start = c->bar = (CpuBar){.n = threads};
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->gate = 0;
	uint32_t started = 1;
	for (; started < threads; started++)
		if ((e = pthread_create(&ws[started].th, NULL, cpu_worker, &ws[started])))
			break;
	if (e) {
		cpu_gate(c, 2);                     /* the started ones leave before any barrier */
		for (uint32_t t = 1; t < started; t++)
			pthread_join(ws[t].th, NULL);
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->cv);
		for (uint32_t t = 1; t < threads; t++)
			el_free(ws[t].img);
		free(ws);
		snprintf(err, n, "cannot start the tick's thread %u of %u: %s; set [engine] threads lower", started + 1,
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
		cpu_bar_wait(&c->start);
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
