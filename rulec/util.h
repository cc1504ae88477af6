/* util.h - arena allocator, growable string buffer, small helpers.
 *
 * Ownership: an Arena owns every block it hands out; arena_free() releases
 * them all at once.  A StrBuf owns its buffer until sb_free() or sb_take().
 */
#ifndef SENTINEL_UTIL_H
#define SENTINEL_UTIL_H

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
	ArenaBlock *head;
	size_t used;      /* bytes handed out, for limits and statistics */
} Arena;

/* Out of memory in the front end.  The allocations it cannot go on without
 * (arenas, string buffers, the rule and diagnostic arrays) are made by the
 * u_x* helpers, which call u_oom() when malloc fails: that abort()s, unless
 * the calling thread set a catch (u_oom_catch, comp_dir: a reload's compile
 * in sentineld fails, the daemon and its running rules stay), where it
 * longjmps back; what the abandoned work had allocated leaks. */
_Noreturn void u_oom(void);
/* Make u_oom() on this thread jump to *jb (NULL: abort again); returns the
 * catch set before, to put back. */
jmp_buf *u_oom_catch(jmp_buf *jb);
/* CLOCK_MONOTONIC in nanoseconds: the one clock of the daemon, the
 * engines and the notifiers (ticks, deadlines, timings). */
uint64_t u_now_ns(void);
/* Test hook: the nth u_x* allocation from now on this thread fails (0: none). */
void u_oom_after(long n);
void *u_xmalloc(size_t n);
void *u_xcalloc(size_t n, size_t size);
/* The same, NULL instead of u_oom(): for a caller that must let go of what
 * it holds first (counted by the test hook too). */
void *u_tcalloc(size_t n, size_t size);
void *u_trealloc(void *p, size_t n);
void *u_xrealloc(void *p, size_t n);
char *u_xstrdup(const char *s);

void *arena_alloc(Arena *a, size_t n);          /* zeroed, 16-byte aligned; u_oom() when out of memory */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(Arena *a);

typedef struct StrBuf {
	char *s;
	size_t len, cap;
} StrBuf;

void sb_putn(StrBuf *b, const char *s, size_t n);
void sb_puts(StrBuf *b, const char *s);
void sb_putc(StrBuf *b, char c);
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
void sb_free(StrBuf *b);
/* A string built by fn into a fresh StrBuf, with out of memory (u_oom, in
 * fn or in the buffer) caught here: NULL then, never an abort.  For what
 * sentineld's main loop renders (/metrics, alert templates): a request
 * that fails, the daemon goes on.  fn may allocate nothing but into b
 * (the catch unwinds past it).  *len (may be NULL): the string's length. */
char *sb_build(void (*fn)(StrBuf *b, const void *ctx), const void *ctx, size_t *len);

/* Levenshtein distance, capped: returns max+1 when the distance exceeds max. */
int u_edit_distance(const char *a, const char *b, int max);

/* Length of the valid UTF-8 sequence at s (n bytes available): 1-4, or 0
 * when the bytes there are not valid UTF-8 (overlong, surrogate, truncated). */
int u_utf8_len(const unsigned char *s, size_t n);

/* The bytes src[0..len), up to a NUL, as printable text in dst (n bytes,
 * always NUL-terminated, cut short only at a whole character): valid UTF-8
 * that is not a control character as it is, every other byte as \xNN (as
 * the kernel's /dev/kmsg writes them), the control characters in keep ("\n"
 * or "") as they are.  For strings read from kernel memory (a task's comm,
 * a device's name), which may hold any byte.  Returns the length written. */
size_t u_printable(char *dst, size_t n, const char *src, size_t len, const char *keep);
/* A JSON string of s: as it is when it is UTF-8, else as u_printable
 * writes it (jansson takes UTF-8 only); NULL when out of memory. */
json_t *u_json_text(const char *s);

/* Read a whole file; returns 0 or -errno.  -EFBIG when it exceeds limit. */
int u_read_file(const char *path, size_t limit, char **out, size_t *len);
/* A cache directory's bound: of its files ending in suffix, the most
 * recently used max_files and at most max_bytes are kept, the rest
 * removed; other files older than an hour (a crash's temporary ones) too.
 * Returns how many it removed. */
unsigned u_dir_prune(const char *dir, const char *suffix, unsigned max_files, unsigned long long max_bytes);

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
