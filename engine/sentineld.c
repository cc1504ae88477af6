/* sentineld - run the rules on the GPU (or the CPU) against a target.
 *
 * One thread here: it drains alerts into the notifier, watches the target,
 * serves the control socket and reloads; the detection itself runs on the
 * GPU's persistent kernel (or the CPU backend's tick thread) and needs
 * nothing from it.  Signal handlers only set flags (SIGHUP: reload;
 * SIGTERM, SIGINT: stop).  Reload is validate all, then hand over, and on
 * any failure the running rules stay as they were.
 */
#include "compile.h"
#include "config.h"
#include "engine.h"
#include "gpu.h"
#include "klog.h"
#include "ktarget.h"
#include "msrc.h"
#include "http.h"
#include "notify.h"
#include "prom.h"
#include "record.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef SENTINEL_VERSION
#define SENTINEL_VERSION "0.1.0"
#endif
#ifndef SENTINEL_SYSCONFDIR
#define SENTINEL_SYSCONFDIR "/etc"
#endif

#define D_MAX_CLIENTS 16
#define D_TARGET_CHECK_NS 1000000000ull   /* how often the target is checked */
#define D_TARGET_RETRY_NS 2000000000ull   /* how often a lost target is looked for */
#define D_COMPILE_NICE 10                 /* compiling rules yields to the host's real work */
#define D_NEWEST_ARCH 90                  /* the newest sm_NN LLVM 19's NVPTX back end knows */
#define D_STR_(x) #x
#define D_STR(x) D_STR_(x)

typedef enum { TS_OK, TS_LOST } TargetState;

/* A control-socket client.  Its fd is non-blocking: answers queue in out
 * (owned, malloc'd) and go as the client reads them; a client that lets
 * more than D_CLIENT_OUT_MAX wait is dropped.  Its requests are not read
 * while it waits for its reload or has answers queued. */
typedef struct Client {
	int fd;
	char buf[4096];
	size_t len;
	bool waiting;                 /* for its reload: not read until answered */
	char *out;                    /* answers not yet written */
	size_t out_len, out_off;
} Client;

#define D_CLIENT_OUT_MAX (64u << 20)

/* A reload in two halves: the slow one (compile the rule directory, load
 * the new rules on the backend: seconds, minutes for 10,000 rules) on a
 * thread of its own, while the main loop goes on delivering alerts and
 * answering; the handover on the main loop once that is done.  Owns nb,
 * ne and diags until the handover takes them. */
typedef struct DReload {
	struct Daemon *D;
	pthread_t thread;
	bool on;                      /* in progress (the thread runs, or is done and not yet joined) */
	int done;                     /* atomic: the thread has finished */
	Client *client;               /* waits for the answer; NULL: SIGHUP or a growth */
	bool by_socket;               /* asked on the control socket (the client may have left) */
	uint32_t grow;                /* 0: new rules; else the same rules with a task table of this many rows */
	uint64_t t0;
	Bundle *nb;
	Engine *ne;
	char *diags;                  /* rule errors, rulec's format */
	char err[1024];
	int r_rules, r_open;          /* d_rules_load's and eng_open's results */
} DReload;

typedef struct Daemon {
	Config cf;
	Notifier *nt;
	MemSource *src;
	KTarget *t;
	KlLog *klog;                  /* the target's printk ring, or NULL (kernel_log_lines = 0, unreadable) */
	Bundle *b;
	Engine *e;
	EngOpts eo;
	CompOpts co;
	char archs[64];
	int lfd;
	Client cl[D_MAX_CLIENTS];
	uint64_t started_ns, next_check_ns;
	struct stat ram_st;             /* a ramfile target: the file we mapped */
	TargetState ts;
	char target_err[512];
	unsigned reloads, target_restarts;
	char last_reload[600];
	uint64_t alerts_seen;
	const char *wake;             /* how alerts reach the host: "gpu doorbell", "tick thread", "poll" */
	bool tasks_full;              /* the target had more tasks than the table at the last check */
	bool objs_full[SN_OBJ_KINDS]; /* ... more objects of a kind than [engine] objects */
	uint32_t grow_failed;         /* the task table size a growth failed to reach (not tried again) */
	Recorder *rec;                /* [engine] record: written by the tick thread (d_record) */
	PxServer *px;                 /* [metrics] listen: /metrics, or NULL */
	uint64_t rec_errors;          /* atomic: records that could not be written */
	DReload rl;
} Daemon;

static volatile sig_atomic_t d_reload_flag, d_quit_flag;

static void d_on_signal(int sig)
{
	if (sig == SIGHUP)
		d_reload_flag = 1;
	else
		d_quit_flag = 1;
}

static uint64_t d_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* systemd's readiness protocol (sd_notify(3)): one datagram to
 * $NOTIFY_SOCKET.  A no-op outside systemd. */
static void d_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path || strlen(path) >= sizeof ((struct sockaddr_un *)0)->sun_path)
		return;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path, path, strlen(path));
	if (a.sun_path[0] == '@')
		a.sun_path[0] = 0;             /* abstract namespace */
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&a, len) < 0)
		nt_log(NULL, 4, "cannot notify systemd: %s", strerror(errno));
	close(fd);
}

/* ---- the target ------------------------------------------------------------------ */

/* EngOpts.on_tick, on the CPU backend's tick thread: one record a tick. */
static void d_record(void *ctx, const sn_world *w)
{
	Daemon *D = ctx;
	Recorder *r = __atomic_load_n(&D->rec, __ATOMIC_ACQUIRE);
	if (r && rec_tick(r, w))
		__atomic_fetch_add(&D->rec_errors, 1, __ATOMIC_RELAXED);
}

/* The recording follows the rules it started with: a reload ends it. */
static void d_record_end(Daemon *D, const char *why)
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

static void d_close_target(Daemon *D)
{
	eng_close(D->e);
	D->e = NULL;
	kl_close(D->klog);
	D->klog = NULL;
	kt_close(D->t);
	D->t = NULL;
	ms_close(D->src);
	D->src = NULL;
}

/* A source whose memory is a file a VM owns (it goes when the VM does):
 * a RAM file, or one standing in for the pmem device. */
static bool d_file_backed(const MemSource *s)
{
	return s->kind == MS_RAMFILE || (s->kind == MS_PMEM && !s->pmem_device);
}

/* Open the source, find the kernel, load the bundle on the backend. */
static int d_open_target(Daemon *D, char *err, size_t n)
{
	KtOptions ko = {.kallsyms_file = D->cf.kallsyms, .btf_file = D->cf.btf};
	char why[512];
	int r = ms_open(D->cf.source, &D->src, why, sizeof why);
	if (r) {
		snprintf(err, n, "target %s: %s", D->cf.source, why);
		return r;
	}
	if (d_file_backed(D->src) && stat(D->src->path, &D->ram_st))
		memset(&D->ram_st, 0, sizeof D->ram_st);
	if ((r = kt_open(D->src, &ko, &D->t, why, sizeof why))) {
		snprintf(err, n, "target %s: %s", D->cf.source, why);
		d_close_target(D);
		return r;
	}
	if ((r = eng_open(D->b, D->t, &D->eo, &D->e, why, sizeof why))) {
		snprintf(err, n, "%s", why);
		d_close_target(D);
		return r;
	}
	/* the kernel's log, for critical alerts and $kernel_log: optional */
	if (D->cf.kernel_log_lines && kl_open(D->t, &D->klog, why, sizeof why))
		nt_log(D->nt, 4, "alerts will carry no kernel log: %s", why);
	return 0;
}

static void d_log_disabled(Daemon *D)
{
	const RlResult *res = eng_relocs(D->e);
	for (size_t i = 0; i < D->b->nrules; i++) {
		const char *why = rl_rule_blocked(D->b, res, i, NULL);
		if (why)
			nt_log(D->nt, 4, "rule %s (%s:%u) is disabled on Linux %s: %s", D->b->rules[i].name,
			       D->b->rules[i].file, D->b->rules[i].line, D->t->release, why);
	}
}

/* ---- alerts ------------------------------------------------------------------------- */

static void d_alert(void *ctx, const sn_alert *a)
{
	Daemon *D = ctx;
	if (a->rule >= D->b->nrules)
		return;
	sn_stats S;
	eng_stats(D->e, &S, NULL);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	/* engine clock -> wall clock: the record's age against the last tick */
	uint64_t age = S.last_tick_ns > a->time_ns ? S.last_tick_ns - a->time_ns : 0;
	int64_t ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec - (int64_t)age;
	NtEvent ev = {.rule = &D->b->rules[a->rule], .kind = (SnEventKind)a->kind, .value = a->value,
		      .entity = a->entity, .comm = a->comm, .tick = a->tick,
		      .when = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)}};
	/* the kernel's last words, read from its RAM now: a panic's message is
	 * in the ring within microseconds of panic_cpu being set */
	char *klog = NULL, why[256];
	if (D->klog && (ev.kind == SN_EV_FIRING || ev.kind == SN_EV_RESOLVED) && nt_wants_kernel_log(ev.rule) &&
	    !(klog = kl_tail(D->klog, D->cf.kernel_log_lines, why, sizeof why)))
		nt_log(D->nt, 4, "%s: the kernel log could not be read: %s", ev.rule->name, why);
	ev.kernel_log = klog;
	nt_event(D->nt, &ev);
	free(klog);
	D->alerts_seen++;
}

/* A scrape of /metrics waits: render the engine's last complete tick. */
static void d_metrics(Daemon *D)
{
	char err[256];
	sn_stats S;
	uint64_t dropped = 0;
	NhStats ds;
	const sn_world *w = NULL;
	sn_rstate *st = NULL;
	if (D->e && D->ts == TS_OK) {
		eng_stats(D->e, &S, &dropped);
		if (!(w = eng_values(D->e, err, sizeof err)))
			nt_log(D->nt, 4, "/metrics: %s", err);
		st = calloc(D->b->nrules ? D->b->nrules : 1, sizeof *st);
		if (st && eng_rule_states(D->e, st, err, sizeof err)) {
			free(st);
			st = NULL;
		}
	}
	nt_delivery(D->nt, &ds);
	double up_s = (double)(d_now() - D->started_ns) * 1e-9;
	PxInput in = {.b = D->b, .w = w, .rstate = st, .target = D->cf.name, .stats = D->e ? &S : NULL,
		      .ring_dropped = dropped, .delivery = &ds, .reloads = D->reloads, .alerts = D->alerts_seen,
		      .started = (double)time(NULL) - up_s};
	size_t len = 0;
	char *text = px_render(&in, &len);
	px_publish(D->px, text, len);
	free(st);
}

static void d_drain(Daemon *D)
{
	unsigned n = D->e ? eng_drain(D->e, d_alert, D) : 0;
	if (n)
		nt_flush(D->nt);           /* one sync for the lot, then they are sent */
	if (n && gpu_tracing()) {
		uint64_t t = d_now();
		fprintf(stderr, "gpu-trace %llu.%06llu drain: %u records\n", (unsigned long long)(t / 1000000000ull),
			(unsigned long long)(t % 1000000000ull / 1000), n);
	}
}

/* ---- reload ------------------------------------------------------------------------------ */

typedef struct DCompile {
	Daemon *D;
	Bundle **out;
	char **diags, *err;
	size_t n;
	int r;
} DCompile;

static void *d_compile_thread(void *arg)
{
	DCompile *j = arg;
	/* Linux: a thread's own nice value, inherited by the compiler's threads */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), D_COMPILE_NICE);
	j->r = comp_dir(j->D->cf.rules_dir, &j->D->co, j->out, j->diags, j->err, j->n);
	return NULL;
}

/* The rules: the rule directory compiled now, or a bundle file.  The
 * compiler runs at nice 10: sentineld usually shares the host with the
 * machines it watches, and a reload must not starve them (on a 2-CPU host
 * a reload's compile at nice 0 took a guest's hog from 99% to 76% busy,
 * enough to resolve the alert it had raised). */
static int d_rules_load(Daemon *D, Bundle **out, char **diags, char *err, size_t n)
{
	*diags = NULL;
	if (D->cf.bundle)
		return bd_read(D->cf.bundle, out, err, n);
	DCompile j = {.D = D, .out = out, .diags = diags, .err = err, .n = n};
	pthread_t t;
	if (pthread_create(&t, NULL, d_compile_thread, &j))
		return comp_dir(D->cf.rules_dir, &D->co, out, diags, err, n);
	pthread_join(t, NULL);
	return j.r;
}

static void *d_reload_thread(void *arg)
{
	DReload *R = arg;
	Daemon *D = R->D;
	/* the JIT of eng_open at nice 10 too, for the reason above */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), D_COMPILE_NICE);
	if (!R->grow)
		R->r_rules = d_rules_load(D, &R->nb, &R->diags, R->err, sizeof R->err);
	if (!R->r_rules && D->ts == TS_OK)     /* ts holds still: the target watch waits for us */
	{
		EngOpts eo = D->eo;
		eo.on_tick = NULL;             /* the recording keeps the old rules' layout */
		if (R->grow)
			eo.task_cap = R->grow;
		R->r_open = eng_open(R->grow ? D->b : R->nb, D->t, &eo, &R->ne, R->err, sizeof R->err);
	}
	__atomic_store_n(&R->done, 1, __ATOMIC_RELEASE);
	if (D->eo.wake_fd > 0) {
		uint64_t one = 1;
		ssize_t w = write(D->eo.wake_fd, &one, sizeof one);
		(void)w;
	}
	return NULL;
}

/* Start a reload for client c (NULL: SIGHUP), or with grow > 0 the same
 * rules with a task table of grow rows; its answer comes from
 * d_reload_done.  -EBUSY while one is in progress. */
static int d_reload_start(Daemon *D, Client *c, uint32_t grow, char *msg, size_t n)
{
	DReload *R = &D->rl;
	if (R->on) {
		snprintf(msg, n, "a reload is in progress (for %.0f s); try again when it ends",
			 (double)(d_now() - R->t0) / 1e9);
		return -EBUSY;
	}
	*R = (DReload){.D = D, .client = c, .by_socket = c != NULL, .grow = grow, .t0 = d_now(), .on = true};
	int e = pthread_create(&R->thread, NULL, d_reload_thread, R);
	if (e) {
		R->on = false;
		snprintf(msg, n, "cannot start the reload: %s; the running rules are unchanged", strerror(e));
		return -e;
	}
	if (c)
		c->waiting = true;
	return 0;
}

/* The second half: validate what the thread made, then hand over; the
 * running rules stay on any error.  Returns 0 or an error; *diags gets rule
 * errors in rulec's format (the caller frees them). */
static int d_reload(Daemon *D, char **diags, char *msg, size_t n)
{
	DReload *R = &D->rl;
	pthread_join(R->thread, NULL);
	R->on = false;
	uint64_t t0 = R->t0;
	Bundle *nb = R->nb;
	Engine *ne = R->ne;
	char err[1024];
	snprintf(err, sizeof err, "%s", R->err);
	*diags = R->diags;
	R->nb = NULL;
	R->ne = NULL;
	R->diags = NULL;
	int r = R->r_rules;
	if (r) {
		snprintf(msg, n, "%s", r == 1 ? "the rules have errors; the running rules are unchanged" : err);
		return r == 1 ? -EINVAL : r;
	}
	if (R->grow && D->ts != TS_OK) {   /* (the target watch waits for a reload: not seen) */
		if (ne)
			eng_close(ne);
		snprintf(msg, n, "the target was lost; the task table was not grown");
		return -ENODEV;
	}
	if (D->ts != TS_OK) {            /* no target now: take the rules, start with it later */
		bd_free(D->b);
		D->b = nb;
		snprintf(msg, n, "%zu rules loaded; the target is lost, they start when it is back", nb->nrules);
		return 0;
	}
	if ((r = R->r_open)) {
		if (R->grow)
			snprintf(msg, n, "cannot grow the task table to %u rows: %.900s; it keeps %u", R->grow, err,
				 eng_task_cap(D->e));
		else
			snprintf(msg, n, "the new rules cannot run: %.900s; the running rules are unchanged", err);
		bd_free(nb);
		return r;
	}
	unsigned kept = 0;
	d_drain(D);
	if ((r = eng_takeover(ne, D->e, &kept, err, sizeof err))) {
		snprintf(msg, n, "the handover failed: %.900s; the running rules are unchanged", err);
		eng_close(ne);
		bd_free(nb);
		return r;
	}
	d_drain(D);                      /* the old engine's last alerts */
	sn_stats os, ns;
	eng_stats(D->e, &os, NULL);
	eng_stats(ne, &ns, NULL);
	for (int i = 0; i < 50 && !ns.first_tick; i++) {      /* its first tick is at most one away */
		struct timespec ts = {0, (long)(D->eo.tick_ns / 10)};
		nanosleep(&ts, NULL);
		eng_stats(ne, &ns, NULL);
	}
	Engine *old = D->e;
	uint32_t old_cap = eng_task_cap(old);
	D->e = ne;
	eng_close(old);
	d_record_end(D, R->grow ? "the task table grew" : "a reload changed the rules");
	D->eo.on_tick = NULL;
	if (R->grow) {
		D->eo.task_cap = R->grow;      /* and later reloads keep it */
	} else {
		bd_free(D->b);
		D->b = nb;
		D->reloads++;
	}
	uint64_t t1 = d_now();
	char settled[256];
	if ((r = eng_settle(D->e, settled, sizeof settled, err, sizeof err)))
		snprintf(settled, sizeof settled, "after the handover: %.200s", err);
	/* the proof of no gap: the new engine's first tick is the old one's
	 * last plus one, one tick later */
	char what[128];
	if (R->grow)
		snprintf(what, sizeof what, "the task table grew from %u to %u rows", old_cap, R->grow);
	else
		snprintf(what, sizeof what, "%zu rules running (%u kept their state)", D->b->nrules, kept);
	snprintf(msg, n, "%s, reloaded in %.0f ms; handover: old tick %llu, "
		 "new tick %llu %.1f ms later (tick %.1f ms)%s%s", what, (double)(t1 - t0) / 1e6,
		 (unsigned long long)os.ticks, (unsigned long long)ns.first_tick,
		 (double)(ns.first_tick_ns - os.last_tick_ns) / 1e6, (double)D->eo.tick_ns / 1e6,
		 *settled ? "; " : "", settled);
	if (!R->grow)
		snprintf(D->last_reload, sizeof D->last_reload, "%.599s", msg);
	d_log_disabled(D);
	return 0;
}

static void d_answer(Daemon *D, Client *c, json_t *resp);
static void d_client_requests(Daemon *D, Client *c);

/* The reload's thread is done: hand over, log, answer whoever asked. */
static void d_reload_done(Daemon *D)
{
	Client *c = D->rl.client;
	uint32_t grow = D->rl.grow;
	char msg[1024], *diags = NULL;
	int r = d_reload(D, &diags, msg, sizeof msg);
	if (grow && r)
		D->grow_failed = grow;
	if (grow)
		nt_log(D->nt, r ? 3 : 5, "%s%s", r ? "target error: " : "", msg);
	else
		nt_log(D->nt, r ? 4 : 6, "reload (%s): %s", D->rl.by_socket ? "control socket" : "SIGHUP", msg);
	if (c) {
		json_t *resp = json_pack("{s:b, s:s}", "ok", r == 0, "message", msg);
		if (diags)
			json_object_set_new(resp, "diagnostics", json_string(diags));
		c->waiting = false;
		if (c->fd >= 0)
			d_answer(D, c, resp);
		json_decref(resp);
		d_client_requests(D, c);             /* what it sent meanwhile */
	} else if (diags) {
		fputs(diags, stderr);
	}
	free(diags);
}

/* The CPU backend's tick threads: [engine] threads, or a quarter of this
 * host's CPUs (1 to 8): sentineld shares the host with what it watches. */
static uint32_t d_threads(const Config *cf)
{
	if (cf->threads)
		return cf->threads;
	long n = sysconf(_SC_NPROCESSORS_ONLN) / 4;
	return n < 1 ? 1 : n > 8 ? 8 : (uint32_t)n;
}

/* ---- the target watch -------------------------------------------------------------------- */

/* A target with more tasks than the table: the table grows (the same
 * rules, handed over like a reload: no tick is missed, every task keeps
 * its slot and histories) to a quarter more than the tasks, at least
 * double, up to [engine] max_tasks.  At that ceiling, or when a growth
 * fails (the windows' history_memory), it is a target error, said once
 * when it starts and once when it ends (the rows hold the tasks that fit;
 * per-task rules see only them). */
static void d_watch_tasks(Daemon *D)
{
	sn_stats S;
	eng_stats(D->e, &S, NULL);
	uint32_t cap = eng_task_cap(D->e), max = D->cf.max_tasks;
	bool full = S.tasks_found > cap;
	if (full && cap < max && D->grow_failed == 0 && !D->rl.on) {
		uint64_t want = (uint64_t)S.tasks_found + S.tasks_found / 4;
		want = (want + 1023) / 1024 * 1024;
		if (want < 2ull * cap)
			want = 2ull * cap;
		if (want > max)
			want = max;
		char msg[256];
		nt_log(D->nt, 5, "%s has %u tasks, more than the task table's %u rows: growing it to %u (max_tasks %u)",
		       D->cf.source, S.tasks_found, cap, (unsigned)want, max);
		if (d_reload_start(D, NULL, (uint32_t)want, msg, sizeof msg))
			nt_log(D->nt, 4, "cannot grow the task table: %s", msg);
		return;
	}
	if (full && !D->tasks_full && (cap >= max || D->grow_failed)) {
		if (cap >= max)
			nt_log(D->nt, 3, "target error: %s has %u tasks, more than the task table's ceiling of %u rows: "
			       "per-task rules see %u of them; raise [engine] max_tasks and restart sentineld",
			       D->cf.source, S.tasks_found, cap, cap);
		else
			nt_log(D->nt, 3, "target error: %s has %u tasks, more than the task table's %u rows, which could "
			       "not grow (see above): per-task rules see %u of them; raise [engine] history_memory or "
			       "tasks and restart sentineld", D->cf.source, S.tasks_found, cap, cap);
		D->tasks_full = true;
	} else if (!full && D->tasks_full) {
		nt_log(D->nt, 5, "%s has %u tasks again: the task table holds them all", D->cf.source, S.tasks_found);
		D->tasks_full = false;
	}
}

/* An object kind with more objects than the table's slots (disks,
 * cgroups, interfaces, mounts): a target error, said once when it starts
 * and once when it ends; rules over that kind see the objects that fit. */
static void d_watch_objects(Daemon *D)
{
	sn_stats S;
	eng_stats(D->e, &S, NULL);
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		const char *what = cat_entities[ENT_FIRST_OBJ + k].plural;
		bool full = S.objs_err[k] == -34;
		if (full && !D->objs_full[k])
			nt_log(D->nt, 3, "target error: %s has %u %s, more than the %u the table holds: rules over %s see "
			       "%u of them; raise [engine] objects and restart sentineld", D->cf.source, S.objs_found[k], what,
			       D->cf.objects, what, D->cf.objects);
		else if (!full && D->objs_full[k])
			nt_log(D->nt, 5, "%s has %u %s again: the table holds them all", D->cf.source, S.objs_found[k], what);
		D->objs_full[k] = full;
	}
}

static void d_watch_target(Daemon *D)
{
	uint64_t now = d_now();
	if (now < D->next_check_ns || D->rl.on)    /* the reload's thread uses the target */
		return;
	char err[512] = "";
	if (D->ts == TS_OK) {
		D->next_check_ns = now + D_TARGET_CHECK_NS;
		struct stat st;
		const char *lost = NULL;
		if (d_file_backed(D->src) && D->ram_st.st_ino) {
			if (stat(D->src->path, &st))
				lost = "its RAM file was removed: the VM is gone";
			else if (st.st_ino != D->ram_st.st_ino || st.st_dev != D->ram_st.st_dev)
				lost = "its RAM file was replaced: the VM restarted";
		}
		if (!lost && ms_changed(D->src) > 0)
			lost = "its RAM ranges changed (memory brought online or taken offline): mapping them again";
		if (!lost && !kt_unchanged(D->t))
			lost = "its memory no longer holds the kernel found at start (rebooted, or overwritten)";
		if (!lost && eng_health(D->e, err, sizeof err))
			lost = err;
		if (!lost) {
			d_watch_tasks(D);
			d_watch_objects(D);
			return;
		}
		snprintf(D->target_err, sizeof D->target_err, "%s", lost);
		nt_log(D->nt, 3, "target error: %s %s; the rules stop until it is back", D->cf.source, lost);
		d_drain(D);
		d_close_target(D);
		D->ts = TS_LOST;
		d_sd_notify("STATUS=target lost");
		return;
	}
	D->next_check_ns = now + D_TARGET_RETRY_NS;
	if (d_open_target(D, err, sizeof err)) {
		snprintf(D->target_err, sizeof D->target_err, "%s", err);
		return;
	}
	if (eng_start(D->e, err, sizeof err)) {
		nt_log(D->nt, 3, "the target is back but the rules cannot start: %s", err);
		d_close_target(D);
		return;
	}
	D->ts = TS_OK;
	D->target_err[0] = 0;
	D->target_restarts++;
	nt_log(D->nt, 6, "target back: Linux %s, KASLR offset 0x%llx; the same %zu rules run again (%s)",
	       D->t->release, (unsigned long long)D->t->kaslr_offset, D->b->nrules, eng_backend_note(D->e));
	d_log_disabled(D);
	d_sd_notify("STATUS=running");
}

/* ---- the control socket ------------------------------------------------------------------- */

static const char *d_phase(uint32_t p)
{
	static const char *const n[] = {"inactive", "pending", "firing", "disabled"};
	return p < 4 ? n[p] : "?";
}

static json_t *d_status(Daemon *D)
{
	json_t *o = json_pack("{s:s, s:s, s:f, s:I, s:s}", "version", SENTINEL_VERSION, "rules_dir", D->cf.rules_dir,
			      "uptime_s", (double)(d_now() - D->started_ns) / 1e9, "tick_ns", (json_int_t)D->eo.tick_ns,
			      "target_name", D->cf.name);
	json_object_set_new(o, "target", json_pack("{s:s, s:s}", "source", D->cf.source, "state",
						   D->ts == TS_OK ? "ok" : "lost"));
	json_t *tg = json_object_get(o, "target");
	if (D->ts != TS_OK)
		json_object_set_new(tg, "error", json_string(D->target_err));
	if (D->t) {
		json_object_set_new(tg, "kernel", json_string(D->t->release));
		json_object_set_new(tg, "kaslr_offset", json_integer((json_int_t)D->t->kaslr_offset));
	}
	json_object_set_new(o, "target_restarts", json_integer(D->target_restarts));
	json_object_set_new(o, "rules", json_integer((json_int_t)D->b->nrules));
	json_object_set_new(o, "reloads", json_integer(D->reloads));
	if (*D->last_reload)
		json_object_set_new(o, "last_reload", json_string(D->last_reload));
	if (D->rl.on)
		json_object_set_new(o, "reload_running_s", json_real((double)(d_now() - D->rl.t0) / 1e9));
	json_object_set_new(o, "alerts_delivered", json_integer((json_int_t)D->alerts_seen));
	if (D->wake)
		json_object_set_new(o, "alerts_wake", json_string(D->wake));
	json_object_set_new(o, "notify_delay_ns", json_integer((json_int_t)D->cf.delay_ns));
	if (D->cf.alertmanager || D->cf.webhook) {
		NhStats hs;
		nt_delivery(D->nt, &hs);
		json_object_set_new(o, "delivery", json_pack("{s:I, s:I, s:I, s:i, s:I, s:I}", "sent", (json_int_t)hs.sent,
							     "failed", (json_int_t)hs.failed, "dropped", (json_int_t)hs.dropped,
							     "queued", (int)hs.queued, "spool_bytes", (json_int_t)hs.spool_bytes,
							     "spool_errors", (json_int_t)hs.spool_errors));
	}
	if (D->e) {
		sn_stats S;
		uint64_t dropped;
		eng_stats(D->e, &S, &dropped);
		json_object_set_new(o, "backend", json_string(eng_backend(D->e) == ENG_CUDA ? "cuda" : "cpu"));
		json_object_set_new(o, "backend_note", json_string(eng_backend_note(D->e)));
		json_object_set_new(o, "ticks", json_integer((json_int_t)S.ticks));
		json_object_set_new(o, "late_ticks", json_integer((json_int_t)S.late));
		json_object_set_new(o, "last_tick_us", json_real((double)S.last_tick_len_ns / 1e3));
		json_object_set_new(o, "max_tick_us", json_real((double)S.max_tick_len_ns / 1e3));
		json_object_set_new(o, "read_errors", json_integer((json_int_t)S.read_errors));
		json_object_set_new(o, "tasks", json_integer(S.tasks));
		json_object_set_new(o, "tasks_found", json_integer(S.tasks_found));
		json_object_set_new(o, "task_table", json_integer(eng_task_cap(D->e)));
		/* "objects": {"cgroups": {"found": 300, "table": 256, "error": -34}, ...}: the kinds rules read */
		json_t *ob = json_object();
		for (unsigned k = 0; k < SN_OBJ_KINDS && D->b; k++) {
			if (!D->b->nobj[k])
				continue;
			json_t *ko = json_pack("{s:i, s:i}", "found", (int)S.objs_found[k], "table", (int)D->cf.objects);
			if (S.objs_err[k])
				json_object_set_new(ko, "error", json_integer(S.objs_err[k]));
			json_object_set_new(ob, cat_entities[ENT_FIRST_OBJ + k].plural, ko);
		}
		json_object_set_new(o, "objects", ob);
		if (eng_backend(D->e) == ENG_CUDA)           /* the GPU times its tick's phases */
			json_object_set_new(o, "tick_phases_us",
					    json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "jobs", (int)S.phase_us[SN_PH_JOBS],
						      "objects", (int)S.phase_us[SN_PH_OBJS],
						      "task_scan", (int)S.phase_us[SN_PH_SCAN], "task_slots",
						      (int)S.phase_us[SN_PH_SLOTS], "task_fields", (int)S.phase_us[SN_PH_FIELDS],
						      "rules", (int)S.phase_us[SN_PH_RULES]));
		if (eng_backend(D->e) == ENG_CUDA && D->b->njobs) {  /* what the jobs phase waits for */
			size_t slow = 0;
			for (size_t j = 1; j < D->b->njobs && j < SN_STAT_JOBS; j++)
				if (S.job_us[j] > S.job_us[slow])
					slow = j;
			json_object_set_new(o, "slowest_job", json_pack("{s:s, s:i}", "job", bd_job_label(D->b, slow),
									 "us", (int)S.job_us[slow]));
		}
		if (S.task_err && S.task_err != -34)
			json_object_set_new(o, "task_walk_error", json_integer(S.task_err));
		json_object_set_new(o, "ring_dropped", json_integer((json_int_t)dropped));
		unsigned disabled = 0;
		for (size_t i = 0; i < D->b->nrules; i++)
			disabled += rl_rule_blocked(D->b, eng_relocs(D->e), i, NULL) != NULL;
		json_object_set_new(o, "rules_disabled", json_integer(disabled));
	}
	return o;
}

/* rules, or only the active ones (alerts) */
static json_t *d_rules(Daemon *D, bool active_only, char *err, size_t n)
{
	json_t *a = json_array();
	sn_rstate *st = NULL;
	sn_stats S = {0};
	if (D->e) {
		st = calloc(D->b->nrules + 1, sizeof *st);
		if (!st || eng_rule_states(D->e, st, err, n)) {
			free(st);
			json_decref(a);
			return NULL;
		}
		eng_stats(D->e, &S, NULL);
	}
	for (size_t i = 0; i < D->b->nrules; i++) {
		const BdRule *r = &D->b->rules[i];
		uint32_t phase = st ? st[i].phase : SN_INACTIVE;
		if (active_only && phase != SN_PENDING && phase != SN_FIRING)
			continue;
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "name", r->name, "severity", r->severity, "state",
				      D->e ? d_phase(phase) : "stopped", "file", r->file);
		json_object_set_new(o, "line", json_integer(r->line));
		if (st) {
			json_object_set_new(o, "value", st[i].value == st[i].value ? json_real(st[i].value) : json_null());
			/* an active alert is about the entity it named when it began */
			bool on = phase == SN_PENDING || phase == SN_FIRING;
			NtEvent ev = {.rule = r, .kind = SN_EV_FIRING, .value = st[i].value,
				      .entity = on ? st[i].ev_entity : st[i].entity, .comm = on ? st[i].ev_comm : NULL};
			const char *key[2];
			char val[2][NT_LABEL_MAX];
			for (int k = 0, nk = nt_entity_labels(&ev, key, val); k < nk; k++)
				json_object_set_new(o, key[k], k == 0 && !ent_is_obj(r->entity) ? json_integer(ev.entity)
											 : json_string(val[k]));
			uint64_t since = phase == SN_FIRING ? st[i].fired_at : phase == SN_PENDING ? st[i].true_since : 0;
			if (since && S.last_tick_ns >= since)
				json_object_set_new(o, "for_s", json_real((double)(S.last_tick_ns - since) / 1e9));
			json_object_set_new(o, "evaluations", json_integer((json_int_t)st[i].evals));
			json_object_set_new(o, "unknown", json_integer((json_int_t)st[i].unknown));
			const char *why = rl_rule_blocked(D->b, eng_relocs(D->e), i, NULL);
			if (why)
				json_object_set_new(o, "disabled_because", json_string(why));
			if (active_only) {
				for (size_t k = 0; k < r->nannotations; k++)
					if (!strcmp(r->annotations[k].key, "summary")) {
						char *t = nt_render(r->annotations[k].value, &ev, D->cf.name);
						json_object_set_new(o, "summary", json_string(t ? t : ""));
						free(t);
					}
			}
		}
		json_array_append_new(a, o);
	}
	free(st);
	return a;
}

static json_t *d_request(Daemon *D, Client *c, const char *line)
{
	json_error_t je;
	json_t *req = json_loads(line, 0, &je);
	const char *cmd = req ? json_string_value(json_object_get(req, "cmd")) : NULL;
	json_t *resp;
	char err[1024] = "";
	if (!cmd) {
		resp = json_pack("{s:b, s:s}", "ok", 0, "error", "a request is one JSON object with \"cmd\"");
	} else if (!strcmp(cmd, "status")) {
		resp = json_pack("{s:b, s:o}", "ok", 1, "status", d_status(D));
	} else if (!strcmp(cmd, "rules") || !strcmp(cmd, "alerts")) {
		json_t *a = d_rules(D, !strcmp(cmd, "alerts"), err, sizeof err);
		resp = a ? json_pack("{s:b, s:o}", "ok", 1, cmd, a) : json_pack("{s:b, s:s}", "ok", 0, "error", err);
	} else if (!strcmp(cmd, "reload")) {
		char msg[1024];
		/* answered when done (d_reload_done) */
		resp = d_reload_start(D, c, 0, msg, sizeof msg) ? json_pack("{s:b, s:s}", "ok", 0, "message", msg) : NULL;
	} else {
		resp = json_pack("{s:b, s:s}", "ok", 0, "error", "unknown command; the commands are status, rules, alerts, reload");
	}
	json_decref(req);
	return resp;
}

static int d_listen(Daemon *D, char *err, size_t n)
{
	const char *path = D->cf.socket;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof a.sun_path) {
		snprintf(err, n, "control socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	memcpy(a.sun_path, path, strlen(path));
	/* its directory, root's by default */
	char dir[sizeof a.sun_path];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			snprintf(err, n, "cannot create %s for the control socket: %s", dir, strerror(errno));
			return -errno;
		}
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a socket file left by a dead sentineld is stale; a live one is not ours */
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
		close(fd);
		snprintf(err, n, "another sentineld listens on %s: stop it, or set [control] socket", path);
		return -EADDRINUSE;
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old = umask(0777 & ~D->cf.mode);
	int r = bind(fd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (r || chmod(path, D->cf.mode) || listen(fd, 8)) {
		snprintf(err, n, "cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return -errno;
	}
	D->lfd = fd;
	return 0;
}

/* One reply line.  It is small; a client that does not read it loses it. */
static void d_client_close(Daemon *D, Client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	if (c->waiting && D->rl.client == c)
		D->rl.client = NULL;          /* the reload goes on; nobody to answer */
	c->waiting = false;
}

/* Write what the client's queue holds, as far as its socket takes it. */
static void d_client_flush(Daemon *D, Client *c)
{
	while (c->fd >= 0 && c->out_off < c->out_len) {
		ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			d_client_close(D, c);
			return;
		}
		c->out_off += (size_t)w;
	}
	c->out_len = c->out_off = 0;
}

static void d_answer(Daemon *D, Client *c, json_t *resp)
{
	char *line = json_dumps(resp, JSON_COMPACT);
	if (!line)
		return;
	size_t len = strlen(line), need = c->out_len - c->out_off + len + 1;
	if (need > D_CLIENT_OUT_MAX) {
		nt_log(D->nt, 4, "control socket: a client left %zu bytes of answers unread; dropped", c->out_len - c->out_off);
		d_client_close(D, c);
		free(line);
		return;
	}
	if (c->out_off) {                          /* compact what was written */
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	char *o = realloc(c->out, c->out_len + len + 1);
	if (!o) {
		d_client_close(D, c);
		free(line);
		return;
	}
	c->out = o;
	memcpy(c->out + c->out_len, line, len);
	c->out[c->out_len + len] = '\n';
	c->out_len += len + 1;
	free(line);
	d_client_flush(D, c);
}

/* The requests in the client's buffer, while it may be answered. */
static void d_client_requests(Daemon *D, Client *c)
{
	char *nl;
	while (c->fd >= 0 && !c->waiting && c->out_len == c->out_off && (nl = strchr(c->buf, '\n'))) {
		*nl = 0;
		json_t *resp = d_request(D, c, c->buf);
		size_t rest = c->len - (size_t)(nl + 1 - c->buf);
		memmove(c->buf, nl + 1, rest);
		c->len = rest;
		c->buf[c->len] = 0;
		if (resp) {
			d_answer(D, c, resp);
			json_decref(resp);
		}
	}
}

/* revents from poll: answers out, requests in, a client gone. */
static void d_client_io(Daemon *D, Client *c, short revents)
{
	if (revents & POLLOUT)
		d_client_flush(D, c);
	if (c->fd >= 0 && (revents & POLLIN) && !c->waiting && c->out_len == c->out_off) {
		ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r <= 0) {
			d_client_close(D, c);
			return;
		}
		c->len += (size_t)r;
		c->buf[c->len] = 0;
		if (c->len == sizeof c->buf - 1 && !strchr(c->buf, '\n')) {   /* a line too long */
			d_client_close(D, c);
			return;
		}
	} else if (c->fd >= 0 && (revents & (POLLHUP | POLLERR)) && !(revents & POLLIN)) {
		d_client_close(D, c);                   /* gone (while waiting for its reload too) */
		return;
	}
	d_client_requests(D, c);
}

/* ---- main --------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs(
"Usage: sentineld [-c CONFIG] [--check-config]\n"
"\n"
"Run Sentinel's detection rules against a Linux kernel's memory, on the GPU's\n"
"own clock (or on a CPU thread where there is no usable GPU), and hand the\n"
"alerts to the configured sinks.  Stays in the foreground (systemd Type=notify;\n"
"logs go to stderr, which journald reads).  SIGHUP or 'sentinelctl reload'\n"
"reloads the rule directory without a missed tick; a failed reload changes\n"
"nothing.\n"
"\n"
"Options:\n"
"  -c, --config FILE    the configuration (default " SENTINEL_SYSCONFDIR "/sentinel/sentinel.conf;\n"
"                       examples/sentinel.conf is an annotated template)\n"
"      --check-config   check the configuration and the rules, then exit\n"
"  -h, --help           this help\n"
"  -V, --version        the version\n"
"\n"
"Exit status: 0 stopped by a signal, 1 bad rules, 2 bad configuration,\n"
"an unreachable target, or no usable backend.\n", out);
}

int main(int argc, char **argv)
{
	const char *config = SENTINEL_SYSCONFDIR "/sentinel/sentinel.conf";
	bool check_only = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("sentineld %s\n", SENTINEL_VERSION);
			return 0;
		} else if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) && i + 1 < argc) {
			config = argv[++i];
		} else if (!strncmp(argv[i], "--config=", 9)) {
			config = argv[i] + 9;
		} else if (!strcmp(argv[i], "--check-config")) {
			check_only = true;
		} else {
			fprintf(stderr, "sentineld: unknown argument '%s'; see sentineld --help\n", argv[i]);
			return 2;
		}
	}
	Daemon D = {.lfd = -1};
	for (int i = 0; i < D_MAX_CLIENTS; i++)
		D.cl[i].fd = -1;
	int rc = 2;
	char err[1024] = "";
	char *diags = NULL;
	int nerr = cf_load(&D.cf, config, stderr);
	if (nerr) {
		if (nerr > 0)
			fprintf(stderr, "sentineld: %d error%s in %s; not starting\n", nerr, nerr == 1 ? "" : "s", config);
		goto out;
	}
	/* the engines write it when alerts wait; fd 0 is stdin, so never it */
	int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	D.eo = (EngOpts){.backend = D.cf.backend, .tick_ns = D.cf.tick_ns, .task_cap = D.cf.tasks,
			 .ring_cap = D.cf.ring, .hist_max = D.cf.hist_max, .gpu = D.cf.gpu, .wake_fd = wake_fd > 0 ? wake_fd : 0,
			 .threads = d_threads(&D.cf), .reg_chunk = D.cf.reg_chunk, .obj_cap = D.cf.objects};
	/* PTX for the GPU here alone (the engine loads nothing else), at most
	 * the newest architecture LLVM 19 knows: the driver compiles PTX for
	 * newer GPUs too. */
	char native[16];
	bool gpu = strcmp(D.cf.backend, "cpu") && !gpu_probe_arch(native, sizeof native);
	snprintf(D.archs, sizeof D.archs, "%s", !gpu ? COMP_DEFAULT_ARCHS : atoi(native + 3) > D_NEWEST_ARCH ?
		 "sm_" D_STR(D_NEWEST_ARCH) : native);
	/* no GPU to run it (backend = cpu, or auto without one): no GPU code,
	 * which halves the compile of a start or reload; backend = cuda
	 * compiles it to say what is wrong with the GPU */
	D.co = (CompOpts){.archs = D.archs, .version = SENTINEL_VERSION,
			  .host_only = !gpu && strcmp(D.cf.backend, "cuda")};
	int r = d_rules_load(&D, &D.b, &diags, err, sizeof err);
	if (r == 1) {
		fputs(diags, stderr);
		rc = 1;
		goto out;
	}
	if (r) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	if (D.cf.record) {
		if (strcmp(D.cf.backend, "cpu")) {
			fprintf(stderr, "sentineld: %s: [engine] record needs backend = cpu (the GPU's tables are not "
				"copied out every tick); set it, or record with sentinel-inspect metrics --record\n", config);
			goto out;
		}
		D.eo.on_tick = d_record;
		D.eo.on_tick_ctx = &D;
	}
	NtConfig nc = {.log = D.cf.log, .log_pending = D.cf.log_pending, .jsonl = D.cf.jsonl, .target = D.cf.name,
		       .alertmanager = D.cf.alertmanager, .webhook = D.cf.webhook, .external_url = D.cf.external_url,
		       .resend_ns = D.cf.resend_ns, .tick_ns = D.cf.tick_ns,
		       .spool = check_only ? NULL : D.cf.spool,   /* a check delivers nothing */
		       .spool_max = D.cf.spool_max};
	if (nt_open(&nc, &D.nt, err, sizeof err)) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	if (d_open_target(&D, err, sizeof err)) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	if (D.cf.record && !check_only &&
	    rec_create(D.cf.record, D.b, D.cf.tick_ns, D.t->cpus.nr_cpu_ids, &D.rec, err, sizeof err)) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	if (check_only) {
		printf("sentineld: %s is valid; %zu rules compile and load on Linux %s (%s)\n", config, D.b->nrules,
		       D.t->release, eng_backend_note(D.e));
		rc = 0;
		goto out;
	}
	if (d_listen(&D, err, sizeof err)) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	if (D.cf.metrics_listen) {
		if (px_open(D.cf.metrics_listen, &D.px, err, sizeof err)) {
			fprintf(stderr, "sentineld: %s: [metrics] %s\n", config, err);
			goto out;
		}
		nt_log(D.nt, 6, "serving /metrics on %s (port %u)", D.cf.metrics_listen, px_port(D.px));
	}
	struct sigaction sa = {.sa_handler = d_on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (eng_start(D.e, err, sizeof err)) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	D.started_ns = d_now();
	D.next_check_ns = D.started_ns + D_TARGET_CHECK_NS;
	nt_log(D.nt, 6, "started: %zu rules from %s against %s (Linux %s, %s paging), tick %.0f ms, %s; control %s",
	       D.b->nrules, D.cf.bundle ? D.cf.bundle : D.cf.rules_dir, D.cf.source, D.t->release, D.t->mem.levels == 5 ? "5-level" : "4-level",
	       (double)D.cf.tick_ns / 1e6, eng_backend_note(D.e), D.cf.socket);
	d_log_disabled(&D);
	d_sd_notify("READY=1\nSTATUS=running");
	/* the host's share: sleep until the engine says alerts wait (the wake
	 * fd: the GPU's doorbell, gpu_arm), the control socket or a signal
	 * needs us, or the target is due a check; every [notify] delay where
	 * the engine cannot wake us.  Each wakeup costs ~50 us here
	 * (docs/benchmarks.md). */
	while (!d_quit_flag) {
		struct pollfd pf[D_MAX_CLIENTS + 3];
		int np = 0;
		pf[np++] = (struct pollfd){.fd = D.lfd, .events = POLLIN};
		pf[np++] = (struct pollfd){.fd = D.eo.wake_fd > 0 ? D.eo.wake_fd : -1, .events = POLLIN};
		pf[np++] = (struct pollfd){.fd = D.px ? px_fd(D.px) : -1, .events = POLLIN};
		for (int i = 0; i < D_MAX_CLIENTS; i++) {
			Client *c = &D.cl[i];
			if (c->fd < 0)
				continue;
			short ev = c->out_len > c->out_off ? POLLOUT : c->waiting ? 0 : POLLIN;
			pf[np++] = (struct pollfd){.fd = c->fd, .events = ev};   /* POLLHUP comes anyway */
		}
		uint64_t now = d_now(), wait_ns = D.next_check_ns > now ? D.next_check_ns - now : 0;
		bool armed = D.ts == TS_OK && D.e && eng_arm(D.e);
		if (armed)
			D.wake = eng_backend(D.e) == ENG_CUDA ? "gpu doorbell" : "tick thread";
		else if (D.ts == TS_OK && D.e)
			D.wake = "poll";
		if (!armed && wait_ns > D.cf.delay_ns)
			wait_ns = D.cf.delay_ns;
		int pr = poll(pf, (nfds_t)np, (int)((wait_ns + 999999) / 1000000));
		if (pr > 0 && (pf[1].revents & POLLIN)) {
			uint64_t count;
			ssize_t got = read(D.eo.wake_fd, &count, sizeof count);
			(void)got;
		}
		d_drain(&D);
		if (pr > 0 && (pf[2].revents & POLLIN) && px_wanted(D.px))
			d_metrics(&D);
		if (D.rl.on && __atomic_load_n(&D.rl.done, __ATOMIC_ACQUIRE))
			d_reload_done(&D);
		if (d_reload_flag && !D.rl.on) {         /* SIGHUPs during a reload: one more after it */
			d_reload_flag = 0;
			char msg[1024];
			if (d_reload_start(&D, NULL, 0, msg, sizeof msg))
				nt_log(D.nt, 4, "reload (SIGHUP): %s", msg);
		}
		d_watch_target(&D);
		if (pr <= 0)
			continue;
		if (pf[0].revents & POLLIN) {
			int fd = accept(D.lfd, NULL, NULL);
			if (fd >= 0 && (fcntl(fd, F_SETFD, FD_CLOEXEC) || fcntl(fd, F_SETFL, O_NONBLOCK))) {
				close(fd);             /* a blocking client could stall the loop */
				fd = -1;
			}
			int slot = -1;
			for (int i = 0; i < D_MAX_CLIENTS && fd >= 0 && slot < 0; i++)
				if (D.cl[i].fd < 0)
					slot = i;
			if (slot >= 0) {
				D.cl[slot].fd = fd;
				D.cl[slot].len = 0;
			} else if (fd >= 0) {
				close(fd);
			}
		}
		for (int k = 3; k < np; k++) {
			if (!(pf[k].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR)))
				continue;
			for (int i = 0; i < D_MAX_CLIENTS; i++)
				if (D.cl[i].fd == pf[k].fd) {
					d_client_io(&D, &D.cl[i], pf[k].revents);
					break;
				}
		}
	}
	d_sd_notify("STOPPING=1");
	nt_log(D.nt, 6, "stopping");
	if (D.rl.on) {
		nt_log(D.nt, 6, "waiting for the reload in progress to end (it is discarded)");
		pthread_join(D.rl.thread, NULL);
		eng_close(D.rl.ne);
		bd_free(D.rl.nb);
		free(D.rl.diags);
		D.rl.on = false;
		if (D.rl.client && D.rl.client->fd >= 0) {
			json_t *resp = json_pack("{s:b, s:s}", "ok", 0, "message",
						 "sentineld is stopping; the reload was discarded");
			d_answer(&D, D.rl.client, resp);
			json_decref(resp);
		}
	}
	if (D.e && eng_stop(D.e, err, sizeof err))
		nt_log(D.nt, 4, "%s", err);
	d_drain(&D);
	d_record_end(&D, "sentineld stopped");
	rc = 0;
out:
	free(diags);
	for (int i = 0; i < D_MAX_CLIENTS; i++) {
		if (D.cl[i].fd >= 0 && D.cl[i].out_len > D.cl[i].out_off) {
			/* the last answers (a stopping reload's): a moment to go out */
			int fl = fcntl(D.cl[i].fd, F_GETFL);
			if (fl >= 0 && fcntl(D.cl[i].fd, F_SETFL, fl & ~O_NONBLOCK) == 0) {
				struct timeval tv = {1, 0};
				setsockopt(D.cl[i].fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
				d_client_flush(&D, &D.cl[i]);
			}
		}
		d_client_close(&D, &D.cl[i]);
	}
	if (D.lfd >= 0) {
		close(D.lfd);
		unlink(D.cf.socket);
	}
	px_close(D.px);               /* before the engine: no scrape waits on it then */
	d_close_target(&D);
	rec_close(D.rec);
	bd_free(D.b);
	nt_close(D.nt);
	cf_free(&D.cf);
	if (D.eo.wake_fd > 0)
		close(D.eo.wake_fd);
	return rc;
}
