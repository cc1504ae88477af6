/* fuzz_image.h - a real guest's RAM image for the fuzzers that write into
 * it: fuzz_guest.c (then a tick) and fuzz_discover.c (then discovery and
 * the host's parsers of guest memory).
 *
 * The image (raw) is mapped twice: as ms_open maps it, read-only and shared
 * (the pristine bytes, never written), and private and writable between two
 * inaccessible guard regions, where the source's ranges point: an input's
 * writes land in the private copy, and are undone by copying the pristine
 * bytes back (fi_undo: in any order, overlapping or not).  A read outside
 * the image faults in a guard region: a finding.
 *
 * A traced run (fi_trace_begin, the code, fi_trace_end) has the image's
 * pages unreadable and records each page it reads (a SIGSEGV per new page):
 * places an input's records write into (FiSpan: the image's bytes
 * [off, off + len); a traced page is one of 4096).
 *
 *   record -> op SEL:u16 OFF:u16 body        (fi_write)
 *   op & 3 == 0   bytes:    N = body[0] % 16 + 1, then N bytes
 *   op & 3 == 1   pointer:  SEL2:u16 OFF2:u16; the direct-map address of
 *                           that place in another read page (a list that
 *                           loops, a task that is another's, a tree whose
 *                           child is its parent)
 *   op & 3 == 2   nudge:    D:s8; the 8-byte word there += D * 8 (a torn
 *                           or shifted pointer, a count off by some)
 *   op & 3 == 3   wild:     8 bytes; with op & 4 a kernel-half address
 *                           (into no RAM, a hole, a non-canonical one)
 * SEL picks one of the places (modulo their number), OFF % its length the
 * byte in it (for a page: OFF & 0xfff).
 *
 * State is static: one image per process (each fuzzer is one translation
 * unit); the SIGSEGV handler reads it.
 */
#ifndef SENTINEL_FUZZ_IMAGE_H
#define SENTINEL_FUZZ_IMAGE_H

#include "msrc.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FI_GUARD (64ul << 20)

static MemSource *fi_src;           /* its ranges point into the private copy (fi_src->map) */
static const char *fi_pristine;     /* the image as ms_open mapped it */
/* A place in the image: bytes [off, off + len). */
typedef struct FiSpan {
	size_t off, len;
} FiSpan;

static FiSpan *fi_pages;            /* the pages traced runs read */
static size_t fi_npages, fi_cap;
static struct sigaction fi_old_segv;

static inline void fi_die(const char *prog, const char *what, const char *err)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, err);
	exit(2);
}

static inline uint16_t fi_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Open img (a raw RAM image): its private copy between guard regions,
 * before any discovery, so that every range points into it. */
static inline void fi_open(const char *prog, const char *img)
{
	char err[1024], spec[4096];
	snprintf(spec, sizeof spec, "raw:%s", img);
	if (ms_open(spec, &fi_src, err, sizeof err))
		fi_die(prog, img, err);
	size_t len = (fi_src->map_len + 4095) & ~4095ul;
	char *res = mmap(NULL, len + 2 * FI_GUARD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED || mmap(res + FI_GUARD, fi_src->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
				      fi_src->fd, 0) != res + FI_GUARD)
		fi_die(prog, "mmap", "cannot map the image privately between guard regions");
	char *was = fi_src->map, *base = res + FI_GUARD;
	for (unsigned i = 0; i < fi_src->nranges; i++)
		fi_src->r[i].ptr += (uint64_t)(uintptr_t)base - (uint64_t)(uintptr_t)was;
	fi_pristine = was;                 /* kept: ms_close would unmap the copy, never called */
	fi_src->map = base;
	fi_cap = (fi_src->map_len + 4095) >> 12;  /* every page, at most: no allocation in the handler */
	if (!(fi_pages = calloc(fi_cap, sizeof *fi_pages)))
		fi_die(prog, "tracing", "out of memory");
}

/* A traced run's SIGSEGV: a first read of an image page.  Record it, open
 * it, retry the access.  Anything else is a real fault: the default
 * action, which the sanitizer reports. */
static inline void fi_on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *a = si->si_addr, *base = fi_src->map;
	if (a < base || a >= base + fi_src->map_len) {
		signal(sig, SIG_DFL);
		return;
	}
	size_t pg = (size_t)(a - base) >> 12;
	if (fi_npages < fi_cap)
		fi_pages[fi_npages++] = (FiSpan){pg << 12, 4096};
	mprotect(base + (pg << 12), 4096, PROT_READ | PROT_WRITE);
}

static inline void fi_trace_begin(void)
{
	struct sigaction sa = {.sa_sigaction = fi_on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER};
	sigaction(SIGSEGV, &sa, &fi_old_segv);
	mprotect(fi_src->map, fi_src->map_len, PROT_NONE);
}

static inline void fi_trace_end(const char *prog, const char *what)
{
	mprotect(fi_src->map, fi_src->map_len, PROT_READ | PROT_WRITE);
	sigaction(SIGSEGV, &fi_old_segv, NULL);
	if (!fi_npages)
		fi_die(prog, "tracing", what);
}

/* The image's physical address of byte off of the mapping (its range). */
static inline uint64_t fi_phys(size_t off)
{
	uint64_t host = (uint64_t)(uintptr_t)fi_src->map + off;
	for (unsigned i = 0; i < fi_src->nranges; i++)
		if (host >= fi_src->r[i].ptr && host - fi_src->r[i].ptr < fi_src->r[i].size)
			return fi_src->r[i].phys + (host - fi_src->r[i].ptr);
	return 0;
}

/* A place an input wrote, to be made pristine again. */
typedef struct FiUndo {
	size_t off, n;
} FiUndo;

/* Write v[n] at byte off of the image (cut at its end), remembering where. */
static inline void fi_put(size_t off, const void *v, size_t n, FiUndo *u)
{
	if (off >= fi_src->map_len)
		n = 0;
	else if (n > fi_src->map_len - off)
		n = fi_src->map_len - off;
	memcpy((char *)fi_src->map + off, v, n);
	*u = (FiUndo){off, n};
}

static inline void fi_undo(const FiUndo *u, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		memcpy((char *)fi_src->map + u[i].off, fi_pristine + u[i].off, u[i].n);
}

/* The byte of the places to[n] that SEL:u16 OFF:u16 at d name. */
static inline size_t fi_place(const uint8_t *d, const FiSpan *to, size_t n)
{
	const FiSpan *s = &to[fi_u16(d) % n];
	return s->off + fi_u16(d + 2) % s->len;
}

/* One record at d (left bytes), applied to a place of to[nto]; pob: the
 * direct map's base (the pointer op, to another of them).  The bytes the
 * record took, or 0 at the input's end. */
static inline size_t fi_write(const uint8_t *d, size_t left, uint64_t pob, const FiSpan *to, size_t nto, FiUndo *u)
{
	if (left < 5)
		return 0;
	uint8_t op = d[0];
	size_t off = fi_place(d + 1, to, nto);
	const uint8_t *body = d + 5;
	const char *base = fi_src->map;
	uint8_t v[16];
	size_t n = 8, used;
	left -= 5;
	if ((op & 3) == 0) {                   /* bytes */
		if (!left)
			return 0;
		n = body[0] % 16 + 1;
		used = 1 + n;
		if (left < used)
			return 0;
		memcpy(v, body + 1, n);
	} else if ((op & 3) == 1) {            /* a pointer to another read place */
		if (left < 4)
			return 0;
		uint64_t p = pob + fi_phys(fi_place(body, to, nto));
		memcpy(v, &p, 8);
		used = 4;
	} else if ((op & 3) == 2) {            /* nudge a word */
		if (left < 1)
			return 0;
		off &= ~7ul;
		uint64_t x = 0;
		memcpy(&x, base + off, off + 8 <= fi_src->map_len ? 8 : fi_src->map_len - off);
		x += (uint64_t)(int64_t)(int8_t)body[0] * 8;
		memcpy(v, &x, 8);
		used = 1;
	} else {                               /* a wild value */
		if (left < 8)
			return 0;
		uint64_t x;
		memcpy(&x, body, 8);
		if (op & 4)
			x |= 0xffff800000000000ull;
		memcpy(v, &x, 8);
		used = 8;
	}
	fi_put(off, v, n, u);
	return 5 + used;
}

#endif
