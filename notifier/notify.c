/* notify.c - alert sinks (see notify.h). */
#include "notify.h"
#include "http.h"
#include "journal.h"
#include "jsonl.h"
#include "tmpl.h"
#include "util.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct Notifier {
	NtConfig c;
	bool journal;             /* stderr is journald's stream: native entries (journal.h) */
	char *target;
	NlLog *jsonl;             /* the JSON-lines alert log: written and synced on its own thread (jsonl.h), or NULL */
	char *jsonl_path;
	NtHttp *http;             /* alertmanager and webhook, or NULL */
};

int nt_open(const NtConfig *c, Notifier **out, char *err, size_t n)
{
	Notifier *nt = calloc(1, sizeof *nt);
	if (!nt)
		return -ENOMEM;
	nt->c = *c;
	nt->target = strdup(c->target ? c->target : "target");
	if (c->jsonl && *c->jsonl) {
		int r = nl_open(c->jsonl, c->jsonl_queue_max, &nt->jsonl, err, n);
		if (r) {
			nt_close(nt);
			return r;
		}
		nt->jsonl_path = strdup(c->jsonl);
	}
	NhConfig hc = {.alertmanager = c->alertmanager, .webhook = c->webhook, .external_url = c->external_url,
		       .resend_ns = c->resend_ns, .tick_ns = c->tick_ns, .spool = c->spool,
		       .spool_max = c->spool_max ? c->spool_max : 64ull << 20};
	int r = nh_open(&hc, &nt->http, err, n);
	if (r) {
		nt_close(nt);
		return r;
	}
	nt->journal = nj_attached();
	nt->c.target = nt->target;
	nt->c.jsonl = nt->jsonl_path;
	*out = nt;
	return 0;
}

void nt_close(Notifier *nt)
{
	if (!nt)
		return;
	nt_flush(nt);
	nl_close(nt->jsonl, 5000000000ull);    /* five seconds for the disk to take what waits */
	nh_close(nt->http, 5000000000ull);     /* five more seconds to deliver what is queued */
	free(nt->target);
	free(nt->jsonl_path);
	free(nt);
}

/* The event's target: its own (several targets), or the notifier's. */
static const char *nt_target(const Notifier *nt, const NtEvent *e)
{
	return e->target ? e->target : nt->target;
}

static const char *nt_annotation(const BdRule *r, const char *key)
{
	for (size_t i = 0; i < r->nannotations; i++)
		if (!strcmp(r->annotations[i].key, key))
			return r->annotations[i].value;
	return NULL;
}

static int nt_priority(const char *severity)
{
	return !strcmp(severity, "critical") ? 2 : !strcmp(severity, "warning") ? 4 : 6;
}

static void nt_entity(const NtEvent *e, char *buf, size_t n)
{
	const char *key[NT_ENTITY_LABELS];
	char val[NT_ENTITY_LABELS][NT_LABEL_MAX];
	int k = nt_entity_labels(e, key, val);
	if (k == 0)
		buf[0] = 0;
	else if (k == 1)
		snprintf(buf, n, " %s %s", key[0], val[0]);
	else if (k == 2)
		snprintf(buf, n, " %s %s (%s)", key[0], val[0], val[1]);
	else
		snprintf(buf, n, " %s %s (%s, %s)", key[0], val[0], val[1], val[2]);
}

static void nt_remote(Notifier *nt, const NtEvent *e, const json_t *starts);

/* Into o: the entity's labels, then the rule's (which win). */
static json_t *nt_labels(const NtEvent *e, json_t *o)
{
	const char *key[NT_ENTITY_LABELS];
	char val[NT_ENTITY_LABELS][NT_LABEL_MAX];
	for (unsigned i = 0; i < e->ntlabels; i++)   /* the target's, then the rule's over them */
		json_object_set_new(o, e->tlabels[2 * i], json_string(e->tlabels[2 * i + 1]));
	for (int i = 0, k = nt_entity_labels(e, key, val); i < k; i++)
		json_object_set_new(o, key[i], json_string(val[i]));
	for (size_t i = 0; i < e->rule->nlabels; i++)
		json_object_set_new(o, e->rule->labels[i].key, json_string(e->rule->labels[i].value));
	return o;
}

/* Into o: the rule's annotations rendered for e (and its description). */
static json_t *nt_annotations(Notifier *nt, const NtEvent *e, json_t *o, bool description)
{
	const BdRule *r = e->rule;
	for (size_t i = 0; i < r->nannotations; i++) {
		char *t = nt_render(r->annotations[i].value, e, nt_target(nt, e));
		json_object_set_new(o, r->annotations[i].key, u_json_text(t ? t : ""));
		free(t);
	}
	if (description && r->description) {
		char *t = nt_render(r->description, e, nt_target(nt, e));
		json_object_set_new(o, "description", u_json_text(t ? t : ""));
		free(t);
	}
	if (e->kernel_log && !json_object_get(o, "kernel_log"))
		json_object_set_new(o, "kernel_log", u_json_text(e->kernel_log));
	return o;
}

/* The event as a journal entry with fields of its own: 0, or -errno (then
 * the caller writes the stderr line). */
static int nt_journal_event(Notifier *nt, const NtEvent *e, const char *msg, const char *summary, const char *val,
			    bool quiet)
{
	const BdRule *r = e->rule;
	const char *key[NT_ENTITY_LABELS];
	char ev[NT_ENTITY_LABELS][NT_LABEL_MAX], file[512];
	int k = nt_entity_labels(e, key, ev);
	snprintf(file, sizeof file, "%s:%u", r->file, r->line);
	NjField f[12];
	size_t n = 0;
	f[n++] = (NjField){"ALERT", r->name};
	f[n++] = (NjField){"ALERT_STATE", nt_kind_name(e->kind)};
	f[n++] = (NjField){"SEVERITY", r->severity};
	f[n++] = (NjField){"TARGET", nt_target(nt, e)};
	f[n++] = (NjField){"VALUE", val};
	f[n++] = (NjField){"RULE_FILE", file};
	f[n++] = (NjField){"SUMMARY", summary};
	for (int i = 0; i < k; i++)
		f[n++] = (NjField){!strcmp(key[i], "cpu") ? "ALERT_CPU" : !strcmp(key[i], "pid") ? "ALERT_PID"
				   : !strcmp(key[i], "device") ? "ALERT_DEVICE" : !strcmp(key[i], "fstype") ? "ALERT_FSTYPE"
				   : "ALERT_COMM", ev[i]};
	if (e->kernel_log && !quiet)
		f[n++] = (NjField){"KERNEL_LOG", e->kernel_log};
	return nj_send(quiet ? 6 : nt_priority(r->severity), msg, f, n);
}

void nt_event(Notifier *nt, const NtEvent *e)
{
	const BdRule *r = e->rule;
	bool quiet = e->kind == SN_EV_PENDING || e->kind == SN_EV_CANCELLED;
	if (nt->c.log && (!quiet || nt->c.log_pending)) {
		const char *sum = nt_annotation(r, "summary");
		char *text = sum ? nt_render(sum, e, nt_target(nt, e)) : NULL;
		char ent[NT_ENTITY_LABELS * NT_LABEL_MAX + 32], val[64], msg[1024];
		nt_entity(e, ent, sizeof ent);
		tp_format(e->value, TPF_NONE, val, sizeof val);
		snprintf(msg, sizeof msg, "%s %s%s%s (%s) value %s%s%s%s",
			 e->kind == SN_EV_FIRING ? "FIRING" : e->kind == SN_EV_RESOLVED ? "RESOLVED" : nt_kind_name(e->kind),
			 r->name, nt->c.several ? " on " : "", nt->c.several ? nt_target(nt, e) : "", r->severity, val, ent,
			 text ? ": " : "", text ? text : "");
		if (!nt->journal || nt_journal_event(nt, e, msg, text, val, quiet)) {
			if (nt->journal)      /* journald refused the entry: its stream still reads <N> */
				fprintf(stderr, "<%d>", quiet ? 6 : nt_priority(r->severity));
			fprintf(stderr, "sentineld: %s\n", msg);
		}
		free(text);
	}
	if (nt->jsonl) {
		char when[40];
		struct tm tm;
		gmtime_r(&e->when.tv_sec, &tm);
		size_t l = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(when + l, sizeof when - l, ".%03ldZ", e->when.tv_nsec / 1000000);
		json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:s}", "time", when, "tick", (json_int_t)e->tick,
				      "alert", r->name, "state", nt_kind_name(e->kind), "severity", r->severity, "target",
				      nt_target(nt, e), "rule", r->file);
		json_object_set_new(o, "value", e->value == e->value ? json_real(e->value) : json_null());
		const char *ek[NT_ENTITY_LABELS];
		char ev[NT_ENTITY_LABELS][NT_LABEL_MAX];
		if (nt_entity_labels(e, ek, ev) > 0)
			json_object_set_new(o, ek[0], ent_is_obj(r->entity) ? json_string(ev[0]) : json_integer(e->entity));
		json_object_set_new(o, "labels", nt_labels(e, json_object()));
		json_object_set_new(o, "annotations", nt_annotations(nt, e, json_object(), false));
		if (r->description) {
			char *t = nt_render(r->description, e, nt_target(nt, e));
			json_object_set_new(o, "description", u_json_text(t ? t : ""));
			free(t);
		}
		char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(o);
		if (line) {
			size_t len = strlen(line);
			line[len] = '\n';
			nl_append(nt->jsonl, line, len + 1);   /* written and synced by its thread (nt_flush: once a drain) */
			free(line);
		}
	}
	if (nt->http && (e->kind == SN_EV_FIRING || e->kind == SN_EV_RESOLVED))
		nt_remote(nt, e, NULL);
	fflush(stderr);
}

/* The alert as the remote sinks see it: labels (alertname, severity,
 * target, the rule's, the entity's) and rendered annotations. */
void nt_restored(Notifier *nt, const NtEvent *e, const json_t *starts)
{
	if (nt->http && e->kind == SN_EV_FIRING)
		nt_remote(nt, e, starts);
}

json_t *nt_firing_starts(Notifier *nt, const char *target)
{
	return nt ? nh_firing_starts(nt->http, target) : NULL;
}

/* starts: a restored alert's (nt_restored): its startsAt by labels, as
 * Alertmanager was told before the restart; NULL: a new event */
static void nt_remote(Notifier *nt, const NtEvent *e, const json_t *starts)
{
	const BdRule *r = e->rule;
	json_t *labels = nt_labels(e, json_pack("{s:s, s:s, s:s}", "alertname", r->name, "severity", r->severity,
						"target", nt_target(nt, e)));
	json_t *ann = nt_annotations(nt, e, json_object(), true);
	char *lj = json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS), *aj = json_dumps(ann, JSON_COMPACT);
	int64_t when = (int64_t)e->when.tv_sec * 1000000000ll + e->when.tv_nsec;
	json_t *was = starts && lj ? json_object_get(starts, lj) : NULL;
	NhAlertState s = {.name = r->name, .target = nt_target(nt, e), .labels_json = lj, .annotations_json = aj,
			  .firing = e->kind == SN_EV_FIRING, .restored = starts != NULL,
			  .starts_ns = json_is_integer(was) ? (int64_t)json_integer_value(was) : when, .ends_ns = when};
	if (lj && aj)
		nh_event(nt->http, &s);
	free(lj);
	free(aj);
	json_decref(labels);
	json_decref(ann);
}

void nt_flush(Notifier *nt)
{
	if (!nt)
		return;
	if (nt->jsonl)
		nl_sync(nt->jsonl);
	nh_flush(nt->http);
}

void nt_delivery(Notifier *nt, struct NhStats *out)
{
	nh_stats(nt ? nt->http : NULL, out);
}

uint64_t nt_jsonl_sync_errors(const Notifier *nt)
{
	NlStats s;
	nl_stats(nt ? nt->jsonl : NULL, &s);
	return s.sync_errors;
}

uint64_t nt_jsonl_write_errors(const Notifier *nt)
{
	NlStats s;
	nl_stats(nt ? nt->jsonl : NULL, &s);
	return s.write_errors;
}

int nt_settle(Notifier *nt, uint64_t timeout_ns)
{
	return nt && nt->jsonl ? nl_settle(nt->jsonl, timeout_ns) : 0;
}

void nt_log(Notifier *nt, int level, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	bool journal = nt ? nt->journal : nj_attached();
	if (!journal || nj_send(level, msg, NULL, 0)) {
		if (journal)
			fprintf(stderr, "<%d>", level);
		fprintf(stderr, "sentineld: %s\n", msg);
	}
	fflush(stderr);
}
