/* reloc.h - resolve a bundle's relocations against one target kernel.
 *
 * Compute, then patch (libbpf's relo_core.c is the model): rl_resolve
 * decides the value of every relocation from the target's BTF and symbols
 * and records why each one that fails, fails; nothing is written into
 * code.  The backends copy `value` into the bundle's relocation table.  A
 * failed relocation's value is RELO_POISON (reads through it fail); every
 * metric that needs it is unavailable, and every rule that reads such a
 * metric is disabled with the reason, before anything runs.
 *
 * Ownership: an RlResult owns its arrays; rl_free().
 */
#ifndef SENTINEL_RELOC_H
#define SENTINEL_RELOC_H

#include "bundle.h"
#include "ktarget.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct RlResult {
	size_t n;
	uint64_t *value;             /* [n] the relocation table */
	bool *ok;                    /* [n] */
	char **why;                  /* [n] NULL, or why it failed */
	bool avail[MET__COUNT];      /* per catalog metric */
	char *reason[MET__COUNT];    /* why a metric is unavailable */
	unsigned failed, unavailable;
	char **rule_off;             /* [nrules] or NULL: why the rule is not for this target (rl_limit) */
	size_t nrules;
} RlResult;

int rl_resolve(const Bundle *b, const KTarget *t, RlResult *out, char *err, size_t n);
void rl_free(RlResult *r);

/* Whether every relocation entry point fn needs resolved. */
bool rl_entry_ok(const Bundle *b, const RlResult *res, const char *fn);
/* An object entity's entry point: km_PREFIX_walk, _name or _stats. */
const char *rl_obj_fn(int ent, const char *what);

/* Why rule r of b cannot run on this target (NULL: it can).  The string
 * lives in res. */
const char *rl_rule_blocked(const Bundle *b, const RlResult *res, size_t rule, MetricId *metric);
/* The rules limited to targets by label (a rule's targets:) that target
 * name, with labels ([2 * nlabels] keys and values), is not one of: they
 * are blocked on it, with the reason.  `target` matches the name.
 * -ENOMEM, or 0. */
int rl_limit(const Bundle *b, RlResult *res, const char *name, char *const *labels, size_t nlabels);

#endif
