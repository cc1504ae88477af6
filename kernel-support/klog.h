/* klog.h - the kernel's own log, read from its RAM: the printk ring buffer.
 *
 * The lockless printk_ringbuffer of Linux 5.10 and later: a descriptor
 * ring (state, data block positions), a parallel array of printk_info
 * (sequence number, timestamp, level) and a text data ring.  Offsets come
 * from the target's BTF, so the same code reads 6.1 and 6.12 (whose
 * desc_ring differs).  Older kernels (log_buf of struct printk_log) are not
 * read: kl_open says so.
 *
 * kl_read copies the rings in bulk, then the descriptors again; kl_tail
 * reads only the newest records, each on its own: its descriptor, its
 * info, its text, then its state again.  Either way a record is taken only
 * if its descriptor was committed or finalized, held the same ID and state
 * both times (so its text was not recycled while we read it), and its data
 * block is well formed and holds its ID.  On a live kernel a record being
 * written or overwritten at that moment is skipped, never half-read; a
 * torn or corrupt ring is a read error, not a crash.
 *
 * Ownership: a KlLog borrows its KTarget (which must outlive it) and owns
 * kl_read's copies of the rings (as large as the guest made its ring, up
 * to 2 GiB of text; kl_open and kl_tail allocate none); kl_close() frees
 * them.  Records handed to a callback live until the callback returns.
 */
#ifndef SENTINEL_KLOG_H
#define SENTINEL_KLOG_H

#include "ktarget.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct KlRecord {
	uint64_t seq;        /* the kernel's sequence number (0 = first since boot) */
	uint64_t ts_ns;      /* local_clock() at printk, ns since boot */
	uint32_t caller_id;  /* task ID, or 0x80000000 | CPU */
	uint8_t level;       /* 0 emerg .. 7 debug */
	uint8_t facility;    /* 0 kernel, 1 user (/dev/kmsg writers) */
	uint8_t flags;       /* LOG_NEWLINE 2, LOG_CONT 8 */
	const char *text;    /* text_len bytes, not NUL-terminated */
	size_t text_len;
	uint32_t syslog_max; /* the kernel's buffer for one record in syslog(2)'s output (dmesg), 0: none */
} KlRecord;

typedef struct KlLog KlLog;

/* Find the printk ring buffer of the kernel in t.  0, or -errno with a
 * message (what is missing, what to do) in err. */
int kl_open(const KTarget *t, KlLog **out, char *err, size_t errlen);
void kl_close(KlLog *l);

/* Copy the rings and hand each record with seq >= from to fn, oldest first
 * (fn returns nonzero to stop early).  *next (may be NULL) gets the
 * sequence number after the last record seen, for --follow.  Returns the
 * number of records handed over, or -errno with a message in err. */
typedef int (*KlFn)(const KlRecord *r, void *arg);
int kl_read(KlLog *l, uint64_t from, KlFn fn, void *arg, uint64_t *next, char *err, size_t errlen);

/* Print r as dmesg(1) does ("[    1.234567] text", every line of a
 * multi-line record prefixed) to out. */
void kl_print(const KlRecord *r, FILE *out);
/* Print r as /dev/kmsg gives it: "PRI,SEQ,TS_US,FLAG;text". */
void kl_print_kmsg(const KlRecord *r, FILE *out);

/* The last nlines lines of the log in dmesg format, one malloc'd string
 * (NULL on a read error, message in err); but where a crash report (a
 * panic, an Oops, a BUG, a general protection fault) began within the last
 * 200 lines, nlines lines from its first: its reason comes before a stack
 * trace longer than nlines.
 *
 * sentineld calls it for every critical alert, so it reads what that
 * needs, never the whole ring (whose size is the guest's to choose, up to
 * 2 GiB of text): back from the newest record, each record on its own,
 * until it holds max(nlines, 200) lines (200: the lookback for a crash
 * report's start), reaches the oldest record, or has passed 1024 records
 * that gave no line (being written, recycled, malformed), and of a
 * record's text no more than kl_print prints (syslog(2)'s 2 KiB, 1 KiB
 * before 6.2).  Bytes read: at most (max(nlines, 200) + 1024) * 2.1 KiB
 * on 6.12; 35 KiB for 20 lines of a Debian 6.12 guest, where the whole
 * ring is 576 KiB (kl_read: 672 KiB, the descriptors twice).  Memory:
 * the max(nlines, 200) records' lines it keeps, twice, and one record's
 * text.  The excerpt is kl_tail_whole's, but where the walk stopped at
 * the 1024 records. */
char *kl_tail(KlLog *l, unsigned nlines, char *err, size_t errlen);

/* kl_tail by kl_read: the whole ring copied (as large as the guest says),
 * every record formatted, then cut.  What kl_tail was; for tests, which
 * compare the two. */
char *kl_tail_whole(KlLog *l, unsigned nlines, char *err, size_t errlen);

/* Bytes of the ring (descriptors, infos, text) the last kl_read or kl_tail
 * read from the target, its header aside. */
uint64_t kl_bytes_read(const KlLog *l);

#endif
