/* http.h - the remote sinks: Alertmanager (API v2) and webhooks
 * (Alertmanager's webhook payload, version 4), delivered by libcurl on a
 * thread of their own.
 *
 *   alertmanager  every firing alert is POSTed to /api/v2/alerts of each
 *                 URL, and again every `resend` so Alertmanager does not
 *                 expire it (endsAt = now + 4 x max(tick, resend), as
 *                 Prometheus does); a resolved one with endsAt = the time it
 *                 resolved, re-sent for 15 minutes; pending ones never.
 *   webhook       each firing and resolved event, as one version 4 payload
 *                 (status, alerts[], groupLabels, commonLabels,
 *                 commonAnnotations, externalURL), so every receiver written
 *                 for Alertmanager works unchanged.
 *
 * Each URL has a queue of its own and at most one request in flight: a
 * slow or dead receiver delays nobody else, and nh_event never blocks (it
 * queues and wakes the thread).  A failed request is retried, in order,
 * with backoff from 1 s to 30 s; a queue over its bound drops its oldest
 * batch not in flight and counts it.  With a spool, every batch is on disk (fsync'd)
 * before it is queued and removed once the receiver took it: after an
 * outage, a restart or a SIGKILL, what is left is sent first, in order, at
 * least once, within the same bounds (a start that finds more loads the
 * newest that fit; the older ones are dropped and counted).  Without one,
 * what is queued is lost when sentineld stops.
 *
 * Ownership: an NtHttp owns its thread, its queues and its copies of what
 * it sends; nh_close() stops the thread after a last attempt to deliver.
 */
#ifndef SENTINEL_HTTP_H
#define SENTINEL_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_t;
typedef struct NtHttp NtHttp;

typedef struct NhConfig {
	const char *alertmanager;     /* comma-separated base URLs, or NULL */
	const char *webhook;          /* comma-separated URLs, or NULL */
	const char *external_url;     /* the webhook payload's externalURL, or "" */
	uint64_t resend_ns;           /* firing alerts re-sent this often (1 min) */
	uint64_t tick_ns;             /* the engine's tick, for endsAt */
	uint64_t timeout_ns;          /* one request (10 s) */
	unsigned queue_max;           /* batches a URL may hold (10,000) */
	const char *spool;            /* a folder: every batch is written there before it is queued and
				       * removed once delivered; a restart sends what is left first */
	uint64_t spool_max;           /* bytes the spool may hold (0: no bound but queue_max) */
} NhConfig;

typedef struct NhAlertState {
	const char *name;             /* alertname */
	const char *target;           /* its target: an alert is one rule on one target */
	const char *labels_json;      /* {"alertname":...,"severity":...,...}: the alert's identity */
	const char *annotations_json; /* {"summary":...} */
	bool firing;                  /* else resolved */
	bool restored;                /* firing since before a restart (state file): to Alertmanager only,
				       * no webhook (it is no new event) */
	int64_t starts_ns, ends_ns;   /* wall clock; ends_ns: the resolve time */
} NhAlertState;

int nh_open(const NhConfig *c, NtHttp **out, char *err, size_t n);
/* A firing or resolved event of alert a->name on a->target (an alert is
 * its name, target and labels: a per-entity rule has one per entity).  With
 * a spool it is written there but not yet synced: nothing is sent until
 * nh_flush, which syncs every event since the last flush at once (the
 * caller flushes after each drain of the alert ring). */
void nh_event(NtHttp *h, const NhAlertState *a);
void nh_flush(NtHttp *h);
/* The startsAt of every alert of target that fires now (as Alertmanager
 * was told), by labels: a JSON object {labels_json: starts_ns} (new
 * reference), for the state file; NULL without Alertmanager. */
struct json_t *nh_firing_starts(NtHttp *h, const char *target);

typedef struct NhStats {
	uint64_t sent, failed, dropped;   /* batches delivered, failed attempts, dropped */
	uint64_t spool_errors;            /* failed writes and syncs of the spool (a file's, its folder's) */
	unsigned queued;                  /* batches waiting now */
	uint64_t spool_bytes;
} NhStats;
void nh_stats(NtHttp *h, NhStats *out);
/* Stop: one more chance to deliver for up to `grace_ns`, then drop the rest. */
void nh_close(NtHttp *h, uint64_t grace_ns);

#endif
