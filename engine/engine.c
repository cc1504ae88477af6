/* engine.c - one bundle, one target, one backend (see engine.h). */
#include "engine.h"
#include "cpu.h"
#include "gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct Engine {
	const Bundle *b;
	const KTarget *t;
	EngBackend backend;
	char note[1024];
	RlResult res;
	WdParams params;
	WdLayout L;
	void *block;              /* CPU: the world; CUDA: the host mirror */
	sn_ring *ring;
	sn_stats *stats;
	CpuCode *cpu;
	GpuCode *gpu;
};

static uint64_t eng_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int eng_open_cpu(Engine *e, char *err, size_t n)
{
	e->block = aligned_alloc(64, (e->L.total + 63) & ~(size_t)63);
	e->ring = aligned_alloc(64, (e->L.ring_bytes + 63) & ~(size_t)63);
	e->stats = aligned_alloc(64, (sizeof(sn_stats) + 63) & ~(size_t)63);
	if (!e->block || !e->ring || !e->stats) {
		snprintf(err, n, "out of memory for the rule tables (%zu MiB)", e->L.total >> 20);
		return -ENOMEM;
	}
	memset(e->block, 0, e->L.total);
	memset(e->stats, 0, sizeof *e->stats);
	wd_ring_init(e->ring, e->params.ring_cap);
	wd_build(e->b, &e->params, &e->L, &e->res, e->block, (uint64_t)(uintptr_t)e->block,
		 (uint64_t)(uintptr_t)e->ring, (uint64_t)(uintptr_t)e->stats);
	int r = cpu_open(e->b, &e->cpu, err, n);
	if (!r)
		r = cpu_bind(e->cpu, &e->t->mem, e->res.value, e->res.n, err, n);
	return r;
}

int eng_open(const Bundle *b, const KTarget *t, const EngOpts *o, Engine **out, char *err, size_t n)
{
	EngOpts none = {0};
	if (!o)
		o = &none;
	if (b->abi != SN_ABI_VERSION) {
		snprintf(err, n, "the bundle was made for engine ABI %u, this is ABI %u: recompile the rules with "
			 "this version's rulec", b->abi, SN_ABI_VERSION);
		return -ENOEXEC;
	}
	Engine *e = calloc(1, sizeof *e);
	if (!e)
		return -ENOMEM;
	e->b = b;
	e->t = t;
	e->params = (WdParams){
		.tick_ns = o->tick_ns ? o->tick_ns : 100000000ull,
		.max_cpus = t->cpus.nr_cpu_ids,
		.task_cap = o->task_cap ? o->task_cap : WD_DEFAULT_TASKS,
		.ring_cap = o->ring_cap ? o->ring_cap : WD_DEFAULT_RING,
	};
	int r = rl_resolve(b, t, &e->res, err, n);
	if (!r)
		r = wd_layout(b, &e->params, &e->L, err, n);
	if (r)
		goto fail;
	const char *want = o->backend ? o->backend : "auto";
	if (!strcmp(want, "cpu")) {
		e->backend = ENG_CPU;
		snprintf(e->note, sizeof e->note, "cpu: asked for");
	} else if (!strcmp(want, "cuda") || !strcmp(want, "auto")) {
		char why[512];
		r = gpu_open(b, o->gpu, &e->gpu, why, sizeof why);
		if (!r) {
			e->backend = ENG_CUDA;
			snprintf(e->note, sizeof e->note, "cuda: %s", gpu_device_name(e->gpu));
		} else if (!strcmp(want, "cuda")) {
			snprintf(err, n, "%s", why);
			goto fail;
		} else {
			e->backend = ENG_CPU;
			snprintf(e->note, sizeof e->note, "cpu: auto chose it because %s", why);
			r = 0;
		}
	} else {
		snprintf(err, n, "backend '%s': use cpu, cuda or auto", want);
		r = -EINVAL;
		goto fail;
	}
	if (e->backend == ENG_CPU)
		r = eng_open_cpu(e, err, n);
	else
		r = gpu_start(e->gpu, b, &e->params, &e->L, &e->res, &t->mem, t->src, &e->block, &e->ring,
			       &e->stats, err, n);
	if (r)
		goto fail;
	*out = e;
	return 0;
fail:
	eng_close(e);
	return r ? r : -EINVAL;
}

void eng_close(Engine *e)
{
	if (!e)
		return;
	if (e->gpu) {
		gpu_close(e->gpu);
		e->block = NULL;
		e->ring = NULL;
		e->stats = NULL;
	}
	cpu_close(e->cpu);
	free(e->block);
	free(e->ring);
	free(e->stats);
	rl_free(&e->res);
	free(e);
}

int eng_tick(Engine *e, uint64_t now, char *err, size_t n)
{
	if (e->backend == ENG_CUDA)
		return gpu_tick(e->gpu, now, err, n);
	cpu_tick(e->cpu, wd_world(e->block), now ? now : eng_clock());
	return 0;
}

const sn_world *eng_view(Engine *e, char *err, size_t n)
{
	if (e->backend == ENG_CUDA)
		return gpu_view(e->gpu, err, n);
	return wd_world(e->block);
}

EngBackend eng_backend(const Engine *e) { return e->backend; }
const char *eng_backend_note(const Engine *e) { return e->note; }
const RlResult *eng_relocs(const Engine *e) { return &e->res; }
const WdLayout *eng_layout(const Engine *e) { return &e->L; }
