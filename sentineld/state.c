/* state.c - alert state and windows across a restart ([engine] state).
 *
 * Each target's world (engine.h, eng_save: every alert state, window
 * history, task and object table) goes to DIR/TARGET.state
 * (engine/state.h) every state_interval and when sentineld stops: the
 * copy on the loop (a tick's worth of memory), the write on the state
 * writer's thread (fsync, rename: a slow disk stalls nothing).  At start,
 * before its rules run, a target takes its file over (eng_restore) when it
 * is the same target, kernel and boot, saved less than state_tolerance
 * ago; its firing alerts tell Alertmanager they still fire, with the
 * startsAt it was told.  Anything else (no file, another boot, too old,
 * a corrupt or foreign file) is a line in the journal and a clean start.
 */
#include "sentineld.h"
#include "state.h"

/* One save waiting for the writer (owned by the queue, then the writer). */
struct DStJob {
	struct DStJob *next;
	char path[4096];
	char label[300];
	EsIdent id;
	int64_t wall_ns;
	char *manifest;
	WdParams p;
	void *block;
	size_t len;
	uint64_t base;
	json_t *starts;
};

static int64_t d_st_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void d_st_job_free(DStJob *j)
{
	if (!j)
		return;
	free(j->manifest);
	free(j->block);
	json_decref(j->starts);
	free(j);
}

/* The directory: [engine] state, or auto's ($STATE_DIRECTORY, systemd's
 * StateDirectory=; else /var/lib/sentinel where it exists); "" none. */
static void d_st_resolve(Daemon *D)
{
	DStWriter *W = &D->sw;
	const char *s = D->cf.state;
	W->dir[0] = 0;
	if (s && !strcmp(s, "none"))
		return;
	if (s && strcmp(s, "auto")) {
		if (mkdir(s, 0700) && errno != EEXIST) {
			nt_log(D->nt, 4, "[engine] state = %s: cannot make it (%s): alert state will not survive a restart",
			       s, strerror(errno));
			return;
		}
		snprintf(W->dir, sizeof W->dir, "%s", s);
		return;
	}
	d_dir_auto("STATE_DIRECTORY", "/var/lib/sentinel", W->dir, sizeof W->dir);
}

static void d_st_path(const Daemon *D, const DTarget *T, char *out, size_t n)
{
	snprintf(out, n, "%.3000s/%.900s.state", D->sw.dir, T->cf.name);
}

/* What T's memory says it is now: kernel, slide, boot id, jiffies. */
static void d_st_ident(const DTarget *T, EsIdent *id)
{
	memset(id, 0, sizeof *id);
	snprintf(id->target, sizeof id->target, "%s", T->cf.name);
	snprintf(id->release, sizeof id->release, "%s", T->t->release);
	id->kaslr = T->t->kaslr_offset;
	uint64_t va;
	uint8_t u[16] = {0};
	/* made the first time someone reads /proc/sys/kernel/random/boot_id
	 * (systemd does at boot); zero until then */
	if (!kt_sym(T->t, "sysctl_bootid", &va) && !kx_read(&T->t->mem, va, u, sizeof u)) {
		uint8_t any = 0;
		for (int i = 0; i < 16; i++)
			any |= u[i];
		if (any)
			snprintf(id->boot_id, sizeof id->boot_id,
				 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
				 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	}
	if (!kt_sym(T->t, "jiffies_64", &va))
		kx_read64(&T->t->mem, va, &id->jiffies);
}

/* The manifest of b, made once per rule set (a reload's rules have another). */
static const char *d_st_manifest(Daemon *D, const Bundle *b)
{
	DStWriter *W = &D->sw;
	if (!W->man || W->man_b != b || W->man_gen != D->reloads) {
		free(W->man);
		W->man = bd_manifest_json(b);
		W->man_b = b;
		W->man_gen = D->reloads;
	}
	return W->man;
}

/* A copy of T's world to be written; NULL with err set. */
static DStJob *d_st_job(DTarget *T, char *err, size_t n)
{
	Daemon *D = T->D;
	DStJob *j = calloc(1, sizeof *j);
	const char *man = d_st_manifest(D, eng_bundle(T->e));
	if (!j || !man || !(j->manifest = strdup(man))) {
		snprintf(err, n, "out of memory");
		d_st_job_free(j);
		return NULL;
	}
	if (eng_save(T->e, &j->block, &j->base, err, n)) {
		d_st_job_free(j);
		return NULL;
	}
	j->wall_ns = d_st_wall();
	j->len = eng_layout(T->e)->total;
	j->p = *eng_params(T->e);
	j->starts = nt_firing_starts(D->nt, T->cf.name);
	d_st_ident(T, &j->id);
	d_st_path(D, T, j->path, sizeof j->path);
	snprintf(j->label, sizeof j->label, "%s", T->label);
	return j;
}

static int d_st_write(Daemon *D, DStJob *j)
{
	char err[512];
	int r = es_write(j->path, &j->id, j->wall_ns, j->manifest, &j->p, j->block, j->len, j->base, j->starts, err,
			 sizeof err);
	DStWriter *W = &D->sw;
	pthread_mutex_lock(&W->mu);
	if (r) {
		W->errors++;
		snprintf(W->last_error, sizeof W->last_error, "%.500s", err);
	} else {
		W->writes++;
		W->bytes = j->len;
	}
	pthread_mutex_unlock(&W->mu);
	if (r)
		nt_log(D->nt, 4, "%s: its state cannot be saved: %s (alert state will not survive a restart until it "
		       "can: check the state directory, [engine] state)", j->label, err);
	return r;
}

static void *d_st_main(void *arg)
{
	Daemon *D = arg;
	DStWriter *W = &D->sw;
	pthread_mutex_lock(&W->mu);
	for (;;) {
		while (!W->head && !W->stop)
			pthread_cond_wait(&W->cv, &W->mu);
		DStJob *j = W->head;
		if (!j)
			break;                  /* stopping, nothing left */
		W->head = j->next;
		W->busy = true;
		pthread_mutex_unlock(&W->mu);
		d_st_write(D, j);
		d_st_job_free(j);
		pthread_mutex_lock(&W->mu);
		W->busy = false;
	}
	pthread_mutex_unlock(&W->mu);
	return NULL;
}

int d_st_start(Daemon *D)
{
	DStWriter *W = &D->sw;
	pthread_mutex_init(&W->mu, NULL);
	pthread_cond_init(&W->cv, NULL);
	W->inited = true;
	d_st_resolve(D);
	if (!*W->dir)
		return 0;
	if (d_thread(&W->th, d_st_main, D))
		return -EAGAIN;
	W->on = true;
	return 0;
}

/* The loop: each running target's world, every state_interval; a target
 * whose last save still waits gets its newer one instead. */
void d_st_tick(Daemon *D, uint64_t now)
{
	DStWriter *W = &D->sw;
	if (!W->on || D->ho.on)
		return;
	for (unsigned i = 0; i < D->ntg; i++) {
		DTarget *T = &D->tg[i];
		if (!T->e || T->ts != TS_OK || T->dropping || d_target_phase(T) != DT_running)
			continue;
		if (!T->st_next_ns)
			T->st_next_ns = now + D->cf.state_every_ns;
		if (now < T->st_next_ns)
			continue;
		T->st_next_ns = now + D->cf.state_every_ns;
		char err[512];
		DStJob *j = d_st_job(T, err, sizeof err);
		if (!j) {
			nt_log(D->nt, 4, "%s: its state cannot be copied: %s", T->label, err);
			pthread_mutex_lock(&W->mu);
			W->errors++;
			snprintf(W->last_error, sizeof W->last_error, "%.500s", err);
			pthread_mutex_unlock(&W->mu);
			continue;
		}
		pthread_mutex_lock(&W->mu);
		DStJob **at = &W->head;
		while (*at && strcmp((*at)->path, j->path))
			at = &(*at)->next;
		if (*at) {                      /* the same file's older copy, not yet written */
			j->next = (*at)->next;
			d_st_job_free(*at);
		}
		*at = j;
		pthread_cond_signal(&W->cv);
		pthread_mutex_unlock(&W->mu);
	}
}

json_t *d_st_status(Daemon *D)
{
	DStWriter *W = &D->sw;
	if (!W->inited || !*W->dir)
		return NULL;
	pthread_mutex_lock(&W->mu);
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:f, s:f}", "directory", W->dir, "writes", (json_int_t)W->writes,
			      "errors", (json_int_t)W->errors, "bytes", (json_int_t)W->bytes, "interval_s",
			      D->cf.state_every_ns / 1e9, "tolerance_s", D->cf.state_tolerance_ns / 1e9);
	if (o && *W->last_error)
		json_object_set_new(o, "last_error", json_string(W->last_error));
	pthread_mutex_unlock(&W->mu);
	return o;
}

/* Stopping (the engines stopped, their last alerts drained): what waits is
 * written, then every target's last state, here. */
void d_st_stop(Daemon *D)
{
	DStWriter *W = &D->sw;
	if (!W->inited)
		return;
	if (W->on) {
		pthread_mutex_lock(&W->mu);
		W->stop = true;
		pthread_cond_signal(&W->cv);
		pthread_mutex_unlock(&W->mu);
		pthread_join(W->th, NULL);
		W->on = false;
		for (unsigned i = 0; i < D->ntg; i++) {
			DTarget *T = &D->tg[i];
			sn_stats S;
			if (!T->e || T->ts != TS_OK || T->dropping || (eng_stats(T->e, &S, NULL), !S.ticks))
				continue;
			char err[512];
			DStJob *j = d_st_job(T, err, sizeof err);
			if (!j)
				nt_log(D->nt, 4, "%s: its last state cannot be copied: %s", T->label, err);
			else if (!d_st_write(D, j))
				nt_log(D->nt, 6, "%s: state saved to %s", T->label, j->path);
			d_st_job_free(j);
		}
	}
	free(W->man);
	W->man = NULL;
	pthread_mutex_destroy(&W->mu);
	pthread_cond_destroy(&W->cv);
	W->inited = false;
}

/* Its firing alerts in the saved world (read before eng_restore moves the
 * block's pointers): *out (malloc'd) events naming b's rules, their times
 * the firing times there (Alertmanager is told the saved startsAt where
 * it has one: d_st_restore). */
static unsigned d_st_firing(DTarget *T, const EsSaved *s, const WdLayout *oL, NtEvent **out)
{
	const Bundle *b = eng_bundle(T->e);
	const char *blk = s->block;
	const sn_world *o = s->block;
	uint64_t at = (uint64_t)(uintptr_t)s->block;
	unsigned n = 0, cap = 0;
	NtEvent *ev = NULL;
	int32_t *from = malloc((b->nrules + 1) * sizeof *from);
	if (!from || wd_carry(b, s->b, from, NULL)) {
		free(from);
		*out = NULL;
		return 0;
	}
	for (size_t r = 0; r < b->nrules; r++) {
		int f = from[r];
		if (f < 0)
			continue;
		const sn_rstate *rs = (const sn_rstate *)(blk + oL->o_rstate) + f;
		const sn_etab *E = (const sn_etab *)(blk + oL->o_etab) + f;
		const sn_estate *es = E->cap ? (const sn_estate *)(blk + ((uint64_t)(uintptr_t)E->e - at)) : NULL;
		for (uint32_t k = 0; k <= (es ? E->cap : 0); k++) {
			const sn_rstate *x = es && k < E->cap ? &es[k].st : rs;
			if ((es && k < E->cap && !es[k].key) || x->phase != SN_FIRING)
				continue;
			if (n == cap) {
				NtEvent *p = realloc(ev, (cap = cap * 2 + 16) * sizeof *p);
				if (!p)
					break;
				ev = p;
			}
			int64_t when = s->wall_ns - (int64_t)(o->now - x->fired_at);
			ev[n++] = (NtEvent){.rule = &b->rules[r], .kind = SN_EV_FIRING, .value = x->value,
					    .entity = x->ev_entity, .comm = x->ev_comm, .tick = o->tick,
					    .when = {(time_t)(when / 1000000000ll), (long)(when % 1000000000ll)},
					    .target = T->cf.name, .tlabels = T->cf.labels, .ntlabels = T->cf.nlabels};
		}
	}
	free(from);
	*out = ev;
	return n;
}

/* At start, T opened and its rules not yet running: its saved state, when
 * it is the same target, kernel and boot, recent enough. */
void d_st_restore(DTarget *T)
{
	Daemon *D = T->D;
	if (!*D->sw.dir || !T->e)
		return;
	char path[4096], err[512], why[512];
	d_st_path(D, T, path, sizeof path);
	EsSaved *s = NULL;
	int r = es_read(path, &s, err, sizeof err);
	if (r == -ENOENT) {
		nt_log(D->nt, 6, "%s: no saved state (%s): a clean start", T->label, path);
		return;
	}
	if (r) {
		nt_log(D->nt, 4, "%s: its saved state cannot be used: %s: a clean start", T->label, err);
		return;
	}
	int64_t gap = d_st_wall() - s->wall_ns;
	EsIdent now;
	d_st_ident(T, &now);
	WdLayout oL;
	if (strcmp(s->id.target, T->cf.name))
		snprintf(why, sizeof why, "it is target %s's", s->id.target);
	else if (gap < 0 || (uint64_t)gap > D->cf.state_tolerance_ns)
		snprintf(why, sizeof why, "it was saved %.0f s ago, past state_tolerance (%.0f s)", gap / 1e9,
			 D->cf.state_tolerance_ns / 1e9);
	else if (!es_same_boot(&s->id, &now, (uint64_t)gap, why, sizeof why))
		;
	else if (wd_layout(s->b, &s->p, &oL, why, sizeof why))
		;
	else
		why[0] = 0;
	if (*why) {
		nt_log(D->nt, 5, "%s: its saved state (%s) is not restored: %s: a clean start", T->label, path, why);
		es_free(s);
		return;
	}
	/* the alerts to announce, read from the block as it is (at its host
	 * address: eng_restore adopts it again for where the engine reads it) */
	unsigned kept = 0, bad = wd_adopt(s->block, s->b, &s->p, &oL, (uint64_t)(uintptr_t)s->block), fired = 0;
	sn_world o = *(const sn_world *)s->block;
	NtEvent *ev = NULL;
	if (bad != ~0u)
		fired = d_st_firing(T, s, &oL, &ev);
	if (bad == ~0u || eng_restore(T->e, s->b, &s->p, s->block, s->len, (uint64_t)gap, &kept, &bad, err, sizeof err)) {
		nt_log(D->nt, 4, "%s: its saved state (%s) cannot be taken over: %s: a clean start", T->label, path,
		       bad == ~0u ? "out of memory" : err);
		free(ev);
		es_free(s);
		return;
	}
	for (unsigned i = 0; i < fired; i++)
		nt_restored(D->nt, &ev[i], s->starts);
	free(ev);
	nt_log(D->nt, 6, "%s: restored the state of %u rules from %s (saved %.1f s ago, tick %llu; %u alerts firing%s)",
	       T->label, kept, path, gap / 1e9, (unsigned long long)o.tick, fired,
	       bad ? ", some of its indexes out of range and reset" : "");
	es_free(s);
}
