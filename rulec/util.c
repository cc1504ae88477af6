/* util.c - arena allocator, string buffers and small helpers. */
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ArenaBlock {
	ArenaBlock *next;
	size_t cap, off;
	_Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK 65536

static _Thread_local jmp_buf *u_trap;        /* u_oom_catch */
static _Thread_local long u_fail_in;          /* u_oom_after */

_Noreturn void u_oom(void)
{
	jmp_buf *t = u_trap;
	if (t) {
		u_trap = NULL;                /* once: a second u_oom() while unwinding aborts */
		longjmp(*t, 1);
	}
	fputs("sentinel: out of memory\n", stderr);
	abort();
}

jmp_buf *u_oom_catch(jmp_buf *jb)
{
	jmp_buf *prev = u_trap;
	u_trap = jb;
	return prev;
}

/* b lives in the caller of setjmp's frame (sb_build's): reached after a
 * longjmp only through this pointer, never as a clobbered local */
static void sb_build_run(StrBuf *b, void (*fn)(StrBuf *b, const void *ctx), const void *ctx, jmp_buf *jb,
			 jmp_buf **prev)
{
	*prev = u_oom_catch(jb);
	sb_puts(b, "");
	fn(b, ctx);
}

char *sb_build(void (*fn)(StrBuf *b, const void *ctx), const void *ctx, size_t *len)
{
	StrBuf b = {0};
	jmp_buf jb, *prev = NULL;
	if (setjmp(jb)) {                 /* out of memory: sb_grow freed the buffer */
		u_oom_catch(prev);
		if (len)
			*len = 0;
		return NULL;
	}
	sb_build_run(&b, fn, ctx, &jb, &prev);
	u_oom_catch(prev);
	if (len)
		*len = b.len;
	return b.s;
}

void u_oom_after(long n) { u_fail_in = n; }

/* the test hook's count: this allocation fails when it reaches zero */
static bool u_injected(void)
{
	return u_fail_in > 0 && --u_fail_in == 0;
}

void *u_xmalloc(size_t n)
{
	void *p = u_injected() ? NULL : malloc(n ? n : 1);
	if (!p)
		u_oom();
	return p;
}

void *u_tcalloc(size_t n, size_t size)
{
	return u_injected() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *u_xcalloc(size_t n, size_t size)
{
	void *p = u_tcalloc(n, size);
	if (!p)
		u_oom();
	return p;
}

void *u_trealloc(void *p, size_t n)
{
	return u_injected() ? NULL : realloc(p, n ? n : 1);
}

void *u_xrealloc(void *p, size_t n)
{
	void *q = u_trealloc(p, n);
	if (!q)
		u_oom();
	return q;
}

char *u_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(u_xmalloc(n), s, n);
}

void *arena_alloc(Arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	ArenaBlock *b = a->head;
	if (b)
		b->off = (b->off + 15) & ~(size_t)15;
	if (b && b->off > b->cap)
		b->off = b->cap;
	if (!b || b->cap - b->off < n) {
		size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
		b = u_xmalloc(sizeof *b + cap);
		b->cap = cap;
		b->off = 0;
		if (cap == n && a->head) {	/* big block: keep the current one open */
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	void *p = b->data + b->off;
	b->off += n;
	a->used += n;
	memset(p, 0, n);
	return p;
}

/* Strings need no alignment: take bytes from the current block directly. */
char *arena_strndup(Arena *a, const char *s, size_t n)
{
	ArenaBlock *b = a->head;
	char *p;
	if (b && b->cap - b->off >= n + 1) {
		p = (char *)b->data + b->off;
		b->off += n + 1;
		a->used += n + 1;
	} else {
		p = arena_alloc(a, n + 1);
	}
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *arena_strdup(Arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	StrBuf b = {0};
	sb_vprintf(&b, fmt, ap);
	va_end(ap);
	char *p = arena_strndup(a, b.s ? b.s : "", b.len);
	sb_free(&b);
	return p;
}

void arena_free(Arena *a)
{
	ArenaBlock *b = a->head;
	while (b) {
		ArenaBlock *n = b->next;
		free(b);
		b = n;
	}
	a->head = NULL;
	a->used = 0;
}

static void sb_grow(StrBuf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap * 2 : 256;
	while (cap < b->len + extra + 1)
		cap *= 2;
	char *s = u_trealloc(b->s, cap);
	if (!s) {                         /* the buffer goes: a local StrBuf's owner unwinds (u_oom) */
		free(b->s);
		*b = (StrBuf){0};
		u_oom();
	}
	b->s = s;
	b->cap = cap;
}

void sb_putn(StrBuf *b, const char *s, size_t n)
{
	sb_grow(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

void sb_puts(StrBuf *b, const char *s) { sb_putn(b, s, strlen(s)); }
void sb_putc(StrBuf *b, char c) { sb_putn(b, &c, 1); }

void sb_vprintf(StrBuf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return;
	sb_grow(b, (size_t)n);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void sb_printf(StrBuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

void sb_free(StrBuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

int u_edit_distance(const char *a, const char *b, int max)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return max + 1;
	if ((la > lb ? la - lb : lb - la) > (size_t)max)
		return max + 1;
	int row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0], best;
		row[0] = (int)i;
		best = row[0];
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int cost = a[i - 1] == b[j - 1] ? 0 : 1;
			int v = diag + cost;
			if (up + 1 < v) v = up + 1;
			if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
			row[j] = v;
			diag = up;
			if (v < best) best = v;
		}
		if (best > max)
			return max + 1;
	}
	return row[lb] > max ? max + 1 : row[lb];
}

int u_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], need;
	if (c < 0x80) return 1;
	if (c >= 0xc2 && c <= 0xdf) need = 1;
	else if (c >= 0xe0 && c <= 0xef) need = 2;
	else if (c >= 0xf0 && c <= 0xf4) need = 3;
	else return 0;
	if (n <= need)
		return 0;
	for (unsigned k = 1; k <= need; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
		return 0;
	return (int)need + 1;
}

size_t u_printable(char *dst, size_t n, const char *src, size_t len, const char *keep)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, end = strnlen(src, len);
	if (!n)
		return 0;
	for (size_t i = 0; i < end;) {
		char esc[5];
		const char *p = (const char *)s + i;
		int l = u_utf8_len(s + i, end - i);
		if (l == 1 && (s[i] < 0x20 || s[i] == 0x7f) && !strchr(keep, s[i]))
			l = 0;
		if (l == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0)   /* C1 controls */
			l = 0;
		if (!l) {
			snprintf(esc, sizeof esc, "\\x%02x", s[i]);
			p = esc;
		}
		size_t k = l ? (size_t)l : 4;
		if (o + k >= n)
			break;
		memcpy(dst + o, p, k);
		o += k;
		i += l ? (size_t)l : 1;
	}
	dst[o] = 0;
	return o;
}

json_t *u_json_text(const char *s)
{
	json_t *j = json_string(s ? s : "");
	if (j || !s)
		return j;
	size_t len = strlen(s), n = 4 * len + 1;
	char *t = malloc(n);
	if (!t)
		return NULL;
	u_printable(t, n, s, len, "\n\t\r");
	j = json_string(t);
	free(t);
	return j;
}

int u_read_file(const char *path, size_t limit, char **out, size_t *len)
{
	int err = 0;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	FILE *f = fopen(path, "rbe");
	if (!f)
		return -errno;
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, cap + 1);
			if (!nb) { err = -ENOMEM; goto out; }
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n > limit) { err = -EFBIG; goto out; }
		if (r == 0) {
			if (ferror(f)) err = -EIO;
			break;
		}
	}
out:
	fclose(f);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

typedef struct UFile {
	char name[128];
	struct timespec mtime;
	off_t size;
} UFile;

static int u_newest_first(const void *a, const void *b)
{
	const UFile *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec > y->mtime.tv_sec ? -1 : 1;
	return x->mtime.tv_nsec > y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec < y->mtime.tv_nsec;
}

unsigned u_dir_prune(const char *dir, const char *suffix, unsigned max_files, unsigned long long max_bytes)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	UFile f[256];
	size_t nf = 0, sl = strlen(suffix);
	unsigned gone = 0;
	for (struct dirent *e; (e = readdir(d)) && nf < sizeof f / sizeof *f;) {
		struct stat st;
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len >= sizeof f->name || fstatat(dirfd(d), e->d_name, &st, 0) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (len < sl || strcmp(e->d_name + len - sl, suffix)) {
			if (time(NULL) - st.st_mtime > 3600 && !unlinkat(dirfd(d), e->d_name, 0))
				gone++;
			continue;
		}
		memcpy(f[nf].name, e->d_name, len + 1);
		f[nf].mtime = st.st_mtim;
		f[nf++].size = st.st_size;
	}
	qsort(f, nf, sizeof *f, u_newest_first);
	unsigned long long bytes = 0;
	for (size_t i = 0; i < nf; i++) {
		bytes += (unsigned long long)f[i].size;
		if ((i >= max_files || bytes > max_bytes) && !unlinkat(dirfd(d), f[i].name, 0))
			gone++;
	}
	closedir(d);
	return gone;
}

uint64_t u_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
