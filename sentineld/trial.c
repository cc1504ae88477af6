/* trial.c - sentineld: a reload's trial run of the new rules, in a
 * process of its own.
 *
 * A GPU kernel that faults takes the whole process's CUDA with it: every
 * later call of every context fails (docs/engine.md), so a reload whose
 * new kernel faulted could only exit and be started again.  Before the
 * handover, the reload therefore runs the new rules for a few ticks in a
 * child sentineld (/proc/self/exe --trial) against the same target, on
 * the same backend, with the bundle the reload compiled (handed over in
 * a memfd).  The child ticks and exits 0, or faults and dies, or fails
 * and says why; anything but 0 fails the reload, and the old rules run on.
 * The CPU backend runs the rules' host code in the process too (a wild
 * read there is a SIGSEGV), so it gets the same trial.
 *
 * The parent half runs on the reload's thread: the main loop goes on
 * meanwhile.  It starts the child before the rules compile
 * (d_trial_start): the child finds the target's kernel and, on the GPU,
 * starts CUDA and a context, then waits on its stdin; d_trial_feed hands
 * it the compiled bundle and a go, and it loads and ticks beside the new
 * engines' load; d_trial_wait reads how it went (d_trial_cancel: a
 * compile or load that failed ends it).  The child half, d_trial_main, is
 * sentineld's --trial mode. */
#define _GNU_SOURCE                 /* memfd_create, pipe2 */
#include "sentineld.h"

#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>

extern char **environ;

#define D_TRIAL_TICKS 3           /* the child's ticks before it says ok */

/* ---- the child ------------------------------------------------------------------------- */

/* With --trial-go: whether the parent said go (a 'g' on stdin) rather
 * than closing it (the reload failed: nothing to run). */
static bool d_trial_go(void)
{
	char c = 0;
	ssize_t r;
	while ((r = read(0, &c, 1)) < 0 && errno == EINTR)
		;
	return r == 1 && c == 'g';
}

/* sentineld --trial BUNDLE --trial-target NAME --trial-tasks N
 * --trial-backend B [--trial-go] -c CONFIG: open the target as sentineld
 * would, with the bundle's rules; run D_TRIAL_TICKS ticks; stop.  With
 * go, the target is found (and CUDA started) first, and the bundle read
 * once stdin says go.  Exit 0 (it ran, or was not needed), 2 (it could not
 * run: the reason on stderr), 3 (a GPU kernel faulted), 4 (it did not tick
 * in time). */
int d_trial_main(const char *config, const char *bundle, const char *target, uint32_t task_cap,
		 const char *backend, bool go)
{
	Daemon D = {.lfd = -1};
	DTarget T = {0};
	char err[1024];
	int rc = 2;
	if (cf_load(&D.cf, config, stderr)) {
		fprintf(stderr, "sentineld --trial: %s has errors\n", config);
		goto out;
	}
	d_cache_setup(&D.cf, D.cache_dir, sizeof D.cache_dir);
	const CfTarget *cf = NULL;
	for (unsigned i = 0; i < D.cf.ntargets && !cf; i++)
		if (!strcmp(D.cf.targets[i].name, target))
			cf = &D.cf.targets[i];
	if (!cf) {
		fprintf(stderr, "sentineld --trial: %s has no target named %s\n", config, target);
		goto out;
	}
	D.cf.kernel_log_lines = 0;             /* no alert goes out of a trial */
	D.ntg = 1;
	D.tg = &T;
	D.eo = (EngOpts){.backend = backend, .tick_ns = D.cf.tick_ns, .ring_cap = D.cf.ring,
			 .hist_max = D.cf.hist_max, .gpu = D.cf.gpu, .threads = d_threads(&D.cf),
			 .reg_chunk = D.cf.reg_chunk, .obj_cap = D.cf.objects, .trial = true};
	if (d_target_init(&D, &T, cf)) {
		fprintf(stderr, "sentineld --trial: out of memory\n");
		goto out;
	}
	T.task_cap = task_cap;
	/* what needs no rules first, while the parent compiles them */
	if (d_find_target(&T, err, sizeof err) || (!strcmp(backend, "cuda") && gpu_warm(D.cf.gpu, err, sizeof err))) {
		fprintf(stderr, "sentineld --trial: %s\n", err);
		goto out;
	}
	if (go && !d_trial_go()) {
		rc = 0;
		goto out;
	}
	if (bd_read(bundle, &D.b, err, sizeof err)) {
		fprintf(stderr, "sentineld --trial: %s\n", err);
		goto out;
	}
	if (d_load_target(&T, err, sizeof err)) {
		fprintf(stderr, "sentineld --trial: %s\n", err);
		rc = eng_gpu_lost() ? SENTINELD_EXIT_GPU_LOST : 2;
		goto out;
	}
	uint64_t t0 = u_now_ns(), tick = D.cf.tick_ns;
	if (eng_start(T.e, err, sizeof err)) {
		fprintf(stderr, "sentineld --trial: the new rules cannot start: %s\n", err);
		goto out;
	}
	/* the first tick runs at once, the others one tick apart */
	uint64_t deadline = t0 + 10000000000ull + (D_TRIAL_TICKS + 1) * tick;
	sn_stats S = {0};
	for (;;) {
		struct timespec ms = {0, 2000000};
		nanosleep(&ms, NULL);
		int r = eng_health(T.e, err, sizeof err);
		eng_stats(T.e, &S, NULL);
		if (r || eng_gpu_lost()) {
			fprintf(stderr, "sentineld --trial: after %llu ticks: %s\n", (unsigned long long)S.ticks,
				r ? err : "a GPU kernel faulted");
			rc = eng_gpu_lost() ? SENTINELD_EXIT_GPU_LOST : 2;
			goto out;
		}
		if (S.first_tick && S.ticks >= S.first_tick + D_TRIAL_TICKS - 1)
			break;
		if (u_now_ns() > deadline) {
			fprintf(stderr, "sentineld --trial: the new rules ran %llu of %d ticks in %.1f s\n",
				(unsigned long long)(S.first_tick ? S.ticks - S.first_tick + 1 : 0), D_TRIAL_TICKS,
				(double)(u_now_ns() - t0) / 1e9);
			rc = SENTINELD_EXIT_TRIAL_SLOW;
			goto out;
		}
	}
	if (eng_stop(T.e, err, sizeof err)) {
		fprintf(stderr, "sentineld --trial: %s\n", err);
		goto out;
	}
	printf("%d ticks in %.0f ms, the longest %.2f ms\n", D_TRIAL_TICKS, (double)(u_now_ns() - t0) / 1e6,
	       (double)S.max_tick_len_ns / 1e6);
	rc = 0;
out:
	if (rc == SENTINELD_EXIT_GPU_LOST)
		d_exit_gpu_lost();               /* nothing of CUDA's torn down */
	fflush(stdout);
	d_close_target(&T);
	cf_target_free(&T.cf);
	bd_free(D.b);
	cf_free(&D.cf);
	return rc;
}

/* ---- the parent -------------------------------------------------------------------------- */

/* What the child said that matters: its last "sentineld --trial: " line
 * (its own words), else a sanitizer's report line or a crash's (crash.c),
 * else its last line. */
static const char *d_trial_words(char *out, size_t len)
{
	static const char own[] = "sentineld --trial: ";
	const char *best = NULL, *san = NULL, *last = out;
	for (char *s = out; s < out + len && *s;) {
		char *nl = strchr(s, '\n');
		if (nl)
			*nl = 0;
		if (*s) {
			last = s;
			if (!strncmp(s, own, sizeof own - 1))
				best = s + sizeof own - 1;
			else if (strstr(s, "Sanitizer") && (!san || (strstr(s, "ERROR:") && !strstr(san, "ERROR:"))))
				san = s;
			else if (!san && !strncmp(s, "sentineld: signal ", 18))
				san = s;
		}
		if (!nl)
			break;
		s = nl + 1;
	}
	return best ? best : san ? san : last;
}

static void d_trial_close(DTrialRun *tr)
{
	if (tr->fd >= 0)
		close(tr->fd);
	if (tr->out >= 0)
		close(tr->out);
	if (tr->go >= 0)
		close(tr->go);
	tr->fd = tr->out = tr->go = -1;
	tr->pid = -1;
}

/* Start the trial on target T (its table task_cap rows): the child finds
 * T's kernel and starts its backend, then waits for d_trial_feed. */
int d_trial_start(Daemon *D, DTarget *T, uint32_t task_cap, DTrialRun *tr, char *err, size_t n)
{
	int p[2] = {-1, -1}, g[2] = {-1, -1}, r = 0;
	*tr = (DTrialRun){.pid = -1, .fd = memfd_create("sentinel-trial-bundle", 0), .out = -1, .go = -1};
	if (tr->fd < 0 || pipe2(p, O_CLOEXEC) || pipe2(g, O_CLOEXEC)) {
		r = -errno;
		snprintf(err, n, "cannot set up the trial run: %s", strerror(errno));
		goto out;
	}
	tr->out = p[0];
	tr->go = g[1];
	char bundle[64], tasks[16];
	snprintf(bundle, sizeof bundle, "/proc/self/fd/%d", tr->fd);
	snprintf(tasks, sizeof tasks, "%u", task_cap);
	const char *backend = eng_backend(T->e) == ENG_CUDA ? "cuda" : "cpu";
	char *argv[] = {"sentineld", "--trial", bundle, "--trial-target", T->cf.name, "--trial-tasks", tasks,
			"--trial-backend", (char *)backend, "--trial-go", "-c", D->cf.path, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	posix_spawn_file_actions_adddup2(&fa, g[0], 0);
	r = posix_spawn(&tr->pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r) {
		snprintf(err, n, "cannot start the trial run (/proc/self/exe): %s", strerror(r));
		tr->pid = -1;
		r = -r;
	}
out:
	if (p[1] >= 0)
		close(p[1]);
	if (g[0] >= 0)
		close(g[0]);
	if (r)
		d_trial_close(tr);
	return r;
}

int d_trial_feed(DTrialRun *tr, const Bundle *nb, char *err, size_t n)
{
	int r = bd_write_fd(nb, tr->fd, err, n);
	ssize_t w = r ? 0 : write(tr->go, "g", 1);   /* none: the child has ended; d_trial_wait says why */
	(void)w;
	close(tr->go);
	tr->go = -1;
	return r;
}

void d_trial_cancel(DTrialRun *tr)
{
	if (tr->pid > 0) {
		kill(tr->pid, SIGKILL);
		while (waitpid(tr->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	d_trial_close(tr);
}

int d_trial_wait(Daemon *D, DTrialRun *tr, char *note, size_t nn, char *err, size_t n)
{
	char out[4096] = "";
	size_t len = 0;
	int r;
	*note = 0;
	/* its output until it closes it; a child that hangs is killed */
	uint64_t limit = 30000000000ull + 2 * D_TRIAL_TICKS * D->eo.tick_ns, deadline = u_now_ns() + limit;
	for (;;) {
		uint64_t now = u_now_ns();
		if (now >= deadline) {
			kill(tr->pid, SIGKILL);
			snprintf(out + len, sizeof out - len, "\nsentineld --trial: it did not end in %.0f s and was killed",
				 (double)limit / 1e9);
			len = strlen(out);
			break;
		}
		struct pollfd pf = {.fd = tr->out, .events = POLLIN};
		int pr = poll(&pf, 1, (int)((deadline - now) / 1000000 + 1));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		char buf[1024];
		_Static_assert(sizeof buf < sizeof out, "a read fits in the kept output");
		ssize_t got = read(tr->out, buf, sizeof buf);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		/* keep the last part: the child's last lines say what happened
		 * (got < sizeof out: what is dropped is out's oldest bytes) */
		size_t g = (size_t)got, drop = len + g >= sizeof out ? len + g - (sizeof out - 1) : 0;
		memmove(out, out + drop, len - drop);
		memcpy(out + len - drop, buf, g);
		len += g - drop;
		out[len] = 0;
	}
	int st = 0;
	while (waitpid(tr->pid, &st, 0) < 0 && errno == EINTR)
		;
	const char *last = d_trial_words(out, len);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		snprintf(note, nn, "%s", last);
		r = 0;
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == SENTINELD_EXIT_GPU_LOST) {
		snprintf(err, n, "the new rules' GPU kernel faulted in the trial run (%.600s)", last);
		r = -EFAULT;
	} else if (WIFSIGNALED(st)) {
		snprintf(err, n, "the trial run of the new rules died of signal %d (%s)%s%.600s", WTERMSIG(st),
			 strsignal(WTERMSIG(st)), *last ? ": " : "", last);
		r = -EFAULT;
	} else {
		snprintf(err, n, "the trial run of the new rules failed (exit %d): %.600s", WEXITSTATUS(st), last);
		r = -EIO;
	}
	d_trial_close(tr);
	return r;
}
