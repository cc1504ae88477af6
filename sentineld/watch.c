/* watch.c - sentineld: the target watch: each target checked on its
 * schedule (still the machine we mapped? its tables full? over its read
 * budget?), a lost one handed to its worker (DFinder: found and loaded
 * off the loop), those back started together. */
#include "sentineld.h"
#include <inttypes.h>

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
			d_phase_set(T, DT_paused);
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
		d_target_error(T, lost);
		d_drain(D);
		d_close_target(T);
		T->ts = TS_LOST;
		d_phase_set(T, DT_lost);
		if (d_all_lost(D))
			d_sd_notify("STATUS=target lost");
		return;
	}
	if (T->finder) {                         /* its worker (search, load) in progress: done yet? */
		if (!__atomic_load_n(&T->finder->done, __ATOMIC_ACQUIRE))
			return;
		int r = d_finder_take(T, err, sizeof err);
		if (r == 1)                      /* loading again (a reload came) */
			return;
		/* on the grid (d_next_check) when it took no time; a backed-off
		 * one waits its whole wait (the grid of a 60 s period can be
		 * a second away) */
		T->next_check_ns = T->retry_ns > D_TARGET_RETRY_NS ? now + T->retry_ns : d_next_check(now, D_TARGET_RETRY_NS);
		if (r) {
			if (T->err[0])
				snprintf(T->retry_err, sizeof T->retry_err, "%s", err);
			else
				snprintf(T->err, sizeof T->err, "%s", err);
			d_target_error(T, err);
			d_phase_set(T, DT_lost);
			return;
		}
		T->back = true;                  /* started by d_watch_target, with the others back */
		d_phase_set(T, DT_loading);
		return;
	}
	if (now < T->next_check_ns)
		return;
	T->next_check_ns = d_next_check(now, D_TARGET_RETRY_NS);   /* (while it searches: the finder wakes the loop) */
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
	else
		d_phase_set(T, DT_finding);      /* (the worker's phase meanwhile: d_target_phase) */
}

/* A target opened again: its rules start. */
static void d_start_again(DTarget *T)
{
	Daemon *D = T->D;
	char err[512];
	T->back = false;
	if (eng_start(T->e, err, sizeof err)) {
		nt_log(D->nt, 3, "%s is back but the rules cannot start: %s", T->label, err);
		d_target_error(T, err);
		d_close_target(T);
		d_phase_set(T, DT_lost);
		return;
	}
	T->ts = TS_OK;
	d_phase_set(T, DT_running);
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
	uint64_t now = u_now_ns();
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
