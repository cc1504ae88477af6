/* ksyms.c - a target's symbols (ktarget.h): kallsyms decoded from its
 * memory or read from a file (slid by KASLR), the loaded modules' own
 * tables, and the lookups.  Part of discovery: ktarget_int.h. */
#include "ktarget.h"
#include "kbtf.h"
#include "ktarget_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KALLSYMS_MAX_SYMS 2000000u

/* ---- symbols ---- */

static uint64_t kt_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* An open-addressing index of syms[n] by name (index + 1, 0 empty). */
static int kt_hash_syms(const KSym *syms, size_t n, size_t **hash, size_t *hcap)
{
	size_t cap = 16;
	while (cap < n * 2)
		cap *= 2;
	size_t *h = calloc(cap, sizeof *h);
	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t j = kt_hash(syms[i].name) & (cap - 1);
		while (h[j]) {
			if (!strcmp(syms[h[j] - 1].name, syms[i].name))
				goto next;   /* keep the first of duplicate (static) names */
			j = (j + 1) & (cap - 1);
		}
		h[j] = i + 1;
next:;
	}
	*hash = h;
	*hcap = cap;
	return 0;
}

static int kt_index_syms(KTarget *t) { return kt_hash_syms(t->syms, t->nsyms, &t->sym_hash, &t->sym_hash_cap); }

static const KSym *kt_find(const KSym *syms, const size_t *hash, size_t cap, const char *name)
{
	if (!cap)
		return NULL;
	size_t j = kt_hash(name) & (cap - 1);
	for (size_t k = 0; k < cap && hash[j]; k++) {
		const KSym *s = &syms[hash[j] - 1];
		if (!strcmp(s->name, name))
			return s;
		j = (j + 1) & (cap - 1);
	}
	return NULL;
}

int kt_sym(const KTarget *t, const char *name, uint64_t *addr)
{
	const KSym *s = kt_find(t->syms, t->sym_hash, t->sym_hash_cap, name);
	if (!s)
		s = kt_find(t->msyms, t->msym_hash, t->msym_hash_cap, name);
	if (!s)
		return -ENOENT;
	*addr = s->addr;
	return 0;
}

const KSym *kt_sym_at(const KTarget *t, size_t i) { return i < t->nsyms ? &t->syms[i] : NULL; }

/* Buffered sequential reads of kernel memory. */
typedef struct KtReader {
	const kx_mem *m;
	uint64_t va;
	uint8_t buf[65536];
	size_t len, pos;
} KtReader;

static int kt_getc(KtReader *r, uint8_t *c)
{
	if (r->pos == r->len) {
		int e = kx_read(r->m, r->va, r->buf, sizeof r->buf);
		if (e)
			return e;
		r->va += sizeof r->buf;
		r->len = sizeof r->buf;
		r->pos = 0;
	}
	*c = r->buf[r->pos++];
	return 0;
}

/* The decoded table's _stext against VMCOREINFO's (vm): 0 the same, 1
 * not, -1 cannot tell (no _stext in the table, or no memory to index it) */
static int kt_stext_cmp(KTarget *t, uint64_t vm)
{
	uint64_t stext;
	if (kt_index_syms(t) || kt_sym(t, "_stext", &stext))
		return -1;
	return stext != vm;
}

/* kallsyms, decoded the way kernel/kallsyms.c does it.  An address is
 * one of kallsyms_offsets' s32 entries, read three ways:
 *   - to 6.14, with kallsyms_relative_base in VMCOREINFO: relative_base
 *     + (u32)offset, or (CONFIG_KALLSYMS_ABSOLUTE_PERCPU) a non-negative
 *     offset absolute and a negative one counting down from the base;
 *   - on later kernels, whose VMCOREINFO has no kallsyms_relative_base
 *     (Debian's 7.2 is one; its per-CPU symbols are ordinary addresses
 *     in the image's per-CPU section): relative to the entry's own
 *     address, as offset_to_ptr() reads it, &kallsyms_offsets[i] + offset. */
int kt_kallsyms_memory(KTarget *t, const KtOptions *o, char *err, size_t n)
{
	uint64_t a_num, a_names, a_ttab, a_tidx, a_offs, a_base, rel_base = 0;
	uint32_t num;
	if (!kt_info_u64(t, "SYMBOL(kallsyms_num_syms)", 16, &a_num) ||
	    !kt_info_u64(t, "SYMBOL(kallsyms_names)", 16, &a_names) ||
	    !kt_info_u64(t, "SYMBOL(kallsyms_token_table)", 16, &a_ttab) ||
	    !kt_info_u64(t, "SYMBOL(kallsyms_token_index)", 16, &a_tidx) ||
	    !kt_info_u64(t, "SYMBOL(kallsyms_offsets)", 16, &a_offs))
		return ks_fail(err, n, -ENOTSUP, "VMCOREINFO of %s has no kallsyms symbols (Linux 6.0 added "
			       "them); give the symbols with --kallsyms FILE (a copy of /proc/kallsyms)", t->release);
	bool place_rel = !kt_info_u64(t, "SYMBOL(kallsyms_relative_base)", 16, &a_base);
	if (kx_read32(&t->mem, a_num, &num) || (!place_rel && kx_read64(&t->mem, a_base, &rel_base)))
		return ks_fail(err, n, -EFAULT, "cannot read kallsyms_num_syms at %#llx", (unsigned long long)a_num);
	if (num == 0 || num > KALLSYMS_MAX_SYMS)
		return ks_fail(err, n, -ERANGE, "kallsyms_num_syms = %u is implausible", num);
	/* the token table: on the heap, never static (discovery runs on
	 * several threads at once: sentineld's d_find_targets) */
	enum { TTAB = 65536 };
	char *ttab = malloc(TTAB);
	uint16_t tidx[256];
	int32_t *offs = NULL;
	KtReader *rd = NULL;
	int e = 0;
	if (!ttab) {
		e = ks_fail(err, n, -ENOMEM, "out of memory");
		goto out;
	}
	if (kx_read(&t->mem, a_ttab, ttab, TTAB - 1) || kx_read(&t->mem, a_tidx, tidx, sizeof tidx)) {
		e = ks_fail(err, n, -EFAULT, "cannot read kallsyms_token_table");
		goto out;
	}
	ttab[TTAB - 1] = 0;
	offs = malloc((size_t)num * 4);
	t->syms = calloc(num, sizeof *t->syms);
	t->sym_pool = malloc((size_t)num * 48);
	rd = malloc(sizeof *rd);
	if (!offs || !t->syms || !t->sym_pool || !rd) {
		e = ks_fail(err, n, -ENOMEM, "out of memory for %u symbols", num);
		goto out;
	}
	if (kx_read(&t->mem, a_offs, offs, (uint64_t)num * 4)) {
		e = ks_fail(err, n, -EFAULT, "cannot read kallsyms_offsets");
		goto out;
	}
	rd->m = &t->mem;
	rd->va = a_names;
	rd->len = rd->pos = 0;
	size_t pool = 0, pool_cap = (size_t)num * 48;
	for (uint32_t i = 0; i < num; i++) {
		uint8_t b0, b1 = 0;
		if (!(i & 0xffff) && (e = kt_stop(o))) {
			e = kt_stopped(err, n, e, "decoding kallsyms", NULL);
			goto out;
		}
		if ((e = kt_getc(rd, &b0)))
			break;
		unsigned len = b0;
		if (b0 & 0x80) {                    /* a "big" symbol: two-byte length */
			if ((e = kt_getc(rd, &b1)))
				break;
			len = (b0 & 0x7f) | ((unsigned)b1 << 7);
		}
		char name[512];
		size_t nl = 0;
		for (unsigned k = 0; k < len; k++) {
			uint8_t tok;
			if ((e = kt_getc(rd, &tok)))
				break;
			for (const char *s = ttab + tidx[tok]; *s && nl < sizeof name - 1 && s < ttab + TTAB; s++)
				name[nl++] = *s;
		}
		if (e)
			break;
		name[nl] = 0;
		if (nl < 2) {
			e = -EINVAL;
			break;
		}
		if (pool + nl > pool_cap) {
			e = -E2BIG;
			break;
		}
		memcpy(t->sym_pool + pool, name + 1, nl);   /* name without the type letter */
		t->syms[i].name = t->sym_pool + pool;       /* pointers fixed after any realloc: none */
		t->syms[i].type = name[0];
		pool += nl;
		/* CONFIG_KALLSYMS_ABSOLUTE_PERCPU: non-negative offsets are absolute
		 * (per-CPU symbols); negative ones count down from relative_base */
		if (place_rel)
			t->syms[i].addr = a_offs + 4ull * i + (uint64_t)(int64_t)offs[i];
		else
			t->syms[i].addr = offs[i] >= 0 ? (uint64_t)offs[i] : rel_base - 1 - (uint64_t)(int64_t)offs[i];
	}
	if (e) {
		e = ks_fail(err, n, e, "kallsyms_names is corrupt (%s)", strerror(-e));
		goto out;
	}
	t->nsyms = num;
	/* Checked against VMCOREINFO's _stext where it has one.  A
	 * base-relative table that disagrees is one without ABSOLUTE_PERCPU,
	 * every offset relative: read so once more, and checked again. */
	uint64_t stext_vm;
	bool has_vm = kt_info_u64(t, "SYMBOL(_stext)", 16, &stext_vm), reread = false;
	if (has_vm && !place_rel && kt_stext_cmp(t, stext_vm) == 1) {
		for (uint32_t i = 0; i < num; i++)
			t->syms[i].addr = rel_base + (uint32_t)offs[i];
		free(t->sym_hash);
		t->sym_hash = NULL;
		t->sym_hash_cap = 0;
		reread = true;
	}
	if (has_vm && (reread || place_rel) && kt_stext_cmp(t, stext_vm) != 0) {
		e = ks_fail(err, n, -EINVAL, "kallsyms decoded from memory (offsets from %s) disagrees with "
			    "VMCOREINFO on _stext; give --kallsyms FILE",
			    place_rel ? "their own entries" : "kallsyms_relative_base");
		goto out;
	}
	t->sym_origin = "memory (kallsyms)";
	e = t->sym_hash ? 0 : kt_index_syms(t);
out:
	free(ttab);
	free(offs);
	free(rd);
	return e;
}

/* A symbol file at link addresses (the distribution's System.map, or
 * kallsyms of another boot) moves by the KASLR slide: the image's symbols
 * move, per-CPU offsets and absolute values do not (as in /proc/kallsyms).
 * The slide: VMCOREINFO's _stext where it has one, else KERNELOFFSET when
 * the file's _stext is the default link address. */
#define KT_LINK_STEXT 0xffffffff81000000ull

static int kt_slide_file_syms(KTarget *t, uint64_t stext)
{
	uint64_t want;
	if (!kt_info_u64(t, "SYMBOL(_stext)", 16, &want))
		want = stext == KT_LINK_STEXT ? stext + t->kaslr_offset : stext;
	if (want == stext)
		return 0;
	uint64_t delta = want - stext;
	for (size_t i = 0; i < t->nsyms; i++)
		if (t->syms[i].addr >= KX_START_KERNEL_MAP)
			t->syms[i].addr += delta;
	t->sym_slid = true;
	return 0;
}

int kt_kallsyms_file(KTarget *t, const char *path, char *err, size_t n)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return ks_fail(err, n, -errno, "%s: %s", path, strerror(errno));
	size_t cap = 1 << 16, pool_cap = 1 << 22, pool = 0;
	t->syms = malloc(cap * sizeof *t->syms);
	t->sym_pool = malloc(pool_cap);
	char line[1024];
	size_t *name_off = malloc(cap * sizeof *name_off);
	int e = 0;
	while (t->syms && t->sym_pool && name_off && fgets(line, sizeof line, f)) {
		unsigned long long a;
		char type, name[512];
		if (sscanf(line, "%llx %c %511s", &a, &type, name) != 3)
			continue;
		size_t nl = strlen(name) + 1;
		if (t->nsyms == cap) {
			cap *= 2;
			t->syms = realloc(t->syms, cap * sizeof *t->syms);
			name_off = realloc(name_off, cap * sizeof *name_off);
			if (!t->syms || !name_off) { e = -ENOMEM; break; }
		}
		if (pool + nl > pool_cap) {
			pool_cap *= 2;
			t->sym_pool = realloc(t->sym_pool, pool_cap);
			if (!t->sym_pool) { e = -ENOMEM; break; }
		}
		memcpy(t->sym_pool + pool, name, nl);
		name_off[t->nsyms] = pool;
		t->syms[t->nsyms++] = (KSym){NULL, a, type};
		pool += nl;
	}
	fclose(f);
	if (e || !t->syms || !t->sym_pool || !name_off) {
		free(name_off);
		return ks_fail(err, n, -ENOMEM, "out of memory reading %s", path);
	}
	for (size_t i = 0; i < t->nsyms; i++)
		t->syms[i].name = t->sym_pool + name_off[i];
	free(name_off);
	uint64_t stext;
	if (!t->nsyms)
		return ks_fail(err, n, -EINVAL, "%s holds no symbols (expected /proc/kallsyms format: ADDRESS TYPE NAME)", path);
	t->sym_origin = path;
	e = kt_index_syms(t);
	if (e)
		return e;
	if (kt_sym(t, "_stext", &stext))
		return ks_fail(err, n, -EINVAL, "%s has no _stext: not a copy of /proc/kallsyms or a System.map "
			       "(Debian's System.map is a placeholder: copy /proc/kallsyms from the target)", path);
	if (stext == 0)
		return ks_fail(err, n, -EPERM, "%s has zero addresses: copy /proc/kallsyms as root", path);
	return kt_slide_file_syms(t, stext);
}

/* Loaded modules' symbols.  Each module keeps its own table
 * (module->kallsyms: an ELF symbol table, its strings and a type letter
 * each; what /proc/kallsyms lists after the kernel's), with the symbols'
 * final addresses.  Read once, at kt_open: a module loaded later is not
 * seen.  Optional, as the modules' BTF. */
#define KT_MODSYM_MAX 65536          /* symbols of one module */
#define KT_MODSYM_NAME 128           /* room past the last name's start */

typedef struct KtElfSym {             /* Elf64_Sym */
	uint32_t st_name;
	uint8_t st_info, st_other;
	uint16_t st_shndx;
	uint64_t st_value, st_size;
} KtElfSym;

/* Append one module's table (at ks) to t->msyms; names as offsets into
 * t->msym_pool until the end (the pool moves as it grows). */
static void kt_module_syms(KTarget *t, uint64_t ks, const uint32_t *o, size_t *pool_len, size_t *pool_cap)
{
	uint64_t symtab, strtab, typetab = 0;
	uint32_t num;
	KtElfSym *sy = NULL;
	char *str = NULL, *types = NULL;
	if (kx_read64(&t->mem, ks + o[0], &symtab) || kx_read32(&t->mem, ks + o[1], &num) ||
	    kx_read64(&t->mem, ks + o[2], &strtab) || !num || num > KT_MODSYM_MAX)
		return;
	if (o[3] != UINT32_MAX && kx_read64(&t->mem, ks + o[3], &typetab))
		typetab = 0;
	sy = malloc(num * sizeof *sy);
	if (!sy || kx_read(&t->mem, symtab, sy, num * sizeof *sy))
		goto out;
	uint32_t last = 0;
	for (uint32_t i = 0; i < num; i++)
		if (sy[i].st_name > last)
			last = sy[i].st_name;
	/* the strings end somewhere in the last name: the longest read that
	 * works; a name offset the guest put past any real module's table
	 * (its u32 would have us allocate 4 GiB) is not read at all */
	if (last > KT_MODSYM_STRTAB_MAX || t->nmsyms + num > KT_MODSYMS_MAX)
		goto out;
	size_t len = (size_t)last + KT_MODSYM_NAME;
	str = malloc(len);
	while (str && len > last && kx_read(&t->mem, strtab, str, len))
		len = last + (len - last) / 2;
	if (!str || len <= last)
		goto out;
	if (typetab && (types = malloc(num)) && kx_read(&t->mem, typetab, types, num)) {
		free(types);
		types = NULL;
	}
	KSym *m = realloc(t->msyms, (t->nmsyms + num) * sizeof *m);
	if (!m)
		goto out;
	t->msyms = m;
	for (uint32_t i = 0; i < num; i++) {
		const char *nm = str + sy[i].st_name;
		size_t nl = sy[i].st_name < len ? strnlen(nm, len - sy[i].st_name) : 0;
		if (!sy[i].st_name || !sy[i].st_value || !nl || sy[i].st_name + nl >= len)
			continue;                /* the null symbol, an undefined one, a name cut off */
		if (*pool_len + nl + 1 > *pool_cap) {
			size_t cap = *pool_cap ? 2 * *pool_cap : 65536;
			while (cap < *pool_len + nl + 1)
				cap *= 2;
			char *p = realloc(t->msym_pool, cap);
			if (!p)
				goto out;
			t->msym_pool = p;
			*pool_cap = cap;
		}
		memcpy(t->msym_pool + *pool_len, nm, nl + 1);
		t->msyms[t->nmsyms++] = (KSym){.name = (const char *)(uintptr_t)*pool_len, .addr = sy[i].st_value,
					       .type = types ? types[i] : '?'};
		*pool_len += nl + 1;
	}
out:
	free(sy);
	free(str);
	free(types);
}

int kt_setup_module_syms(KTarget *t, const KtOptions *opt)
{
	uint64_t head, node;
	uint32_t o_list, o_ks, o[4], sz_num;
	if (kt_sym(t, "modules", &head) || kb_field_offset(t->btf, "module", "list", &o_list, NULL) ||
	    kb_field_offset(t->btf, "module", "kallsyms", &o_ks, NULL) ||
	    kb_field_offset(t->btf, "mod_kallsyms", "symtab", &o[0], NULL) ||
	    kb_field_offset(t->btf, "mod_kallsyms", "num_symtab", &o[1], &sz_num) || sz_num != 4 ||
	    kb_field_offset(t->btf, "mod_kallsyms", "strtab", &o[2], NULL))
		return 0;
	if (kb_field_offset(t->btf, "mod_kallsyms", "typetab", &o[3], NULL))
		o[3] = UINT32_MAX;
	size_t pool_len = 0, pool_cap = 0;
	kx_list_iter it;
	kx_list_begin(&it, head, KT_MAX_MODULES);
	int e = 0;
	while (!e && kx_list_next(&t->mem, &it, &node) > 0) {
		uint64_t ks;
		if (!kx_read64(&t->mem, node - o_list + o_ks, &ks) && ks)
			kt_module_syms(t, ks, o, &pool_len, &pool_cap);
		e = kt_stop(opt);
	}
	for (size_t i = 0; i < t->nmsyms; i++)
		t->msyms[i].name = t->msym_pool + (uintptr_t)t->msyms[i].name;
	if (t->nmsyms && kt_hash_syms(t->msyms, t->nmsyms, &t->msym_hash, &t->msym_hash_cap))
		t->nmsyms = 0;
	return e;
}
