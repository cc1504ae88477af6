/* diag.h - source files, locations and diagnostics.
 *
 * Every diagnostic rulec emits goes through diag_report() into a DiagCtx
 * (SQLite's pParse->nErr style: collect, never stop at the first) and is
 * printed by one formatter, with the source line and a caret (jq locfile).
 *
 * Ownership: a DiagCtx owns its messages; SrcFiles are owned by whoever
 * created them with src_new() and must outlive the DiagCtx that cites them.
 */
#ifndef SENTINEL_DIAG_H
#define SENTINEL_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { SEV_ERROR, SEV_WARNING, SEV_NOTE } DiagSeverity;

typedef enum {
#define X(id, name, sev, desc) DIAG_##id,
#include "diag.def"
#undef X
	DIAG__COUNT
} DiagCode;

typedef struct SrcFile {
	char *name;
	char *text;          /* NUL-terminated; owned */
	size_t len;
	size_t *line_start;  /* byte offset of each line; computed lazily */
	size_t nlines;
	unsigned index;      /* order of the file on the command line */
} SrcFile;

/* A point (and span) in a source file. line and col are 1-based; col counts
 * characters, not bytes.  len is the span in characters (0 or 1: a caret). */
typedef struct SrcLoc {
	const SrcFile *file;
	unsigned line, col, len;
} SrcLoc;

typedef struct Diag {
	SrcLoc loc;
	DiagCode code;
	DiagSeverity sev;
	char *msg;
	SrcLoc note_loc;     /* note_msg != NULL: a second location ("first defined here") */
	char *note_msg;
	size_t seq;          /* report order, to keep sorting stable */
} Diag;

typedef struct DiagCtx {
	Diag *v;
	size_t n, cap;
	unsigned nerr, nwarn;
	unsigned max_errors;   /* 0: unlimited */
	bool werror;           /* warnings count as errors */
	bool truncated;
} DiagCtx;

SrcFile *src_new(const char *name, char *text, size_t len);  /* takes text */
void src_free(SrcFile *f);
/* Location of the len bytes at byte offset off in f (the span is clipped to
 * the line and counted in characters). */
SrcLoc src_loc_at(const SrcFile *f, size_t off, unsigned len);
/* Byte offset of a (line, col) location. */
size_t src_offset(const SrcFile *f, unsigned line, unsigned col);

/* The same with a message already made (malloc'd; taken, whatever happens) */
void diag_report_msg(DiagCtx *d, SrcLoc loc, DiagCode code, char *msg);
void diag_report(DiagCtx *d, SrcLoc loc, DiagCode code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Attach a note with its own location to the diagnostic just reported. */
void diag_note(DiagCtx *d, SrcLoc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void diag_sort(DiagCtx *d);
void diag_print_text(const DiagCtx *d, FILE *out, bool color);
void diag_print_json(const DiagCtx *d, FILE *out);
void diag_free(DiagCtx *d);

const char *diag_name(DiagCode c);
const char *diag_description(DiagCode c);
DiagSeverity diag_default_severity(DiagCode c);

#endif
