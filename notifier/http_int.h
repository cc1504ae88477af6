/* http_int.h - what the remote sinks' files share (http.h is their
 * interface); private to notifier/:
 *
 *   http.c     the delivery thread and libcurl: requests, retries, setup, stop
 *   hqueue.c   a URL's queue: append, the bounds (the oldest batch not in
 *              flight dropped), the head's batches joined into one request
 *   spool.c    the spool: a flush's batches in one file, synced and renamed;
 *              what an earlier sentineld left, loaded within the bounds
 *   payload.c  what is sent: Alertmanager's alerts (the active ones, re-sent)
 *              and webhook payloads (version 4); nh_event
 *
 * Everything in an NtHttp is under its mu once the thread runs (nh_open's
 * spool load comes before it).
 */
#ifndef SENTINEL_HTTP_INT_H
#define SENTINEL_HTTP_INT_H

#include "http.h"

#include <curl/curl.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <pthread.h>

#define NH_MAX_DEST 16

enum { NH_AM, NH_WEBHOOK };

/* A spool file: the batches of one flush, one JSON text per line.  It
 * goes once every batch in it is delivered (or dropped). */
typedef struct NhSeg {
	char *path;               /* its name once committed */
	char *tmp;                /* its name while written (NULL once committed) */
	int fd;                   /* open while written, else -1 */
	off_t size;               /* bytes of whole lines in it */
	unsigned refs;            /* batches still queued from it */
} NhSeg;

typedef struct NhBatch {
	struct NhBatch *next;
	char *body;               /* JSON, owned */
	NhSeg *seg;               /* its spool file, or NULL (shared: refs) */
	size_t len;
	bool ready;               /* on disk for good (or no spool): it may be sent */
} NhBatch;

typedef struct NhDest {
	char *url;                /* what is POSTed to */
	int kind;
	NhBatch *head, *tail;
	unsigned queued;
	CURL *req;                /* the request in flight (head's), or NULL */
	char *req_body;           /* its body when it joins several batches (owned) */
	unsigned req_n;           /* batches from the head it carries */
	struct curl_slist *hdr;
	int64_t retry_at;         /* monotonic ns */
	unsigned backoff_ms;
	char *spool;              /* this URL's spool folder, or NULL */
	uint64_t seq;             /* the next spool file's number */
	NhSeg *open_seg;          /* the file this flush's batches go to, or NULL */
} NhDest;

/* What Alertmanager must keep hearing: one entry per alert key. */
typedef struct NhActive {
	char *name, *target, *labels, *annotations;
	bool used, firing;
	int64_t starts, ends;     /* wall ns */
} NhActive;

struct NtHttp {
	NhConfig c;
	pthread_t thread;
	bool thread_on;
	pthread_mutex_t mu;
	CURLM *multi;
	bool stop;
	int64_t stop_by;          /* monotonic ns: give up then */
	NhDest dest[NH_MAX_DEST];
	int ndest;
	NhActive *act;
	size_t nact;
	int64_t next_resend;      /* monotonic ns */
	NhStats st;
	uint64_t spool_bytes;     /* in all spool files */
};

/* hqueue.c */
void nh_append(NhDest *d, NhBatch *b);
/* Queue body (malloc'd, taken; NULL: nothing) on d, spooled, within the bounds. */
void nh_enqueue(NtHttp *h, NhDest *d, char *body);
unsigned nh_pop(NtHttp *h, NhDest *d, unsigned n);
const char *nh_request_body(NhDest *d, unsigned *n);

/* spool.c */
void nh_spool_write(NtHttp *h, NhDest *d, NhBatch *b);
void nh_commit(NtHttp *h);
void nh_batch_release(NtHttp *h, NhBatch *b, bool keep);
int nh_spool_open(NtHttp *h, NhDest *d, char *err, size_t n);

/* payload.c */
void nh_am_send(NtHttp *h, const NhActive *only);

#endif
