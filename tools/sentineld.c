/* sentineld - run the rules on the GPU (or the CPU) against its targets.
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
#include <getopt.h>
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

typedef enum { TS_OK, TS_LOST, TS_PAUSED } TargetState;   /* PAUSED: by its hypervisor, not watched */

/* One machine watched ([target] or [target NAME]): its memory, kernel and
 * engine.  Every target runs the same rules (Daemon.b), each on its own
 * engine; the watch checks each on its own schedule, and a lost one is
 * looked for again while the others tick on.  Owns src, t, klog and e. */
typedef struct DTarget {
	struct Daemon *D;
	CfTarget cf;                  /* its section (a copy: a reload reads them again) */
	char label[300];              /* in log lines: the source (one target), or "NAME (source)" */
	MemSource *src;
	KTarget *t;
	KlLog *klog;                  /* the target's printk ring, or NULL (kernel_log_lines = 0, unreadable) */
	Engine *e;
	uint32_t task_cap;            /* its task table's rows (grows: d_watch_tasks) */
	struct stat ram_st;           /* a ramfile target: the file we mapped */
	TargetState ts;
	char err[512];
	char pause_why[96];           /* d_target_paused's answer */
	unsigned restarts;
	uint64_t next_check_ns;
	bool tasks_full;              /* the target had more tasks than the table at the last check */
	bool objs_full[SN_OBJ_KINDS]; /* ... more objects of a kind than [engine] objects */
	uint32_t grow_failed;         /* the task table size a growth failed to reach (not tried again) */
	Engine *ne;                   /* a reload's engine for it, until the handover */
	bool gone;                    /* a reload found it no more in the configuration */
	bool dropping;                /* its VM is gone or paused: its engine's alerts are not delivered (until reopened) */
} DTarget;

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
	struct DTarget *grow_tg;      /* ... for this target */
	uint64_t t0;
	Bundle *nb;                   /* the engines for it: DTarget.ne */
	char *diags;                  /* rule errors, rulec's format; or the configuration's */
	char err[1024];
	int r_targets, r_rules, r_open; /* the configuration's, d_rules_load's and eng_open's results */
	CfTarget *added;              /* [nadded]: targets the configuration has now and sentineld not */
	unsigned nadded;
	bool same;                    /* the GPU fleet: the rules did not change, only the targets may */
} DReload;

/* Where the main thread's own CPU time goes (sentinelctl status's
 * main_loop): the host's share is meant to be near nothing, and when it
 * is not, this says which part of the loop is to blame: arm (what to
 * wait for: every engine asked), poll (the system call and the wake fd),
 * drain (alerts: the rings, the notifiers), metrics (/metrics), reload,
 * watch (the targets' checks), clients (the control socket). */
#define D_PHASES(X) X(arm) X(poll) X(drain) X(watch) X(clients) X(metrics) X(reload)
enum {
#define D_PH_ENUM(n) DP_##n,
	D_PHASES(D_PH_ENUM)
#undef D_PH_ENUM
	DP_N
};
typedef struct DLoop {
	uint64_t wakeups;
	uint64_t cpu_ns[DP_N];        /* the main thread's CPU time in each phase */
	uint64_t mark;                /* the thread's CPU clock at the last phase's end */
} DLoop;

typedef struct Daemon {
	Config cf;
	Notifier *nt;
	DTarget *tg;                  /* [ntg]: Config.targets' */
	unsigned ntg;
	Bundle *b;
	EngOpts eo;                   /* every engine's (task_cap: DTarget's) */
	EngFleet *fleet;              /* several targets on the GPU: one kernel for all (eo.fleet) */
	CompOpts co;
	char archs[64];
	int lfd;
	Client cl[D_MAX_CLIENTS];
	uint64_t started_ns;
	unsigned reloads;
	char last_reload[600];
	uint64_t alerts_seen;
	const char *wake;             /* how alerts reach the host: "gpu doorbell", "tick thread", "poll" */
	Recorder *rec;                /* [engine] record: written by the tick thread (d_record) */
	PxServer *px;                 /* [metrics] listen: /metrics, or NULL */
	uint64_t rec_errors;          /* atomic: records that could not be written */
	DReload rl;
	DLoop loop;
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
/* The main thread's CPU time since the last phase ended goes to phase ph. */
static void d_phase_end(Daemon *D, int ph)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	D->loop.cpu_ns[ph] += t - D->loop.mark;
	D->loop.mark = t;
}

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

/* T (zeroed) becomes the target of section cf, not yet open. */
static int d_target_init(Daemon *D, DTarget *T, const CfTarget *cf)
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

static void d_close_target(DTarget *T)
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
static void d_target_opts(const DTarget *T, EngOpts *eo)
{
	eo->target_name = T->cf.name;
	eo->target_labels = T->cf.labels;
	eo->target_nlabels = T->cf.nlabels;
}

/* Open the source, find the kernel, load the bundle on the backend. */
static int d_open_target(DTarget *T, char *err, size_t n)
{
	Daemon *D = T->D;
	KtOptions ko = {.kallsyms_file = T->cf.kallsyms, .btf_file = T->cf.btf};
	char why[512];
	int r = ms_open(T->cf.source, &T->src, why, sizeof why);
	if (r) {
		snprintf(err, n, "target %s: %s", T->label, why);
		return r;
	}
	if (d_file_backed(T->src) && stat(T->src->path, &T->ram_st))
		memset(&T->ram_st, 0, sizeof T->ram_st);
	if ((r = kt_open(T->src, &ko, &T->t, why, sizeof why))) {
		snprintf(err, n, "target %s: %s", T->label, why);
		d_close_target(T);
		return r;
	}
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

/* Why the VM behind T is gone (its RAM file removed or replaced, its
 * QEMU process ended: /proc/PID/map_files is then gone too), or NULL.
 * Its mapping still holds the memory as it was when it stopped: a stopped
 * machine switches no context and must not look hung. */
static const char *d_target_gone(const DTarget *T)
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
static const char *d_target_paused(DTarget *T)
{
	char st[32];
	if (ms_vm_state(T->cf.source, st, sizeof st) || (strcmp(st, "paused") && strcmp(st, "pmsuspended")))
		return NULL;
	snprintf(T->pause_why, sizeof T->pause_why, "paused by its hypervisor (libvirt: %s)", st);
	return T->pause_why;
}

static void d_log_disabled(DTarget *T)
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

/* ---- alerts ------------------------------------------------------------------------- */

static void d_alert(void *ctx, const sn_alert *a)
{
	DTarget *T = ctx;
	Daemon *D = T->D;
	if (a->rule >= D->b->nrules || T->dropping)
		return;
	/* the VM stopped or was paused since the last check: what its frozen
	 * memory says now (no context switch, say) is not news; the watch
	 * looks at once */
	if (d_target_gone(T) || d_target_paused(T)) {
		T->dropping = true;
		T->next_check_ns = 0;
		return;
	}
	sn_stats S;
	eng_stats(T->e, &S, NULL);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	/* engine clock -> wall clock: the record's age against the last tick */
	uint64_t age = S.last_tick_ns > a->time_ns ? S.last_tick_ns - a->time_ns : 0;
	int64_t ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec - (int64_t)age;
	NtEvent ev = {.rule = &D->b->rules[a->rule], .kind = (SnEventKind)a->kind, .value = a->value,
		      .entity = a->entity, .comm = a->comm, .tick = a->tick,
		      .when = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)}, .target = T->cf.name,
		      .tlabels = T->cf.labels, .ntlabels = T->cf.nlabels};
	/* the kernel's last words, read from its RAM now: a panic's message is
	 * in the ring within microseconds of panic_cpu being set */
	char *klog = NULL, why[256];
	if (T->klog && (ev.kind == SN_EV_FIRING || ev.kind == SN_EV_RESOLVED) && nt_wants_kernel_log(ev.rule) &&
	    !(klog = kl_tail(T->klog, D->cf.kernel_log_lines, why, sizeof why)))
		nt_log(D->nt, 4, "%s: the kernel log could not be read: %s", ev.rule->name, why);
	ev.kernel_log = klog;
	nt_event(D->nt, &ev);
	free(klog);
	D->alerts_seen++;
}

/* A copy of every rule's alert state on T's engine (malloc'd, one entry
 * spare), or NULL with err set: no engine, out of memory, or the copy failed. */
static sn_rstate *d_rule_states(DTarget *T, char *err, size_t n)
{
	sn_rstate *st = T->e ? calloc(T->D->b->nrules + 1, sizeof *st) : NULL;
	if (!st) {
		snprintf(err, n, "%s", T->e ? "out of memory" : "no engine runs");
		return NULL;
	}
	if (eng_rule_states(T->e, st, err, n)) {
		free(st);
		return NULL;
	}
	return st;
}

/* A scrape of /metrics waits: render every engine's last complete tick. */
static void d_metrics(Daemon *D)
{
	char err[256];
	PxTarget *pt = calloc(D->ntg, sizeof *pt);
	sn_stats *S = calloc(D->ntg, sizeof *S);
	if (!pt || !S) {
		free(pt);
		free(S);
		px_publish(D->px, NULL, 0);
		return;
	}
	for (unsigned i = 0; i < D->ntg; i++) {
		DTarget *T = &D->tg[i];
		pt[i].name = T->cf.name;
		if (!T->e || T->ts != TS_OK)
			continue;
		eng_stats(T->e, &S[i], &pt[i].ring_dropped);
		pt[i].stats = &S[i];
		/* eng_values' copy lives until the engine's next call: one per engine */
		if (!(pt[i].w = eng_values(T->e, err, sizeof err)))
			nt_log(D->nt, 4, "/metrics: %s: %s", T->label, err);
		pt[i].rstate = d_rule_states(T, err, sizeof err);
	}
	NhStats ds;
	nt_delivery(D->nt, &ds);
	double up_s = (double)(d_now() - D->started_ns) * 1e-9;
	PxInput in = {.b = D->b, .tg = pt, .ntg = D->ntg, .delivery = &ds, .reloads = D->reloads,
		      .alerts = D->alerts_seen, .started = (double)time(NULL) - up_s};
	size_t len = 0;
	char *text = px_render(&in, &len);
	px_publish(D->px, text, len);
	for (unsigned i = 0; i < D->ntg; i++)
		free((void *)pt[i].rstate);
	free(pt);
	free(S);
}

static void d_drain(Daemon *D)
{
	unsigned n = 0;
	/* the fleet's bell, before the rings: a record after it rings again;
	 * unmoved, no ring has a record to give (500 rings: 0.14 ms) */
	if (D->fleet && !eng_fleet_seen(D->fleet))
		return;
	for (unsigned i = 0; i < D->ntg; i++)
		n += D->tg[i].e ? eng_drain(D->tg[i].e, d_alert, &D->tg[i]) : 0;
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
	if (getenv("SENTINEL_TEST_FAULTS"))
		u_oom_after(eng_test_fault_n("reload-oom"));
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

/* Close the engines a reload opened and did not hand over; forget the
 * targets it would have added and removed. */
static void d_reload_discard(Daemon *D)
{
	for (unsigned i = 0; i < D->ntg; i++) {
		eng_close(D->tg[i].ne);
		D->tg[i].ne = NULL;
		D->tg[i].gone = false;
	}
	for (unsigned i = 0; i < D->rl.nadded; i++)
		cf_target_free(&D->rl.added[i]);
	free(D->rl.added);
	D->rl.added = NULL;
	D->rl.nadded = 0;
}

/* A reload reads the targets again (the configuration's sections and its
 * targets directory's drop-ins): which go (DTarget.gone) and which come
 * (R->added).  A target whose section changed does both.  The rest of the
 * configuration takes a restart.  0, or -EINVAL with the errors in
 * R->diags. */
static int d_targets_read(Daemon *D, DReload *R)
{
	char *text = NULL;
	size_t len = 0;
	FILE *errs = open_memstream(&text, &len);
	if (!errs)
		return -ENOMEM;
	Config nc;
	int nerr = cf_load(&nc, D->cf.path, errs);
	int r = 0;
	if (!nerr && nc.ntargets > 1 && D->ntg == 1 && !D->fleet && D->tg[0].e && eng_backend(D->tg[0].e) == ENG_CUDA) {
		fprintf(errs, "%s: error: %u targets: sentineld started with one target on the GPU, which runs it "
			"alone; restart sentineld to run several (one GPU kernel for all of them)\n", D->cf.path,
			nc.ntargets);
		nerr = 1;
	}
	if (nerr) {
		fclose(errs);
		R->diags = text;
		snprintf(R->err, sizeof R->err, "the configuration's targets have errors; nothing changed");
		cf_free(&nc);
		return -EINVAL;
	}
	fclose(errs);
	free(text);
	for (unsigned i = 0; i < D->ntg; i++) {
		DTarget *T = &D->tg[i];
		T->gone = true;
		for (unsigned j = 0; j < nc.ntargets && T->gone; j++)
			T->gone = !cf_target_same(&T->cf, &nc.targets[j]);
	}
	R->added = calloc(nc.ntargets, sizeof *R->added);
	for (unsigned j = 0; j < nc.ntargets && R->added && !r; j++) {
		bool have = false;
		for (unsigned i = 0; i < D->ntg && !have; i++)
			have = cf_target_same(&D->tg[i].cf, &nc.targets[j]);
		if (!have && cf_target_copy(&R->added[R->nadded], &nc.targets[j]) == 0)
			R->nadded++;
		else if (!have)
			r = -ENOMEM;
	}
	if (!R->added)
		r = -ENOMEM;
	cf_free(&nc);
	if (r)
		snprintf(R->err, sizeof R->err, "out of memory reading the targets; nothing changed");
	return r;
}

static bool d_same_kvs(const BdKV *a, size_t na, const BdKV *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t k = 0; k < na; k++)
		if (strcmp(a[k].key, b[k].key) || strcmp(a[k].value, b[k].value))
			return false;
	return true;
}

/* The same rules, compiled the same way and saying the same: names and
 * hashes (rulec's hash of what decides each rule's state) in order, and
 * what their alerts carry and where they run. */
static bool d_same_rules(const Bundle *a, const Bundle *b)
{
	if (a->nrules != b->nrules || a->njobs != b->njobs)
		return false;
	for (size_t i = 0; i < a->nrules; i++) {
		const BdRule *x = &a->rules[i], *y = &b->rules[i];
		if (x->hash != y->hash || strcmp(x->name, y->name) || strcmp(x->severity, y->severity) ||
		    strcmp(x->description ? x->description : "", y->description ? y->description : "") ||
		    !d_same_kvs(x->labels, x->nlabels, y->labels, y->nlabels) ||
		    !d_same_kvs(x->annotations, x->nannotations, y->annotations, y->nannotations) ||
		    !d_same_kvs(x->targets, x->ntargets, y->targets, y->ntargets))
			return false;
	}
	return true;
}

static void *d_reload_thread(void *arg)
{
	DReload *R = arg;
	Daemon *D = R->D;
	/* the JIT of eng_open at nice 10 too, for the reason above */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), D_COMPILE_NICE);
	if (!R->grow)
		R->r_targets = d_targets_read(D, R);
	if (!R->grow && !R->r_targets)
		R->r_rules = d_rules_load(D, &R->nb, &R->diags, R->err, sizeof R->err);
	/* the GPU fleet's kernel has no handover yet: the same rules go on
	 * (targets may come and go), new ones need a restart */
	if (D->fleet && !R->r_targets && !R->r_rules) {
		R->same = !R->grow && d_same_rules(D->b, R->nb);
		if (!R->same) {
			R->r_open = -ENOTSUP;
			snprintf(R->err, sizeof R->err, "%s with several targets on the GPU, which runs them in one kernel "
				 "that cannot hand over yet; restart sentineld to run them (the targets in the "
				 "configuration may change on a reload)", R->grow ? "the task table cannot grow" :
				 "new rules cannot be loaded");
		}
	}
	/* an engine for every target that runs (ts holds still: the target
	 * watch waits for us); validate all: one that cannot open fails the
	 * reload, and the running rules stay everywhere */
	for (unsigned i = 0; i < D->ntg && !R->r_targets && !R->r_rules && !R->r_open; i++) {
		DTarget *T = &D->tg[i];
		if (T->ts != TS_OK || T->gone || (R->grow && T != R->grow_tg) || R->same)
			continue;
		EngOpts eo = D->eo;
		eo.on_tick = NULL;             /* the recording keeps the old rules' layout */
		eo.task_cap = R->grow ? R->grow : T->task_cap;
		d_target_opts(T, &eo);
		char why[900];
		R->r_open = eng_open(R->grow ? D->b : R->nb, T->t, &eo, &T->ne, why, sizeof why);
		if (R->r_open)
			snprintf(R->err, sizeof R->err, "%s%s%s", D->ntg > 1 ? T->cf.name : "", D->ntg > 1 ? ": " : "", why);
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
 * rules with a task table of grow rows for target gt; its answer comes
 * from d_reload_done.  -EBUSY while one is in progress. */
static int d_reload_start(Daemon *D, Client *c, uint32_t grow, DTarget *gt, char *msg, size_t n)
{
	DReload *R = &D->rl;
	if (R->on) {
		snprintf(msg, n, "a reload is in progress (for %.0f s); try again when it ends",
			 (double)(d_now() - R->t0) / 1e9);
		return -EBUSY;
	}
	*R = (DReload){.D = D, .client = c, .by_socket = c != NULL, .grow = grow, .grow_tg = gt, .t0 = d_now(),
		       .on = true};
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

/* Hand target T over to its new engine (T->ne): on success the old one is
 * closed and *os, *ns say the old engine's last tick and the new one's first. */
static int d_handover(DTarget *T, unsigned *kept, sn_stats *os, sn_stats *ns, char *err, size_t n)
{
	Daemon *D = T->D;
	int r = eng_takeover(T->ne, T->e, kept, err, n);
	if (r) {
		eng_close(T->ne);
		T->ne = NULL;
		return r;
	}
	d_drain(D);                      /* the old engine's last alerts */
	eng_stats(T->e, os, NULL);
	eng_stats(T->ne, ns, NULL);
	for (int i = 0; i < 50 && !ns->first_tick; i++) {      /* its first tick is at most one away */
		struct timespec ts = {0, (long)(D->eo.tick_ns / 10)};
		nanosleep(&ts, NULL);
		eng_stats(T->ne, ns, NULL);
	}
	eng_close(T->e);
	T->e = T->ne;
	T->ne = NULL;
	return 0;
}

/* A target that goes: its pending and firing alerts resolve (they are
 * about a machine no longer watched), its engine and memory are let go. */
static void d_target_remove(DTarget *T)
{
	Daemon *D = T->D;
	char err[256];
	if (T->e && eng_stop(T->e, err, sizeof err))
		nt_log(D->nt, 4, "%s: %s", T->label, err);
	d_drain(D);                      /* its last ticks' alerts */
	sn_rstate *st = d_rule_states(T, err, sizeof err);
	if (st) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		for (size_t i = 0; i < D->b->nrules; i++) {
			if (st[i].phase != SN_FIRING && st[i].phase != SN_PENDING)
				continue;
			NtEvent ev = {.rule = &D->b->rules[i],
				      .kind = st[i].phase == SN_FIRING ? SN_EV_RESOLVED : SN_EV_CANCELLED,
				      .value = st[i].value, .entity = st[i].ev_entity, .comm = st[i].ev_comm,
				      .when = now, .target = T->cf.name, .tlabels = T->cf.labels,
				      .ntlabels = T->cf.nlabels};
			nt_event(D->nt, &ev);
			D->alerts_seen++;
		}
		nt_flush(D->nt);
	}
	free(st);
	d_close_target(T);
	nt_log(D->nt, 6, "target %s removed (no longer in the configuration)", T->label);
	cf_target_free(&T->cf);
}

static void d_tchange(char *buf, size_t n, char sign, const char *name)
{
	size_t l = strlen(buf);
	snprintf(buf + l, n > l ? n - l : 0, "%s%c%s", l ? ", " : "", sign, name);
}

static void d_targets_apply_removed(Daemon *D, char *what, size_t n)
{
	unsigned k = 0;
	for (unsigned i = 0; i < D->ntg; i++) {
		DTarget *T = &D->tg[i];
		if (T->gone) {
			d_tchange(what, n, '-', T->cf.name);
			d_target_remove(T);
			continue;
		}
		if (k != i)
			D->tg[k] = *T;
		k++;
	}
	D->ntg = k;
}

/* The new targets join, lost until the watch opens them (next loop). */
static void d_targets_apply_added(Daemon *D, char *what, size_t n)
{
	DReload *R = &D->rl;
	DTarget *tg = R->nadded ? realloc(D->tg, (D->ntg + R->nadded) * sizeof *tg) : D->tg;
	if (!tg) {
		nt_log(D->nt, 3, "out of memory: %u new targets are not watched", R->nadded);
	} else {
		D->tg = tg;
		for (unsigned i = 0; i < R->nadded; i++) {
			DTarget *T = &D->tg[D->ntg];
			if (d_target_init(D, T, &R->added[i]))
				continue;
			T->next_check_ns = 0;       /* looked for at once */
			snprintf(T->err, sizeof T->err, "added by a reload; not opened yet");
			d_tchange(what, n, '+', T->cf.name);
			nt_log(D->nt, 6, "target %s added", T->label);
			D->ntg++;
		}
	}
	for (unsigned i = 0; i < R->nadded; i++)
		cf_target_free(&R->added[i]);
	free(R->added);
	R->added = NULL;
	R->nadded = 0;
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
	DTarget *G = R->grow_tg;
	char err[1024];
	snprintf(err, sizeof err, "%s", R->err);
	*diags = R->diags;
	R->nb = NULL;
	R->diags = NULL;
	int r = R->r_targets ? R->r_targets : R->r_rules;
	if (r) {
		d_reload_discard(D);
		snprintf(msg, n, "%s", r == 1 ? "the rules have errors; the running rules are unchanged" : err);
		return r == 1 ? -EINVAL : r;
	}
	if (R->grow && G->ts != TS_OK) {   /* (the target watch waits for a reload: not seen) */
		d_reload_discard(D);
		snprintf(msg, n, "the target was lost; the task table was not grown");
		return -ENODEV;
	}
	if ((r = R->r_open)) {
		d_reload_discard(D);
		if (R->grow)
			snprintf(msg, n, "cannot grow the task table to %u rows: %.900s; it keeps %u", R->grow, err,
				 eng_task_cap(G->e));
		else
			snprintf(msg, n, "the new rules cannot run: %.900s; the running rules are unchanged", err);
		bd_free(nb);
		return r;
	}
	unsigned kept = 0, done = 0, lost = 0;
	uint32_t old_cap = R->grow ? eng_task_cap(G->e) : 0;
	sn_stats os = {0}, ns = {0};
	char failed[600] = "";
	d_drain(D);
	for (unsigned i = 0; i < D->ntg; i++) {
		DTarget *T = &D->tg[i];
		if (!T->ne)
			continue;
		unsigned k = 0;
		sn_stats o1, n1;
		if ((r = d_handover(T, &k, &o1, &n1, err, sizeof err))) {
			if (!done) {             /* nothing changed yet: all of it stays */
				d_reload_discard(D);
				snprintf(msg, n, "the handover failed: %.900s; the running rules are unchanged", err);
				bd_free(nb);
				return r;
			}
			/* the others run the new rules: this one starts again with them */
			snprintf(T->err, sizeof T->err, "the reload's handover failed (%.400s); starting again with the new rules",
				 err);
			nt_log(D->nt, 3, "target error: %s: %s", T->label, T->err);
			d_close_target(T);
			T->ts = TS_LOST;
			T->next_check_ns = 0;
			snprintf(failed + strlen(failed), sizeof failed - strlen(failed), "%s%s", lost++ ? ", " : "",
				 T->cf.name);
			continue;
		}
		if (!done++) {
			os = o1;
			ns = n1;
		}
		kept += k;
	}
	/* the targets the configuration no longer has go (their alerts resolve:
	 * under the old rules, whose states they hold), then the new ones come */
	char tchange[300] = "";
	if (!R->grow)
		d_targets_apply_removed(D, tchange, sizeof tchange);
	d_record_end(D, R->grow ? "the task table grew" : "a reload changed the rules");
	D->eo.on_tick = NULL;
	if (R->grow) {
		G->task_cap = R->grow;         /* and later reloads keep it */
	} else if (R->same) {              /* the fleet's kernel runs the rules it has */
		bd_free(nb);
		D->reloads++;
		d_targets_apply_added(D, tchange, sizeof tchange);
	} else {
		bd_free(D->b);
		D->b = nb;
		D->reloads++;
		d_targets_apply_added(D, tchange, sizeof tchange);
	}
	uint64_t t1 = d_now();
	char settled[256] = "";
	for (unsigned i = 0; i < D->ntg; i++)
		if (D->tg[i].e && D->tg[i].ts == TS_OK && (r = eng_settle(D->tg[i].e, settled, sizeof settled, err, sizeof err)))
			snprintf(settled, sizeof settled, "after the handover: %.200s", err);
	/* the proof of no gap: the new engine's first tick is the old one's
	 * last plus one, one tick later */
	char what[160], others[700] = "";
	if (R->grow)
		snprintf(what, sizeof what, "the task table grew from %u to %u rows", old_cap, R->grow);
	else if (D->ntg > 1)
		snprintf(what, sizeof what, "%zu rules running on %u of %u targets (%u rule states kept)", D->b->nrules, done,
			 D->ntg, kept);
	else
		snprintf(what, sizeof what, "%zu rules running (%u kept their state)", D->b->nrules, kept);
	if (lost)
		snprintf(others, sizeof others, "; %s restart%s with them (the handover failed)", failed, lost == 1 ? "s" : "");
	if (*tchange)
		snprintf(others + strlen(others), sizeof others - strlen(others), "; targets %s", tchange);
	if (done)
		snprintf(msg, n, "%.160s, reloaded in %.0f ms; handover: old tick %llu, new tick %llu %.1f ms later (tick %.1f ms)"
			 "%.300s%s%.200s", what, (double)(t1 - t0) / 1e6, (unsigned long long)os.ticks,
			 (unsigned long long)ns.first_tick, (double)(ns.first_tick_ns - os.last_tick_ns) / 1e6,
			 (double)D->eo.tick_ns / 1e6, others, *settled ? "; " : "", settled);
	else if (R->same)                /* the GPU fleet: the same rules run on */
		snprintf(msg, n, "the rules did not change: %zu rules run on in the GPU's kernel for all targets%.300s",
			 D->b->nrules, others);
	else                             /* no target runs now: the rules start with them */
		snprintf(msg, n, "%zu rules loaded; no target runs now, they start when one is back%.300s", D->b->nrules,
			 others);
	if (!R->grow)
		snprintf(D->last_reload, sizeof D->last_reload, "%.599s", msg);
	for (unsigned i = 0; i < D->ntg; i++)
		if (D->tg[i].e && D->tg[i].ts == TS_OK && (!R->grow || &D->tg[i] == G))
			d_log_disabled(&D->tg[i]);
	return 0;
}

static void d_answer(Daemon *D, Client *c, json_t *resp);
static void d_client_requests(Daemon *D, Client *c);

/* The reload's thread is done: hand over, log, answer whoever asked. */
static void d_reload_done(Daemon *D)
{
	Client *c = D->rl.client;
	uint32_t grow = D->rl.grow;
	DTarget *G = D->rl.grow_tg;
	char msg[1024], *diags = NULL;
	int r = d_reload(D, &diags, msg, sizeof msg);
	if (grow && r)
		G->grow_failed = grow;
	if (grow)
		nt_log(D->nt, r ? 3 : 5, "%s%s%s%s", r ? "target error: " : "", D->ntg > 1 ? G->cf.name : "",
		       D->ntg > 1 ? ": " : "", msg);
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
 * host's CPUs (1 to 8): sentineld shares the host with what it watches.
 * Several targets: one each (every target has a tick thread of its own). */
static uint32_t d_threads(const Config *cf)
{
	if (cf->threads)
		return cf->threads;
	if (cf->ntargets > 1)
		return 1;
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
static void d_watch_tasks(DTarget *T, const sn_stats *st)
{
	Daemon *D = T->D;
	sn_stats S = *st;
	uint32_t cap = eng_task_cap(T->e), max = D->cf.max_tasks;
	bool full = S.tasks_found > cap;
	if (full && cap < max && T->grow_failed == 0 && !D->rl.on) {
		uint64_t want = (uint64_t)S.tasks_found + S.tasks_found / 4;
		want = (want + 1023) / 1024 * 1024;
		if (want < 2ull * cap)
			want = 2ull * cap;
		if (want > max)
			want = max;
		char msg[256];
		nt_log(D->nt, 5, "%s has %u tasks, more than the task table's %u rows: growing it to %u (max_tasks %u)",
		       T->label, S.tasks_found, cap, (unsigned)want, max);
		if (d_reload_start(D, NULL, (uint32_t)want, T, msg, sizeof msg))
			nt_log(D->nt, 4, "cannot grow the task table: %s", msg);
		return;
	}
	if (full && !T->tasks_full && (cap >= max || T->grow_failed)) {
		if (cap >= max)
			nt_log(D->nt, 3, "target error: %s has %u tasks, more than the task table's ceiling of %u rows: "
			       "per-task rules see %u of them; raise [engine] max_tasks and restart sentineld",
			       T->label, S.tasks_found, cap, cap);
		else
			nt_log(D->nt, 3, "target error: %s has %u tasks, more than the task table's %u rows, which could "
			       "not grow (see above): per-task rules see %u of them; raise [engine] history_memory or "
			       "tasks and restart sentineld", T->label, S.tasks_found, cap, cap);
		T->tasks_full = true;
	} else if (!full && T->tasks_full) {
		nt_log(D->nt, 5, "%s has %u tasks again: the task table holds them all", T->label, S.tasks_found);
		T->tasks_full = false;
	}
}

/* An object kind with more objects than the table's slots (disks,
 * cgroups, interfaces, mounts): a target error, said once when it starts
 * and once when it ends; rules over that kind see the objects that fit. */
static void d_watch_objects(DTarget *T, const sn_stats *st)
{
	Daemon *D = T->D;
	const sn_stats S = *st;
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		const char *what = cat_entities[ENT_FIRST_OBJ + k].plural;
		bool full = S.objs_err[k] == -34;
		if (full && !T->objs_full[k])
			nt_log(D->nt, 3, "target error: %s has %u %s, more than the %u the table holds: rules over %s see "
			       "%u of them; raise [engine] objects and restart sentineld", T->label, S.objs_found[k], what,
			       D->cf.objects, what, D->cf.objects);
		else if (!full && T->objs_full[k])
			nt_log(D->nt, 5, "%s has %u %s again: the table holds them all", T->label, S.objs_found[k], what);
		T->objs_full[k] = full;
	}
}

/* Whether every target is lost (for systemd's STATUS). */
static bool d_all_lost(const Daemon *D)
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
static uint64_t d_next_check(uint64_t now, uint64_t period)
{
	return (now / period + 1) * period;
}

/* One target, when its check is due: still the machine we mapped?  A lost
 * one: back yet?  Each target on its own: the others tick on. */
static void d_watch_one(DTarget *T, uint64_t now)
{
	Daemon *D = T->D;
	if (now < T->next_check_ns)
		return;
	char err[512] = "";
	if (T->ts == TS_OK) {
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
			return;
		}
		snprintf(T->err, sizeof T->err, "%s", lost);
		nt_log(D->nt, 3, "target error: %s %s; the rules stop until it is back", T->label, lost);
		d_drain(D);
		d_close_target(T);
		T->ts = TS_LOST;
		if (d_all_lost(D))
			d_sd_notify("STATUS=target lost");
		return;
	}
	T->next_check_ns = d_next_check(now, D_TARGET_RETRY_NS);
	const char *paused = d_target_paused(T);
	if (paused) {                            /* not yet: its memory still holds still */
		snprintf(T->err, sizeof T->err, "%s", paused);
		return;
	}
	if (T->ts == TS_PAUSED)                  /* running again, or gone: looked for as a lost one */
		T->ts = TS_LOST;
	if (d_open_target(T, err, sizeof err)) {
		snprintf(T->err, sizeof T->err, "%s", err);
		return;
	}
	if (eng_start(T->e, err, sizeof err)) {
		nt_log(D->nt, 3, "%s is back but the rules cannot start: %s", T->label, err);
		d_close_target(T);
		return;
	}
	T->ts = TS_OK;
	T->err[0] = 0;
	T->restarts++;
	nt_log(D->nt, 6, "target back: %s%sLinux %s, KASLR offset 0x%llx; the same %zu rules run again (%s)",
	       D->ntg > 1 ? T->cf.name : "", D->ntg > 1 ? ": " : "", T->t->release,
	       (unsigned long long)T->t->kaslr_offset, D->b->nrules, eng_backend_note(T->e));
	d_log_disabled(T);
	d_sd_notify("STATUS=running");
}

static void d_watch_target(Daemon *D)
{
	if (D->rl.on)                    /* the reload's thread uses the targets */
		return;
	uint64_t now = d_now();
	for (unsigned i = 0; i < D->ntg && !D->rl.on; i++)
		d_watch_one(&D->tg[i], now);
}

/* ---- the control socket ------------------------------------------------------------------- */

static const char *d_phase(uint32_t p)
{
	static const char *const n[] = {"inactive", "pending", "firing", "disabled"};
	return p < 4 ? n[p] : "?";
}

/* One target's part of the status: where it is, what runs on it. */
static json_t *d_target_status(DTarget *T)
{
	Daemon *D = T->D;
	json_t *o = json_pack("{s:s, s:s, s:s, s:i}", "name", T->cf.name, "source", T->cf.source, "state",
			      T->ts == TS_OK ? "ok" : T->ts == TS_PAUSED ? "paused" : "lost", "restarts",
			      (int)T->restarts);
	if (T->ts != TS_OK)
		json_object_set_new(o, "error", json_string(T->err));
	if (T->cf.nlabels) {
		json_t *l = json_object();
		for (unsigned i = 0; i < T->cf.nlabels; i++)
			json_object_set_new(l, T->cf.labels[2 * i], json_string(T->cf.labels[2 * i + 1]));
		json_object_set_new(o, "labels", l);
	}
	if (T->t) {
		json_object_set_new(o, "kernel", json_string(T->t->release));
		json_object_set_new(o, "kaslr_offset", json_integer((json_int_t)T->t->kaslr_offset));
	}
	if (!T->e)
		return o;
	sn_stats S;
	uint64_t dropped;
	eng_stats(T->e, &S, &dropped);
	json_object_set_new(o, "backend", json_string(eng_backend(T->e) == ENG_CUDA ? "cuda" : "cpu"));
	json_object_set_new(o, "backend_note", json_string(eng_backend_note(T->e)));
	json_object_set_new(o, "ticks", json_integer((json_int_t)S.ticks));
	json_object_set_new(o, "late_ticks", json_integer((json_int_t)S.late));
	if (D->fleet) {                  /* its group had no time left for it, or it took more than its share */
		json_object_set_new(o, "skipped_ticks", json_integer((json_int_t)S.skipped));
		json_object_set_new(o, "ticks_over_share", json_integer((json_int_t)S.over_share));
	}
	json_object_set_new(o, "last_tick_us", json_real((double)S.last_tick_len_ns / 1e3));
	json_object_set_new(o, "max_tick_us", json_real((double)S.max_tick_len_ns / 1e3));
	json_object_set_new(o, "read_errors", json_integer((json_int_t)S.read_errors));
	json_object_set_new(o, "tasks", json_integer(S.tasks));
	json_object_set_new(o, "tasks_found", json_integer(S.tasks_found));
	json_object_set_new(o, "task_table", json_integer(eng_task_cap(T->e)));
	/* what its tables take (per target: several targets add up) */
	const WdLayout *L = eng_layout(T->e);
	json_object_set_new(o, "table_bytes", json_integer((json_int_t)L->total));
	json_object_set_new(o, "history_bytes", json_integer((json_int_t)L->hist_bytes));
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
	if (eng_backend(T->e) == ENG_CUDA)           /* the GPU times its tick's phases */
		json_object_set_new(o, "tick_phases_us",
				    json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "jobs", (int)S.phase_us[SN_PH_JOBS],
					      "objects", (int)S.phase_us[SN_PH_OBJS],
					      "task_scan", (int)S.phase_us[SN_PH_SCAN], "task_slots",
					      (int)S.phase_us[SN_PH_SLOTS], "task_fields", (int)S.phase_us[SN_PH_FIELDS],
					      "rules", (int)S.phase_us[SN_PH_RULES]));
	if (eng_backend(T->e) == ENG_CUDA && D->b->njobs) {  /* what the jobs phase waits for */
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
		disabled += rl_rule_blocked(D->b, eng_relocs(T->e), i, NULL) != NULL;
	json_object_set_new(o, "rules_disabled", json_integer(disabled));
	return o;
}

/* The status: sentineld's, then "targets", one object each.  The first
 * target's fields are also at the top ("target", "ticks", ...), as when
 * sentineld watched one. */
static json_t *d_status(Daemon *D)
{
	json_t *o = json_pack("{s:s, s:s, s:f, s:I, s:s}", "version", SENTINEL_VERSION, "rules_dir", D->cf.rules_dir,
			      "uptime_s", (double)(d_now() - D->started_ns) / 1e9, "tick_ns", (json_int_t)D->eo.tick_ns,
			      "target_name", D->tg[0].cf.name);
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
	if (D->fleet) {                  /* one GPU kernel for all targets */
		EngFleetInfo F;
		eng_fleet_info(D->fleet, &F);
		json_object_set_new(o, "gpu_fleet",
				    json_pack("{s:s, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:f}", "device", F.device,
					      "targets", (int)F.members, "groups", (int)F.groups, "group_blocks",
					      (int)F.group_blocks, "grid", (int)F.grid, "launches", (json_int_t)F.launches,
					      "group_ticks", (json_int_t)F.passes, "late_group_ticks",
					      (json_int_t)F.late_passes, "max_group_tick_us", (double)F.max_pass_ns / 1e3));
	}
	json_t *ml = json_pack("{s:I}", "wakeups", (json_int_t)D->loop.wakeups), *cpu = json_object();
	double all = 0;
#define D_PH_JSON(n) json_object_set_new(cpu, #n, json_real((double)D->loop.cpu_ns[DP_##n] / 1e9)); \
	all += (double)D->loop.cpu_ns[DP_##n] / 1e9;
	D_PHASES(D_PH_JSON)
#undef D_PH_JSON
	json_object_set_new(ml, "cpu_s", json_real(all));
	json_object_set_new(ml, "cpu_s_by_phase", cpu);
	json_object_set_new(o, "main_loop", ml);
	json_t *arr = json_array();
	for (unsigned i = 0; i < D->ntg; i++)
		json_array_append_new(arr, d_target_status(&D->tg[i]));
	/* the first target's, at the top */
	json_t *t0 = json_array_get(arr, 0), *tg = json_object();
	const char *key;
	json_t *v;
	json_object_foreach(t0, key, v) {
		if (!strcmp(key, "source") || !strcmp(key, "state") || !strcmp(key, "error") || !strcmp(key, "kernel") ||
		    !strcmp(key, "kaslr_offset") || !strcmp(key, "labels"))
			json_object_set(tg, key, v);
		else if (!strcmp(key, "restarts"))
			json_object_set(o, "target_restarts", v);
		else if (strcmp(key, "name"))
			json_object_set(o, key, v);
	}
	json_object_set_new(o, "target", tg);
	json_object_set_new(o, "targets", arr);
	return o;
}

/* Target T's rules, or only the active ones (alerts), into a. */
static int d_target_rules(DTarget *T, json_t *a, bool active_only, char *err, size_t n)
{
	Daemon *D = T->D;
	sn_rstate *st = NULL;
	sn_stats S = {0};
	if (T->e) {
		if (!(st = d_rule_states(T, err, n)))
			return -EIO;
		eng_stats(T->e, &S, NULL);
	}
	for (size_t i = 0; i < D->b->nrules; i++) {
		const BdRule *r = &D->b->rules[i];
		uint32_t phase = st ? st[i].phase : SN_INACTIVE;
		if (active_only && phase != SN_PENDING && phase != SN_FIRING)
			continue;
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", r->name, "target", T->cf.name, "severity",
				      r->severity, "state", T->e ? d_phase(phase) : "stopped", "file", r->file);
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
			const char *why = rl_rule_blocked(D->b, eng_relocs(T->e), i, NULL);
			if (why)
				json_object_set_new(o, "disabled_because", json_string(why));
			if (active_only) {
				for (size_t k = 0; k < r->nannotations; k++)
					if (!strcmp(r->annotations[k].key, "summary")) {
						char *t = nt_render(r->annotations[k].value, &ev, T->cf.name);
						json_object_set_new(o, "summary", json_string(t ? t : ""));
						free(t);
					}
			}
		}
		json_array_append_new(a, o);
	}
	free(st);
	return 0;
}

/* rules, or only the active ones (alerts): every target's, in order */
static json_t *d_rules(Daemon *D, bool active_only, char *err, size_t n)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < D->ntg; i++)
		if (d_target_rules(&D->tg[i], a, active_only, err, n)) {
			json_decref(a);
			return NULL;
		}
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
		resp = d_reload_start(D, c, 0, NULL, msg, sizeof msg) ? json_pack("{s:b, s:s}", "ok", 0, "message", msg) : NULL;
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

/* Forget a client: its socket, its unread requests and unsent answers; a
 * reload it waits for goes on with nobody to answer. */
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
"alerts to the configured sinks.  One sentineld may watch many kernels (a\n"
"hypervisor's VMs: one [target NAME] section each, or drop-ins in a [targets]\n"
"directory, read again on reload; docs/targets.md).\n"
"\n"
"Stays in the foreground (systemd Type=notify; logs go to stderr, which\n"
"journald reads).  SIGHUP or 'sentinelctl reload' reloads the rule directory\n"
"and the targets without a missed tick; a failed reload changes nothing.\n"
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
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},      {"version", no_argument, NULL, 'V'},
		{"config", required_argument, NULL, 'c'}, {"check-config", no_argument, NULL, 'k'},
		{NULL, 0, NULL, 0},
	};
	const char *config = SENTINEL_SYSCONFDIR "/sentinel/sentinel.conf";
	bool check_only = false;
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hVc:", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("sentineld %s\n", SENTINEL_VERSION);
			return 0;
		case 'c':
			config = optarg;
			break;
		case 'k':
			check_only = true;
			break;
		case ':':
			fprintf(stderr, "sentineld: %s needs a value (the configuration file); see sentineld --help\n",
				argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "sentineld: unknown argument '%s'; see sentineld --help\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sentineld: unknown argument '%s'; see sentineld --help\n", argv[optind]);
		return 2;
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
	D.ntg = D.cf.ntargets;
	if (!(D.tg = calloc(D.ntg, sizeof *D.tg))) {
		fprintf(stderr, "sentineld: out of memory\n");
		goto out;
	}
	for (unsigned i = 0; i < D.ntg; i++)
		if (d_target_init(&D, &D.tg[i], &D.cf.targets[i])) {
			fprintf(stderr, "sentineld: out of memory\n");
			goto out;
		}
	/* several targets, or a directory of them: on the GPU one kernel runs
	 * them all (a fleet, opened once the rules are compiled); on the CPU
	 * backend each has a tick thread */
	bool several = D.ntg > 1 || D.cf.targets_dir;
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
			  .host_only = !gpu && strcmp(D.cf.backend, "cuda"), .tick_s = (double)D.cf.tick_ns / 1e9};
	int r = d_rules_load(&D, &D.b, &diags, err, sizeof err);
	if (diags)                               /* errors (r == 1), or warnings: the rules run */
		fputs(diags, stderr);
	if (r == 1) {
		rc = 1;
		goto out;
	}
	if (r) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	if (several && strcmp(D.cf.backend, "cpu")) {
		bool cuda = !strcmp(D.cf.backend, "cuda");
		if ((cuda || gpu) && !eng_fleet_open(D.b, &D.eo, &D.fleet, err, sizeof err)) {
			D.eo.fleet = D.fleet;
		} else if (cuda) {
			fprintf(stderr, "sentineld: %s\n", err);
			goto out;
		} else {                          /* auto: the GPU could not, or there is none */
			if (gpu)
				fprintf(stderr, "sentineld: the CPU backend runs the targets: the GPU cannot (%s)\n", err);
			free(D.cf.backend);
			D.cf.backend = strdup("cpu");
			D.eo.backend = D.cf.backend;
		}
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
	NtConfig nc = {.log = D.cf.log, .log_pending = D.cf.log_pending, .jsonl = D.cf.jsonl, .target = D.tg[0].cf.name,
		       .several = D.ntg > 1 || D.cf.targets_dir,
		       .alertmanager = D.cf.alertmanager, .webhook = D.cf.webhook, .external_url = D.cf.external_url,
		       .resend_ns = D.cf.resend_ns, .tick_ns = D.cf.tick_ns,
		       .spool = check_only ? NULL : D.cf.spool,   /* a check delivers nothing */
		       .spool_max = D.cf.spool_max};
	if (nt_open(&nc, &D.nt, err, sizeof err)) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	/* One target: it must be there (exit 2).  Several (a hypervisor's
	 * VMs): one that is not running yet is a target error, looked for
	 * every 2 s while the others run; a check says every one. */
	unsigned opened = 0;
	for (unsigned i = 0; i < D.ntg; i++) {
		DTarget *T = &D.tg[i];
		if (d_open_target(T, err, sizeof err)) {
			snprintf(T->err, sizeof T->err, "%.511s", err);
			if (D.ntg == 1 || check_only)
				fprintf(stderr, "sentineld: %s\n", err);
			else
				nt_log(D.nt, 3, "target error: %s; looking for it every %.0f s", err, D_TARGET_RETRY_NS / 1e9);
			continue;
		}
		T->ts = TS_OK;
		opened++;
		if (check_only)
			printf("sentineld: %s%s%s%zu rules compile and load on Linux %s (%s)\n", D.ntg > 1 ? "target " : "",
			       D.ntg > 1 ? T->cf.name : "", D.ntg > 1 ? ": " : "", D.b->nrules, T->t->release,
			       eng_backend_note(T->e));
	}
	if (D.ntg == 1 && !opened)
		goto out;
	if (D.cf.record && !check_only &&
	    rec_create(D.cf.record, D.b, D.cf.tick_ns, D.tg[0].t->cpus.nr_cpu_ids, &D.rec, err, sizeof err)) {
		fprintf(stderr, "sentineld: %s\n", err);
		goto out;
	}
	if (check_only) {
		if (opened == D.ntg)
			printf("sentineld: %s is valid\n", config);
		else
			fprintf(stderr, "sentineld: %u of %u targets cannot be read (above); %s is otherwise valid\n",
				D.ntg - opened, D.ntg, config);
		rc = opened == D.ntg ? 0 : 2;
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
	D.started_ns = d_now();
	for (unsigned i = 0; i < D.ntg; i++) {
		DTarget *T = &D.tg[i];
		T->next_check_ns = d_next_check(D.started_ns, T->ts == TS_OK ? D_TARGET_CHECK_NS : D_TARGET_RETRY_NS);
		if (T->ts != TS_OK)
			continue;
		if (eng_start(T->e, err, sizeof err)) {
			if (D.ntg == 1) {
				fprintf(stderr, "sentineld: %s\n", err);
				goto out;
			}
			nt_log(D.nt, 3, "target error: %s: the rules cannot start: %s", T->label, err);
			snprintf(T->err, sizeof T->err, "the rules cannot start: %.480s", err);
			d_close_target(T);
			T->ts = TS_LOST;
			continue;
		}
		nt_log(D.nt, 6, "started: %zu rules from %s against %s (Linux %s, %s paging), tick %.0f ms, %s; control %s",
		       D.b->nrules, D.cf.bundle ? D.cf.bundle : D.cf.rules_dir, T->label, T->t->release,
		       T->t->mem.levels == 5 ? "5-level" : "4-level", (double)D.cf.tick_ns / 1e6, eng_backend_note(T->e),
		       D.cf.socket);
		d_log_disabled(T);
	}
	if (D.ntg > 1)
		nt_log(D.nt, 6, "watching %u targets, %u of them running", D.ntg, D.ntg - (d_all_lost(&D) ? D.ntg : 0));
	d_sd_notify(d_all_lost(&D) ? "READY=1\nSTATUS=no target running" : "READY=1\nSTATUS=running");
	/* the host's share: sleep until the engine says alerts wait (the wake
	 * fd: the GPU's doorbell, gpu_arm), the control socket or a signal
	 * needs us, or the target is due a check; every [notify] delay where
	 * the engine cannot wake us.  Each wakeup costs ~50 us here
	 * (docs/benchmarks.md). */
	d_phase_end(&D, DP_arm);               /* start the clock; the set-up is nobody's phase */
	memset(D.loop.cpu_ns, 0, sizeof D.loop.cpu_ns);
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
		uint64_t now = d_now(), wait_ns = UINT64_MAX;
		bool armed = true, running = false;
		for (unsigned i = 0; i < D.ntg; i++) {
			DTarget *T = &D.tg[i];
			uint64_t w = T->next_check_ns > now ? T->next_check_ns - now : 0;
			if (w < wait_ns)
				wait_ns = w;
			if (T->ts == TS_OK && T->e) {
				running = true;
				if (D.fleet)           /* one bell for all of them, below */
					continue;
				armed &= eng_arm(T->e);
				if (!D.wake || strcmp(D.wake, "poll"))
					D.wake = eng_backend(T->e) == ENG_CUDA ? "gpu doorbell" : "tick thread";
			}
		}
		if (D.fleet && running) {
			armed = eng_fleet_arm(D.fleet, D.eo.wake_fd);
			D.wake = armed ? "gpu doorbell" : "poll";
		}
		armed &= running;
		if (running && !armed)
			D.wake = "poll";
		if (!armed && wait_ns > D.cf.delay_ns)
			wait_ns = D.cf.delay_ns;
		/* a fleet that cannot ring (an older driver): its rings are
		 * looked at every tick (at least every 10 ms) */
		uint64_t every = D.eo.tick_ns > 10000000ull ? D.eo.tick_ns : 10000000ull;
		if (D.fleet && running && !armed && wait_ns > every)
			wait_ns = every;
		d_phase_end(&D, DP_arm);
		int pr = poll(pf, (nfds_t)np, (int)((wait_ns + 999999) / 1000000));
		D.loop.wakeups++;
		if (pr > 0 && (pf[1].revents & POLLIN)) {
			uint64_t count;
			ssize_t got = read(D.eo.wake_fd, &count, sizeof count);
			(void)got;
		}
		d_phase_end(&D, DP_poll);
		d_drain(&D);
		d_phase_end(&D, DP_drain);
		if (pr > 0 && (pf[2].revents & POLLIN) && px_wanted(D.px))
			d_metrics(&D);
		d_phase_end(&D, DP_metrics);
		if (D.rl.on && __atomic_load_n(&D.rl.done, __ATOMIC_ACQUIRE))
			d_reload_done(&D);
		if (d_reload_flag && !D.rl.on) {         /* SIGHUPs during a reload: one more after it */
			d_reload_flag = 0;
			char msg[1024];
			if (d_reload_start(&D, NULL, 0, NULL, msg, sizeof msg))
				nt_log(D.nt, 4, "reload (SIGHUP): %s", msg);
		}
		d_phase_end(&D, DP_reload);
		d_watch_target(&D);
		d_phase_end(&D, DP_watch);
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
		d_phase_end(&D, DP_clients);
	}
	d_sd_notify("STOPPING=1");
	nt_log(D.nt, 6, "stopping");
	if (D.rl.on) {
		nt_log(D.nt, 6, "waiting for the reload in progress to end (it is discarded)");
		pthread_join(D.rl.thread, NULL);
		d_reload_discard(&D);
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
	for (unsigned i = 0; i < D.ntg; i++)
		if (D.tg[i].e && eng_stop(D.tg[i].e, err, sizeof err))
			nt_log(D.nt, 4, "%s: %s", D.tg[i].label, err);
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
	if (D.fleet && eng_fleet_halt(D.fleet, err, sizeof err))
		fprintf(stderr, "sentineld: %s\n", err);
	for (unsigned i = 0; i < D.ntg; i++) {
		d_close_target(&D.tg[i]);
		cf_target_free(&D.tg[i].cf);
	}
	free(D.tg);
	eng_fleet_close(D.fleet);
	rec_close(D.rec);
	bd_free(D.b);
	nt_close(D.nt);
	cf_free(&D.cf);
	if (D.eo.wake_fd > 0)
		close(D.eo.wake_fd);
	return rc;
}
