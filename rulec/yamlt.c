/* yamlt.c - libyaml events -> YtNode tree, with limits. */
#include "yamlt.h"
#include "util.h"

#include <string.h>
#include <yaml.h>

typedef struct Anchor {
	char *name;
	YtNode *node;
	struct Anchor *next;
} Anchor;

/* A collection under construction. */
typedef struct Frame {
	YtNode *node;
	char *anchor;
	void **items;        /* YtNode* for sequences, alternating key/value for maps */
	size_t n, cap;
} Frame;

typedef struct Loader {
	const SrcFile *f;
	Arena *a;
	DiagCtx *d;
	Frame stack[YT_MAX_DEPTH + 1];
	int depth;
	Anchor *anchors;
	YtNode *root;
	bool failed;
	size_t cur_idx, cur_off;   /* libyaml's character index -> byte offset cursor */
	bool ascii;                /* every byte < 0x80: index == byte offset */
} Loader;

static SrcLoc yt_mark_loc(const Loader *L, yaml_mark_t m)
{
	return (SrcLoc){L->f, (unsigned)m.line + 1, (unsigned)m.column + 1, 1};
}

/* libyaml marks count characters; we keep byte offsets.  Marks arrive
 * nearly in order, so a cursor that walks forward costs O(file) in all. */
static size_t yt_mark_off(Loader *L, yaml_mark_t m)
{
	const unsigned char *s = (const unsigned char *)L->f->text;
	size_t n = L->f->len;
	if (L->ascii)
		return m.index < n ? m.index : n;
	if (m.index < L->cur_idx) {
		L->cur_idx = 0;
		L->cur_off = 0;
	}
	while (L->cur_idx < m.index && L->cur_off < n) {
		L->cur_off++;
		while (L->cur_off < n && (s[L->cur_off] & 0xc0) == 0x80)
			L->cur_off++;
		L->cur_idx++;
	}
	return L->cur_off;
}

/* Pre-checks that give clearer messages than libyaml's: encoding and tabs.
 * Returns false when the file must not be parsed further; *ascii tells
 * whether the file is pure ASCII. */
static bool yt_precheck(const SrcFile *f, DiagCtx *d, bool *ascii)
{
	const unsigned char *s = (const unsigned char *)f->text;
	size_t n = f->len;
	*ascii = true;
	for (size_t i = 0; i < n;) {
		if (s[i] && s[i] < 0x80) {
			i++;
			continue;
		}
		if (s[i] == 0) {
			diag_report(d, src_loc_at(f, i, 1), DIAG_YAML_UTF8,
				    "NUL byte in a rule file; is this a binary file?");
			return false;
		}
		int l = u_utf8_len(s + i, n - i);
		*ascii = false;
		if (!l) {
			diag_report(d, src_loc_at(f, i, 1), DIAG_YAML_UTF8,
				    "invalid UTF-8 byte 0x%02x; rule files must be UTF-8 text", s[i]);
			return false;
		}
		i += (size_t)l;
	}
	bool ok = true;
	bool line_start = true;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n') { line_start = true; continue; }
		if (!line_start)
			continue;
		if (s[i] == '\t') {
			diag_report(d, src_loc_at(f, i, 1), DIAG_YAML_TAB,
				    "tab character in indentation; YAML indents with spaces only");
			ok = false;
			line_start = false;
		} else if (s[i] != ' ') {
			line_start = false;
		}
	}
	return ok;
}

static YtNode *yt_new(Loader *L, YtKind k, yaml_mark_t start)
{
	YtNode *n = arena_alloc(L->a, sizeof *n);
	n->kind = (uint8_t)k;
	n->file = L->f;
	n->off = (uint32_t)yt_mark_off(L, start);
	n->weight = 1;
	return n;
}

static void yt_frame_push_item(Frame *fr, void *item)
{
	if (fr->n == fr->cap) {
		fr->cap = fr->cap ? fr->cap * 2 : 8;
		void **v = u_xrealloc(fr->items, fr->cap * sizeof *v);
		fr->items = v;
	}
	fr->items[fr->n++] = item;
}

static void yt_anchor(Loader *L, const char *name, YtNode *n)
{
	if (!name)
		return;
	Anchor *an = arena_alloc(L->a, sizeof *an);
	an->name = arena_strdup(L->a, name);
	an->node = n;
	an->next = L->anchors;
	L->anchors = an;
}

static bool yt_scalar_eq(const YtNode *a, const YtNode *b)
{
	return a->kind == YT_SCALAR && b->kind == YT_SCALAR &&
	       a->u.scalar.len == b->u.scalar.len &&
	       !memcmp(a->u.scalar.s, b->u.scalar.s, a->u.scalar.len);
}

/* Attach a finished node to its parent (or make it the root). */
static void yt_add(Loader *L, YtNode *n)
{
	if (L->depth == 0) {
		L->root = n;
		return;
	}
	Frame *fr = &L->stack[L->depth - 1];
	fr->node->weight += n->weight < YT_MAX_WEIGHT ? n->weight : YT_MAX_WEIGHT;
	if (fr->node->weight > YT_MAX_WEIGHT && !L->failed) {
		diag_report(L->d, yt_loc(n), DIAG_YAML_ALIAS,
			    "document expands to more than %u nodes (an alias bomb?); "
			    "use fewer aliases", YT_MAX_WEIGHT);
		L->failed = true;
	}
	yt_frame_push_item(fr, n);
}

static void yt_finish_collection(Loader *L, yaml_mark_t end)
{
	Frame *fr = &L->stack[L->depth - 1];  /* popped once its items are copied: until then a
						 * load that runs out of memory frees them (yt_run_free) */
	YtNode *n = fr->node;
	n->end = (uint32_t)yt_mark_off(L, end);
	if (n->kind == YT_SEQ) {
		n->u.seq.n = fr->n;
		n->u.seq.v = arena_alloc(L->a, fr->n * sizeof(YtNode *) + 1);
		if (fr->n)
			memcpy(n->u.seq.v, fr->items, fr->n * sizeof(YtNode *));
	} else {
		size_t np = fr->n / 2;
		n->u.map.v = arena_alloc(L->a, np * sizeof(YtPair) + 1);
		n->u.map.n = 0;
		for (size_t i = 0; i < np; i++) {
			YtNode *k = fr->items[2 * i], *v = fr->items[2 * i + 1];
			size_t j;
			for (j = 0; j < n->u.map.n; j++)
				if (yt_scalar_eq(n->u.map.v[j].key, k))
					break;
			if (j < n->u.map.n) {
				const YtNode *first = n->u.map.v[j].key;
				diag_report(L->d, yt_loc(k), DIAG_DUPLICATE_KEY,
					    "duplicate key '%s'; YAML keeps only one of them", k->u.scalar.s);
				diag_note(L->d, yt_loc(first), "'%s' first appears here", first->u.scalar.s);
				continue;
			}
			if (k->kind != YT_SCALAR) {
				diag_report(L->d, yt_loc(k), DIAG_EXPECTED_TYPE,
					    "mapping keys must be plain strings, not %s", yt_kind_name(k));
				continue;
			}
			n->u.map.v[n->u.map.n++] = (YtPair){k, v};
		}
	}
	free(fr->items);
	char *anchor = fr->anchor;
	memset(fr, 0, sizeof *fr);
	L->depth--;
	yt_anchor(L, anchor, n);
	yt_add(L, n);
}

static YtStyle yt_style(yaml_scalar_style_t s)
{
	switch (s) {
	case YAML_SINGLE_QUOTED_SCALAR_STYLE: return YS_SINGLE;
	case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return YS_DOUBLE;
	case YAML_LITERAL_SCALAR_STYLE: return YS_LITERAL;
	case YAML_FOLDED_SCALAR_STYLE: return YS_FOLDED;
	default: return YS_PLAIN;
	}
}

/* One event; returns false to stop. */
static bool yt_event(Loader *L, yaml_event_t *ev, int *docs)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++*docs == 2) {
			diag_report(L->d, yt_mark_loc(L, ev->start_mark), DIAG_YAML_MULTIDOC,
				    "a second YAML document; put all groups in one document "
				    "or split them into separate files");
			return false;
		}
		return true;
	case YAML_SCALAR_EVENT: {
		YtNode *n = yt_new(L, YT_SCALAR, ev->start_mark);
		n->end = (uint32_t)yt_mark_off(L, ev->end_mark);
		n->u.scalar.s = arena_strndup(L->a, (char *)ev->data.scalar.value, ev->data.scalar.length);
		n->u.scalar.len = ev->data.scalar.length;
		n->style = (uint8_t)yt_style(ev->data.scalar.style);
		yt_anchor(L, (char *)ev->data.scalar.anchor, n);
		yt_add(L, n);
		return true;
	}
	case YAML_ALIAS_EVENT: {
		const char *name = (char *)ev->data.alias.anchor;
		for (Anchor *an = L->anchors; an; an = an->next)
			if (!strcmp(an->name, name)) {
				yt_add(L, an->node);
				return !L->failed;
			}
		diag_report(L->d, yt_mark_loc(L, ev->start_mark), DIAG_YAML_ALIAS,
			    "alias '*%s' names no anchor defined before it (an anchor cannot "
			    "be used inside itself)", name);
		L->failed = true;
		return false;
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		if (L->depth >= YT_MAX_DEPTH) {
			diag_report(L->d, yt_mark_loc(L, ev->start_mark), DIAG_YAML_DEPTH,
				    "collections nested more than %d deep; rule files need 6 levels",
				    YT_MAX_DEPTH);
			L->failed = true;
			return false;
		}
		bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
		Frame *fr = &L->stack[L->depth++];
		fr->node = yt_new(L, seq ? YT_SEQ : YT_MAP, ev->start_mark);
		const yaml_char_t *anc = seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor;
		fr->anchor = anc ? arena_strdup(L->a, (const char *)anc) : NULL;
		return true;
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		yt_finish_collection(L, ev->end_mark);
		return !L->failed;
	default:
		return true;
	}
}

/* A load's state, on the heap: yt_load frees it also when the front end
 * runs out of memory part way (u_oom), then passes that on. */
typedef struct YtRun {
	Loader L;
	yaml_parser_t p;
	yaml_event_t ev;
	bool p_live, ev_live;
} YtRun;

static void yt_run_free(YtRun *R)
{
	if (R->ev_live)
		yaml_event_delete(&R->ev);
	if (R->p_live)
		yaml_parser_delete(&R->p);
	while (R->L.depth > 0)
		free(R->L.stack[--R->L.depth].items);
	free(R);
}

static YtNode *yt_run(YtRun *R, const SrcFile *f, DiagCtx *d)
{
	Loader *L = &R->L;
	int docs = 0;
	unsigned nerr = d->nerr;

	if (!yt_precheck(f, d, &L->ascii))
		return NULL;
	if (!yaml_parser_initialize(&R->p)) {
		diag_report(d, (SrcLoc){f, 0, 0, 0}, DIAG_IO, "cannot initialise the YAML parser (out of memory?)");
		return NULL;
	}
	R->p_live = true;
	yaml_parser_set_input_string(&R->p, (const unsigned char *)f->text, f->len);
	yaml_parser_set_encoding(&R->p, YAML_UTF8_ENCODING);
	for (;;) {
		if (!yaml_parser_parse(&R->p, &R->ev)) {
			SrcLoc loc = yt_mark_loc(L, R->p.problem_mark);
			if (R->p.context)
				diag_report(d, loc, DIAG_YAML_SYNTAX, "%s %s (line %zu)", R->p.problem,
					    R->p.context, (size_t)R->p.context_mark.line + 1);
			else
				diag_report(d, loc, DIAG_YAML_SYNTAX, "%s", R->p.problem ? R->p.problem : "YAML error");
			L->failed = true;
			break;
		}
		R->ev_live = true;
		bool go = yt_event(L, &R->ev, &docs);
		bool end = R->ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&R->ev);
		R->ev_live = false;
		if (!go)
			L->failed = true;
		if (!go || end)
			break;
	}
	if (L->failed || d->nerr > nerr)
		return NULL;
	if (!L->root || yt_is_null(L->root)) {
		diag_report(d, (SrcLoc){f, 1, 1, 1}, DIAG_EMPTY_FILE,
			    "the file has no rules; a rule file starts with 'groups:'");
		return NULL;
	}
	return L->root;
}

YtNode *yt_load(const SrcFile *f, Arena *a, DiagCtx *d)
{
	YtRun *R = u_xcalloc(1, sizeof *R);
	R->L = (Loader){.f = f, .a = a, .d = d};   /* libyaml counts a BOM as one character */
	jmp_buf jb;
	jmp_buf *prev = u_oom_catch(&jb);
	if (setjmp(jb)) {
		yt_run_free(R);
		u_oom_catch(prev);
		u_oom();                               /* on to the caller's catch */
	}
	YtNode *root = yt_run(R, f, d);
	u_oom_catch(prev);
	yt_run_free(R);
	return root;
}

SrcLoc yt_loc(const YtNode *n)
{
	unsigned len = 1;
	if (n->kind == YT_SCALAR && n->style == YS_PLAIN && n->u.scalar.len &&
	    !memchr(n->u.scalar.s, '\n', n->u.scalar.len))
		len = (unsigned)n->u.scalar.len;
	return src_loc_at(n->file, n->off, len);
}

YtNode *yt_get(const YtNode *map, const char *key)
{
	if (!map || map->kind != YT_MAP)
		return NULL;
	size_t kl = strlen(key);
	for (size_t i = 0; i < map->u.map.n; i++) {
		const YtNode *k = map->u.map.v[i].key;
		if (k->u.scalar.len == kl && !memcmp(k->u.scalar.s, key, kl))
			return map->u.map.v[i].value;
	}
	return NULL;
}

bool yt_is_null(const YtNode *n)
{
	if (n->kind != YT_SCALAR || n->style != YS_PLAIN)
		return false;
	const char *s = n->u.scalar.s;
	return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

const char *yt_kind_name(const YtNode *n)
{
	if (n->kind == YT_SEQ) return "a list";
	if (n->kind == YT_MAP) return "a mapping";
	return yt_is_null(n) ? "an empty value" : "a string";
}

/* Map byte i of a scalar's value back to the file.  Plain and quoted scalars
 * usually sit on one line; block and folded ones are walked in parallel with
 * the source, matching characters and letting any whitespace run match a
 * space or newline of the value.  The result stays within the node's span. */
SrcLoc yt_scalar_loc(const YtNode *n, size_t i, unsigned len)
{
	const SrcFile *f = n->file;
	const char *src = f->text;
	size_t j = n->off, end = n->end > n->off ? n->end : f->len;
	const char *v = n->u.scalar.s;
	YtStyle st = (YtStyle)n->style;

	if (st == YS_SINGLE || st == YS_DOUBLE)
		j++;
	else if (st == YS_LITERAL || st == YS_FOLDED) {
		while (j < end && src[j] != '\n')
			j++;
	}
	for (size_t k = 0; k < i && k < n->u.scalar.len && j < end; k++) {
		char c = v[k];
		if (c == ' ' || c == '\n' || c == '\t') {
			while (j < end && (src[j] == ' ' || src[j] == '\n' || src[j] == '\t' || src[j] == '\r'))
				j++;
			/* one whitespace of the value may match several of the source */
			if (k + 1 < n->u.scalar.len && (v[k + 1] == ' ' || v[k + 1] == '\n'))
				continue;
			continue;
		}
		while (j < end && src[j] != c)
			j++;
		if (j < end)
			j++;
	}
	if (st == YS_LITERAL || st == YS_FOLDED || i == 0)
		while (j < end && (src[j] == ' ' || src[j] == '\n' || src[j] == '\r'))
			j++;
	if (j > f->len)
		j = f->len;
	return src_loc_at(f, j, len ? len : 1);
}
