/* ktarget.c - target discovery (see ktarget.h). */
#define _GNU_SOURCE 1   /* memmem */
#include "ktarget.h"
#include "kbtf.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define VMCOREINFO_MAX 8192
#define KALLSYMS_MAX_SYMS 2000000u
#define BTF_MAX_SIZE (64u << 20)


const char *kt_info(const KTarget *t, const char *key, size_t *len)
{
	size_t kl = strlen(key);
	for (const char *p = t->vmcoreinfo; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);
		if (ll > kl && p[kl] == '=' && !memcmp(p, key, kl)) {
			if (len)
				*len = ll - kl - 1;
			return p + kl + 1;
		}
		p += ll + (nl ? 1 : 0);
	}
	return NULL;
}

static bool kt_info_u64(const KTarget *t, const char *key, int base, uint64_t *v)
{
	size_t len;
	const char *s = kt_info(t, key, &len);
	if (!s || !len)
		return false;
	char buf[32], *end;
	if (len >= sizeof buf)
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	*v = base == 10 ? (uint64_t)strtoll(buf, &end, 10) : strtoull(buf, &end, 16);
	return *end == 0;
}

/* ---- VMCOREINFO ---- */

/* Whether a search must stop: cancelled by its caller, or past its
 * deadline (KtOptions). */
static int kt_stop(const KtOptions *o)
{
	if (o->cancel && __atomic_load_n(o->cancel, __ATOMIC_RELAXED))
		return -ECANCELED;
	if (o->deadline_ns) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec >= o->deadline_ns)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Where the VMCOREINFO scan is: each call goes on from the last hit, so
 * that all RAM is scanned once however many candidates it holds (it
 * began again at the start for each, quadratic in a guest's fake
 * pages), in chunks with kt_stop between them. */
typedef struct KtScan {
	unsigned range;
	size_t off;
	unsigned tried;               /* candidates handed out */
} KtScan;
#define KT_SCAN_CHUNK (64u << 20)

/* kt_stop's answer as the caller's error. */
static int kt_stopped(char *err, size_t n, int e, const char *what, const KtScan *sc)
{
	char where[96] = "";
	if (sc)
		snprintf(where, sizeof where, " (%u candidates tried)", sc->tried);
	if (e == -ECANCELED)
		return ks_fail(err, n, e, "stopped while %s%s", what, where);
	return ks_fail(err, n, e, "gave up %s: past the time allowed for discovery%s; a guest whose memory "
		       "takes this long is corrupt or hostile", what, where);
}

/* The next candidate: "OSRELEASE=<digit>" at the start of a page
 * (vmcoreinfo_data is a page of its own) or right after the ELF note name
 * "VMCOREINFO".  -ENOENT at the end of RAM, -E2BIG past
 * KT_VMCOREINFO_CANDIDATES, or kt_stop's answer. */
static int kt_find_vmcoreinfo(KTarget *t, const KtOptions *o, KtScan *sc, uint64_t *found)
{
	for (; sc->range < t->src->nranges; sc->range++, sc->off = 0) {
		const kx_range *r = &t->src->r[sc->range];
		const char *base = (const char *)(uintptr_t)r->ptr;
		while (sc->off < r->size) {
			int e = kt_stop(o);
			if (e)
				return e;
			size_t win = r->size - sc->off < KT_SCAN_CHUNK + 10 ? r->size - sc->off : KT_SCAN_CHUNK + 10;
			const char *hit = memmem(base + sc->off, win, "OSRELEASE=", 10);
			if (!hit) {
				sc->off = win == r->size - sc->off ? r->size : sc->off + KT_SCAN_CHUNK;
				continue;
			}
			size_t h = (size_t)(hit - base);
			sc->off = h + 1;
			if (h + 11 >= r->size || hit[10] < '0' || hit[10] > '9')
				continue;
			bool note = h >= 12 && !memcmp(hit - 12, "VMCOREINFO\0", 11);
			if ((r->phys + h) % KX_PAGE_SIZE && !note)
				continue;
			if (++sc->tried > KT_VMCOREINFO_CANDIDATES)
				return -E2BIG;
			*found = r->phys + h;
			return 0;
		}
	}
	return -ENOENT;
}

/* The note at the address the kernel gave: "OSRELEASE=" within it. */
static int kt_hinted_vmcoreinfo(KTarget *t, uint64_t *found)
{
	uint64_t pa = t->src->vmcoreinfo_pa, len = t->src->vmcoreinfo_size, p;
	if (len > VMCOREINFO_MAX || kx_phys_ptr(&t->mem, pa, len, &p))
		return -ENOENT;
	const char *hit = memmem((const char *)(uintptr_t)p, len, "OSRELEASE=", 10);
	if (!hit)
		return -ENOENT;
	*found = pa + (uint64_t)(hit - (const char *)(uintptr_t)p);
	return 0;
}

static int kt_load_vmcoreinfo(KTarget *t, uint64_t pa)
{
	uint64_t p;
	size_t n = 0;
	if (kx_phys_ptr(&t->mem, pa, 1, &p))
		return -EFAULT;
	const char *s = (const char *)(uintptr_t)p;
	/* bounded by the range and VMCOREINFO_MAX */
	for (unsigned i = 0; i < t->src->nranges; i++) {
		const kx_range *r = &t->src->r[i];
		if (pa >= r->phys && pa < r->phys + r->size) {
			size_t room = r->size - (pa - r->phys);
			while (n < room && n < VMCOREINFO_MAX && s[n])
				n++;
		}
	}
	free(t->vmcoreinfo);
	t->vmcoreinfo = malloc(n + 1);
	if (!t->vmcoreinfo)
		return -ENOMEM;
	memcpy(t->vmcoreinfo, s, n);
	t->vmcoreinfo[n] = 0;
	t->vmcoreinfo_pa = pa;
	/* kt_unchanged compares the head of it: through the line of
	 * SYMBOL(init_uts_ns), an address that moves with the KASLR slide
	 * (the kernel writes OSRELEASE, BUILD-ID, PAGESIZE, then it) */
	const char *sym = strstr(t->vmcoreinfo, "\nSYMBOL(init_uts_ns)=");
	const char *eol = sym ? strchr(sym + 1, '\n') : NULL;
	t->vmcoreinfo_head = eol ? (size_t)(eol - t->vmcoreinfo) + 1 : n;
	return 0;
}

/* Set up translation from VMCOREINFO, and prove it: the kernel's own
 * init_uts_ns must read "Linux" and the release VMCOREINFO names. */
/* A string read from memory (up to len bytes, or its NUL), as text: what
 * is not printable ASCII as \xNN; a corrupt image's bytes must not reach
 * a terminal or a log raw. */
static void kt_text(char *dst, size_t n, const char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len && s[i] && o + 5 < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			dst[o++] = (char)c;
		else
			o += (size_t)snprintf(dst + o, n - o, "\\x%02x", c);
	}
	dst[o] = 0;
}

static int kt_setup_paging(KTarget *t, char *err, size_t n)
{
	uint64_t phys_base, pgt, l5 = 0, sme = 0, uts, uts_off = 0;
	size_t rl;
	const char *rel = kt_info(t, "OSRELEASE", &rl);
	if (!rel || rl == 0 || rl >= sizeof t->release)
		return ks_fail(err, n, -EINVAL, "VMCOREINFO has no OSRELEASE");
	memcpy(t->release, rel, rl);
	t->release[rl] = 0;
	if (!kt_info_u64(t, "NUMBER(phys_base)", 10, &phys_base) ||
	    !kt_info_u64(t, "SYMBOL(init_top_pgt)", 16, &pgt))
		return ks_fail(err, n, -ENOTSUP,
			       "VMCOREINFO of %s lacks NUMBER(phys_base) or SYMBOL(init_top_pgt): "
			       "only x86-64 kernels are supported", t->release);
	if (!kt_info_u64(t, "KERNELOFFSET", 16, &t->kaslr_offset))
		t->kaslr_offset = 0;
	kt_info_u64(t, "NUMBER(pgtable_l5_enabled)", 10, &l5);
	kt_info_u64(t, "NUMBER(sme_mask)", 10, &sme);
	if (pgt < KX_START_KERNEL_MAP)
		return ks_fail(err, n, -EINVAL, "SYMBOL(init_top_pgt)=%#llx is not a kernel-image address",
			       (unsigned long long)pgt);
	t->mem.phys_base = phys_base;      /* two's complement: a "negative" phys_base wraps */
	t->mem.levels = l5 ? 5 : 4;
	t->mem.pgd = pgt - KX_START_KERNEL_MAP + phys_base;
	t->mem.pte_mask = 0x000ffffffffff000ull & ~sme;
	t->mem.page_offset_base = UINT64_MAX;   /* unknown until kallsyms */
	/* the image mapping ends at KERNEL_IMAGE_SIZE; modules come after it and
	 * are walked.  512 MiB (the smallest the kernel uses) when not given. */
	if (!kt_info_u64(t, "NUMBER(KERNEL_IMAGE_SIZE)", 10, &t->mem.image_size) ||
	    t->mem.image_size == 0 || t->mem.image_size > (1ull << 31))
		t->mem.image_size = 512ull << 20;
	if (!kt_info_u64(t, "SYMBOL(init_uts_ns)", 16, &uts))
		return ks_fail(err, n, -EINVAL, "VMCOREINFO has no SYMBOL(init_uts_ns)");
	/* the name's offset: VMCOREINFO gives it since 5.11; before, the
	 * struct began with a kref (4 bytes) and the name came after it */
	bool uts_known = kt_info_u64(t, "OFFSET(uts_namespace.name)", 10, &uts_off);
	char name[6] = {0}, release[65] = {0};
	for (uint64_t try = uts_known ? uts_off : 0;; try += 4) {
		if (kx_read(&t->mem, uts + try, name, 5) || kx_read(&t->mem, uts + try + 130, release, 64))
			return ks_fail(err, n, -EFAULT, "init_uts_ns at %#llx is outside the image: phys_base or the "
				       "memory layout is wrong (a q35 guest above 2.75 GiB needs ramfile:PATH,split=auto)",
				       (unsigned long long)uts);
		if (uts_known || !strcmp(name, "Linux") || try == 4)
			break;
	}
	if (strcmp(name, "Linux") || strcmp(release, t->release)) {
		char qn[4 * sizeof name], qr[4 * sizeof release], qt[4 * sizeof t->release];
		kt_text(qn, sizeof qn, name, sizeof name - 1);
		kt_text(qr, sizeof qr, release, sizeof release - 1);
		kt_text(qt, sizeof qt, t->release, sizeof t->release - 1);
		return ks_fail(err, n, -EINVAL, "init_uts_ns reads '%s' '%s', not 'Linux' '%s': a stale VMCOREINFO copy",
			       qn, qr, qt);
	}
	return 0;
}

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
static int kt_kallsyms_memory(KTarget *t, const KtOptions *o, char *err, size_t n)
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

static int kt_kallsyms_file(KTarget *t, const char *path, char *err, size_t n)
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

/* ---- the rest of the layout ---- */

static int kt_setup_direct_map(KTarget *t, char *err, size_t n)
{
	uint64_t sym, pob, pa;
	if (!kt_sym(t, "page_offset_base", &sym)) {
		if (kx_read64(&t->mem, sym, &pob))
			return ks_fail(err, n, -EFAULT, "cannot read page_offset_base");
	} else {
		/* CONFIG_RANDOMIZE_MEMORY=n: the fixed bases */
		pob = t->mem.levels == 5 ? 0xff11000000000000ull : 0xffff888000000000ull;
	}
	/* the direct map must map physical 0 */
	if (kx_walk(&t->mem, pob, &pa) || pa != 0)
		return ks_fail(err, n, -EINVAL, "page_offset_base %#llx does not map physical address 0",
			       (unsigned long long)pob);
	t->mem.page_offset_base = pob;
	return 0;
}

static int kt_setup_cpus(KTarget *t, char *err, size_t n)
{
	uint64_t a_nr, a_off, a_on, a_pos;
	uint32_t nr;
	if (kt_sym(t, "nr_cpu_ids", &a_nr) || kt_sym(t, "__per_cpu_offset", &a_off) ||
	    kt_sym(t, "__cpu_online_mask", &a_on) || kt_sym(t, "__cpu_possible_mask", &a_pos))
		return ks_fail(err, n, -ENOENT, "the kernel has no nr_cpu_ids, __per_cpu_offset or cpu masks");
	if (kx_read32(&t->mem, a_nr, &nr) || nr == 0)
		return ks_fail(err, n, -EFAULT, "cannot read nr_cpu_ids");
	if (nr > KX_MAX_CPUS)
		return ks_fail(err, n, -E2BIG, "the target has %u CPU ids; this build handles %d", nr, KX_MAX_CPUS);
	t->cpus.nr_cpu_ids = nr;
	size_t words = (nr + 63) / 64;
	if (kx_read(&t->mem, a_off, t->cpus.offset, (uint64_t)nr * 8) ||
	    kx_read(&t->mem, a_on, t->cpus.online, words * 8) ||
	    kx_read(&t->mem, a_pos, t->cpus.possible, words * 8))
		return ks_fail(err, n, -EFAULT, "cannot read the per-CPU offsets or CPU masks");
	if (!kx_cpu_online(&t->cpus, 0))
		return ks_fail(err, n, -EINVAL, "CPU 0 is not online: the CPU masks read wrong");
	return 0;
}

static int kt_setup_btf(KTarget *t, const char *file, char *err, size_t n)
{
	if (file) {
		t->btf = btf__parse(file, NULL);
		if (!t->btf)
			return ks_fail(err, n, -errno ? -errno : -EINVAL, "%s: not BTF or an ELF file with BTF", file);
		t->btf_origin = file;
		return 0;
	}
	uint64_t a, z;
	if (kt_sym(t, "__start_BTF", &a) || kt_sym(t, "__stop_BTF", &z))
		return ks_fail(err, n, -ENOENT, "the kernel %s has no BTF (__start_BTF): it was built without "
			       "CONFIG_DEBUG_INFO_BTF; give one with --btf FILE", t->release);
	if (z <= a || z - a > BTF_MAX_SIZE)
		return ks_fail(err, n, -ERANGE, "BTF size %llu is implausible", (unsigned long long)(z - a));
	void *buf = malloc(z - a);
	if (!buf)
		return -ENOMEM;
	if (kx_read(&t->mem, a, buf, z - a)) {
		free(buf);
		return ks_fail(err, n, -EFAULT, "cannot read the kernel's BTF at %#llx", (unsigned long long)a);
	}
	t->btf = btf__new(buf, (uint32_t)(z - a));
	free(buf);
	if (!t->btf)
		return ks_fail(err, n, -EINVAL, "the kernel's BTF (%llu bytes) does not parse; "
			       "give one with --btf FILE (/sys/kernel/btf/vmlinux of the same kernel)",
			       (unsigned long long)(z - a));
	t->btf_size = (uint32_t)(z - a);
	t->btf_origin = "memory (__start_BTF)";
	return 0;
}

/* KASLR as the kernel itself decides it (kaslr_enabled()): the boot
 * loader's KASLR_FLAG in boot_params.hdr.loadflags.  A zero KERNELOFFSET
 * does not mean KASLR is off: the random slot can be the first one. */
static void kt_setup_kaslr(KTarget *t)
{
	uint64_t bp;
	uint32_t off;
	uint8_t flags;
	t->kaslr = -1;
	if (kt_sym(t, "boot_params", &bp) || kb_field_offset(t->btf, "boot_params", "hdr.loadflags", &off, NULL) ||
	    kx_read8(&t->mem, bp + off, &flags))
		return;
	t->kaslr = (flags & 0x2) != 0;     /* KASLR_FLAG, arch/x86/include/uapi/asm/bootparam.h */
}

/* Loaded modules' BTF (CONFIG_DEBUG_INFO_BTF_MODULES).  A module's .BTF
 * section is freed once it is loaded, but the kernel keeps its parse on
 * btf_modules (kernel/bpf/btf.c): a btf_module per module, whose struct btf
 * holds the raw split BTF (data, data_size) and the module's name.  Each is
 * read and parsed on top of the kernel's own.  Optional: a kernel without
 * them (or a module without BTF) leaves the metrics that need a module's
 * types unavailable, each saying which type. */
#define KT_MAX_MODULES 4096
#define KT_MODULE_BTF_MAX (16u << 20)

/* Split BTF from bytes: libbpf 1.1 (Debian 12) declares btf__new_split
 * but does not have it, so through a memfd and btf__parse_raw_split. */
static struct btf *kt_btf_split(const void *data, uint32_t size, struct btf *base)
{
	int fd = memfd_create("sentinel-btf", MFD_CLOEXEC);
	struct btf *b = NULL;
	if (fd < 0)
		return NULL;
	if (write(fd, data, size) == (ssize_t)size) {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		b = btf__parse_raw_split(path, base);
		if (!b || libbpf_get_error(b))
			b = NULL;
	}
	close(fd);
	return b;
}

static void kt_setup_module_btf(KTarget *t)
{
	uint64_t head, node;
	uint32_t o_list, o_btf, o_data, o_size, o_name, sz_size, sz_name;
	if (kt_sym(t, "btf_modules", &head) || kb_field_offset(t->btf, "btf_module", "list", &o_list, NULL) ||
	    kb_field_offset(t->btf, "btf_module", "btf", &o_btf, NULL) ||
	    kb_field_offset(t->btf, "btf", "data", &o_data, NULL) ||
	    kb_field_offset(t->btf, "btf", "data_size", &o_size, &sz_size) ||
	    kb_field_offset(t->btf, "btf", "name", &o_name, &sz_name) || sz_size != 4)
		return;
	kx_list_iter it;
	kx_list_begin(&it, head, KT_MAX_MODULES);
	while (kx_list_next(&t->mem, &it, &node) > 0) {
		uint64_t bm = node - o_list, b, data;
		uint32_t size;
		char name[64] = "";
		if (kx_read64(&t->mem, bm + o_btf, &b) || kx_read64(&t->mem, b + o_data, &data) ||
		    kx_read32(&t->mem, b + o_size, &size) ||
		    kx_read(&t->mem, b + o_name, name, sz_name < sizeof name ? sz_name : sizeof name - 1))
			continue;
		name[sizeof name - 1] = 0;
		if (!size || size > KT_MODULE_BTF_MAX)
			continue;
		void *buf = malloc(size);
		struct btf **mb = realloc(t->mod_btf, (t->nmod + 1) * sizeof *mb);
		char (*mn)[64] = realloc(t->mod_name, (t->nmod + 1) * sizeof *mn);
		if (mb)
			t->mod_btf = mb;
		if (mn)
			t->mod_name = mn;
		if (!buf || !mb || !mn || kx_read(&t->mem, data, buf, size)) {
			free(buf);
			continue;
		}
		struct btf *split = kt_btf_split(buf, size, t->btf);
		free(buf);
		if (!split)
			continue;
		t->mod_btf[t->nmod] = split;
		memcpy(t->mod_name[t->nmod], name, sizeof name);
		t->nmod++;
	}
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

static int kt_setup_module_syms(KTarget *t, const KtOptions *opt)
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

int kt_open(const MemSource *src, const KtOptions *o, KTarget **out, char *err, size_t n)
{
	KtOptions none = {0};
	KTarget *t = calloc(1, sizeof *t);
	int e;
	if (!t)
		return ks_fail(err, n, -ENOMEM, "out of memory");
	if (!o)
		o = &none;
	t->src = src;
	ms_fill(src, &t->mem);
	/* VMCOREINFO: where the kernel said it is (this host's
	 * /sys/kernel/vmcoreinfo), else the first candidate of a scan of all
	 * RAM that survives validation */
	uint64_t pa = 0;
	e = -ENOENT;
	if (src->vmcoreinfo_pa && !kt_hinted_vmcoreinfo(t, &pa) && !(e = kt_load_vmcoreinfo(t, pa)))
		e = kt_setup_paging(t, err, n);
	KtScan sc = {0};
	int s = 0;
	while (e && (s = kt_find_vmcoreinfo(t, o, &sc, &pa)) == 0)
		if (!(e = kt_load_vmcoreinfo(t, pa)))
			e = kt_setup_paging(t, err, n);
	if (e && s == -E2BIG) {
		char last[256];
		snprintf(last, sizeof last, "%s", err);
		e = ks_fail(err, n, -E2BIG, "no Linux kernel found: %u places in its RAM say 'OSRELEASE=' and none "
			    "is a kernel's VMCOREINFO (the last: %.200s); a corrupt or hostile image", sc.tried - 1, last);
		goto fail;
	}
	if (e && s && s != -ENOENT) {
		e = kt_stopped(err, n, s, "scanning RAM for VMCOREINFO", &sc);
		goto fail;
	}
	if (e == -ENOENT && !t->vmcoreinfo) {
		e = ks_fail(err, n, -ENOENT, "no Linux kernel found: the image has no VMCOREINFO (searched %llu MiB "
			    "for 'OSRELEASE='). Is this the RAM of a running x86-64 Linux >= 6.0?",
			    ms_total(src) >> 20);
		goto fail;
	}
	if (e)
		goto fail;
	if ((e = o->kallsyms_file ? kt_kallsyms_file(t, o->kallsyms_file, err, n) : kt_kallsyms_memory(t, o, err, n)))
		goto fail;
	if ((e = kt_setup_direct_map(t, err, n)) || (e = kt_setup_cpus(t, err, n)) ||
	    (e = kt_setup_btf(t, o->btf_file, err, n)))
		goto fail;
	kt_setup_module_btf(t);
	if ((e = kt_setup_module_syms(t, o))) {
		e = kt_stopped(err, n, e, "reading the modules' symbols", NULL);
		goto fail;
	}
	kt_setup_kaslr(t);
	*out = t;
	return 0;
fail:
	kt_close(t);
	return e;
}

void kt_close(KTarget *t)
{
	if (!t)
		return;
	free(t->vmcoreinfo);
	free(t->syms);
	free(t->sym_hash);
	free(t->sym_pool);
	for (size_t i = 0; i < t->nmod; i++)
		btf__free(t->mod_btf[i]);
	free(t->mod_btf);
	free(t->mod_name);
	free(t->msyms);
	free(t->msym_hash);
	free(t->msym_pool);
	if (t->btf)
		btf__free(t->btf);
	free(t);
}

unsigned kt_online_cpus(const KTarget *t)
{
	unsigned c = 0;
	for (uint32_t i = 0; i < t->cpus.nr_cpu_ids; i++)
		c += kx_cpu_online(&t->cpus, i);
	return c;
}

bool kt_unchanged(const KTarget *t)
{
	size_t n = t->vmcoreinfo_head;
	uint64_t p;
	if (kx_phys_ptr(&t->mem, t->vmcoreinfo_pa, n, &p))
		return false;
	return memcmp((const void *)(uintptr_t)p, t->vmcoreinfo, n) == 0;
}
