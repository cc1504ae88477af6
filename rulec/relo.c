/* relo.c - relocation records (see relo.h). */
#include "relo.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const relo_kind_names[] = {
#define X(id, s) s,
	RELO_KINDS(X)
#undef X
};

const char *relo_kind_name(ReloKind k) { return k < RELO__KINDS ? relo_kind_names[k] : "?"; }

int relo_kind_parse(const char *s, ReloKind *k)
{
	for (int i = 0; i < RELO__KINDS; i++)
		if (!strcmp(s, relo_kind_names[i])) {
			*k = (ReloKind)i;
			return 0;
		}
	return -EINVAL;
}

long relo_intern(ReloSet *r, ReloKind kind, const char *a, const char *b, uint32_t bits, bool weak)
{
	for (size_t i = 0; i < r->n; i++) {
		Relo *x = &r->v[i];
		if (x->kind == kind && !strcmp(x->a, a) && !strcmp(x->b, b)) {
			if (kind == RELO_FIELD && x->bits != bits)
				x->bits = 0;     /* read at two sizes: check neither */
			return (long)i;
		}
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		Relo *v = realloc(r->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	Relo *x = &r->v[r->n];
	x->kind = kind;
	x->a = u_xstrdup(a);
	x->b = u_xstrdup(b);
	x->bits = bits;
	x->weak = weak;
	if (!x->a || !x->b) {
		free(x->a);
		free(x->b);
		return -ENOMEM;
	}
	return (long)r->n++;
}

void relo_free(ReloSet *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].a);
		free(r->v[i].b);
	}
	for (size_t i = 0; i < r->nuse; i++) {
		free(r->use[i].fn);
		free(r->use[i].idx);
		free(r->use[i].required);
	}
	free(r->v);
	free(r->use);
	memset(r, 0, sizeof *r);
}

void relo_describe(const Relo *r, char *buf, size_t n)
{
	switch (r->kind) {
	case RELO_FIELD: snprintf(buf, n, "field %s.%s", r->a, r->b); break;
	case RELO_SIZE: snprintf(buf, n, "the size of struct %s", r->a); break;
	case RELO_ENUM: snprintf(buf, n, "enumerator %s of enum %s", r->b, r->a); break;
	case RELO_EXISTS: snprintf(buf, n, "whether %s.%s exists", r->a, r->b); break;
	case RELO_TYPE: snprintf(buf, n, "whether struct %s exists", r->a); break;
	case RELO_SYM: snprintf(buf, n, "kernel symbol %s", r->a); break;
	default: snprintf(buf, n, "?"); break;
	}
}


ReloUse *relo_use(ReloSet *r, const char *fn)
{
	for (size_t i = 0; i < r->nuse; i++)
		if (!strcmp(r->use[i].fn, fn))
			return &r->use[i];
	if (r->nuse == r->capuse) {
		size_t cap = r->capuse ? r->capuse * 2 : 64;
		ReloUse *v = realloc(r->use, cap * sizeof *v);
		if (!v)
			return NULL;
		r->use = v;
		r->capuse = cap;
	}
	ReloUse *u = &r->use[r->nuse];
	memset(u, 0, sizeof *u);
	u->fn = strdup(fn);
	if (!u->fn)
		return NULL;
	r->nuse++;
	return u;
}

const ReloUse *relo_find_use(const ReloSet *r, const char *fn)
{
	for (size_t i = 0; i < r->nuse; i++)
		if (!strcmp(r->use[i].fn, fn))
			return &r->use[i];
	return NULL;
}

int relo_use_add(ReloUse *u, uint32_t idx, bool required)
{
	for (size_t j = 0; j < u->n; j++)
		if (u->idx[j] == idx)
			return 0;
	uint32_t *ni = realloc(u->idx, (u->n + 1) * sizeof *ni);
	if (!ni)
		return -ENOMEM;
	u->idx = ni;
	bool *nr = realloc(u->required, (u->n + 1) * sizeof *nr);
	if (!nr)
		return -ENOMEM;
	u->required = nr;
	u->idx[u->n] = idx;
	u->required[u->n] = required;
	u->n++;
	return 0;
}
