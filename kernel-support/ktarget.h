/* ktarget.h - discover a running Linux kernel from its RAM alone.
 *
 * Given a MemSource and nothing else: find VMCOREINFO, take the release, the
 * KASLR slide, phys_base and the paging mode from it; decode kallsyms from
 * memory; find the direct map, the per-CPU layout and the kernel's own BTF.
 * Files (a /proc/kallsyms copy, a BTF file) may override what memory gives.
 *
 * Ownership: a KTarget borrows its MemSource (which must outlive it) and owns
 * its symbol table, VMCOREINFO copy and BTF.
 */
#ifndef SENTINEL_KTARGET_H
#define SENTINEL_KTARGET_H

#include "kx.h"
#include "msrc.h"

#include <stdbool.h>
#include <stdint.h>

struct btf;

typedef struct KSym {
	const char *name;
	uint64_t addr;
	char type;          /* kallsyms type letter: T, D, B, R, ... */
} KSym;

#define KT_VMCOREINFO_CANDIDATES 16384u   /* 'OSRELEASE=' hits tried before giving up */
#define KT_MODSYM_STRTAB_MAX (8u << 20)   /* bytes of one module's symbol names */
#define KT_MODSYMS_MAX 4000000u           /* the modules' symbols together */

typedef struct KtOptions {
	const char *kallsyms_file;  /* /proc/kallsyms format, instead of memory */
	const char *btf_file;       /* raw BTF or vmlinux ELF, instead of memory */
	/* Bounds on a search whose length the guest chooses (a RAM full of
	 * fake 'OSRELEASE=' pages, a huge symbol table): checked between
	 * chunks of every long loop.  cancel (read atomically; may be NULL):
	 * when it becomes non-zero, kt_open stops with -ECANCELED.
	 * deadline_ns (CLOCK_MONOTONIC; 0: none): past it, -ETIMEDOUT. */
	const int *cancel;
	uint64_t deadline_ns;
} KtOptions;

typedef struct KTarget {
	const MemSource *src;
	kx_mem mem;
	kx_cpus cpus;
	char release[65];
	char *vmcoreinfo;           /* the key=value text */
	uint64_t vmcoreinfo_pa;
	size_t vmcoreinfo_head;     /* its first bytes that say which kernel and slide (kt_unchanged) */
	uint64_t kaslr_offset;      /* virtual slide (KERNELOFFSET); may be 0 with KASLR on */
	int kaslr;                  /* the kernel's kaslr_enabled(): 1, 0, or -1 unknown */
	KSym *syms;
	size_t nsyms;
	size_t *sym_hash;           /* open addressing: index + 1, 0 = empty */
	size_t sym_hash_cap;
	char *sym_pool;
	const char *sym_origin;     /* "memory" or the file name */
	bool sym_slid;              /* the file was at link addresses: moved by the slide */
	struct btf *btf;
	/* loaded modules' BTF (split on btf), for types a module defines:
	 * virtio_net's virtnet_info; names as the modules' */
	struct btf **mod_btf;
	char (*mod_name)[64];
	size_t nmod;
	/* loaded modules' symbols (each module's own kallsyms table), looked
	 * up after the kernel's: a module's variables, nf_conntrack_max */
	KSym *msyms;
	size_t nmsyms;
	size_t *msym_hash;
	size_t msym_hash_cap;
	char *msym_pool;
	uint32_t btf_size;
	const char *btf_origin;
} KTarget;

/* Discover the kernel in src.  Returns 0, or -errno with a message that
 * names what was looked for in err.  Thread-safe for different targets
 * (no static state).  What a guest's memory can make it spend is bounded
 * (docs/targets.md, "A hostile guest"): KT_VMCOREINFO_CANDIDATES
 * candidates, KALLSYMS_MAX_SYMS symbols, a module's table, and the time
 * KtOptions allows. */
int kt_open(const MemSource *src, const KtOptions *o, KTarget **out, char *err, size_t errlen);
void kt_close(KTarget *t);

/* A kernel symbol's address, or a loaded module's (the kernel's first);
 * -ENOENT when neither has such a symbol. */
int kt_sym(const KTarget *t, const char *name, uint64_t *addr);
const KSym *kt_sym_at(const KTarget *t, size_t i);
/* The value of a VMCOREINFO key (e.g. "OSRELEASE", "SYMBOL(_stext)"), or NULL. */
const char *kt_info(const KTarget *t, const char *key, size_t *len);
unsigned kt_online_cpus(const KTarget *t);
/* Whether memory still holds the kernel discovered: its VMCOREINFO is where
 * and what it was.  False once the target rebooted (a new KASLR slide, a
 * new kernel) or its memory went away.  It compares the note's head, its
 * release, build ID and a symbol's address (a few hundred bytes: every
 * target is checked every second, 500 of them on a hypervisor), not the
 * whole 2-3 KiB. */
bool kt_unchanged(const KTarget *t);

#endif
