/* relo.h - relocations: what the compiled metric library needs to know
 * about the target kernel, named the way BTF and kallsyms name it.
 *
 * rulec's CO-RE pass (core.c) records them while it compiles; the bundle
 * carries them; the loader (engine/reloc.c) resolves each one against the
 * target and fills the table the compiled code reads.  No LLVM here: the
 * engine uses this without it.
 *
 * Ownership: a ReloSet owns its strings and arrays; relo_free().
 */
#ifndef SENTINEL_RELO_H
#define SENTINEL_RELO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(ID, "name"): relocation kinds, as the bundle spells them */
#define RELO_KINDS(X) \
	X(FIELD, "field")     /* byte offset of field b in struct a */ \
	X(SIZE, "size")       /* sizeof(struct a) */ \
	X(ENUM, "enum")       /* value of enumerator b of enum a */ \
	X(EXISTS, "exists")   /* 1 if struct a has field b */ \
	X(TYPE, "type")       /* 1 if struct a exists */ \
	X(SYM, "symbol")      /* address of kernel symbol a */

typedef enum {
#define X(id, s) RELO_##id,
	RELO_KINDS(X)
#undef X
	RELO__KINDS
} ReloKind;

/* An address that no kernel pointer can be: the upper half of the user
 * range (and, as an offset, it moves a kernel address there).  Reads
 * through it fail translation. */
#define RELO_POISON 0x4000000000000000ull

typedef struct Relo {
	ReloKind kind;
	char *a, *b;          /* struct/enum/symbol name; field/enumerator ("" if none) */
	uint32_t bits;        /* FIELD: the local field's size in bits (0: composite) */
	bool weak;            /* SYM: the symbol may be missing (address 0) */
} Relo;

/* Which relocations a metric entry point needs; optional ones (guarded by
 * an EXISTS or TYPE test, a `___flavour` struct, a weak symbol) may fail. */
typedef struct ReloUse {
	char *fn;
	uint32_t *idx;
	bool *required;
	size_t n;
} ReloUse;

typedef struct ReloSet {
	Relo *v;
	size_t n, cap;
	ReloUse *use;
	size_t nuse, capuse;
} ReloSet;

const char *relo_kind_name(ReloKind k);
int relo_kind_parse(const char *s, ReloKind *k);
/* Find or add a relocation; returns its index, or -ENOMEM. */
long relo_intern(ReloSet *r, ReloKind kind, const char *a, const char *b, uint32_t bits, bool weak);
/* The entry point fn's record, added if absent (NULL: out of memory). */
ReloUse *relo_use(ReloSet *r, const char *fn);
const ReloUse *relo_find_use(const ReloSet *r, const char *fn);
/* Add relocation idx to u's list (once); required is recomputed by caller. */
int relo_use_add(ReloUse *u, uint32_t idx, bool required);
void relo_free(ReloSet *r);
/* "field task_struct.stime" and the like, for messages. */
void relo_describe(const Relo *r, char *buf, size_t n);

#endif
