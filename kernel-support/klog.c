/* klog.c - the printk ring buffer, read from outside the kernel (klog.h).
 *
 * The format is kernel/printk/printk_ringbuffer.h's; the names below are
 * the kernel's where a reader will want to compare.
 */
#include "klog.h"
#include "kbtf.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* desc state_var: the state in the top two bits, the ID below */
#define KL_SV_SHIFT 62
#define KL_ID_MASK ((1ull << KL_SV_SHIFT) - 1)
#define KL_DESC_COMMITTED 1u
#define KL_DESC_FINALIZED 2u
#define KL_MAX_COUNT_BITS 24   /* 16 M descriptors: far above any log_buf_len */
#define KL_MAX_SIZE_BITS 31    /* 2 GiB of text, the kernel's own limit */
#define KL_STRUCT_MAX 4096u    /* struct prb_desc (24 or 40 bytes) and printk_info (88) at most */

/* Field offsets, from BTF. */
typedef struct KlLayout {
	uint32_t desc_ring, text_ring;                      /* in printk_ringbuffer */
	uint32_t count_bits, descs, infos, head_id, tail_id; /* in prb_desc_ring */
	uint32_t size_bits, data;                            /* in prb_data_ring */
	uint32_t desc_size, state_var, lpos;                 /* prb_desc */
	uint32_t info_size, seq, ts_nsec, text_len, facility, caller_id; /* printk_info */
	uint32_t level_bit, level_bits, flags_bit, flags_bits;
} KlLayout;

struct KlLog {
	const KTarget *t;
	uint32_t syslog_max;  /* bytes one formatted record may take in syslog(2) (kl_print) */
	uint64_t prb_ptr;   /* address of the variable `prb` (a pointer) */
	KlLayout L;
	unsigned char *descs, *descs2, *infos, *data;  /* kl_read's copies of the whole ring */
	size_t descs_cap, descs2_cap, infos_cap, data_cap;
	uint64_t nread;     /* bytes of the ring the last kl_read or kl_tail read (kl_bytes_read) */
};

static int kl_field(const struct btf *b, const char *s, const char *f, uint32_t *off, char *err, size_t n)
{
	if (kb_field_offset(b, s, f, off, NULL))
		return ks_fail(err, n, -ENOENT,
			       "the kernel's BTF has no struct %s.%s: this is not the lockless printk ring buffer "
			       "of Linux 5.10 or later, which is the only log format sentinel reads", s, f);
	return 0;
}

/* A bit field of printk_info (flags:5, level:3): its bit offset and width. */
static int kl_bits(const struct btf *b, const char *f, uint32_t *bit, uint32_t *bits)
{
	int id = kb_composite(b, "printk_info");
	uint32_t mt;
	if (id < 0 || !kb_member(b, (uint32_t)id, f, bit, &mt, bits))
		return -ENOENT;
	if (*bits == 0) { /* not a bit field: a whole byte */
		int64_t s = btf__resolve_size(b, mt);
		*bits = s > 0 && s <= 8 ? (uint32_t)s * 8 : 8;
	}
	return 0;
}

/* A field of w bytes at off lies in a struct of size bytes. */
static bool kl_in(uint32_t off, uint32_t w, uint32_t size)
{
	return (uint64_t)off + w <= size;
}

/* A bit field of 1 to 8 bits (kl_bitfield reads at most 2 bytes) lies in it. */
static bool kl_bits_in(uint32_t bit, uint32_t bits, uint32_t size)
{
	return bits >= 1 && bits <= 8 && kl_in(bit / 8, (bit % 8 + bits + 7) / 8, size);
}

static int kl_layout(const struct btf *b, KlLayout *L, char *err, size_t n)
{
	int r = 0, sz;
	r = r ? r : kl_field(b, "printk_ringbuffer", "desc_ring", &L->desc_ring, err, n);
	r = r ? r : kl_field(b, "printk_ringbuffer", "text_data_ring", &L->text_ring, err, n);
	r = r ? r : kl_field(b, "prb_desc_ring", "count_bits", &L->count_bits, err, n);
	r = r ? r : kl_field(b, "prb_desc_ring", "descs", &L->descs, err, n);
	r = r ? r : kl_field(b, "prb_desc_ring", "infos", &L->infos, err, n);
	r = r ? r : kl_field(b, "prb_desc_ring", "head_id", &L->head_id, err, n);
	r = r ? r : kl_field(b, "prb_desc_ring", "tail_id", &L->tail_id, err, n);
	r = r ? r : kl_field(b, "prb_data_ring", "size_bits", &L->size_bits, err, n);
	r = r ? r : kl_field(b, "prb_data_ring", "data", &L->data, err, n);
	r = r ? r : kl_field(b, "prb_desc", "state_var", &L->state_var, err, n);
	r = r ? r : kl_field(b, "prb_desc", "text_blk_lpos", &L->lpos, err, n);
	r = r ? r : kl_field(b, "printk_info", "seq", &L->seq, err, n);
	r = r ? r : kl_field(b, "printk_info", "ts_nsec", &L->ts_nsec, err, n);
	r = r ? r : kl_field(b, "printk_info", "text_len", &L->text_len, err, n);
	r = r ? r : kl_field(b, "printk_info", "facility", &L->facility, err, n);
	r = r ? r : kl_field(b, "printk_info", "caller_id", &L->caller_id, err, n);
	if (r)
		return r;
	if (kl_bits(b, "level", &L->level_bit, &L->level_bits) || kl_bits(b, "flags", &L->flags_bit, &L->flags_bits))
		return ks_fail(err, n, -ENOENT, "the kernel's BTF has no printk_info.level or .flags");
	if ((sz = kb_composite(b, "prb_desc")) < 0 || (L->desc_size = (uint32_t)btf__resolve_size(b, (uint32_t)sz)) < 24)
		return ks_fail(err, n, -ENOENT, "the kernel's BTF gives no size for struct prb_desc");
	if ((sz = kb_composite(b, "printk_info")) < 0 || (L->info_size = (uint32_t)btf__resolve_size(b, (uint32_t)sz)) < 24)
		return ks_fail(err, n, -ENOENT, "the kernel's BTF gives no size for struct printk_info");
	/* the BTF is the guest's too: every field read must lie inside its struct */
	if (L->desc_size > KL_STRUCT_MAX || L->info_size > KL_STRUCT_MAX || !kl_in(L->state_var, 8, L->desc_size) ||
	    !kl_in(L->lpos, 16, L->desc_size) || !kl_in(L->seq, 8, L->info_size) || !kl_in(L->ts_nsec, 8, L->info_size) ||
	    !kl_in(L->text_len, 2, L->info_size) || !kl_in(L->facility, 1, L->info_size) ||
	    !kl_in(L->caller_id, 4, L->info_size) || !kl_bits_in(L->level_bit, L->level_bits, L->info_size) ||
	    !kl_bits_in(L->flags_bit, L->flags_bits, L->info_size))
		return ks_fail(err, n, -EINVAL, "the kernel's BTF gives the printk ring's structs an impossible layout "
			       "(struct prb_desc %u bytes, printk_info %u)", L->desc_size, L->info_size);
	return 0;
}

int kl_open(const KTarget *t, KlLog **out, char *err, size_t n)
{
	*out = NULL;
	if (!t->btf)
		return ks_fail(err, n, -ENOENT, "reading the kernel log needs the kernel's BTF (--btf FILE)");
	KlLog *l = calloc(1, sizeof *l);
	if (!l)
		return ks_fail(err, n, -ENOMEM, "out of memory");
	l->t = t;
	/* syslog(2) formats each record into a buffer of CONSOLE_LOG_MAX (1024)
	 * up to 6.1, PRINTK_MESSAGE_MAX (2048) from 6.2 (kernel/printk) */
	unsigned maj = 0, min = 0;
	sscanf(t->release, "%u.%u", &maj, &min);
	l->syslog_max = maj > 6 || (maj == 6 && min >= 2) ? 2048 : 1024;
	int r = kl_layout(t->btf, &l->L, err, n);
	if (r)
		goto out;
	/* `prb` is static: kallsyms has it with CONFIG_KALLSYMS_ALL, VMCOREINFO always */
	size_t vl;
	const char *v = kt_info(t, "SYMBOL(prb)", &vl);
	if (v)
		l->prb_ptr = strtoull(v, NULL, 16);
	else if (kt_sym(t, "prb", &l->prb_ptr))
		r = ks_fail(err, n, -ENOENT, "the kernel has no symbol prb (the printk ring buffer), neither in "
			    "VMCOREINFO nor in its symbols");
out:
	if (r)
		kl_close(l);
	else
		*out = l;
	return r;
}

void kl_close(KlLog *l)
{
	if (!l)
		return;
	free(l->descs);
	free(l->descs2);
	free(l->infos);
	free(l->data);
	free(l);
}

static int kl_grow(unsigned char **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	unsigned char *q = realloc(*p, need);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = need;
	return 0;
}

static uint64_t kl_u64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t kl_bitfield(const unsigned char *info, uint32_t bit, uint32_t bits)
{
	uint32_t w = 0;
	memcpy(&w, info + bit / 8, (bit % 8 + bits + 7) / 8);
	return (w >> (bit % 8)) & ((1u << bits) - 1);
}

/* The ring's header: where the arrays are and how big. */
typedef struct KlRing {
	uint32_t count_bits, size_bits;
	uint64_t descs, infos, data, head_id, tail_id;
} KlRing;

static int kl_ring(KlLog *l, KlRing *g, char *err, size_t n)
{
	const kx_mem *m = &l->t->mem;
	const KlLayout *L = &l->L;
	uint64_t rb;
	int r = kx_read64(m, l->prb_ptr, &rb);
	uint64_t dr = rb + L->desc_ring, tr = rb + L->text_ring;
	r = r ? r : kx_read32(m, dr + L->count_bits, &g->count_bits);
	r = r ? r : kx_read64(m, dr + L->descs, &g->descs);
	r = r ? r : kx_read64(m, dr + L->infos, &g->infos);
	r = r ? r : kx_read64(m, dr + L->head_id, &g->head_id);
	r = r ? r : kx_read64(m, dr + L->tail_id, &g->tail_id);
	r = r ? r : kx_read32(m, tr + L->size_bits, &g->size_bits);
	r = r ? r : kx_read64(m, tr + L->data, &g->data);
	if (r)
		return ks_fail(err, n, r, "cannot read the printk ring buffer's header at 0x%llx: %s",
			       (unsigned long long)rb, strerror(-r));
	if (g->count_bits < 1 || g->count_bits > KL_MAX_COUNT_BITS || g->size_bits < 4 ||
	    g->size_bits > KL_MAX_SIZE_BITS)
		return ks_fail(err, n, -EINVAL, "the printk ring buffer's header is corrupt (count_bits %u, size_bits %u)",
			       g->count_bits, g->size_bits);
	return 0;
}

/* Read n bytes of the ring at va (its `what`), counted in l->nread. */
static int kl_get(KlLog *l, const char *what, uint64_t va, void *dst, uint64_t n, char *err, size_t errlen)
{
	int r = kx_read(&l->t->mem, va, dst, n);
	l->nread += n;
	if (r)
		return ks_fail(err, errlen, r, "cannot read the printk ring's %s at 0x%llx: %s", what,
			       (unsigned long long)va, strerror(-r));
	return 0;
}

/* Descriptor state sv holds record id, committed or finalized. */
static bool kl_desc_ok(uint64_t sv, uint64_t id)
{
	unsigned st = (unsigned)(sv >> KL_SV_SHIFT);
	return (sv & KL_ID_MASK) == id && (st == KL_DESC_COMMITTED || st == KL_DESC_FINALIZED);
}

static uint16_t kl_text_len(const KlLayout *L, const unsigned char *info)
{
	uint16_t tl;
	memcpy(&tl, info + L->text_len, 2);
	return tl;
}

/* Where the text of a record (descriptor d, info) is in the data ring
 * (get_data()): *off and *blk, its data block's offset and size (a block
 * is its record's ID, then the text), or size 0 for a data-less block
 * (FAILED_LPOS / NO_LPOS).  False for a malformed block, or one shorter
 * than the text the info says.  The ID in the block is the caller's to
 * check. */
static bool kl_blk(const KlLayout *L, uint32_t size_bits, const unsigned char *d, const unsigned char *info,
		   uint64_t *off, uint64_t *blk)
{
	uint64_t begin = kl_u64(d + L->lpos), next = kl_u64(d + L->lpos + 8), size = 1ull << size_bits,
		 mask = size - 1;
	*off = *blk = 0;
	if ((begin & 1) && (next & 1))
		return kl_text_len(L, info) == 0;
	if ((begin >> size_bits) == (next >> size_bits) && begin < next) {
		*off = begin & mask;
		*blk = next - begin;
	} else if (((begin + size) >> size_bits) == (next >> size_bits)) {
		*blk = next & mask; /* a wrapping block keeps its data at the start */
	} else {
		return false;
	}
	return !((begin | next) & 7) && *blk >= 8 && *off + *blk <= size && *blk - 8 >= kl_text_len(L, info);
}

/* rec from a record's info and its text (NULL for none: a data-less
 * record, as an empty printk gives, whose text becomes "": kl_print hands
 * it to memchr, which must not get NULL). */
static void kl_fill(const KlLog *l, const unsigned char *info, const unsigned char *text, KlRecord *rec)
{
	const KlLayout *L = &l->L;
	*rec = (KlRecord){0};
	rec->seq = kl_u64(info + L->seq);
	rec->text = text ? (const char *)text : "";
	rec->text_len = kl_text_len(L, info);
	rec->syslog_max = l->syslog_max;
	rec->ts_ns = kl_u64(info + L->ts_nsec);
	memcpy(&rec->caller_id, info + L->caller_id, 4);
	rec->facility = info[L->facility];
	rec->level = (uint8_t)kl_bitfield(info, L->level_bit, L->level_bits);
	rec->flags = (uint8_t)kl_bitfield(info, L->flags_bit, L->flags_bits);
}

int kl_read(KlLog *l, uint64_t from, KlFn fn, void *arg, uint64_t *next, char *err, size_t n)
{
	const KlLayout *L = &l->L;
	KlRing g;
	l->nread = 0;
	int r = kl_ring(l, &g, err, n);
	if (r)
		return r;
	uint64_t count = 1ull << g.count_bits, dsz = count * L->desc_size, isz = count * L->info_size,
		 tsz = 1ull << g.size_bits, ram = ms_total(l->t->src);
	/* the rings are in the guest's RAM: a header (or BTF) that makes them
	 * larger is corrupt, or a guest's lever over the host's memory, never
	 * a reason to allocate gigabytes (size_bits 31: 2 GiB a read; found
	 * by tests/fuzz/fuzz_discover.c) */
	if (dsz + isz + tsz > ram)
		return ks_fail(err, n, -EINVAL, "the printk ring buffer's header is corrupt: its rings (count_bits %u, "
			       "size_bits %u: %llu KiB) would not fit in the guest's RAM (%llu KiB)", g.count_bits,
			       g.size_bits, (unsigned long long)((dsz + isz + tsz) >> 10), (unsigned long long)(ram >> 10));
	if (kl_grow(&l->descs, &l->descs_cap, dsz) || kl_grow(&l->descs2, &l->descs2_cap, dsz) ||
	    kl_grow(&l->infos, &l->infos_cap, isz) || kl_grow(&l->data, &l->data_cap, tsz))
		return ks_fail(err, n, -ENOMEM, "out of memory for a %llu KiB log",
			       (unsigned long long)((dsz + isz + tsz) >> 10));
	/* descriptors, then what they describe, then the descriptors again */
	const struct { const char *what; uint64_t va; void *dst; uint64_t n; } step[] = {
		{"descriptors", g.descs, l->descs, dsz}, {"record infos", g.infos, l->infos, isz},
		{"text ring", g.data, l->data, tsz}, {"descriptors", g.descs, l->descs2, dsz}};
	for (int i = 0; i < 4; i++)
		if ((r = kl_get(l, step[i].what, step[i].va, step[i].dst, step[i].n, err, n)))
			return r;

	uint64_t mask = count - 1, seen = from;
	int nrec = 0;
	uint64_t id = g.tail_id & KL_ID_MASK, head = g.head_id & KL_ID_MASK;
	for (uint64_t k = 0; k <= count; k++, id = (id + 1) & KL_ID_MASK) {
		uint64_t idx = id & mask, off, blk;
		const unsigned char *d = l->descs + idx * L->desc_size, *info = l->infos + idx * L->info_size;
		uint64_t sv = kl_u64(d + L->state_var);
		bool last = id == head;
		if (sv != kl_u64(l->descs2 + idx * L->desc_size + L->state_var) || !kl_desc_ok(sv, id))
			goto next_id; /* being written, recycled, or reserved */
		if (kl_u64(info + L->seq) < from || !kl_blk(L, g.size_bits, d, info, &off, &blk) ||
		    (blk && (kl_u64(l->data + off) & KL_ID_MASK) != id))
			goto next_id;
		KlRecord rec;
		kl_fill(l, info, blk ? l->data + off + 8 : NULL, &rec);
		seen = rec.seq + 1;
		nrec++;
		if (fn && fn(&rec, arg))
			break;
	next_id:
		if (last)
			break;
	}
	if (next)
		*next = seen;
	return nrec;
}

uint64_t kl_bytes_read(const KlLog *l)
{
	return l->nread;
}

/* One record as dmesg prints it: a line for each of its lines, each with
 * the time.  syslog(2), which dmesg reads, formats a record into a buffer
 * of syslog_max bytes with the prefix "<PRI>[TIME] " before every line,
 * and drops the lines that do not fit (kernel/printk's record_print_text,
 * followed step by step); dmesg then strips "<PRI>". */
void kl_print(const KlRecord *r, FILE *out)
{
	unsigned long long s = r->ts_ns / 1000000000ull, us = r->ts_ns % 1000000000ull / 1000;
	char prefix[64];
	size_t plen = (size_t)snprintf(prefix, sizeof prefix, "<%u>[%5llu.%06llu] ", (unsigned)(r->facility << 3 | r->level),
				       s, us);
	size_t text_len = r->text_len, B = r->syslog_max, len = 0;
	const char *text = r->text;
	bool truncated = false;
	if (B && text_len > B)
		text_len = B;
	for (;;) {
		const char *nl = memchr(text, '\n', text_len);
		size_t line_len;
		if (nl) {
			line_len = (size_t)(nl - text);
		} else {
			if (truncated)
				break;                  /* the cut line is dropped */
			line_len = text_len;
		}
		if (B && len + plen + text_len + 2 > B) {
			if (len + plen + line_len + 2 > B)
				break;                  /* not even this line fits */
			text_len = B - len - plen - 2;
			truncated = true;
		}
		fprintf(out, "[%5llu.%06llu] %.*s\n", s, us, (int)line_len, text);
		len += plen + line_len + 1;
		if (text_len == line_len)
			break;
		text += line_len + 1;
		text_len -= line_len + 1;
	}
}

void kl_print_kmsg(const KlRecord *r, FILE *out)
{
	fprintf(out, "%u,%llu,%llu,%c;", (unsigned)(r->facility << 3 | r->level), (unsigned long long)r->seq,
		(unsigned long long)(r->ts_ns / 1000), r->flags & 8 ? 'c' : '-');
	for (size_t i = 0; i < r->text_len; i++) {
		unsigned char c = (unsigned char)r->text[i];
		if (c < ' ' || c >= 127 || c == '\\')
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputc('\n', out);
}

static int kl_collect(const KlRecord *r, void *arg)
{
	kl_print(r, arg);
	return 0;
}

/* Where the newest crash report that began in the last KL_CRASH_LINES
 * lines of buf[0, end) starts (the start of its first line), or end. */
#define KL_CRASH_LINES 200u

static size_t kl_crash_start(const char *buf, size_t end)
{
	static const char *const heads[] = {"Kernel panic - not syncing", "Oops: ", "BUG: ", "general protection fault"};
	size_t line = end;
	for (unsigned k = 0; line > 0 && k < KL_CRASH_LINES; k++) {
		size_t start = line - 1;                /* line: one past the newline before it */
		while (start > 0 && buf[start - 1] != '\n')
			start--;
		for (size_t h = 0; h < sizeof heads / sizeof *heads; h++)
			for (size_t at = start, hl = strlen(heads[h]); at + hl <= line; at++)
				if (!memcmp(buf + at, heads[h], hl))
					return start;
		line = start;
	}
	return end;
}

/* The excerpt kl_tail gives of buf[0, len) (whole lines in dmesg format):
 * moved to the front of buf (len + 1 bytes) and NUL-terminated.  It needs
 * the last max(nlines, KL_CRASH_LINES) lines at most: fewer, and buf must
 * be the whole log. */
static void kl_cut(char *buf, size_t len, unsigned nlines)
{
	/* the start of the last nlines lines: after the newline ending the one before */
	size_t i = len;
	for (unsigned k = 0; i > 0; i--)
		if (buf[i - 1] == '\n' && ++k > nlines)
			break;
	/* a crash report that began a little earlier starts the excerpt: its
	 * first line says why, the stack trace after it runs longer than
	 * nlines, and the report may still be being written */
	size_t crash = kl_crash_start(buf, len);
	if (crash < i) {
		size_t e = crash;
		for (unsigned k = 0; e < len && k < nlines; e++)
			if (buf[e] == '\n')
				k++;
		len = e;
		i = crash;
	}
	memmove(buf, buf + i, len - i);
	buf[len - i] = 0;
}

char *kl_tail_whole(KlLog *l, unsigned nlines, char *err, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		ks_fail(err, n, -ENOMEM, "out of memory");
		return NULL;
	}
	int r = kl_read(l, 0, kl_collect, f, NULL, err, n);
	fclose(f);
	if (r < 0) {
		free(buf);
		return NULL;
	}
	kl_cut(buf, len, nlines);
	return buf;
}

/* kl_tail reads back from the newest record until it holds the lines
 * kl_cut needs, max(nlines, KL_CRASH_LINES), or reaches the oldest; and
 * it gives up after KL_TAIL_SKIPS records that gave no line (being
 * written, recycled, malformed, or one line too long for syslog's
 * buffer), keeping what it has.  A kernel has a few records in flight a
 * CPU, and those whose text was recycled are the oldest (the text ring is
 * a FIFO), so every record older than them is recycled too: only a ring
 * written to be walked makes it stop there with less than kl_read's.  A
 * record costs its descriptor, its info, the part of its text kl_print
 * reads (syslog_max bytes at most), then its state: on 6.12 at most
 * (max(nlines, 200) + 1024) * (2 KiB + 128) bytes read, whatever the
 * ring's size; it keeps max(nlines, 200) records' lines. */
#define KL_TAIL_SKIPS 1024u

/* Record id of ring g, read on its own and taken or skipped as kl_read
 * would: its descriptor, its info, the part of its text kl_print reads
 * (into buf: 8 + syslog_max bytes), then its state again.  1 with rec,
 * 0 to skip it, or -errno with a message in err. */
static int kl_one(KlLog *l, const KlRing *g, uint64_t id, unsigned char *buf, KlRecord *rec, char *err, size_t n)
{
	const KlLayout *L = &l->L;
	unsigned char d[KL_STRUCT_MAX], info[KL_STRUCT_MAX];
	uint64_t idx = id & ((1ull << g->count_bits) - 1), dva = g->descs + idx * L->desc_size, off, blk, sv2;
	int r = kl_get(l, "descriptors", dva, d, L->desc_size, err, n);
	if (r || !kl_desc_ok(kl_u64(d + L->state_var), id))
		return r; /* being written, recycled, or reserved */
	if ((r = kl_get(l, "record infos", g->infos + idx * L->info_size, info, L->info_size, err, n)))
		return r;
	if (!kl_blk(L, g->size_bits, d, info, &off, &blk))
		return 0;
	size_t tl = kl_text_len(L, info), keep = l->syslog_max && tl > l->syslog_max ? l->syslog_max : tl;
	if (blk && (r = kl_get(l, "text ring", g->data + off, buf, 8 + keep, err, n)))
		return r;
	if (blk && (kl_u64(buf) & KL_ID_MASK) != id)
		return 0;
	if ((r = kl_get(l, "descriptors", dva + L->state_var, &sv2, 8, err, n)))
		return r;
	if (sv2 != kl_u64(d + L->state_var))
		return 0;
	kl_fill(l, info, blk ? buf + 8 : NULL, rec);
	rec->text_len = keep; /* kl_print reads no further */
	return 1;
}

char *kl_tail(KlLog *l, unsigned nlines, char *err, size_t n)
{
	KlRing g;
	l->nread = 0;
	if (kl_ring(l, &g, err, n))
		return NULL;
	/* the records' lines, newest record first, into fmt; ends[i]: where record i's end */
	char *fmt = NULL, *out = NULL;
	size_t flen = 0, *ends = NULL, nrec = 0, cap = 0;
	unsigned char *buf = malloc(8 + (size_t)(l->syslog_max ? l->syslog_max : UINT16_MAX));
	FILE *f = open_memstream(&fmt, &flen);
	bool oom = !f || !buf;
	int r = 0;
	uint64_t count = 1ull << g.count_bits, id = g.head_id & KL_ID_MASK, tail = g.tail_id & KL_ID_MASK;
	unsigned want = nlines > KL_CRASH_LINES ? nlines : KL_CRASH_LINES, lines = 0, skips = 0;
	for (uint64_t k = 0; !oom && k <= count && lines < want && skips < KL_TAIL_SKIPS; k++) {
		KlRecord rec;
		size_t from = flen, nl = 0;
		if ((r = kl_one(l, &g, id, buf, &rec, err, n)) < 0)
			break;
		if (r) {
			kl_print(&rec, f);
			oom = fflush(f) != 0;
			for (size_t i = from; i < flen; i++)
				nl += fmt[i] == '\n';
		}
		if (nl && nrec == cap) {
			size_t *e = reallocarray(ends, cap = cap ? 2 * cap : 64, sizeof *ends);
			oom = oom || !e;
			ends = e ? e : ends;
		}
		if (oom)
			break;
		if (nl) {
			ends[nrec++] = flen;
			lines += (unsigned)nl;
		} else {
			skips++;
		}
		if (id == tail)
			break;
		id = (id - 1) & KL_ID_MASK;
	}
	if (f && fclose(f))
		oom = true;
	if (r >= 0 && !oom && (out = malloc(flen + 1))) {
		size_t at = 0;
		for (size_t i = nrec; i-- > 0;) { /* oldest first */
			size_t from = i ? ends[i - 1] : 0;
			memcpy(out + at, fmt + from, ends[i] - from);
			at += ends[i] - from;
		}
		kl_cut(out, flen, nlines);
	} else if (r >= 0) {
		ks_fail(err, n, -ENOMEM, "out of memory");
	}
	free(fmt);
	free(ends);
	free(buf);
	return out;
}
