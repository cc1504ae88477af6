/* kbtf.h - kernel types from BTF: resolve "symbol.field[i].field" paths and
 * print what they point at, the way a tiny drgn would. */
#ifndef SENTINEL_KBTF_H
#define SENTINEL_KBTF_H

#include "ktarget.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A typed place in kernel memory. */
typedef struct KbPlace {
	uint64_t addr;      /* address (per-CPU variables: the per-CPU offset) */
	uint32_t type;      /* BTF type id */
	uint32_t nelem;     /* > 0: an array of nelem elements of type */
	bool percpu;        /* addr is a per-CPU offset: add __per_cpu_offset[cpu] */
	uint32_t bit_off;   /* a bitfield: bit offset within addr ... */
	uint32_t bit_size;  /* ... and width (0: not a bitfield) */
} KbPlace;

/* Resolve PATH -> SYMBOL [':' TYPE] { '.' FIELD | '[' INDEX ']' }.
 * TYPE is a C type name as BTF spells it ("struct task_struct", "u64",
 * "atomic_long_t", "unsigned long[3]").  Returns 0 or -errno with a message. */
int kb_resolve(const KTarget *t, const char *path, KbPlace *out, char *err, size_t errlen);

/* The byte offset of FIELD (dotted, through anonymous members) in struct
 * NAME, or -ENOENT; the compiler's relocations and the walks use this. */
int kb_field_offset(const struct btf *btf, const char *strct, const char *field, uint32_t *off, uint32_t *size);

/* BTF lookups for the loader's relocations: a struct, union or typedef of
 * one by name (its id, or -ENOENT); a member by name through anonymous
 * members; an enumerator, preferring enum enum_name (NULL: any enum). */
int kb_composite(const struct btf *btf, const char *name);
bool kb_member(const struct btf *btf, uint32_t id, const char *name, uint32_t *bit_off, uint32_t *mtype,
	       uint32_t *bit_size);
bool kb_enumerator(const struct btf *btf, const char *enum_name, const char *name, int64_t *v);

/* Print the value at p (on cpu, for per-CPU places).  Returns 0 or -errno. */
int kb_print(const KTarget *t, const KbPlace *p, uint32_t cpu, FILE *out, int depth);
/* An integer at p, for sums. */
int kb_read_int(const KTarget *t, const KbPlace *p, uint32_t cpu, int64_t *v);
bool kb_is_int(const KTarget *t, const KbPlace *p);

#endif
