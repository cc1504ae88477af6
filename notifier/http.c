/* http.c - Alertmanager and webhook delivery (see http.h). */
#include "http.h"

#include <curl/curl.h>
#include <jansson.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#define NH_MAX_DEST 16
#define NH_RESOLVED_RESEND_NS (15 * 60 * 1000000000ll)

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

/* Alertmanager batches sent as one request: at most this many, or bytes */
#define NH_COALESCE_MAX 1024
#define NH_COALESCE_BYTES (4u << 20)

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

static int64_t nh_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

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

/* ---- the spool: every batch on disk until delivered ------------------------------------------------ */

/* A write or sync of the spool failed (errno e): counted, logged the
 * first time and every 1000th.  what: its consequence. */
static void nh_spool_error(NtHttp *h, const char *where, int e, const char *what)
{
	h->st.spool_errors++;
	if (h->st.spool_errors == 1 || h->st.spool_errors % 1000 == 0)
		fprintf(stderr, "sentineld: the spool %s: %s; %s (%llu spool errors so far)\n", where, strerror(e), what,
			(unsigned long long)h->st.spool_errors);
}

#define NH_MEMORY_ONLY "alerts are kept in memory only"

static void nh_seg_free(NhSeg *g)
{
	if (g->fd >= 0)
		close(g->fd);
	free(g->path);
	free(g->tmp);
	free(g);
}

/* Append b's body to this flush's spool file of d (made on the first
 * batch, under a temporary name): nh_commit syncs it and gives it its
 * name, one sync per flush however many alerts it holds.  On failure the
 * batch stays in memory only, ready, and the failure counts. */
static void nh_spool_write(NtHttp *h, NhDest *d, NhBatch *b)
{
	b->ready = true;
	if (!d->spool)
		return;
	NhSeg *g = d->open_seg;
	if (!g) {
		if (!(g = calloc(1, sizeof *g)) || !(g->path = malloc(4200)) || !(g->tmp = malloc(4200))) {
			if (g)
				nh_seg_free(g);
			nh_spool_error(h, d->spool, errno, NH_MEMORY_ONLY);
			return;
		}
		snprintf(g->path, 4200, "%s/%020llu.json", d->spool, (unsigned long long)d->seq);
		snprintf(g->tmp, 4200, "%s/.%020llu.tmp", d->spool, (unsigned long long)d->seq);
		if ((g->fd = open(g->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
			nh_spool_error(h, d->spool, errno, NH_MEMORY_ONLY);
			nh_seg_free(g);
			return;
		}
		d->seq++;
		d->open_seg = g;
	}
	struct iovec v[2] = {{b->body, b->len}, {"\n", 1}};
	if (writev(g->fd, v, 2) != (ssize_t)b->len + 1) {
		nh_spool_error(h, d->spool, errno, NH_MEMORY_ONLY);
		/* no half line: the next batch's line must stay whole */
		if (ftruncate(g->fd, g->size) == 0)
			lseek(g->fd, g->size, SEEK_SET);
		return;
	}
	g->size += (off_t)b->len + 1;
	b->seg = g;
	g->refs++;
	h->spool_bytes += b->len;
	b->ready = false;
}

/* This flush's spool files: synced, renamed to their names, the folder
 * synced: then their batches may be sent.  A file that cannot be kept
 * leaves its batches in memory only. */
static void nh_commit(NtHttp *h)
{
	for (int i = 0; i < h->ndest; i++) {
		NhDest *d = &h->dest[i];
		NhSeg *g = d->open_seg;
		if (!g)
			continue;
		d->open_seg = NULL;
		bool ok = fdatasync(g->fd) == 0 && rename(g->tmp, g->path) == 0;
		int e = errno;
		close(g->fd);
		g->fd = -1;
		if (ok) {
			free(g->tmp);
			g->tmp = NULL;
			/* the rename lasts once the folder is synced; if that fails the
			 * batches are still sent, but a crash may lose their file */
			int dfd = open(d->spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd < 0 || fsync(dfd) != 0)
				nh_spool_error(h, d->spool, errno, "its newest alerts may not survive a crash");
			if (dfd >= 0)
				close(dfd);
		} else {
			nh_spool_error(h, d->spool, e, NH_MEMORY_ONLY);
			unlink(g->tmp);
		}
		for (NhBatch *b = d->head; b; b = b->next) {
			if (b->seg != g)
				continue;
			b->ready = true;
			if (!ok) {
				b->seg = NULL;
				h->spool_bytes -= b->len;
			}
		}
		if (!ok) {
			nh_seg_free(g);
		} else if (!g->refs) {           /* every batch in it went while it was written */
			unlink(g->path);
			nh_seg_free(g);
		}
	}
}

/* Let go of b; its spool file goes with its last batch, unless keep (a
 * stop: what is undelivered stays for the next start). */
static void nh_batch_release(NtHttp *h, NhBatch *b, bool keep)
{
	NhSeg *g = b->seg;
	if (g) {
		h->spool_bytes -= b->len;
		/* a file still being written stays: nh_commit ends it */
		if (--g->refs == 0 && !g->tmp) {
			if (!keep)
				unlink(g->path);
			nh_seg_free(g);
		}
	}
	free(b->body);
	free(b);
}

static void nh_batch_free(NtHttp *h, NhBatch *b)
{
	nh_batch_release(h, b, false);
}

/* ---- queues (under mu) -------------------------------------------------------------------- */

static void nh_append(NhDest *d, NhBatch *b)
{
	if (d->tail)
		d->tail->next = b;
	else
		d->head = b;
	d->tail = b;
	d->queued++;
}

static void nh_enqueue(NtHttp *h, NhDest *d, char *body)
{
	if (!body)
		return;
	NhBatch *b = calloc(1, sizeof *b);
	if (!b) {
		free(body);
		h->st.dropped++;
		return;
	}
	b->body = body;
	b->len = strlen(body);
	nh_spool_write(h, d, b);
	nh_append(d, b);
	/* over a bound: the oldest batch that is not in flight goes.  A request
	 * in flight carries the first req_n batches (nh_request_body joins
	 * them; nh_done pops exactly those on success): they are untouchable
	 * until it ends.  With nothing after them to drop, the queue stays over
	 * its bound until the request ends.  The last batch always stays. */
	while ((d->queued > h->c.queue_max || (h->c.spool_max && h->spool_bytes > h->c.spool_max)) && d->head &&
	       d->head->next) {
		NhBatch *prev = NULL, *victim = d->head;
		for (unsigned k = d->req ? d->req_n : 0; k && victim; k--)
			prev = victim, victim = victim->next;
		if (!victim)
			break;
		if (prev)
			prev->next = victim->next;
		else
			d->head = victim->next;
		if (d->tail == victim)
			d->tail = prev;
		nh_batch_free(h, victim);
		d->queued--;
		h->st.dropped++;
		if (h->st.dropped == 1 || h->st.dropped % 1000 == 0)
			fprintf(stderr, "sentineld: %s: the queue is full; %llu alert batches dropped so far\n", d->url,
				(unsigned long long)h->st.dropped);
	}
}

/* Remove the n batches at the head (a request's); returns how many went. */
static unsigned nh_pop(NtHttp *h, NhDest *d, unsigned n)
{
	unsigned k = 0;
	for (; k < n && d->head; k++) {
		NhBatch *b = d->head;
		d->head = b->next;
		if (!d->head)
			d->tail = NULL;
		d->queued--;
		nh_batch_free(h, b);
	}
	return k;
}

static int nh_name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* d's spool folder (spool/<hash of the URL>): made if new; what an earlier
 * sentineld left undelivered is queued first, in order. */
static int nh_spool_open(NtHttp *h, NhDest *d, char *err, size_t n)
{
	uint64_t x = 0xcbf29ce484222325ull;
	for (const char *p = d->url; *p; p++)
		x = (x ^ (unsigned char)*p) * 0x100000001b3ull;
	d->spool = malloc(strlen(h->c.spool) + 24);
	if (!d->spool)
		return -ENOMEM;
	sprintf(d->spool, "%s/%016llx", h->c.spool, (unsigned long long)x);
	if ((mkdir(h->c.spool, 0700) && errno != EEXIST) || (mkdir(d->spool, 0700) && errno != EEXIST)) {
		int e = errno;
		snprintf(err, n, "spool %s: %s (create it, or change [notify] spool)", d->spool, strerror(e));
		return -e;
	}
	struct dirent **ents;
	int k = scandir(d->spool, &ents, NULL, nh_name_cmp);
	if (k < 0) {
		int e = errno;
		snprintf(err, n, "spool %s: %s", d->spool, strerror(e));
		return -e;
	}
	unsigned loaded = 0;
	for (int i = 0; i < k; i++) {
		const char *nm = ents[i]->d_name;
		size_t l = strlen(nm);
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", d->spool, nm);
		if (nm[0] == '.' && l > 4 && !strcmp(nm + l - 4, ".tmp"))
			unlink(path);            /* cut short by a crash: never acknowledged */
		if (l != 25 || strcmp(nm + 20, ".json")) {
			free(ents[i]);
			continue;
		}
		unsigned long long seq = strtoull(nm, NULL, 10);
		FILE *f = fopen(path, "rbe");
		NhSeg *g = f ? calloc(1, sizeof *g) : NULL;
		char *line = NULL;
		size_t cap = 0;
		ssize_t len;
		if (g) {
			g->fd = -1;
			g->path = strdup(path);
		}
		while (g && g->path && (len = getline(&line, &cap, f)) > 0) {
			if (line[len - 1] == '\n')
				line[--len] = 0;
			NhBatch *b = len ? calloc(1, sizeof *b) : NULL;
			if (!b || !(b->body = strndup(line, (size_t)len))) {
				free(b);
				continue;
			}
			b->len = (size_t)len;
			b->seg = g;
			b->ready = true;
			g->refs++;
			h->spool_bytes += (size_t)len;
			nh_append(d, b);
			loaded++;
		}
		free(line);
		if (g && !g->refs) {
			unlink(path);            /* nothing in it */
			nh_seg_free(g);
		}
		if (f)
			fclose(f);
		if (seq >= d->seq)
			d->seq = seq + 1;
		free(ents[i]);
	}
	free(ents);
	if (loaded)
		fprintf(stderr, "sentineld: %s: %u undelivered alert batches from the spool, sent first\n", d->url, loaded);
	return 0;
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
static void nh_am_send(NtHttp *h, const NhActive *only)
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

void nh_flush(NtHttp *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	nh_commit(h);
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
}

static const char *nh_tg(const NhAlertState *s)
{
	return s->target ? s->target : "";
}

void nh_event(NtHttp *h, const NhAlertState *s)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	/* the alert's entry (one per alert name), or a free one */
	NhActive *a = NULL, *spare = NULL;
	for (size_t i = 0; i < h->nact && !a; i++) {
		if (h->act[i].name && !strcmp(h->act[i].name, s->name) && !strcmp(h->act[i].target, nh_tg(s)))
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
		if (!s->firing && a->used && a->name && !strcmp(a->name, s->name) && !strcmp(a->target, nh_tg(s)) &&
		    a->firing)
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
	for (int i = 0; i < h->ndest; i++)
		if (h->dest[i].kind == NH_WEBHOOK)
			nh_enqueue(h, &h->dest[i], nh_webhook_body(h, &ev));
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
}

/* ---- the delivery thread ----------------------------------------------------------------------- */

static size_t nh_discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p, (void)ctx;
	return size * n;
}

/* The body of a request for the ready batches at d's head: for
 * Alertmanager, consecutive batches (JSON arrays of alerts) joined into one
 * array, in order (*n of them); for a webhook the head alone. */
static const char *nh_request_body(NhDest *d, unsigned *n)
{
	*n = 1;
	if (d->kind != NH_AM || !d->head->next || !d->head->next->ready)
		return d->head->body;
	size_t len = 2;
	unsigned k = 0;
	for (NhBatch *b = d->head; b && b->ready && k < NH_COALESCE_MAX && len + b->len < NH_COALESCE_BYTES; b = b->next)
		len += b->len, k++;
	char *s = malloc(len + 1), *p = s;
	if (!s)
		return d->head->body;
	*p++ = '[';
	NhBatch *b = d->head;
	for (unsigned i = 0; i < k; i++, b = b->next) {
		if (b->len < 2 || b->body[0] != '[' || b->body[b->len - 1] != ']')
			break;                  /* not an array: sent on its own, next time */
		if (b->len > 2) {
			if (p > s + 1)
				*p++ = ',';
			memcpy(p, b->body + 1, b->len - 2);
			p += b->len - 2;
		}
		*n = i + 1;
	}
	*p++ = ']';
	*p = 0;
	if (*n <= 1) {
		free(s);
		*n = 1;
		return d->head->body;
	}
	d->req_body = s;
	return s;
}

/* Start the head request of d (under mu). */
static void nh_start(NtHttp *h, NhDest *d)
{
	CURL *c = curl_easy_init();
	if (!c)
		return;
	curl_easy_setopt(c, CURLOPT_URL, d->url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, nh_request_body(d, &d->req_n));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, d->hdr);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(h->c.timeout_ns / 1000000));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, nh_discard);
	curl_easy_setopt(c, CURLOPT_PRIVATE, d);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "sentineld");
	if (curl_multi_add_handle(h->multi, c) != CURLM_OK) {
		curl_easy_cleanup(c);
		free(d->req_body);
		d->req_body = NULL;
		return;
	}
	d->req = c;
}

/* A request ended: delivered (2xx), or kept for a retry with backoff.  A
 * 4xx but 429 means the receiver will never take it: dropped, counted. */
static void nh_done(NtHttp *h, NhDest *d, CURLcode rc)
{
	long status = 0;
	curl_easy_getinfo(d->req, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(h->multi, d->req);
	curl_easy_cleanup(d->req);
	d->req = NULL;
	free(d->req_body);
	d->req_body = NULL;
	if (rc == CURLE_OK && status >= 200 && status < 300) {
		h->st.sent += nh_pop(h, d, d->req_n);
		d->backoff_ms = 0;
	} else if (rc == CURLE_OK && status >= 400 && status < 500 && status != 429) {
		fprintf(stderr, "sentineld: %s refused %u alert batch%s (HTTP %ld); dropped\n", d->url, d->req_n,
			d->req_n == 1 ? "" : "es", status);
		h->st.dropped += nh_pop(h, d, d->req_n);
	} else {
		h->st.failed++;
		d->backoff_ms = d->backoff_ms ? (d->backoff_ms * 2 > 30000 ? 30000 : d->backoff_ms * 2) : 1000;
		d->retry_at = nh_mono() + (int64_t)d->backoff_ms * 1000000;
		if (d->backoff_ms == 1000 || d->backoff_ms == 30000)
			fprintf(stderr, "sentineld: %s: %s; retrying every %u s or sooner\n", d->url,
				rc != CURLE_OK ? curl_easy_strerror(rc) : "HTTP error", d->backoff_ms / 1000);
	}
}

static void *nh_thread(void *arg)
{
	NtHttp *h = arg;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		int64_t now = nh_mono();
		if (h->stop && (now >= h->stop_by || !h->st.queued))
			break;
		if (!h->stop && now >= h->next_resend) {
			nh_am_send(h, NULL);
			nh_commit(h);
			h->next_resend = now + (int64_t)h->c.resend_ns;
		}
		int64_t wake = h->next_resend;
		unsigned queued = 0;
		for (int i = 0; i < h->ndest; i++) {
			NhDest *d = &h->dest[i];
			queued += d->queued;
			if (!d->req && d->head && d->head->ready && now >= d->retry_at)
				nh_start(h, d);
			else if (!d->req && d->head && d->head->ready && d->retry_at < wake)
				wake = d->retry_at;
		}
		h->st.queued = queued;
		pthread_mutex_unlock(&h->mu);
		int ms = wake > now ? (int)((wake - now) / 1000000 + 1) : 0;
		curl_multi_poll(h->multi, NULL, 0, ms > 1000 ? 1000 : ms, NULL);
		int running;
		curl_multi_perform(h->multi, &running);
		CURLMsg *m;
		int left;
		pthread_mutex_lock(&h->mu);
		while ((m = curl_multi_info_read(h->multi, &left)))
			if (m->msg == CURLMSG_DONE) {
				NhDest *d = NULL;
				curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&d);
				if (d)
					nh_done(h, d, m->data.result);
			}
		pthread_mutex_unlock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* ---- setup --------------------------------------------------------------------------------------- */

static void nh_global(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int nh_add_urls(NtHttp *h, const char *list, int kind, char *err, size_t n)
{
	if (!list)
		return 0;
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return -ENOMEM;
	for (char *u = strtok_r(copy, ", ", &save); u; u = strtok_r(NULL, ", ", &save)) {
		if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
			snprintf(err, n, "%s: '%s' is not an http:// or https:// URL", kind == NH_AM ? "alertmanager" : "webhook",
				 u);
			free(copy);
			return -EINVAL;
		}
		if (h->ndest == NH_MAX_DEST) {
			snprintf(err, n, "at most %d alertmanager and webhook URLs", NH_MAX_DEST);
			free(copy);
			return -E2BIG;
		}
		NhDest *d = &h->dest[h->ndest++];
		size_t l = strlen(u);
		while (l && u[l - 1] == '/')
			u[--l] = 0;
		d->kind = kind;
		if (kind == NH_AM) {
			d->url = malloc(l + 16);
			if (d->url)
				snprintf(d->url, l + 16, "%s/api/v2/alerts", u);
		} else {
			d->url = strdup(u);
		}
		d->hdr = curl_slist_append(NULL, "Content-Type: application/json");
		if (!d->url || !d->hdr) {
			free(copy);
			return -ENOMEM;
		}
		int r = h->c.spool ? nh_spool_open(h, d, err, n) : 0;
		if (r) {
			free(copy);
			return r;
		}
	}
	free(copy);
	return 0;
}

int nh_open(const NhConfig *c, NtHttp **out, char *err, size_t n)
{
	*out = NULL;
	if (!c->alertmanager && !c->webhook)
		return 0;
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, nh_global);
	NtHttp *h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	h->c = *c;
	if (!h->c.resend_ns)
		h->c.resend_ns = 60000000000ull;
	if (!h->c.timeout_ns)
		h->c.timeout_ns = 10000000000ull;
	if (!h->c.queue_max)
		h->c.queue_max = 10000;
	pthread_mutex_init(&h->mu, NULL);
	h->multi = curl_multi_init();
	int r = h->multi ? 0 : -ENOMEM;
	if (!r)
		r = nh_add_urls(h, c->alertmanager, NH_AM, err, n);
	if (!r)
		r = nh_add_urls(h, c->webhook, NH_WEBHOOK, err, n);
	h->next_resend = nh_mono() + (int64_t)h->c.resend_ns;
	if (!r && pthread_create(&h->thread, NULL, nh_thread, h))
		r = -EAGAIN;
	if (r) {
		if (!*err)
			snprintf(err, n, "cannot start the alert delivery: %s", strerror(-r));
		nh_close(h, 0);
		return r;
	}
	h->thread_on = true;
	*out = h;
	return 0;
}

void nh_stats(NtHttp *h, NhStats *out)
{
	memset(out, 0, sizeof *out);
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	*out = h->st;
	unsigned q = 0;
	for (int i = 0; i < h->ndest; i++)
		q += h->dest[i].queued;
	out->queued = q;
	out->spool_bytes = h->spool_bytes;
	pthread_mutex_unlock(&h->mu);
}

void nh_close(NtHttp *h, uint64_t grace_ns)
{
	if (!h)
		return;
	if (h->thread_on) {
		pthread_mutex_lock(&h->mu);
		nh_commit(h);
		h->stop = true;
		h->stop_by = nh_mono() + (int64_t)grace_ns;
		unsigned q = 0;
		for (int i = 0; i < h->ndest; i++)
			q += h->dest[i].queued;
		h->st.queued = q;
		pthread_mutex_unlock(&h->mu);
		curl_multi_wakeup(h->multi);
		pthread_join(h->thread, NULL);
	}
	for (int i = 0; i < h->ndest; i++) {
		NhDest *d = &h->dest[i];
		if (d->req) {
			curl_multi_remove_handle(h->multi, d->req);
			curl_easy_cleanup(d->req);
		}
		free(d->req_body);
		while (d->head) {              /* undelivered: their spool files stay for the next start */
			NhBatch *b = d->head;
			d->head = b->next;
			nh_batch_release(h, b, true);
		}
		curl_slist_free_all(d->hdr);
		free(d->url);
		free(d->spool);
	}
	for (size_t i = 0; i < h->nact; i++) {
		free(h->act[i].name);
		free(h->act[i].target);
		free(h->act[i].labels);
		free(h->act[i].annotations);
	}
	free(h->act);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
