/* config.c - sentineld's configuration (see config.h). */
#include "config.h"
#include "units.h"
#include "util.h"

#include <ini.h>

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#ifndef SENTINEL_SYSCONFDIR
#define SENTINEL_SYSCONFDIR "/etc"
#endif

typedef struct CfRead {
	Config *c;
	const char *file;         /* the file being read: the main one, or a drop-in */
	bool dropin;              /* a targets directory's file: [target NAME] sections only */
	FILE *f, *errs;
	unsigned line;            /* lines read so far: the line a callback is about */
	int nerr;
	char *sec;                /* the section the last callback was in */
	bool new_sec;             /* a section header was read since the last callback */
	unsigned sec_line;        /* ... on this line */
	CfTarget *tg;             /* the target section being read, or NULL */
	bool plain;               /* a plain [target] was seen */
} CfRead;

/* inih's reader, counting lines so each callback knows its line */
static char *cf_gets(char *buf, int n, void *stream)
{
	CfRead *R = stream;
	char *s = fgets(buf, n, R->f);
	if (s) {
		R->line++;
		const char *p = s + strspn(s, " \t");
		if (*p == '[') {           /* a section starts: a second [target] is a new one */
			R->new_sec = true;
			R->sec_line = R->line;
		}
	}
	return s;
}

static void cf_error(CfRead *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cf_error(CfRead *R, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(R->errs, "%s:%u: error: ", R->file, R->line);
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

/* auto, none or a directory's absolute path (such as example) */
static void cf_dir(CfRead *R, const char *key, const char *v, const char *example, char **dst)
{
	if (*v != '/' && strcmp(v, "auto") && strcmp(v, "none"))
		cf_error(R, "%s takes auto, none or a directory's absolute path (such as %s), not '%s'", key, example, v);
	else
		cf_str(dst, v);
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

/* read_budget -> auto | none | NUMBER (reads a tick) */
static void cf_budget(CfRead *R, const char *v, uint64_t *out)
{
	unsigned long u;
	if (!strcmp(v, "auto"))
		*out = CF_BUDGET_AUTO;
	else if (!strcmp(v, "none"))
		*out = CF_BUDGET_NONE;
	else if (!*v || strspn(v, "0123456789") != strlen(v))
		cf_error(R, "read_budget takes auto, none or a number of reads a tick (such as 4000000), not '%s'", v);
	else if (cf_uint(R, "read_budget", v, 1000, 1ul << 40, 10, &u))
		*out = u;
}

#define KEYS_TARGET "source, name, kallsyms, btf, labels, read_budget"
#define KEYS_RULES "directory, bundle"
#define KEYS_ENGINE "backend, gpu, tick, tasks, max_tasks, objects, threads, read_budget, ring, history_memory, record, gpu_register_chunk, reload_trial, state, state_interval, state_tolerance"
#define KEYS_NOTIFY "log, log_pending, jsonl, delay, alertmanager, webhook, external_url, resend, spool, spool_max, " \
	"kernel_log_lines"
#define KEYS_CONTROL "socket, mode"

/* A target's name: what $target and the target label say. */
static bool cf_name_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
		      *s == '_' || *s == '-'))
			return false;
	return true;
}

static void cf_name(CfRead *R, CfTarget *t, const char *v)
{
	if (!cf_name_ok(v))
		cf_error(R, "a target's name is 1 to 64 letters, digits, '.', '_' or '-', not '%s'", v);
	else
		cf_str(&t->name, v);
}

/* A label's name as Prometheus has them, and not one Sentinel sets itself. */
static bool cf_label_name_ok(const char *k, size_t n)
{
	static const char *const own[] = {"alertname", "severity", "target", "cpu", "pid", "comm", "alertstate"};
	if (!n || !((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || *k == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') ||
		      k[i] == '_'))
			return false;
	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		if (strlen(own[i]) == n && !memcmp(own[i], k, n))
			return false;
	return true;
}

/* labels -> label { ',' label };  label -> NAME '=' VALUE */
static void cf_labels(CfRead *R, CfTarget *t, const char *v)
{
	for (unsigned i = 0; i < 2 * t->nlabels; i++)
		free(t->labels[i]);
	free(t->labels);
	t->labels = NULL;
	t->nlabels = 0;
	char **kv = calloc(2 * CF_MAX_LABELS, sizeof *kv);
	if (!kv) {
		cf_error(R, "out of memory");
		return;
	}
	t->labels = kv;
	for (const char *p = v; *p;) {
		const char *end = strchr(p, ','), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		while (len && (*p == ' ' || *p == '\t'))
			p++, len--;
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		eq = memchr(p, '=', len);
		size_t kl = eq ? (size_t)(eq - p) : 0, vs = kl + 1;
		while (kl && (p[kl - 1] == ' ' || p[kl - 1] == '\t'))
			kl--;
		while (eq && vs < len && (p[vs] == ' ' || p[vs] == '\t'))
			vs++;
		if (!eq || !cf_label_name_ok(p, kl) || vs >= len) {
			cf_error(R, "labels takes NAME=VALUE pairs separated by commas (names of letters, digits and _, not "
				 "alertname, alertstate, severity, target, cpu, pid or comm), such as 'role=db, rack=r12'; "
				 "not '%.*s'", (int)len, p);
			return;
		}
		for (size_t i = vs, l; i < len; i += l)
			if (!(l = (size_t)u_utf8_len((const unsigned char *)p + i, len - i)) || (unsigned char)p[i] < 0x20) {
				cf_error(R, "the value of label '%.*s' is not UTF-8 text (write the file as UTF-8)", (int)kl, p);
				return;
			}
		if (t->nlabels == CF_MAX_LABELS) {
			cf_error(R, "more than %u labels on one target", CF_MAX_LABELS);
			return;
		}
		kv[2 * t->nlabels] = strndup(p, kl);
		kv[2 * t->nlabels + 1] = strndup(p + vs, len - vs);
		t->nlabels++;
		if (!end)
			break;
		p = end + 1;
	}
}

/* target_section -> '[' 'target' [NAME] ']': the target a key of section
 * sec belongs to; the first key of a section adds it.  NULL after an
 * error (the section's keys are then not checked again). */
static CfTarget *cf_target(CfRead *R, const char *sec)
{
	Config *c = R->c;
	if (!R->new_sec && R->sec && !strcmp(R->sec, sec))
		return R->tg;
	free(R->sec);
	R->sec = strdup(sec);
	R->tg = NULL;
	const char *name = sec + 6;
	while (*name == ' ')
		name++;
	if (*name && !cf_name_ok(name)) {
		cf_error(R, "[%s]: a target's name is 1 to 64 letters, digits, '.', '_' or '-'", sec);
		return NULL;
	}
	if (!*name && R->dropin) {
		cf_error(R, "a drop-in file's targets are named: [target NAME]");
		return NULL;
	}
	if (!*name && R->plain) {
		cf_error(R, "a second [target]: name each one, [target NAME], to watch several machines");
		return NULL;
	}
	for (unsigned i = 0; *name && i < c->ntargets; i++)
		if (c->targets[i].name && !strcmp(c->targets[i].name, name)) {
			if (!strcmp(c->targets[i].file, R->file))
				cf_error(R, "[target %s] again (first at line %u): target names are unique", name,
					 c->targets[i].line);
			else
				cf_error(R, "[target %s] again (first in %s:%u): target names are unique", name,
					 c->targets[i].file, c->targets[i].line);
			return NULL;
		}
	if (c->ntargets >= CF_MAX_TARGETS) {
		cf_error(R, "more than %u targets: run another sentineld for the rest", CF_MAX_TARGETS);
		return NULL;
	}
	CfTarget *nt = realloc(c->targets, (c->ntargets + 1) * sizeof *nt);
	if (!nt) {
		cf_error(R, "out of memory");
		return NULL;
	}
	c->targets = nt;
	R->tg = &nt[c->ntargets++];
	*R->tg = (CfTarget){.name = *name ? strdup(name) : NULL, .file = strdup(R->file), .line = R->sec_line};
	R->plain |= !*name;
	return R->tg;
}

static int cf_handler(void *user, const char *sec, const char *key, const char *v)
{
	CfRead *R = user;
	Config *c = R->c;
	unsigned long u;
	if (strcmp(sec, "target") && strncmp(sec, "target ", 7)) {
		free(R->sec);         /* the next target section starts afresh */
		R->sec = NULL;
		R->tg = NULL;
		if (R->dropin) {
			cf_error(R, "[%s] in a drop-in file: these hold [target NAME] sections only; the rest goes in %s",
				 sec, c->path);
			R->new_sec = false;
			return 1;
		}
	}
	/* inih takes "; ..." after a value as a comment, not "# ...": a value
	 * with " #" in it is a comment meant (no key's value has one) */
	const char *hash = strstr(v, " #") ? strstr(v, " #") : strstr(v, "\t#");
	if (hash) {
		cf_error(R, "%s = '%s': '#' starts a comment only at the start of a line (or use ';' after a value); "
			 "put the comment on a line of its own", key, v);
		return 1;
	}
#define IS(s, k) (!strcmp(sec, s) && !strcmp(key, k))
	if (!strcmp(sec, "target") || !strncmp(sec, "target ", 7)) {
		CfTarget *t = cf_target(R, sec);
		if (!t) {
			R->new_sec = false;  /* the section's other keys: not checked again */
			return 1;
		}
		if (!strcmp(key, "source")) cf_str(&t->source, v);
		else if (!strcmp(key, "name") && sec[6]) cf_error(R, "[%s] is named by its section; name = is for a plain [target]", sec);
		else if (!strcmp(key, "name")) cf_name(R, t, v);
		else if (!strcmp(key, "kallsyms")) cf_str(&t->kallsyms, v);
		else if (!strcmp(key, "btf")) cf_str(&t->btf, v);
		else if (!strcmp(key, "labels")) cf_labels(R, t, v);
		else if (!strcmp(key, "read_budget")) cf_budget(R, v, &t->read_budget);
		else cf_error(R, "unknown key '%s' in [%s]; the keys are " KEYS_TARGET, key, sec);
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
		} else if (IS("engine", "read_budget")) {
			cf_budget(R, v, &c->read_budget);
		} else if (IS("engine", "max_tasks")) {
			if (cf_uint(R, "max_tasks", v, 16, 1u << 22, 10, &u))
				c->max_tasks = (uint32_t)u;
		} else if (IS("engine", "objects")) {
			if (cf_uint(R, "objects", v, 16, 1u << 16, 10, &u))
				c->objects = (uint32_t)u;
		} else if (IS("engine", "record")) {
			cf_str(&c->record, v);
		} else if (IS("engine", "reload_trial")) {
			cf_bool(R, key, v, &c->reload_trial);
		} else if (IS("engine", "state")) {
			cf_dir(R, key, v, "/var/lib/sentinel", &c->state);
		} else if (IS("engine", "cache")) {
			cf_dir(R, key, v, "/var/cache/sentinel", &c->cache);
		} else if (IS("engine", "state_interval")) {
			cf_duration(R, "state_interval", v, 1, 86400, "1s to 1d", "1m", &c->state_every_ns);
		} else if (IS("engine", "state_tolerance")) {
			cf_duration(R, "state_tolerance", v, 1, 7 * 86400, "1s to 7d", "1h", &c->state_tolerance_ns);
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
	} else if (!strcmp(sec, "targets")) {
		if (IS("targets", "directory")) cf_str(&c->targets_dir, v);
		else cf_error(R, "unknown key '%s' in [targets]; the key is directory", key);
	} else if (!strcmp(sec, "metrics")) {
		if (IS("metrics", "listen")) cf_str(&c->metrics_listen, v);
		else cf_error(R, "unknown key '%s' in [metrics]; the key is listen", key);
	} else {
		cf_error(R, "unknown section [%s]; the sections are target (or target NAME), targets, rules, engine, notify, control, metrics", sec);
	}
#undef IS
	R->new_sec = false;
	return 1;     /* keep going: every error is reported */
}

/* Read one INI file into R->c: 0, or -errno when it cannot be opened. */
static int cf_file(CfRead *R, const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	free(R->sec);
	R->sec = NULL;
	R->tg = NULL;
	R->f = f;
	R->file = path;
	R->line = 0;
	int r = ini_parse_stream(cf_gets, R, cf_handler, R);
	fclose(f);
	if (r > 0) {
		fprintf(R->errs, "%s:%d: error: not an INI line: write 'key = value' under a [section]\n", path, r);
		R->nerr++;
	}
	return 0;
}

static int cf_conf_name(const struct dirent *d)
{
	size_t l = strlen(d->d_name);
	return d->d_name[0] != '.' && l > 5 && !strcmp(d->d_name + l - 5, ".conf");
}

/* targets_dir -> { FILE.conf }: the drop-ins, in name order, [target NAME]
 * sections only.  A directory that is not there is an error: create it
 * (empty), or take the key out. */
static void cf_dropins(CfRead *R, const char *dir)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, cf_conf_name, alphasort);
	if (n < 0) {
		fprintf(R->errs, "%s: error: [targets] directory %s: %s (create it, or take the key out)\n", R->c->path,
			dir, strerror(errno));
		R->nerr++;
		return;
	}
	R->dropin = true;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
		int r = cf_file(R, path);
		if (r < 0) {
			fprintf(R->errs, "%s: error: cannot read it: %s\n", path, strerror(-r));
			R->nerr++;
		}
		free(ents[i]);
	}
	free(ents);
	R->dropin = false;
	R->file = R->c->path;
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
	c->reload_trial = true;
	c->state_every_ns = 60000000000ull;
	c->state_tolerance_ns = 3600000000000ull;
	c->read_budget = CF_BUDGET_AUTO;
	c->log = true;
	c->socket = strdup("/run/sentinel/sentinel.sock");
	c->mode = 0600;
	CfRead R = {.c = c, .file = path, .errs = errs};
	int r = cf_file(&R, path);
	if (r < 0) {
		fprintf(errs, "%s: error: cannot read the configuration: %s (give one with -c FILE; "
			"examples/sentinel.conf is a template)\n", path, strerror(-r));
		return r;
	}
	if (c->targets_dir)
		cf_dropins(&R, c->targets_dir);
	if (c->max_tasks < c->tasks) {
		fprintf(errs, "%s: error: [engine] max_tasks (%u) is below tasks (%u): the table starts at tasks and "
			"grows up to max_tasks; raise max_tasks\n", path, c->max_tasks, c->tasks);
		R.nerr++;
	}
	free(R.sec);
	if (!c->ntargets) {
		fprintf(errs, "%s: error: no [target]: give one with source = ramfile:PATH (a VM), vmcore:PATH, raw:PATH "
			"or pmem (this host), or one [target NAME] per machine%s\n", path,
			c->targets_dir ? " (here or in the targets directory)" : "");
		R.nerr++;
	}
	for (unsigned i = 0; i < c->ntargets; i++) {
		CfTarget *t = &c->targets[i];
		if (!t->source) {
			fprintf(errs, "%s:%u: error: [target%s%s] has no source: ramfile:PATH (a VM), vmcore:PATH, raw:PATH "
				"or pmem (this host)\n", t->file, t->line, t->name ? " " : "", t->name ? t->name : "");
			R.nerr++;
		} else if (!t->name) {
			const char *s = strrchr(t->source, '/');
			t->name = strdup(s ? s + 1 : t->source);
		}
	}
	for (unsigned i = 0; i < c->ntargets; i++)
		for (unsigned j = 0; j < i && c->targets[i].name; j++)
			if (c->targets[j].name && !strcmp(c->targets[i].name, c->targets[j].name) &&
			    (c->targets[i].source && c->targets[j].source)) {
				fprintf(errs, "%s:%u: error: a second target named '%s' (%s:%u): name each [target NAME]\n",
					c->targets[i].file, c->targets[i].line, c->targets[i].name, c->targets[j].file,
					c->targets[j].line);
				R.nerr++;
			}
	if (c->ntargets > 1 && c->record) {
		fprintf(errs, "%s: error: [engine] record takes one target; this file has %u\n", path, c->ntargets);
		R.nerr++;
	}
	return R.nerr;
}

void cf_target_free(CfTarget *t)
{
	free(t->name);
	free(t->source);
	free(t->kallsyms);
	free(t->btf);
	free(t->file);
	for (unsigned i = 0; i < 2 * t->nlabels; i++)
		free(t->labels[i]);
	free(t->labels);
	memset(t, 0, sizeof *t);
}

static char *cf_dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

int cf_target_copy(CfTarget *dst, const CfTarget *src)
{
	*dst = (CfTarget){.name = cf_dup(src->name), .source = cf_dup(src->source), .kallsyms = cf_dup(src->kallsyms),
			  .btf = cf_dup(src->btf), .file = cf_dup(src->file), .line = src->line,
			  .read_budget = src->read_budget};
	bool bad = (src->name && !dst->name) || (src->source && !dst->source) || (src->kallsyms && !dst->kallsyms) ||
		   (src->btf && !dst->btf) || (src->file && !dst->file);
	if (src->nlabels && !bad && (dst->labels = calloc(2 * src->nlabels, sizeof *dst->labels))) {
		dst->nlabels = src->nlabels;
		for (unsigned i = 0; i < 2 * src->nlabels; i++)
			bad |= !(dst->labels[i] = strdup(src->labels[i]));
	} else if (src->nlabels) {
		bad = true;
	}
	if (bad) {
		cf_target_free(dst);
		return -ENOMEM;
	}
	return 0;
}

static bool cf_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

bool cf_target_same(const CfTarget *a, const CfTarget *b)
{
	if (!cf_eq(a->name, b->name) || !cf_eq(a->source, b->source) || !cf_eq(a->kallsyms, b->kallsyms) ||
	    !cf_eq(a->btf, b->btf) || a->nlabels != b->nlabels || a->read_budget != b->read_budget)
		return false;
	for (unsigned i = 0; i < 2 * a->nlabels; i++)
		if (strcmp(a->labels[i], b->labels[i]))
			return false;
	return true;
}

void cf_free(Config *c)
{
	free(c->path);
	for (unsigned i = 0; i < c->ntargets; i++)
		cf_target_free(&c->targets[i]);
	free(c->targets);
	free(c->targets_dir);
	free(c->rules_dir);
	free(c->bundle);
	free(c->backend);
	free(c->jsonl);
	free(c->record);
	free(c->state);
	free(c->cache);
	free(c->alertmanager);
	free(c->webhook);
	free(c->external_url);
	free(c->spool);
	free(c->socket);
	free(c->metrics_listen);
	memset(c, 0, sizeof *c);
}
