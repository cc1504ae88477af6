/* sentineld.h - what the parts of sentineld share (sentineld/: sentineld.c,
 * target.c, find.c, watch.c, reload.c, trial.c, control.c, crash.c);
 * private to them.  The main thread waits and dispatches; workers do
 * what is slow: a lost target's search and load (DFinder), the reload's
 * compile and loads (DReload), its handovers (DHandover). */
#ifndef SENTINEL_SENTINELD_H
#define SENTINEL_SENTINELD_H

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
#include "util.h"

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

/* sentineld's exit status after a GPU fault (eng_gpu_lost): start it again */
#define SENTINELD_EXIT_GPU_LOST 3
/* --trial: the new rules did not run their ticks in time */
#define SENTINELD_EXIT_TRIAL_SLOW 4

#ifndef SENTINEL_VERSION
#define SENTINEL_VERSION "0.1.0"
#endif
#ifndef SENTINEL_SYSCONFDIR
#define SENTINEL_SYSCONFDIR "/etc"
#endif

#define D_MAX_CLIENTS 16
#define D_TARGET_CHECK_NS 1000000000ull   /* how often the target is checked */
#define D_TARGET_RETRY_NS 2000000000ull   /* how often a lost target is looked for (at least) */
#define D_TARGET_RETRY_MAX_NS 60000000000ull /* ... at most: a search that took long backs off to this */
#define D_FIND_DEADLINE_NS 30000000000ull /* a search (kt_open) that takes longer is given up */
#define D_COMPILE_NICE 10                 /* compiling rules yields to the host's real work */
#define D_NEWEST_ARCH 90                  /* the newest sm_NN LLVM 19's NVPTX back end knows */
#define D_STR_(x) #x
#define D_STR(x) D_STR_(x)

typedef enum { TS_OK, TS_LOST, TS_PAUSED } TargetState;   /* PAUSED: by its hypervisor, not watched */

/* A target's phase, what status, /metrics and the journal say it is
 * doing (TargetState is the coarse one the loop decides on):
 *   finding       its kernel looked for (DFinder: the VMCOREINFO scan, kallsyms, BTF)
 *   loading       found: the rules loaded on the backend for it (DFinder too)
 *   running       its rules tick
 *   handing_over  a reload moves it to new rules (DHandover)
 *   lost          not running, waiting for its next search (DTarget.err says why)
 *   paused        paused by its hypervisor: not watched until it runs
 * Written by the thread doing the work, read by any (atomic). */
#define D_TPHASES(X) X(finding) X(loading) X(running) X(handing_over) X(lost) X(paused)
typedef enum {
#define D_TP_ENUM(n) DT_##n,
	D_TPHASES(D_TP_ENUM)
#undef D_TP_ENUM
	DT_N
} DtPhase;
extern const char *const d_tphase_name[DT_N];

/* The gate a DFinder passes to load the rules (the bundle, the GPU fleet,
 * the engine options: what a reload changes).  A reload closes it at its
 * start and waits for the loads in progress (on its thread, not the
 * loop's); the loop opens it again once the reload is over, and a finder
 * that found its target meanwhile waits at it.  gen counts the reloads
 * that changed what loads: an engine loaded before is stale. */
typedef struct DGate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool closed;
	unsigned loading;             /* finders between d_gate_enter and d_gate_leave */
	uint64_t gen;
} DGate;

/* A lost target's search: its source opened and its kernel found
 * (d_find: the VMCOREINFO scan over all its RAM, kallsyms, BTF; what the
 * guest's memory holds decides how long it takes), on a thread of its
 * own so that no guest stalls the loop or the other targets.  The thread
 * owns all of it until done is set; then the loop takes src and t
 * (d_finder_take).  cancel stops it at its next check (sentineld
 * stopping, the target removed); kt_open's deadline bounds it anyway.
 * Owns cf (a copy: a reload may change the target's), src and t until
 * taken. */
typedef struct DFinder {
	pthread_t th;
	struct Daemon *D;             /* its gate, bundle and engine options (read under the gate) */
	CfTarget cf;
	char label[300];
	int done, cancel;             /* atomics */
	int phase;                    /* atomic: DT_finding, then DT_loading */
	int wake_fd;                  /* told when done (the loop's wake fd), or -1 */
	int rc;
	char err[512];
	MemSource *src;
	KTarget *t;
	struct stat ram_st;
	uint64_t took_ns;             /* the search's time (the backoff's measure; the load's not counted) */
	bool found;                   /* given src and t (a stale load's second try): load only */
	uint32_t task_cap;            /* the target's task table rows */
	Engine *e;                    /* the rules loaded on the backend for it, or NULL */
	KlLog *klog;
	char note[256];               /* why its kernel log cannot be read (logged when taken), or "" */
	uint64_t gen;                 /* DGate.gen e was loaded under */
	uint64_t load_ns;
} DFinder;

/* A reload's handovers, waited for on a thread while the loop drains
 * alerts and answers.  The targets on their own engines: eng_takeover and
 * the new engine's first tick, one after the other; the loop moves each
 * target handed over to its new engine (d_handover_swap: the old one
 * closes) as the thread goes on.  Owns it[]; the engines stay the
 * targets' (DTarget.e, .ne): the thread uses item i's until it publishes
 * its st, the loop after.  The GPU fleet's (fleet): the loop pauses the
 * old kernel and launches the new one, the thread waits for every new
 * engine's first tick (it reads their stats alone) and publishes rc, the
 * loop then moves them all or starts the old kernel again. */
enum { HO_WAIT, HO_OK, HO_FAILED, HO_SKIPPED, HO_SWAPPED };
typedef struct DHoItem {
	unsigned idx;                 /* the target's index in D->tg (which does not change meanwhile) */
	int st;                       /* atomic: HO_* */
	int rc;
	unsigned kept;
	sn_stats os, ns;              /* the old engine's last tick, the new one's first */
	char err[512];
} DHoItem;
typedef struct DHandover {
	pthread_t th;
	bool on;
	bool threaded;                /* th runs (else it ran on the loop: nothing to join) */
	bool fleet;                   /* the GPU fleet's: the thread waits for the new kernel's first ticks
				       * (d_fleet_wait), the loop arms nothing meanwhile */
	int rc;                       /* ... and its outcome */
	char err[512];
	int done;                     /* atomic: the thread has finished */
	struct Daemon *D;
	unsigned n;
	DHoItem *it;                  /* [n] */
} DHandover;

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
	char *klog_text;              /* its tail as read for drain klog_drain (owned; NULL: unread, or it failed) */
	uint64_t klog_drain;
	/* klog.c: its events waiting for a kernel log read, in order (owned),
	 * and that read, on the reader's thread (owned once done) */
	struct DKlEv *kq, *kq_last;
	unsigned kq_n;
	struct DKlJob *kjob;
	uint64_t klog_reads;          /* reads of its kernel log (status) */
	uint64_t klog_skipped;        /* times its queue overflowed: events sent without the log */
	Engine *e;
	uint32_t task_cap;            /* its task table's rows (grows: d_watch_tasks) */
	struct stat ram_st;           /* a ramfile target: the file we mapped */
	TargetState ts;
	int phase;                    /* atomic DtPhase (while a DFinder runs: its phase) */
	char err[512];                /* why it is lost or paused (the first reason: kept while it is looked for) */
	char last_error[512];         /* the latest error of any kind (kept after it is back), or "" */
	time_t last_error_at;
	unsigned errors;              /* how many times it was lost or failed to come back */
	char retry_err[512];          /* a lost one: why the last look for it failed, or "" */
	char pause_why[96];           /* d_target_paused's answer */
	unsigned restarts;
	uint64_t next_check_ns;
	bool tasks_full;              /* the target had more tasks than the table at the last check */
	bool objs_full[SN_OBJ_KINDS]; /* ... more objects of a kind than [engine] objects */
	bool over_budget;          /* ... ticks cut off at its read budget (d_watch_budget) */
	uint64_t budget_seen;      /* its engine's over_budget count at the last check */
	const Engine *budget_e;    /* that engine (a reload's new one counts from 0) */
	uint32_t grow_failed;         /* the task table size a growth failed to reach (not tried again) */
	Engine *ne;                   /* a reload's engine for it, until the handover */
	bool gone;                    /* a reload found it no more in the configuration */
	bool dropping;                /* its VM is gone or paused: its engine's alerts are not delivered (until reopened) */
	bool back;                    /* a lost one opened again by the watch, its rules not yet started */
	DFinder *finder;              /* a lost one: its search in progress, or NULL */
	uint64_t retry_ns;            /* a lost one: the wait before the next search (backs off) */
	uint64_t searches;            /* searches started for it (status) */
	uint64_t last_search_ns;      /* how long the last one took */
	uint64_t st_next_ns;          /* its next state save (state.c), 0: not yet planned */
} DTarget;

/* A control-socket client.  Its fd is non-blocking: answers queue in out
 * (owned, malloc'd) and go as the client reads them; a client that lets
 * more than D_CLIENT_OUT_MAX wait is dropped.  Its requests are not read
 * while it waits for its reload or has answers queued. */
typedef struct Client {
	int fd;
	char buf[4096];
	size_t len;
	bool waiting;                 /* for its reload or its rules: not read until answered */
	char *out;                    /* answers not yet written */
	size_t out_len, out_off;
	uint64_t seen_ns;             /* when it was accepted, or last read or written */
	/* its `rules` or `alerts` answer, built a slice of targets at a time
	 * between the loop's other work (d_clients_work): every target's
	 * rule states copied and made JSON (10,000 rules on 500 targets: 5
	 * million objects) must not hold alerts back */
	json_t *rules;                /* the answer so far (owned), or NULL: none in progress */
	bool rules_active;            /* alerts: the active ones only */
	unsigned rules_next;          /* the next target */
	uint64_t rules_gen;           /* Daemon.tg_gen it began with: the targets changed, it begins again */
} Client;

/* How long one slice of a `rules` answer may take (d_clients_work). */
#define D_RULES_SLICE_NS 2000000ull

#define D_CLIENT_OUT_MAX (64u << 20)
/* A client that neither sends nor reads for this long is dropped (but one
 * that waits for its reload): idle connections cannot hold the
 * D_MAX_CLIENTS slots.  When every slot is taken, a new client takes the
 * one idle the longest. */
#define D_CLIENT_IDLE_NS 30000000000ull

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
	uint64_t t_rules, t_open, t_trial;  /* when each step ended (the message's breakdown) */
	Bundle *nb;                   /* the engines for it: DTarget.ne */
	char *diags;                  /* rule errors, rulec's format; or the configuration's */
	char err[1024];
	int r_targets, r_rules, r_open; /* the configuration's, d_rules_load's and eng_open's results */
	CfTarget *added;              /* [nadded]: targets the configuration has now and sentineld not */
	unsigned nadded;
	bool same;                    /* the GPU fleet: the rules did not change, only the targets may */
	EngFleet *nfleet;             /* the GPU fleet: the new rules' (or a grown table's) kernel for all targets */
	char trial[160];              /* the trial run's note ("3 ticks in 312 ms, ..."), or "" */
	/* the handover's, kept from d_reload_done to d_handover_done */
	Bundle *hb;                   /* the new rules (nb) while their engines take over */
	uint32_t old_cap;
	char *hdiags;
	unsigned fleet_kept, fleet_done;   /* the GPU fleet's handover's (d_fleet_handover) */
	sn_stats fleet_os, fleet_ns;
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

/* The kernel log's reader (klog.c): one thread for every target's reads,
 * a queue of jobs under mu; done_cv tells d_kl_flush a job ended. */
typedef struct DKlJob DKlJob;
typedef struct DKlWorker {
	pthread_t th;
	bool on, stop;
	int wake_fd;                  /* the loop's (Daemon.eo.wake_fd): rung when a read ends */
	pthread_mutex_t mu;
	pthread_cond_t cv, done_cv;
	DKlJob *head;
	Bundle **retired;             /* [nretired] (owned): rules a reload replaced, kept while events wait */
	unsigned nretired;
} DKlWorker;

/* The state writer (state.c): saves of the targets' worlds, written on
 * its thread in the order queued (one per file: a newer copy replaces a
 * waiting one). */
typedef struct DStJob DStJob;
typedef struct DStWriter {
	char dir[3072];               /* [engine] state resolved; "": none */
	pthread_t th;
	bool inited, on, stop, busy;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	DStJob *head;
	uint64_t writes, errors, bytes;   /* under mu: files written, failures, the last one's block */
	char last_error[512];
	char *man;                    /* the manifest of man_b (the rules of reload man_gen) */
	const Bundle *man_b;
	unsigned man_gen;
} DStWriter;

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
	char cache_dir[1024];         /* [engine] cache resolved, "" none (d_cache_setup) */
	char cache_note[4400];        /* the compile cache's last word (d_rules_load logs it) */
	unsigned long cubin_notes;    /* the GPU cache's refusals and failed writes logged so far (d_cache_log) */
	int lfd;
	Client cl[D_MAX_CLIENTS];
	uint64_t started_ns;
	unsigned reloads;             /* reloads that succeeded */
	unsigned reload_failures;     /* ... that failed: the running rules stayed */
	bool last_reload_failed;
	char last_reload[600];        /* what the last reload (or growth's failure) said, success or not */
	uint64_t alerts_seen;
	uint64_t drains;              /* d_drain's count: a target's kernel log is read at most once in each */
	uint64_t tg_gen;              /* changes when targets come or go (a reload): the index of tg[] moves */
	const char *wake;             /* how alerts reach the host: "gpu doorbell", "tick thread", "poll" */
	Recorder *rec;                /* [engine] record: written by the tick thread (d_record) */
	PxServer *px;                 /* [metrics] listen: /metrics, or NULL */
	uint64_t rec_errors;          /* atomic: records that could not be written */
	DReload rl;
	DHandover ho;
	DGate gate;
	DLoop loop;
	DKlWorker kw;
	DStWriter sw;
} Daemon;


/* sentineld.c: the main loop, signals, alerts into the notifier */
sn_rstate *d_rule_states(Engine *e, char *err, size_t n);
void d_exit_gpu_lost(void);
void d_dir_auto(const char *env, const char *fallback, char *out, size_t n);
void d_cache_setup(const Config *cf, char *dir, size_t n);
void d_cache_log(Daemon *D);
void d_drain(Daemon *D);
void d_sd_notify(const char *state);

/* klog.c: alerts that carry the kernel log wait for it on the reader's
 * thread, the target's later events behind them (the loop: start before
 * the first drain, stop after the last; d_kl_poll after each wakeup; the
 * flushes wait for the reads: before a target closes, and at the end) */
int d_kl_start(Daemon *D);
void d_kl_stop(Daemon *D);
void d_kl_event(DTarget *T, NtEvent *ev, bool wants);
unsigned d_kl_poll(Daemon *D);
void d_kl_flush(DTarget *T);
void d_kl_flush_all(Daemon *D);
/* A reload is done with b: freed now, or once no event waits (NULL: nothing). */
void d_bundle_retire(Daemon *D, Bundle *b);

/* target.c: a target: its section, its engine, whether its VM is there; find.c: finding its kernel; watch.c: the watch */
bool d_all_lost(const Daemon *D);
const char *d_target_gone(const DTarget *T);
const char *d_target_paused(DTarget *T);
int d_open_target(DTarget *T, char *err, size_t n);
/* Its two halves: the source and discovery (thread-safe for different
 * targets), then the engine. */
int d_find_target(DTarget *T, char *err, size_t n);
/* A lost target's search on its thread: started, and stopped (cancel
 * and join: sentineld stopping, the target removed). */
int d_finder_start(DTarget *T);
void d_finder_stop(DTarget *T);
/* A worker that ended (done set): its answer; on success T has its
 * source, kernel and engine (not started); 1: it runs again (a load a
 * reload made stale). */
int d_finder_take(DTarget *T, char *err, size_t n);
/* Whether a source's memory is a file a VM owns (it goes when the VM does). */
bool d_file_backed(const MemSource *s);
/* Every thread sentineld starts: with the signals it handles blocked,
 * so that only the main loop's ppoll receives them. */
int d_thread(pthread_t *th, void *(*fn)(void *), void *arg);
/* A worker (a search, the reload's thread) wakes the loop: the wake eventfd. */
void d_wake(int wake_fd);
int d_load_target(DTarget *T, char *err, size_t n);
/* The load gate (DGate): a reload closes it (waiting for the loads in
 * progress), the loop opens it after; d_gate_stale closes the engines
 * finders loaded before a reload's handover (they load again). */
void d_gate_init(Daemon *D);
void d_gate_close(Daemon *D);
void d_gate_open(Daemon *D);
void d_gate_stale(Daemon *D);
/* T's phase now, and a change of it (the journal says so when it matters). */
DtPhase d_target_phase(const DTarget *T);
void d_phase_set(DTarget *T, DtPhase p);
/* An error of T's (lost, a failed search or start): last_error and its time. */
void d_target_error(DTarget *T, const char *why);
/* d_find_target for every target at once, on threads: rc[i], err[i]. */
void d_find_targets(Daemon *D, int *rc, char (*err)[512]);
int d_target_init(Daemon *D, DTarget *T, const CfTarget *cf);
uint64_t d_next_check(uint64_t now, uint64_t period);
void d_close_target(DTarget *T);
void d_log_disabled(DTarget *T);
void d_record(void *ctx, const sn_world *w);
void d_record_end(Daemon *D, const char *why);
void d_target_opts(const DTarget *T, EngOpts *eo);
void d_target_opts_cf(const struct Daemon *D, const CfTarget *cf, EngOpts *eo);
void d_watch_target(Daemon *D);

/* reload.c: the reload: compile and open on a thread, then the handover on the main loop */
int d_reload_start(Daemon *D, Client *c, uint32_t grow, DTarget *gt, char *msg, size_t n);
int d_rules_load(Daemon *D, CompKeep *keep, Bundle **out, char **diags, char *err, size_t n);
uint32_t d_threads(const Config *cf);
void d_reload_discard(Daemon *D);
void d_reload_done(Daemon *D);
/* The handovers' thread (DHandover): the targets it has handed over
 * move to their new engines (the old ones close) as it goes; once it is
 * done, the reload ends. */
void d_handover_swap(Daemon *D);
void d_handover_done(Daemon *D);

/* trial.c: a reload's trial run of the new rules in a child process
 * (sentineld --trial), started before the rules compile (d_trial_start),
 * given them once they have (d_trial_feed: it loads them beside the new
 * engines' load) and waited for after that load (d_trial_wait), or
 * cancelled when the compile or the load failed (d_trial_cancel).  The
 * run's pipes and the bundle's memfd are its own; pid -1: none. */
typedef struct DTrialRun {
	pid_t pid;
	int fd, out;               /* the bundle (memfd), the child's output */
	int go;                    /* the child's stdin: 'g' once the bundle is in fd; -1 once said */
} DTrialRun;
int d_trial_start(Daemon *D, DTarget *T, uint32_t task_cap, DTrialRun *tr, char *err, size_t n);
int d_trial_feed(DTrialRun *tr, const Bundle *nb, char *err, size_t n);
/* 0 when the child ticked (note: its last words); otherwise an error and
 * why in err.  Either way tr is done with. */
int d_trial_wait(Daemon *D, DTrialRun *tr, char *note, size_t nn, char *err, size_t n);
void d_trial_cancel(DTrialRun *tr);
int d_trial_main(const char *config, const char *bundle, const char *target, uint32_t task_cap,
		 const char *backend, bool go);

/* state.c: alert state and windows across a restart ([engine] state):
 * d_st_start before the targets open, d_st_restore for each before its
 * rules start, d_st_tick on the loop, d_st_stop at the end (the engines
 * stopped and drained: their last state is written) */
int d_st_start(Daemon *D);
void d_st_restore(DTarget *T);
void d_st_tick(Daemon *D, uint64_t now);
void d_st_stop(Daemon *D);
/* status's "state": the directory, files written, failures, the last one's
 * error; NULL when no state is kept */
json_t *d_st_status(Daemon *D);

/* crash.c: with SENTINEL_TEST_FAULTS set, a crash prints its stack (the fault tests' last words) */
void d_crash_report(void);

/* control.c: the control socket: status, rules, alerts, reload; non-blocking clients */
int d_listen(Daemon *D, char *err, size_t n);
void d_answer(Daemon *D, Client *c, json_t *resp);
void d_client_close(Daemon *D, Client *c);
void d_client_flush(Daemon *D, Client *c);
void d_client_io(Daemon *D, Client *c, short revents);
void d_client_accept(Daemon *D);
/* Drop the clients idle past D_CLIENT_IDLE_NS; when the next one falls due. */
uint64_t d_clients_idle(Daemon *D, uint64_t now);
void d_client_requests(Daemon *D, Client *c);
/* The `rules` answers in progress: a slice each; whether one is left. */
bool d_clients_work(Daemon *D);

#endif
