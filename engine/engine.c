/* engine.c - one bundle, one target, one backend (see engine.h). */
#include "engine.h"
#include "cpu.h"
#include "gpu.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* eng_read_budget_auto: reads a tick may make with every table full, with
 * room to spare: a base for the jobs (the host's and the CPUs' metrics, the
 * objects' walks, the PID tree, threads summed into their process's row)
 * and so many a task row and an object row.  The shipped rules read about
 * 500 words a tick plus 26 a task (docs/benchmarks.md, "The read
 * budget"): a 4,096-row table gets 1.38 million, a 5,000-task guest reads
 * 131,000. */
#define ENG_BUDGET_BASE 1048576ull
#define ENG_BUDGET_TASK 64u
#define ENG_BUDGET_OBJ 64u

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
	uint32_t threads;         /* the CPU backend's tick threads (EngOpts.threads) */
	GpuCode *gpu;
	/* the CPU backend's tick thread */
	pthread_t thread;
	bool thread_on;
	int stop;
	struct Engine *handoff_to;    /* reload: the engine to hand the clock to */
	int handoff;                  /* where that stands (ENG_HO_*; atomic) */
	uint64_t first_next;          /* a thread started by a handoff: its first tick time */
	int wake_fd;                  /* EngOpts.wake_fd */
	void (*on_tick)(void *ctx, const sn_world *w);   /* EngOpts.on_tick */
	void *on_tick_ctx;
	void *snap;                   /* eng_values' copy: the block up to the task maps */
	uint64_t hb, hb_ns;           /* eng_health: the heartbeat last seen, and when it moved */
	bool faults;                  /* SENTINEL_TEST_FAULTS is set (eng_test_fault) */
	bool trial;                   /* EngOpts.trial */
	EngFleet *fleet;              /* EngOpts.fleet: the GPU kernel it runs in, or NULL */
};

/* A CPU handover (Engine.handoff): eng_takeover offers, the running tick
 * thread claims the offer between two ticks and ends DONE (the new
 * thread runs) or FAILED (it runs on); an offer not claimed in time is
 * withdrawn by eng_takeover, which cannot race the claim (both CAS). */
enum { ENG_HO_NONE, ENG_HO_OFFERED, ENG_HO_CLAIMED, ENG_HO_DONE, ENG_HO_FAILED };

/* The rule tables of the CPU backend: on 2 MiB pages where the kernel has
 * them to give (transparent huge pages, `madvise` or `always`), as the GPU
 * has its own large pages: a tick at thousands of tasks touches every
 * task's history, and on 4 KiB pages each of those reads also misses the
 * TLB. */
static void *eng_tables(size_t bytes)
{
	size_t huge = 2u << 20;
	if (bytes < huge)
		return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	void *p = aligned_alloc(huge, (bytes + huge - 1) & ~(huge - 1));
	if (p)
		madvise(p, (bytes + huge - 1) & ~(huge - 1), MADV_HUGEPAGE);   /* advice: no THP is no error */
	return p;
}

static int eng_open_cpu(Engine *e, char *err, size_t n)
{
	e->block = eng_tables(e->L.total);
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
	if (!r)
		r = cpu_threads(e->cpu, e->threads, err, n);
	return r;
}

/* Whether b was made for this engine (else err says what to do). */
static int eng_abi_check(const Bundle *b, char *err, size_t n)
{
	if (b->abi == SN_ABI_VERSION)
		return 0;
	snprintf(err, n, "the bundle was made for engine ABI %u, this is ABI %u: recompile the rules with this "
		 "version's rulec", b->abi, SN_ABI_VERSION);
	return -ENOEXEC;
}

int eng_open(const Bundle *b, const KTarget *t, const EngOpts *o, Engine **out, char *err, size_t n)
{
	EngOpts none = {0};
	if (!o)
		o = &none;
	if (eng_abi_check(b, err, n))
		return -ENOEXEC;
	Engine *e = calloc(1, sizeof *e);
	if (!e)
		return -ENOMEM;
	e->b = b;
	e->t = t;
	e->faults = getenv("SENTINEL_TEST_FAULTS") != NULL;
	e->trial = o->trial;
	e->fleet = o->fleet;
	e->threads = o->threads ? o->threads : 1;
	e->params = (WdParams){
		.tick_ns = o->tick_ns ? o->tick_ns : 100000000ull,
		.max_cpus = t->cpus.nr_cpu_ids,
		.task_cap = o->task_cap ? o->task_cap : WD_DEFAULT_TASKS,
		.ring_cap = o->ring_cap ? o->ring_cap : WD_DEFAULT_RING,
		.hist_max = o->hist_max,
		.obj_cap = o->obj_cap,
		.read_budget = o->read_budget,
	};
	int r = rl_resolve(b, t, &e->res, err, n);
	if (!r && (r = rl_limit(b, &e->res, o->target_name, o->target_labels, o->target_nlabels)))
		snprintf(err, n, "out of memory");
	if (!r)
		r = wd_layout(b, &e->params, &e->L, err, n);
	if (r)
		goto fail;
	const char *want = o->backend ? o->backend : "auto";
	if (!strcmp(want, "cpu")) {
		e->backend = ENG_CPU;
		snprintf(e->note, sizeof e->note, "cpu: asked for");
	} else if (t->src->kind == MS_KCORE && !strcmp(want, "auto")) {
		e->backend = ENG_CPU;
		snprintf(e->note, sizeof e->note, "cpu: auto chose it because the kcore source is read through the CPU");
	} else if (t->src->kind == MS_KCORE && !strcmp(want, "cuda")) {
		snprintf(err, n, "the kcore source is read page by page with pread, which the GPU cannot map: use "
			 "source = pmem (the sentinel_pmem module) for the GPU, or backend = cpu");
		r = -EINVAL;
		goto fail;
	} else if (o->fleet) {
		r = gpu_fleet_member((GpuFleet *)o->fleet, &e->gpu, err, n);
		if (r)
			goto fail;
		e->backend = ENG_CUDA;
		snprintf(e->note, sizeof e->note, "cuda: %s, one kernel for every target", gpu_device_name(e->gpu));
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
	e->wake_fd = o->wake_fd;
	e->on_tick = o->on_tick;
	e->on_tick_ctx = o->on_tick_ctx;
	if (e->backend == ENG_CPU) {
		r = eng_open_cpu(e, err, n);
	} else {
		gpu_set_register_chunk(e->gpu, o->reg_chunk);
		r = gpu_start(e->gpu, b, &e->params, &e->L, &e->res, &t->mem, t->src, &e->block, &e->ring,
			      &e->stats, err, n);
		gpu_set_wake(e->gpu, e->wake_fd);
		if (!r) {
			size_t l = strlen(e->note);
			snprintf(e->note + l, sizeof e->note - l, "; the target's RAM on it: %s", gpu_mapping(e->gpu));
		}
	}
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
	char err[256];
	eng_stop(e, err, sizeof err);
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
	free(e->snap);
	rl_free(&e->res);
	free(e);
}

int eng_tick(Engine *e, uint64_t now, char *err, size_t n)
{
	if (e->backend == ENG_CUDA)
		return gpu_tick(e->gpu, now, err, n);
	ms_refresh(e->t->src);                  /* kcore: read afresh */
	cpu_tick(e->cpu, wd_world(e->block), now ? now : u_now_ns(), 0);
	return 0;
}

const sn_world *eng_view(Engine *e, char *err, size_t n)
{
	if (e->backend == ENG_CUDA)
		return gpu_view(e->gpu, err, n);
	return wd_world(e->block);
}

/* The block's first len bytes into dst as the last complete tick left
 * them: a seqlock on the tick count (a tick starts with w->tick = ticks +
 * 1 and ends with ticks = w->tick; a copy is whole when both held still).
 * ticked: and only after a first tick.  -EAGAIN after 100 tries. */
static int eng_copy_tick(Engine *e, void *dst, size_t len, bool ticked, char *err, size_t n)
{
	const sn_world *w = dst;
	for (int tries = 0; tries < 100; tries++) {
		sn_stats a, b;
		eng_stats(e, &a, NULL);
		if (e->backend == ENG_CUDA) {
			int r = gpu_read(e->gpu, 0, dst, len, err, n);
			if (r)
				return r;
		} else {
			memcpy(dst, e->block, len);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		eng_stats(e, &b, NULL);
		if ((a.ticks || !ticked) && a.ticks == b.ticks && w->tick == a.ticks)
			return 0;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return -EAGAIN;
}

static uint64_t eng_block_addr(const Engine *e)
{
	return e->backend == ENG_CUDA ? gpu_block_addr(e->gpu) : (uint64_t)(uintptr_t)e->block;
}

const sn_world *eng_values(Engine *e, char *err, size_t n)
{
	size_t len = e->L.o_tkey[0];   /* the header and the value tables come first (wd_layout) */
	if (!e->snap && !(e->snap = malloc(len))) {
		snprintf(err, n, "out of memory for a %zu KiB snapshot", len >> 10);
		return NULL;
	}
	int r = eng_copy_tick(e, e->snap, len, false, err, n);
	if (r == -EAGAIN)
		snprintf(err, n, "the engine's tables changed under 100 copies in a row (a tick in progress every time: "
			 "ticks longer than the tick?)");
	if (r)
		return NULL;
	wd_rebase_values(e->snap, eng_block_addr(e), (uint64_t)(uintptr_t)e->snap);
	return wd_world(e->snap);
}

int eng_save(Engine *e, void **out, uint64_t *base, char *err, size_t n)
{
	size_t len = e->L.total;
	char *copy = malloc(len ? len : 1);
	if (!copy) {
		snprintf(err, n, "out of memory for a copy of the rule state (%zu MiB)", len >> 20);
		return -ENOMEM;
	}
	*base = eng_block_addr(e);
	int r = eng_copy_tick(e, copy, len, true, err, n);
	if (r == -EAGAIN)
		snprintf(err, n, "the rule state changed under 100 copies in a row (no tick yet, or a tick in progress "
			 "every time: a %zu MiB block read slower than a tick)", len >> 20);
	if (r) {
		free(copy);
		return r;
	}
	*out = copy;
	return 0;
}

int eng_restore(Engine *e, const Bundle *ob, const WdParams *op, void *block, size_t len, uint64_t gap_ns,
		unsigned *kept, unsigned *bad, char *err, size_t n)
{
	WdLayout oL;
	int r = wd_layout(ob, op, &oL, err, n);
	if (r)
		return r;
	if (len != oL.total) {
		snprintf(err, n, "the saved state is %zu bytes where its rules and sizes make %zu", len, oL.total);
		return -EINVAL;
	}
	uint64_t at = (uint64_t)(uintptr_t)block;
	if (e->backend == ENG_CUDA && (r = gpu_saved_alloc(e->gpu, len, &at, err, n)))
		return r;
	*bad = wd_adopt(block, ob, op, &oL, at);
	if (*bad == ~0u) {
		snprintf(err, n, "out of memory");
		return -ENOMEM;
	}
	const sn_world *o = block;
	if (e->backend == ENG_CUDA) {
		/* the kernel's first launch takes it over, on the GPU's clock */
		if ((r = gpu_saved_copy(e->gpu, block, len, err, n)))
			return r;
		*kept = wd_link(gpu_mirror(e->gpu), e->b, &e->L, gpu_block_addr(e->gpu), ob, op, &e->params, at);
		sn_world *w = wd_world(gpu_mirror(e->gpu));
		w->from_saved = 2;
		w->from_gap_ns = gap_ns;
		return gpu_upload(e->gpu, err, n);
	}
	*kept = wd_link(e->block, e->b, &e->L, (uint64_t)(uintptr_t)e->block, ob, op, &e->params, at);
	sn_world *w = wd_world(e->block);
	w->from_saved = 1;
	w->from_shift = (int64_t)(u_now_ns() - gap_ns - o->now);
	cpu_handoff(e->cpu, w);
	w->from = NULL;
	w->from_saved = 0;
	return 0;
}

const WdParams *eng_params(const Engine *e) { return &e->params; }

EngBackend eng_backend(const Engine *e) { return e->backend; }
const char *eng_backend_note(const Engine *e) { return e->note; }
const RlResult *eng_relocs(const Engine *e) { return &e->res; }
const WdLayout *eng_layout(const Engine *e) { return &e->L; }

/* ---- running continuously ---------------------------------------------------- */

static void eng_sleep_until(uint64_t t)
{
	struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* The fault tests' file (SENTINEL_TEST_FAULTS, engine.h), read at each ask. */
long eng_test_fault_n(const char *what)
{
	const char *path = getenv("SENTINEL_TEST_FAULTS");
	FILE *f = path && *path ? fopen(path, "re") : NULL;
	if (!f)
		return 0;
	char buf[128];
	size_t k = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[k] = 0;
	/* `what` as a word of its own: "handover" is not "handover-stuck" */
	size_t wl = strlen(what);
	for (const char *at = buf; (at = strstr(at, what)); at += wl) {
		bool starts = at == buf || isspace((unsigned char)at[-1]);
		if (!starts || (at[wl] && !isspace((unsigned char)at[wl])))
			continue;
		long v = strtol(at + wl, NULL, 10);
		return v > 0 ? v : 1;
	}
	return 0;
}

/* An address no one maps (the first page), for the fault tests; volatile
 * so that the compiler does not see the fault coming. */
static volatile uintptr_t eng_fault_addr = 4096;

bool eng_test_fault(const char *what)
{
	return eng_test_fault_n(what) > 0;
}

/* The CPU backend's clock: the same schedule the GPU kernel keeps (a late
 * tick is counted; far behind, the schedule skips instead of bursting). */
static void *eng_cpu_thread(void *arg)
{
	Engine *e = arg;
	sn_world *w = wd_world(e->block);
	/* the trial's fault test: the rules read an address no one mapped */
	if (e->trial && e->faults && eng_test_fault("trial-kernel-fault"))
		w = (sn_world *)(uintptr_t)eng_fault_addr;
	sn_stats *S = e->stats;
	uint64_t tick = e->params.tick_ns, next = e->first_next ? e->first_next : u_now_ns();
	while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		int offered = ENG_HO_OFFERED;
		if (__atomic_load_n(&e->handoff, __ATOMIC_ACQUIRE) == ENG_HO_OFFERED &&
		    !(e->faults && eng_test_fault("handover-stuck")) &&
		    __atomic_compare_exchange_n(&e->handoff, &offered, ENG_HO_CLAIMED, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			/* between two ticks: the new engine takes the state and the clock */
			Engine *to = e->handoff_to;
			cpu_handoff(to->cpu, wd_world(to->block));
			to->first_next = next;
			to->stop = 0;
			if (!(e->faults && eng_test_fault("handover")) &&
			    pthread_create(&to->thread, NULL, eng_cpu_thread, to) == 0) {
				to->thread_on = true;
				__atomic_store_n(&e->handoff, ENG_HO_DONE, __ATOMIC_RELEASE);
				break;
			}
			__atomic_store_n(&e->handoff, ENG_HO_FAILED, __ATOMIC_RELEASE);   /* keep going */
		}
		eng_sleep_until(next);
		if (__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
			break;
		while (e->faults && eng_test_fault("stall") && !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
			eng_sleep_until(u_now_ns() + 10000000);
		if (__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
			break;
		uint64_t t = u_now_ns();
		if (t - next > tick)
			S->late++;
		ms_refresh(e->t->src);
		cpu_tick(e->cpu, w, t, CPU_THREADS_MIN_ROWS);
		if (e->on_tick)
			e->on_tick(e->on_tick_ctx, w);
		if (!S->first_tick) {
			S->first_tick = w->tick;
			S->first_tick_ns = t;
		}
		uint64_t len = u_now_ns() - t;
		uint64_t head = __atomic_load_n(&e->ring->head, __ATOMIC_ACQUIRE);
		if (e->wake_fd > 0 && head != __atomic_load_n(&e->ring->tail, __ATOMIC_ACQUIRE)) {
			uint64_t one = 1;
			ssize_t wr = write(e->wake_fd, &one, sizeof one);
			(void)wr;               /* a full counter wakes the host just as well */
		}
		S->last_tick_ns = t;
		S->last_tick_len_ns = len;
		if (len > S->max_tick_len_ns)
			S->max_tick_len_ns = len;
		__atomic_store_n(&S->ticks, w->tick, __ATOMIC_RELEASE);
		__atomic_fetch_add(&S->heartbeat, 1, __ATOMIC_RELAXED);   /* eng_health reads it on the loop */
		next += tick;
		if (next < t)
			next = t + tick;
	}
	S->stopped = 1;
	return NULL;
}

int eng_start(Engine *e, char *err, size_t n)
{
	if (e->backend == ENG_CUDA && e->trial && e->faults && eng_test_fault("trial-kernel-fault")) {
		gpu_test_run_faulting(e->gpu);
		return 0;
	}
	if (e->backend == ENG_CUDA && e->fleet && e->faults && eng_test_fault("fleet-kernel-fault"))
		gpu_fleet_test_fault((GpuFleet *)e->fleet);
	if (e->backend == ENG_CUDA)
		return gpu_run(e->gpu, err, n);
	e->stop = 0;
	e->first_next = 0;
	int r = pthread_create(&e->thread, NULL, eng_cpu_thread, e);
	if (r) {
		snprintf(err, n, "cannot start the tick thread: %s", strerror(r));
		return -r;
	}
	e->thread_on = true;
	return 0;
}

int eng_stop(Engine *e, char *err, size_t n)
{
	if (e->backend == ENG_CUDA)
		return gpu_halt(e->gpu, 5000000000ull, err, n);
	if (e->thread_on) {
		__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
		pthread_join(e->thread, NULL);
		e->thread_on = false;
	}
	return 0;
}

/* CUDA: link e's world to old's (what carries over, read from old's device
 * memory by e's kernel at its start) and upload it. */
static int eng_gpu_link(Engine *e, Engine *old, unsigned *kept, char *err, size_t n)
{
	*kept = wd_link(gpu_mirror(e->gpu), e->b, &e->L, gpu_block_addr(e->gpu), old->b, &old->params, &e->params,
			gpu_block_addr(old->gpu));
	return gpu_upload(e->gpu, err, n);
}

int eng_takeover(Engine *e, Engine *old, unsigned *kept, char *err, size_t n)
{
	if (e->backend != old->backend) {
		snprintf(err, n, "a reload cannot move the rules from the %s backend to the %s one: restart sentineld",
			 old->backend == ENG_CUDA ? "cuda" : "cpu", e->backend == ENG_CUDA ? "cuda" : "cpu");
		return -EINVAL;
	}
	/* a handover that has not completed in this long is given up; the
	 * test hook's "handover-stuck" makes it one that never would */
	bool stuck = old->faults && eng_test_fault("handover-stuck");
	uint64_t timeout = stuck ? 1000000000ull : 10000000000ull + 4 * old->params.tick_ns;
	if (e->backend == ENG_CUDA) {
		GpuFault f = !old->faults ? GPU_FAULT_NONE
			: stuck ? GPU_FAULT_STUCK
			: eng_test_fault("handover") ? GPU_FAULT_AFTER_STOP
			: eng_test_fault("handover-no-resume") ? GPU_FAULT_NO_RESUME
			: eng_test_fault("handover-kernel-fault") ? GPU_FAULT_KERNEL : GPU_FAULT_NONE;
		int r = eng_gpu_link(e, old, kept, err, n);
		return r ? r : gpu_takeover(e->gpu, old->gpu, timeout, f, err, n);
	}
	*kept = wd_link(e->block, e->b, &e->L, (uint64_t)(uintptr_t)e->block, old->b, &old->params, &e->params,
			(uint64_t)(uintptr_t)old->block);
	if (!old->thread_on) {
		snprintf(err, n, "the running engine has no tick thread to take over from");
		return -EINVAL;
	}
	old->handoff_to = e;
	__atomic_store_n(&old->handoff, ENG_HO_OFFERED, __ATOMIC_RELEASE);
	/* the old thread hands over at its next tick, or fails to (and runs
	 * on); one that does not take the offer in time keeps running */
	struct timespec ms = {0, 1000000};
	uint64_t t0 = u_now_ns();
	int s;
	while ((s = __atomic_load_n(&old->handoff, __ATOMIC_ACQUIRE)) == ENG_HO_OFFERED || s == ENG_HO_CLAIMED) {
		int offered = ENG_HO_OFFERED;
		if (s == ENG_HO_OFFERED && u_now_ns() - t0 > timeout &&
		    __atomic_compare_exchange_n(&old->handoff, &offered, ENG_HO_NONE, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			snprintf(err, n, "the reload's handover did not complete within %llu ms (the running tick thread "
				 "did not take it%s); the old rules run on", (unsigned long long)(timeout / 1000000),
				 stuck ? ", injected: SENTINEL_TEST_FAULTS" : "");
			return -ETIMEDOUT;
		}
		nanosleep(&ms, NULL);
	}
	__atomic_store_n(&old->handoff, ENG_HO_NONE, __ATOMIC_RELEASE);
	if (s != ENG_HO_DONE) {
		snprintf(err, n, "the new rules' tick thread did not start%s; the old rules run on",
			 old->faults && eng_test_fault("handover") ? " (injected: SENTINEL_TEST_FAULTS)" : "");
		return -EAGAIN;
	}
	pthread_join(old->thread, NULL);
	old->thread_on = false;
	return 0;
}

uint32_t eng_task_cap(const Engine *e) { return e->params.task_cap; }
uint64_t eng_read_budget(const Engine *e) { return e->params.read_budget; }

uint64_t eng_read_budget_auto(uint32_t task_cap, uint32_t obj_cap)
{
	return ENG_BUDGET_BASE + (uint64_t)ENG_BUDGET_TASK * task_cap +
	       (uint64_t)ENG_BUDGET_OBJ * SN_OBJ_KINDS * (obj_cap ? obj_cap : WD_OBJ_CAP);
}
const Bundle *eng_bundle(const Engine *e) { return e->b; }

bool eng_arm(Engine *e)
{
	if (e->backend == ENG_CUDA)
		return gpu_arm(e->gpu);
	return e->wake_fd > 0;
}

int eng_settle(Engine *e, char *note, size_t nn, char *err, size_t n)
{
	*note = 0;
	if (e->backend != ENG_CUDA)
		return 0;
	GpuReap R;
	int r = gpu_reap(e->gpu, &R, err, n);
	if (r)
		return r;
	if (R.kept)
		snprintf(note, nn, "the old CUDA context is kept for the next reload (a %.0f ms tick leaves no room to "
			 "release it)", (double)e->params.tick_ns / 1e6);
	else if (R.destroyed)
		snprintf(note, nn, "the old CUDA context released in %.1f ms between two ticks (the next ran %.1f ms "
			 "after its time, %llu late)", (double)R.destroy_ns / 1e6, (double)R.delay_ns / 1e6,
			 (unsigned long long)R.late);
	return 0;
}

bool eng_gpu_lost(void) { return gpu_lost(); }

int eng_rules_carried(const Bundle *b, const Bundle *old, bool *carried) { return wd_carry(b, old, NULL, carried); }

/* A kernel or tick thread that neither ticks nor ends is stuck: its
 * heartbeat (stats->heartbeat, one a tick) has not moved for 10 s and 50
 * ticks.  A finished or failed kernel is gpu_poll's to report. */
int eng_health(Engine *e, char *err, size_t n)
{
	if (e->faults && e->backend == ENG_CUDA && eng_test_fault("kernel-exit"))
		gpu_test_exit(e->gpu);
	int r = e->backend == ENG_CUDA ? gpu_poll(e->gpu, err, n) : 0;
	if (r)
		return r;
	uint64_t hb = __atomic_load_n(&e->stats->heartbeat, __ATOMIC_RELAXED), now = u_now_ns();
	if (hb != e->hb || !e->hb_ns) {
		e->hb = hb;
		e->hb_ns = now;
		return 0;
	}
	if (now - e->hb_ns > 10000000000ull + 50 * e->params.tick_ns) {
		snprintf(err, n, "the %s has not ticked for %.0f s (at tick %llu); no rule runs",
			 e->backend == ENG_CUDA ? "persistent kernel" : "tick thread", (double)(now - e->hb_ns) / 1e9,
			 (unsigned long long)__atomic_load_n(&e->stats->ticks, __ATOMIC_RELAXED));
		return -ETIMEDOUT;
	}
	return 0;
}

unsigned eng_drain(Engine *e, EngAlertFn fn, void *ctx)
{
	return wd_ring_drain(e->ring, fn, ctx);
}

void eng_stats(const Engine *e, sn_stats *out, uint64_t *dropped)
{
	memcpy(out, (const void *)e->stats, sizeof *out);
	if (dropped)
		*dropped = __atomic_load_n(&e->ring->dropped, __ATOMIC_RELAXED);
}

int eng_rule_states(Engine *e, sn_rstate *out, char *err, size_t n)
{
	size_t bytes = e->b->nrules * sizeof(sn_rstate);
	if (e->backend == ENG_CUDA)
		return gpu_read(e->gpu, e->L.o_rstate, out, bytes, err, n);
	memcpy(out, (char *)e->block + e->L.o_rstate, bytes);
	return 0;
}

int eng_entity_states(Engine *e, size_t rule, sn_estate **out, uint32_t *n, uint32_t *overflow, char *err,
		      size_t errn)
{
	uint32_t cap = 0;
	size_t at = rule < e->b->nrules ? wd_ent_at(e->b, &e->params, &e->L, rule, &cap) : 0;
	*out = NULL;
	*n = *overflow = 0;
	if (!cap)
		return 0;
	sn_etab T;
	sn_estate *v = malloc((size_t)cap * sizeof *v);
	if (!v) {
		snprintf(err, errn, "out of memory");
		return -ENOMEM;
	}
	size_t o_tab = e->L.o_etab + rule * sizeof(sn_etab);
	int r = 0;
	if (e->backend == ENG_CUDA) {
		if (!(r = gpu_read(e->gpu, o_tab, &T, sizeof T, err, errn)))
			r = gpu_read(e->gpu, at, v, (size_t)cap * sizeof *v, err, errn);
	} else {
		memcpy(&T, (char *)e->block + o_tab, sizeof T);
		memcpy(v, (char *)e->block + at, (size_t)cap * sizeof *v);
	}
	if (r) {
		free(v);
		return r;
	}
	/* those with an alert (pending or firing), packed */
	uint32_t k = 0;
	for (uint32_t i = 0; i < cap; i++)
		if (v[i].key && (v[i].st.phase == SN_PENDING || v[i].st.phase == SN_FIRING))
			v[k++] = v[i];
	*out = v;
	*n = k;
	*overflow = T.last_overflow;
	return 0;
}

/* ---- a fleet ------------------------------------------------------------------------------------ */

/* An EngFleet is the GPU's fleet itself (gpu.h), behind the engine's name. */
int eng_fleet_open(const Bundle *b, const EngOpts *o, EngFleet **out, char *err, size_t n)
{
	if (eng_abi_check(b, err, n))
		return -ENOEXEC;
	GpuFleet *f;
	int r = gpu_fleet_open(b, o ? o->gpu : 0, &f, err, n);
	if (!r)
		*out = (EngFleet *)f;
	return r;
}

void eng_fleet_info(EngFleet *f, EngFleetInfo *out)
{
	GpuFleetInfo g;
	gpu_fleet_info((GpuFleet *)f, &g);
	*out = (EngFleetInfo){.members = g.members, .groups = g.groups, .group_blocks = g.group_blocks,
			      .grid = g.grid, .launches = g.launches, .passes = g.passes,
			      .late_passes = g.late_passes, .max_pass_ns = g.max_pass_ns};
	snprintf(out->device, sizeof out->device, "%s", gpu_fleet_device((GpuFleet *)f));
}

bool eng_fleet_seen(EngFleet *f) { return gpu_fleet_seen((GpuFleet *)f); }
bool eng_fleet_arm(EngFleet *f, int wake_fd) { return gpu_fleet_arm((GpuFleet *)f, wake_fd); }
int eng_fleet_halt(EngFleet *f, char *err, size_t n) { return gpu_fleet_halt((GpuFleet *)f, err, n); }
int eng_fleet_batch(EngFleet *f, bool on, char *err, size_t n) { return gpu_fleet_batch((GpuFleet *)f, on, err, n); }
int eng_fleet_pause(EngFleet *f, char *err, size_t n) { return gpu_fleet_pause((GpuFleet *)f, err, n); }

int eng_fleet_link(Engine *e, Engine *old, unsigned *kept, char *err, size_t n)
{
	if (!e->fleet || !old->fleet) {
		snprintf(err, n, "not members of a GPU fleet");
		return -EINVAL;
	}
	return eng_gpu_link(e, old, kept, err, n);
}

void eng_fleet_close(EngFleet *f) { gpu_fleet_close((GpuFleet *)f); }
