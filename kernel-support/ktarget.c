/* ktarget.c - target discovery (see ktarget.h): VMCOREINFO (found by a
 * scan of RAM, loaded, proved), the layout (paging, the direct map, CPUs,
 * BTF, the modules' BTF, KASLR) and kt_open, which runs it all; the
 * symbols are ksyms.c's.  What the two share: ktarget_int.h. */
#define _GNU_SOURCE 1   /* memmem */
#include "ktarget.h"
#include "kbtf.h"
#include "ktarget_int.h"

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

bool kt_info_u64(const KTarget *t, const char *key, int base, uint64_t *v)
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
int kt_stop(const KtOptions *o)
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
#define KT_SCAN_CHUNK (64u << 20)

/* kt_stop's answer as the caller's error. */
int kt_stopped(char *err, size_t n, int e, const char *what, const KtScan *sc)
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

/* ---- the rest of the layout ---- */

int kt_setup_direct_map(KTarget *t, char *err, size_t n)
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

int kt_setup_cpus(KTarget *t, char *err, size_t n)
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

int kt_setup_btf(KTarget *t, const char *file, char *err, size_t n)
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
void kt_setup_kaslr(KTarget *t)
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
#define KT_MODULE_BTF_MAX (16u << 20)
#define KT_MODULES_BTF_MAX (256u << 20)   /* all modules' together (a real host's: a few MiB) */

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

int kt_setup_module_btf(KTarget *t, const KtOptions *opt)
{
	uint64_t head, node;
	uint32_t o_list, o_btf, o_data, o_size, o_name, sz_size, sz_name;
	if (kt_sym(t, "btf_modules", &head) || kb_field_offset(t->btf, "btf_module", "list", &o_list, NULL) ||
	    kb_field_offset(t->btf, "btf_module", "btf", &o_btf, NULL) ||
	    kb_field_offset(t->btf, "btf", "data", &o_data, NULL) ||
	    kb_field_offset(t->btf, "btf", "data_size", &o_size, &sz_size) ||
	    kb_field_offset(t->btf, "btf", "name", &o_name, &sz_name) || sz_size != 4)
		return 0;
	/* every module's BTF together is bounded too: a guest whose 4,096
	 * list nodes all point at one 16 MiB blob would have libbpf keep
	 * 64 GiB of parsed types */
	uint64_t total = 0;
	int e = 0;
	kx_list_iter it;
	kx_list_begin(&it, head, KT_MAX_MODULES);
	while (!(e = kt_stop(opt)) && kx_list_next(&t->mem, &it, &node) > 0) {
		uint64_t bm = node - o_list, b, data;
		uint32_t size;
		char name[64] = "";
		if (kx_read64(&t->mem, bm + o_btf, &b) || kx_read64(&t->mem, b + o_data, &data) ||
		    kx_read32(&t->mem, b + o_size, &size) ||
		    kx_read(&t->mem, b + o_name, name, sz_name < sizeof name ? sz_name : sizeof name - 1))
			continue;
		name[sizeof name - 1] = 0;
		if (!size || size > KT_MODULE_BTF_MAX || total + size > KT_MODULES_BTF_MAX)
			continue;
		total += size;
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
	return e;
}

/* VMCOREINFO: where the kernel said it is (this host's
 * /sys/kernel/vmcoreinfo), else the first candidate of a scan of all RAM
 * that survives validation; the paging it gives, proved.  kt_open's
 * first step (ktarget_int.h: the fuzzer runs it alone). */
int kt_vmcoreinfo(KTarget *t, const KtOptions *o, char *err, size_t n)
{
	const MemSource *src = t->src;
	uint64_t pa = 0;
	int e = -ENOENT;
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
		return ks_fail(err, n, -E2BIG, "no Linux kernel found: %u places in its RAM say 'OSRELEASE=' and none "
			       "is a kernel's VMCOREINFO (the last: %.200s); a corrupt or hostile image", sc.tried - 1,
			       last);
	}
	if (e && s && s != -ENOENT)
		return kt_stopped(err, n, s, "scanning RAM for VMCOREINFO", &sc);
	if (e == -ENOENT && !t->vmcoreinfo)
		return ks_fail(err, n, -ENOENT, "no Linux kernel found: the image has no VMCOREINFO (searched %llu MiB "
			       "for 'OSRELEASE='). Is this the RAM of a running x86-64 Linux >= 6.0?",
			       ms_total(src) >> 20);
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
	if ((e = kt_vmcoreinfo(t, o, err, n)))
		goto fail;
	if ((e = o->kallsyms_file ? kt_kallsyms_file(t, o->kallsyms_file, err, n) : kt_kallsyms_memory(t, o, err, n)))
		goto fail;
	if ((e = kt_setup_direct_map(t, err, n)) || (e = kt_setup_cpus(t, err, n)) ||
	    (e = kt_setup_btf(t, o->btf_file, err, n)))
		goto fail;
	if ((e = kt_setup_module_btf(t, o))) {
		e = kt_stopped(err, n, e, "reading the modules' BTF", NULL);
		goto fail;
	}
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
