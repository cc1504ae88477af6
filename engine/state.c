/* state.c - a world saved to a file, and read back (see state.h). */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ES_HEADER 32u
/* a block is at most the history budget's ceiling and the tables: 64 GiB */
#define ES_MAX_PART (64ull << 30)

static int es_fail(char *err, size_t n, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int es_fail(char *err, size_t n, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return code;
}

static int es_put(int fd, const void *p, size_t len, uint64_t *h)
{
	const char *c = p;
	if (h)
		*h = bd_fnv1a(p, len, *h);
	while (len) {
		ssize_t w = write(fd, c, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -(w < 0 ? errno : EIO);
		c += w;
		len -= (size_t)w;
	}
	return 0;
}

/* One part: its length, its bytes, padding to 8. */
static int es_part(int fd, const void *p, uint64_t len, uint64_t *h)
{
	static const char zero[8];
	int r = es_put(fd, &len, 8, h);
	if (!r)
		r = es_put(fd, p, len, h);
	if (!r && len % 8)
		r = es_put(fd, zero, 8 - len % 8, h);
	return r;
}

static char *es_meta(const EsIdent *id, int64_t wall_ns, const WdParams *p, uint64_t base, const json_t *starts)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "target",
			      id->target, "release", id->release, "kaslr", (json_int_t)id->kaslr, "boot_id", id->boot_id,
			      "jiffies", (json_int_t)id->jiffies, "saved_at_ns", (json_int_t)wall_ns, "tick_ns",
			      (json_int_t)p->tick_ns, "max_cpus", (json_int_t)p->max_cpus, "task_cap",
			      (json_int_t)p->task_cap, "ring_cap", (json_int_t)p->ring_cap, "hist_max",
			      (json_int_t)p->hist_max, "obj_cap", (json_int_t)p->obj_cap, "read_budget",
			      (json_int_t)p->read_budget, "base", (json_int_t)base);
	if (o && starts)
		json_object_set_new(o, "starts", json_deep_copy(starts));
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

int es_write(const char *path, const EsIdent *id, int64_t wall_ns, const char *man, const WdParams *p,
	     const void *block, size_t len, uint64_t base, const json_t *starts, char *err, size_t n)
{
	char tmp[4096];
	char *meta = es_meta(id, wall_ns, p, base, starts);
	int fd = -1, r = 0;
	if (!meta || !man) {
		r = es_fail(err, n, -ENOMEM, "out of memory");
		goto out;
	}
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
		r = es_fail(err, n, -ENAMETOOLONG, "%s: name too long", path);
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = es_fail(err, n, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	/* the header last: the payload's length and checksum */
	char head[ES_HEADER] = {0};
	uint32_t fmt = ES_FORMAT, abi = SN_ABI_VERSION;
	uint64_t h = BD_FNV_INIT, plen = 0;
	size_t ml = strlen(meta), nl = strlen(man);
	if ((r = es_put(fd, head, sizeof head, NULL)) || (r = es_part(fd, meta, ml, &h)) ||
	    (r = es_part(fd, man, nl, &h)) || (r = es_part(fd, block, len, &h))) {
		r = es_fail(err, n, r, "%s: cannot write: %s", tmp, strerror(-r));
		goto out;
	}
	plen = 24 + ((ml + 7) & ~(size_t)7) + ((nl + 7) & ~(size_t)7) + ((len + 7) & ~(size_t)7);
	memcpy(head, ES_MAGIC, 8);
	memcpy(head + 8, &fmt, 4);
	memcpy(head + 12, &abi, 4);
	memcpy(head + 16, &plen, 8);
	memcpy(head + 24, &h, 8);
	errno = 0;
	if (lseek(fd, 0, SEEK_SET) != 0 || es_put(fd, head, sizeof head, NULL) || fsync(fd)) {
		int e = errno ? errno : EIO;
		r = es_fail(err, n, -e, "%s: cannot write: %s", tmp, strerror(e));
		goto out;
	}
	if (close(fd)) {
		fd = -1;
		r = es_fail(err, n, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path)) {
		r = es_fail(err, n, -errno, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto out;
	}
	/* the rename itself, on disk: the directory's fsync */
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd))
			r = es_fail(err, n, -errno, "%s: fsync: %s", slash ? dir : ".", strerror(errno));
		close(dfd);
	}
out:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(meta);
	return r;
}

/* The next part of the payload at *q (before end): its bytes and length. */
static const char *es_next(const char **q, const char *end, uint64_t *len)
{
	if (end - *q < 8)
		return NULL;
	memcpy(len, *q, 8);
	const char *d = *q + 8;
	uint64_t padded = (*len + 7) & ~7ull;
	if (*len > ES_MAX_PART || padded > (uint64_t)(end - d))
		return NULL;
	*q = d + padded;
	return d;
}

static int es_u64(json_t *o, const char *key, uint64_t *v)
{
	json_t *x = json_object_get(o, key);
	if (!json_is_integer(x))
		return -1;
	*v = (uint64_t)json_integer_value(x);
	return 0;
}

static int es_str(json_t *o, const char *key, char *out, size_t size)
{
	const char *s = json_string_value(json_object_get(o, key));
	if (!s || strlen(s) >= size)
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int es_meta_read(EsSaved *s, const char *text, size_t len)
{
	json_t *o = json_loadb(text, len, 0, NULL);
	uint64_t v[9] = {0};
	int bad = !o || es_str(o, "target", s->id.target, sizeof s->id.target) ||
		  es_str(o, "release", s->id.release, sizeof s->id.release) ||
		  es_str(o, "boot_id", s->id.boot_id, sizeof s->id.boot_id) || es_u64(o, "kaslr", &s->id.kaslr) ||
		  es_u64(o, "jiffies", &s->id.jiffies) || es_u64(o, "saved_at_ns", &v[0]) ||
		  es_u64(o, "tick_ns", &s->p.tick_ns) || es_u64(o, "max_cpus", &v[1]) || es_u64(o, "task_cap", &v[2]) ||
		  es_u64(o, "ring_cap", &v[3]) || es_u64(o, "hist_max", &s->p.hist_max) ||
		  es_u64(o, "obj_cap", &v[4]) || es_u64(o, "read_budget", &s->p.read_budget) ||
		  es_u64(o, "base", &s->base);
	json_t *st = o ? json_object_get(o, "starts") : NULL;
	if (json_is_object(st))
		s->starts = json_incref(st);
	json_decref(o);
	if (bad || v[1] > 65536 || v[2] > (1u << 24) || v[3] > (1u << 24) || v[4] > (1u << 20) || !s->p.tick_ns)
		return -1;
	s->wall_ns = (int64_t)v[0];
	s->p.max_cpus = (uint32_t)v[1];
	s->p.task_cap = (uint32_t)v[2];
	s->p.ring_cap = (uint32_t)v[3];
	s->p.obj_cap = (uint32_t)v[4];
	return 0;
}

int es_read(const char *path, EsSaved **out, char *err, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return es_fail(err, n, -errno, "%s: %s", path, strerror(errno));
	EsSaved *s = NULL;
	char *buf = NULL;
	int r = 0;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > ES_MAX_PART + (1u << 24)) {
		r = es_fail(err, n, -EINVAL, "%s: not a regular file of a state's size", path);
		goto out;
	}
	size_t len = (size_t)st.st_size, got = 0;
	if (!(buf = malloc(len ? len : 1))) {
		r = es_fail(err, n, -ENOMEM, "out of memory for %s (%zu MiB)", path, len >> 20);
		goto out;
	}
	while (got < len) {
		ssize_t k = read(fd, buf + got, len - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	uint32_t fmt, abi;
	uint64_t plen, sum;
	if (got != len || len < ES_HEADER || memcmp(buf, ES_MAGIC, 8)) {
		r = es_fail(err, n, -EINVAL, "%s: not a Sentinel state file", path);
		goto out;
	}
	memcpy(&fmt, buf + 8, 4);
	memcpy(&abi, buf + 12, 4);
	memcpy(&plen, buf + 16, 8);
	memcpy(&sum, buf + 24, 8);
	if (fmt != ES_FORMAT || abi != SN_ABI_VERSION) {
		r = es_fail(err, n, -ENOTSUP, "%s: state format %u of runtime ABI %u, this build reads format %u of ABI %u",
			    path, fmt, abi, ES_FORMAT, SN_ABI_VERSION);
		goto out;
	}
	if (plen != len - ES_HEADER || bd_fnv1a(buf + ES_HEADER, len - ES_HEADER, BD_FNV_INIT) != sum) {
		r = es_fail(err, n, -EBADMSG, "%s: truncated or corrupt (its length or checksum is wrong)", path);
		goto out;
	}
	const char *q = buf + ES_HEADER, *end = buf + len, *meta, *man, *blk;
	uint64_t ml, nl, bl;
	if (!(meta = es_next(&q, end, &ml)) || !(man = es_next(&q, end, &nl)) || !(blk = es_next(&q, end, &bl))) {
		r = es_fail(err, n, -EINVAL, "%s: malformed (its parts do not fit)", path);
		goto out;
	}
	if (!(s = calloc(1, sizeof *s)) || !(s->block = malloc(bl ? bl : 1))) {
		r = es_fail(err, n, -ENOMEM, "out of memory");
		goto out;
	}
	if (es_meta_read(s, meta, ml)) {
		r = es_fail(err, n, -EINVAL, "%s: malformed (what it belongs to)", path);
		goto out;
	}
	if ((r = bd_parse_manifest(man, nl, path, &s->b, err, n)))
		goto out;
	memcpy(s->block, blk, bl);
	s->len = bl;
	/* its sizes make the block it holds */
	WdLayout L;
	char why[256];
	if (wd_layout(s->b, &s->p, &L, why, sizeof why) || L.total != bl) {
		r = es_fail(err, n, -EINVAL, "%s: its rules and sizes do not make its block (%s)", path,
			    L.total != bl ? "another size" : why);
		goto out;
	}
	*out = s;
	s = NULL;
out:
	close(fd);
	free(buf);
	es_free(s);
	return r;
}

void es_free(EsSaved *s)
{
	if (!s)
		return;
	bd_free(s->b);
	json_decref(s->starts);
	free(s->block);
	free(s);
}

bool es_same_boot(const EsIdent *saved, const EsIdent *now, uint64_t gap_ns, char *why, size_t n)
{
	if (strcmp(saved->release, now->release) || saved->kaslr != now->kaslr) {
		snprintf(why, n, "another kernel or boot (%s, slide %#llx; saved: %s, slide %#llx)", now->release,
			 (unsigned long long)now->kaslr, saved->release, (unsigned long long)saved->kaslr);
		return false;
	}
	if (*saved->boot_id && *now->boot_id && strcmp(saved->boot_id, now->boot_id)) {
		snprintf(why, n, "another boot (boot id %s; saved: %s)", now->boot_id, saved->boot_id);
		return false;
	}
	/* jiffies go on within a boot, at 100 to 1000 Hz (a paused VM's stand still) */
	uint64_t most = gap_ns / 1000000ull + 2000;
	if (now->jiffies < saved->jiffies || now->jiffies - saved->jiffies > most) {
		snprintf(why, n, "another boot (jiffies %llu, saved %llu, %.1f s ago)", (unsigned long long)now->jiffies,
			 (unsigned long long)saved->jiffies, gap_ns / 1e9);
		return false;
	}
	return true;
}
