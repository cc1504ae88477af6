/* reloc.c - resolve a bundle's relocations against a target (see reloc.h). */
#include "reloc.h"
#include "catalog.h"
#include "kbtf.h"

#include <bpf/btf.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "task_struct___pre514" names the kernel's task_struct */
static void rl_base_name(const char *s, char *out, size_t n)
{
	const char *f = strstr(s, "___");
	size_t len = f ? (size_t)(f - s) : strlen(s);
	snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), s);
}

static char *rl_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *rl_fmt(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return strdup(buf);
}

/* Struct or union NAME: the kernel's own, else one a loaded module
 * defines (searched among the module's own types only, past the kernel's);
 * *b is the BTF it is in.  A local type named NAME___in_MODULE is
 * MODULE's alone: two drivers may define types of one name (e1000's and
 * e1000e's struct e1000_adapter), and the first found would be a guess. */
static int rl_type(const KTarget *t, const char *full, const char *name, const struct btf **b)
{
	char mod[64] = "";
	const char *in = strstr(full, "___in_");
	if (in) {
		in += 6;
		const char *end = strstr(in, "___");
		size_t len = end ? (size_t)(end - in) : strlen(in);
		snprintf(mod, sizeof mod, "%.*s", (int)(len < sizeof mod ? len : sizeof mod - 1), in);
	}
	*b = t->btf;
	int id = *mod ? -ENOENT : kb_composite(t->btf, name);
	if (id >= 0)
		return id;
	uint32_t base = btf__type_cnt(t->btf);
	for (size_t i = 0; i < t->nmod; i++) {
		if (*mod && strcmp(t->mod_name[i], mod))
			continue;
		const struct btf *mb = t->mod_btf[i];
		uint32_t n = btf__type_cnt(mb);
		for (uint32_t k = base; k < n; k++) {
			const struct btf_type *ty = btf__type_by_id(mb, k);
			const char *tn = ty ? btf__name_by_offset(mb, ty->name_off) : NULL;  /* NULL: a corrupt name */
			if (tn && btf_is_composite(ty) && !strcmp(tn, name)) {
				*b = mb;
				return (int)k;
			}
		}
	}
	return -ENOENT;
}

/* rl_type's answers during one rl_resolve, by the relocation's type name
 * (its ___ suffix included).  Each lookup compares the name with every
 * type of the kernel's BTF and then of every module's (libbpf's
 * btf__find_by_name_kind is a linear search): 624 relocations of a rule
 * set name about 150 types, and a reload's trial spent 0.3 s in them. */
#define RL_MEMO 512u
typedef struct RlMemo {
	struct {
		const char *full;          /* the relocation's (the bundle's): NULL an empty slot */
		int id;
		const struct btf *b;
	} e[RL_MEMO];
} RlMemo;

static int rl_type_memo(const KTarget *t, RlMemo *m, const char *full, const char *name, const struct btf **b)
{
	uint64_t h = bd_fnv1a(full, strlen(full), BD_FNV_INIT);
	for (uint32_t i = (uint32_t)h % RL_MEMO, k = 0; m && k < RL_MEMO; i = (i + 1) % RL_MEMO, k++) {
		if (!m->e[i].full) {
			int id = rl_type(t, full, name, b);
			m->e[i].full = full;
			m->e[i].id = id;
			m->e[i].b = *b;
			return id;
		}
		if (!strcmp(m->e[i].full, full)) {
			*b = m->e[i].b;
			return m->e[i].id;
		}
	}
	return rl_type(t, full, name, b);         /* full: look it up again */
}

/* One relocation: its value, or false and why. */
static bool rl_one(const KTarget *t, RlMemo *memo, const Relo *x, uint64_t *v, char **why)
{
	const struct btf *b = t->btf;
	char name[128];
	rl_base_name(x->a, name, sizeof name);
	switch (x->kind) {
	case RELO_SYM:
		if (!kt_sym(t, x->a, v))
			return true;
		if (x->weak) {
			*v = 0;
			return true;
		}
		*why = rl_fmt("the kernel has no symbol %s", x->a);
		return false;
	case RELO_TYPE:
		*v = rl_type_memo(t, memo, x->a, name, &b) >= 0;
		return true;
	case RELO_SIZE: {
		int id = rl_type_memo(t, memo, x->a, name, &b);
		int64_t sz = id >= 0 ? btf__resolve_size(b, (uint32_t)id) : -1;
		if (sz <= 0) {
			*why = rl_fmt("the kernel has no struct %s", name);
			return false;
		}
		*v = (uint64_t)sz;
		return true;
	}
	case RELO_ENUM: {
		int64_t e;
		if (!kb_enumerator(b, name, x->b, &e)) {
			*why = rl_fmt("the kernel has no enumerator %s (enum %s)", x->b, name);
			return false;
		}
		*v = (uint64_t)e;
		return true;
	}
	case RELO_FIELD:
	case RELO_EXISTS: {
		int id = rl_type_memo(t, memo, x->a, name, &b);
		uint32_t bit, mt, bs;
		bool has = id >= 0 && kb_member(b, (uint32_t)id, x->b, &bit, &mt, &bs);
		if (x->kind == RELO_EXISTS) {
			*v = has;
			return true;
		}
		if (id < 0) {
			*why = rl_fmt("the kernel has no struct %s", name);
			return false;
		}
		if (!has) {
			*why = rl_fmt("struct %s has no field %s in this kernel", name, x->b);
			return false;
		}
		/* a bitfield reads as an integer only when it is one: byte-aligned
		 * and as wide as the read (enum netdev_stat_type pcpu_stat_type:8) */
		if (bit % 8 || (bs && bs != x->bits)) {
			*why = rl_fmt("%s.%s is a bitfield in this kernel", name, x->b);
			return false;
		}
		if (bs) {
			*v = bit / 8;
			return true;
		}
		int64_t sz = btf__resolve_size(b, mt);
		if (x->bits && sz * 8 != (int64_t)x->bits) {
			*why = rl_fmt("%s.%s is %lld bytes in this kernel; the metric library reads %u", name, x->b,
				      (long long)sz, x->bits / 8);
			return false;
		}
		*v = bit / 8;
		return true;
	}
	default:
		*why = rl_fmt("unknown relocation kind");
		return false;
	}
}

/* An object kind's entry point km_PREFIX_WHAT ("walk", "name", "stats"). */
const char *rl_obj_fn(int ent, const char *what)
{
	static char buf[ENT__COUNT][3][32];
	int i = !strcmp(what, "walk") ? 0 : !strcmp(what, "name") ? 1 : 2;
	snprintf(buf[ent][i], sizeof buf[ent][i], "km_%s_%s", cat_entities[ent].prefix, what);
	return buf[ent][i];
}

/* The entry points a metric runs through. */
static void rl_metric_fns(MetricId m, const char *fns[4])
{
	static char buf[MET__COUNT][48];
	int ent = cat_metrics[m].entity;
	cat_metric_fn(m, buf[m], sizeof buf[m]);
	memset(fns, 0, 4 * sizeof *fns);
	fns[0] = buf[m];
	if (ent == ENT_CPU) {
		fns[1] = "km_cpu_ids";
		fns[2] = "km_cpu_online";
	} else if (ent == ENT_TASK) {
		fns[1] = "km_task_walk";
	} else if (ent_is_obj(ent)) {
		fns[1] = rl_obj_fn(ent, "walk");
		fns[2] = rl_obj_fn(ent, "name");
		fns[3] = rl_obj_fn(ent, "stats");
	}
}

int rl_resolve(const Bundle *b, const KTarget *t, RlResult *out, char *err, size_t n)
{
	memset(out, 0, sizeof *out);
	size_t cnt = b->relos.n;
	out->n = cnt;
	out->value = calloc(cnt + 1, sizeof *out->value);
	out->ok = calloc(cnt + 1, sizeof *out->ok);
	out->why = calloc(cnt + 1, sizeof *out->why);
	if (!out->value || !out->ok || !out->why) {
		rl_free(out);
		snprintf(err, n, "out of memory");
		return -ENOMEM;
	}
	/* compute */
	RlMemo *memo = calloc(1, sizeof *memo);         /* none: each looked up */
	for (size_t i = 0; i < cnt; i++) {
		out->ok[i] = rl_one(t, memo, &b->relos.v[i], &out->value[i], &out->why[i]);
		if (!out->ok[i]) {
			out->value[i] = RELO_POISON;
			out->failed++;
		}
	}
	free(memo);
	/* which metrics can run */
	for (int m = 0; m < MET__COUNT; m++) {
		const char *fns[4];
		rl_metric_fns((MetricId)m, fns);
		out->avail[m] = true;
		for (int f = 0; f < 4 && fns[f] && out->avail[m]; f++) {
			const ReloUse *u = relo_find_use(&b->relos, fns[f]);
			for (size_t k = 0; u && k < u->n; k++) {
				if (!u->required[k] || out->ok[u->idx[k]])
					continue;
				char d[256];
				relo_describe(&b->relos.v[u->idx[k]], d, sizeof d);
				out->reason[m] = rl_fmt("%s needs %s: %s", cat_metrics[m].name, d, out->why[u->idx[k]]);
				out->avail[m] = false;
				out->unavailable++;
				break;
			}
		}
	}
	return 0;
}

bool rl_entry_ok(const Bundle *b, const RlResult *res, const char *fn)
{
	const ReloUse *u = relo_find_use(&b->relos, fn);
	for (size_t k = 0; u && k < u->n; k++)
		if (u->required[k] && !res->ok[u->idx[k]])
			return false;
	return true;
}

const char *rl_rule_blocked(const Bundle *b, const RlResult *res, size_t rule, MetricId *metric)
{
	if (res->rule_off && rule < res->nrules && res->rule_off[rule])
		return res->rule_off[rule];
	for (int m = 0; m < MET__COUNT; m++)
		if (met_has(&b->rules[rule].metrics, (MetricId)m) && !res->avail[m]) {
			if (metric)
				*metric = (MetricId)m;
			return res->reason[m];
		}
	return NULL;
}

/* The value of label key on the target, NULL if it has none. */
static const char *rl_label(const char *name, char *const *labels, size_t nlabels, const char *key)
{
	if (!strcmp(key, "target"))
		return name;
	for (size_t i = 0; i < nlabels; i++)
		if (!strcmp(labels[2 * i], key))
			return labels[2 * i + 1];
	return NULL;
}

int rl_limit(const Bundle *b, RlResult *res, const char *name, char *const *labels, size_t nlabels)
{
	for (size_t r = 0; r < b->nrules; r++) {
		const BdRule *x = &b->rules[r];
		size_t k;
		const char *v = NULL;                 /* the first label that does not match: its value here */
		for (k = 0; k < x->ntargets; k++) {
			v = rl_label(name ? name : "", labels, nlabels, x->targets[k].key);
			if (!v || strcmp(v, x->targets[k].value))
				break;
		}
		if (k == x->ntargets)
			continue;
		if (!res->rule_off) {
			res->rule_off = calloc(b->nrules, sizeof *res->rule_off);
			if (!res->rule_off)
				return -ENOMEM;
			res->nrules = b->nrules;
		}
		char why[256];
		snprintf(why, sizeof why, "not for this target: the rule runs where %s is '%s', here it is %s%s%s",
			 x->targets[k].key, x->targets[k].value, v ? "'" : "not set", v ? v : "", v ? "'" : "");
		if (!(res->rule_off[r] = strdup(why)))
			return -ENOMEM;
	}
	return 0;
}

void rl_free(RlResult *r)
{
	for (size_t i = 0; r->rule_off && i < r->nrules; i++)
		free(r->rule_off[i]);
	free(r->rule_off);
	for (size_t i = 0; r->why && i < r->n; i++)
		free(r->why[i]);
	for (int m = 0; m < MET__COUNT; m++)
		free(r->reason[m]);
	free(r->value);
	free(r->ok);
	free(r->why);
	memset(r, 0, sizeof *r);
}
