/* kbtf.c - BTF-typed paths (see kbtf.h). */
#include "kbtf.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>


/* Types of common globals: BTF describes per-CPU variables but not others. */
static const struct { const char *sym, *type; } kb_known[] = {
	{"jiffies_64", "u64"}, {"jiffies", "unsigned long"}, {"nr_threads", "int"},
	{"total_forks", "unsigned long"}, {"_totalram_pages", "atomic_long_t"},
	{"init_task", "struct task_struct"}, {"avenrun", "unsigned long[3]"},
	{"vm_zone_stat", "atomic_long_t[NR_VM_ZONE_STAT_ITEMS]"},
	{"vm_node_stat", "atomic_long_t[NR_VM_NODE_STAT_ITEMS]"},
	{"vm_numa_event", "atomic_long_t[NR_VM_NUMA_EVENT_ITEMS]"},
	{"nr_swap_pages", "atomic_long_t"}, {"total_swap_pages", "long"},
	{"totalreserve_pages", "unsigned long"}, {"page_offset_base", "unsigned long"},
	{"vmalloc_base", "unsigned long"}, {"vmemmap_base", "unsigned long"},
	{"phys_base", "unsigned long"}, {"init_uts_ns", "struct uts_namespace"},
	{"nr_cpu_ids", "unsigned int"}, {"max_pfn", "unsigned long"},
	{"__per_cpu_offset", "unsigned long[NR_CPUS]"}, {"init_mm", "struct mm_struct"},
	{"__cpu_online_mask", "struct cpumask"}, {"__cpu_possible_mask", "struct cpumask"},
	{"nr_running", "unsigned int"}, {"sysctl_overcommit_memory", "int"},
};

/* A name in BTF; "" where its offset lies outside the strings.  The
 * kernel's BTF is read from the guest's memory, and libbpf (1.1) parses
 * one whose types name any offset: btf__name_by_offset is NULL for those
 * (found by tests/fuzz/fuzz_discover.c). */
static const char *kb_name(const struct btf *b, uint32_t off)
{
	const char *s = btf__name_by_offset(b, off);
	return s ? s : "";
}

static uint32_t kb_skip(const struct btf *b, uint32_t id)
{
	for (int i = 0; i < 32; i++) {
		const struct btf_type *t = btf__type_by_id(b, id);
		if (!t)
			return id;
		switch (btf_kind(t)) {
		case BTF_KIND_TYPEDEF:
		case BTF_KIND_CONST:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			id = t->type;
			break;
		default:
			return id;
		}
	}
	return id;
}

/* An enum constant's value, for array lengths like NR_VM_ZONE_STAT_ITEMS. */
static bool kb_enum_value(const struct btf *b, const char *name, int64_t *v)
{
	return kb_enumerator(b, NULL, name, v);
}

bool kb_enumerator(const struct btf *b, const char *enum_name, const char *name, int64_t *v)
{
	uint32_t n = btf__type_cnt(b);
	bool found = false;
	for (uint32_t id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(b, id);
		if (!btf_is_enum(t) && !btf_is_enum64(t))
			continue;
		bool named = enum_name && !strcmp(kb_name(b, t->name_off), enum_name);
		if (found && !named)
			continue;           /* keep looking for the named enum */
		for (uint16_t i = 0; i < btf_vlen(t); i++) {
			const char *en = kb_name(b, btf_is_enum(t) ? btf_enum(t)[i].name_off : btf_enum64(t)[i].name_off);
			if (strcmp(en, name))
				continue;
			*v = btf_is_enum(t) ? (int64_t)btf_enum(t)[i].val : (int64_t)btf_enum64_value(&btf_enum64(t)[i]);
			if (named || !enum_name)
				return true;
			found = true;
		}
	}
	return found;
}

int kb_composite(const struct btf *b, const char *name)
{
	int id = btf__find_by_name_kind(b, name, BTF_KIND_STRUCT);
	if (id < 0)
		id = btf__find_by_name_kind(b, name, BTF_KIND_UNION);
	if (id < 0) {
		id = btf__find_by_name_kind(b, name, BTF_KIND_TYPEDEF);
		if (id >= 0) {
			uint32_t r = kb_skip(b, (uint32_t)id);
			const struct btf_type *t = btf__type_by_id(b, r);
			id = t && btf_is_composite(t) ? (int)r : -ENOENT;
		}
	}
	return id < 0 ? -ENOENT : id;
}

/* TYPE -> [struct|union|enum] NAME [ '[' (N | ENUM_CONSTANT) ']' ] */
static int kb_parse_type(const struct btf *b, const char *spec, uint32_t *id, uint32_t *nelem,
			 char *err, size_t n)
{
	char name[128];
	const char *br = strchr(spec, '[');
	size_t len = br ? (size_t)(br - spec) : strlen(spec);
	if (len >= sizeof name)
		return ks_fail(err, n, -EINVAL, "type name too long");
	memcpy(name, spec, len);
	name[len] = 0;
	while (len && name[len - 1] == ' ')
		name[--len] = 0;
	int kind = BTF_KIND_UNKN;
	const char *nm = name;
	if (!strncmp(name, "struct ", 7)) { kind = BTF_KIND_STRUCT; nm += 7; }
	else if (!strncmp(name, "union ", 6)) { kind = BTF_KIND_UNION; nm += 6; }
	else if (!strncmp(name, "enum ", 5)) { kind = BTF_KIND_ENUM; nm += 5; }
	/* C spellings of BTF integer names */
	static const struct { const char *c, *b; } alias[] = {
		{"unsigned long", "long unsigned int"}, {"unsigned int", "unsigned int"},
		{"long", "long int"}, {"unsigned long long", "long long unsigned int"},
		{"long long", "long long int"}, {"unsigned short", "short unsigned int"},
	};
	for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (!strcmp(nm, alias[i].c))
			nm = alias[i].b;
	int r;
	if (kind != BTF_KIND_UNKN) {
		r = btf__find_by_name_kind(b, nm, kind);
	} else {
		r = btf__find_by_name_kind(b, nm, BTF_KIND_TYPEDEF);
		if (r < 0) r = btf__find_by_name_kind(b, nm, BTF_KIND_INT);
		if (r < 0) r = btf__find_by_name_kind(b, nm, BTF_KIND_STRUCT);
	}
	if (r < 0)
		return ks_fail(err, n, -ENOENT, "the kernel's BTF has no type '%s'", name);
	*id = (uint32_t)r;
	*nelem = 0;
	if (br) {
		char cnt[64];
		const char *end = strchr(br, ']');
		if (!end || end - br - 1 >= (long)sizeof cnt)
			return ks_fail(err, n, -EINVAL, "bad array length in '%s'", spec);
		memcpy(cnt, br + 1, (size_t)(end - br - 1));
		cnt[end - br - 1] = 0;
		char *e;
		long v = strtol(cnt, &e, 0);
		int64_t ev;
		if (*e && !strcmp(cnt, "NR_CPUS"))
			v = KX_MAX_CPUS;
		else if (*e && kb_enum_value(b, cnt, &ev))
			v = (long)ev;
		else if (*e)
			return ks_fail(err, n, -ENOENT, "array length '%s' is neither a number nor an enum constant in BTF", cnt);
		if (v <= 0 || v > 1 << 20)
			return ks_fail(err, n, -ERANGE, "array length %ld is implausible", v);
		*nelem = (uint32_t)v;
	}
	return 0;
}

/* A member of a struct/union by name, descending into anonymous members. */
bool kb_member(const struct btf *b, uint32_t id, const char *name, uint32_t *bit_off, uint32_t *mtype,
	       uint32_t *bit_size)
{
	/* explicit stack instead of recursion; anonymous nesting is shallow */
	struct frame { uint32_t id, base; } st[16];
	int sp = 0;
	st[sp++] = (struct frame){kb_skip(b, id), 0};
	while (sp > 0) {
		uint32_t cid = st[--sp].id, base = st[sp].base;
		const struct btf_type *t = btf__type_by_id(b, cid);
		if (!t || !btf_is_composite(t))
			continue;
		const struct btf_member *m = btf_members(t);
		for (uint16_t i = 0; i < btf_vlen(t); i++) {
			const char *mn = btf__name_by_offset(b, m[i].name_off);
			uint32_t off = base + btf_member_bit_offset(t, i);
			if (mn && *mn) {
				if (!strcmp(mn, name)) {
					*bit_off = off;
					*mtype = m[i].type;
					*bit_size = btf_member_bitfield_size(t, i);
					return true;
				}
			} else if (sp < 16) {
				st[sp++] = (struct frame){kb_skip(b, m[i].type), off};
			}
		}
	}
	return false;
}

int kb_field_offset(const struct btf *b, const char *strct, const char *field, uint32_t *off, uint32_t *size)
{
	int id = btf__find_by_name_kind(b, strct, BTF_KIND_STRUCT);
	if (id < 0)
		return -ENOENT;
	uint32_t cur = (uint32_t)id, total = 0, bits = 0, mt = 0, bs;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", field);
	for (char *save, *f = strtok_r(buf, ".", &save); f; f = strtok_r(NULL, ".", &save)) {
		if (!kb_member(b, cur, f, &bits, &mt, &bs) || bits % 8)
			return -ENOENT;
		total += bits / 8;
		cur = mt;
	}
	*off = total;
	if (size) {
		int64_t s = btf__resolve_size(b, mt);
		*size = s > 0 ? (uint32_t)s : 0;
	}
	return 0;
}

static int kb_percpu_var(const struct btf *b, const char *name, uint32_t *type)
{
	uint32_t n = btf__type_cnt(b);
	for (uint32_t id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(b, id);
		if (btf_is_var(t) && !strcmp(kb_name(b, t->name_off), name)) {
			*type = t->type;
			return 0;
		}
	}
	return -ENOENT;
}

int kb_resolve(const KTarget *t, const char *path, KbPlace *out, char *err, size_t n)
{
	const struct btf *b = t->btf;
	char sym[128];
	size_t sl = strcspn(path, ".[:");
	if (sl == 0 || sl >= sizeof sym)
		return ks_fail(err, n, -EINVAL, "'%s' does not start with a symbol name", path);
	memcpy(sym, path, sl);
	sym[sl] = 0;
	const char *p = path + sl;
	KbPlace pl = {0};
	if (kt_sym(t, sym, &pl.addr))
		return ks_fail(err, n, -ENOENT, "the kernel has no symbol '%s'", sym);
	char typespec[160] = "";
	if (*p == ':') {
		size_t tl = strcspn(p + 1, ".");
		/* a '[' right after the type name is part of the type */
		if (tl >= sizeof typespec)
			return ks_fail(err, n, -EINVAL, "type too long");
		memcpy(typespec, p + 1, tl);
		typespec[tl] = 0;
		p += 1 + tl;
	}
	int e;
	if (*typespec) {
		if ((e = kb_parse_type(b, typespec, &pl.type, &pl.nelem, err, n)))
			return e;
	} else if (kb_percpu_var(b, sym, &pl.type) == 0) {
		pl.percpu = true;
	} else {
		const char *known = NULL;
		for (size_t i = 0; i < sizeof kb_known / sizeof kb_known[0]; i++)
			if (!strcmp(kb_known[i].sym, sym))
				known = kb_known[i].type;
		if (!known)
			return ks_fail(err, n, -ENOENT, "BTF describes per-CPU variables only, and '%s' is not one: "
				       "name its type, e.g. %s:u64 or %s:struct task_struct", sym, sym, sym);
		if ((e = kb_parse_type(b, known, &pl.type, &pl.nelem, err, n)))
			return e;
	}
	/* { '.' FIELD | '[' INDEX ']' } */
	while (*p) {
		if (*p == '.') {
			char f[128];
			size_t fl = strcspn(p + 1, ".[");
			if (!fl || fl >= sizeof f)
				return ks_fail(err, n, -EINVAL, "empty or long field name in '%s'", path);
			memcpy(f, p + 1, fl);
			f[fl] = 0;
			uint32_t bit, mt, bs;
			if (pl.nelem)
				return ks_fail(err, n, -EINVAL, "'.%s' applied to an array; index it first: [0]", f);
			const struct btf_type *ty = btf__type_by_id(b, kb_skip(b, pl.type));
			if (!ty || !btf_is_composite(ty))
				return ks_fail(err, n, -EINVAL, "'.%s' applied to something that is not a struct or union", f);
			if (!kb_member(b, pl.type, f, &bit, &mt, &bs))
				return ks_fail(err, n, -ENOENT, "%s %s has no field '%s' in this kernel",
					       btf_is_struct(ty) ? "struct" : "union",
					       kb_name(b, ty->name_off), f);
			pl.addr += bit / 8;
			pl.bit_off = bs ? bit % 8 : 0;
			pl.bit_size = bs;
			pl.type = mt;
			p += 1 + fl;
		} else if (*p == '[') {
			char *end;
			long idx = strtol(p + 1, &end, 0);
			if (end == p + 1) {                 /* an enum constant: [NR_FREE_PAGES] */
				char en[96];
				size_t el = strcspn(p + 1, "]");
				int64_t ev;
				if (el >= sizeof en || p[1 + el] != ']')
					return ks_fail(err, n, -EINVAL, "bad index in '%s'", path);
				memcpy(en, p + 1, el);
				en[el] = 0;
				if (!kb_enum_value(b, en, &ev))
					return ks_fail(err, n, -ENOENT, "index '%s' is not an enum constant in this kernel's BTF", en);
				idx = (long)ev;
				end = (char *)p + 1 + el;
			}
			if (*end != ']' || idx < 0)
				return ks_fail(err, n, -EINVAL, "bad index in '%s'", path);
			uint32_t et, cnt;
			if (pl.nelem) {
				et = pl.type;
				cnt = pl.nelem;
			} else {
				const struct btf_type *ty = btf__type_by_id(b, kb_skip(b, pl.type));
				if (!ty || !btf_is_array(ty))
					return ks_fail(err, n, -EINVAL, "[%ld] applied to something that is not an array", idx);
				et = btf_array(ty)->type;
				cnt = btf_array(ty)->nelems;
			}
			if ((uint32_t)idx >= cnt)
				return ks_fail(err, n, -ERANGE, "index %ld is past the end of an array of %u", idx, cnt);
			int64_t es = btf__resolve_size(b, et);
			if (es <= 0)
				return ks_fail(err, n, -EINVAL, "array element of unknown size");
			pl.addr += (uint64_t)idx * (uint64_t)es;
			pl.type = et;
			pl.nelem = 0;
			p = end + 1;
		} else {
			return ks_fail(err, n, -EINVAL, "unexpected '%c' in '%s'", *p, path);
		}
	}
	*out = pl;
	return 0;
}

static int kb_addr(const KTarget *t, const KbPlace *p, uint32_t cpu, uint64_t *va)
{
	if (!p->percpu) {
		*va = p->addr;
		return 0;
	}
	return kx_percpu(&t->cpus, p->addr, cpu, va);
}

bool kb_is_int(const KTarget *t, const KbPlace *p)
{
	const struct btf_type *ty = btf__type_by_id(t->btf, kb_skip(t->btf, p->type));
	return !p->nelem && ty && (btf_is_int(ty) || btf_is_enum(ty) || btf_is_ptr(ty) ||
		(btf_is_composite(ty) && btf_vlen(ty) == 1 && kb_is_int(t, &(KbPlace){.type = btf_members(ty)[0].type})));
}

int kb_read_int(const KTarget *t, const KbPlace *p, uint32_t cpu, int64_t *v)
{
	uint32_t id = kb_skip(t->btf, p->type);
	const struct btf_type *ty = btf__type_by_id(t->btf, id);
	if (!ty)
		return -EINVAL;
	if (btf_is_composite(ty) && btf_vlen(ty) == 1)       /* atomic_t, atomic_long_t */
		return kb_read_int(t, &(KbPlace){.addr = p->addr + btf_members(ty)[0].offset / 8,
			.type = btf_members(ty)[0].type, .percpu = p->percpu}, cpu, v);
	int64_t size = btf__resolve_size(t->btf, id);
	if (size <= 0 || size > 8)
		return -EINVAL;
	uint64_t va, raw = 0;
	int e = kb_addr(t, p, cpu, &va);
	if (e || (e = kx_read(&t->mem, va, &raw, (uint64_t)size)))
		return e;
	bool sgn = btf_is_int(ty) ? (btf_int_encoding(ty) & BTF_INT_SIGNED) : btf_is_enum(ty) ? btf_kflag(ty) : false;
	if (p->bit_size) {
		raw = (raw >> p->bit_off) & ((1ull << p->bit_size) - 1);
		sgn = false;
	}
	if (sgn && size < 8 && (raw >> (size * 8 - 1) & 1))
		raw |= ~0ull << (size * 8);
	*v = (int64_t)raw;
	if (!sgn && size == 8)
		*v = (int64_t)raw;
	return 0;
}

static void kb_indent(FILE *out, int depth)
{
	for (int i = 0; i < depth; i++)
		fputs("  ", out);
}

int kb_print(const KTarget *t, const KbPlace *p, uint32_t cpu, FILE *out, int depth)
{
	const struct btf *b = t->btf;
	uint32_t id = kb_skip(b, p->type);
	const struct btf_type *ty = btf__type_by_id(b, id);
	uint64_t va;
	int e;
	if (!ty)
		return -EINVAL;
	if ((e = kb_addr(t, p, cpu, &va)))
		return e;
	if (p->nelem || btf_is_array(ty)) {
		uint32_t et = p->nelem ? p->type : btf_array(ty)->type, cnt = p->nelem ? p->nelem : btf_array(ty)->nelems;
		const struct btf_type *ety = btf__type_by_id(b, kb_skip(b, et));
		int64_t es = btf__resolve_size(b, et);
		if (ety && btf_is_int(ety) && es == 1) {        /* char[]: a string */
			char s[256] = {0};
			uint32_t m = cnt < sizeof s - 1 ? cnt : sizeof s - 1;
			if ((e = kx_read(&t->mem, va, s, m)))
				return e;
			fprintf(out, "\"%s\"", s);
			return 0;
		}
		fputc('[', out);
		for (uint32_t i = 0; i < cnt && i < 64; i++) {
			if (i)
				fputs(", ", out);
			KbPlace el = {.addr = va + i * (uint64_t)es, .type = et};
			if ((e = kb_print(t, &el, cpu, out, depth + 1)))
				return e;
		}
		fputs(cnt > 64 ? ", ...]" : "]", out);
		return 0;
	}
	if (btf_is_composite(ty)) {
		if (btf_vlen(ty) == 1 && kb_is_int(t, p)) {     /* atomic_t and friends print as numbers */
			int64_t v;
			if ((e = kb_read_int(t, p, cpu, &v)))
				return e;
			fprintf(out, "%lld", (long long)v);
			return 0;
		}
		if (depth >= 2) {
			fputs("{...}", out);
			return 0;
		}
		fputs("{\n", out);
		const struct btf_member *m = btf_members(ty);
		for (uint16_t i = 0; i < btf_vlen(ty); i++) {
			const char *mn = btf__name_by_offset(b, m[i].name_off);
			uint32_t bit = btf_member_bit_offset(ty, i), bs = btf_member_bitfield_size(ty, i);
			KbPlace f = {.addr = va + bit / 8, .type = m[i].type, .bit_off = bs ? bit % 8 : 0, .bit_size = bs};
			kb_indent(out, depth + 1);
			fprintf(out, "%s = ", mn && *mn ? mn : "(anonymous)");
			if (kb_print(t, &f, cpu, out, depth + 1))
				fputs("<read error>", out);
			fputs(",\n", out);
		}
		kb_indent(out, depth);
		fputc('}', out);
		return 0;
	}
	if (btf_is_ptr(ty)) {
		uint64_t v;
		if ((e = kx_read(&t->mem, va, &v, 8)))
			return e;
		fprintf(out, "0x%llx", (unsigned long long)v);
		return 0;
	}
	if (btf_is_int(ty) || btf_is_enum(ty)) {
		int64_t v;
		KbPlace q = *p;
		q.addr = va;
		q.percpu = false;
		if ((e = kb_read_int(t, &q, cpu, &v)))
			return e;
		bool sgn = btf_is_int(ty) ? (btf_int_encoding(ty) & BTF_INT_SIGNED) : true;
		if (sgn)
			fprintf(out, "%lld", (long long)v);
		else
			fprintf(out, "%llu", (unsigned long long)v);
		return 0;
	}
	fputs("<unprintable>", out);
	return 0;
}
