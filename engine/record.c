/* record.c - recordings and their replay (see record.h). */
#include "record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_MAGIC "SNREC\0\0\1"
#define REC_TICK 0x4b434954u      /* "TICK" */

struct Recorder {
	FILE *f;
	const Bundle *b;
	uint64_t ticks, bytes;
	char *buf;
	size_t cap;
};

static int rec_put(Recorder *r, const void *p, size_t len)
{
	if (fwrite(p, 1, len, r->f) != len)
		return -EIO;
	r->bytes += len;
	return 0;
}

int rec_create(const char *path, const Bundle *b, uint64_t tick_ns, uint32_t max_cpus, Recorder **out, char *err,
	       size_t n)
{
	Recorder *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	r->b = b;
	if (!(r->f = fopen(path, "wbe"))) {   /* e: close-on-exec (the trial child inherits nothing) */
		int e = errno;
		snprintf(err, n, "%s: cannot create the recording: %s", path, strerror(e));
		free(r);
		return -e;
	}
	uint32_t h[5] = {b->nhost, b->ncpu, b->ntask, max_cpus, 0};
	int e = rec_put(r, REC_MAGIC, 8);
	e = e ? e : rec_put(r, &tick_ns, 8);
	e = e ? e : rec_put(r, h, sizeof h);
	const MetricId *lists[3] = {b->host_m, b->cpu_m, b->task_m};
	for (int l = 0; l < 3 && !e; l++)
		for (unsigned i = 0; i < h[l] && !e; i++) {
			const char *name = cat_metrics[lists[l][i]].name;
			uint16_t len = (uint16_t)strlen(name);
			e = rec_put(r, &len, 2);
			e = e ? e : rec_put(r, name, len);
		}
	if (e || fflush(r->f)) {
		snprintf(err, n, "%s: cannot write the recording: %s", path, strerror(e ? -e : errno));
		fclose(r->f);
		free(r);
		return e ? e : -EIO;
	}
	*out = r;
	return 0;
}

int rec_tick(Recorder *r, const sn_world *w)
{
	const Bundle *b = r->b;
	uint32_t nc = w->ncpus < w->max_cpus ? w->ncpus : w->max_cpus, nt = w->tasks.n;
	size_t onpad = (nc + 7) & ~(size_t)7;
	size_t body = 8 + 8 + 4 + 4 + 8 * (size_t)b->nhost + onpad + 8 * (size_t)b->ncpu * nc +
		      (size_t)nt * (8 + 16 + 8 * (size_t)b->ntask);
	if (body + 8 > r->cap) {
		char *p = realloc(r->buf, body + 8);
		if (!p)
			return -ENOMEM;
		r->buf = p;
		r->cap = body + 8;
	}
	char *p = r->buf;
#define PUT(src, len) (memcpy(p, (src), (len)), p += (len))
	uint32_t head[2] = {REC_TICK, (uint32_t)body};
	PUT(head, 8);
	PUT(&w->now, 8);
	PUT(&w->tick, 8);
	PUT(&nc, 4);
	PUT(&nt, 4);
	PUT(w->host, 8 * (size_t)b->nhost);
	memset(p, 0, onpad);
	for (uint32_t c = 0; c < nc; c++)
		p[c] = (char)(w->cpu_on[c] != 0);
	p += onpad;
	for (unsigned s = 0; s < b->ncpu; s++)
		PUT(w->cpu + (size_t)s * w->max_cpus, 8 * (size_t)nc);
	for (uint32_t t = 0; t < nt; t++) {
		PUT(&w->tasks.ptr[t], 8);
		PUT(w->tasks.comm[t], 16);
		for (unsigned s = 0; s < b->ntask; s++)
			PUT(&w->tasks.val[(size_t)s * w->tasks.cap + t], 8);
	}
#undef PUT
	int e = rec_put(r, r->buf, (size_t)(p - r->buf));
	if (e || fflush(r->f))
		return e ? e : -EIO;
	r->ticks++;
	return 0;
}

void rec_stats(const Recorder *r, uint64_t *ticks, uint64_t *bytes)
{
	*ticks = r->ticks;
	*bytes = r->bytes;
}

int rec_close(Recorder *r)
{
	if (!r)
		return 0;
	int e = fclose(r->f) ? -errno : 0;
	free(r->buf);
	free(r);
	return e;
}

/* ---- reading ---------------------------------------------------------------------------- */

struct RecReader {
	FILE *f;
	const char *path;
	RecInfo info;
	MetricId *m;              /* host, cpu, task names resolved */
	char *buf;
	size_t cap;
	uint64_t *key;
	char (*comm)[16];
	double *task;
	uint32_t tcap;
	uint64_t records;
};

int rec_open(const char *path, RecReader **out, char *err, size_t n)
{
	RecReader *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	r->path = path;
	char magic[8];
	uint32_t h[5];
	int e = -EINVAL;
	if (!(r->f = fopen(path, "rbe"))) {
		e = -errno;
		snprintf(err, n, "%s: cannot open the recording: %s", path, strerror(-e));
		goto fail;
	}
	if (fread(magic, 1, 8, r->f) != 8 || memcmp(magic, REC_MAGIC, 8) || fread(&r->info.tick_ns, 8, 1, r->f) != 1 ||
	    fread(h, sizeof h, 1, r->f) != 1 || h[0] > BD_TABLE_MAX || h[1] > BD_TABLE_MAX || h[2] > BD_TABLE_MAX ||
	    !h[3] || h[3] > 8192) {
		snprintf(err, n, "%s: not a Sentinel recording (make one with sentinel-inspect metrics --record, or "
			 "sentineld's [engine] record)", path);
		goto fail;
	}
	r->info.nhost = h[0], r->info.ncpu = h[1], r->info.ntask = h[2], r->info.max_cpus = h[3];
	size_t total = (size_t)h[0] + h[1] + h[2];
	if (!(r->m = calloc(total + 1, sizeof *r->m))) {
		e = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < total; i++) {
		uint16_t len;
		char name[256];
		if (fread(&len, 2, 1, r->f) != 1 || len >= sizeof name || fread(name, 1, len, r->f) != len) {
			snprintf(err, n, "%s: the recording's header is cut short", path);
			goto fail;
		}
		name[len] = 0;
		r->m[i] = cat_lookup(name, len);
	}
	r->info.host_m = r->m;
	r->info.cpu_m = r->m + h[0];
	r->info.task_m = r->m + h[0] + h[1];
	*out = r;
	return 0;
fail:
	rec_free(r);
	return e;
}

const RecInfo *rec_info(const RecReader *r) { return &r->info; }

int rec_next(RecReader *r, RecTick *t, char *err, size_t n)
{
	uint32_t head[2];
	size_t got = fread(head, 1, 8, r->f);
	if (got == 0)
		return 0;
	if (got != 8 || head[0] != REC_TICK) {
		if (got == 8) {
			snprintf(err, n, "%s: record %llu is damaged", r->path, (unsigned long long)r->records + 1);
			return -EINVAL;
		}
		return 0;                 /* cut short: the writer was stopped mid-record */
	}
	if (head[1] > r->cap) {
		char *p = realloc(r->buf, head[1]);
		if (!p)
			return -ENOMEM;
		r->buf = p;
		r->cap = head[1];
	}
	if (fread(r->buf, 1, head[1], r->f) != head[1])
		return 0;
	const RecInfo *I = &r->info;
	const char *p = r->buf, *end = r->buf + head[1];
	memcpy(&t->now_ns, p, 8), memcpy(&t->tick, p + 8, 8), memcpy(&t->ncpus, p + 16, 4), memcpy(&t->ntasks, p + 20, 4);
	p += 24;
	size_t onpad = ((size_t)t->ncpus + 7) & ~(size_t)7;
	size_t need = 8 * (size_t)I->nhost + onpad + 8 * (size_t)I->ncpu * t->ncpus +
		      (size_t)t->ntasks * (8 + 16 + 8 * (size_t)I->ntask);
	if (t->ncpus > I->max_cpus || (size_t)(end - p) != need) {
		snprintf(err, n, "%s: record %llu has the wrong size", r->path, (unsigned long long)r->records + 1);
		return -EINVAL;
	}
	/* the tables are 8-byte aligned in buf (realloc'd, offsets multiples of 8) */
	t->host = (const double *)(const void *)p;
	p += 8 * (size_t)I->nhost;
	t->cpu_on = (const uint8_t *)p;
	p += onpad;
	t->cpu = (const double *)(const void *)p;
	p += 8 * (size_t)I->ncpu * t->ncpus;
	if (t->ntasks > r->tcap) {
		uint32_t c = t->ntasks;
		free(r->key), free(r->comm), free(r->task);
		r->key = calloc(c, sizeof *r->key);
		r->comm = calloc(c, sizeof *r->comm);
		r->task = calloc((size_t)c * I->ntask + 1, sizeof *r->task);
		r->tcap = r->key && r->comm && r->task ? c : 0;
		if (!r->tcap)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->ntasks; i++) {
		memcpy(&r->key[i], p, 8);
		memcpy(r->comm[i], p + 8, 16);
		r->comm[i][15] = 0;
		memcpy(r->task + (size_t)i * I->ntask, p + 24, 8 * (size_t)I->ntask);
		p += 24 + 8 * (size_t)I->ntask;
	}
	t->task_key = r->key;
	t->task_comm = (const char (*)[16])r->comm;
	t->task = r->task;
	r->records++;
	return 1;
}

void rec_free(RecReader *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	free(r->m);
	free(r->buf);
	free(r->key);
	free(r->comm);
	free(r->task);
	free(r);
}
