/* prom.h - /metrics: what Sentinel reads, for Prometheus to scrape.
 *
 * The Prometheus text exposition format (version 0.0.4) over HTTP, served
 * by libmicrohttpd on a thread of its own ([metrics] listen = ADDR:PORT).
 * That thread never touches the engine, whose tables a reload may replace
 * at any moment: a scrape asks the main loop for a snapshot (px_fd becomes
 * readable), the main loop renders one from the engine's last complete
 * tick (px_render) and hands it over (px_publish), and the scrape returns
 * it.  A main loop that does not answer within 5 s makes the scrape a 503.
 *
 * Served: every catalog metric the loaded rules read, per target (one
 * family for all the targets sentineld watches) and per CPU or task (labels target, cpu, pid, comm), named sentinel_<metric>
 * with Prometheus' unit and _total suffixes; the alerts pending and firing
 * (sentinel_alerts, as Prometheus' ALERTS); sentineld's own counters (ticks,
 * late ticks, tick time, read errors, ring drops, deliveries, the spool).
 *
 * Ownership: a PxServer owns its socket, thread and the last snapshot;
 * px_close() stops the thread first.  px_render's text is the caller's.
 */
#ifndef SENTINEL_PROM_H
#define SENTINEL_PROM_H

#include "bundle.h"
#include "snrt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct NhStats;

typedef struct PxServer PxServer;

/* Listen on ADDR:PORT ("127.0.0.1:9101", "[::1]:9101", ":9101" for every
 * address; port 0 picks one, px_port says which).  0 or -errno with a
 * message in err. */
int px_open(const char *listen, PxServer **out, char *err, size_t n);
void px_close(PxServer *s);
unsigned px_port(const PxServer *s);
/* Readable while a scrape waits for a snapshot. */
int px_fd(const PxServer *s);
/* The main loop's side: whether a scrape is waiting (clears px_fd). */
int px_wanted(PxServer *s);
/* Hand the waiting scrapes text (malloc'd, len bytes; the server takes it). */
void px_publish(PxServer *s, char *text, size_t len);

/* One target in a snapshot; a NULL world means it is down (only
 * sentineld's own metrics for it then). */
typedef struct PxTarget {
	const char *name;             /* the target label */
	const char *kernel;           /* its kernel's release (uname -r), or NULL before it was found */
	const sn_world *w;            /* eng_values(), or NULL */
	const sn_rstate *rstate;      /* [b->nrules], or NULL */
	const sn_rstate *ealert;      /* [nealerts] the per-entity rules' alerts (eng_entity_states), */
	const uint32_t *erule;        /* [nealerts] ... and their rules */
	size_t nealerts;
	const sn_stats *stats;        /* or NULL */
	uint64_t ring_dropped;
	const char *phase;            /* what sentineld is doing with it (one of PxInput.phases), or NULL */
	uint64_t errors;              /* how many times it was lost or failed to come back */
} PxTarget;

/* What a snapshot shows: every target's values, alerts and counters, in
 * one family per metric. */
typedef struct PxInput {
	const Bundle *b;
	const PxTarget *tg;           /* [ntg] */
	unsigned ntg;
	const struct NhStats *delivery;
	uint64_t reloads, alerts;
	uint64_t reload_failures;     /* reloads that failed (the running rules stayed) */
	bool last_reload_ok;          /* the last reload succeeded, or none was asked */
	uint64_t jsonl_sync_errors;   /* nt_jsonl_sync_errors */
	uint64_t jsonl_write_errors;  /* nt_jsonl_write_errors */
	double started;               /* Unix time sentineld started */
	const char *const *phases;    /* [nphases]: every phase a target can be in */
	unsigned nphases;
} PxInput;

/* Render the exposition text (malloc'd; *len its length), or NULL (out of memory). */
char *px_render(const PxInput *in, size_t *len);

#endif
