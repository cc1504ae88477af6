/* reload.c - sentineld: the reload: compile and open on a thread (DReload),
 * validated on the loop, then the handovers on a thread of their own
 * (DHandover; the GPU fleet's on the loop: one pause for all). */
#include "sentineld.h"

/* ---- reload ------------------------------------------------------------------------------ */

static unsigned d_alerts_end(DTarget *T, Engine *e, const Bundle *nb);

typedef struct DCompile {
	const CompOpts *co;
	const char *dir;
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
	j->r = comp_dir(j->dir, j->co, j->out, j->diags, j->err, j->n);
	return NULL;
}

/* The rules: the rule directory compiled now, or a bundle file.  The
 * compiler runs at nice 10: sentineld usually shares the host with the
 * machines it watches, and a reload must not starve them (on a 2-CPU host
 * a reload's compile at nice 0 took a guest's hog from 99% to 76% busy,
 * enough to resolve the alert it had raised). */
int d_rules_load(Daemon *D, CompKeep *keep, Bundle **out, char **diags, char *err, size_t n)
{
	*diags = NULL;
	if (D->cf.bundle)
		return bd_read(D->cf.bundle, out, err, n);
	CompOpts co = D->co;
	co.keep = keep;
	DCompile j = {.co = &co, .dir = D->cf.rules_dir, .out = out, .diags = diags, .err = err, .n = n};
	pthread_t t;
	if (d_thread(&t, d_compile_thread, &j))
		return comp_dir(D->cf.rules_dir, &co, out, diags, err, n);
	pthread_join(t, NULL);
	if (D->cache_note[0])
		nt_log(D->nt, 6, "%s", D->cache_note);
	return j.r;
}

/* Close the engines a reload opened and did not hand over; forget the
 * targets it would have added and removed. */
void d_reload_discard(Daemon *D)
{
	for (unsigned i = 0; i < D->ntg; i++) {
		eng_close(D->tg[i].ne);
		D->tg[i].ne = NULL;
		D->tg[i].gone = false;
	}
	eng_fleet_close(D->rl.nfleet);          /* (its members first: above) */
	D->rl.nfleet = NULL;
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

/* A reload's failure on target T, named where there are several. */
static void d_reload_err(DReload *R, const DTarget *T, const char *why)
{
	bool many = R->D->ntg > 1;
	snprintf(R->err, sizeof R->err, "%s%s%s", many ? T->cf.name : "", many ? ": " : "", why);
}

/* What a reload does with its new bundle beside the new engines' load:
 * its bytes made once (bd_image), handed to the trial child, then kept in
 * the compile cache (the manifest of 10,000 rules takes 0.2 s to make,
 * and each write of it was on the reload's path). */
typedef struct DFeed {
	Daemon *D;
	Bundle *nb;
	DTrialRun *tr;             /* NULL: no trial */
	CompKeep keep;
	int r;
	char err[900];
	char note[1200];           /* the cache's word, when it could not keep the bundle */
} DFeed;

static void *d_feed_thread(void *arg)
{
	DFeed *f = arg;
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), D_COMPILE_NICE);
	int r = bd_image(f->nb, f->err, sizeof f->err);
	if (f->tr)                         /* without its bundle the trial, and so the reload, fails */
		f->r = r ? r : d_trial_feed(f->tr, f->nb, f->err, sizeof f->err);
	if (!r)                            /* else the bundle is not kept: the next start compiles again */
		comp_cache_keep(&f->D->co, &f->keep, f->nb, f->note, sizeof f->note);
	bd_image_drop(f->nb);
	return NULL;
}

static void *d_reload_thread(void *arg)
{
	DReload *R = arg;
	Daemon *D = R->D;
	/* the JIT of eng_open at nice 10 too, for the reason above */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), D_COMPILE_NICE);
	/* no lost target's worker loads the old rules while we make the new
	 * ones (waiting here for those loading now: not on the loop) */
	d_gate_close(D);
	if (!R->grow)
		R->r_targets = d_targets_read(D, R);
	/* new rules run a few ticks in a child process first, against the
	 * first target that runs: a fault there (fatal to a process's CUDA,
	 * a SIGSEGV on the CPU) fails the reload, not sentineld.  Started
	 * now, so that the child's start (its own CUDA and target) runs beside
	 * the compile, and its load of the rules beside the new engines' */
	DTrialRun tr = {.pid = -1, .fd = -1, .out = -1, .go = -1};
	DTarget *ttg = NULL;
	for (unsigned i = 0; i < D->ntg && D->cf.reload_trial && !R->grow && !R->r_targets && !ttg; i++)
		if (D->tg[i].ts == TS_OK && !D->tg[i].gone && D->tg[i].e)
			ttg = &D->tg[i];
	if (ttg) {
		char why[900];
		R->r_open = d_trial_start(D, ttg, ttg->task_cap, &tr, why, sizeof why);
		if (R->r_open)
			d_reload_err(R, ttg, why);
	}
	DFeed feed = {.D = D};
	if (!R->grow && !R->r_targets && !R->r_open)
		R->r_rules = d_rules_load(D, &feed.keep, &R->nb, &R->diags, R->err, sizeof R->err);
	R->t_rules = u_now_ns();
	/* the GPU fleet: the same rules go on in its kernel (targets may come
	 * and go); new rules, or a target's larger task table, take a new
	 * fleet, with a new engine for every running target */
	if (D->fleet && !R->r_targets && !R->r_rules) {
		R->same = !R->grow && d_same_rules(D->b, R->nb);
		char why[900];
		if (!R->same && (R->r_open = eng_fleet_open(R->grow ? D->b : R->nb, &D->eo, &R->nfleet, why, sizeof why)))
			snprintf(R->err, sizeof R->err, "the GPU kernel for the targets cannot load: %s", why);
	}
	/* the trial's rules: these, unless there is nothing to try; the
	 * bundle to the child and the cache on a thread of their own */
	if (tr.pid > 0 && (R->r_rules || R->r_open || R->same))
		d_trial_cancel(&tr);
	feed.nb = R->nb;
	feed.tr = tr.pid > 0 ? &tr : NULL;
	pthread_t fth;
	bool feed_any = !R->r_rules && R->nb && (feed.tr || feed.keep.want);
	bool feeding = feed_any && !d_thread(&fth, d_feed_thread, &feed);
	if (feed_any && !feeding)
		d_feed_thread(&feed);
	/* an engine for every target that runs (ts holds still: the target
	 * watch waits for us); validate all: one that cannot open fails the
	 * reload, and the running rules stay everywhere */
	for (unsigned i = 0; i < D->ntg && !R->r_targets && !R->r_rules && !R->r_open; i++) {
		DTarget *T = &D->tg[i];
		if (T->ts != TS_OK || T->gone || (R->grow && T != R->grow_tg && !R->nfleet) || R->same)
			continue;
		EngOpts eo = D->eo;
		eo.on_tick = NULL;             /* the recording keeps the old rules' layout */
		eo.task_cap = R->grow && T == R->grow_tg ? R->grow : T->task_cap;
		eo.fleet = R->nfleet;          /* NULL but in fleet mode */
		d_target_opts(T, &eo);
		char why[900];
		R->r_open = eng_open(R->grow ? D->b : R->nb, T->t, &eo, &T->ne, why, sizeof why);
		if (R->r_open)
			d_reload_err(R, T, why);
	}
	if (feeding)
		pthread_join(fth, NULL);
	if (feed.note[0])
		nt_log(D->nt, 4, "%s", feed.note);
	if (feed.r && !R->r_open) {
		R->r_open = feed.r;
		d_reload_err(R, ttg, feed.err);
	}
	R->t_open = u_now_ns();
	d_cache_log(D);
	/* the trial: what is left of it once the engines loaded (a load that
	 * failed has failed the reload: the child is not needed) */
	if (tr.pid > 0 && R->r_open) {
		d_trial_cancel(&tr);
	} else if (tr.pid > 0) {
		char why[900];
		R->r_open = d_trial_wait(D, &tr, R->trial, sizeof R->trial, why, sizeof why);
		if (R->r_open)
			d_reload_err(R, ttg, why);
		else if (!*R->trial)
			snprintf(R->trial, sizeof R->trial, "ran");
	}
	R->t_trial = u_now_ns();
	__atomic_store_n(&R->done, 1, __ATOMIC_RELEASE);
	d_wake(D->eo.wake_fd);
	return NULL;
}

/* Start a reload for client c (NULL: SIGHUP), or with grow > 0 the same
 * rules with a task table of grow rows for target gt; its answer comes
 * from d_reload_done.  -EBUSY while one is in progress. */
int d_reload_start(Daemon *D, Client *c, uint32_t grow, DTarget *gt, char *msg, size_t n)
{
	DReload *R = &D->rl;
	if (R->on) {
		snprintf(msg, n, "a reload is in progress (for %.0f s); try again when it ends",
			 (double)(u_now_ns() - R->t0) / 1e9);
		return -EBUSY;
	}
	*R = (DReload){.D = D, .client = c, .by_socket = c != NULL, .grow = grow, .grow_tg = gt, .t0 = u_now_ns(),
		       .on = true};
	int e = d_thread(&R->thread, d_reload_thread, R);
	if (e) {
		R->on = false;
		snprintf(msg, n, "cannot start the reload: %s; the running rules are unchanged", strerror(e));
		return -e;
	}
	if (c)
		c->waiting = true;
	return 0;
}

/* ---- the handovers, on their thread (DHandover) ---------------------------------------- */

/* Each target with a new engine, one after another: the takeover, then
 * the new engine's first tick (at most one away).  The first to fail
 * with none handed over yet stops the rest: the running rules stay
 * everywhere. */
static void *d_handover_thread(void *arg)
{
	Daemon *D = arg;
	DHandover *H = &D->ho;
	unsigned ok = 0;
	bool stop = false;
	for (unsigned i = 0; i < H->n; i++) {
		DHoItem *h = &H->it[i];
		DTarget *T = &D->tg[h->idx];
		if (stop) {
			__atomic_store_n(&h->st, HO_SKIPPED, __ATOMIC_RELEASE);
			continue;
		}
		h->rc = eng_takeover(T->ne, T->e, &h->kept, h->err, sizeof h->err);
		if (!h->rc) {
			eng_stats(T->e, &h->os, NULL);
			eng_stats(T->ne, &h->ns, NULL);
			for (int k = 0; k < 50 && !h->ns.first_tick; k++) {
				struct timespec ts = {0, (long)(D->eo.tick_ns / 10)};
				nanosleep(&ts, NULL);
				eng_stats(T->ne, &h->ns, NULL);
			}
			ok++;
		}
		stop = h->rc && !ok;
		__atomic_store_n(&h->st, h->rc ? HO_FAILED : HO_OK, __ATOMIC_RELEASE);
		d_wake(D->eo.wake_fd);
	}
	__atomic_store_n(&H->done, 1, __ATOMIC_RELEASE);
	d_wake(D->eo.wake_fd);
	return NULL;
}

/* The targets handed over so far move to their new engines: the old
 * engines' last alerts are drained and they close. */
void d_handover_swap(Daemon *D)
{
	DHandover *H = &D->ho;
	bool drained = false;
	for (unsigned i = 0; i < H->n; i++) {
		DHoItem *h = &H->it[i];
		if (__atomic_load_n(&h->st, __ATOMIC_ACQUIRE) != HO_OK)
			continue;
		DTarget *T = &D->tg[h->idx];
		if (!drained)
			d_drain(D);
		drained = true;
		d_alerts_end(T, T->e, eng_bundle(T->ne));   /* those of rules the reload removed */
		eng_close(T->e);
		T->e = T->ne;
		T->ne = NULL;
		__atomic_store_n(&h->st, HO_SWAPPED, __ATOMIC_RELEASE);
		d_phase_set(T, DT_running);
	}
}

/* Start the handovers of the targets with a new engine (none: 0 and
 * nothing runs); without a thread, they run here. */
static int d_handover_start(Daemon *D)
{
	DHandover *H = &D->ho;
	unsigned n = 0;
	for (unsigned i = 0; i < D->ntg; i++)
		n += D->tg[i].ne != NULL;
	*H = (DHandover){.D = D};
	if (!n)
		return 0;
	if (!(H->it = calloc(n, sizeof *H->it)))
		return -ENOMEM;
	for (unsigned i = 0; i < D->ntg; i++)
		if (D->tg[i].ne) {
			H->it[H->n++].idx = i;
			d_phase_set(&D->tg[i], DT_handing_over);
		}
	H->on = true;
	if (d_thread(&H->th, d_handover_thread, D)) {
		d_handover_thread(D);
		H->on = false;
	} else {
		H->threaded = true;
	}
	return 0;
}

/* The GPU fleet's handover: every running target moves to its new engine
 * in the new fleet (R->nfleet) at once.  The old kernel stops after its
 * groups' current ticks; the new one starts over the new engines, each
 * taking its old world's state and schedule at the launch (snrt.c,
 * sn_gpu_fleet); once every new engine has ticked, the old engines and
 * fleet go (its context stays idle in the pool, for the next reload).
 * Until then a failure stops the new kernel and starts the old one again.
 * In three parts: d_fleet_start on the loop (the old kernel paused and
 * drained, the new one launched), the wait for every new engine's first
 * tick on the handovers' thread (d_fleet_wait: up to 10 s and 4 ticks,
 * while the loop answers), d_fleet_end on the loop. */
static void d_fleet_undo(Daemon *D, char *err, size_t n)
{
	char e2[512];
	eng_fleet_pause(D->rl.nfleet, e2, sizeof e2);   /* the new engines are closed by the discard */
	if (!eng_gpu_lost() && eng_fleet_batch(D->fleet, false, e2, sizeof e2))
		snprintf(err + strlen(err), n > strlen(err) ? n - strlen(err) : 0,
			 "; and the old kernel did not start again: %.200s", e2);
}

static int d_fleet_start(Daemon *D, unsigned *kept, char *err, size_t n)
{
	DReload *R = &D->rl;
	EngFleet *old = D->fleet, *nf = R->nfleet;
	char e2[512];
	int r = 0;
	*kept = 0;
	for (unsigned i = 0; i < D->ntg && !r; i++) {
		DTarget *T = &D->tg[i];
		unsigned k = 0;
		if (T->ne && !(r = eng_fleet_link(T->ne, T->e, &k, err, n)))
			*kept += k;
	}
	if (r || (r = eng_fleet_pause(old, err, n)))
		return r;
	d_drain(D);                      /* the old kernel's last alerts */
	eng_fleet_batch(nf, true, e2, sizeof e2);
	for (unsigned i = 0; i < D->ntg && !r; i++)
		if (D->tg[i].ne)
			r = eng_start(D->tg[i].ne, err, n);
	int r2 = eng_fleet_batch(nf, false, r ? e2 : err, r ? sizeof e2 : n);
	if ((r = r ? r : r2))
		d_fleet_undo(D, err, n);
	for (unsigned i = 0; i < D->ntg && !r; i++)
		if (D->tg[i].ne)
			d_phase_set(&D->tg[i], DT_handing_over);
	return r;
}

/* Every new engine's first tick: the proof that the new kernel runs (the
 * handovers' thread; it reads the engines' stats alone). */
static void d_fleet_wait(Daemon *D)
{
	DHandover *H = &D->ho;
	uint64_t t0 = u_now_ns(), limit = 10000000000ull + 4 * D->eo.tick_ns;
	for (unsigned i = 0; i < D->ntg && !H->rc; i++) {
		sn_stats S = {0};
		while (D->tg[i].ne && (eng_stats(D->tg[i].ne, &S, NULL), !S.first_tick) && !H->rc) {
			if (u_now_ns() - t0 > limit || eng_gpu_lost()) {
				snprintf(H->err, sizeof H->err, "the new kernel %s",
					 eng_gpu_lost() ? "faulted (the log says why)" : "did not tick within its time");
				H->rc = -ETIMEDOUT;
			}
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
	}
}

static void *d_fleet_wait_thread(void *arg)
{
	Daemon *D = arg;
	d_fleet_wait(D);
	__atomic_store_n(&D->ho.done, 1, __ATOMIC_RELEASE);
	d_wake(D->eo.wake_fd);
	return NULL;
}

/* The wait's outcome: every target on its new engine in the new fleet, or
 * (H->rc) the old kernel started again.  *done, *os, *ns: the first
 * target's old last and new first tick. */
static int d_fleet_end(Daemon *D, unsigned *done, sn_stats *os, sn_stats *ns, char *err, size_t n)
{
	DReload *R = &D->rl;
	DHandover *H = &D->ho;
	*done = 0;
	if (H->rc) {
		snprintf(err, n, "%s", H->err);
		d_fleet_undo(D, err, n);
		for (unsigned i = 0; i < D->ntg; i++)
			if (D->tg[i].ne)
				d_phase_set(&D->tg[i], DT_running);
		return H->rc;
	}
	for (unsigned i = 0; i < D->ntg; i++) {
		DTarget *T = &D->tg[i];
		if (!T->ne)
			continue;
		if (!(*done)++) {
			eng_stats(T->e, os, NULL);
			eng_stats(T->ne, ns, NULL);
		}
		d_alerts_end(T, T->e, eng_bundle(T->ne));   /* those of rules the reload removed */
		eng_close(T->e);
		T->e = T->ne;
		T->ne = NULL;
		d_phase_set(T, DT_running);
	}
	eng_fleet_close(D->fleet);
	D->fleet = R->nfleet;
	D->eo.fleet = R->nfleet;
	R->nfleet = NULL;
	return 0;
}

/* A fleet handover that failed: the old rules run on (checked at once). */
static int d_fleet_failed(Daemon *D, int r, const char *err, char *msg, size_t n)
{
	for (unsigned i = 0; i < D->ntg; i++)
		D->tg[i].next_check_ns = 0;
	d_reload_discard(D);
	snprintf(msg, n, "the handover failed: %.900s; the running rules are unchanged", err);
	d_bundle_retire(D, D->rl.hb);
	D->rl.hb = NULL;
	return r;
}

/* The alerts of engine e (T's) that end with it: its firing ones resolve
 * and its pending ones are cancelled on every sink, those of all its
 * rules, or with nb those no rule of nb carries over (eng_rules_carried:
 * a reload removed their rule).  How many. */
static unsigned d_alerts_end(DTarget *T, Engine *e, const Bundle *nb)
{
	Daemon *D = T->D;
	char err[256];
	unsigned n = 0;
	sn_rstate *st = d_rule_states(e, err, sizeof err);
	if (!st) {
		if (e)
			nt_log(D->nt, 4, "%s: the alerts of rules that go cannot be resolved: %s", T->label, err);
		return 0;
	}
	const Bundle *b = eng_bundle(e);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	bool *carried = nb ? calloc(b->nrules + 1, sizeof *carried) : NULL;
	if (nb && (!carried || eng_rules_carried(nb, b, carried))) {
		nt_log(D->nt, 4, "%s: the alerts of rules that go cannot be resolved: out of memory", T->label);
		free(carried);
		free(st);
		return 0;
	}
	for (size_t i = 0; i < b->nrules; i++) {
		if (carried && carried[i])
			continue;
		/* a per-entity rule's: every entity's, then its overflow alert */
		sn_estate *es = NULL;
		uint32_t nes = 0, ovf;
		if (b->rules[i].per_entity && eng_entity_states(e, i, &es, &nes, &ovf, err, sizeof err))
			nt_log(D->nt, 4, "%s: the alerts of rule %s cannot be resolved: %s", T->label, b->rules[i].name, err);
		for (uint32_t k = 0; k <= nes; k++) {
			const sn_rstate *x = k < nes ? &es[k].st : &st[i];
			if (x->phase != SN_FIRING && x->phase != SN_PENDING)
				continue;
			NtEvent ev = {.rule = &b->rules[i], .kind = x->phase == SN_FIRING ? SN_EV_RESOLVED : SN_EV_CANCELLED,
				      .value = x->value, .entity = x->ev_entity, .comm = x->ev_comm, .when = now,
				      .target = T->cf.name, .tlabels = T->cf.labels, .ntlabels = T->cf.nlabels};
			nt_event(D->nt, &ev);
			D->alerts_seen++;
			n++;
		}
		free(es);
	}
	if (n)
		nt_flush(D->nt);
	free(carried);
	free(st);
	return n;
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
	d_alerts_end(T, T->e, NULL);
	d_finder_stop(T);
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
	D->tg_gen += D->ntg != k;
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
			D->tg_gen++;
		}
	}
	for (unsigned i = 0; i < R->nadded; i++)
		cf_target_free(&R->added[i]);
	free(R->added);
	R->added = NULL;
	R->nadded = 0;
}

/* The second half, on the loop: validate what the thread made, then hand
 * over (the GPU fleet's here; the others' on a thread: d_handover_start).
 * The running rules stay on any error: the answer then (-errno, msg),
 * as with 1 for rule errors.  0: go on (d_reload_finish, now or once the
 * handovers' thread is done). */
static int d_reload_begin(Daemon *D, char *msg, size_t n)
{
	DReload *R = &D->rl;
	pthread_join(R->thread, NULL);
	Bundle *nb = R->nb;
	DTarget *G = R->grow_tg;
	char err[1024];
	snprintf(err, sizeof err, "%s", R->err);
	R->hdiags = R->diags;
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
		d_bundle_retire(D, nb);
		return r;
	}
	R->hb = nb;
	R->old_cap = R->grow ? eng_task_cap(G->e) : 0;
	/* what lost targets' workers loaded goes (they load again after:
	 * the gate is closed), before the old rules and fleet can go */
	d_gate_stale(D);
	d_drain(D);
	R->fleet_kept = R->fleet_done = 0;
	if (R->nfleet) {                   /* the GPU fleet: all at once, its wait on the handovers' thread */
		DHandover *H = &D->ho;
		if ((r = d_fleet_start(D, &R->fleet_kept, err, sizeof err)))
			return d_fleet_failed(D, r, err, msg, n);
		*H = (DHandover){.D = D, .fleet = true, .on = true};
		if (!d_thread(&H->th, d_fleet_wait_thread, D)) {
			H->threaded = true;
			return 0;
		}
		d_fleet_wait(D);                 /* (no thread: here) */
		H->done = 1;
		return 0;
	}
	if ((r = d_handover_start(D))) {
		d_reload_discard(D);
		snprintf(msg, n, "out of memory for the handover; the running rules are unchanged");
		d_bundle_retire(D, nb);
		R->hb = NULL;
	}
	return r;
}

/* The handovers are over (after a fleet's, or the thread's): the targets
 * the configuration no longer has go, the new ones come, and msg says
 * what happened.  0, or the handover's error (the running rules stayed). */
static int d_reload_finish(Daemon *D, char *msg, size_t n)
{
	DReload *R = &D->rl;
	DHandover *H = &D->ho;
	Bundle *nb = R->hb;
	DTarget *G = R->grow_tg;
	unsigned kept = R->fleet_kept, done = R->fleet_done, lost = 0;
	sn_stats os = R->fleet_os, ns = R->fleet_ns;
	char failed[600] = "", err[1024] = "";
	int r = 0;
	R->hb = NULL;
	for (unsigned i = 0; i < H->n; i++) {
		DHoItem *h = &H->it[i];
		if (h->st != HO_SWAPPED)
			continue;
		if (!done++) {
			os = h->os;
			ns = h->ns;
		}
		kept += h->kept;
	}
	for (unsigned i = 0; i < H->n; i++) {
		DHoItem *h = &H->it[i];
		DTarget *T = &D->tg[h->idx];
		if (h->st != HO_FAILED)
			continue;
		if (!done) {             /* nothing changed anywhere: all of it stays */
			/* did the old rules come back (the undo may not have
			 * resumed them)?  The watch, which runs right after
			 * this on the loop, checks at once: status says the
			 * truth before the next request is read */
			T->next_check_ns = 0;
			r = h->rc;
			snprintf(err, sizeof err, "%s", h->err);
			continue;
		}
		/* the others run the new rules: this one starts again with them */
		snprintf(T->err, sizeof T->err, "the reload's handover failed (%.400s); starting again with the new rules",
			 h->err);
		nt_log(D->nt, 3, "target error: %s: %s", T->label, T->err);
		d_target_error(T, T->err);
		d_close_target(T);
		T->ts = TS_LOST;
		T->next_check_ns = 0;
		snprintf(failed + strlen(failed), sizeof failed - strlen(failed), "%s%s", lost++ ? ", " : "",
			 T->cf.name);
	}
	for (unsigned i = 0; i < H->n; i++) {    /* (the skipped ones and those the undo resumed run on) */
		DTarget *T = &D->tg[H->it[i].idx];
		d_phase_set(T, T->e && T->ts == TS_OK ? DT_running : DT_lost);
	}
	free(H->it);
	*H = (DHandover){0};
	if (r) {
		d_reload_discard(D);
		snprintf(msg, n, "the handover failed: %.900s; the running rules are unchanged", err);
		d_bundle_retire(D, nb);
		return r;
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
		d_bundle_retire(D, nb);
		D->reloads++;
		d_targets_apply_added(D, tchange, sizeof tchange);
	} else {
		d_bundle_retire(D, D->b);
		D->b = nb;
		D->reloads++;
		d_targets_apply_added(D, tchange, sizeof tchange);
	}
	uint64_t t1 = u_now_ns();
	char settled[256] = "";
	for (unsigned i = 0; i < D->ntg; i++)
		if (D->tg[i].e && D->tg[i].ts == TS_OK && (r = eng_settle(D->tg[i].e, settled, sizeof settled, err, sizeof err)))
			snprintf(settled, sizeof settled, "after the handover: %.200s", err);
	/* the proof of no gap: the new engine's first tick is the old one's
	 * last plus one, one tick later */
	char what[160], others[700] = "";
	if (R->grow)
		snprintf(what, sizeof what, "the task table grew from %u to %u rows", R->old_cap, R->grow);
	else if (D->ntg > 1)
		snprintf(what, sizeof what, "%zu rules running on %u of %u targets (%u rule states kept)", D->b->nrules, done,
			 D->ntg, kept);
	else
		snprintf(what, sizeof what, "%zu rules running (%u kept their state)", D->b->nrules, kept);
	if (lost)
		snprintf(others, sizeof others, "; %s restart%s with them (the handover failed)", failed, lost == 1 ? "s" : "");
	if (*tchange)
		snprintf(others + strlen(others), sizeof others - strlen(others), "; targets %s", tchange);
	if (*R->trial)
		snprintf(others + strlen(others), sizeof others - strlen(others), "; trial run first: %.150s", R->trial);
	if (done)
		snprintf(msg, n, "%.160s, reloaded in %.0f ms (rules %.0f ms, loaded %.0f ms, trial %.0f ms, handover %.0f ms); "
			 "handover: old tick %llu, new tick %llu %.1f ms later (tick %.1f ms)"
			 "%.300s%s%.200s", what, (double)(t1 - R->t0) / 1e6, (double)(R->t_rules - R->t0) / 1e6,
			 (double)(R->t_open - R->t_rules) / 1e6, (double)(R->t_trial - R->t_open) / 1e6,
			 (double)(t1 - R->t_trial) / 1e6, (unsigned long long)os.ticks,
			 (unsigned long long)ns.first_tick, (double)(ns.first_tick_ns - os.last_tick_ns) / 1e6,
			 (double)D->eo.tick_ns / 1e6, others, *settled ? "; " : "", settled);
	else if (R->same)                /* the GPU fleet: the same rules run on */
		snprintf(msg, n, "the rules did not change: %zu rules run on in the GPU's kernel for all targets%.300s",
			 D->b->nrules, others);
	else                             /* no target runs now: the rules start with them */
		snprintf(msg, n, "%zu rules loaded; no target runs now, they start when one is back%.300s", D->b->nrules,
			 others);
	for (unsigned i = 0; i < D->ntg; i++)
		if (D->tg[i].e && D->tg[i].ts == TS_OK && (!R->grow || &D->tg[i] == G))
			d_log_disabled(&D->tg[i]);
	return 0;
}

/* The reload is over (r, msg): log, count, answer whoever asked; the
 * lost targets' workers may load again. */
static void d_reload_end(Daemon *D, int r, const char *msg)
{
	DReload *R = &D->rl;
	Client *c = R->client;
	uint32_t grow = R->grow;
	DTarget *G = R->grow_tg;
	char *diags = R->hdiags;
	R->hdiags = NULL;
	R->on = false;
	d_gate_open(D);
	if (grow && r)
		G->grow_failed = grow;
	/* status and /metrics say what the last one did, a failure too
	 * (Prometheus' config_last_reload_successful) */
	if (!grow) {
		D->reload_failures += r != 0;
		D->last_reload_failed = r != 0;
		snprintf(D->last_reload, sizeof D->last_reload, "%s%.580s", r ? "failed: " : "", msg);
	}
	if (grow)
		nt_log(D->nt, r ? 3 : 5, "%s%s%s%s", r ? "target error: " : "", D->ntg > 1 ? G->cf.name : "",
		       D->ntg > 1 ? ": " : "", msg);
	else
		nt_log(D->nt, r ? 4 : 6, "reload (%s): %s", R->by_socket ? "control socket" : "SIGHUP", msg);
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

/* The reload's thread is done: validate and hand over; the reload ends
 * now, or when the handovers' thread is done (d_handover_done). */
void d_reload_done(Daemon *D)
{
	char msg[1024] = "";
	int r = d_reload_begin(D, msg, sizeof msg);
	if (!r && D->ho.on)
		return;
	if (!r)
		r = d_reload_finish(D, msg, sizeof msg);
	d_reload_end(D, r, msg);
}

void d_handover_done(Daemon *D)
{
	DHandover *H = &D->ho;
	char msg[1024] = "", err[1024] = "";
	int r;
	if (H->threaded)
		pthread_join(H->th, NULL);
	H->on = false;
	if (H->fleet) {
		DReload *R = &D->rl;
		r = d_fleet_end(D, &R->fleet_done, &R->fleet_os, &R->fleet_ns, err, sizeof err);
		*H = (DHandover){0};
		if (r) {
			d_reload_end(D, d_fleet_failed(D, r, err, msg, sizeof msg), msg);
			return;
		}
	} else {
		d_handover_swap(D);
	}
	r = d_reload_finish(D, msg, sizeof msg);
	d_reload_end(D, r, msg);
}

/* The CPU backend's tick threads: [engine] threads, or a quarter of this
 * host's CPUs (1 to 8): sentineld shares the host with what it watches.
 * Several targets: one each (every target has a tick thread of its own). */
uint32_t d_threads(const Config *cf)
{
	if (cf->threads)
		return cf->threads;
	if (cf->ntargets > 1)
		return 1;
	long n = sysconf(_SC_NPROCESSORS_ONLN) / 4;
	return n < 1 ? 1 : n > 8 ? 8 : (uint32_t)n;
}
