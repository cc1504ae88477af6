/* jsonl.h - the JSON-lines alert log's writer (notify.c's [notify] jsonl),
 * private to the notifier.
 *
 * The loop formats a line and hands it over (nl_append); a thread of the
 * log's own writes the lines and syncs them, a group at a time.  A disk
 * that is slow, full or stalled (a hung NFS server, a FIFO nobody reads)
 * holds that thread, never the loop: lines wait in a queue bounded in
 * bytes, and past the bound a line is dropped and counted (it is then
 * one of write_errors, as a failed write is). */
#ifndef SENTINEL_JSONL_H
#define SENTINEL_JSONL_H

#include <stddef.h>
#include <stdint.h>

#define NL_QUEUE_MAX (16u << 20)   /* bytes of lines waiting for the disk, by default */

typedef struct NlLog NlLog;        /* opaque; owns its fd, thread and queued lines */

typedef struct NlStats {
	uint64_t write_errors;         /* lines the log did not take: a failed write, or dropped (queue full) */
	uint64_t dropped;              /* ... of them dropped */
	uint64_t sync_errors;          /* fdatasyncs that failed */
	uint64_t queued_bytes;         /* lines waiting now */
	uint64_t written;              /* lines written */
} NlStats;

/* Open (append, create 0640) path and start its writer; queue_max 0:
 * NL_QUEUE_MAX.  -errno with err set. */
int nl_open(const char *path, size_t queue_max, NlLog **out, char *err, size_t n);
/* Hand over line (len bytes, ending in '\n'): copied, never blocks. */
void nl_append(NlLog *l, const char *line, size_t len);
/* Sync what was handed over so far (on the writer: returns at once). */
void nl_sync(NlLog *l);
/* Wait up to timeout_ns for everything handed over to be written and
 * synced: 0, or -ETIMEDOUT. */
int nl_settle(NlLog *l, uint64_t timeout_ns);
void nl_stats(NlLog *l, NlStats *out);
/* Write what waits (up to timeout_ns), then stop; a writer stuck on the
 * disk past that is cancelled, and what it held is lost (and said). */
void nl_close(NlLog *l, uint64_t timeout_ns);

#endif
