/* fuzz_discover.c - libFuzzer target: discovery and the host's parsers of
 * guest memory, on a real guest's RAM that a hostile guest has written.
 *
 * fuzz_guest.c discovers its kernel once, on the clean image, and fuzzes
 * ticks.  Here discovery itself is fuzzed, in stages: an input's first
 * byte (modulo 9) says which of these it runs, the byte's rest (divided by
 * 9) is the stage's variant, and the records after it are written:
 *
 *   0 whole       kt_open (the scan for VMCOREINFO and its parse, kallsyms
 *                 decoded from memory, the direct map and CPU layout, the
 *                 kernel's BTF, the modules' BTF and symbol tables), then,
 *                 when it succeeds, the printk ring (kl_open, kl_tail of 20
 *                 lines, kl_read of every record with dmesg's and
 *                 /dev/kmsg's formatting), symbol lookups (the kernel's and
 *                 the modules'), typed reads through the BTF (kb_resolve,
 *                 kb_print, as sentinel-inspect does) and kt_unchanged
 *   1 vmcoreinfo  kt_open's first step alone (kt_vmcoreinfo): the scan of
 *                 RAM for candidates, each loaded, parsed and proved by the
 *                 paging it gives; with variant & 1 VMCOREINFO's place given
 *                 (as this host's kernel gives it, pmem:), the scan only
 *                 when that fails; then kt_unchanged
 *   2 kallsyms    kt_kallsyms_memory: the tables decoded, indexed and
 *                 checked against VMCOREINFO's _stext; lookups
 *   3 layout      the direct map, the CPUs, KASLR; typed reads of memory
 *                 through the clean BTF (kb_print of init_task, per-CPU
 *                 runqueues)
 *   4 btf         the kernel's BTF read and parsed (libbpf), and what reads
 *                 through it: KASLR's field, the typed reads, the printk
 *                 ring's layout and kl_open, kl_tail, kl_read
 *   5 modbtf      the btf_modules list and each module's split BTF
 *   6 modsyms     the modules list and each module's symtab, strtab and
 *                 typetab; lookups
 *   7 printk      kl_open, kl_tail, kl_read (as whole does)
 *   8 libvirt     the bytes after the first as libvirt's status of a domain
 *                 (DOMAIN.xml in SENTINEL_LIBVIRT_RUNDIR, a directory of
 *                 the fuzzer's own): ms_vm_state
 *
 * Every stage but whole (and vmcoreinfo, which starts from nothing) runs on
 * what kt_open had found by then, taken from the clean image's discovery
 * done once at start (fd_clean; fd_before): an input pays for the parser
 * it aims at, a millisecond or two for the cheap ones under ASan, where
 * the whole discovery takes a sixth of a second (docs/benchmarks.md).
 * SENTINEL_FUZZ_STAGE=NAME runs every input as that stage (the first byte
 * its variant alone): tests/fuzz/run.sh's long run gives each stage its
 * own run; SENTINEL_FUZZ_PROFILE=N times each stage N times on the clean
 * image and exits.  Large blocks come from fuzz_alloc.c (why, and what
 * ASan still checks: fuzz_alloc.h).
 *
 * The image (SENTINEL_FUZZ_IMAGE, raw) is discovered once cleanly at start;
 * then each stage runs once more with the pages of the image unreadable
 * (fuzz_image.h), VMCOREINFO's place given as a hint so that the scan of
 * the RAM before it is not traced: every page the stage reads is recorded
 * (whole: VMCOREINFO, kallsyms' tables, the BTF, the module list, the
 * modules and their kallsyms, symtab and strtab, the btf_modules list and
 * the modules' BTF, the printk ring's header, descriptors, infos and
 * text; each other stage its own part), and so is every place kx.c's
 * readers are called at (the wrappers below): the fields among those
 * pages.  The records of an input are written into a private copy of the
 * image, at its stage's pages and places, and undone after the run:
 *
 *   op & 0xc0 != 0xc0: a write (fuzz_image.h: bytes, a pointer to another
 *                      place, a nudged word, a wild value): with op & 8
 *                      into a place a read began at (a field: a count, a
 *                      pointer, a list node, a header; the first page of a
 *                      table), else into a traced page
 *   op & 0xe0 == 0xc0: VMCOREINFO's text, one line rewritten, in every
 *                      copy of it the clean image has (vmcoreinfo_data's
 *                      page, the ELF note), or with op & 0x10 in copy
 *                      (op & 0xf) % copies:   K:u8 M:u8 ...
 *                      line K % lines;  M & 3 == 0: its value := N bytes
 *                      (N = (M >> 2) % 24, then the bytes);  1: D:s16, the
 *                      number nudged (hex: SYMBOL(), KERNELOFFSET, by D * 8
 *                      with M & 4, else by D 2 MiB slots; decimal: by D);
 *                      2: K2:u8, the value of line K2;  3: the line
 *                      removed, or with M & 4 the text cut before it
 *   op & 0xe0 == 0xe0: a copy of VMCOREINFO's text as it is now (its first
 *                      copy; stale, truncated): P:u16 T:u16 F:u8; at the
 *                      start of image page P % pages (any page: a candidate the scan finds
 *                      before or after the real one), after an ELF note's
 *                      name "VMCOREINFO" with F & 1; T % (length + 1)
 *                      bytes of it, a NUL after them with F & 2
 *
 * (VMCOREINFO's records are written in every stage; only whole and
 * vmcoreinfo read that text.)  Discovery runs with a deadline (5 s: a slow
 * input is bounded, as sentineld bounds it).  Nothing may crash, read
 * outside the image (it sits between guard regions), leak (LeakSanitizer;
 * fuzz_alloc.c's blocks counted), hang (-timeout) or allocate a buffer the
 * guest's size could not justify (-malloc_limit_mb); and a target
 * discovered on memory that has not changed since must be kt_unchanged.
 */
#define _GNU_SOURCE 1   /* memmem */
#include "fuzz_alloc.h"
#include "fuzz_image.h"
#include "kbtf.h"
#include "klog.h"
#include "ktarget.h"
#include "ktarget_int.h"
#include "msrc.h"

#include <bpf/btf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FD_MAX_WRITES 64
#define FD_DEADLINE_NS 5000000000ull
#define FD_NOTE_SLACK 512          /* bytes past VMCOREINFO's end a rewritten text may take */
#define FD_NOTE_MAX 16384

/* The copies of VMCOREINFO's text in the clean image (the kernel keeps
 * two: vmcoreinfo_data's page and the ELF note made from it): where each
 * is in the image, and the bytes an op may write there. */
#define FD_NOTES 4
typedef struct FdNote {
	size_t off, span;
} FdNote;
static FdNote fd_notes[FD_NOTES];
static unsigned fd_nnotes;
static size_t fd_img_pages;
static FiSpan *fd_reads;            /* the places the traced run's reads began at */
static size_t fd_nreads, fd_reads_cap;
static bool fd_tracing;
static uint64_t fd_pob;            /* page_offset_base: the direct map (the pointer op) */
static FILE *fd_null;
static int fd_verbose;             /* SENTINEL_FUZZ_VERBOSE: what each input's run came to (triage); 2: and the
				    * places, to write an input by hand */
static unsigned long fd_runs, fd_found, fd_logs, fd_records;

static void fd_die(const char *what, const char *err) { fi_die("fuzz_discover", what, err); }

static uint64_t fd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fd_on_record(const KlRecord *r, void *arg)
{
	kl_print_kmsg(r, fd_null);
	(*(unsigned long *)arg)++;
	return 0;
}

/* Typed reads through the (maybe written) BTF, as sentinel-inspect makes
 * them: a string, a struct, an integer, a per-CPU variable. */
static const char *const fd_places[] = {"init_uts_ns.name.release", "init_task.comm", "init_task.pid", "jiffies",
					"init_task.tasks", "runqueues.nr_running"};
/* The kernel's symbols and a module's, and names no kernel has. */
static const char *const fd_names[] = {"_stext", "init_task", "prb", "page_offset_base", "__per_cpu_offset",
				       "modules", "btf_modules", "nf_conntrack_max", "virtnet_poll", "", "no such symbol"};

static void fd_log(const KTarget *t)
{
	KlLog *l;
	char err[512];
	int lr = kl_open(t, &l, err, sizeof err);
	if (fd_verbose)
		fprintf(stderr, "fuzz_discover: the log: %s\n", lr ? err : "found");
	if (lr)
		return;
	uint64_t next = 0;
	unsigned long n = 0;
	fd_logs++;
	free(kl_tail(l, 20, err, sizeof err));
	if (kl_read(l, 0, fd_on_record, &n, &next, err, sizeof err) >= 0)
		kl_read(l, next > 8 ? next - 8 : 0, fd_on_record, &n, NULL, err, sizeof err);
	fd_records += n;
	if (fd_verbose)
		fprintf(stderr, "fuzz_discover: %lu log records read\n", n);
	kl_close(l);
}

static void fd_lookups(const KTarget *t)
{
	uint64_t a;
	for (size_t i = 0; i < sizeof fd_names / sizeof *fd_names; i++)
		kt_sym(t, fd_names[i], &a);
	for (size_t i = 0; i < 4; i++) {
		const KSym *s = kt_sym_at(t, i * t->nsyms / 4);
		if (s)
			kt_sym(t, s->name, &a);
		if (t->nmsyms)
			kt_sym(t, t->msyms[i * t->nmsyms / 4].name, &a);
	}
}

static void fd_typed(const KTarget *t)
{
	char err[512];
	for (size_t i = 0; i < sizeof fd_places / sizeof *fd_places; i++) {
		KbPlace p;
		if (!kb_resolve(t, fd_places[i], &p, err, sizeof err)) {
			kb_print(t, &p, 0, fd_null, 0);
			if (kb_is_int(t, &p)) {
				int64_t v;
				kb_read_int(t, &p, 0, &v);
			}
		}
	}
}

static void fd_check_unchanged(const KTarget *t)
{
	if (!kt_unchanged(t)) {           /* nothing wrote memory since the target was discovered */
		fprintf(stderr, "fuzz_discover: kt_unchanged is false on the memory the target was just discovered on "
			"(VMCOREINFO at %#llx, %zu bytes of head)\n", (unsigned long long)t->vmcoreinfo_pa,
			t->vmcoreinfo_head);
		abort();
	}
}

/* The whole discovery, and when it succeeds everything the host reads
 * with it.  True when it discovered a kernel. */
static bool fd_run(const KtOptions *o)
{
	KTarget *t;
	char err[512];
	if (kt_open(fi_src, o, &t, err, sizeof err)) {
		if (fd_verbose)
			fprintf(stderr, "fuzz_discover: not discovered: %s\n", err);
		return false;
	}
	fd_found++;
	if (fd_verbose)
		fprintf(stderr, "fuzz_discover: discovered Linux %.64s (VMCOREINFO at %#llx, %zu symbols, %zu modules' "
			"symbols, %zu modules' BTF)\n", t->release, (unsigned long long)t->vmcoreinfo_pa, t->nsyms,
			t->nmsyms, t->nmod);
	fd_log(t);
	fd_lookups(t);
	fd_typed(t);
	kt_info(t, "OSRELEASE", NULL);
	kt_online_cpus(t);
	fd_check_unchanged(t);
	kt_close(t);
	return true;
}

/* ---- the stages ---- */

/* What an input's first byte (modulo their number) runs.  whole: kt_open
 * and its readers, as above.  The others run one step of kt_open (or one
 * reader) alone, on the written image, with what the steps before it found
 * taken from the clean image's discovery (fd_clean, done once at start):
 * each pays for its own parser only. */
enum { FD_WHOLE, FD_VMCOREINFO, FD_KALLSYMS, FD_LAYOUT, FD_BTF, FD_MODBTF, FD_MODSYMS, FD_PRINTK, FD_LIBVIRT,
       FD_NSTAGES };
static const char *const fd_stage_names[FD_NSTAGES] = {"whole", "vmcoreinfo", "kallsyms", "layout", "btf",
						       "modbtf", "modsyms", "printk", "libvirt"};
typedef struct FdStage {
	size_t page0, npages;      /* the pages its traced run read: fi_pages[page0, page0 + npages) */
	size_t read0, nreads;      /* the places its reads began at: fd_reads[read0, read0 + nreads) */
	unsigned long runs, ok;    /* inputs it ran; those its parser took */
	uint64_t ns;               /* their time */
} FdStage;
static FdStage fd_st[FD_NSTAGES];
static int fd_only = -1;           /* SENTINEL_FUZZ_STAGE: the stage every input runs */
static KTarget *fd_clean;          /* the clean image's discovery */
static KTarget fd_w;               /* what a stage runs on: fd_clean as kt_open had it before that step */
static char fd_virt_dir[64], fd_virt_xml[128];

/* fd_w: the clean target as it was when kt_open came to step s (what the
 * steps from s on set, unset; their allocations, fd_clean's still). */
static void fd_before(int s)
{
	fd_w = *fd_clean;
	if (s <= FD_KALLSYMS) {
		fd_w.syms = NULL, fd_w.nsyms = 0, fd_w.sym_hash = NULL, fd_w.sym_hash_cap = 0, fd_w.sym_pool = NULL;
		fd_w.sym_origin = NULL;
	}
	if (s <= FD_LAYOUT) {
		fd_w.mem.page_offset_base = UINT64_MAX;
		memset(&fd_w.cpus, 0, sizeof fd_w.cpus);
	}
	if (s <= FD_BTF)
		fd_w.btf = NULL, fd_w.btf_size = 0, fd_w.btf_origin = NULL;
	if (s <= FD_MODBTF)
		fd_w.mod_btf = NULL, fd_w.mod_name = NULL, fd_w.nmod = 0;
	if (s <= FD_MODSYMS)
		fd_w.msyms = NULL, fd_w.nmsyms = 0, fd_w.msym_hash = NULL, fd_w.msym_hash_cap = 0, fd_w.msym_pool = NULL;
	if (s <= FD_LAYOUT)
		fd_w.kaslr = -1;
}

/* Stage s on the image as it is now (v: the first byte's rest, the
 * stage's variant).  True when its parser took it. */
static bool fd_stage(int s, unsigned v, const KtOptions *o, const uint8_t *data, size_t size)
{
	char err[512], state[64];
	bool ok = false;
	switch (s) {
	case FD_WHOLE:
		return fd_run(o);
	case FD_VMCOREINFO:             /* the scan, VMCOREINFO's parse, the paging it gives, proved */
		memset(&fd_w, 0, sizeof fd_w);
		fd_w.src = fi_src;
		ms_fill(fi_src, &fd_w.mem);
		if (v & 1) {            /* VMCOREINFO's place given, as this host's kernel gives it (pmem:) */
			fi_src->vmcoreinfo_pa = fd_clean->vmcoreinfo_pa;
			fi_src->vmcoreinfo_size = strlen(fd_clean->vmcoreinfo);
		}
		ok = !kt_vmcoreinfo(&fd_w, o, err, sizeof err);
		if (v & 1 && !fd_tracing)
			fi_src->vmcoreinfo_pa = fi_src->vmcoreinfo_size = 0;
		if (ok) {
			kt_info(&fd_w, "OSRELEASE", NULL);
			fd_check_unchanged(&fd_w);
		}
		free(fd_w.vmcoreinfo);
		break;
	case FD_KALLSYMS:               /* kallsyms decoded from memory, indexed, checked against _stext */
		fd_before(s);
		if ((ok = !kt_kallsyms_memory(&fd_w, o, err, sizeof err)))
			fd_lookups(&fd_w);
		free(fd_w.syms);
		free(fd_w.sym_hash);
		free(fd_w.sym_pool);
		break;
	case FD_LAYOUT:                 /* the direct map, the CPUs, KASLR; typed reads of memory */
		fd_before(s);
		if ((ok = !kt_setup_direct_map(&fd_w, err, sizeof err) && !kt_setup_cpus(&fd_w, err, sizeof err))) {
			fd_w.btf = fd_clean->btf;   /* KASLR and the typed reads: kt_open has it by then */
			kt_setup_kaslr(&fd_w);
			kt_online_cpus(&fd_w);
			fd_typed(&fd_w);
		}
		break;
	case FD_BTF:                    /* the kernel's BTF parsed; what reads through it */
		fd_before(s);
		if ((ok = !kt_setup_btf(&fd_w, NULL, err, sizeof err))) {
			kt_setup_kaslr(&fd_w);
			fd_typed(&fd_w);
			fd_log(&fd_w);
		}
		btf__free(fd_w.btf);
		break;
	case FD_MODBTF:                 /* the btf_modules list and each module's split BTF */
		fd_before(s);
		ok = !kt_setup_module_btf(&fd_w, o) && fd_w.nmod;
		for (size_t i = 0; i < fd_w.nmod; i++)
			btf__free(fd_w.mod_btf[i]);
		free(fd_w.mod_btf);
		free(fd_w.mod_name);
		break;
	case FD_MODSYMS:                /* the modules list and each module's symtab, strtab, typetab */
		fd_before(s);
		if ((ok = !kt_setup_module_syms(&fd_w, o) && fd_w.nmsyms))
			fd_lookups(&fd_w);
		free(fd_w.msyms);
		free(fd_w.msym_hash);
		free(fd_w.msym_pool);
		break;
	case FD_PRINTK: {               /* the printk ring: kl_open, kl_tail, kl_read */
		unsigned long logs = fd_logs;
		fd_log(fd_clean);
		ok = fd_logs != logs;
		break;
	}
	case FD_LIBVIRT: {              /* libvirt's status of a domain (the bytes after the first) */
		FILE *f = fopen(fd_virt_xml, "we");
		if (!f || fwrite(data, 1, size, f) != size || fclose(f))
			fd_die(fd_virt_xml, "cannot write");
		ok = !ms_vm_state("libvirt:fuzz", state, sizeof state);
		ms_vm_state("libvirt:fuzz,split=auto", state, sizeof state);
		break;
	}
	}
	return ok;
}

/* The byte of the image where physical address pa is, and the bytes of
 * its range from there (0: no range has it). */
static size_t fd_img_off(uint64_t pa, size_t *room)
{
	for (unsigned i = 0; i < fi_src->nranges; i++) {
		const kx_range *r = &fi_src->r[i];
		if (pa >= r->phys && pa - r->phys < r->size) {
			*room = r->size - (pa - r->phys);
			return (size_t)(r->ptr + (pa - r->phys) - (uint64_t)(uintptr_t)fi_src->map);
		}
	}
	*room = 0;
	return 0;
}

/* A read of n bytes at physical address pa in the traced run: the place
 * it begins (up to its page's end; the pages are places of their own). */
static void fd_read_pa(uint64_t pa, uint64_t n)
{
	size_t room = 0, off = fd_tracing ? fd_img_off(pa, &room) : 0;
	if (!fd_tracing || !n || !room)
		return;
	if (n > 4096 - (pa & 4095))
		n = 4096 - (pa & 4095);
	if (fd_nreads == fd_reads_cap) {
		size_t cap = fd_reads_cap ? 2 * fd_reads_cap : 4096;
		FiSpan *r = realloc(fd_reads, cap * sizeof *r);
		if (!r)
			return;
		fd_reads = r;
		fd_reads_cap = cap;
	}
	fd_reads[fd_nreads++] = (FiSpan){off, n < room ? n : room};
}

static void fd_read_va(const kx_mem *m, uint64_t va, uint64_t n)
{
	uint64_t pa;
	if (fd_tracing && !kx_translate(m, va, &pa))
		fd_read_pa(pa, n);
}

/* The reads of kx.c's callers (ktarget.c, klog.c, kbtf.c), through these
 * wrappers: the linker sends their calls here (-Wl,--wrap, the Makefile).
 * The fields they read (a count, a pointer, a list node, a header) are
 * what an input most wants to write, and a few among the thousands of
 * pages that the tables and the BTF fill. */
#define FD_WRAP(name, type)                                                                      \
	int __real_##name(const kx_mem *m, uint64_t va, type *v);                                \
	int __wrap_##name(const kx_mem *m, uint64_t va, type *v);                                \
	int __wrap_##name(const kx_mem *m, uint64_t va, type *v)                                 \
	{                                                                                        \
		fd_read_va(m, va, sizeof *v);                                                    \
		return __real_##name(m, va, v);                                                  \
	}
FD_WRAP(kx_read8, uint8_t)
FD_WRAP(kx_read16, uint16_t)
FD_WRAP(kx_read32, uint32_t)
FD_WRAP(kx_read64, uint64_t)

int __real_kx_read(const kx_mem *m, uint64_t va, void *dst, uint64_t n);
int __wrap_kx_read(const kx_mem *m, uint64_t va, void *dst, uint64_t n);
int __wrap_kx_read(const kx_mem *m, uint64_t va, void *dst, uint64_t n)
{
	fd_read_va(m, va, n);
	return __real_kx_read(m, va, dst, n);
}

int __real_kx_phys_ptr(const kx_mem *m, uint64_t pa, uint64_t len, uint64_t *ptr);
int __wrap_kx_phys_ptr(const kx_mem *m, uint64_t pa, uint64_t len, uint64_t *ptr);
int __wrap_kx_phys_ptr(const kx_mem *m, uint64_t pa, uint64_t len, uint64_t *ptr)
{
	fd_read_pa(pa, len);
	return __real_kx_phys_ptr(m, pa, len, ptr);
}

int __real_kx_list_next(const kx_mem *m, kx_list_iter *it, uint64_t *node);
int __wrap_kx_list_next(const kx_mem *m, kx_list_iter *it, uint64_t *node);
int __wrap_kx_list_next(const kx_mem *m, kx_list_iter *it, uint64_t *node)
{
	int r = __real_kx_list_next(m, it, node);
	if (r > 0)
		fd_read_va(m, *node, 16);          /* the node's next and prev */
	return r;
}

static int fd_span_cmp(const void *a, const void *b)
{
	const FiSpan *x = a, *y = b;
	return x->off != y->off ? (x->off < y->off ? -1 : 1) : x->len != y->len ? (x->len < y->len ? -1 : 1) : 0;
}

/* The copies of the VMCOREINFO text discovered (text[len]) in the image:
 * the places the scan would try (a page's start, or after the note name)
 * that hold the same text. */
static void fd_find_notes(const char *text, size_t len)
{
	const char *base = fi_src->map, *end = base + fi_src->map_len;
	for (const char *p = base; fd_nnotes < FD_NOTES && (p = memmem(p, (size_t)(end - p), "OSRELEASE=", 10)); p++) {
		size_t off = (size_t)(p - base);
		if ((off % 4096 && (off < 12 || memcmp(p - 12, "VMCOREINFO", 11))) || (size_t)(end - p) <= len ||
		    memcmp(p, text, len + 1))
			continue;
		size_t span = len + 1 + FD_NOTE_SLACK;
		if (span > (size_t)(end - p))
			span = (size_t)(end - p);
		fd_notes[fd_nnotes++] = (FdNote){off, span < FD_NOTE_MAX ? span : FD_NOTE_MAX};
	}
	if (!fd_nnotes)
		fd_die("VMCOREINFO", "the text discovered is nowhere in the image");
}

/* Sort the places fd_reads[from, fd_nreads) and drop their repeats. */
static void fd_places_done(size_t from)
{
	FiSpan *r = fd_reads + from;
	size_t n = fd_nreads - from, u = 0;
	qsort(r, n, sizeof *r, fd_span_cmp);
	for (size_t i = 0; i < n; i++)
		if (!u || fd_span_cmp(&r[i], &r[u - 1]))
			r[u++] = r[i];
	fd_nreads = from + u;
}

/* Stage s traced on the clean image: the pages and places it reads are
 * where its inputs write.  VMCOREINFO's place given, so that the scan of
 * the RAM before it is not traced. */
static void fd_trace(int s)
{
	FdStage *st = &fd_st[s];
	st->page0 = fi_npages;
	st->read0 = fd_nreads;
	unsigned long logs = fd_logs;
	fi_src->vmcoreinfo_pa = fd_clean->vmcoreinfo_pa;
	fi_src->vmcoreinfo_size = strlen(fd_clean->vmcoreinfo);
	fi_trace_begin();
	fd_tracing = true;
	bool ok = fd_stage(s, 0, &(KtOptions){0}, (const uint8_t *)"", 0);
	fd_tracing = false;
	fi_trace_end("fuzz_discover", "discovery read no page of the image");
	fi_src->vmcoreinfo_pa = fi_src->vmcoreinfo_size = 0;
	fd_places_done(st->read0);
	st->npages = fi_npages - st->page0;
	st->nreads = fd_nreads - st->read0;
	if (!ok || !st->npages || !st->nreads || ((s == FD_WHOLE || s == FD_BTF) && fd_logs == logs))
		fd_die(fd_stage_names[s], "the stage failed on the clean image, or read nothing of it through kx.c (the "
		       "Makefile links with -Wl,--wrap=kx_read...)");
}

static uint64_t fd_start_ns;

static void fd_report(void)
{
	double all = (double)(fd_now_ns() - fd_start_ns) / 1e9;
	for (int s = 0; s < FD_NSTAGES; s++)
		if (fd_st[s].runs)
			fprintf(stderr, "fuzz_discover: stage %-10s %9lu runs (%lu taken), %8.3f ms each, %7.0f/s of its "
				"own time\n", fd_stage_names[s], fd_st[s].runs, fd_st[s].ok,
				(double)fd_st[s].ns / 1e6 / (double)fd_st[s].runs,
				(double)fd_st[s].runs * 1e9 / (double)(fd_st[s].ns ? fd_st[s].ns : 1));
	fprintf(stderr, "fuzz_discover: %lu inputs in %.0f s since the start; %lu discovered, %lu logs read (%lu "
		"records)\n", fd_runs, all, fd_found, fd_logs, fd_records);
}

static void fd_cleanup(void)
{
	if (fd_virt_xml[0])
		unlink(fd_virt_xml);
	if (fd_virt_dir[0])
		rmdir(fd_virt_dir);
}

/* SENTINEL_FUZZ_PROFILE=N: each stage N times on the clean image, timed;
 * then exit. */
static void fd_profile(unsigned n)
{
	static const uint8_t status[] = "<domstatus state='running' reason='booted' pid='4242'>\n"
		"  <domain type='kvm' id='1'/>\n</domstatus>\n";
	for (int s = 0; s < FD_NSTAGES; s++) {
		if (fd_only >= 0 && s != fd_only)
			continue;
		uint64_t t0 = fd_now_ns();
		for (unsigned i = 0; i < n; i++)
			fd_stage(s, i, &(KtOptions){0}, status, sizeof status - 1);
		fprintf(stderr, "fuzz_discover: profile: stage %-10s %10.3f ms\n", fd_stage_names[s],
			(double)(fd_now_ns() - t0) / 1e6 / n);
	}
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	char err[1024];
	const char *img = getenv("SENTINEL_FUZZ_IMAGE"), *only = getenv("SENTINEL_FUZZ_STAGE");
	fd_start_ns = fd_now_ns();
	if (!img)
		fd_die("usage", "set SENTINEL_FUZZ_IMAGE (a guest's raw RAM image); tests/fuzz/run.sh discover makes it");
	for (int s = 0; only && *only && s < FD_NSTAGES; s++)
		if (!strcmp(only, fd_stage_names[s]))
			fd_only = s;
	if (only && *only && fd_only < 0)
		fd_die("SENTINEL_FUZZ_STAGE", "not a stage: whole vmcoreinfo kallsyms layout btf modbtf modsyms printk "
		       "libvirt");
	fi_open("fuzz_discover", img);
	fd_verbose = getenv("SENTINEL_FUZZ_VERBOSE") ? atoi(getenv("SENTINEL_FUZZ_VERBOSE")) : 0;
	fd_img_pages = fi_src->map_len >> 12;
	if (!(fd_null = fopen("/dev/null", "we")))
		fd_die("/dev/null", "cannot open");
	/* libvirt's run directory, for the libvirt stage's status file */
	snprintf(fd_virt_dir, sizeof fd_virt_dir, "%s/sentinel-fuzz-XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
	if (!mkdtemp(fd_virt_dir))
		fd_die(fd_virt_dir, "cannot make a directory");
	snprintf(fd_virt_xml, sizeof fd_virt_xml, "%s/fuzz.xml", fd_virt_dir);
	setenv("SENTINEL_LIBVIRT_RUNDIR", fd_virt_dir, 1);
	atexit(fd_cleanup);
	KlLog *l;
	uint64_t t0 = fd_now_ns();
	if (kt_open(fi_src, &(KtOptions){0}, &fd_clean, err, sizeof err))   /* kept to the end: the stages' base */
		fd_die("discovery", err);
	double clean_ms = (double)(fd_now_ns() - t0) / 1e6;
	fd_pob = fd_clean->mem.page_offset_base;
	size_t note_len = strlen(fd_clean->vmcoreinfo);
	fd_find_notes(fd_clean->vmcoreinfo, note_len);
	if (kl_open(fd_clean, &l, err, sizeof err))
		fd_die("kl_open", err);
	unsigned long recs = 0;
	if (kl_read(l, 0, fd_on_record, &recs, NULL, err, sizeof err) < 0)
		fd_die("kl_read", err);
	kl_close(l);
	fprintf(stderr, "fuzz_discover: Linux %s: VMCOREINFO at %#llx (%zu bytes, %u copies), %zu symbols, %zu modules' "
		"symbols, %zu modules' BTF, BTF %u bytes, %lu log records; a clean discovery %.1f ms\n", fd_clean->release,
		(unsigned long long)fd_clean->vmcoreinfo_pa, note_len, fd_nnotes, fd_clean->nsyms, fd_clean->nmsyms,
		fd_clean->nmod, fd_clean->btf_size, recs, clean_ms);
	if (getenv("SENTINEL_FUZZ_PROFILE"))
		fd_profile((unsigned)atoi(getenv("SENTINEL_FUZZ_PROFILE")) ?: 1);
	/* traced: every stage (but libvirt's, which reads a file), each on its own */
	for (int s = 0; s < FD_LIBVIRT; s++) {
		if (fd_only >= 0 && s != fd_only)
			continue;
		fd_trace(s);
		fprintf(stderr, "fuzz_discover: stage %-10s reads %5zu pages (%6zu KiB) in %5zu places\n", fd_stage_names[s],
			fd_st[s].npages, fd_st[s].npages * 4, fd_st[s].nreads);
		for (size_t i = 0; fd_verbose > 1 && i < fd_st[s].nreads; i++)
			fprintf(stderr, "fuzz_discover: %s place %zu: image offset %#zx, %zu bytes\n", fd_stage_names[s], i,
				fd_reads[fd_st[s].read0 + i].off, fd_reads[fd_st[s].read0 + i].len);
	}
	fd_found = fd_logs = fd_records = 0;
	atexit(fd_report);
	return 0;
}

/* A copy of VMCOREINFO's text as it is now (at most span - 1 bytes). */
static size_t fd_note_now(const FdNote *nt, char *buf)
{
	const char *at = (const char *)fi_src->map + nt->off;
	size_t n = strnlen(at, nt->span - 1);
	memcpy(buf, at, n);
	buf[n] = 0;
	return n;
}

/* Line k (modulo their number) of text[n]: its start, value (after the
 * first '='; its end when none) and end (its newline, or n).  False when
 * the text has no line. */
static bool fd_line(const char *text, size_t n, unsigned k, size_t *start, size_t *val, size_t *end)
{
	unsigned lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += text[i] == '\n' || i == n - 1;
	if (!lines)
		return false;
	k %= lines;
	size_t s = 0;
	for (; k; s++)
		if (text[s] == '\n')
			k--;
	size_t e = s;
	while (e < n && text[e] != '\n')
		e++;
	const char *eq = memchr(text + s, '=', e - s);
	*start = s;
	*val = eq ? (size_t)(eq - text) + 1 : e;
	*end = e;
	return true;
}

/* One VMCOREINFO record (d[0] the op) on copy nt; the bytes it took, or 0. */
static size_t fd_note_op(const uint8_t *d, size_t left, const FdNote *nt, FiUndo *u)
{
	static char cur[FD_NOTE_MAX], out[2 * FD_NOTE_MAX];
	size_t n = fd_note_now(nt, cur), s, v, e, o = 0, used;
	*u = (FiUndo){0, 0};
	if ((d[0] & 0xe0) == 0xe0) {          /* a copy elsewhere */
		if (left < 6)
			return 0;
		size_t page = (size_t)(fi_u16(d + 1) % fd_img_pages) << 12, len = fi_u16(d + 3) % (n + 1);
		if (d[5] & 1) {
			memcpy(out, "VMCOREINFO\0", 12);
			o = 12;
		}
		memcpy(out + o, cur, len);
		o += len;
		if (d[5] & 2)
			out[o++] = 0;
		fi_put(page, out, o, u);
		return 6;
	}
	if (left < 3)
		return 0;
	uint8_t m = d[2];
	used = 3;
	char val[64];
	size_t vl = 0;
	bool found = fd_line(cur, n, d[1], &s, &v, &e);
	switch (m & 3) {
	case 0:                               /* raw bytes */
		vl = (size_t)(m >> 2) % 24;
		if (left < used + vl)
			return 0;
		memcpy(val, d + used, vl);
		used += vl;
		break;
	case 1:                               /* a number nudged */
		if (left < used + 2)
			return 0;
		if (found) {
			int16_t dd = (int16_t)fi_u16(d + used);
			char num[32];
			snprintf(num, sizeof num, "%.*s", (int)(e - v < 31 ? e - v : 31), cur + v);
			bool hex = !strncmp(cur + s, "SYMBOL(", 7) || !strncmp(cur + s, "KERNELOFFSET", 12);
			if (hex)
				vl = (size_t)snprintf(val, sizeof val, "%llx", strtoull(num, NULL, 16) +
						      (unsigned long long)(int64_t)dd * (m & 4 ? 8 : 2u << 20));
			else
				vl = (size_t)snprintf(val, sizeof val, "%lld", strtoll(num, NULL, 10) + dd);
		}
		used += 2;
		break;
	case 2:                               /* another line's value */
		if (left < used + 1)
			return 0;
		if (found) {
			size_t s2, v2, e2;
			fd_line(cur, n, d[used], &s2, &v2, &e2);
			vl = e2 - v2 < sizeof val ? e2 - v2 : sizeof val;
			memcpy(val, cur + v2, vl);
		}
		used += 1;
		break;
	default:                              /* the line removed, or the text cut before it */
		if (found) {
			v = s;
			if (m & 4)
				e = n;
			else if (e < n)
				e++;
		}
		break;
	}
	if (!found)
		return used;
	memcpy(out, cur, v);
	o = v;
	memcpy(out + o, val, vl);
	o += vl;
	memcpy(out + o, cur + e, n - e);
	o += n - e;
	if (o > nt->span - 1)
		o = nt->span - 1;
	out[o++] = 0;
	fi_put(nt->off, out, o, u);
	return used;
}

/* A VMCOREINFO record: on copy (op & 0xf) % copies with op & 0x10, else on
 * every copy (a kernel writes both; the copy op reads the first).  Its undo
 * entries go to u (FD_NOTES at most), their number to *nu. */
static size_t fd_notes_op(const uint8_t *d, size_t left, FiUndo *u, unsigned *nu)
{
	bool one = (d[0] & 0x30) == 0x10;         /* a line op (0xc0) naming its copy */
	unsigned k = one ? (d[0] & 0xf) % fd_nnotes : 0, last = one || (d[0] & 0xe0) == 0xe0 ? k : fd_nnotes - 1;
	size_t used = 0;
	for (; k <= last; k++) {
		if (!(used = fd_note_op(d, left, &fd_notes[k], &u[*nu])))
			return 0;
		++*nu;
	}
	return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FiUndo undo[FD_MAX_WRITES + FD_NOTES];
	unsigned nu = 0;
	if (!size)
		return -1;
	int s = fd_only >= 0 ? fd_only : data[0] % FD_NSTAGES;   /* one stage: the byte's variant alone */
	FdStage *st = &fd_st[s];
	data++, size--;
	for (size_t i = 0, used; s != FD_LIBVIRT && nu < FD_MAX_WRITES && i < size; i += used) {
		if ((data[i] & 0xc0) == 0xc0)
			used = fd_notes_op(data + i, size - i, undo, &nu);
		else if ((used = data[i] & 8 ? fi_write(data + i, size - i, fd_pob, fd_reads + st->read0, st->nreads,
							&undo[nu])
					     : fi_write(data + i, size - i, fd_pob, fi_pages + st->page0, st->npages,
							&undo[nu])))
			nu++;
		if (!used)
			break;
	}
	uint64_t t0 = fd_now_ns();
	unsigned long live = fa_live();
	st->ok += fd_stage(s, data[-1] / FD_NSTAGES, &(KtOptions){.deadline_ns = t0 + FD_DEADLINE_NS}, data, size);
	st->ns += fd_now_ns() - t0;
	if (fa_live() != live) {          /* LeakSanitizer does not see fuzz_alloc.c's blocks */
		fprintf(stderr, "fuzz_discover: stage %s left %ld large blocks allocated (a leak)\n", fd_stage_names[s],
			(long)(fa_live() - live));
		abort();
	}
	st->runs++;
	fi_undo(undo, nu);
	if (++fd_runs % 10000 == 0 || (fd_runs < 10000 && fd_runs % 1000 == 0))
		fd_report();
	return 0;
}
