/* sd_target.c - sentineld: a target: opening it, and the watch that checks it and looks for it when lost. */
#include "sentineld.h"
#include <inttypes.h>

/* ---- the target ------------------------------------------------------------------ */

/* EngOpts.on_tick, on the CPU backend's tick thread: one record a tick. */
void d_record(void *ctx, const sn_world *w)
{
	Daemon *D = ctx;
	Recorder *r = __atomic_load_n(&D->rec, __ATOMIC_ACQUIRE);
	if (r && rec_tick(r, w))
		__atomic_fetch_add(&D->rec_errors, 1, __ATOMIC_RELAXED);
}

/* The recording follows the rules it started with: a reload ends it. */
void d_record_end(Daemon *D, const char *why)
{
	if (!D->rec)
		return;
	uint64_t ticks, bytes;
	rec_stats(D->rec, &ticks, &bytes);
	rec_close(D->rec);
	D->rec = NULL;
	nt_log(D->nt, 6, "recording %s ended (%s): %llu ticks, %.1f MiB, %llu records lost", D->cf.record, why,
	       (unsigned long long)ticks, (double)bytes / 1048576.0,
	       (unsigned long long)__atomic_load_n(&D->rec_errors, __ATOMIC_RELAXED));
}

/* T (zeroed) becomes the target of section cf, not yet open. */
int d_target_init(Daemon *D, DTarget *T, const CfTarget *cf)
{
	*T = (DTarget){.D = D, .task_cap = D->cf.tasks, .ts = TS_LOST};
	if (cf_target_copy(&T->cf, cf))
		return -ENOMEM;
	if (D->cf.ntargets == 1 && !D->cf.targets_dir)
		snprintf(T->label, sizeof T->label, "%s", T->cf.source);
	else
		snprintf(T->label, sizeof T->label, "%s (%.200s)", T->cf.name, T->cf.source);
	return 0;
}

void d_close_target(DTarget *T)
{
	T->dropping = false;             /* a new engine's alerts are news again */
	eng_close(T->e);
	T->e = NULL;
	kl_close(T->klog);
	T->klog = NULL;
	kt_close(T->t);
	T->t = NULL;
	ms_close(T->src);
	T->src = NULL;
}

/* A source whose memory is a file a VM owns (it goes when the VM does):
 * a RAM file, or one standing in for the pmem device. */
static bool d_file_backed(const MemSource *s)
{
	return s->kind == MS_RAMFILE || (s->kind == MS_PMEM && !s->pmem_device);
}

/* What the engine of T needs to know of it: its name and labels, for the
 * rules limited to targets by label. */
void d_target_opts(const DTarget *T, EngOpts *eo)
{
	eo->target_name = T->cf.name;
	eo->target_labels = T->cf.labels;
	eo->target_nlabels = T->cf.nlabels;
	uint64_t b = T->cf.read_budget ? T->cf.read_budget : T->D->cf.read_budget;
	eo->read_budget = b == CF_BUDGET_NONE ? 0 : b == CF_BUDGET_AUTO ? eng_read_budget_auto(eo->task_cap, eo->obj_cap) : b;
}

/* Open the source of section cf and find the kernel in it (discovery):
 * host work on what it is given alone, no engine, no Daemon, so several
 * targets are found at once on threads of their own (d_find_targets, a
 * lost target's DFinder).  cancel (or NULL) stops it; it gives up past
 * D_FIND_DEADLINE_NS whatever the guest's memory holds. */
static int d_find(const CfTarget *cf, const char *label, const int *cancel, MemSource **src, KTarget **t,
		  struct stat *st, char *err, size_t n)
{
	KtOptions ko = {.kallsyms_file = cf->kallsyms, .btf_file = cf->btf, .cancel = cancel,
			.deadline_ns = d_now() + D_FIND_DEADLINE_NS};
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

static void *d_finder_main(void *arg)
{
	DFinder *F = arg;
	uint64_t t0 = d_now();
	F->rc = d_find(&F->cf, F->label, &F->cancel, &F->src, &F->t, &F->ram_st, F->err, sizeof F->err);
	F->took_ns = d_now() - t0;
	__atomic_store_n(&F->done, 1, __ATOMIC_RELEASE);
	if (F->wake_fd > 0) {
		uint64_t one = 1;
		ssize_t w = write(F->wake_fd, &one, sizeof one);
		(void)w;
	}
	return NULL;
}

int d_finder_start(DTarget *T)
{
	DFinder *F = calloc(1, sizeof *F);
	if (!F)
		return -ENOMEM;
	if (cf_target_copy(&F->cf, &T->cf)) {
		free(F);
		return -ENOMEM;
	}
	snprintf(F->label, sizeof F->label, "%s", T->label);
	F->wake_fd = T->D->eo.wake_fd;
	if (d_thread(&F->th, d_finder_main, F)) {
		cf_target_free(&F->cf);
		free(F);
		return -EAGAIN;
	}
	T->finder = F;
	T->searches++;
	return 0;
}

static void d_finder_free(DFinder *F)
{
	kt_close(F->t);
	ms_close(F->src);
	cf_target_free(&F->cf);
	free(F);
}

void d_finder_stop(DTarget *T)
{
	DFinder *F = T->finder;
	if (!F)
		return;
	__atomic_store_n(&F->cancel, 1, __ATOMIC_RELAXED);
	pthread_join(F->th, NULL);
	d_finder_free(F);
	T->finder = NULL;
}

/* A search that has ended: its answer (rc, and err with it), and on
 * success its source and kernel become T's.  The next search waits ten
 * times as long as this one took (a guest whose memory makes discovery
 * slow gets at most a tenth of a core), from D_TARGET_RETRY_NS up to
 * D_TARGET_RETRY_MAX_NS. */
static int d_finder_take(DTarget *T, char *err, size_t n)
{
	DFinder *F = T->finder;
	pthread_join(F->th, NULL);
	int rc = F->rc;
	uint64_t wait = 10 * F->took_ns;
	T->retry_ns = wait < D_TARGET_RETRY_NS ? D_TARGET_RETRY_NS : wait > D_TARGET_RETRY_MAX_NS ? D_TARGET_RETRY_MAX_NS : wait;
	if (rc) {
		snprintf(err, n, "%s", F->err);
	} else {
		T->src = F->src;
		T->t = F->t;
		T->ram_st = F->ram_st;
		F->src = NULL;
		F->t = NULL;
	}
	d_finder_free(F);
	T->finder = NULL;
	return rc;
}

/* Load the bundle on the backend for a target d_find_target found. */
int d_load_target(DTarget *T, char *err, size_t n)
{
	Daemon *D = T->D;
	char why[512];
	int r;
	EngOpts eo = D->eo;
	eo.task_cap = T->task_cap;
	d_target_opts(T, &eo);
	if ((r = eng_open(D->b, T->t, &eo, &T->e, why, sizeof why))) {
		snprintf(err, n, "%s%s%s", D->ntg > 1 ? T->label : "", D->ntg > 1 ? ": " : "", why);
		d_close_target(T);
		return r;
	}
	/* the kernel's log, for critical alerts and $kernel_log: optional */
	if (D->cf.kernel_log_lines && kl_open(T->t, &T->klog, why, sizeof why))
		nt_log(D->nt, 4, "%s: alerts will carry no kernel log: %s", T->label, why);
	return 0;
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
	uint64_t t0 = d_now(), said = t0;
	while (__atomic_load_n(&F.done, __ATOMIC_ACQUIRE) < D->ntg) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
		sigset_t pending;              /* a stop asked for (the main loop takes it): the searches end now */
		if (!sigpending(&pending) && (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT)))
			__atomic_store_n(&F.cancel, 1, __ATOMIC_RELAXED);
		if (d_now() - said >= 10ull * 1000000000ull) {
			said = d_now();
			nt_log(D->nt, 6, "finding the targets' kernels: %u of %u, %.0f s", __atomic_load_n(&F.done, __ATOMIC_ACQUIRE),
			       D->ntg, (double)(said - t0) / 1e9);
		}
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

/* Open the source, find the kernel, load the bundle on the backend. */
int d_open_target(DTarget *T, char *err, size_t n)
{
	int r = d_find_target(T, err, n);
	return r ? r : d_load_target(T, err, n);
}

/* Why the VM behind T is gone (its RAM file removed or replaced, its
 * QEMU process ended: /proc/PID/map_files is then gone too), or NULL.
 * Its mapping still holds the memory as it was when it stopped: a stopped
 * machine switches no context and must not look hung. */
const char *d_target_gone(const DTarget *T)
{
	struct stat st;
	if (!T->src || !d_file_backed(T->src) || !T->ram_st.st_ino)
		return NULL;
	if (stat(T->src->path, &st))
		return "its RAM file was removed: the VM is gone";
	if (st.st_ino != T->ram_st.st_ino || st.st_dev != T->ram_st.st_dev)
		return "its RAM file was replaced: the VM restarted";
	return NULL;
}

/* Why the VM behind T is not running now though it is there (its
 * hypervisor paused it: libvirt's domain status), or NULL.  Its memory
 * holds still: no context switch, and not hung. */
const char *d_target_paused(DTarget *T)
{
	char st[32];
	if (ms_vm_state(T->cf.source, st, sizeof st) || (strcmp(st, "paused") && strcmp(st, "pmsuspended")))
		return NULL;
	snprintf(T->pause_why, sizeof T->pause_why, "paused by its hypervisor (libvirt: %s)", st);
	return T->pause_why;
}

void d_log_disabled(DTarget *T)
{
	Daemon *D = T->D;
	const RlResult *res = eng_relocs(T->e);
	for (size_t i = 0; i < D->b->nrules; i++) {
		const char *why = rl_rule_blocked(D->b, res, i, NULL);
		if (why && !(res->rule_off && res->rule_off[i]))   /* (limited to other targets: as asked) */
			nt_log(D->nt, 4, "rule %s (%s:%u) is disabled on %s%sLinux %s: %s", D->b->rules[i].name,
			       D->b->rules[i].file, D->b->rules[i].line, D->ntg > 1 ? T->cf.name : "",
			       D->ntg > 1 ? ", " : "", T->t->release, why);
	}
}

/* ---- the target watch -------------------------------------------------------------------- */

/* A target with more tasks than the table: the table grows (the same
 * rules, handed over like a reload: no tick is missed, every task keeps
 * its slot and histories) to a quarter more than the tasks, at least
 * double, up to [engine] max_tasks.  At that ceiling, or when a growth
 * fails (the windows' history_memory), it is a target error, said once
 * when it starts and once when it ends (the rows hold the tasks that fit;
 * per-task rules see only them). */
static void d_watch_tasks(DTarget *T, const sn_stats *S)
{
	Daemon *D = T->D;
	uint32_t cap = eng_task_cap(T->e), max = D->cf.max_tasks;
	bool full = S->tasks_found > cap;
	if (full && cap < max && T->grow_failed == 0 && !D->rl.on) {
		uint64_t want = (uint64_t)S->tasks_found + S->tasks_found / 4;
		want = (want + 1023) / 1024 * 1024;
		if (want < 2ull * cap)
			want = 2ull * cap;
		if (want > max)
			want = max;
		char msg[256];
		nt_log(D->nt, 5, "%s has %u tasks, more than the task table's %u rows: growing it to %u (max_tasks %u)",
		       T->label, S->tasks_found, cap, (unsigned)want, max);
		if (d_reload_start(D, NULL, (uint32_t)want, T, msg, sizeof msg))
			nt_log(D->nt, 4, "cannot grow the task table: %s", msg);
		return;
	}
	if (full && !T->tasks_full && (cap >= max || T->grow_failed)) {
		if (cap >= max)
			nt_log(D->nt, 3, "target error: %s has %u tasks, more than the task table's ceiling of %u rows: "
			       "per-task rules see %u of them; raise [engine] max_tasks and restart sentineld",
			       T->label, S->tasks_found, cap, cap);
		else
			nt_log(D->nt, 3, "target error: %s has %u tasks, more than the task table's %u rows, which could "
			       "not grow (see above): per-task rules see %u of them; raise [engine] history_memory or "
			       "tasks and restart sentineld", T->label, S->tasks_found, cap, cap);
		T->tasks_full = true;
	} else if (!full && T->tasks_full) {
		nt_log(D->nt, 5, "%s has %u tasks again: the task table holds them all", T->label, S->tasks_found);
		T->tasks_full = false;
	}
}

/* An object kind with more objects than the table's slots (disks,
 * cgroups, interfaces, mounts): a target error, said once when it starts
 * and once when it ends; rules over that kind see the objects that fit. */
static void d_watch_objects(DTarget *T, const sn_stats *S)
{
	Daemon *D = T->D;
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		const char *what = cat_entities[ENT_FIRST_OBJ + k].plural;
		bool full = S->objs_err[k] == -34;
		if (full && !T->objs_full[k])
			nt_log(D->nt, 3, "target error: %s has %u %s, more than the %u the table holds: rules over %s see "
			       "%u of them; raise [engine] objects and restart sentineld", T->label, S->objs_found[k], what,
			       D->cf.objects, what, D->cf.objects);
		else if (!full && T->objs_full[k])
			nt_log(D->nt, 5, "%s has %u %s again: the table holds them all", T->label, S->objs_found[k], what);
		T->objs_full[k] = full;
	}
}

/* Ticks cut off at the target's read budget (kx.h, kx_cur): a target
 * error, said once when it starts (with the reads of the longest tick)
 * and once when a check finds no new one; the values those ticks did not
 * reach were unknown, and the other targets never waited for them. */
static void d_watch_budget(DTarget *T, const sn_stats *S)
{
	Daemon *D = T->D;
	if (T->budget_e != T->e) {
		T->budget_e = T->e;
		T->budget_seen = 0;
	}
	uint64_t n = S->over_budget - T->budget_seen;
	T->budget_seen = S->over_budget;
	if (n && !T->over_budget)
		nt_log(D->nt, 3, "target error: %s: %" PRIu64 " ticks read more than its read budget of %" PRIu64
		       " words (the most %" PRIu64 ") and were cut off there: values they did not reach are unknown. A "
		       "guest whose lists are that long is corrupt or hostile; if it is real, raise read_budget in its "
		       "[target] section or [engine]", T->label, n, eng_read_budget(T->e), S->max_reads);
	else if (!n && T->over_budget)
		nt_log(D->nt, 5, "%s's ticks fit its read budget again (the last read %" PRIu64 " words)", T->label,
		       S->reads);
	T->over_budget = n != 0;
}

/* Whether every target is lost (for systemd's STATUS). */
bool d_all_lost(const Daemon *D)
{
	for (unsigned i = 0; i < D->ntg; i++)
		if (D->tg[i].ts == TS_OK)
			return false;
	return true;
}

/* The next check of a target after now: on the period's grid, so that the
 * targets are checked together, in one wakeup of the main loop.  Checked
 * each on its own schedule, 500 targets started over two minutes woke the
 * loop 500 times a second, each time going over all of them (a tenth of
 * a core, docs/benchmarks.md). */
uint64_t d_next_check(uint64_t now, uint64_t period)
{
	return (now / period + 1) * period;
}

/* One target, when its check is due: still the machine we mapped?  A lost
 * one: back yet?  Each target on its own: the others tick on. */
static void d_watch_one(DTarget *T, uint64_t now)
{
	Daemon *D = T->D;
	char err[512] = "";
	if (T->ts == TS_OK) {
		if (now < T->next_check_ns)
			return;
		T->next_check_ns = d_next_check(now, D_TARGET_CHECK_NS);
		const char *lost = d_target_gone(T);
		if (!lost && ms_changed(T->src) > 0)
			lost = "its RAM ranges changed (memory brought online or taken offline): mapping them again";
		if (!lost && !kt_unchanged(T->t))
			lost = "its memory no longer holds the kernel found at start (rebooted, or overwritten)";
		if (!lost && eng_health(T->e, err, sizeof err))
			lost = err;
		const char *paused = lost ? NULL : d_target_paused(T);
		if (paused) {
			snprintf(T->err, sizeof T->err, "%s", paused);
			nt_log(D->nt, 5, "target paused: %s %s; its rules stop until it runs again", T->label, paused);
			d_drain(D);
			d_close_target(T);
			T->ts = TS_PAUSED;
			return;
		}
		if (!lost) {
			sn_stats S;                /* host-mapped on the GPU: copied once */
			eng_stats(T->e, &S, NULL);
			d_watch_tasks(T, &S);
			d_watch_objects(T, &S);
			d_watch_budget(T, &S);
			return;
		}
		snprintf(T->err, sizeof T->err, "%s", lost);
		T->retry_err[0] = 0;
		nt_log(D->nt, 3, "target error: %s %s; the rules stop until it is back", T->label, lost);
		d_drain(D);
		d_close_target(T);
		T->ts = TS_LOST;
		if (d_all_lost(D))
			d_sd_notify("STATUS=target lost");
		return;
	}
	if (T->finder) {                         /* a search in progress: done yet? */
		if (!__atomic_load_n(&T->finder->done, __ATOMIC_ACQUIRE))
			return;
		int r = d_finder_take(T, err, sizeof err);
		T->next_check_ns = d_next_check(now, T->retry_ns);
		if (!r)
			r = d_load_target(T, err, sizeof err);
		if (r) {
			if (T->err[0])
				snprintf(T->retry_err, sizeof T->retry_err, "%s", err);
			else
				snprintf(T->err, sizeof T->err, "%s", err);
			return;
		}
		T->back = true;                  /* started by d_watch_target, with the others back */
		return;
	}
	if (now < T->next_check_ns)
		return;
	T->next_check_ns = d_next_check(now, T->retry_ns ? T->retry_ns : D_TARGET_RETRY_NS);
	const char *paused = d_target_paused(T);
	if (paused) {                            /* not yet: its memory still holds still */
		snprintf(T->err, sizeof T->err, "%s", paused);
		return;
	}
	if (T->ts == TS_PAUSED)                  /* running again, or gone: looked for as a lost one */
		T->ts = TS_LOST;
	/* the search runs on its own thread: the loop, and every other
	 * target, go on while it scans (the finder wakes the loop when done) */
	if (d_finder_start(T))
		snprintf(T->retry_err, sizeof T->retry_err, "cannot start a thread to look for it; trying again");
}

/* A target opened again: its rules start. */
static void d_start_again(DTarget *T)
{
	Daemon *D = T->D;
	char err[512];
	T->back = false;
	if (eng_start(T->e, err, sizeof err)) {
		nt_log(D->nt, 3, "%s is back but the rules cannot start: %s", T->label, err);
		d_close_target(T);
		return;
	}
	T->ts = TS_OK;
	T->err[0] = T->retry_err[0] = 0;
	T->retry_ns = 0;
	T->restarts++;
	nt_log(D->nt, 6, "target back: %s%sLinux %s, KASLR offset 0x%llx; the same %zu rules run again (%s)",
	       D->ntg > 1 ? T->cf.name : "", D->ntg > 1 ? ": " : "", T->t->release,
	       (unsigned long long)T->t->kaslr_offset, D->b->nrules, eng_backend_note(T->e));
	d_log_disabled(T);
	d_sd_notify("STATUS=running");
}

void d_watch_target(Daemon *D)
{
	if (D->rl.on)                    /* the reload's thread uses the targets */
		return;
	uint64_t now = d_now();
	unsigned back = 0;
	for (unsigned i = 0; i < D->ntg && !D->rl.on; i++) {
		d_watch_one(&D->tg[i], now);
		back += D->tg[i].back;
	}
	/* those back start together: on the GPU the fleet's kernel stops and
	 * starts once for all of them, after they were opened (slow: while
	 * it is stopped no target ticks) */
	char err[512];
	if (back > 1 && D->fleet)
		eng_fleet_batch(D->fleet, true, err, sizeof err);
	for (unsigned i = 0; i < D->ntg && back; i++)
		if (D->tg[i].back)
			d_start_again(&D->tg[i]);
	if (back > 1 && D->fleet && eng_fleet_batch(D->fleet, false, err, sizeof err))
		nt_log(D->nt, 3, "the GPU's kernel for the targets cannot start again: %s", err);
}
