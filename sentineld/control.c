/* control.c - sentineld: the control socket: status, rules, alerts, reload; non-blocking clients. */
#define _GNU_SOURCE 1   /* accept4 */
#include "sentineld.h"

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
	/* the worker's phase (D_TPHASES) and the latest error, kept after it is back */
	json_object_set_new(o, "phase", json_string(d_tphase_name[d_target_phase(T)]));
	if (T->last_error[0]) {
		json_object_set_new(o, "last_error", json_string(T->last_error));
		json_object_set_new(o, "last_error_time", json_integer((json_int_t)T->last_error_at));
	}
	json_object_set_new(o, "errors", json_integer((json_int_t)T->errors));
	if (T->ts != TS_OK)
		json_object_set_new(o, "error", json_string(T->err));
	if (T->ts == TS_LOST && T->retry_err[0])
		json_object_set_new(o, "retry_error", json_string(T->retry_err));
	if (T->ts != TS_OK) {            /* looked for on a thread of its own (DFinder) */
		json_object_set_new(o, "searching", json_boolean(T->finder != NULL));
		json_object_set_new(o, "searches", json_integer((json_int_t)T->searches));
		/* the wait between its searches: ten times the last one's length, 2 s to 60 s */
		json_object_set_new(o, "search_backoff_s", json_real((double)T->retry_ns / 1e9));
		json_object_set_new(o, "last_search_s", json_real((double)T->last_search_ns / 1e9));
		json_object_set_new(o, "next_search_s", json_real(T->finder ? 0 : T->next_check_ns > u_now_ns() ?
						(double)(T->next_check_ns - u_now_ns()) / 1e9 : 0));
	}
	if (T->cf.nlabels) {
		json_t *l = json_object();
		for (unsigned i = 0; i < T->cf.nlabels; i++)
			json_object_set_new(l, T->cf.labels[2 * i], json_string(T->cf.labels[2 * i + 1]));
		json_object_set_new(o, "labels", l);
	}
	if (T->klog) {                   /* alerts' kernel log reads (klog.c), and events waiting for one */
		json_t *k = json_pack("{s:I, s:i, s:b, s:I}", "reads", (json_int_t)T->klog_reads, "waiting",
				      (int)T->kq_n, "reading", T->kjob != NULL, "overflows", (json_int_t)T->klog_skipped);
		json_object_set_new(o, "kernel_log", k);
	}
	if (T->t) {
		json_object_set_new(o, "kernel", json_string(T->t->release));
		json_object_set_new(o, "kaslr_offset", json_integer((json_int_t)T->t->kaslr_offset));
	}
	if (!T->e)
		return o;
	sn_stats S;
	uint64_t dropped;
	const Bundle *b = eng_bundle(T->e);       /* (during a reload's handovers: the old rules or the new) */
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
	/* the read budget (kx.h, kx_cur): what a tick reads, and the ticks cut off */
	json_object_set_new(o, "reads_per_tick", json_integer((json_int_t)S.reads));
	json_object_set_new(o, "max_reads_per_tick", json_integer((json_int_t)S.max_reads));
	json_object_set_new(o, "read_budget", eng_read_budget(T->e) ? json_integer((json_int_t)eng_read_budget(T->e))
								  : json_null());
	json_object_set_new(o, "ticks_over_budget", json_integer((json_int_t)S.over_budget));
	json_object_set_new(o, "tasks", json_integer(S.tasks));
	json_object_set_new(o, "tasks_found", json_integer(S.tasks_found));
	json_object_set_new(o, "task_table", json_integer(eng_task_cap(T->e)));
	/* what its tables take (per target: several targets add up) */
	const WdLayout *L = eng_layout(T->e);
	json_object_set_new(o, "table_bytes", json_integer((json_int_t)L->total));
	json_object_set_new(o, "history_bytes", json_integer((json_int_t)L->hist_bytes));
	/* "objects": {"cgroups": {"found": 300, "table": 256, "error": -34}, ...}: the kinds rules read */
	json_t *ob = json_object();
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		if (!b->nobj[k])
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
	if (eng_backend(T->e) == ENG_CUDA && b->njobs) {  /* what the jobs phase waits for */
		size_t slow = 0;
		for (size_t j = 1; j < b->njobs && j < SN_STAT_JOBS; j++)
			if (S.job_us[j] > S.job_us[slow])
				slow = j;
		json_object_set_new(o, "slowest_job", json_pack("{s:s, s:i}", "job", bd_job_label(b, slow),
								 "us", (int)S.job_us[slow]));
	}
	if (eng_backend(T->e) == ENG_CUDA && S.slow_rule < b->nrules)   /* what the rules phase waits for */
		json_object_set_new(o, "slowest_rule", json_pack("{s:s, s:i, s:i}", "rule", b->rules[S.slow_rule].name,
								  "us", (int)S.slow_rule_us, "parts", (int)S.rule_parts));
	if (S.task_err && S.task_err != -34)
		json_object_set_new(o, "task_walk_error", json_integer(S.task_err));
	json_object_set_new(o, "ring_dropped", json_integer((json_int_t)dropped));
	unsigned disabled = 0;
	for (size_t i = 0; i < b->nrules; i++)
		disabled += rl_rule_blocked(b, eng_relocs(T->e), i, NULL) != NULL;
	json_object_set_new(o, "rules_disabled", json_integer(disabled));
	return o;
}

/* The status: sentineld's, then "targets", one object each.  The first
 * target's fields are also at the top ("target", "ticks", ...), as when
 * sentineld watched one. */
static json_t *d_status(Daemon *D)
{
	json_t *o = json_pack("{s:s, s:s, s:f, s:I, s:s}", "version", SENTINEL_VERSION, "rules_dir", D->cf.rules_dir,
			      "uptime_s", (double)(u_now_ns() - D->started_ns) / 1e9, "tick_ns", (json_int_t)D->eo.tick_ns,
			      "target_name", D->tg[0].cf.name);
	json_object_set_new(o, "rules", json_integer((json_int_t)D->b->nrules));
	json_object_set_new(o, "reloads", json_integer(D->reloads));
	json_object_set_new(o, "reload_failures", json_integer(D->reload_failures));
	if (*D->last_reload) {
		json_object_set_new(o, "last_reload", json_string(D->last_reload));
		json_object_set_new(o, "last_reload_ok", json_boolean(!D->last_reload_failed));
	}
	if (D->rl.on)
		json_object_set_new(o, "reload_running_s", json_real((double)(u_now_ns() - D->rl.t0) / 1e9));
	json_object_set_new(o, "alerts_delivered", json_integer((json_int_t)D->alerts_seen));
	if (D->wake)
		json_object_set_new(o, "alerts_wake", json_string(D->wake));
	json_object_set_new(o, "notify_delay_ns", json_integer((json_int_t)D->cf.delay_ns));
	if (D->cf.jsonl && *D->cf.jsonl) {
		json_object_set_new(o, "jsonl_sync_errors", json_integer((json_int_t)nt_jsonl_sync_errors(D->nt)));
		json_object_set_new(o, "jsonl_write_errors", json_integer((json_int_t)nt_jsonl_write_errors(D->nt)));
	}
	if (D->cf.alertmanager || D->cf.webhook) {
		NhStats hs;
		nt_delivery(D->nt, &hs);
		json_object_set_new(o, "delivery", json_pack("{s:I, s:I, s:I, s:i, s:I, s:I}", "sent", (json_int_t)hs.sent,
							     "failed", (json_int_t)hs.failed, "dropped", (json_int_t)hs.dropped,
							     "queued", (int)hs.queued, "spool_bytes", (json_int_t)hs.spool_bytes,
							     "spool_errors", (json_int_t)hs.spool_errors));
	}
	json_t *st = d_st_status(D);
	if (st)
		json_object_set_new(o, "state", st);
	if (D->cache_dir[0]) {           /* [engine] cache: what the GPU's links found there */
		GpuCacheStats cs;
		gpu_cache_stats(&cs);
		json_object_set_new(o, "cache", json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "directory",
							   D->cache_dir, "cubins_loaded", (json_int_t)cs.hits,
							   "cubins_linked", (json_int_t)cs.misses, "cubins_refused",
							   (json_int_t)cs.refused, "cubins_written", (json_int_t)cs.written,
							   "cubins_unwritten", (json_int_t)cs.unwritten, "cubins_evicted",
							   (json_int_t)cs.evicted));
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
		if (!strcmp(key, "source") || !strcmp(key, "state") || !strcmp(key, "phase") || !strcmp(key, "error") ||
		    !strcmp(key, "retry_error") || !strcmp(key, "kernel") || !strcmp(key, "kaslr_offset") ||
		    !strcmp(key, "labels"))
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

/* One alert's row: rule i's (its state st) on target T, or one entity's
 * of a per-entity rule. */
static json_t *d_alert_row(DTarget *T, const Bundle *b, size_t i, const sn_rstate *st, uint32_t phase,
			   const sn_stats *S, bool active_only)
{
	const BdRule *r = &b->rules[i];
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", r->name, "target", T->cf.name, "severity",
			      r->severity, "state", T->e ? d_phase(phase) : "stopped", "file", r->file);
	json_object_set_new(o, "line", json_integer(r->line));
	if (!st)
		return o;
	json_object_set_new(o, "value", st->value == st->value ? json_real(st->value) : json_null());
	/* an active alert is about the entity it named when it began */
	bool on = st->phase == SN_PENDING || st->phase == SN_FIRING;
	NtEvent ev = {.rule = r, .kind = SN_EV_FIRING, .value = st->value,
		      .entity = on ? st->ev_entity : st->entity, .comm = on ? st->ev_comm : NULL};
	const char *key[NT_ENTITY_LABELS];
	char val[NT_ENTITY_LABELS][NT_LABEL_MAX];
	for (int k = 0, nk = nt_entity_labels(&ev, key, val); k < nk; k++)
		json_object_set_new(o, key[k], k == 0 && !ent_is_obj(r->entity) && ev.entity >= 0
						       ? json_integer(ev.entity) : json_string(val[k]));
	uint64_t since = st->phase == SN_FIRING ? st->fired_at : st->phase == SN_PENDING ? st->true_since : 0;
	if (since && S->last_tick_ns >= since)
		json_object_set_new(o, "for_s", json_real((double)(S->last_tick_ns - since) / 1e9));
	json_object_set_new(o, "evaluations", json_integer((json_int_t)st->evals));
	json_object_set_new(o, "unknown", json_integer((json_int_t)st->unknown));
	const char *why = rl_rule_blocked(b, eng_relocs(T->e), i, NULL);
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
	return o;
}

/* Target T's rules, or only the active ones (alerts), into a.  A
 * per-entity rule is one row among the rules (state: its most advanced
 * alert's, `alerts`: how many), and a row per active alert among the
 * alerts. */
static int d_target_rules(DTarget *T, json_t *a, bool active_only, char *err, size_t n)
{
	Daemon *D = T->D;
	sn_rstate *st = NULL;
	sn_stats S = {0};
	if (T->e) {
		if (!(st = d_rule_states(T->e, err, n)))
			return -EIO;
		eng_stats(T->e, &S, NULL);
	}
	/* its engine's rules (during a reload's handovers some targets run the new ones) */
	const Bundle *b = T->e ? eng_bundle(T->e) : D->b;
	int rc = 0;
	for (size_t i = 0; i < b->nrules && !rc; i++) {
		uint32_t phase = st ? st[i].phase : SN_INACTIVE;
		sn_estate *es = NULL;
		uint32_t nes = 0, ovf = 0;
		if (st && b->rules[i].per_entity && (rc = eng_entity_states(T->e, i, &es, &nes, &ovf, err, n)))
			break;
		for (uint32_t k = 0; k < nes; k++) {
			if (active_only)
				json_array_append_new(a, d_alert_row(T, b, i, &es[k].st, es[k].st.phase, &S, true));
			if (phase != SN_DISABLED && es[k].st.phase > phase)
				phase = es[k].st.phase;
		}
		free(es);
		/* the rule's own alert (a per-entity rule's: its overflow alert) */
		bool own = st && (st[i].phase == SN_PENDING || st[i].phase == SN_FIRING);
		if (active_only) {
			if (own)
				json_array_append_new(a, d_alert_row(T, b, i, &st[i], st[i].phase, &S, true));
			continue;
		}
		json_t *o = d_alert_row(T, b, i, st ? &st[i] : NULL, phase, &S, false);
		if (b->rules[i].per_entity)
			json_object_set_new(o, "alerts", json_integer(nes + own));
		json_array_append_new(a, o);
	}
	free(st);
	return rc;
}

/* rules, or only the active ones (alerts): every target's, in order, a
 * slice of D_RULES_SLICE_NS at a time (at least one target); when done,
 * the answer is queued and the client read again.  Whether one is left. */
static bool d_rules_slice(Daemon *D, Client *c)
{
	if (c->rules_gen != D->tg_gen) {         /* targets came or went meanwhile: from the start */
		json_array_clear(c->rules);
		c->rules_next = 0;
		c->rules_gen = D->tg_gen;
	}
	uint64_t t0 = u_now_ns();
	char err[1024] = "";
	int r = 0;
	while (c->rules_next < D->ntg && !r && (c->rules_next == 0 || u_now_ns() - t0 < D_RULES_SLICE_NS))
		r = d_target_rules(&D->tg[c->rules_next++], c->rules, c->rules_active, err, sizeof err);
	if (!r && c->rules_next < D->ntg)
		return true;
	json_t *resp = r ? json_pack("{s:b, s:s}", "ok", 0, "error", err)
			 : json_pack("{s:b, s:O}", "ok", 1, c->rules_active ? "alerts" : "rules", c->rules);
	json_decref(c->rules);
	c->rules = NULL;
	c->waiting = false;
	d_answer(D, c, resp);
	json_decref(resp);
	d_client_requests(D, c);                 /* what it sent meanwhile */
	return false;
}

bool d_clients_work(Daemon *D)
{
	bool left = false;
	for (int i = 0; i < D_MAX_CLIENTS; i++)
		if (D->cl[i].fd >= 0 && D->cl[i].rules)
			left |= d_rules_slice(D, &D->cl[i]);
	return left;
}

static json_t *d_request(Daemon *D, Client *c, const char *line)
{
	json_error_t je;
	json_t *req = json_loads(line, 0, &je);
	const char *cmd = req ? json_string_value(json_object_get(req, "cmd")) : NULL;
	json_t *resp;
	if (!cmd) {
		resp = json_pack("{s:b, s:s}", "ok", 0, "error", "a request is one JSON object with \"cmd\"");
	} else if (!strcmp(cmd, "status")) {
		resp = json_pack("{s:b, s:o}", "ok", 1, "status", d_status(D));
	} else if (!strcmp(cmd, "rules") || !strcmp(cmd, "alerts")) {
		/* answered when built (d_clients_work), a slice at a time */
		resp = NULL;
		if (!(c->rules = json_array())) {
			resp = json_pack("{s:b, s:s}", "ok", 0, "error", "out of memory");
		} else {
			c->rules_active = !strcmp(cmd, "alerts");
			c->rules_next = 0;
			c->rules_gen = D->tg_gen;
			c->waiting = true;
		}
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

int d_listen(Daemon *D, char *err, size_t n)
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
void d_client_close(Daemon *D, Client *c)
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
	json_decref(c->rules);            /* its rules answer in progress */
	c->rules = NULL;
}

/* Write what the client's queue holds, as far as its socket takes it. */
void d_client_flush(Daemon *D, Client *c)
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

void d_answer(Daemon *D, Client *c, json_t *resp)
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
void d_client_requests(Daemon *D, Client *c)
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
void d_client_io(Daemon *D, Client *c, short revents)
{
	c->seen_ns = u_now_ns();
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

/* A new control client (the listening socket is readable). */
void d_client_accept(Daemon *D)
{
	int fd = accept4(D->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);   /* a blocking client could stall the loop */
	if (fd < 0)
		return;
	Client *slot = NULL, *idle = NULL;
	for (int i = 0; i < D_MAX_CLIENTS && !slot; i++) {
		Client *c = &D->cl[i];
		if (c->fd < 0)
			slot = c;
		else if (!c->waiting && (!idle || c->seen_ns < idle->seen_ns))
			idle = c;
	}
	if (!slot && idle) {
		nt_log(D->nt, 5, "control socket: %d clients connected; the one idle for %.0f s makes room for a new one",
		       D_MAX_CLIENTS, (double)(u_now_ns() - idle->seen_ns) / 1e9);
		d_client_close(D, idle);
		slot = idle;
	}
	if (!slot) {                    /* every one waits for a reload */
		close(fd);
		return;
	}
	*slot = (Client){.fd = fd, .seen_ns = u_now_ns()};
}

uint64_t d_clients_idle(Daemon *D, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	for (int i = 0; i < D_MAX_CLIENTS; i++) {
		Client *c = &D->cl[i];
		if (c->fd < 0 || c->waiting)
			continue;
		if (now - c->seen_ns >= D_CLIENT_IDLE_NS) {
			d_client_close(D, c);
			continue;
		}
		if (c->seen_ns + D_CLIENT_IDLE_NS < next)
			next = c->seen_ns + D_CLIENT_IDLE_NS;
	}
	return next;
}
