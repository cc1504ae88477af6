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
	unsigned char *descs, *descs2, *infos, *data;
	size_t descs_cap, descs2_cap, infos_cap, data_cap;
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

/* Where record id's text is in the data ring copy (get_data()), or false
 * for a malformed block.  A data-less block gives len 0. */
static bool kl_text(const unsigned char *data, uint32_t size_bits, uint64_t id, uint64_t begin, uint64_t next,
		    const unsigned char **text, size_t *len)
{
	uint64_t size = 1ull << size_bits, mask = size - 1, off, blk;
	*text = NULL;
	*len = 0;
	if ((begin & 1) && (next & 1)) /* data-less (FAILED_LPOS / NO_LPOS) */
		return true;
	if ((begin >> size_bits) == (next >> size_bits) && begin < next) {
		off = begin & mask;
		blk = next - begin;
	} else if (((begin + size) >> size_bits) == (next >> size_bits)) {
		off = 0; /* a wrapping block keeps its data at the start */
		blk = next & mask;
	} else {
		return false;
	}
	if ((begin | next) & 7 || blk < 8 || off + blk > size || (kl_u64(data + off) & KL_ID_MASK) != id)
		return false;
	*text = data + off + 8;
	*len = blk - 8;
	return true;
}

int kl_read(KlLog *l, uint64_t from, KlFn fn, void *arg, uint64_t *next, char *err, size_t n)
{
	const kx_mem *m = &l->t->mem;
	const KlLayout *L = &l->L;
	KlRing g;
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
	static const char *const what[] = {"descriptors", "record infos", "text ring", "descriptors"};
	const struct { uint64_t va; void *dst; uint64_t n; } step[] = {
		{g.descs, l->descs, dsz}, {g.infos, l->infos, isz}, {g.data, l->data, tsz}, {g.descs, l->descs2, dsz}};
	for (int i = 0; i < 4; i++)
		if ((r = kx_read(m, step[i].va, step[i].dst, step[i].n)))
			return ks_fail(err, n, r, "cannot read the printk ring's %s at 0x%llx: %s", what[i],
				       (unsigned long long)step[i].va, strerror(-r));

	uint64_t mask = count - 1, seen = from;
	int nrec = 0;
	uint64_t id = g.tail_id & KL_ID_MASK, head = g.head_id & KL_ID_MASK;
	for (uint64_t k = 0; k <= count; k++, id = (id + 1) & KL_ID_MASK) {
		uint64_t idx = id & mask;
		const unsigned char *d = l->descs + idx * L->desc_size, *info = l->infos + idx * L->info_size;
		uint64_t sv = kl_u64(d + L->state_var);
		unsigned st = (unsigned)(sv >> KL_SV_SHIFT);
		bool last = id == head;
		if (sv != kl_u64(l->descs2 + idx * L->desc_size + L->state_var) || (sv & KL_ID_MASK) != id ||
		    (st != KL_DESC_COMMITTED && st != KL_DESC_FINALIZED))
			goto next_id; /* being written, recycled, or reserved */
		KlRecord rec = {0};
		rec.seq = kl_u64(info + L->seq);
		if (rec.seq < from)
			goto next_id;
		const unsigned char *text;
		size_t blen;
		uint16_t tl;
		memcpy(&tl, info + L->text_len, 2);
		if (!kl_text(l->data, g.size_bits, id, kl_u64(d + L->lpos), kl_u64(d + L->lpos + 8), &text, &blen) ||
		    (blen < tl && !(blen == 0 && tl == 0)))
			goto next_id;
		rec.text = (const char *)text;
		rec.text_len = tl;
		rec.syslog_max = l->syslog_max;
		rec.ts_ns = kl_u64(info + L->ts_nsec);
		memcpy(&rec.caller_id, info + L->caller_id, 4);
		rec.facility = info[L->facility];
		rec.level = (uint8_t)kl_bitfield(info, L->level_bit, L->level_bits);
		rec.flags = (uint8_t)kl_bitfield(info, L->flags_bit, L->flags_bits);
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

char *kl_tail(KlLog *l, unsigned nlines, char *err, size_t n)
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
	return buf;
}
