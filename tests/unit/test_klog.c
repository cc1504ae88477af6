#define _GNU_SOURCE 1   /* copy_file_range */
/* kl_tail (kernel-support/klog.c), the kernel log sentineld attaches to
 * critical alerts, on a real guest's RAM image (build/fuzz-guest.ram, a
 * Debian 6.12 guest: tests/fuzz/guest_image.py), against kl_tail_whole,
 * what kl_tail was (the whole ring copied, every record formatted, then
 * cut):
 *   - the same excerpt for nlines from 0 to 10000 (past the whole log);
 *   - the bytes it read: for 20 lines a small part of the ring;
 *   - crash reports: in a copy of the image, "BUG: " written over the
 *     start of a record at several distances from the newest (within the
 *     last 20 lines, within the 200 of the lookback, past it): the same
 *     excerpt as kl_tail_whole each time, which starts at the report;
 *   - an empty record (no data block, as an empty printk leaves): the
 *     same excerpt (its text was NULL, which UBSan stops at in memchr);
 *   - a hostile header: size_bits 31 (2 GiB of text, which kl_read
 *     allocates: run under ASAN_OPTIONS=max_allocation_size_mb=1024, that
 *     aborts) and count_bits 24 (16 M descriptors to walk): kl_tail
 *     allocates nothing of that size and reads little.
 *   sh: test_klog IMAGE */
#include "kbtf.h"
#include "klog.h"
#include "ktarget.h"

#include <bpf/btf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(name, cond, ...) do { \
	if (cond) { printf("PASS klog/%s\n", name); } \
	else { failures++; printf("FAIL klog/%s (%s:%d)\n     ", name, __FILE__, __LINE__); \
	       printf(__VA_ARGS__); printf("\n"); } \
} while (0)

static const unsigned NLINES[] = {0, 1, 5, 20, 100, 199, 200, 201, 1000, 10000};
#define NN (sizeof NLINES / sizeof *NLINES)

/* kl_tail and kl_tail_whole agree for every NLINES; *bytes20: what each
 * read for 20 lines.  The first nlines that differ, or -1. */
static long compare(KlLog *l, const unsigned *ns, size_t nn, uint64_t bytes20[2], char *why, size_t whylen)
{
	for (size_t i = 0; i < nn; i++) {
		char e1[256] = "", e2[256] = "";
		char *whole = kl_tail_whole(l, ns[i], e1, sizeof e1);
		uint64_t b0 = kl_bytes_read(l);
		char *tail = kl_tail(l, ns[i], e2, sizeof e2);
		uint64_t b1 = kl_bytes_read(l);
		bool same = whole && tail && !strcmp(whole, tail);
		if (!same)
			snprintf(why, whylen, "nlines %u: kl_tail_whole %s (%s), kl_tail %s (%s)", ns[i],
				 whole ? "gave text" : "failed", e1, tail ? "gave text" : "failed", e2);
		if (same && !whole[0] && ns[i])
			snprintf(why, whylen, "nlines %u: no text at all", ns[i]), same = false;
		if (bytes20 && ns[i] == 20)
			bytes20[0] = b0, bytes20[1] = b1;
		free(whole);
		free(tail);
		if (!same)
			return ns[i];
	}
	return -1;
}

static size_t lines(const char *s)
{
	size_t n = 0;
	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* Where the ring is: enough of klog.c's layout to find a record's text
 * and the header's fields in the image. */
typedef struct Ring {
	uint64_t count_bits_va, size_bits_va, head_id_va, descs, infos, data, head_id;
	uint32_t count_bits, size_bits, desc_size, info_size, lpos, text_len;
} Ring;

static bool ring_find(const KTarget *t, Ring *R)
{
	const kx_mem *m = &t->mem;
	const struct btf *b = t->btf;
	uint64_t prb = 0, rb;
	uint32_t o_dr, o_tr, o_cb, o_descs, o_infos, o_head, o_sb, o_data;
	size_t vl;
	const char *v = kt_info(t, "SYMBOL(prb)", &vl);
	int dsz = kb_composite(b, "prb_desc"), isz = kb_composite(b, "printk_info");
	if (v)
		prb = strtoull(v, NULL, 16);
	else if (kt_sym(t, "prb", &prb))
		return false;
	if (dsz < 0 || isz < 0 || kx_read64(m, prb, &rb) ||
	    kb_field_offset(b, "printk_ringbuffer", "desc_ring", &o_dr, NULL) ||
	    kb_field_offset(b, "printk_ringbuffer", "text_data_ring", &o_tr, NULL) ||
	    kb_field_offset(b, "prb_desc_ring", "count_bits", &o_cb, NULL) ||
	    kb_field_offset(b, "prb_desc_ring", "descs", &o_descs, NULL) ||
	    kb_field_offset(b, "prb_desc_ring", "infos", &o_infos, NULL) ||
	    kb_field_offset(b, "prb_desc_ring", "head_id", &o_head, NULL) ||
	    kb_field_offset(b, "prb_data_ring", "size_bits", &o_sb, NULL) ||
	    kb_field_offset(b, "prb_data_ring", "data", &o_data, NULL) ||
	    kb_field_offset(b, "prb_desc", "text_blk_lpos", &R->lpos, NULL) ||
	    kb_field_offset(b, "printk_info", "text_len", &R->text_len, NULL))
		return false;
	R->desc_size = (uint32_t)btf__resolve_size(b, (uint32_t)dsz);
	R->info_size = (uint32_t)btf__resolve_size(b, (uint32_t)isz);
	R->count_bits_va = rb + o_dr + o_cb;
	R->size_bits_va = rb + o_tr + o_sb;
	R->head_id_va = rb + o_dr + o_head;
	return !kx_read32(m, R->count_bits_va, &R->count_bits) && !kx_read64(m, rb + o_dr + o_descs, &R->descs) &&
	       !kx_read64(m, rb + o_dr + o_infos, &R->infos) && !kx_read64(m, R->head_id_va, &R->head_id) &&
	       !kx_read32(m, R->size_bits_va, &R->size_bits) && !kx_read64(m, rb + o_tr + o_data, &R->data) &&
	       R->count_bits && R->count_bits < 32 && R->size_bits && R->size_bits < 32;
}

/* The physical address of the text of the record `back` before the newest,
 * if it has min bytes of text in one block, or 0. */
static uint64_t record_text(const KTarget *t, const Ring *R, uint64_t back, uint16_t min)
{
	const kx_mem *m = &t->mem;
	uint64_t id = (R->head_id - back) & ((1ull << 62) - 1), idx = id & ((1ull << R->count_bits) - 1), lpos[2],
		 pa, pa_end;
	uint16_t tl = 0;
	if (kx_read(m, R->descs + idx * R->desc_size + R->lpos, lpos, sizeof lpos) ||
	    kx_read(m, R->infos + idx * R->info_size + R->text_len, &tl, sizeof tl) || tl < min ||
	    (lpos[0] >> R->size_bits) != (lpos[1] >> R->size_bits) || lpos[0] + 8 + min > lpos[1])
		return 0;
	uint64_t va = R->data + (lpos[0] & ((1ull << R->size_bits) - 1)) + 8;
	if (kx_translate(m, va, &pa) || kx_translate(m, va + min - 1, &pa_end) || pa_end != pa + min - 1)
		return 0;
	return pa;
}

/* Write n bytes at pa of the image fd (the old ones into old, if not NULL). */
static bool poke(int fd, uint64_t pa, const void *p, size_t n, void *old)
{
	return (!old || pread(fd, old, n, (off_t)pa) == (ssize_t)n) && pwrite(fd, p, n, (off_t)pa) == (ssize_t)n;
}

/* The same at virtual address va of I's kernel. */
static bool poke_va(const KTarget *t, int fd, uint64_t va, const void *p, size_t n, void *old)
{
	uint64_t pa, pa_end;
	return !kx_translate(&t->mem, va, &pa) && !kx_translate(&t->mem, va + n - 1, &pa_end) &&
	       pa_end == pa + n - 1 && poke(fd, pa, p, n, old);
}

static bool copy_image(const char *from, const char *to_fd_path, int to)
{
	int in = open(from, O_RDONLY);
	struct stat st;
	bool ok = in >= 0 && to >= 0 && !fstat(in, &st);
	for (off_t off = 0; ok && off < st.st_size;) {
		ssize_t c = copy_file_range(in, NULL, to, NULL, (size_t)(st.st_size - off), 0);
		ok = c > 0;
		off += c;
	}
	if (in >= 0)
		close(in);
	if (!ok)
		fprintf(stderr, "cannot copy %s to %s\n", from, to_fd_path);
	return ok;
}

typedef struct Img {
	MemSource *src;
	KTarget *t;
	KlLog *l;
	char err[512];
} Img;

static bool img_open(Img *I, const char *path)
{
	char spec[4200];
	snprintf(spec, sizeof spec, "ramfile:%s", path);
	return !ms_open(spec, &I->src, I->err, sizeof I->err) && !kt_open(I->src, NULL, &I->t, I->err, sizeof I->err) &&
	       !kl_open(I->t, &I->l, I->err, sizeof I->err);
}

static void img_close(Img *I)
{
	kl_close(I->l);
	kt_close(I->t);
	ms_close(I->src);
}

/* In the copy (fd, open as I): crash reports at several distances, then a
 * hostile header. */
static void hostile(Img *I, int fd, const Ring *R)
{
	static const unsigned crash_n[] = {1, 5, 20, 100};
	static const uint64_t back[] = {2, 12, 40, 150, 195, 205, 230, 400};
	char why[512] = "", first[512] = "";
	int tried = 0, agree = 0;
	for (size_t i = 0; i < sizeof back / sizeof *back; i++) {
		char old[5];
		uint64_t pa = record_text(I->t, R, back[i], 5);
		if (!pa || !poke(fd, pa, "BUG: ", 5, old))
			continue;
		tried++;
		long bad = compare(I->l, crash_n, sizeof crash_n / sizeof *crash_n, NULL, why, sizeof why);
		agree += bad < 0;
		if (bad >= 0)
			printf("     %llu records back: %s\n", (unsigned long long)back[i], why);
		if (back[i] == 40) {
			char e[256];
			char *s = kl_tail(I->l, 20, e, sizeof e);
			snprintf(first, sizeof first, "%.*s", s ? (int)strcspn(s, "\n") : 0, s ? s : "");
			free(s);
		}
		poke(fd, pa, old, 5, NULL);
	}
	CHECK("a crash report 2 to 400 records back: the same excerpt as the whole ring's", tried >= 6 && agree == tried,
	      "%d of %d placements agree (%s)", agree, tried, why);
	printf("klog: a crash report placed at %d distances, one at a time\n", tried);
	CHECK("a crash report 40 records back: the excerpt of 20 lines starts at it", strstr(first, "] BUG: "),
	      "first line: '%s'", first);

	/* an empty record, 5 back: data-less (no block: NO_LPOS), as an empty
	 * printk leaves; its text was NULL, which UBSan stops at in memchr */
	uint64_t idx = (R->head_id - 5) & ((1ull << R->count_bits) - 1), nolpos[2] = {3, 3}, oldlpos[2];
	uint64_t lpos_va = R->descs + idx * R->desc_size + R->lpos, tl_va = R->infos + idx * R->info_size + R->text_len;
	uint16_t zero = 0, oldtl;
	if (poke_va(I->t, fd, lpos_va, nolpos, sizeof nolpos, oldlpos) && poke_va(I->t, fd, tl_va, &zero, 2, &oldtl)) {
		long bad = compare(I->l, crash_n, sizeof crash_n / sizeof *crash_n, NULL, why, sizeof why);
		CHECK("an empty record (data-less): the same excerpt as the whole ring's", bad < 0, "%s", why);
		poke_va(I->t, fd, lpos_va, oldlpos, sizeof oldlpos, NULL);
		poke_va(I->t, fd, tl_va, &oldtl, 2, NULL);
	} else {
		CHECK("an empty record (data-less): the same excerpt as the whole ring's", 0, "cannot rewrite record");
	}

	/* a header that asks for 2 GiB of text, one of 16 M descriptors, and
	 * a newest record that no descriptor holds (every one is skipped) */
	const struct { const char *name; uint64_t va, v; unsigned size; } hdr[] = {
		{"a ring header of 2 GiB of text (size_bits 31): no 2 GiB allocation, little read", R->size_bits_va, 31, 4},
		{"a ring header of 16 M descriptors (count_bits 24): no long walk, little read", R->count_bits_va, 24, 4},
		{"a head_id that no descriptor holds: given up after 1024 records, little read", R->head_id_va,
		 R->head_id + (1ull << 40), 8}};
	for (size_t i = 0; i < sizeof hdr / sizeof *hdr; i++) {
		uint64_t old;
		char e[256] = "";
		if (!poke_va(I->t, fd, hdr[i].va, &hdr[i].v, hdr[i].size, &old)) {
			CHECK(hdr[i].name, 0, "cannot rewrite the header");
			continue;
		}
		char *s = kl_tail(I->l, 20, e, sizeof e);
		uint64_t b = kl_bytes_read(I->l);
		CHECK(hdr[i].name, (s || e[0]) && b < (1u << 20) && (i < 2 || b <= 1024ull * R->desc_size),
		      "%s; %llu bytes read", s ? "text" : e,
		      (unsigned long long)b);
		printf("     %s: %llu bytes read, %s\n", hdr[i].name, (unsigned long long)b, s ? "text" : e);
		free(s);
		poke_va(I->t, fd, hdr[i].va, &old, hdr[i].size, NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_klog IMAGE (a guest's raw RAM: tests/fuzz/guest_image.py)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* the lines before a sanitizer's abort */
	Img I = {0};
	bool ok = img_open(&I, argv[1]);
	CHECK("the image's kernel log opens", ok, "%s", I.err);
	if (!ok)
		return 1;
	char why[512] = "", e[256] = "";
	uint64_t b20[2] = {0, 0};
	long bad = compare(I.l, NLINES, NN, b20, why, sizeof why);
	CHECK("kl_tail gives kl_tail_whole's excerpt for nlines 0 to 10000", bad < 0, "%s", why);
	char *t20 = kl_tail(I.l, 20, e, sizeof e), *all = kl_tail(I.l, 100000, e, sizeof e);
	CHECK("20 lines are 20 lines", t20 && lines(t20) == 20, "%zu lines (%s)", lines(t20), t20 ? "" : e);
	CHECK("for 20 lines kl_tail reads less than a tenth of the ring", b20[1] && b20[1] * 10 < b20[0],
	      "%llu bytes of %llu", (unsigned long long)b20[1], (unsigned long long)b20[0]);
	printf("klog: Linux %s, %zu lines in the ring; for 20 lines kl_tail_whole read %llu bytes (the ring, "
	       "descriptors twice), kl_tail %llu\n", I.t->release, lines(all), (unsigned long long)b20[0],
	       (unsigned long long)b20[1]);
	free(t20);
	free(all);
	Ring R;
	bool found = ring_find(I.t, &R);
	CHECK("the ring found in the image", found, "no prb");
	img_close(&I);

	char copy[] = "/tmp/sentinel-klog.XXXXXX";
	int fd = mkstemp(copy);
	Img C = {0};
	if (found && copy_image(argv[1], copy, fd) && img_open(&C, copy))
		hostile(&C, fd, &R);
	else
		CHECK("the image copied", 0, "%s", C.err);
	if (C.src)
		img_close(&C);
	if (fd >= 0)
		close(fd);
	unlink(copy);
	printf("klog: %d failed\n", failures);
	return failures ? 1 : 0;
}
