/* config.c - sentineld's configuration (see config.h). */
#include "config.h"
#include "units.h"

#include <ini.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#ifndef SENTINEL_SYSCONFDIR
#define SENTINEL_SYSCONFDIR "/etc"
#endif

typedef struct CfRead {
	Config *c;
	FILE *f, *errs;
	unsigned line;            /* lines read so far: the line a callback is about */
	int nerr;
} CfRead;

/* inih's reader, counting lines so each callback knows its line */
static char *cf_gets(char *buf, int n, void *stream)
{
	CfRead *R = stream;
	char *s = fgets(buf, n, R->f);
	if (s)
		R->line++;
	return s;
}

static void cf_error(CfRead *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cf_error(CfRead *R, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(R->errs, "%s:%u: error: ", R->c->path, R->line);
	vfprintf(R->errs, fmt, ap);
	fputc('\n', R->errs);
	va_end(ap);
	R->nerr++;
}

static void cf_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
}

static bool cf_bool(CfRead *R, const char *key, const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		*out = false;
	else {
		cf_error(R, "%s takes yes or no, not '%s'", key, v);
		return false;
	}
	return true;
}

/* A duration from lo to hi seconds, in ns; `like` is an example for the message. */
static void cf_duration(CfRead *R, const char *key, const char *v, double lo, double hi, const char *range,
			const char *like, uint64_t *out)
{
	double t;
	size_t bad;
	if (unit_parse_duration(v, strlen(v), &t, &bad) < 0 || t < lo || t > hi)
		cf_error(R, "%s takes a duration from %s, such as %s, not '%s'", key, range, like, v);
	else
		*out = (uint64_t)(t * 1e9 + 0.5);
}

/* A size in bytes (a number and a unit: 512MiB, 2GiB) from lo to hi. */
static void cf_size(CfRead *R, const char *key, const char *v, double lo, double hi, const char *range,
		    uint64_t *out)
{
	char *e;
	errno = 0;
	double x = strtod(v, &e);
	const Unit *u = unit_lookup(e, strlen(e));
	if (e == v || errno || !u || u->dim.bytes != 1 || u->dim.time || x * u->scale < lo || x * u->scale > hi)
		cf_error(R, "%s takes a size from %s, such as 1GiB, not '%s'", key, range, v);
	else
		*out = (uint64_t)(x * u->scale);
}

static bool cf_uint(CfRead *R, const char *key, const char *v, unsigned long lo, unsigned long hi, int base,
		    unsigned long *out)
{
	char *e;
	errno = 0;
	unsigned long x = strtoul(v, &e, base);
	if (!*v || *e || errno || x < lo || x > hi) {
		cf_error(R, "%s takes a number from %lu to %lu, not '%s'", key, lo, hi, v);
		return false;
	}
	*out = x;
	return true;
}

#define KEYS_TARGET "source, name, kallsyms, btf"
#define KEYS_RULES "directory, bundle"
#define KEYS_ENGINE "backend, gpu, tick, tasks, max_tasks, objects, threads, ring, history_memory, record, gpu_register_chunk"
#define KEYS_NOTIFY "log, log_pending, jsonl, delay, alertmanager, webhook, external_url, resend, spool, spool_max, " \
	"kernel_log_lines"
#define KEYS_CONTROL "socket, mode"

static int cf_handler(void *user, const char *sec, const char *key, const char *v)
{
	CfRead *R = user;
	Config *c = R->c;
	unsigned long u;
#define IS(s, k) (!strcmp(sec, s) && !strcmp(key, k))
	if (!strcmp(sec, "target")) {
		if (IS("target", "source")) cf_str(&c->source, v);
		else if (IS("target", "name")) cf_str(&c->name, v);
		else if (IS("target", "kallsyms")) cf_str(&c->kallsyms, v);
		else if (IS("target", "btf")) cf_str(&c->btf, v);
		else cf_error(R, "unknown key '%s' in [target]; the keys are " KEYS_TARGET, key);
	} else if (!strcmp(sec, "rules")) {
		if (IS("rules", "directory")) cf_str(&c->rules_dir, v);
		else if (IS("rules", "bundle")) cf_str(&c->bundle, v);
		else cf_error(R, "unknown key '%s' in [rules]; the keys are " KEYS_RULES, key);
	} else if (!strcmp(sec, "engine")) {
		if (IS("engine", "backend")) {
			if (strcmp(v, "auto") && strcmp(v, "cuda") && strcmp(v, "cpu"))
				cf_error(R, "backend takes auto, cuda or cpu, not '%s'", v);
			else
				cf_str(&c->backend, v);
		} else if (IS("engine", "gpu")) {
			if (cf_uint(R, "gpu", v, 0, 63, 10, &u))
				c->gpu = (int)u;
		} else if (IS("engine", "tick")) {
			cf_duration(R, "tick", v, 0.001, 60, "1ms to 60s", "100ms", &c->tick_ns);
		} else if (IS("engine", "tasks")) {
			if (cf_uint(R, "tasks", v, 16, 1u << 20, 10, &u))
				c->tasks = (uint32_t)u;
		} else if (IS("engine", "threads")) {
			if (!strcmp(v, "auto"))
				c->threads = 0;
			else if (cf_uint(R, "threads", v, 1, 64, 10, &u))
				c->threads = (uint32_t)u;
		} else if (IS("engine", "max_tasks")) {
			if (cf_uint(R, "max_tasks", v, 16, 1u << 22, 10, &u))
				c->max_tasks = (uint32_t)u;
		} else if (IS("engine", "objects")) {
			if (cf_uint(R, "objects", v, 16, 1u << 16, 10, &u))
				c->objects = (uint32_t)u;
		} else if (IS("engine", "record")) {
			cf_str(&c->record, v);
		} else if (IS("engine", "gpu_register_chunk")) {
			cf_size(R, "gpu_register_chunk", v, 1 << 20, 1ull << 40, "1MiB to 1TiB", &c->reg_chunk);
		} else if (IS("engine", "history_memory")) {
			cf_size(R, "history_memory", v, 1 << 20, 1ull << 40, "1MiB to 1TiB", &c->hist_max);
		} else if (IS("engine", "ring")) {
			if (cf_uint(R, "ring", v, 16, 1u << 24, 10, &u)) {
				if (u & (u - 1))
					cf_error(R, "ring takes a power of two (alert records), such as 4096, not %lu", u);
				else
					c->ring = (uint32_t)u;
			}
		} else {
			cf_error(R, "unknown key '%s' in [engine]; the keys are " KEYS_ENGINE, key);
		}
	} else if (!strcmp(sec, "notify")) {
		if (IS("notify", "log")) cf_bool(R, key, v, &c->log);
		else if (IS("notify", "log_pending")) cf_bool(R, key, v, &c->log_pending);
		else if (IS("notify", "jsonl")) cf_str(&c->jsonl, v);
		else if (IS("notify", "delay")) cf_duration(R, "delay", v, 0.005, 10, "5ms to 10s", "250ms", &c->delay_ns);
		else if (IS("notify", "alertmanager")) cf_str(&c->alertmanager, v);
		else if (IS("notify", "webhook")) cf_str(&c->webhook, v);
		else if (IS("notify", "external_url")) cf_str(&c->external_url, v);
		else if (IS("notify", "spool")) cf_str(&c->spool, v);
		else if (IS("notify", "spool_max")) cf_size(R, "spool_max", v, 1 << 20, 1ull << 40, "1MiB to 1TiB", &c->spool_max);
		else if (IS("notify", "resend")) cf_duration(R, "resend", v, 1, 3600, "1s to 1h", "1m", &c->resend_ns);
		else if (IS("notify", "kernel_log_lines")) {
			if (cf_uint(R, "kernel_log_lines", v, 0, 1000, 10, &u))
				c->kernel_log_lines = (unsigned)u;
		}
		else cf_error(R, "unknown key '%s' in [notify]; the keys are " KEYS_NOTIFY, key);
	} else if (!strcmp(sec, "control")) {
		if (IS("control", "socket")) cf_str(&c->socket, v);
		else if (IS("control", "mode")) {
			if (cf_uint(R, "mode", v, 0, 0777, 8, &u))
				c->mode = (unsigned)u;
		} else cf_error(R, "unknown key '%s' in [control]; the keys are " KEYS_CONTROL, key);
	} else if (!strcmp(sec, "metrics")) {
		if (IS("metrics", "listen")) cf_str(&c->metrics_listen, v);
		else cf_error(R, "unknown key '%s' in [metrics]; the key is listen", key);
	} else {
		cf_error(R, "unknown section [%s]; the sections are target, rules, engine, notify, control, metrics", sec);
	}
#undef IS
	return 1;     /* keep going: every error is reported */
}

int cf_load(Config *c, const char *path, FILE *errs)
{
	memset(c, 0, sizeof *c);
	c->path = strdup(path);
	c->rules_dir = strdup(SENTINEL_SYSCONFDIR "/sentinel/rules");
	c->backend = strdup("auto");
	c->tick_ns = 100000000ull;
	c->delay_ns = 250000000ull;
	c->tasks = 4096;
	c->max_tasks = 1u << 20;
	c->objects = 256;                 /* WD_OBJ_CAP */
	c->ring = 4096;
	c->kernel_log_lines = 20;
	c->log = true;
	c->socket = strdup("/run/sentinel/sentinel.sock");
	c->mode = 0600;
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		fprintf(errs, "%s: error: cannot read the configuration: %s (give one with -c FILE; "
			"examples/sentinel.conf is a template)\n", path, strerror(e));
		return -e;
	}
	CfRead R = {.c = c, .f = f, .errs = errs};
	int r = ini_parse_stream(cf_gets, &R, cf_handler, &R);
	fclose(f);
	if (r > 0) {
		fprintf(errs, "%s:%d: error: not an INI line: write 'key = value' under a [section]\n", path, r);
		R.nerr++;
	}
	if (c->max_tasks < c->tasks) {
		fprintf(errs, "%s: error: [engine] max_tasks (%u) is below tasks (%u): the table starts at tasks and "
			"grows up to max_tasks; raise max_tasks\n", path, c->max_tasks, c->tasks);
		R.nerr++;
	}
	if (!c->source) {
		fprintf(errs, "%s: error: [target] source is required: ramfile:PATH (a VM), vmcore:PATH, raw:PATH "
			"or pmem (this host)\n", path);
		R.nerr++;
	}
	if (!c->name && c->source) {
		const char *s = strrchr(c->source, '/');
		c->name = strdup(s ? s + 1 : c->source);
	}
	return R.nerr;
}

void cf_free(Config *c)
{
	free(c->path);
	free(c->source);
	free(c->name);
	free(c->kallsyms);
	free(c->btf);
	free(c->rules_dir);
	free(c->bundle);
	free(c->backend);
	free(c->jsonl);
	free(c->record);
	free(c->alertmanager);
	free(c->webhook);
	free(c->external_url);
	free(c->spool);
	free(c->socket);
	free(c->metrics_listen);
	memset(c, 0, sizeof *c);
}
