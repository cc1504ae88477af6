/* catalog.h - the metric catalog (catalog.def) as C data. */
#ifndef SENTINEL_CATALOG_H
#define SENTINEL_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
#define X(id, prefix, noun, plural, label) ENT_##id,
#include "entity.def"
#undef X
	ENT__COUNT
} Entity;
/* The object entities (entity.def): ENT_DISK and after.  Object kind k of
 * the runtime (sn_world.objs[k]) is entity ENT_FIRST_OBJ + k. */
#define ENT_FIRST_OBJ ENT_DISK
#define ENT_NOBJ (ENT__COUNT - ENT_FIRST_OBJ)
/* An object's name (disk.name) keeps this many characters. */
#define CAT_OBJ_NAME_MAX 255
static inline bool ent_is_obj(int e) { return e >= ENT_FIRST_OBJ && e < ENT__COUNT; }

typedef struct EntityInfo {
	const char *prefix, *noun, *plural, *label;
} EntityInfo;
extern const EntityInfo cat_entities[ENT__COUNT];
typedef enum { MK_GAUGE, MK_COUNTER } MetricKind;
typedef enum { MT_NUM, MT_BOOL, MT_STR, MT_STATE } MetricType;
typedef enum { MU_NONE, MU_COUNT, MU_SECONDS, MU_BYTES, MU_LOAD, MU_BYTES_PER_SECOND } MetricUnit;

#define MF_RATE_LE_1 1u
#define MF_SIGNED 2u

typedef enum {
#define X(id, name, ent, kind, type, unit, flags, desc, src) MET_##id,
#include "catalog.def"
#undef X
	MET__COUNT
} MetricId;

typedef struct Metric {
	const char *name;
	Entity entity;
	MetricKind kind;
	MetricType type;
	MetricUnit unit;
	unsigned flags;
	const char *desc;
	const char *source;
} Metric;

extern const Metric cat_metrics[MET__COUNT];

/* A set of catalog metrics (what a rule reads), a bit each. */
typedef struct MetSet {
	uint64_t w[(MET__COUNT + 63) / 64];
} MetSet;

static inline void met_add(MetSet *s, MetricId m) { s->w[m / 64] |= 1ull << (m % 64); }
static inline bool met_has(const MetSet *s, MetricId m) { return s->w[m / 64] >> (m % 64) & 1; }

/* Which of its object's strings a string metric of an object is (the
 * runtime's SN_STR_*: 0 its name, disk.name, fs.mountpoint; a mount's
 * fs.fstype and fs.device are labels kept with it). */
unsigned cat_obj_str(MetricId m);

/* Look a metric up by name; returns MET__COUNT when unknown. */
MetricId cat_lookup(const char *name, unsigned len);
/* The closest catalog name within a small edit distance, or NULL. */
const char *cat_suggest(const char *name);

const char *cat_entity_name(Entity e);
const char *cat_kind_name(MetricKind k);
const char *cat_unit_name(MetricUnit u);
/* The metric library's function for a metric (kernel-support/kmetric_*.c):
 * "km_host_forks" for host.forks */
void cat_metric_fn(MetricId id, char *buf, size_t n);

#endif
