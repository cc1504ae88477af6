/* target.c - sentineld: a target: its configuration, its engine, whether its VM is still there. */
#include "sentineld.h"

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
	*T = (DTarget){.D = D, .task_cap = D->cf.tasks, .ts = TS_LOST, .phase = DT_lost};
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
	d_kl_flush(T);                   /* its events waiting for its kernel log: sent */
	T->dropping = false;             /* a new engine's alerts are news again */
	eng_close(T->e);
	T->e = NULL;
	kl_close(T->klog);
	T->klog = NULL;
	free(T->klog_text);
	T->klog_text = NULL;
	T->klog_drain = 0;
	kt_close(T->t);
	T->t = NULL;
	ms_close(T->src);
	T->src = NULL;
}

/* A source whose memory is a file a VM owns (it goes when the VM does):
 * a RAM file, or one standing in for the pmem device. */
bool d_file_backed(const MemSource *s)
{
	return s->kind == MS_RAMFILE || (s->kind == MS_PMEM && !s->pmem_device);
}

/* What the engine of T needs to know of it: its name and labels, for the
 * rules limited to targets by label. */
void d_target_opts_cf(const Daemon *D, const CfTarget *cf, EngOpts *eo)
{
	eo->target_name = cf->name;
	eo->target_labels = cf->labels;
	eo->target_nlabels = cf->nlabels;
	uint64_t b = cf->read_budget ? cf->read_budget : D->cf.read_budget;
	eo->read_budget = b == CF_BUDGET_NONE ? 0 : b == CF_BUDGET_AUTO ? eng_read_budget_auto(eo->task_cap, eo->obj_cap) : b;
}

void d_target_opts(const DTarget *T, EngOpts *eo)
{
	d_target_opts_cf(T->D, &T->cf, eo);
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

/* ---- its phase and last error ------------------------------------------------------------- */

const char *const d_tphase_name[DT_N] = {
#define D_TP_NAME(n) #n,
	D_TPHASES(D_TP_NAME)
#undef D_TP_NAME
};

DtPhase d_target_phase(const DTarget *T)
{
	const DFinder *F = T->finder;
	return (DtPhase)(F ? __atomic_load_n(&F->phase, __ATOMIC_ACQUIRE) : __atomic_load_n(&T->phase, __ATOMIC_ACQUIRE));
}

void d_phase_set(DTarget *T, DtPhase p)
{
	DtPhase was = (DtPhase)__atomic_exchange_n(&T->phase, (int)p, __ATOMIC_ACQ_REL);
	if (was != p)
		nt_log(T->D->nt, 7, "%s: %s -> %s", T->label, d_tphase_name[was], d_tphase_name[p]);
}

void d_target_error(DTarget *T, const char *why)
{
	snprintf(T->last_error, sizeof T->last_error, "%s", why);
	T->last_error_at = time(NULL);
	T->errors++;
}
