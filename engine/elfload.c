/* elfload.c - the bundle's x86-64 object linked into this process (see elfload.h).
 *
 * Layout of the one mapping, each group page-aligned for its protection:
 *
 *   code     SHF_EXECINSTR sections, then a 16-byte stub a called external
 *            (jmp *0(%rip); .quad address: the libc that calls reach may lie
 *            further than a rel32 reaches)                         R X
 *   consts   other read-only SHF_ALLOC sections (.rodata, .eh_frame), then
 *            the GOT (GOTPCREL relocations), a slot a symbol         R
 *   data     writable sections, .bss zeroed by the mapping           R W
 *
 * Everything is read from the object with its bounds checked: a bundle is
 * checksummed, but a broken one must be an error, not a crash.
 */
#include "elfload.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What the object may call outside itself: what the compiler emits calls
 * to for a freestanding x86-64 target (memory moves, libm for what SSE2
 * has no instruction for, and fma: the window trackers' exact products,
 * an instruction where the CPU has one). */
static const struct {
	const char *name;
	void *addr;
} el_externs[] = {
#define F(f) {#f, (void *)f},
	F(memcpy) F(memmove) F(memset) F(memcmp)
	F(floor) F(ceil) F(trunc) F(round) F(rint) F(nearbyint) F(fmod) F(fabs) F(fmin) F(fmax) F(sqrt) F(fma)
	F(exp) F(exp2) F(log) F(log2) F(log10) F(pow)
#undef F
};

typedef struct ElSym {
	const char *name;          /* into ElfImage.names */
	uint64_t addr;
	uint64_t size;             /* st_size */
} ElSym;

struct ElfImage {
	uint8_t *base;
	size_t size;
	ElSym *syms;               /* the object's defined global symbols */
	size_t nsyms;
	char *names;
};

/* The link in progress. */
typedef struct ElLink {
	const uint8_t *obj;
	size_t len;
	const Elf64_Shdr *sh;
	unsigned nsh;
	const Elf64_Sym *sym;
	size_t nsym;
	const char *str;
	size_t strsz;
	unsigned symtab;           /* its section index */
	uint64_t *sec;             /* [nsh] load address; 0: not loaded */
	uint64_t *addr;            /* [nsym] each symbol's value */
	uint32_t *got;             /* [nsym] slot + 1, 0: none */
	uint32_t *stub;            /* [nsym] stub + 1, 0: none */
	uint32_t ngot, nstub;
	uint64_t got_at, stub_at;
	uint8_t *base;
	size_t size;
	char *err;
	size_t n;
} ElLink;

#define EL_STUB 16u
#define EL_MAX_SECTION (1ull << 30)       /* no section of rulec's code comes near */

static int el_fail(ElLink *L, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int el_fail(ElLink *L, int code, const char *fmt, ...)
{
	int k = snprintf(L->err, L->n, "the bundle's x86-64 code: ");
	va_list ap;
	va_start(ap, fmt);
	if (k >= 0 && (size_t)k < L->n)
		vsnprintf(L->err + k, L->n - (size_t)k, fmt, ap);
	va_end(ap);
	return code;
}

static const char *el_name(const ElLink *L, uint32_t off)
{
	return off < L->strsz && memchr(L->str + off, 0, L->strsz - off) ? L->str + off : NULL;
}

static bool el_loaded(const Elf64_Shdr *s)
{
	return (s->sh_flags & SHF_ALLOC) && s->sh_size && s->sh_type != SHT_GROUP;
}

/* header, section table, symbol table: all inside the object */
static int el_parse(ElLink *L)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)L->obj;
	if (L->len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_type != ET_REL || eh->e_machine != EM_X86_64)
		return el_fail(L, -ENOEXEC, "not an x86-64 relocatable ELF object");
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > L->len ||
	    (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > L->len - eh->e_shoff || !eh->e_shnum)
		return el_fail(L, -ENOEXEC, "its section table lies outside it");
	L->sh = (const Elf64_Shdr *)(L->obj + eh->e_shoff);
	L->nsh = eh->e_shnum;
	for (unsigned i = 0; i < L->nsh; i++) {
		const Elf64_Shdr *s = &L->sh[i];
		if (s->sh_type != SHT_NOBITS && (s->sh_offset > L->len || s->sh_size > L->len - s->sh_offset))
			return el_fail(L, -ENOEXEC, "section %u lies outside it", i);
		if (el_loaded(s) && s->sh_size > EL_MAX_SECTION)
			return el_fail(L, -ENOEXEC, "section %u is %llu bytes", i, (unsigned long long)s->sh_size);
		if (s->sh_addralign > 4096)
			return el_fail(L, -ENOEXEC, "section %u wants %llu-byte alignment", i,
				       (unsigned long long)s->sh_addralign);
		if ((s->sh_type == SHT_INIT_ARRAY || s->sh_type == SHT_FINI_ARRAY || s->sh_type == SHT_PREINIT_ARRAY) &&
		    s->sh_size)
			return el_fail(L, -ENOEXEC, "it has constructors or destructors, which the CPU backend does not run");
		if ((s->sh_flags & SHF_TLS) && s->sh_size)
			return el_fail(L, -ENOEXEC, "it has thread-local data, which the CPU backend does not lay out");
		if (s->sh_type == SHT_REL && (L->sh[s->sh_info < L->nsh ? s->sh_info : 0].sh_flags & SHF_ALLOC))
			return el_fail(L, -ENOEXEC, "it has REL relocations (x86-64 objects use RELA)");
		if (s->sh_type == SHT_SYMTAB) {
			if (L->sym)
				return el_fail(L, -ENOEXEC, "it has two symbol tables");
			if (s->sh_link >= L->nsh || L->sh[s->sh_link].sh_type != SHT_STRTAB ||
			    s->sh_entsize != sizeof(Elf64_Sym))
				return el_fail(L, -ENOEXEC, "its symbol table is malformed");
			L->symtab = i;
			L->sym = (const Elf64_Sym *)(L->obj + s->sh_offset);
			L->nsym = s->sh_size / sizeof(Elf64_Sym);
			L->str = (const char *)(L->obj + L->sh[s->sh_link].sh_offset);
			L->strsz = L->sh[s->sh_link].sh_size;
		}
	}
	if (!L->sym)
		return el_fail(L, -ENOEXEC, "it has no symbol table");
	return 0;
}

static void *el_extern(const char *name)
{
	for (size_t i = 0; i < sizeof el_externs / sizeof *el_externs; i++)
		if (!strcmp(el_externs[i].name, name))
			return el_externs[i].addr;
	return NULL;
}

/* Which symbols need a GOT slot or a call stub. */
static int el_count(ElLink *L)
{
	for (unsigned i = 0; i < L->nsh; i++) {
		const Elf64_Shdr *s = &L->sh[i];
		if (s->sh_type != SHT_RELA || s->sh_info >= L->nsh || !el_loaded(&L->sh[s->sh_info]))
			continue;
		if (s->sh_link != L->symtab || s->sh_entsize != sizeof(Elf64_Rela))
			return el_fail(L, -ENOEXEC, "relocation section %u is malformed", i);
		const Elf64_Rela *r = (const Elf64_Rela *)(L->obj + s->sh_offset);
		for (size_t k = 0; k < s->sh_size / sizeof *r; k++) {
			uint32_t type = ELF64_R_TYPE(r[k].r_info);
			size_t si = ELF64_R_SYM(r[k].r_info);
			if (si >= L->nsym)
				return el_fail(L, -ENOEXEC, "a relocation names symbol %zu of %zu", si, L->nsym);
			if ((type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX || type == R_X86_64_REX_GOTPCRELX) &&
			    !L->got[si])
				L->got[si] = ++L->ngot;
			/* a call stub for a function outside (not for a weak one
			 * that is absent: its address stays 0, and does not reach) */
			if ((type == R_X86_64_PLT32 || type == R_X86_64_PC32) && L->sym[si].st_shndx == SHN_UNDEF &&
			    L->sym[si].st_name && !L->stub[si] && el_name(L, L->sym[si].st_name) &&
			    el_extern(el_name(L, L->sym[si].st_name)))
				L->stub[si] = ++L->nstub;
		}
	}
	return 0;
}

static size_t el_align(size_t v, size_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

/* Where each loaded section goes: offsets from the base, by group. */
static size_t el_layout(ElLink *L, size_t *consts, size_t *data)
{
	size_t at = 0;
	long pg = sysconf(_SC_PAGESIZE);
	size_t page = pg > 0 ? (size_t)pg : 4096;
	for (int group = 0; group < 3; group++) {
		if (group == 1)
			*consts = at = el_align(at, page);
		if (group == 2)
			*data = at = el_align(at, page);
		for (unsigned i = 0; i < L->nsh; i++) {
			const Elf64_Shdr *s = &L->sh[i];
			if (!el_loaded(s))
				continue;
			int g = (s->sh_flags & SHF_EXECINSTR) ? 0 : (s->sh_flags & SHF_WRITE) ? 2 : 1;
			if (g != group)
				continue;
			at = el_align(at, s->sh_addralign);
			L->sec[i] = at;              /* an offset until the base is known */
			at += s->sh_size;
		}
		if (group == 0) {
			L->stub_at = at = el_align(at, EL_STUB);
			at += (size_t)L->nstub * EL_STUB;
		}
		if (group == 1) {
			L->got_at = at = el_align(at, 8);
			at += (size_t)L->ngot * 8;
		}
	}
	return el_align(at ? at : 1, page);
}

static int el_symbols(ElLink *L)
{
	for (size_t i = 1; i < L->nsym; i++) {
		const Elf64_Sym *y = &L->sym[i];
		const char *name = el_name(L, y->st_name);
		if (!name)
			return el_fail(L, -ENOEXEC, "symbol %zu has no name in the string table", i);
		if (y->st_shndx == SHN_UNDEF) {
			if (!*name)
				continue;
			void *a = el_extern(name);
			if (!a && ELF64_ST_BIND(y->st_info) != STB_WEAK)
				return el_fail(L, -ENOEXEC, "it calls %s, which the CPU backend does not provide (engine/elfload.c "
					       "lists what it does)", name);
			L->addr[i] = (uint64_t)(uintptr_t)a;
		} else if (y->st_shndx == SHN_ABS) {
			L->addr[i] = y->st_value;
		} else if (y->st_shndx == SHN_COMMON || y->st_shndx >= SHN_LORESERVE) {
			return el_fail(L, -ENOEXEC, "symbol %s is in a section kind the loader does not place (%#x)", name,
				       y->st_shndx);
		} else if (y->st_shndx < L->nsh && L->sec[y->st_shndx]) {
			const Elf64_Shdr *s = &L->sh[y->st_shndx];
			if (y->st_value > s->sh_size || y->st_size > s->sh_size - y->st_value)
				return el_fail(L, -ENOEXEC, "symbol %s lies outside its section", name);
			L->addr[i] = L->sec[y->st_shndx] + y->st_value;
		} else if (y->st_shndx < L->nsh && ELF64_ST_TYPE(y->st_info) != STT_SECTION) {
			/* in a section that is not loaded: usable by nothing that runs */
			L->addr[i] = 0;
		}
	}
	for (size_t i = 1; i < L->nsym; i++) {
		if (L->got[i])
			memcpy(L->base + L->got_at + (L->got[i] - 1) * 8, &L->addr[i], 8);
		if (L->stub[i]) {
			uint8_t *p = L->base + L->stub_at + (L->stub[i] - 1) * EL_STUB;
			static const uint8_t jmp[6] = {0xff, 0x25, 0, 0, 0, 0};     /* jmp *0(%rip) */
			memcpy(p, jmp, 6);
			memcpy(p + 6, &L->addr[i], 8);
			memset(p + 14, 0xcc, EL_STUB - 14);
		}
	}
	return 0;
}

static int el_put32(ElLink *L, uint8_t *p, int64_t v, bool is_signed, uint32_t type)
{
	if (is_signed ? v < INT32_MIN || v > INT32_MAX : (uint64_t)v > UINT32_MAX)
		return el_fail(L, -ENOEXEC, "relocation type %u does not reach (%lld): the code is not in the small "
			       "code model", type, (long long)v);
	int32_t w = (int32_t)v;
	memcpy(p, &w, 4);
	return 0;
}

static int el_relocate(ElLink *L)
{
	for (unsigned i = 0; i < L->nsh; i++) {
		const Elf64_Shdr *s = &L->sh[i];
		if (s->sh_type != SHT_RELA || s->sh_info >= L->nsh || !el_loaded(&L->sh[s->sh_info]))
			continue;
		const Elf64_Shdr *t = &L->sh[s->sh_info];
		const Elf64_Rela *r = (const Elf64_Rela *)(L->obj + s->sh_offset);
		for (size_t k = 0; k < s->sh_size / sizeof *r; k++) {
			uint32_t type = ELF64_R_TYPE(r[k].r_info);
			size_t si = ELF64_R_SYM(r[k].r_info);
			unsigned width = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
			if (type == R_X86_64_NONE)
				continue;
			if (r[k].r_offset > t->sh_size || width > t->sh_size - r[k].r_offset)
				return el_fail(L, -ENOEXEC, "a relocation lies outside section %u", s->sh_info);
			uint8_t *p = L->base + (L->sec[s->sh_info] - (uint64_t)(uintptr_t)L->base) + r[k].r_offset;
			uint64_t P = (uint64_t)(uintptr_t)p, S = L->addr[si];
			int64_t A = r[k].r_addend;
			int e = 0;
			switch (type) {
			case R_X86_64_64: {
				uint64_t v = S + (uint64_t)A;
				memcpy(p, &v, 8);
				break;
			}
			case R_X86_64_PC64: {
				uint64_t v = S + (uint64_t)A - P;
				memcpy(p, &v, 8);
				break;
			}
			case R_X86_64_PC32:
			case R_X86_64_PLT32:
				if (L->stub[si])
					S = (uint64_t)(uintptr_t)L->base + L->stub_at + (L->stub[si] - 1) * EL_STUB;
				e = el_put32(L, p, (int64_t)(S + (uint64_t)A - P), true, type);
				break;
			case R_X86_64_32:
				e = el_put32(L, p, (int64_t)(S + (uint64_t)A), false, type);
				break;
			case R_X86_64_32S:
				e = el_put32(L, p, (int64_t)(S + (uint64_t)A), true, type);
				break;
			case R_X86_64_GOTPCREL:
			case R_X86_64_GOTPCRELX:
			case R_X86_64_REX_GOTPCRELX: {
				uint64_t G = (uint64_t)(uintptr_t)L->base + L->got_at + (L->got[si] - 1) * 8;
				e = el_put32(L, p, (int64_t)(G + (uint64_t)A - P), true, type);
				break;
			}
			default:
				return el_fail(L, -ENOEXEC, "relocation type %u (in section %u) is not one the loader applies",
					       type, s->sh_info);
			}
			if (e)
				return e;
		}
	}
	return 0;
}

/* The defined global symbols, for el_sym. */
static int el_exports(ElLink *L, ElfImage *im)
{
	size_t n = 0, bytes = 0;
	for (size_t i = 1; i < L->nsym; i++) {
		const Elf64_Sym *y = &L->sym[i];
		int b = ELF64_ST_BIND(y->st_info);
		if ((b == STB_GLOBAL || b == STB_WEAK) && y->st_shndx != SHN_UNDEF) {
			n++;
			bytes += strlen(L->str + y->st_name) + 1;
		}
	}
	im->syms = calloc(n ? n : 1, sizeof *im->syms);
	im->names = malloc(bytes ? bytes : 1);
	if (!im->syms || !im->names)
		return el_fail(L, -ENOMEM, "out of memory");
	char *w = im->names;
	for (size_t i = 1; i < L->nsym; i++) {
		const Elf64_Sym *y = &L->sym[i];
		int b = ELF64_ST_BIND(y->st_info);
		if ((b == STB_GLOBAL || b == STB_WEAK) && y->st_shndx != SHN_UNDEF) {
			size_t l = strlen(L->str + y->st_name) + 1;
			memcpy(w, L->str + y->st_name, l);
			im->syms[im->nsyms++] = (ElSym){.name = w, .addr = L->addr[i], .size = y->st_size};
			w += l;
		}
	}
	return 0;
}

/* With SENTINEL_PERF_MAP set, each function's place in the perf map of
 * this process (/tmp/perf-PID.map, appended: a reload adds its code), so
 * that `perf report` names the rules' and the runtime's functions.  Best
 * effort: a profile's aid, never an error. */
static void el_perf_map(const ElLink *L)
{
	if (!getenv("SENTINEL_PERF_MAP"))
		return;
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)getpid());
	FILE *f = fopen(path, "a");
	if (!f)
		return;
	for (size_t i = 1; i < L->nsym; i++) {
		const Elf64_Sym *y = &L->sym[i];
		if (ELF64_ST_TYPE(y->st_info) == STT_FUNC && L->addr[i] && y->st_shndx != SHN_UNDEF)
			fprintf(f, "%" PRIx64 " %" PRIx64 " %s\n", L->addr[i], (uint64_t)(y->st_size ? y->st_size : 1),
				el_name(L, y->st_name));
	}
	fclose(f);
}

int el_load(const void *obj, size_t len, ElfImage **out, char *err, size_t n)
{
	ElLink L = {.obj = obj, .len = len, .err = err, .n = n};
	ElfImage *im = NULL;
	size_t consts = 0, data = 0;
	int e = el_parse(&L);
	if (e)
		return e;
	L.sec = calloc(L.nsh, sizeof *L.sec);
	L.addr = calloc(L.nsym ? L.nsym : 1, sizeof *L.addr);
	L.got = calloc(L.nsym ? L.nsym : 1, sizeof *L.got);
	L.stub = calloc(L.nsym ? L.nsym : 1, sizeof *L.stub);
	im = calloc(1, sizeof *im);
	if (!L.sec || !L.addr || !L.got || !L.stub || !im) {
		e = el_fail(&L, -ENOMEM, "out of memory");
		goto out;
	}
	if ((e = el_count(&L)))
		goto out;
	L.size = el_layout(&L, &consts, &data);
	void *m = mmap(NULL, L.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		e = el_fail(&L, -errno, "cannot map %zu KiB for it: %s", L.size >> 10, strerror(errno));
		goto out;
	}
	L.base = m;
	im->base = m;
	im->size = L.size;
	for (unsigned i = 0; i < L.nsh; i++) {
		if (!el_loaded(&L.sh[i]))
			continue;
		if (L.sh[i].sh_type != SHT_NOBITS)
			memcpy(L.base + L.sec[i], L.obj + L.sh[i].sh_offset, L.sh[i].sh_size);
		L.sec[i] += (uint64_t)(uintptr_t)L.base;
	}
	if ((e = el_symbols(&L)) || (e = el_relocate(&L)) || (e = el_exports(&L, im)))
		goto out;
	if (mprotect(L.base, consts, PROT_READ | PROT_EXEC) ||
	    (data > consts && mprotect(L.base + consts, data - consts, PROT_READ))) {
		e = el_fail(&L, -errno, "cannot protect it: %s", strerror(errno));
		goto out;
	}
	el_perf_map(&L);
out:
	free(L.sec);
	free(L.addr);
	free(L.got);
	free(L.stub);
	if (e) {
		el_free(im);
		return e;
	}
	*out = im;
	return 0;
}

void *el_sym(const ElfImage *im, const char *name)
{
	return el_sym_size(im, name, NULL);
}

void *el_sym_size(const ElfImage *im, const char *name, size_t *size)
{
	for (size_t i = 0; i < im->nsyms; i++)
		if (!strcmp(im->syms[i].name, name)) {
			if (size)
				*size = (size_t)im->syms[i].size;
			return (void *)(uintptr_t)im->syms[i].addr;
		}
	return NULL;
}

size_t el_size(const ElfImage *im) { return im->size; }

void el_free(ElfImage *im)
{
	if (!im)
		return;
	if (im->base)
		munmap(im->base, im->size);
	free(im->syms);
	free(im->names);
	free(im);
}
