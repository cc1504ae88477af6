/* diag.c - the one place diagnostics are recorded and formatted. */
#include "diag.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	DiagSeverity sev;
	const char *desc;
} diag_info[] = {
#define X(id, name, sev, desc) {name, sev, desc},
#include "diag.def"
#undef X
};

const char *diag_name(DiagCode c) { return diag_info[c].name; }
const char *diag_description(DiagCode c) { return diag_info[c].desc; }
DiagSeverity diag_default_severity(DiagCode c) { return diag_info[c].sev; }

SrcFile *src_new(const char *name, char *text, size_t len)
{
	char *nm = u_xstrdup(name);
	SrcFile *f = u_tcalloc(1, sizeof *f);
	if (!f) {
		free(nm);
		u_oom();                /* text is still the caller's */
	}
	f->name = nm;
	f->text = text;
	f->len = len;
	return f;
}

void src_free(SrcFile *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->text);
	free(f->line_start);
	free(f);
}

static void src_index_lines(const SrcFile *cf)
{
	SrcFile *f = (SrcFile *)cf;	/* the line table is a cache */
	if (f->line_start)
		return;
	size_t n = 1;
	for (size_t i = 0; i < f->len; i++)
		n += f->text[i] == '\n';
	f->line_start = u_xmalloc(n * sizeof *f->line_start);
	f->line_start[0] = 0;
	size_t k = 1;
	for (size_t i = 0; i < f->len; i++)
		if (f->text[i] == '\n')
			f->line_start[k++] = i + 1;
	f->nlines = n;
}

static int utf8_is_cont(unsigned char c) { return (c & 0xc0) == 0x80; }

SrcLoc src_loc_at(const SrcFile *f, size_t off, unsigned len)
{
	src_index_lines(f);
	if (off > f->len)
		off = f->len;
	size_t lo = 0, hi = f->nlines;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (f->line_start[mid] <= off) lo = mid; else hi = mid;
	}
	unsigned col = 1, chars = 0;
	for (size_t i = f->line_start[lo]; i < off; i++)
		col += !utf8_is_cont((unsigned char)f->text[i]);
	for (size_t i = off; i < off + len && i < f->len && f->text[i] != '\n'; i++)
		chars += !utf8_is_cont((unsigned char)f->text[i]);
	return (SrcLoc){f, (unsigned)lo + 1, col, chars ? chars : 1};
}

size_t src_offset(const SrcFile *f, unsigned line, unsigned col)
{
	src_index_lines(f);
	if (line == 0)
		return 0;
	if (line > f->nlines)
		return f->len;
	size_t i = f->line_start[line - 1];
	for (unsigned c = 1; c < col && i < f->len && f->text[i] != '\n';) {
		i++;
		while (i < f->len && utf8_is_cont((unsigned char)f->text[i]))
			i++;
		c++;
	}
	return i;
}

/* A new diagnostic holding msg (taken: freed too when there is no room,
 * before u_oom, so a caller's message never leaks). */
static Diag *diag_push(DiagCtx *d, char *msg)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		Diag *v = u_trealloc(d->v, cap * sizeof *v);
		if (!v) {
			free(msg);
			u_oom();
		}
		d->v = v;
		d->cap = cap;
	}
	Diag *g = &d->v[d->n];
	memset(g, 0, sizeof *g);
	g->seq = d->n++;
	g->msg = msg;
	return g;
}

static char *vfmt(const char *fmt, va_list ap)
{
	StrBuf b = {0};
	sb_vprintf(&b, fmt, ap);
	return b.s ? b.s : u_xstrdup("");
}

void diag_report_msg(DiagCtx *d, SrcLoc loc, DiagCode code, char *msg)
{
	DiagSeverity sev = diag_info[code].sev;
	if (d->truncated) {
		free(msg);
		return;
	}
	if (d->max_errors && sev == SEV_ERROR && d->nerr >= d->max_errors) {
		free(msg);
		Diag *g = diag_push(d, u_xstrdup("too many errors; stopping (raise --max-errors to see more)"));
		g->loc = loc;
		g->code = DIAG_TOO_MANY_ERRORS;
		g->sev = SEV_ERROR;
		d->truncated = true;
		return;
	}
	Diag *g = diag_push(d, msg ? msg : u_xstrdup(""));
	g->loc = loc;
	g->code = code;
	g->sev = sev;
	if (sev == SEV_ERROR)
		d->nerr++;
	else
		d->nwarn++;
}

void diag_report(DiagCtx *d, SrcLoc loc, DiagCode code, const char *fmt, ...)
{
	if (d->truncated)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = vfmt(fmt, ap);
	va_end(ap);
	diag_report_msg(d, loc, code, msg);
}

void diag_note(DiagCtx *d, SrcLoc loc, const char *fmt, ...)
{
	if (!d->n || d->truncated)
		return;
	Diag *g = &d->v[d->n - 1];
	va_list ap;
	va_start(ap, fmt);
	free(g->note_msg);
	g->note_msg = vfmt(fmt, ap);
	g->note_loc = loc;
	va_end(ap);
}

static int diag_cmp(const void *a, const void *b)
{
	const Diag *x = a, *y = b;
	unsigned fx = x->loc.file ? x->loc.file->index : 0;
	unsigned fy = y->loc.file ? y->loc.file->index : 0;
	if (x->code == DIAG_TOO_MANY_ERRORS || y->code == DIAG_TOO_MANY_ERRORS)
		return (x->code == DIAG_TOO_MANY_ERRORS) - (y->code == DIAG_TOO_MANY_ERRORS);
	if (fx != fy) return fx < fy ? -1 : 1;
	if (x->loc.line != y->loc.line) return x->loc.line < y->loc.line ? -1 : 1;
	if (x->loc.col != y->loc.col) return x->loc.col < y->loc.col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void diag_sort(DiagCtx *d)
{
	if (d->n > 1)
		qsort(d->v, d->n, sizeof *d->v, diag_cmp);
}

static const char *sev_word(DiagSeverity s)
{
	return s == SEV_ERROR ? "error" : s == SEV_WARNING ? "warning" : "note";
}

/* Print the source line of loc with a caret (and ~ for a span) under it.
 * Tabs and control bytes print as one space so the caret stays aligned. */
static void diag_show_line(FILE *out, SrcLoc loc, bool color)
{
	const SrcFile *f = loc.file;
	if (!f || loc.line == 0)
		return;
	src_index_lines(f);
	if (loc.line > f->nlines)
		return;
	size_t i = f->line_start[loc.line - 1], n = 0;
	StrBuf line = {0};
	unsigned chars = 0;
	while (i + n < f->len && f->text[i + n] != '\n' && f->text[i + n] != '\r' && chars < 400) {
		const unsigned char *p = (const unsigned char *)f->text + i + n;
		int l = u_utf8_len(p, f->len - i - n);
		if (l == 0)
			sb_putc(&line, '?');     /* not UTF-8: keep the terminal sane */
		else if (*p < 0x20 || *p == 0x7f)
			sb_putc(&line, ' ');
		else
			sb_putn(&line, (const char *)p, (size_t)l);
		chars++;
		n += l ? (size_t)l : 1;
	}
	fprintf(out, "%5u | %s\n", loc.line, line.s ? line.s : "");
	fputs("      | ", out);
	for (unsigned c = 1; c < loc.col; c++)
		fputc(' ', out);
	if (color) fputs("\033[1;32m", out);
	fputc('^', out);
	for (unsigned c = 1; c < loc.len && c < 200; c++)
		fputc('~', out);
	if (color) fputs("\033[0m", out);
	fputc('\n', out);
	sb_free(&line);
}

static void diag_print_head(FILE *out, SrcLoc loc, DiagSeverity sev, const char *msg,
			    const char *code, bool color)
{
	static const char *sev_color[] = {"\033[1;31m", "\033[1;35m", "\033[1;36m"};
	if (color) fputs("\033[1m", out);
	if (loc.file && loc.line)
		fprintf(out, "%s:%u:%u: ", loc.file->name, loc.line, loc.col);
	else if (loc.file)
		fprintf(out, "%s: ", loc.file->name);
	else
		fputs("rulec: ", out);
	if (color) fprintf(out, "%s", sev_color[sev]);
	fprintf(out, "%s:", sev_word(sev));
	if (color) fputs("\033[0m\033[1m", out);
	fprintf(out, " %s", msg);
	if (code) fprintf(out, " [%s]", code);
	if (color) fputs("\033[0m", out);
	fputc('\n', out);
}

void diag_print_text(const DiagCtx *d, FILE *out, bool color)
{
	for (size_t i = 0; i < d->n; i++) {
		const Diag *g = &d->v[i];
		diag_print_head(out, g->loc, g->sev, g->msg, diag_info[g->code].name, color);
		diag_show_line(out, g->loc, color);
		if (g->note_msg) {
			diag_print_head(out, g->note_loc, SEV_NOTE, g->note_msg, NULL, color);
			diag_show_line(out, g->note_loc, color);
		}
	}
}

/* A location's fields (and a note's message). */
static json_t *diag_json(SrcLoc l, const char *msg)
{
	json_t *o = json_object();
	json_object_set_new(o, "file", u_json_text(l.file ? l.file->name : ""));
	json_object_set_new(o, "line", json_integer(l.line));
	json_object_set_new(o, "column", json_integer(l.col));
	json_object_set_new(o, "length", json_integer(l.len));
	if (msg)
		json_object_set_new(o, "message", u_json_text(msg));
	return o;
}

/* {"diagnostics": [{file, line, column, length, message, severity, code,
 * note: {file, line, column, length, message}}, ...], "errors": N,
 * "warnings": N}, a diagnostic a line. */
void diag_print_json(const DiagCtx *d, FILE *out)
{
	json_t *all = json_array();
	for (size_t i = 0; i < d->n; i++) {
		const Diag *g = &d->v[i];
		json_t *o = diag_json(g->loc, NULL);
		json_object_set_new(o, "severity", json_string(sev_word(g->sev)));
		json_object_set_new(o, "code", json_string(diag_info[g->code].name));
		json_object_set_new(o, "message", u_json_text(g->msg));
		if (g->note_msg)
			json_object_set_new(o, "note", diag_json(g->note_loc, g->note_msg));
		json_array_append_new(all, o);
	}
	fputs("{\"diagnostics\":[", out);
	for (size_t i = 0; i < json_array_size(all); i++) {
		fputs(i ? ",\n" : "\n", out);
		json_dumpf(json_array_get(all, i), out, JSON_PRESERVE_ORDER | JSON_COMPACT);
	}
	fprintf(out, "],\n\"errors\":%u,\"warnings\":%u}\n", d->nerr, d->nwarn);
	json_decref(all);
}

void diag_free(DiagCtx *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].msg);
		free(d->v[i].note_msg);
	}
	free(d->v);
	memset(d, 0, sizeof *d);
}
