/* spool.c - the remote sinks' spool (http.h): every batch on disk until
 * delivered, one file per flush and URL; what an earlier sentineld left is
 * queued first at the start. */
#include "http_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

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
void nh_spool_write(NtHttp *h, NhDest *d, NhBatch *b)
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
void nh_commit(NtHttp *h)
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
void nh_batch_release(NtHttp *h, NhBatch *b, bool keep)
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

static int nh_name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* What one spool file gives at the start: of its batches (one JSON text a
 * line, in order) the newest that fit max_n batches and max_bytes bytes,
 * at least min_keep of them, as a chain; the older ones only counted. */
typedef struct NhLoad {
	unsigned max_n, min_keep;
	uint64_t max_bytes;
	NhBatch *head, *tail;     /* what is kept, in order */
	unsigned n, dropped;
	uint64_t bytes;
} NhLoad;

/* Read f into l: memory for what is kept, never for the whole file (a
 * batch over the bounds goes as the next one comes). */
static void nh_load_read(FILE *f, NhLoad *l)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (!len)
			continue;
		if (!l->max_n) {
			l->dropped++;
			continue;
		}
		NhBatch *b = calloc(1, sizeof *b);
		if (!b || !(b->body = strndup(line, (size_t)len))) {
			free(b);
			continue;
		}
		b->len = (size_t)len;
		b->ready = true;
		if (l->tail)
			l->tail->next = b;
		else
			l->head = b;
		l->tail = b;
		l->n++;
		l->bytes += b->len;
		while (l->n > l->max_n || (l->bytes > l->max_bytes && l->n > l->min_keep)) {
			NhBatch *old = l->head;
			l->head = old->next;
			if (!l->head)
				l->tail = NULL;
			l->n--;
			l->bytes -= old->len;
			l->dropped++;
			free(old->body);
			free(old);
		}
	}
	free(line);
}

/* Spool file g keeps only the batches loaded from it (l), its older ones
 * dropped at the start: written anew under its temporary name, synced and
 * renamed over it, so that the next start does not find them again.  On
 * failure (counted, logged) the file stays whole. */
static void nh_load_rewrite(NtHttp *h, NhDest *d, NhSeg *g, const NhLoad *l, unsigned long long seq)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s/.%020llu.tmp", d->spool, seq);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0;
	for (const NhBatch *b = l->head; ok && b; b = b->next) {
		struct iovec v[2] = {{b->body, b->len}, {"\n", 1}};
		ok = writev(fd, v, 2) == (ssize_t)b->len + 1;
	}
	ok = ok && fdatasync(fd) == 0 && rename(tmp, g->path) == 0;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (!ok) {
		nh_spool_error(h, d->spool, e, "the alerts dropped from it may be sent after the next start");
		unlink(tmp);
		return;
	}
	int dfd = open(d->spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0)
		nh_spool_error(h, d->spool, errno, "the alerts dropped from it may be sent after a crash");
	if (dfd >= 0)
		close(dfd);
}

/* d's spool folder (spool/<hash of the URL>): made if new; what an earlier
 * sentineld left undelivered is queued first, in order, within the bounds
 * nh_enqueue keeps (queue_max batches, spool_max bytes in all the spool,
 * and at least one batch): the files are read newest first, and the oldest
 * batches that do not fit are dropped and counted as the queue's drops
 * are, their files removed (or written anew without them), and logged
 * once. */
int nh_spool_open(NtHttp *h, NhDest *d, char *err, size_t n)
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
	NhBatch *keep = NULL;             /* what is loaded, in order */
	unsigned loaded = 0, dropped = 0;
	for (int i = k - 1; i >= 0; i--) {
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
		if (seq >= d->seq)
			d->seq = seq + 1;
		free(ents[i]);
		FILE *f = fopen(path, "rbe");
		if (!f)
			continue;
		NhLoad ld = {.min_keep = !loaded, .max_bytes = UINT64_MAX};
		if (!dropped && loaded < h->c.queue_max)
			ld.max_n = h->c.queue_max - loaded;
		if (h->c.spool_max)
			ld.max_bytes = h->spool_bytes < h->c.spool_max ? h->c.spool_max - h->spool_bytes : 0;
		nh_load_read(f, &ld);
		fclose(f);
		dropped += ld.dropped;
		NhSeg *g = ld.n ? calloc(1, sizeof *g) : NULL;
		if (g && !(g->path = strdup(path))) {
			free(g);
			g = NULL;
		}
		if (!g) {
			while (ld.head) {
				NhBatch *b = ld.head;
				ld.head = b->next;
				free(b->body);
				free(b);
			}
			if (!ld.n)
				unlink(path);    /* nothing in it, or nothing that fits */
			continue;
		}
		g->fd = -1;
		for (NhBatch *b = ld.head; b; b = b->next) {
			b->seg = g;
			g->refs++;
		}
		h->spool_bytes += ld.bytes;
		loaded += ld.n;
		if (ld.dropped)
			nh_load_rewrite(h, d, g, &ld, seq);
		ld.tail->next = keep;
		keep = ld.head;
	}
	free(ents);
	while (keep) {
		NhBatch *b = keep;
		keep = b->next;
		b->next = NULL;
		nh_append(d, b);
	}
	if (dropped) {
		h->st.dropped += dropped;
		char bytes[64] = "";
		if (h->c.spool_max)
			snprintf(bytes, sizeof bytes, ", spool_max %llu bytes", (unsigned long long)h->c.spool_max);
		fprintf(stderr, "sentineld: %s: the spool holds more than the queue's bounds (%u batches%s): its %u oldest "
			"alert batches dropped, %u sent first\n", d->url, h->c.queue_max, bytes, dropped, loaded);
	} else if (loaded) {
		fprintf(stderr, "sentineld: %s: %u undelivered alert batches from the spool, sent first\n", d->url, loaded);
	}
	return 0;
}
