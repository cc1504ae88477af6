/* yamlt.h - a YAML document as a tree of nodes that keep their source spans.
 *
 * Built from libyaml's event stream.  Hostile input is bounded: nesting depth,
 * alias expansion (aliases share the anchored node; the expanded size of the
 * document is capped) and file size are checked, and every problem becomes a
 * diagnostic, never a crash.
 *
 * Ownership: all nodes live in the Arena passed to yt_load().
 */
#ifndef SENTINEL_YAMLT_H
#define SENTINEL_YAMLT_H

#include "diag.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum { YT_SCALAR, YT_SEQ, YT_MAP } YtKind;

typedef enum {
	YS_PLAIN, YS_SINGLE, YS_DOUBLE, YS_LITERAL, YS_FOLDED
} YtStyle;

typedef struct YtNode YtNode;
typedef struct YtPair {
	YtNode *key, *value;
} YtPair;

struct YtNode {
	const SrcFile *file;
	uint32_t off, end;   /* byte span in the source (files are at most 64 MiB) */
	uint8_t kind;        /* YtKind */
	uint8_t style;       /* YtStyle, scalars only */
	uint32_t weight;     /* nodes in the expanded subtree, capped by YT_MAX_WEIGHT */
	union {
		struct { char *s; size_t len; } scalar;
		struct { YtNode **v; size_t n; } seq;
		struct { YtPair *v; size_t n; } map;
	} u;
};

#define YT_MAX_DEPTH 64
#define YT_MAX_WEIGHT 4000000u
#define YT_MAX_FILE (64u << 20)

/* Parse f.  Returns the root node, or NULL when the file produced errors
 * (reported to d) or is empty. */
YtNode *yt_load(const SrcFile *f, Arena *a, DiagCtx *d);

/* Where a node starts; a plain scalar's span covers its text. */
SrcLoc yt_loc(const YtNode *n);
/* The map value for key, or NULL. */
YtNode *yt_get(const YtNode *map, const char *key);
bool yt_is_null(const YtNode *n);
const char *yt_kind_name(const YtNode *n);
/* A location inside a scalar: the character at byte offset i of its value. */
SrcLoc yt_scalar_loc(const YtNode *n, size_t i, unsigned len);

#endif
