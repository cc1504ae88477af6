/* cg_shape.c - rules that differ only in their numbers share their code
 * (see cg.h, CgShapes).
 *
 * A rule's shape is its expression and clear expression with every number
 * left out: what its code does.  The numbers (thresholds, factors, the
 * second argument of predict_linear) and the rule's descriptor (for:,
 * clear_for:, M of N) are data the shape's function loads from the rule's
 * row of the data tables (cg.c, sn_rule_*).  10,000 rules made from five
 * templates are then five functions and 10,000 rows: the code stays the
 * same when a threshold changes, and the GPU's JIT (and rulec's code
 * generation) do five functions' work, not 10,000.
 */
#include "cg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Write e's shape to f; the numbers it lifts (at most CG_MAX_LITS, in
 * this walk's order) into lits.  A number past the limit stays in the
 * code and so in the key, written out. */
static void sh_key(FILE *f, const Expr *e, const Expr **lits, unsigned *nlits)
{
	if (!e) {
		fputc('_', f);
		return;
	}
	fprintf(f, "(%d", (int)e->kind);
	switch (e->kind) {
	case N_NUM:
		if (*nlits < CG_MAX_LITS) {
			if (lits)
				lits[*nlits] = e;
			++*nlits;
			fputc('#', f);
		} else {
			fprintf(f, " %a", e->u.num.v);
		}
		break;
	case N_STR:
		fprintf(f, " %zu:", e->u.str.len);
		fwrite(e->u.str.s, 1, e->u.str.len, f);
		fprintf(f, " %zu:", e->u.str.raw ? e->u.str.rawlen : 0);
		if (e->u.str.raw)
			fwrite(e->u.str.raw, 1, e->u.str.rawlen, f);
		break;
	case N_METRIC:
		fprintf(f, " %d %a %d %d", (int)e->u.metric.id, e->u.metric.window, e->u.metric.wlen != 0,
			(int)e->u.metric.partial);
		break;
	case N_CALL:
		fprintf(f, " %d %d", (int)e->u.call.id, e->u.call.nargs);
		break;
	default:
		break;
	}
	sh_key(f, e->a, lits, nlits);
	sh_key(f, e->b, lits, nlits);
	fputc(')', f);
}

/* The rule's whole key: expression, then clear.  NULL when out of memory. */
static char *sh_rule_key(const Rule *r, const Expr **lits, unsigned *nlits)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		return NULL;
	*nlits = 0;
	sh_key(f, r->expr, lits, nlits);
	fputc('|', f);
	sh_key(f, r->clear, lits, nlits);
	if (fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

unsigned cg_shape_lits(const Rule *r, const Expr **lits)
{
	unsigned n = 0;
	char *k = sh_rule_key(r, lits, &n);
	free(k);
	return n > CG_MAX_LITS ? CG_MAX_LITS : n;
}

typedef struct ShKey {
	char *key;
	uint32_t rule;
} ShKey;

static int sh_cmp(const void *a, const void *b)
{
	const ShKey *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : x->rule < y->rule ? -1 : x->rule > y->rule;
}

/* shapes numbered in the order of their first rules: a changed threshold
 * changes no number, and a rule added at the end adds a shape at the end */
static int sh_by_first(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int cg_shapes(CgShapes *s, const RuleSet *rs)
{
	memset(s, 0, sizeof *s);
	size_t n = rs ? rs->n : 0;
	if (!n)
		return 0;
	ShKey *k = calloc(n, sizeof *k);
	s->of = calloc(n, sizeof *s->of);
	s->cbase = calloc(n, sizeof *s->cbase);
	s->first = calloc(n, sizeof *s->first);
	s->consts = calloc(n * CG_MAX_LITS, sizeof *s->consts);
	int e = k && s->of && s->cbase && s->first && s->consts ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !e; i++) {
		const Expr *lits[CG_MAX_LITS];
		unsigned nl;
		k[i] = (ShKey){sh_rule_key(&rs->v[i], lits, &nl), (uint32_t)i};
		if (!k[i].key) {
			e = -ENOMEM;
			break;
		}
		if (nl > CG_MAX_LITS)
			nl = CG_MAX_LITS;
		s->cbase[i] = (uint32_t)s->nconsts;
		for (unsigned j = 0; j < nl; j++)
			s->consts[s->nconsts++] = lits[j]->u.num.v;
	}
	if (!e) {
		qsort(k, n, sizeof *k, sh_cmp);
		for (size_t i = 0; i < n; i++)       /* each group's first rule, in rule order */
			if (!i || strcmp(k[i].key, k[i - 1].key))
				s->first[s->n++] = k[i].rule;
		qsort(s->first, s->n, sizeof *s->first, sh_by_first);
		/* every rule's shape: its group's first rule's place in first[] */
		for (size_t i = 0, g = 0; i < n; i = g) {
			uint32_t lead = k[i].rule;
			for (g = i; g < n && !strcmp(k[g].key, k[i].key); g++)
				;
			uint32_t *at = bsearch(&lead, s->first, s->n, sizeof *s->first, sh_by_first);
			for (size_t j = i; j < g; j++)
				s->of[k[j].rule] = (uint32_t)(at - s->first);
		}
	}
	for (size_t i = 0; k && i < n; i++)
		free(k[i].key);
	free(k);
	if (e)
		cg_shapes_free(s);
	return e;
}

void cg_shapes_free(CgShapes *s)
{
	free(s->of);
	free(s->first);
	free(s->cbase);
	free(s->consts);
	memset(s, 0, sizeof *s);
}
