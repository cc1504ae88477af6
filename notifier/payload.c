/* payload.c - what the remote sinks send (http.h): the alerts Alertmanager
 * must keep hearing (one entry per alert: name, target and labels; re-sent) as API v2
 * alerts, and each event as a webhook payload (version 4). */
#include "http_int.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NH_RESOLVED_RESEND_NS (15 * 60 * 1000000000ll)

static int64_t nh_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* RFC 3339 with milliseconds, UTC */
static void nh_time(int64_t ns, char *buf, size_t n)
{
	time_t s = (time_t)(ns / 1000000000ll);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t l = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + l, n - l, ".%03dZ", (int)(ns % 1000000000ll / 1000000));
}

static const char *nh_tg(const NhAlertState *s)
{
	return s->target ? s->target : "";
}

/* Whether entry a is alert s: its name, target and labels. */
static bool nh_same_alert(const NhActive *a, const NhAlertState *s)
{
	return a->name && !strcmp(a->name, s->name) && !strcmp(a->target, nh_tg(s)) && a->labels &&
	       !strcmp(a->labels, s->labels_json);
}

/* One alert as Alertmanager's API v2 takes it. */
static json_t *nh_am_alert(const NtHttp *h, const NhActive *a, int64_t now)
{
	char starts[40], ends[40];
	nh_time(a->starts, starts, sizeof starts);
	int64_t keep = (int64_t)(4 * (h->c.tick_ns > h->c.resend_ns ? h->c.tick_ns : h->c.resend_ns));
	nh_time(a->firing ? now + keep : a->ends, ends, sizeof ends);
	json_t *o = json_object();
	json_object_set_new(o, "labels", json_loads(a->labels, 0, NULL));
	json_object_set_new(o, "annotations", json_loads(a->annotations, 0, NULL));
	json_object_set_new(o, "startsAt", json_string(starts));
	json_object_set_new(o, "endsAt", json_string(ends));
	if (h->c.external_url && *h->c.external_url)
		json_object_set_new(o, "generatorURL", json_string(h->c.external_url));
	return o;
}

/* Every active alert (or only `only`) to every Alertmanager. */
void nh_am_send(NtHttp *h, const NhActive *only)
{
	int64_t now = nh_wall();
	json_t *arr = json_array();
	for (size_t i = 0; i < h->nact; i++) {
		NhActive *a = &h->act[i];
		if (!a->used || (only && a != only))
			continue;
		if (!a->firing && now - a->ends > NH_RESOLVED_RESEND_NS) {
			a->used = false;        /* resolved long enough ago: the entry is free */
			free(a->name);
			free(a->target);
			a->name = a->target = NULL;
			continue;
		}
		json_array_append_new(arr, nh_am_alert(h, a, now));
	}
	if (json_array_size(arr))
		for (int i = 0; i < h->ndest; i++)
			if (h->dest[i].kind == NH_AM)
				nh_enqueue(h, &h->dest[i], json_dumps(arr, JSON_COMPACT));
	json_decref(arr);
}

/* A firing or resolved event as Alertmanager's webhook payload (version 4). */
static char *nh_webhook_body(const NtHttp *h, const NhAlertState *s)
{
	char starts[40], ends[40];
	nh_time(s->starts_ns, starts, sizeof starts);
	if (s->firing)
		snprintf(ends, sizeof ends, "0001-01-01T00:00:00Z");
	else
		nh_time(s->ends_ns, ends, sizeof ends);
	json_t *labels = json_loads(s->labels_json, 0, NULL), *ann = json_loads(s->annotations_json, 0, NULL);
	if (!labels || !ann) {
		json_decref(labels);
		json_decref(ann);
		return NULL;
	}
	/* the fingerprint: FNV-1a of the sorted labels, as 16 hex digits */
	char *canon = json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS), fp[24];
	uint64_t x = 0xcbf29ce484222325ull;
	for (const char *p = canon ? canon : ""; *p; p++)
		x = (x ^ (unsigned char)*p) * 0x100000001b3ull;
	free(canon);
	snprintf(fp, sizeof fp, "%016llx", (unsigned long long)x);
	const char *status = s->firing ? "firing" : "resolved";
	json_t *alert = json_pack("{s:s, s:O, s:O, s:s, s:s, s:s, s:s}", "status", status, "labels", labels,
				  "annotations", ann, "startsAt", starts, "endsAt", ends, "generatorURL",
				  h->c.external_url ? h->c.external_url : "", "fingerprint", fp);
	char gk[300];
	snprintf(gk, sizeof gk, "{}:{alertname=\"%s\"}", s->name);
	json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:{s:s}, s:O, s:O, s:s, s:[o]}", "version", "4", "groupKey", gk,
			      "truncatedAlerts", 0, "status", status, "receiver", "sentinel", "groupLabels",
			      "alertname", s->name, "commonLabels", labels, "commonAnnotations", ann, "externalURL",
			      h->c.external_url ? h->c.external_url : "", "alerts", alert);
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	json_decref(labels);
	json_decref(ann);
	return body;
}

void nh_event(NtHttp *h, const NhAlertState *s)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	/* the alert's entry (one per alert name, target and labels: a
	 * per-entity rule's alerts differ in their entity's), or a free one */
	NhActive *a = NULL, *spare = NULL;
	for (size_t i = 0; i < h->nact && !a; i++) {
		if (nh_same_alert(&h->act[i], s))
			a = &h->act[i];
		else if (!h->act[i].used && !spare)
			spare = &h->act[i];
	}
	if (!a && !spare) {
		size_t n = h->nact * 2 + 64;
		NhActive *p = realloc(h->act, n * sizeof *p);
		if (p) {
			memset(p + h->nact, 0, (n - h->nact) * sizeof *p);
			spare = p + h->nact;
			h->act = p;
			h->nact = n;
		}
	}
	if (!a)
		a = spare;
	NhAlertState ev = *s;
	if (a) {
		/* a resolved alert keeps the startsAt it fired with: Alertmanager
		 * and receivers match it by its labels and start */
		if (!s->firing && a->used && nh_same_alert(a, s) && a->firing)
			ev.starts_ns = a->starts;
		free(a->name);
		free(a->target);
		free(a->labels);
		free(a->annotations);
		*a = (NhActive){strdup(s->name), strdup(nh_tg(s)), strdup(s->labels_json), strdup(s->annotations_json),
				true, s->firing, ev.starts_ns, s->ends_ns};
		if (a->name && a->target && a->labels && a->annotations)
			nh_am_send(h, a);
		else
			h->st.dropped++;
	} else {
		h->st.dropped++;
	}
	for (int i = 0; i < h->ndest && !s->restored; i++)
		if (h->dest[i].kind == NH_WEBHOOK)
			nh_enqueue(h, &h->dest[i], nh_webhook_body(h, &ev));
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
}

json_t *nh_firing_starts(NtHttp *h, const char *target)
{
	if (!h)
		return NULL;
	json_t *o = json_object();
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < h->nact && o; i++) {
		const NhActive *a = &h->act[i];
		if (a->used && a->firing && a->labels && a->target && !strcmp(a->target, target ? target : ""))
			json_object_set_new(o, a->labels, json_integer(a->starts));
	}
	pthread_mutex_unlock(&h->mu);
	return o;
}
