/* bundle.c - reading and writing bundles (see bundle.h). */
#define _GNU_SOURCE                 /* memfd_create */
#include "bundle.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BD_HEADER 32
#define BD_MAX_SIZE (1u << 30)

static int bd_fail(char *err, size_t n, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int bd_fail(char *err, size_t n, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return code;
}

const char *bd_ptx_part(const BdPtx *x, const char *end, size_t *len)
{
	const char *stop = x->text + x->len, *p = end ? end : x->text;
	if (p >= stop || (end && strncmp(p, BD_PTX_PART, strlen(BD_PTX_PART))))
		return NULL;
	if (!strncmp(p, BD_PTX_PART, strlen(BD_PTX_PART))) {
		const char *nl = memchr(p, '\n', (size_t)(stop - p));
		p = nl ? nl + 1 : stop;
	}
	const char *next = strstr(p, "\n" BD_PTX_PART);
	*len = next ? (size_t)(next + 1 - p) : (size_t)(stop - p);
	return p;
}

uint64_t bd_fnv1a(const void *data, size_t len, uint64_t h)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void bd_key_init(BdKey *k, const char *domain)
{
	k->h[0] = BD_FNV_INIT;
	k->h[1] = 0x84222325cbf29ce4ull;      /* a second, independent start */
	bd_key_add(k, domain, strlen(domain));
}

void bd_key_add(BdKey *k, const void *p, size_t n)
{
	k->h[0] = bd_fnv1a(&n, sizeof n, bd_fnv1a(p, n, k->h[0]));
	k->h[1] = bd_fnv1a(p, n, bd_fnv1a(&n, sizeof n, k->h[1]));
}

static const char *const bd_job_names[] = {
#define X(id, name) [BD_JOB_##id] = name,
	BD_JOB_KINDS(X)
#undef X
};

const char *bd_job_label(const Bundle *b, size_t j)
{
	if (j >= b->njobs)
		return "?";
	const BdJob *J = &b->jobs[j];
	if (J->kind == BD_JOB_HOST || J->kind == BD_JOB_CPU)
		return cat_metrics[J->metric].name;
	if (J->kind == BD_JOB_OBJS)
		return cat_entities[ENT_FIRST_OBJ + J->obj].plural;
	return bd_job_names[J->kind];
}

int bd_task_col(const Bundle *b, MetricId m)
{
	for (unsigned i = 0; i < b->ntask; i++)
		if (b->task_m[i] == m)
			return (int)i;
	return -1;
}

/* ---- the manifest ---------------------------------------------------------------- */

static json_t *bd_metric_list(const MetricId *m, unsigned n)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(a, json_string(cat_metrics[m[i]].name));
	return a;
}

static json_t *bd_kvs(const BdKV *kv, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, kv[i].key, json_string(kv[i].value));
	return o;
}

static json_t *bd_manifest(const Bundle *b)
{
	json_t *m = json_object();
	json_object_set_new(m, "format", json_integer(BD_FORMAT));
	json_object_set_new(m, "abi", json_integer(b->abi));
	json_object_set_new(m, "rulec", json_string(b->rulec_version ? b->rulec_version : "?"));
	json_object_set_new(m, "created", json_string(b->created ? b->created : ""));
	json_t *src = json_array();
	for (size_t i = 0; i < b->nsources; i++)
		json_array_append_new(src, json_string(b->sources[i]));
	json_object_set_new(m, "sources", src);
	json_t *t = json_object();
	json_object_set_new(t, "host", bd_metric_list(b->host_m, b->nhost));
	json_object_set_new(t, "cpu", bd_metric_list(b->cpu_m, b->ncpu));
	json_object_set_new(t, "task", bd_metric_list(b->task_m, b->ntask));
	for (int k = 0; k < ENT_NOBJ; k++)
		if (b->nobj[k])
			json_object_set_new(t, cat_entities[ENT_FIRST_OBJ + k].prefix, bd_metric_list(b->obj_m[k], b->nobj[k]));
	json_object_set_new(t, "comm", json_boolean(b->comm));
	json_object_set_new(t, "task_windows", json_integer(b->ntwin));
	json_object_set_new(m, "tables", t);
	json_t *h = json_array();
	for (size_t i = 0; i < b->nhist; i++) {
		json_t *o = json_pack("{s:s, s:f, s:b}", "metric", cat_metrics[b->hist[i].metric].name, "window",
				      b->hist[i].window, "ends", b->hist[i].ends);
		if (b->hist[i].ntrk) {
			json_t *tw = json_array();
			for (unsigned k = 0; k < b->hist[i].ntrk; k++)
				json_array_append_new(tw, json_real(b->hist[i].trk[k]));
			json_object_set_new(o, "tracked", tw);
		}
		json_array_append_new(h, o);
	}
	json_object_set_new(m, "histories", h);
	json_t *j = json_array();
	for (size_t i = 0; i < b->njobs; i++) {
		json_t *o = json_pack("{s:s}", "kind", bd_job_names[b->jobs[i].kind]);
		if (b->jobs[i].kind == BD_JOB_HOST || b->jobs[i].kind == BD_JOB_CPU)
			json_object_set_new(o, "metric", json_string(cat_metrics[b->jobs[i].metric].name));
		if (b->jobs[i].kind == BD_JOB_OBJS)
			json_object_set_new(o, "entity", json_string(cat_entities[ENT_FIRST_OBJ + b->jobs[i].obj].prefix));
		json_array_append_new(j, o);
	}
	json_object_set_new(m, "jobs", j);
	json_t *r = json_array();
	for (size_t i = 0; i < b->relos.n; i++) {
		const Relo *x = &b->relos.v[i];
		json_t *o = json_pack("{s:s, s:s}", "kind", relo_kind_name(x->kind), "a", x->a);
		if (*x->b)
			json_object_set_new(o, "b", json_string(x->b));
		if (x->bits)
			json_object_set_new(o, "bits", json_integer(x->bits));
		if (x->weak)
			json_object_set_new(o, "weak", json_true());
		json_array_append_new(r, o);
	}
	json_object_set_new(m, "relocations", r);
	json_t *u = json_object();
	for (size_t i = 0; i < b->relos.nuse; i++) {
		const ReloUse *x = &b->relos.use[i];
		json_t *need = json_array(), *opt = json_array();
		for (size_t k = 0; k < x->n; k++)
			json_array_append_new(x->required[k] ? need : opt, json_integer(x->idx[k]));
		json_object_set_new(u, x->fn, json_pack("{s:o, s:o}", "needs", need, "optional", opt));
	}
	json_object_set_new(m, "entry_points", u);
	json_t *rules = json_array();
	for (size_t i = 0; i < b->nrules; i++) {
		const BdRule *x = &b->rules[i];
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s, s:f, s:f}", "name", x->name, "group",
				      x->group ? x->group : "", "severity", x->severity, "file", x->file, "line",
				      (int)x->line, "col", (int)x->col, "expr", x->expr, "for", x->for_s, "clear_for",
				      x->clear_for_s);
		if (x->clear)
			json_object_set_new(o, "clear", json_string(x->clear));
		if (x->n_of) {
			json_object_set_new(o, "m_of", json_integer(x->m_of));
			json_object_set_new(o, "n_of", json_integer(x->n_of));
		}
		if (x->description)
			json_object_set_new(o, "description", json_string(x->description));
		json_object_set_new(o, "labels", bd_kvs(x->labels, x->nlabels));
		json_object_set_new(o, "annotations", bd_kvs(x->annotations, x->nannotations));
		if (x->ntargets)
			json_object_set_new(o, "targets", bd_kvs(x->targets, x->ntargets));
		json_t *ms = json_array();
		for (int k = 0; k < MET__COUNT; k++)
			if (met_has(&x->metrics, (MetricId)k))
				json_array_append_new(ms, json_string(cat_metrics[k].name));
		json_object_set_new(o, "metrics", ms);
		json_object_set_new(o, "entity", json_string(x->entity >= 0 ? cat_entities[x->entity].prefix : "host"));
		if (x->per_entity)              /* one alert per entity, at most max_alerts */
			json_object_set_new(o, "max_alerts", json_integer(x->max_alerts));
		char hash[17];
		snprintf(hash, sizeof hash, "%016llx", (unsigned long long)x->hash);
		json_object_set_new(o, "hash", json_string(hash));
		json_array_append_new(rules, o);
	}
	json_object_set_new(m, "rules", rules);
	json_t *code = json_object();
	json_object_set_new(code, "host_object_bytes", json_integer((json_int_t)b->host_len));
	json_t *ptx = json_array();
	for (size_t i = 0; i < b->nptx; i++) {
		size_t parts = 0, len;
		for (const char *p = bd_ptx_part(&b->ptx[i], NULL, &len); p; p = bd_ptx_part(&b->ptx[i], p + len, &len))
			parts++;
		json_array_append_new(ptx, json_pack("{s:s, s:I, s:I}", "arch", b->ptx[i].arch, "bytes",
						     (json_int_t)b->ptx[i].len, "parts", (json_int_t)parts));
	}
	json_object_set_new(code, "ptx", ptx);
	json_t *data = json_object();
	for (size_t i = 0; i < b->ndata; i++)
		json_object_set_new(data, b->data[i].name, json_integer((json_int_t)b->data[i].len));
	json_object_set_new(code, "data_bytes", data);
	json_object_set_new(m, "code", code);
	return m;
}

char *bd_manifest_json(const Bundle *b)
{
	json_t *m = bd_manifest(b);
	char *s = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(m);
	return s;
}

/* ---- writing ---------------------------------------------------------------------- */

static int bd_put(FILE *f, uint64_t *h, const void *p, size_t len)
{
	*h = bd_fnv1a(p, len, *h);
	return fwrite(p, 1, len, f) == len ? 0 : -EIO;
}

static int bd_section(FILE *f, uint64_t *h, uint32_t kind, const char *name, const void *data, size_t len)
{
	uint32_t hdr[2] = {kind, (uint32_t)strlen(name)};
	uint64_t l = len;
	static const char zero[8];
	int e = bd_put(f, h, hdr, sizeof hdr);
	if (!e) e = bd_put(f, h, &l, 8);
	if (!e) e = bd_put(f, h, name, hdr[1]);
	if (!e) e = bd_put(f, h, data, len);
	size_t pad = (8 - (hdr[1] + len) % 8) % 8;
	if (!e && pad) e = bd_put(f, h, zero, pad);
	return e;
}

/* b's bytes into f, which must be seekable (the header's checksum is
 * written last); 0 or -EIO / -ENOMEM. */
static int bd_emit(const Bundle *b, FILE *f)
{
	if (b->image)                                 /* made once (bd_image) */
		return fwrite(b->image, 1, b->image_len, f) == b->image_len ? 0 : -EIO;
	char *man = bd_manifest_json(b);
	if (!man)
		return -ENOMEM;
	/* header with a zero checksum first; rewritten once it is known */
	uint32_t nsec = 2 + (uint32_t)b->nptx + (uint32_t)b->ndata;
	unsigned char hdr[BD_HEADER] = {0};
	memcpy(hdr, BD_MAGIC, 8);
	int e = fwrite(hdr, 1, BD_HEADER, f) == BD_HEADER ? 0 : -EIO;
	uint64_t h = BD_FNV_INIT;
	if (!e) e = bd_section(f, &h, BD_SEC_MANIFEST, "manifest.json", man, strlen(man));
	if (!e) e = bd_section(f, &h, BD_SEC_HOST_OBJECT, "x86_64", b->host_obj, b->host_len);
	for (size_t i = 0; i < b->nptx && !e; i++)
		e = bd_section(f, &h, BD_SEC_PTX, b->ptx[i].arch, b->ptx[i].text, b->ptx[i].len);
	for (size_t i = 0; i < b->ndata && !e; i++)
		e = bd_section(f, &h, BD_SEC_DATA, b->data[i].name, b->data[i].bytes, b->data[i].len);
	long end = ftell(f);
	uint32_t fmt = BD_FORMAT;
	uint64_t payload = (uint64_t)end - BD_HEADER;
	memcpy(hdr + 8, &fmt, 4);
	memcpy(hdr + 12, &nsec, 4);
	memcpy(hdr + 16, &payload, 8);
	memcpy(hdr + 24, &h, 8);
	if (!e && (end < 0 || fseek(f, 0, SEEK_SET) || fwrite(hdr, 1, BD_HEADER, f) != BD_HEADER))
		e = -EIO;
	free(man);
	return e;
}

int bd_write(const Bundle *b, const char *path, char *err, size_t n)
{
	/* written beside it and renamed over it: never over a device or a pipe
	 * (as root, `-o /dev/null` would replace /dev/null with a file) */
	struct stat st;
	if (!stat(path, &st) && !S_ISREG(st.st_mode))
		return bd_fail(err, n, -EINVAL, "%s is not a regular file; give the bundle a file of its own "
			       "(--emit=manifest prints what a bundle would hold)", path);
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "wbe");
	if (!f) {
		int e = errno;
		return bd_fail(err, n, -e, "%s: cannot create: %s", path, strerror(e));
	}
	int e = bd_emit(b, f);
	if (fclose(f) && !e)
		e = -EIO;
	if (!e && rename(tmp, path))
		e = -errno;
	if (e) {
		unlink(tmp);
		return bd_fail(err, n, e, "%s: cannot write: %s", path, strerror(-e));
	}
	return 0;
}

int bd_write_fd(const Bundle *b, int fd, char *err, size_t n)
{
	int d = dup(fd);
	FILE *f = d >= 0 ? fdopen(d, "wb") : NULL;
	if (!f) {
		int e = errno;
		if (d >= 0)
			close(d);
		return bd_fail(err, n, -e, "cannot write the bundle: %s", strerror(e));
	}
	int e = bd_emit(b, f);
	if (fclose(f) && !e)
		e = -EIO;
	return e ? bd_fail(err, n, e, "cannot write the bundle: %s", strerror(-e)) : 0;
}

int bd_image(Bundle *b, char *err, size_t n)
{
	if (b->image)
		return 0;
	int fd = memfd_create("sentinel-bundle", MFD_CLOEXEC), e = 0;
	struct stat st;
	if (fd < 0)
		return bd_fail(err, n, -errno, "cannot write the bundle: %s", strerror(errno));
	if (!(e = bd_write_fd(b, fd, err, n)) && fstat(fd, &st))
		e = bd_fail(err, n, -errno, "cannot write the bundle: %s", strerror(errno));
	void *p = e ? NULL : malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!e && (!p || pread(fd, p, (size_t)st.st_size, 0) != (ssize_t)st.st_size)) {
		free(p);
		e = bd_fail(err, n, -ENOMEM, "cannot write the bundle: out of memory");
	}
	close(fd);
	if (!e) {
		b->image = p;
		b->image_len = (size_t)st.st_size;
	}
	return e;
}

void bd_image_drop(Bundle *b)
{
	free(b->image);
	b->image = NULL;
	b->image_len = 0;
}

/* ---- reading ------------------------------------------------------------------------ */

static char *bd_str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? strdup(s) : NULL;
}

static int bd_metric(json_t *v, MetricId *m)
{
	const char *s = json_string_value(v);
	if (!s)
		return -1;
	*m = cat_lookup(s, (unsigned)strlen(s));
	return *m == MET__COUNT ? -1 : 0;
}

static int bd_metrics(json_t *a, MetricId *out, unsigned max, unsigned *n)
{
	size_t i;
	json_t *v;
	*n = 0;
	if (!json_is_array(a) || json_array_size(a) > max)
		return -1;
	json_array_foreach(a, i, v) {
		if (bd_metric(v, &out[i]))
			return -1;
		(*n)++;
	}
	return 0;
}

static int bd_read_kvs(json_t *o, BdKV **out, size_t *n)
{
	*n = 0;
	*out = NULL;
	if (!o)
		return 0;
	if (!json_is_object(o))
		return -1;
	*out = calloc(json_object_size(o) + 1, sizeof **out);
	if (!*out)
		return -1;
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		if (!json_is_string(v))
			return -1;
		(*out)[*n].key = strdup(k);
		(*out)[*n].value = strdup(json_string_value(v));
		(*n)++;
	}
	return 0;
}

static int bd_manifest_read(Bundle *b, json_t *m, char *why, size_t wn)
{
#define BAD(...) do { snprintf(why, wn, __VA_ARGS__); return -1; } while (0)
	if (json_integer_value(json_object_get(m, "format")) != BD_FORMAT)
		BAD("manifest format %lld, this build reads %u", (long long)json_integer_value(json_object_get(m, "format")), BD_FORMAT);
	b->abi = (unsigned)json_integer_value(json_object_get(m, "abi"));
	b->rulec_version = bd_str(m, "rulec");
	b->created = bd_str(m, "created");
	json_t *src = json_object_get(m, "sources"), *v;
	size_t i;
	b->sources = calloc(json_array_size(src) + 1, sizeof *b->sources);
	json_array_foreach(src, i, v) b->sources[b->nsources++] = strdup(json_string_value(v) ? json_string_value(v) : "");
	json_t *t = json_object_get(m, "tables");
	if (bd_metrics(json_object_get(t, "host"), b->host_m, BD_TABLE_MAX, &b->nhost) ||
	    bd_metrics(json_object_get(t, "cpu"), b->cpu_m, BD_TABLE_MAX, &b->ncpu) ||
	    bd_metrics(json_object_get(t, "task"), b->task_m, BD_TABLE_MAX, &b->ntask))
		BAD("the value tables name a metric this build does not know (a newer rulec made it?)");
	for (int k = 0; k < ENT_NOBJ; k++) {
		json_t *ot = json_object_get(t, cat_entities[ENT_FIRST_OBJ + k].prefix);
		if (ot && bd_metrics(ot, b->obj_m[k], BD_OBJ_TABLE_MAX, &b->nobj[k]))
			BAD("the %s table names a metric this build does not know", cat_entities[ENT_FIRST_OBJ + k].prefix);
	}
	b->comm = json_is_true(json_object_get(t, "comm"));
	b->ntwin = (unsigned)json_integer_value(json_object_get(t, "task_windows"));
	if (b->ntwin > 64)
		BAD("the value tables hold %u task windows, more than this build allows", b->ntwin);
	json_t *h = json_object_get(m, "histories");
	b->hist = calloc(json_array_size(h) + 1, sizeof *b->hist);
	json_array_foreach(h, i, v) {
		if (bd_metric(json_object_get(v, "metric"), &b->hist[i].metric))
			BAD("history %zu names an unknown metric", i);
		/* a number, written 60 or 60.0 (json_real_value reads 60 as 0) */
		b->hist[i].window = json_number_value(json_object_get(v, "window"));
		if (!(b->hist[i].window > 0 && b->hist[i].window <= 1e9))
			BAD("history %zu has no window of a positive number of seconds", i);
		b->hist[i].ends = json_is_true(json_object_get(v, "ends"));
		json_t *tw = json_object_get(v, "tracked"), *x;
		size_t k;
		if (json_array_size(tw) > BD_HIST_TRACKS)
			BAD("history %zu has %zu tracked windows, more than this build allows", i, json_array_size(tw));
		json_array_foreach(tw, k, x) {
			double tw_s = json_number_value(x);
			if (!(tw_s > 0 && tw_s <= b->hist[i].window))
				BAD("history %zu's tracked window %zu is not within its window", i, k);
			b->hist[i].trk[b->hist[i].ntrk++] = tw_s;
		}
		b->nhist++;
	}
	json_t *j = json_object_get(m, "jobs");
	b->jobs = calloc(json_array_size(j) + 1, sizeof *b->jobs);
	json_array_foreach(j, i, v) {
		const char *k = json_string_value(json_object_get(v, "kind"));
		int kind = -1;
		for (int q = 0; q < BD_JOB__COUNT; q++)
			if (k && !strcmp(k, bd_job_names[q]))
				kind = q;
		if (kind < 0 || ((kind == BD_JOB_HOST || kind == BD_JOB_CPU) &&
				 bd_metric(json_object_get(v, "metric"), &b->jobs[i].metric)))
			BAD("job %zu is malformed", i);
		if (kind == BD_JOB_OBJS) {
			const char *e = json_string_value(json_object_get(v, "entity"));
			b->jobs[i].obj = -1;
			for (int q = 0; q < ENT_NOBJ; q++)
				if (e && !strcmp(e, cat_entities[ENT_FIRST_OBJ + q].prefix))
					b->jobs[i].obj = q;
			if (b->jobs[i].obj < 0)
				BAD("job %zu is over objects this build does not know", i);
		}
		b->jobs[i].kind = kind;
		b->njobs++;
	}
	json_t *r = json_object_get(m, "relocations");
	json_array_foreach(r, i, v) {
		ReloKind k;
		const char *ks = json_string_value(json_object_get(v, "kind")), *a = json_string_value(json_object_get(v, "a"));
		const char *bb = json_string_value(json_object_get(v, "b"));
		if (!ks || relo_kind_parse(ks, &k) || !a)
			BAD("relocation %zu is malformed", i);
		if (relo_intern(&b->relos, k, a, bb ? bb : "", (uint32_t)json_integer_value(json_object_get(v, "bits")),
				json_is_true(json_object_get(v, "weak"))) != (long)i)
			BAD("relocation %zu is a duplicate", i);
	}
	json_t *u = json_object_get(m, "entry_points");
	const char *fn;
	json_object_foreach(u, fn, v) {
		ReloUse *x = relo_use(&b->relos, fn);
		if (!x)
			BAD("out of memory");
		for (int req = 1; req >= 0; req--) {
			json_t *list = json_object_get(v, req ? "needs" : "optional"), *idx;
			size_t q;
			json_array_foreach(list, q, idx) {
				json_int_t k = json_integer_value(idx);
				if (k < 0 || (size_t)k >= b->relos.n || relo_use_add(x, (uint32_t)k, req))
					BAD("entry point %s names relocation %lld", fn, (long long)k);
			}
		}
	}
	json_t *rules = json_object_get(m, "rules");
	b->rules = calloc(json_array_size(rules) + 1, sizeof *b->rules);
	json_array_foreach(rules, i, v) {
		BdRule *x = &b->rules[b->nrules++];
		x->name = bd_str(v, "name");
		x->group = bd_str(v, "group");
		x->severity = bd_str(v, "severity");
		x->file = bd_str(v, "file");
		x->expr = bd_str(v, "expr");
		x->clear = bd_str(v, "clear");
		x->description = bd_str(v, "description");
		if (!x->name || !x->severity || !x->file || !x->expr)
			BAD("rule %zu lacks a name, severity, file or expression", i);
		x->line = (unsigned)json_integer_value(json_object_get(v, "line"));
		x->col = (unsigned)json_integer_value(json_object_get(v, "col"));
		x->for_s = json_number_value(json_object_get(v, "for"));
		x->clear_for_s = json_number_value(json_object_get(v, "clear_for"));
		x->m_of = (unsigned)json_integer_value(json_object_get(v, "m_of"));
		x->n_of = (unsigned)json_integer_value(json_object_get(v, "n_of"));
		if (bd_read_kvs(json_object_get(v, "labels"), &x->labels, &x->nlabels) ||
		    bd_read_kvs(json_object_get(v, "annotations"), &x->annotations, &x->nannotations) ||
		    bd_read_kvs(json_object_get(v, "targets"), &x->targets, &x->ntargets))
			BAD("rule %s has malformed labels or annotations", x->name);
		json_t *ms = json_object_get(v, "metrics"), *mv;
		size_t q;
		json_array_foreach(ms, q, mv) {
			MetricId id;
			if (bd_metric(mv, &id))
				BAD("rule %s reads an unknown metric", x->name);
			met_add(&x->metrics, id);
		}
		const char *ent = json_string_value(json_object_get(v, "entity"));
		x->entity = -1;
		for (int e = ENT_CPU; e < ENT__COUNT && ent; e++)
			if (!strcmp(ent, cat_entities[e].prefix))
				x->entity = e;
		json_t *ma = json_object_get(v, "max_alerts");
		if (ma && (!json_is_integer(ma) || json_integer_value(ma) < 1 || json_integer_value(ma) > BD_MAX_ALERTS ||
			   x->entity < ENT_CPU))
			BAD("rule %s: max_alerts is not a number from 1 to %u (of a rule about an entity)", x->name,
			    BD_MAX_ALERTS);
		x->per_entity = ma != NULL;
		x->max_alerts = ma ? (unsigned)json_integer_value(ma) : 0;
		const char *hs = json_string_value(json_object_get(v, "hash"));
		x->hash = hs ? strtoull(hs, NULL, 16) : 0;
	}
	return 0;
#undef BAD
}

int bd_parse(const void *data, size_t len, const char *name, Bundle **out, char *err, size_t n)
{
	const unsigned char *p = data;
	if (len < BD_HEADER || memcmp(p, BD_MAGIC, 8))
		return bd_fail(err, n, -EINVAL, "%s: not a Sentinel bundle (compile rules with: rulec -o FILE RULES...)", name);
	uint32_t fmt, nsec;
	uint64_t payload, sum;
	memcpy(&fmt, p + 8, 4);
	memcpy(&nsec, p + 12, 4);
	memcpy(&payload, p + 16, 8);
	memcpy(&sum, p + 24, 8);
	if (fmt != BD_FORMAT)
		return bd_fail(err, n, -ENOTSUP, "%s: bundle format %u, this build reads format %u: recompile the rules "
			       "with this version's rulec", name, fmt, BD_FORMAT);
	if (payload != len - BD_HEADER)
		return bd_fail(err, n, -EINVAL, "%s: truncated or padded: %zu payload bytes, the header says %llu", name,
			       len - BD_HEADER, (unsigned long long)payload);
	if (bd_fnv1a(p + BD_HEADER, len - BD_HEADER, BD_FNV_INIT) != sum)
		return bd_fail(err, n, -EBADMSG, "%s: checksum mismatch: the file is corrupt; recompile it", name);
	Bundle *b = calloc(1, sizeof *b);
	if (!b)
		return bd_fail(err, n, -ENOMEM, "out of memory");
	const unsigned char *q = p + BD_HEADER, *end = p + len;
	json_t *man = NULL;
	char why[256] = "";
	for (uint32_t s = 0; s < nsec; s++) {
		uint32_t kind, nl;
		uint64_t dl;
		if ((size_t)(end - q) < 16)
			goto bad;
		memcpy(&kind, q, 4);
		memcpy(&nl, q + 4, 4);
		memcpy(&dl, q + 8, 8);
		q += 16;
		if (nl > 64 || dl > (uint64_t)(end - q) || nl + dl > (uint64_t)(end - q))
			goto bad;
		char sname[65];
		memcpy(sname, q, nl);
		sname[nl] = 0;
		const unsigned char *d = q + nl;
		if (kind == BD_SEC_MANIFEST && !man) {
			json_error_t je;
			man = json_loadb((const char *)d, dl, 0, &je);
			if (!man) {
				snprintf(why, sizeof why, "the manifest is not JSON (%s)", je.text);
				goto bad;
			}
		} else if (kind == BD_SEC_HOST_OBJECT && !b->host_obj) {
			b->host_obj = malloc(dl ? dl : 1);
			if (!b->host_obj)
				goto bad;
			memcpy(b->host_obj, d, dl);
			b->host_len = dl;
		} else if (kind == BD_SEC_PTX && b->nptx < BD_MAX_PTX) {
			BdPtx *x = &b->ptx[b->nptx++];
			snprintf(x->arch, sizeof x->arch, "%.15s", sname);
			x->text = malloc(dl + 1);
			if (!x->text)
				goto bad;
			memcpy(x->text, d, dl);
			x->text[dl] = 0;
			x->len = dl;
		} else if (kind == BD_SEC_DATA) {
			if (b->ndata == BD_MAX_DATA || nl >= sizeof b->data[0].name) {
				snprintf(why, sizeof why, "a data table too many, or its name too long (%s)", sname);
				goto bad;
			}
			BdData *x = &b->data[b->ndata++];
			memcpy(x->name, sname, nl + 1);
			if (!(x->bytes = malloc(dl ? dl : 1)))
				goto bad;
			memcpy(x->bytes, d, dl);
			x->len = dl;
		}
		q = d + dl + (8 - (nl + dl) % 8) % 8;
	}
	if (!man) {
		snprintf(why, sizeof why, "no manifest");
		goto bad;
	}
	if (bd_manifest_read(b, man, why, sizeof why))
		goto bad;
	json_decref(man);
	*out = b;
	return 0;
bad:
	json_decref(man);
	bd_free(b);
	return bd_fail(err, n, -EINVAL, "%s: malformed bundle%s%s", name, *why ? ": " : "", why);
}

int bd_parse_manifest(const char *json, size_t len, const char *name, Bundle **out, char *err, size_t n)
{
	json_error_t je;
	json_t *man = json_loadb(json, len, 0, &je);
	if (!man)
		return bd_fail(err, n, -EINVAL, "%s: the manifest is not JSON (%s)", name, je.text);
	Bundle *b = calloc(1, sizeof *b);
	char why[256] = "";
	int r = 0;
	if (!b)
		r = bd_fail(err, n, -ENOMEM, "out of memory");
	else if (bd_manifest_read(b, man, why, sizeof why))
		r = bd_fail(err, n, -EINVAL, "%s: malformed manifest%s%s", name, *why ? ": " : "", why);
	json_decref(man);
	if (r) {
		bd_free(b);
		return r;
	}
	*out = b;
	return 0;
}

int bd_read(const char *path, Bundle **out, char *err, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bd_fail(err, n, -errno, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > BD_MAX_SIZE) {
		close(fd);
		return bd_fail(err, n, -EINVAL, "%s: not a regular file of at most 1 GiB", path);
	}
	size_t len = (size_t)st.st_size;
	char *buf = malloc(len ? len : 1);
	if (!buf) {
		close(fd);
		return bd_fail(err, n, -ENOMEM, "out of memory");
	}
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	int e = got == len ? bd_parse(buf, len, path, out, err, n) : bd_fail(err, n, -EIO, "%s: short read", path);
	free(buf);
	return e;
}

static void bd_free_kvs(BdKV *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

void bd_free(Bundle *b)
{
	if (!b)
		return;
	free(b->rulec_version);
	free(b->created);
	for (size_t i = 0; i < b->nsources; i++)
		free(b->sources[i]);
	free(b->sources);
	free(b->hist);
	free(b->jobs);
	relo_free(&b->relos);
	for (size_t i = 0; i < b->nrules; i++) {
		BdRule *x = &b->rules[i];
		free(x->name);
		free(x->group);
		free(x->severity);
		free(x->file);
		free(x->expr);
		free(x->clear);
		free(x->description);
		bd_free_kvs(x->labels, x->nlabels);
		bd_free_kvs(x->annotations, x->nannotations);
		bd_free_kvs(x->targets, x->ntargets);
	}
	free(b->rules);
	free(b->host_obj);
	for (size_t i = 0; i < b->nptx; i++)
		free(b->ptx[i].text);
	for (size_t i = 0; i < b->ndata; i++)
		free(b->data[i].bytes);
	free(b->image);
	free(b);
}
