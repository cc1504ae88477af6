/* catalog.c - metric catalog lookups. */
#include "catalog.h"
#include "snrt.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#define HOST ENT_HOST
#define CPU ENT_CPU
#define TASK ENT_TASK
#define DISK ENT_DISK
#define CGROUP ENT_CGROUP
#define NET ENT_NET
#define FS ENT_FS
#define EDAC ENT_EDAC
#define GAUGE MK_GAUGE
#define COUNTER MK_COUNTER
#define NUM MT_NUM
#define BOOL MT_BOOL
#define STR MT_STR
#define STATE MT_STATE
#define NONE MU_NONE
#define COUNT MU_COUNT
#define SECONDS MU_SECONDS
#define BYTES MU_BYTES
#define LOAD MU_LOAD
#define BYTES_PER_SECOND MU_BYTES_PER_SECOND

const Metric cat_metrics[MET__COUNT] = {
#define X(id, name, ent, kind, type, unit, flags, desc, src) \
	{name, ent, kind, type, unit, flags, desc, src},
#include "catalog.def"
#undef X
};

unsigned cat_obj_str(MetricId m)
{
	return m == MET_FS_FSTYPE ? SN_STR_FSTYPE : m == MET_FS_DEVICE ? SN_STR_DEVICE : SN_STR_NAME;
}

MetricId cat_lookup(const char *name, unsigned len)
{
	for (int i = 0; i < MET__COUNT; i++)
		if (strlen(cat_metrics[i].name) == len && !memcmp(cat_metrics[i].name, name, len))
			return (MetricId)i;
	return MET__COUNT;
}

/* Distance from name to candidate, or to a prefix of it one character longer
 * or shorter than name ("cpu.bsy" is close to "cpu.busy", a prefix of
 * "cpu.busy_time"); prefix matches cost one more than whole ones. */
static int cat_distance(const char *name, const char *cand, int max)
{
	int best = u_edit_distance(name, cand, max);
	size_t nl = strlen(name), cl = strlen(cand);
	char pre[64];
	for (size_t l = nl > 1 ? nl - 1 : 1; l <= nl + 1 && l < cl && l < sizeof pre; l++) {
		if (l < 4)
			continue;
		memcpy(pre, cand, l);
		pre[l] = 0;
		int d = u_edit_distance(name, pre, max) + 1;
		if (d < best)
			best = d;
	}
	return best;
}

const char *cat_suggest(const char *name)
{
	const char *best = NULL;
	int bestd = strlen(name) < 8 ? 2 : 3;
	for (int i = 0; i < MET__COUNT; i++) {
		int d = cat_distance(name, cat_metrics[i].name, bestd);
		if (d < bestd || (d == bestd && !best)) {
			best = cat_metrics[i].name;
			bestd = d;
		}
	}
	if (best)
		return best;
	/* the right name under another entity: "host.busy_time" -> "cpu.busy_time" */
	const char *ndot = strchr(name, '.');
	for (int i = 0; ndot && i < MET__COUNT; i++) {
		const char *dot = strchr(cat_metrics[i].name, '.');
		if (!strcmp(dot + 1, ndot + 1))
			return cat_metrics[i].name;
	}
	return NULL;
}

const EntityInfo cat_entities[ENT__COUNT] = {
#define X(id, prefix, noun, plural, label) [ENT_##id] = {prefix, noun, plural, label},
#include "entity.def"
#undef X
};

const char *cat_entity_name(Entity e) { return cat_entities[e].prefix; }

const char *cat_kind_name(MetricKind k) { return k == MK_GAUGE ? "gauge" : "counter"; }

const char *cat_unit_name(MetricUnit u)
{
	static const char *n[] = {"-", "count", "seconds", "bytes", "load", "bytes/s"};
	return n[u];
}

void cat_metric_fn(MetricId id, char *buf, size_t n)
{
	snprintf(buf, n, "km_%s", cat_metrics[id].name);
	for (char *p = buf; *p; p++)
		if (*p == '.')
			*p = '_';
}
