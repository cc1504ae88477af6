/* sentineld - run the rules on the GPU (or the CPU) against its targets.
 *
 * One thread here: it drains alerts into the notifier, watches the target,
 * serves the control socket and reloads; the detection itself runs on the
 * GPU's persistent kernel (or the CPU backend's tick thread) and needs
 * nothing from it.  Signal handlers only set flags (SIGHUP: reload;
 * SIGTERM, SIGINT: stop).  Reload is validate all, then hand over, and on
 * any failure the running rules stay as they were.
 *
 * Its parts: this file (the main loop, alerts), target.c (a target),
 * find.c (finding its kernel, on threads), watch.c (the targets' watch),
 * reload.c and trial.c (reloads), control.c (the control socket), crash.c;
 * sentineld.h is what they share.
 */
#define _GNU_SOURCE 1   /* ppoll */
#include "sentineld.h"

#include <limits.h>

static volatile sig_atomic_t d_reload_flag, d_quit_flag;

static void d_on_signal(int sig)
{
	if (sig == SIGHUP)
		d_reload_flag = 1;
	else
		d_quit_flag = 1;
}

/* After a GPU fault: exit 3 at once, without exit handlers (libcuda's
 * would tear down what its threads still use: gpu_close). */
void d_exit_gpu_lost(void)
{
	fflush(NULL);
	_exit(SENTINELD_EXIT_GPU_LOST);
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

void d_sd_notify(const char *state)
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

/* ---- alerts ------------------------------------------------------------------------- */

static void d_alert(void *ctx, const sn_alert *a)
{
	DTarget *T = ctx;
	Daemon *D = T->D;
	/* the engine's own rules: during a reload's handovers a target's new
	 * engine ticks (and alerts) while D->b is still the old rules (a new
	 * rule's firing was once named after the old rule of its index) */
	const Bundle *b = eng_bundle(T->e);
	if (a->rule >= b->nrules || T->dropping)
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
	NtEvent ev = {.rule = &b->rules[a->rule], .kind = (SnEventKind)a->kind, .value = a->value,
		      .entity = a->entity, .comm = a->comm, .tick = a->tick,
		      .when = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)}, .target = T->cf.name,
		      .tlabels = T->cf.labels, .ntlabels = T->cf.nlabels};
	/* the kernel's last words, read from its RAM: a panic's message is
	 * in the ring within microseconds of panic_cpu being set.  Read on
	 * the reader's thread (klog.c), once a drain for all of the target's
	 * alerts (a guest whose rules flap makes many at once; each read is
	 * bounded, klog.h) */
	bool wants = T->klog && (ev.kind == SN_EV_FIRING || ev.kind == SN_EV_RESOLVED) && nt_wants_kernel_log(ev.rule);
	d_kl_event(T, &ev, wants);
	D->alerts_seen++;
}

/* A copy of every rule's alert state on engine e (NULL: none) (malloc'd, one entry
 * spare), or NULL with err set: no engine, out of memory, or the copy failed. */
sn_rstate *d_rule_states(Engine *e, char *err, size_t n)
{
	/* (its own rules: during a reload's handovers some targets run the new ones) */
	sn_rstate *st = e ? calloc(eng_bundle(e)->nrules + 1, sizeof *st) : NULL;
	if (!st) {
		snprintf(err, n, "%s", e ? "out of memory" : "no engine runs");
		return NULL;
	}
	if (eng_rule_states(e, st, err, n)) {
		free(st);
		return NULL;
	}
	return st;
}

/* The per-entity rules' alerts on engine e, into P (ealert, erule). */
static void d_entity_alerts(Engine *e, PxTarget *P)
{
	const Bundle *b = eng_bundle(e);
	char err[256];
	size_t n = 0, cap = 0;
	sn_rstate *v = NULL;
	uint32_t *rule = NULL;
	for (size_t i = 0; i < b->nrules; i++) {
		sn_estate *es;
		uint32_t nes, ovf;
		if (!b->rules[i].per_entity || eng_entity_states(e, i, &es, &nes, &ovf, err, sizeof err))
			continue;
		if (n + nes > cap) {
			size_t c = (n + nes) * 2;
			sn_rstate *nv = realloc(v, c * sizeof *nv);
			uint32_t *nr = nv ? realloc(rule, c * sizeof *nr) : NULL;
			if (nv)
				v = nv;
			if (!nr) {
				free(es);
				break;
			}
			rule = nr;
			cap = c;
		}
		for (uint32_t k = 0; k < nes; k++) {
			v[n] = es[k].st;
			rule[n++] = (uint32_t)i;
		}
		free(es);
	}
	P->ealert = v;
	P->erule = rule;
	P->nealerts = n;
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
		pt[i].kernel = T->t ? T->t->release : NULL;
		pt[i].phase = d_tphase_name[d_target_phase(T)];
		pt[i].errors = T->errors;
		if (!T->e || T->ts != TS_OK)
			continue;
		eng_stats(T->e, &S[i], &pt[i].ring_dropped);
		pt[i].stats = &S[i];
		/* eng_values' copy lives until the engine's next call: one per engine */
		if (!(pt[i].w = eng_values(T->e, err, sizeof err)))
			nt_log(D->nt, 4, "/metrics: %s: %s", T->label, err);
		pt[i].rstate = d_rule_states(T->e, err, sizeof err);
		d_entity_alerts(T->e, &pt[i]);
	}
	NhStats ds;
	nt_delivery(D->nt, &ds);
	double up_s = (double)(u_now_ns() - D->started_ns) * 1e-9;
	PxInput in = {.b = D->b, .tg = pt, .ntg = D->ntg, .delivery = &ds, .reloads = D->reloads,
		      .reload_failures = D->reload_failures, .last_reload_ok = !D->last_reload_failed,
		      .alerts = D->alerts_seen, .jsonl_sync_errors = nt_jsonl_sync_errors(D->nt),
		      .jsonl_write_errors = nt_jsonl_write_errors(D->nt), .started = (double)time(NULL) - up_s,
		      .phases = d_tphase_name, .nphases = DT_N};
	size_t len = 0;
	char *text = px_render(&in, &len);
	px_publish(D->px, text, len);
	for (unsigned i = 0; i < D->ntg; i++) {
		free((void *)pt[i].rstate);
		free((void *)pt[i].ealert);
		free((void *)pt[i].erule);
	}
	free(pt);
	free(S);
}

void d_drain(Daemon *D)
{
	D->drains++;                     /* (a kernel log read in the last one is stale now) */
	unsigned n = d_kl_poll(D);       /* the events that waited for a kernel log read that ended */
	/* the fleet's bell, before the rings: a record after it rings again;
	 * unmoved, no ring has a record to give (500 rings: 0.14 ms) */
	if (D->fleet && !eng_fleet_seen(D->fleet)) {
		if (n)
			nt_flush(D->nt);
		return;
	}
	for (unsigned i = 0; i < D->ntg; i++)
		n += D->tg[i].e ? eng_drain(D->tg[i].e, d_alert, &D->tg[i]) : 0;
	if (n)
		nt_flush(D->nt);           /* one sync for the lot, then they are sent */
	if (n && gpu_tracing()) {
		uint64_t t = u_now_ns();
		fprintf(stderr, "gpu-trace %llu.%06llu drain: %u records\n", (unsigned long long)(t / 1000000000ull),
			(unsigned long long)(t % 1000000000ull / 1000), n);
	}
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
"      --trial BUNDLE --trial-target NAME --trial-tasks N [--trial-backend B]\n"
"        [--trial-go]   run BUNDLE's rules for 3 ticks against target NAME and\n"
"                       exit (--trial-go: find NAME first, then wait for a 'g'\n"
"                       on stdin to read BUNDLE): a reload runs its new rules\n"
"                       so in a child first\n"
"                       ([engine] reload_trial; exit 2: they could not run,\n"
"                       3: a GPU kernel faulted, 4: they did not tick in time)\n"
"  -h, --help           this help\n"
"  -V, --version        the version\n"
"\n"
"Exit status: 0 stopped by a signal, 1 bad rules, 2 bad configuration,\n"
"an unreachable target, or no usable backend, 3 a GPU kernel faulted (CUDA\n"
"fails every call of the process after one: start sentineld again).\n", out);
}

/* An `auto` directory ([engine] state, cache): systemd's, in the
 * environment variable env (StateDirectory=, CacheDirectory=: one entry),
 * else fallback where it exists, else "" (none). */
void d_dir_auto(const char *env, const char *fallback, char *out, size_t n)
{
	const char *v = getenv(env);
	struct stat st;
	*out = 0;
	if (v && *v && !strchr(v, ':'))
		snprintf(out, n, "%s", v);
	else if (!stat(fallback, &st) && S_ISDIR(st.st_mode))
		snprintf(out, n, "%s", fallback);
}

/* [engine] cache: where the GPU driver's JIT results are kept across
 * restarts (engine/gpucache.c): auto is systemd's CacheDirectory= (the
 * unit's /var/cache/sentinel), else /var/cache/sentinel where it exists.
 * Before anything loads the driver: it reads CUDA_CACHE_PATH at cuInit.
 * Without one the driver keeps its own (~/.nv) and each start links again. */
void d_cache_setup(const Config *cf, char *dir, size_t n)
{
	const char *c = cf->cache;
	*dir = 0;
	if (c && !strcmp(c, "none"))
		return;
	if (c && strcmp(c, "auto"))
		snprintf(dir, n, "%s", c);
	else
		d_dir_auto("CACHE_DIRECTORY", "/var/cache/sentinel", dir, n);
	int e = *dir ? gpu_cache_setup(dir) : 0;
	if (e) {
		fprintf(stderr, "sentineld: [engine] cache = %s: cannot use it (%s); the rules are compiled and the "
			"GPU's code linked again at every start (make the directory writable, or set cache = none)\n",
			dir, strerror(-e));
		*dir = 0;
	}
}

/* A cached cubin the GPU's load refused (corrupt, truncated, foreign), or
 * one it could not keep: said once, after the engines that met it opened
 * (on the loop at start, on the reload's thread; nt_log is safe on either) */
void d_cache_log(Daemon *D)
{
	GpuCacheStats cs;
	gpu_cache_stats(&cs);
	if (cs.refused + cs.unwritten > D->cubin_notes)
		nt_log(D->nt, 4, "%s", cs.last_note);
	D->cubin_notes = cs.refused + cs.unwritten;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},      {"version", no_argument, NULL, 'V'},
		{"config", required_argument, NULL, 'c'}, {"check-config", no_argument, NULL, 'k'},
		{"trial", required_argument, NULL, 1}, {"trial-target", required_argument, NULL, 2},
		{"trial-tasks", required_argument, NULL, 3}, {"trial-backend", required_argument, NULL, 4},
		{"trial-go", no_argument, NULL, 5},
		{NULL, 0, NULL, 0},
	};
	const char *config = SENTINEL_SYSCONFDIR "/sentinel/sentinel.conf";
	const char *trial = NULL, *trial_target = NULL, *trial_backend = "auto";
	unsigned long trial_tasks = 0;
	bool check_only = false, trial_go = false;
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
		case 1:
			trial = optarg;
			break;
		case 2:
			trial_target = optarg;
			break;
		case 3:
			trial_tasks = strtoul(optarg, NULL, 10);
			break;
		case 4:
			trial_backend = optarg;
			break;
		case 5:
			trial_go = true;
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
	if (trial || trial_target) {
		if (!trial || !trial_target || trial_tasks < 16 || trial_tasks > (1u << 22)) {
			fprintf(stderr, "sentineld: --trial needs --trial-target and --trial-tasks (16 to 4194304); "
				"it is run by a reload, not by hand (see sentineld --help)\n");
			return 2;
		}
		return d_trial_main(config, trial, trial_target, (uint32_t)trial_tasks, trial_backend, trial_go);
	}
	d_crash_report();
	/* The signals sentineld handles are blocked from here on, in this
	 * thread and in every thread started after (they inherit the mask):
	 * the main loop's ppoll alone lets them in, so a handler always runs
	 * here and always wakes the loop; no worker is ever interrupted. */
	sigset_t handled, loop_mask;
	sigemptyset(&handled);
	sigaddset(&handled, SIGHUP);
	sigaddset(&handled, SIGTERM);
	sigaddset(&handled, SIGINT);
	pthread_sigmask(SIG_BLOCK, &handled, &loop_mask);
	sigdelset(&loop_mask, SIGHUP);
	sigdelset(&loop_mask, SIGTERM);
	sigdelset(&loop_mask, SIGINT);
	struct sigaction sa = {.sa_handler = d_on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	Daemon D = {.lfd = -1};
	d_gate_init(&D);
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
	d_cache_setup(&D.cf, D.cache_dir, sizeof D.cache_dir);
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
			  .host_only = !gpu && strcmp(D.cf.backend, "cuda"), .tick_s = (double)D.cf.tick_ns / 1e9,
			  .cache_dir = D.cache_dir[0] ? D.cache_dir : NULL, .cache_note = D.cache_note,
			  .cache_note_len = sizeof D.cache_note};
	int r = d_rules_load(&D, NULL, &D.b, &diags, err, sizeof err);
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
	/* several: the sources and kernels found at once, on threads; then
	 * the engines, one after another */
	int *found = NULL;
	char (*found_err)[512] = NULL;
	if (D.ntg > 1 && (!(found = calloc(D.ntg, sizeof *found)) || !(found_err = calloc(D.ntg, sizeof *found_err)))) {
		fprintf(stderr, "sentineld: out of memory\n");
		free(found);
		goto out;
	}
	if (found)
		d_find_targets(&D, found, found_err);
	uint64_t load_t0 = u_now_ns(), load_said = load_t0;
	for (unsigned i = 0; i < D.ntg; i++) {
		DTarget *T = &D.tg[i];
		int tr = found ? found[i] : 0;
		if (tr)
			snprintf(err, sizeof err, "%s", found_err[i]);
		else
			tr = found ? d_load_target(T, err, sizeof err) : d_open_target(T, err, sizeof err);
		if (found && u_now_ns() - load_said >= 10ull * 1000000000ull) {
			load_said = u_now_ns();
			nt_log(D.nt, 6, "loading the rules on the targets: %u of %u, %.0f s", i + 1, D.ntg,
			       (double)(load_said - load_t0) / 1e9);
		}
		if (tr) {
			snprintf(T->err, sizeof T->err, "%.511s", err);
			d_target_error(T, err);
			if (D.ntg == 1 || check_only)
				fprintf(stderr, "sentineld: %s\n", err);
			else
				nt_log(D.nt, 3, "target error: %s; looking for it every %.0f s", err, D_TARGET_RETRY_NS / 1e9);
			continue;
		}
		T->ts = TS_OK;
		T->phase = DT_running;
		opened++;
		if (check_only)
			printf("sentineld: %s%s%s%zu rules compile and load on Linux %s (%s)\n", D.ntg > 1 ? "target " : "",
			       D.ntg > 1 ? T->cf.name : "", D.ntg > 1 ? ": " : "", D.b->nrules, T->t->release,
			       eng_backend_note(T->e));
	}
	free(found);
	free(found_err);
	d_cache_log(&D);
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
	if (d_kl_start(&D))
		nt_log(D.nt, 4, "no thread for the kernel log's reads: they are made on the main loop");
	if (d_st_start(&D))
		nt_log(D.nt, 4, "no thread for the state writer: alert state will not survive a restart");
	D.started_ns = u_now_ns();
	/* the GPU fleet's kernel starts once, over all the targets opened */
	if (D.fleet)
		eng_fleet_batch(D.fleet, true, err, sizeof err);
	for (unsigned i = 0; i < D.ntg; i++) {
		DTarget *T = &D.tg[i];
		T->next_check_ns = d_next_check(D.started_ns, T->ts == TS_OK ? D_TARGET_CHECK_NS : D_TARGET_RETRY_NS);
		if (T->ts != TS_OK)
			continue;
		d_st_restore(T);
		if (eng_start(T->e, err, sizeof err)) {
			if (D.ntg == 1) {
				fprintf(stderr, "sentineld: %s\n", err);
				goto out;
			}
			nt_log(D.nt, 3, "target error: %s: the rules cannot start: %s", T->label, err);
			snprintf(T->err, sizeof T->err, "the rules cannot start: %.480s", err);
			d_target_error(T, T->err);
			d_close_target(T);
			T->ts = TS_LOST;
			T->phase = DT_lost;
			continue;
		}
		nt_log(D.nt, 6, "started: %zu rules from %s against %s (Linux %s, %s paging), tick %.0f ms, %s; control %s",
		       D.b->nrules, D.cf.bundle ? D.cf.bundle : D.cf.rules_dir, T->label, T->t->release,
		       T->t->mem.levels == 5 ? "5-level" : "4-level", (double)D.cf.tick_ns / 1e6, eng_backend_note(T->e),
		       D.cf.socket);
		d_log_disabled(T);
	}
	if (D.fleet && eng_fleet_batch(D.fleet, false, err, sizeof err))
		nt_log(D.nt, 3, "the GPU's kernel for the targets cannot start: %s; looking at it every %.0f s", err,
		       D_TARGET_CHECK_NS / 1e9);
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
	bool rules_left = false;
	while (!d_quit_flag) {
		uint64_t now = u_now_ns(), idle_at = d_clients_idle(&D, now);   /* first: no closed fd is polled */
		struct pollfd pf[D_MAX_CLIENTS + 3];
		int np = 0;
		pf[np++] = (struct pollfd){.fd = D.lfd, .events = POLLIN};
		pf[np++] = (struct pollfd){.fd = D.eo.wake_fd > 0 ? D.eo.wake_fd : -1, .events = POLLIN};
		/* a scrape waits out a reload's handovers: until they end the
		 * targets run two sets of rules, and /metrics shows one */
		pf[np++] = (struct pollfd){.fd = D.px && !D.ho.on ? px_fd(D.px) : -1, .events = POLLIN};
		for (int i = 0; i < D_MAX_CLIENTS; i++) {
			Client *c = &D.cl[i];
			if (c->fd < 0)
				continue;
			short ev = c->out_len > c->out_off ? POLLOUT : c->waiting ? 0 : POLLIN;
			pf[np++] = (struct pollfd){.fd = c->fd, .events = ev};   /* POLLHUP comes anyway */
		}
		uint64_t wait_ns = idle_at != UINT64_MAX ? (idle_at > now ? idle_at - now : 0) : UINT64_MAX;
		if (rules_left)                  /* a `rules` answer's next slice: at once, after what waits */
			wait_ns = 0;
		bool armed = true, running = false;
		for (unsigned i = 0; i < D.ntg; i++) {
			DTarget *T = &D.tg[i];
			/* no check runs during a reload (d_watch_target): its end
			 * wakes us, a check due meanwhile must not (it spun) */
			uint64_t w = D.rl.on ? UINT64_MAX : T->next_check_ns > now ? T->next_check_ns - now : 0;
			if (w < wait_ns)
				wait_ns = w;
			if (T->ts == TS_OK && T->e) {
				running = true;
				if (D.fleet)           /* one bell for all of them, below */
					continue;
				/* one being handed over: its old engine is the
				 * handovers' thread's to stop (and resume); it is
				 * polled every tick meanwhile, never armed from here */
				if (D.ho.on && T->ne) {
					if (wait_ns > D.eo.tick_ns)
						wait_ns = D.eo.tick_ns;
					continue;
				}
				armed &= eng_arm(T->e);
				if (!D.wake || strcmp(D.wake, "poll"))
					D.wake = eng_backend(T->e) == ENG_CUDA ? "gpu doorbell" : "tick thread";
			}
		}
		if (D.fleet && running && D.ho.on && D.ho.fleet) {
			/* its handover: the old kernel paused, the new one's
			 * first ticks awaited on the handovers' thread */
			armed = false;
			if (wait_ns > D.eo.tick_ns)
				wait_ns = D.eo.tick_ns;
		} else if (D.fleet && running) {
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
		/* nothing due (all wakeups come by fd): no timeout */
		struct timespec wait_ts = {(time_t)(wait_ns / 1000000000ull), (long)(wait_ns % 1000000000ull)};
		if (wait_ns != UINT64_MAX && wait_ts.tv_sec > INT_MAX)
			wait_ts.tv_sec = INT_MAX;
		int pr = d_quit_flag ? 0 : ppoll(pf, (nfds_t)np, wait_ns == UINT64_MAX ? NULL : &wait_ts, &loop_mask);
		D.loop.wakeups++;
		if (pr > 0 && (pf[1].revents & POLLIN)) {
			uint64_t count;
			ssize_t got = read(D.eo.wake_fd, &count, sizeof count);
			(void)got;
		}
		d_phase_end(&D, DP_poll);
		d_drain(&D);
		d_phase_end(&D, DP_drain);
		if (pr > 0 && (pf[2].revents & POLLIN) && !D.ho.on && px_wanted(D.px))
			d_metrics(&D);
		d_phase_end(&D, DP_metrics);
		if (D.ho.on && __atomic_load_n(&D.ho.done, __ATOMIC_ACQUIRE))
			d_handover_done(&D);
		else if (D.ho.on)
			d_handover_swap(&D);      /* those handed over so far: their new engines' alerts */
		else if (D.rl.on && __atomic_load_n(&D.rl.done, __ATOMIC_ACQUIRE))
			d_reload_done(&D);
		if (d_reload_flag && !D.rl.on) {         /* SIGHUPs during a reload: one more after it */
			d_reload_flag = 0;
			char msg[1024];
			if (d_reload_start(&D, NULL, 0, NULL, msg, sizeof msg))
				nt_log(D.nt, 4, "reload (SIGHUP): %s", msg);
		}
		d_phase_end(&D, DP_reload);
		d_watch_target(&D);
		d_st_tick(&D, u_now_ns());
		d_phase_end(&D, DP_watch);
		if (eng_gpu_lost())                /* a GPU fault: no CUDA call in this process works again */
			break;
		rules_left = d_clients_work(&D);
		if (pr <= 0) {
			d_phase_end(&D, DP_clients);
			continue;
		}
		if (pf[0].revents & POLLIN)
			d_client_accept(&D);
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
	if (D.ho.on)                       /* handovers under way: they end (bounded: eng_takeover's timeout) */
		d_handover_done(&D);
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
	d_kl_flush_all(&D);                /* the last events, with their kernel log */
	d_record_end(&D, "sentineld stopped");
	d_st_stop(&D);                     /* every target's last state, after its last alerts */
	rc = 0;
	if (eng_gpu_lost()) {
		nt_log(D.nt, 2, "a GPU kernel of this process faulted (above), and CUDA fails every call in the "
		       "process after one: exiting with status %d so that the service manager starts sentineld again "
		       "(systemd: Restart=on-failure)", SENTINELD_EXIT_GPU_LOST);
		rc = SENTINELD_EXIT_GPU_LOST;
	}
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
	d_st_stop(&D);                /* (a start that failed: its writer; nothing saved twice) */
	px_close(D.px);               /* before the engine: no scrape waits on it then */
	if (D.fleet && eng_fleet_halt(D.fleet, err, sizeof err))
		fprintf(stderr, "sentineld: %s\n", err);
	for (unsigned i = 0; i < D.ntg; i++) {
		d_finder_stop(&D.tg[i]);
		d_close_target(&D.tg[i]);
		cf_target_free(&D.tg[i].cf);
	}
	d_kl_stop(&D);
	free(D.tg);
	eng_fleet_close(D.fleet);
	rec_close(D.rec);
	bd_free(D.b);
	nt_close(D.nt);
	cf_free(&D.cf);
	if (D.eo.wake_fd > 0)
		close(D.eo.wake_fd);
	if (rc == SENTINELD_EXIT_GPU_LOST)
		d_exit_gpu_lost();
	return rc;
}
