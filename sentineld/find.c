/* find.c - sentineld: finding a target's kernel (discovery), on threads:
 * every target at once at the start, and a lost one on a thread of its
 * own (DFinder: the search, then the rules' load through the gate a
 * reload closes) while the loop and the other targets go on. */
#include "sentineld.h"

/* Open the source of section cf and find the kernel in it (discovery):
 * host work on what it is given alone, no engine, no Daemon, so several
 * targets are found at once on threads of their own (d_find_targets, a
 * lost target's DFinder).  cancel (or NULL) stops it; it gives up past
 * D_FIND_DEADLINE_NS whatever the guest's memory holds. */
static int d_find(const CfTarget *cf, const char *label, const int *cancel, MemSource **src, KTarget **t,
		  struct stat *st, char *err, size_t n)
{
	KtOptions ko = {.kallsyms_file = cf->kallsyms, .btf_file = cf->btf, .cancel = cancel,
			.deadline_ns = u_now_ns() + D_FIND_DEADLINE_NS};
	char why[512];
	int r = ms_open(cf->source, src, why, sizeof why);
	if (r) {
		snprintf(err, n, "target %s: %s", label, why);
		return r;
	}
	if (d_file_backed(*src) && stat((*src)->path, st))
		memset(st, 0, sizeof *st);
	if ((r = kt_open(*src, &ko, t, why, sizeof why))) {
		snprintf(err, n, "target %s: %s", label, why);
		ms_close(*src);
		*src = NULL;
		*t = NULL;
	}
	return r;
}

/* Wake the main loop from a worker: its wake eventfd (fd 0: none, the
 * loop's next timeout sees the work instead). */
void d_wake(int wake_fd)
{
	if (wake_fd > 0) {
		uint64_t one = 1;
		ssize_t w = write(wake_fd, &one, sizeof one);
		(void)w;                 /* a full counter wakes it just as well */
	}
}

int d_find_target(DTarget *T, char *err, size_t n)
{
	return d_find(&T->cf, T->label, NULL, &T->src, &T->t, &T->ram_st, err, n);
}

/* Every thread sentineld starts blocks the signals the loop handles
 * (threads inherit the mask at creation): SIGTERM, SIGHUP and SIGINT
 * reach the loop's ppoll alone, never a worker in the middle of a scan. */
int d_thread(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int r = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* ---- the load gate (DGate) ------------------------------------------------------------- */

void d_gate_init(Daemon *D)
{
	pthread_mutex_init(&D->gate.mu, NULL);
	pthread_cond_init(&D->gate.cv, NULL);
}

/* A reload starts (on its thread): no finder loads until it is over. */
void d_gate_close(Daemon *D)
{
	DGate *G = &D->gate;
	pthread_mutex_lock(&G->mu);
	G->closed = true;
	while (G->loading)
		pthread_cond_wait(&G->cv, &G->mu);
	pthread_mutex_unlock(&G->mu);
}

/* The reload is over (the loop): the finders waiting load what runs now. */
void d_gate_open(Daemon *D)
{
	DGate *G = &D->gate;
	pthread_mutex_lock(&G->mu);
	G->closed = false;
	pthread_cond_broadcast(&G->cv);
	pthread_mutex_unlock(&G->mu);
}

/* A reload's handover begins (the loop, the gate closed): what finders
 * loaded so far was loaded with the rules (and the GPU fleet) the
 * handover replaces; their engines close now, while those rules are
 * still there, and the targets load again (d_finder_take). */
void d_gate_stale(Daemon *D)
{
	pthread_mutex_lock(&D->gate.mu);
	D->gate.gen++;
	pthread_mutex_unlock(&D->gate.mu);
	for (unsigned i = 0; i < D->ntg; i++) {
		DFinder *F = D->tg[i].finder;
		if (!F || !__atomic_load_n(&F->done, __ATOMIC_ACQUIRE) || !F->e)
			continue;
		eng_close(F->e);
		F->e = NULL;
		kl_close(F->klog);
		F->klog = NULL;
		F->rc = -ESTALE;
	}
}

/* ---- a lost target's worker (DFinder) ------------------------------------------------- */

/* The found target's engine: the rules that run now, through the gate. */
static int d_finder_load(DFinder *F)
{
	Daemon *D = F->D;
	DGate *G = &D->gate;
	pthread_mutex_lock(&G->mu);
	while (G->closed && !__atomic_load_n(&F->cancel, __ATOMIC_RELAXED))
		pthread_cond_wait(&G->cv, &G->mu);
	if (__atomic_load_n(&F->cancel, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&G->mu);
		snprintf(F->err, sizeof F->err, "target %s: the search was cancelled", F->label);
		return -ECANCELED;
	}
	G->loading++;
	const Bundle *b = D->b;                 /* (changed only while the gate is closed) */
	EngOpts eo = D->eo;
	bool several = D->ntg > 1;
	F->gen = G->gen;
	pthread_mutex_unlock(&G->mu);
	__atomic_store_n(&F->phase, DT_loading, __ATOMIC_RELEASE);
	uint64_t t0 = u_now_ns();
	eo.task_cap = F->task_cap;
	d_target_opts_cf(D, &F->cf, &eo);
	char why[512];
	int r = eng_open(b, F->t, &eo, &F->e, why, sizeof why);
	if (r)
		snprintf(F->err, sizeof F->err, "%.200s%s%.300s", several ? F->label : "", several ? ": " : "", why);
	/* the kernel's log, for critical alerts and $kernel_log: optional */
	else if (D->cf.kernel_log_lines && kl_open(F->t, &F->klog, why, sizeof why))
		snprintf(F->note, sizeof F->note, "%.255s", why);
	F->load_ns = u_now_ns() - t0;
	pthread_mutex_lock(&G->mu);
	G->loading--;
	pthread_cond_broadcast(&G->cv);
	pthread_mutex_unlock(&G->mu);
	return r;
}

static void *d_finder_main(void *arg)
{
	DFinder *F = arg;
	if (!F->found) {
		uint64_t t0 = u_now_ns();
		F->rc = d_find(&F->cf, F->label, &F->cancel, &F->src, &F->t, &F->ram_st, F->err, sizeof F->err);
		F->took_ns = u_now_ns() - t0;
	}
	if (!F->rc)
		F->rc = d_finder_load(F);
	__atomic_store_n(&F->done, 1, __ATOMIC_RELEASE);
	d_wake(F->wake_fd);
	return NULL;
}

static void d_finder_free(DFinder *F)
{
	eng_close(F->e);
	kl_close(F->klog);
	kt_close(F->t);
	ms_close(F->src);
	cf_target_free(&F->cf);
	free(F);
}

/* T's worker: find its kernel, then load the rules for it; or, given
 * what an earlier one found (src, t: a load made stale by a reload),
 * load only. */
static int d_finder_run(DTarget *T, MemSource *src, KTarget *t, const struct stat *st)
{
	DFinder *F = calloc(1, sizeof *F);
	if (!F)
		return -ENOMEM;
	if (cf_target_copy(&F->cf, &T->cf)) {
		free(F);
		return -ENOMEM;
	}
	F->D = T->D;
	snprintf(F->label, sizeof F->label, "%s", T->label);
	F->wake_fd = T->D->eo.wake_fd;
	F->task_cap = T->task_cap;
	F->phase = src ? DT_loading : DT_finding;
	if ((F->found = src != NULL)) {
		F->src = src;
		F->t = t;
		F->ram_st = *st;
	}
	if (d_thread(&F->th, d_finder_main, F)) {
		F->src = NULL;                   /* (the caller's still) */
		F->t = NULL;
		d_finder_free(F);
		return -EAGAIN;
	}
	T->finder = F;
	if (!src)
		T->searches++;
	return 0;
}

int d_finder_start(DTarget *T)
{
	return d_finder_run(T, NULL, NULL, NULL);
}

void d_finder_stop(DTarget *T)
{
	DFinder *F = T->finder;
	if (!F)
		return;
	__atomic_store_n(&F->cancel, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&T->D->gate.mu);      /* one waiting at the gate wakes */
	pthread_cond_broadcast(&T->D->gate.cv);
	pthread_mutex_unlock(&T->D->gate.mu);
	pthread_join(F->th, NULL);
	d_finder_free(F);
	T->finder = NULL;
}

/* A worker that has ended: its answer (rc, and err with it), and on
 * success T's source, kernel and engine (not started: d_start_again).
 * The next search waits ten times as long as this one took (a guest
 * whose memory makes discovery slow gets at most a tenth of a core),
 * from D_TARGET_RETRY_NS up to D_TARGET_RETRY_MAX_NS.  A load a reload
 * made stale (d_gate_stale) starts again at once with what was found:
 * 1, the worker runs again. */
int d_finder_take(DTarget *T, char *err, size_t n)
{
	DFinder *F = T->finder;
	Daemon *D = T->D;
	pthread_join(F->th, NULL);
	int rc = F->rc;
	T->finder = NULL;
	if (!F->found) {
		uint64_t wait = 10 * F->took_ns;
		/* the fault tests' "search-backoff-8s": a test of a minute's wait
		 * waits 8 s (still backed off: past the 2 s floor) */
		uint64_t max = eng_test_fault("search-backoff-8s") ? 8000000000ull : D_TARGET_RETRY_MAX_NS;
		T->retry_ns = wait < D_TARGET_RETRY_NS ? D_TARGET_RETRY_NS : wait > max ? max : wait;
		T->last_search_ns = F->took_ns;
	}
	if (rc == -ESTALE && !d_finder_run(T, F->src, F->t, &F->ram_st)) {
		F->src = NULL;                   /* the new worker's */
		F->t = NULL;
		d_finder_free(F);
		return 1;
	}
	if (rc == -ESTALE)
		snprintf(F->err, sizeof F->err, "target %s: a reload changed the rules while they loaded, and no "
			 "thread could load them again; looking for it again", F->label);
	if (rc) {
		snprintf(err, n, "%s", F->err);
	} else {
		T->src = F->src;
		T->t = F->t;
		T->ram_st = F->ram_st;
		T->e = F->e;
		T->klog = F->klog;
		F->src = NULL;
		F->t = NULL;
		F->e = NULL;
		F->klog = NULL;
		if (F->note[0])
			nt_log(D->nt, 4, "%s: alerts will carry no kernel log: %s", T->label, F->note);
		nt_log(D->nt, 7, "%s: found in %.0f ms, the rules loaded in %.0f ms (on a worker thread)", T->label,
		       (double)F->took_ns / 1e6, (double)F->load_ns / 1e6);
	}
	d_finder_free(F);
	return rc;
}

/* d_find_targets' threads take the next target until none is left. */
typedef struct DFind {
	Daemon *D;
	int *rc;                   /* [D->ntg] d_find_target's answers */
	char (*err)[512];          /* [D->ntg] and its words */
	unsigned next, done;       /* atomics */
	int cancel;                /* atomic: SIGTERM or SIGINT came (blocked: pending) */
} DFind;

static void *d_find_worker(void *arg)
{
	DFind *F = arg;
	for (;;) {
		unsigned i = __atomic_fetch_add(&F->next, 1, __ATOMIC_RELAXED);
		if (i >= F->D->ntg)
			return NULL;
		DTarget *T = &F->D->tg[i];
		F->rc[i] = d_find(&T->cf, T->label, &F->cancel, &T->src, &T->t, &T->ram_st, F->err[i], sizeof F->err[i]);
		__atomic_fetch_add(&F->done, 1, __ATOMIC_RELEASE);
	}
}

/* Every target's source and kernel (sentineld's start, several targets):
 * discovery is about 0.1 s of CPU a target (the VMCOREINFO scan, kallsyms,
 * BTF), so 500 found one after another took 50 s; here on up to 16
 * threads, half the CPUs, with the progress logged every 10 s.  rc[i] and
 * err[i] are target i's answer; the engines load after, one by one. */
void d_find_targets(Daemon *D, int *rc, char (*err)[512])
{
	DFind F = {.D = D, .rc = rc, .err = err};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN) / 2;
	unsigned nt = cpus < 1 ? 1 : cpus > 16 ? 16 : (unsigned)cpus, started = 0;
	if (nt > D->ntg)
		nt = D->ntg;
	pthread_t th[16];
	for (; started < nt; started++)
		if (d_thread(&th[started], d_find_worker, &F))
			break;
	if (!started) {                  /* no thread: this one does it all */
		d_find_worker(&F);
		return;
	}
	uint64_t t0 = u_now_ns(), said = t0;
	while (__atomic_load_n(&F.done, __ATOMIC_ACQUIRE) < D->ntg) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
		sigset_t pending;              /* a stop asked for (the main loop takes it): the searches end now */
		if (!sigpending(&pending) && (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT)))
			__atomic_store_n(&F.cancel, 1, __ATOMIC_RELAXED);
		if (u_now_ns() - said >= 10ull * 1000000000ull) {
			said = u_now_ns();
			nt_log(D->nt, 6, "finding the targets' kernels: %u of %u, %.0f s", __atomic_load_n(&F.done, __ATOMIC_ACQUIRE),
			       D->ntg, (double)(said - t0) / 1e9);
		}
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}
