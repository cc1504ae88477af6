/* prom.c - /metrics over libmicrohttpd (prom.h). */
#include "prom.h"
#include "http.h"
#include "notify.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PX_WAIT_NS 5000000000ull   /* a scrape waits this long for the main loop */
#define PX_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct PxServer {
	struct MHD_Daemon *mhd;
	int lfd, efd;
	unsigned port;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t requested, published;   /* scrape generations: asked for, answered */
	char *text;                      /* the last snapshot, refcounted by copies */
	size_t len;
};

/* ---- rendering ---------------------------------------------------------------------- */

/* sentinel_<entity>_<name>[_seconds|_bytes][_total]: Prometheus' naming */
static void px_name(const Metric *m, char *buf, size_t n)
{
	size_t k = (size_t)snprintf(buf, n, "sentinel_%s", m->name);
	for (size_t i = 0; i < k && i < n; i++)
		if (buf[i] == '.')
			buf[i] = '_';
	const char *unit = m->unit == MU_SECONDS ? "_seconds" : m->unit == MU_BYTES ? "_bytes"
			   : m->unit == MU_BYTES_PER_SECOND ? "_bytes_per_second" : "";
	snprintf(buf + k, n > k ? n - k : 0, "%s%s", unit, m->kind == MK_COUNTER ? "_total" : "");
}

/* A label value: backslash, quote and newline escaped.  v is UTF-8: the
 * configuration's and the rules' text is checked to be, and a string read
 * from kernel memory comes through px_klabel. */
static void px_label(StrBuf *b, const char *key, const char *v, size_t len)
{
	sb_printf(b, "%s=\"", key);
	for (size_t i = 0; i < len && v[i]; i++) {
		char c = v[i];
		if (c == '\\' || c == '"')
			sb_printf(b, "\\%c", c);
		else if (c == '\n')
			sb_puts(b, "\\n");
		else
			sb_putc(b, c);
	}
	sb_putc(b, '"');
}

/* A label value read from kernel memory (a task's comm, a disk's name),
 * which may hold any byte: printable first (u_printable). */
static void px_klabel(StrBuf *b, const char *key, const char *v, size_t len)
{
	char t[4 * SN_OBJ_NAME + 1];
	px_label(b, key, t, u_printable(t, sizeof t, v, len, ""));
}

static void px_value(StrBuf *b, double v)
{
	if (isinf(v))                        /* a limit of "max": the format's own spelling */
		sb_printf(b, " %s\n", v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 1e15)
		sb_printf(b, " %.0f\n", v);
	else
		sb_printf(b, " %.17g\n", v);
}

static void px_head(StrBuf *b, const char *name, const char *type, const char *help)
{
	sb_printf(b, "# HELP %s ", name);
	for (const char *p = help; *p; p++)     /* HELP escapes backslash and newline */
		if (*p == '\\')
			sb_puts(b, "\\\\");
		else if (*p == '\n')
			sb_puts(b, "\\n");
		else
			sb_putc(b, *p);
	sb_printf(b, "\n# TYPE %s %s\n", name, type);
}

/* One series: name{target="T"[, extra]} value */
static void px_series(StrBuf *b, const char *name, const char *target, const char *extra, double v)
{
	sb_printf(b, "%s{", name);
	px_label(b, "target", target, strlen(target));
	sb_printf(b, "%s%s}", extra && *extra ? "," : "", extra ? extra : "");
	px_value(b, v);
}

/* sentinel_target_info{target,kernel} 1, node_exporter's node_uname_info
 * for each target whose kernel was found: a fleet's kernel versions are
 * compared in Prometheus (count by (kernel) ...) */
static void px_info(StrBuf *b, const PxInput *in)
{
	bool head = false;
	for (unsigned t = 0; t < in->ntg; t++) {
		const char *k = in->tg[t].kernel;
		if (!k || !*k)
			continue;
		if (!head)
			px_head(b, "sentinel_target_info", "gauge",
				"1 for each target, labelled with its kernel's release (uname -r) as read from its memory.");
		head = true;
		StrBuf extra = {0};
		px_klabel(&extra, "kernel", k, strlen(k));
		px_series(b, "sentinel_target_info", in->tg[t].name, extra.s, 1);
		sb_free(&extra);
	}
}

/* A metric family: its HELP and TYPE lines go out before its first sample
 * (a family with no sample on any target has none), once for all targets. */
typedef struct PxFam {
	const char *name, *type, *help;
	bool headed;
} PxFam;

static void px_sample(StrBuf *b, PxFam *f, const char *target, const char *extra, double v)
{
	if (!f->headed)
		px_head(b, f->name, f->type, f->help);
	f->headed = true;
	px_series(b, f->name, target, extra, v);
}

static PxFam px_fam(const Metric *m, char *name, size_t n, const char *help)
{
	px_name(m, name, n);
	return (PxFam){name, m->kind == MK_COUNTER ? "counter" : "gauge", help ? help : m->desc, false};
}

static void px_host(StrBuf *b, const PxInput *in, unsigned i)
{
	char name[96];
	PxFam f = px_fam(&cat_metrics[in->b->host_m[i]], name, sizeof name, NULL);
	for (unsigned t = 0; t < in->ntg; t++) {
		const sn_world *w = in->tg[t].w;
		if (w && !isnan(w->host[i]))     /* unreadable or unavailable: no sample, as node_exporter */
			px_sample(b, &f, in->tg[t].name, NULL, w->host[i]);
	}
}

static void px_cpu(StrBuf *b, const PxInput *in, unsigned i, StrBuf *lab)
{
	char name[96];
	PxFam f = px_fam(&cat_metrics[in->b->cpu_m[i]], name, sizeof name, NULL);
	for (unsigned t = 0; t < in->ntg; t++) {
		const sn_world *w = in->tg[t].w;
		for (uint32_t c = 0; w && c < w->ncpus; c++) {
			double v = w->cpu[(size_t)i * w->max_cpus + c];
			if (!w->cpu_on[c] || isnan(v))
				continue;
			lab->len = 0;
			sb_printf(lab, "cpu=\"%u\"", c);
			px_sample(b, &f, in->tg[t].name, lab->s, v);
		}
	}
}

/* objects (disks, cgroups, ...): labelled by name */
static void px_obj(StrBuf *b, const PxInput *in, unsigned k, unsigned i, StrBuf *lab)
{
	char name[96];
	PxFam f = px_fam(&cat_metrics[in->b->obj_m[k][i]], name, sizeof name, NULL);
	for (unsigned t = 0; t < in->ntg; t++) {
		const sn_world *w = in->tg[t].w;
		const sn_objs *O = w ? &w->objs[k] : NULL;
		for (uint32_t s = 0; O && i < O->nslots && s < O->hi; s++) {
			double v = O->val[(size_t)i * O->cap + s];
			if (!O->on[s] || isnan(v))
				continue;
			lab->len = 0;
			px_klabel(lab, cat_entities[ENT_FIRST_OBJ + k].label, O->name[s], SN_OBJ_NAME);
			px_sample(b, &f, in->tg[t].name, lab->s, v);
		}
	}
}

/* tasks: labelled by pid and comm where the rules read them */
static void px_task(StrBuf *b, const PxInput *in, unsigned i, int pid_slot, StrBuf *lab)
{
	const Bundle *bd = in->b;
	const Metric *m = &cat_metrics[bd->task_m[i]];
	bool state = m->type == MT_STATE;
	char name[96];
	PxFam f = px_fam(m, name, sizeof name, state ? "The task's state (the /proc letter in label state): 1 per task." : NULL);
	for (unsigned t = 0; t < in->ntg; t++) {
		const sn_world *w = in->tg[t].w;
		for (uint32_t r = 0; w && r < w->tasks.n; r++) {
			double v = w->tasks.val[(size_t)i * w->tasks.cap + r];
			if (isnan(v))
				continue;
			lab->len = 0;
			if (pid_slot >= 0)
				sb_printf(lab, "pid=\"%.0f\",", w->tasks.val[(size_t)pid_slot * w->tasks.cap + r]);
			else
				sb_printf(lab, "task=\"0x%llx\",", (unsigned long long)w->tasks.ptr[r]);
			if (bd->comm)
				px_klabel(lab, "comm", w->tasks.comm[r], 16);
			else
				lab->s[--lab->len] = 0;   /* the trailing comma */
			if (state) {
				char s[2] = {(char)v, 0};
				sb_putc(lab, ',');
				px_label(lab, "state", s, 1);
				v = 1;
			}
			px_sample(b, &f, in->tg[t].name, lab->s, v);
		}
	}
}

static void px_catalog(StrBuf *b, const PxInput *in)
{
	const Bundle *bd = in->b;
	StrBuf lab = {0};
	for (unsigned i = 0; i < bd->nhost; i++)
		px_host(b, in, i);
	for (unsigned i = 0; i < bd->ncpu; i++)
		px_cpu(b, in, i, &lab);
	for (unsigned k = 0; k < ENT_NOBJ; k++)
		for (unsigned i = 0; i < bd->nobj[k]; i++)
			px_obj(b, in, k, i, &lab);
	int pid_slot = bd_task_col(bd, MET_TASK_PID);
	for (unsigned i = 0; i < bd->ntask; i++)
		if (cat_metrics[bd->task_m[i]].type != MT_STR && (int)i != pid_slot)   /* names and PIDs are labels */
			px_task(b, in, i, pid_slot, &lab);
	free(lab.s);
}

static void px_alerts(StrBuf *b, const PxInput *in)
{
	StrBuf lab = {0};
	px_head(b, "sentinel_alerts", "gauge", "Alerts pending or firing now (Prometheus' ALERTS).");
	for (unsigned t = 0; t < in->ntg; t++) {
		const PxTarget *T = &in->tg[t];
		size_t nown = T->rstate ? in->b->nrules : 0;
		for (size_t j = 0; j < nown + T->nealerts; j++) {
			/* each rule's own alert, then the per-entity rules' */
			const sn_rstate *st = j < nown ? &T->rstate[j] : &T->ealert[j - nown];
			size_t i = j < nown ? j : T->erule[j - nown];
			uint32_t ph = st->phase;
			if ((ph != SN_PENDING && ph != SN_FIRING) || i >= in->b->nrules)
				continue;
			const BdRule *r = &in->b->rules[i];
			lab.len = 0;
			px_label(&lab, "alertname", r->name, strlen(r->name));
			sb_putc(&lab, ',');
			px_label(&lab, "alertstate", ph == SN_FIRING ? "firing" : "pending", 7);
			sb_putc(&lab, ',');
			px_label(&lab, "severity", r->severity, strlen(r->severity));
			for (size_t k = 0; k < r->nlabels; k++) {
				sb_putc(&lab, ',');
				px_label(&lab, r->labels[k].key, r->labels[k].value, strlen(r->labels[k].value));
			}
			/* the entity it is about (a rule label of the same name wins) */
			NtEvent ev = {.rule = r, .entity = st->ev_entity, .comm = st->ev_comm};
			const char *key[NT_ENTITY_LABELS];
			char val[NT_ENTITY_LABELS][NT_LABEL_MAX];
			for (int k = 0, nk = nt_entity_labels(&ev, key, val); k < nk; k++) {
				bool own = false;
				for (size_t q = 0; q < r->nlabels; q++)
					own |= !strcmp(r->labels[q].key, key[k]);
				if (own)
					continue;
				sb_putc(&lab, ',');
				px_label(&lab, key[k], val[k], strlen(val[k]));
			}
			px_series(b, "sentinel_alerts", T->name, lab.s, 1);
		}
	}
	free(lab.s);
}

/* sentineld's own: per target (up, ticks, reads), then the daemon's (labelled
 * with the first target, as with one) */
static void px_self(StrBuf *b, const PxInput *in)
{
#define EACH(nm_, type, help, expr) do { \
		px_head(b, nm_, type, help); \
		for (unsigned t = 0; t < in->ntg; t++) { \
			const PxTarget *T = &in->tg[t]; \
			const sn_stats *S = T->stats; \
			(void)S; \
			px_series(b, nm_, T->name, NULL, (double)(expr)); \
		} \
	} while (0)
#define EACH_UP(nm_, type, help, expr) do { \
		bool any = false; \
		for (unsigned t = 0; t < in->ntg; t++) \
			any |= in->tg[t].stats != NULL; \
		if (!any) \
			break; \
		px_head(b, nm_, type, help); \
		for (unsigned t = 0; t < in->ntg; t++) { \
			const PxTarget *T = &in->tg[t]; \
			const sn_stats *S = T->stats; \
			if (S) \
				px_series(b, nm_, T->name, NULL, (double)(expr)); \
		} \
	} while (0)
	const char *t0 = in->ntg ? in->tg[0].name : "";
#define SELF(name, type, help, v) do { px_head(b, name, type, help); px_series(b, name, t0, NULL, (double)(v)); } while (0)
	EACH("sentinel_up", "gauge", "1 while sentineld reads the target; 0 while it is down.", T->w != NULL);
	px_info(b, in);
	SELF("sentinel_start_time_seconds", "gauge", "When sentineld started, Unix time.", in->started);
	SELF("sentinel_rules", "gauge", "Rules loaded.", in->b ? in->b->nrules : 0);
	SELF("sentinel_reloads_total", "counter", "Rule reloads that succeeded.", in->reloads);
	SELF("sentinel_reload_failures_total", "counter", "Rule reloads that failed; the running rules stayed.",
	     in->reload_failures);
	SELF("sentinel_last_reload_successful", "gauge", "1 when the last reload succeeded (or none was asked), else 0.",
	     in->last_reload_ok);
	SELF("sentinel_alert_events_total", "counter", "Alert events (pending, firing, resolved, cancelled) handed to the notifiers.", in->alerts);
	SELF("sentinel_jsonl_sync_errors_total", "counter", "Syncs of the JSON-lines alert log that failed.", in->jsonl_sync_errors);
	if (in->nphases) {              /* node_exporter's node_systemd_unit_state: one series a phase, 1 for the one it is in */
		px_head(b, "sentinel_target_phase", "gauge", "1 for the phase the target is in (finding, loading, running, "
			"handing_over, lost, paused), 0 for the others.");
		for (unsigned t = 0; t < in->ntg; t++)
			for (unsigned k = 0; k < in->nphases; k++) {
				StrBuf lab = {0};
				px_label(&lab, "phase", in->phases[k], strlen(in->phases[k]));
				px_series(b, "sentinel_target_phase", in->tg[t].name, lab.s,
					  in->tg[t].phase && !strcmp(in->tg[t].phase, in->phases[k]));
				free(lab.s);
			}
	}
	EACH("sentinel_target_errors_total", "counter", "Times the target was lost, or failed to come back.", T->errors);
	SELF("sentinel_jsonl_write_errors_total", "counter", "Alert lines the JSON-lines alert log did not take (the write failed).",
	     in->jsonl_write_errors);
	EACH_UP("sentinel_ticks_total", "counter", "Ticks the engine completed.", S->ticks);
	EACH_UP("sentinel_late_ticks_total", "counter", "Ticks that started more than one tick late.", S->late);
	EACH_UP("sentinel_tick_duration_seconds", "gauge", "How long the last tick took.", (double)S->last_tick_len_ns * 1e-9);
	EACH_UP("sentinel_tick_duration_max_seconds", "gauge", "The longest tick so far.", (double)S->max_tick_len_ns * 1e-9);
	EACH_UP("sentinel_read_errors_total", "counter", "Metric values that could not be read from the target's memory.", S->read_errors);
	EACH_UP("sentinel_tick_reads", "gauge", "Words the last tick read from the target's memory.", S->reads);
	EACH_UP("sentinel_ticks_over_budget_total", "counter", "Ticks cut off at the target's read budget (read_budget).", S->over_budget);
	EACH_UP("sentinel_ring_dropped_total", "counter", "Alert records dropped because the ring was full.", T->ring_dropped);
	if (in->delivery) {
		const NhStats *D = in->delivery;
		SELF("sentinel_delivery_sent_total", "counter", "Batches delivered to Alertmanager and webhooks.", D->sent);
		SELF("sentinel_delivery_failed_total", "counter", "Delivery attempts that failed (and will be retried).", D->failed);
		SELF("sentinel_delivery_dropped_total", "counter", "Batches given up on (the spool was full).", D->dropped);
		SELF("sentinel_delivery_queued", "gauge", "Batches waiting for delivery.", D->queued);
		SELF("sentinel_spool_bytes", "gauge", "Bytes in the delivery spool.", D->spool_bytes);
		SELF("sentinel_spool_errors_total", "counter", "Writes and syncs of the delivery spool that failed.", D->spool_errors);
	}
#undef SELF
#undef EACH
#undef EACH_UP
}

static void px_render_into(StrBuf *b, const void *ctx)
{
	const PxInput *in = ctx;
	if (in->b)
		px_catalog(b, in);
	if (in->b)
		px_alerts(b, in);
	px_self(b, in);
}

/* Out of memory: NULL (the scrape is answered 503), never an abort. */
char *px_render(const PxInput *in, size_t *len)
{
	return sb_build(px_render_into, in, len);
}

/* ---- serving -------------------------------------------------------------------------- */

static enum MHD_Result px_reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len,
				enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	enum MHD_Result ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

/* Ask the main loop and wait for its snapshot: a malloc'd copy, or NULL. */
static char *px_snapshot(PxServer *s, size_t *len)
{
	char *out = NULL;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)(PX_WAIT_NS / 1000000000ull);
	pthread_mutex_lock(&s->mu);
	uint64_t want = ++s->requested;
	uint64_t one = 1;
	ssize_t w = write(s->efd, &one, sizeof one);
	(void)w;                          /* a full counter wakes the loop just as well */
	while (s->published < want)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT)
			break;
	if (s->published >= want && s->text && (out = malloc(s->len + 1))) {
		memcpy(out, s->text, s->len + 1);
		*len = s->len;
	}
	pthread_mutex_unlock(&s->mu);
	return out;
}

static enum MHD_Result px_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				 const char *version, const char *upload, size_t *upload_len, void **req)
{
	static int first;
	(void)version, (void)upload, (void)upload_len;
	if (!*req) {                      /* headers only so far */
		*req = &first;
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return px_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "GET /metrics\n", 13, MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/"))
		return px_reply(c, MHD_HTTP_OK, "text/html",
				"<html><head><title>sentineld</title></head><body><h1>sentineld</h1>"
				"<p><a href=\"/metrics\">Metrics</a></p></body></html>\n",
				124, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return px_reply(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found; try /metrics\n", 24, MHD_RESPMEM_PERSISTENT);
	size_t len = 0;
	char *text = px_snapshot(cls, &len);
	if (!text)
		return px_reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
				"sentineld did not answer within 5 s\n", 36, MHD_RESPMEM_PERSISTENT);
	return px_reply(c, MHD_HTTP_OK, PX_CONTENT_TYPE, text, len, MHD_RESPMEM_MUST_FREE);
}

/* ADDR:PORT -> a listening socket */
static int px_listen(const char *spec, int *fd, unsigned *port, char *err, size_t n)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	if (!colon || !colon[1])
		return snprintf(err, n, "listen = %s: give ADDR:PORT, e.g. 127.0.0.1:9101", spec), -EINVAL;
	size_t hl = (size_t)(colon - spec);
	if (hl >= sizeof host)
		return snprintf(err, n, "listen = %s: the address is too long", spec), -EINVAL;
	memcpy(host, spec, hl);
	host[hl] = 0;
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {   /* [::1]:9101 */
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
	int r = getaddrinfo(*host ? host : NULL, colon + 1, &hints, &ai);
	if (r)
		return snprintf(err, n, "listen = %s: %s", spec, gai_strerror(r)), -EINVAL;
	int s = -1, e = 0;
	for (struct addrinfo *p = ai; p && s < 0; p = p->ai_next) {
		s = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
		int on = 1;
		if (s >= 0 && (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) ||
			       bind(s, p->ai_addr, p->ai_addrlen) || listen(s, 16))) {
			e = errno;
			close(s);
			s = -1;
		}
	}
	freeaddrinfo(ai);
	if (s < 0)
		return snprintf(err, n, "listen = %s: %s; choose a free port or another address", spec,
				strerror(e ? e : EADDRNOTAVAIL)), -(e ? e : EADDRNOTAVAIL);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(s, (struct sockaddr *)&ss, &sl);
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					       : ((struct sockaddr_in *)&ss)->sin_port);
	*fd = s;
	return 0;
}

int px_open(const char *listen, PxServer **out, char *err, size_t n)
{
	*out = NULL;
	PxServer *s = calloc(1, sizeof *s);
	if (!s)
		return snprintf(err, n, "out of memory"), -ENOMEM;
	s->lfd = s->efd = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	int r = px_listen(listen, &s->lfd, &s->port, err, n);
	if (r)
		goto out;
	if ((s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		r = -errno;
		snprintf(err, n, "eventfd: %s", strerror(errno));
		goto out;
	}
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
				  0, NULL, NULL, px_handle, s, MHD_OPTION_LISTEN_SOCKET, s->lfd,
				  MHD_OPTION_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	if (!s->mhd) {
		r = -EIO;
		snprintf(err, n, "listen = %s: libmicrohttpd could not start", listen);
	}
out:
	if (r)
		px_close(s);
	else
		*out = s;
	return r;
}

void px_close(PxServer *s)
{
	if (!s)
		return;
	if (s->mhd)
		MHD_stop_daemon(s->mhd);      /* closes the listening socket it was given */
	else if (s->lfd >= 0)
		close(s->lfd);
	if (s->efd >= 0)
		close(s->efd);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->text);
	free(s);
}

unsigned px_port(const PxServer *s) { return s->port; }
int px_fd(const PxServer *s) { return s->efd; }

int px_wanted(PxServer *s)
{
	uint64_t v;
	return read(s->efd, &v, sizeof v) == (ssize_t)sizeof v && v > 0;
}

void px_publish(PxServer *s, char *text, size_t len)
{
	pthread_mutex_lock(&s->mu);
	free(s->text);
	s->text = text;
	s->len = len;
	s->published = s->requested;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}
