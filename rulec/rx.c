/* rx.c - patterns of =~ and !~ (see rx.h; not "regex.h", which would hide libc's).
 *
 * Three steps, each bounded: a recursive-descent parser (groups nested at
 * most RX_MAX_DEPTH deep) into a small syntax tree; a Thompson NFA built
 * backwards from the tree (each node compiled in front of its
 * continuation; repeats copy their operand, at most RX_MAX_NFA states);
 * the DFA by subset construction, over the byte classes the NFA's sets
 * induce, at most RX_MAX_STATES states.  Anchoring is implicit: the DFA
 * reads the whole string from its start state and accepts only at the
 * end; ^ and $ are assertions (^ holds before the first byte, $ after the
 * last).
 */
#include "rx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RX_MAX_DEPTH 64
#define RX_MAX_NFA 4000

typedef struct RxSet { uint64_t w[4]; } RxSet;

static void set_add(RxSet *s, unsigned c) { s->w[c >> 6] |= 1ull << (c & 63); }
static bool set_has(const RxSet *s, unsigned c) { return s->w[c >> 6] >> (c & 63) & 1; }
static void set_range(RxSet *s, unsigned lo, unsigned hi) { for (unsigned c = lo; c <= hi; c++) set_add(s, c); }
static void set_or(RxSet *s, const RxSet *t) { for (int i = 0; i < 4; i++) s->w[i] |= t->w[i]; }
static void set_not(RxSet *s) { for (int i = 0; i < 4; i++) s->w[i] = ~s->w[i]; }

static void set_fold(RxSet *s)
{
	for (unsigned c = 'a'; c <= 'z'; c++)
		if (set_has(s, c) || set_has(s, c - 32)) {
			set_add(s, c);
			set_add(s, c - 32);
		}
}

/* syntax tree */
enum { R_EMPTY, R_SET, R_CAT, R_ALT, R_REP, R_BOL, R_EOL };

typedef struct RxNode {
	int op;
	int set;                  /* R_SET: index into sets */
	int kid0, nkid;           /* R_CAT, R_ALT: kids[kid0 .. kid0+nkid); R_REP: kids[kid0] */
	int min, max;             /* R_REP; max -1: unbounded */
	size_t off;               /* where in the pattern */
} RxNode;

/* NFA states */
enum { NS_SET, NS_SPLIT, NS_BOL, NS_EOL, NS_MATCH };

typedef struct RxN {
	int t, out, out1, set;
} RxN;

typedef struct RxP {
	const char *s;
	size_t n, pos;
	RxNode *nodes;
	size_t nn, capn;
	int *kids;
	size_t nk, capk;
	RxSet *sets;
	size_t ns, caps;
	RxN *nfa;
	size_t nnfa, capnfa;
	bool fold;
	int depth;
	size_t repoff;            /* the outermost repeat being compiled, or SIZE_MAX */
	bool failed;
	RxErr *err;
} RxP;

static void rx_fail(RxP *P, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void rx_fail(RxP *P, size_t off, const char *fmt, ...)
{
	if (P->failed)
		return;
	P->failed = true;
	P->err->off = off;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(P->err->msg, sizeof P->err->msg, fmt, ap);
	va_end(ap);
}

/* Grow *a (of *cap elements of size sz) to hold n; false (and an error) when out of memory. */
static bool rx_grow(RxP *P, void **a, size_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc < n)
		nc *= 2;
	void *p = realloc(*a, nc * sz);
	if (!p) {
		rx_fail(P, 0, "out of memory");
		return false;
	}
	*a = p;
	*cap = nc;
	return true;
}

static int rx_node(RxP *P, int op, size_t off)
{
	if (!rx_grow(P, (void **)&P->nodes, &P->capn, P->nn + 1, sizeof *P->nodes))
		return -1;
	P->nodes[P->nn] = (RxNode){.op = op, .off = off, .set = -1, .kid0 = -1};
	return (int)P->nn++;
}

static int rx_setnode(RxP *P, const RxSet *s, size_t off)
{
	if (!rx_grow(P, (void **)&P->sets, &P->caps, P->ns + 1, sizeof *P->sets))
		return -1;
	RxSet t = *s;
	if (P->fold)
		set_fold(&t);
	P->sets[P->ns] = t;
	int n = rx_node(P, R_SET, off);
	if (n >= 0)
		P->nodes[n].set = (int)P->ns++;
	return n;
}

/* A list of kids being collected (a concatenation's, an alternation's). */
typedef struct RxList { int *v; size_t n, cap; } RxList;

static bool rx_push(RxP *P, RxList *l, int x)
{
	if (!rx_grow(P, (void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
		return false;
	l->v[l->n++] = x;
	return true;
}

/* A node of kind op over the list's kids (the kid itself when there is one). */
static int rx_listnode(RxP *P, int op, RxList *l, size_t off)
{
	int r;
	if (l->n == 0)
		r = rx_node(P, R_EMPTY, off);
	else if (l->n == 1)
		r = l->v[0];
	else if ((r = rx_node(P, op, off)) >= 0 &&
		 rx_grow(P, (void **)&P->kids, &P->capk, P->nk + l->n, sizeof *P->kids)) {
		memcpy(P->kids + P->nk, l->v, l->n * sizeof *l->v);
		P->nodes[r].kid0 = (int)P->nk;
		P->nodes[r].nkid = (int)l->n;
		P->nk += l->n;
	} else
		r = -1;
	free(l->v);
	return P->failed ? -1 : r;
}

/* ---- parser ---- */

static bool rx_isdigit(int c) { return c >= '0' && c <= '9'; }
static bool rx_isalnum(int c) { return rx_isdigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static void rx_perl(RxSet *s, int c)
{
	memset(s, 0, sizeof *s);
	switch (c | 0x20) {
	case 'd': set_range(s, '0', '9'); break;
	case 'w': set_range(s, '0', '9'); set_range(s, 'a', 'z'); set_range(s, 'A', 'Z'); set_add(s, '_'); break;
	case 's':        /* RE2's \s is [\t\n\f\r ], without \v */
		set_add(s, ' '); set_add(s, '\t'); set_add(s, '\n'); set_add(s, '\f'); set_add(s, '\r');
		break;
	}
	if (c >= 'A' && c <= 'Z')
		set_not(s);
}

/* Parse the value of \xHH or \x{H..}; P->pos is past the 'x'.  -1 after an error. */
static int rx_hex(RxP *P, size_t at)
{
	const char *s = P->s;
	size_t n = P->n;
	unsigned v = 0, nd = 0;
	bool brace = P->pos < n && s[P->pos] == '{';
	if (brace)
		P->pos++;
	while (P->pos < n && (brace || nd < 2)) {
		char c = s[P->pos];
		unsigned d = rx_isdigit(c) ? (unsigned)(c - '0') : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (unsigned)((c | 0x20) - 'a' + 10) : 16;
		if (d == 16)
			break;
		v = v * 16 + d;
		if (v > 0x10ffff)
			v = 0x110000;
		nd++;
		P->pos++;
	}
	if (brace && P->pos < n && s[P->pos] == '}' && nd)
		P->pos++;
	else if (brace || nd < 2) {
		rx_fail(P, at, "\\x takes two hex digits (\\x41) or braces (\\x{41})");
		return -1;
	}
	if (v > 0xff) {
		rx_fail(P, at, "\\x above ff: a pattern matches bytes, write a character above ff as itself");
		return -1;
	}
	return (int)v;
}

/* An escape at P->pos (the backslash).  A single byte: its value and *set
 * left empty; a class (\d): -2 and *set; -1 after an error; -3 for
 * \A / \z (the caller's anchors). */
static int rx_escape(RxP *P, RxSet *set, bool in_class)
{
	size_t at = P->pos;
	const char *s = P->s;
	if (++P->pos >= P->n) {
		rx_fail(P, at, "a pattern cannot end in a lone '\\'; write '\\\\' for a backslash");
		return -1;
	}
	char c = s[P->pos++];
	switch (c) {
	case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
		rx_perl(set, c);
		return -2;
	case 't': return '\t';
	case 'n': return '\n';
	case 'r': return '\r';
	case 'f': return '\f';
	case 'v': return '\v';
	case 'a': return '\a';
	case 'x': return rx_hex(P, at);
	case 'A': case 'z':
		if (!in_class)
			return -3;
		break;
	case 'b': case 'B':
		rx_fail(P, at, "'\\%c' (a word boundary) is not supported: the pattern matches the whole name", c);
		return -1;
	case 'p': case 'P':
		rx_fail(P, at, "'\\%c' (Unicode classes) is not supported: use a class such as [a-z]", c);
		return -1;
	case 'Q':
		rx_fail(P, at, "'\\Q...\\E' is not supported: escape each metacharacter with '\\'");
		return -1;
	default:
		break;
	}
	if (rx_isdigit(c)) {
		rx_fail(P, at, "'\\%c': backreferences are not supported (RE2 has none)", c);
		return -1;
	}
	if (!rx_isalnum(c) && (unsigned char)c < 0x80 && (unsigned char)c > 0x20)
		return (unsigned char)c;      /* \. \* \\ \" ... */
	rx_fail(P, at, "unknown escape '\\%c'", c);
	return -1;
}

static const struct { const char *name; const char *ranges; } rx_posix[] = {
	{"alnum", "09azAZ"}, {"alpha", "azAZ"}, {"ascii", "\x01\x7f"}, {"blank", "  \t\t"},
	{"cntrl", "\x01\x1f\x7f\x7f"}, {"digit", "09"}, {"graph", "!~"}, {"lower", "az"},
	{"print", " ~"}, {"punct", "!/:@[`{~"}, {"space", "\t\r  "}, {"upper", "AZ"},
	{"word", "09azAZ__"}, {"xdigit", "09afAF"},
};

/* class -> '[' ['^'] item+ ']'; P->pos is at the '['. */
static int rx_class(RxP *P)
{
	const char *s = P->s;
	size_t n = P->n, open = P->pos;
	RxSet set = {{0}};
	bool neg = false;
	P->pos++;
	if (P->pos < n && s[P->pos] == '^') {
		neg = true;
		P->pos++;
	}
	bool first = true;
	for (;;) {
		if (P->pos >= n) {
			rx_fail(P, open, "'[' is not closed: add the ']'");
			return -1;
		}
		size_t at = P->pos;
		unsigned char c = (unsigned char)s[at];
		if (c == ']' && !first)
			break;
		first = false;
		if (c == '[' && at + 1 < n && s[at + 1] == ':') {
			size_t e = at + 2;
			while (e + 1 < n && !(s[e] == ':' && s[e + 1] == ']'))
				e++;
			if (e + 1 < n) {
				bool pneg = s[at + 2] == '^';
				size_t nb = at + 2 + pneg;
				size_t k;
				for (k = 0; k < sizeof rx_posix / sizeof *rx_posix; k++)
					if (strlen(rx_posix[k].name) == e - nb && !memcmp(rx_posix[k].name, s + nb, e - nb))
						break;
				if (k == sizeof rx_posix / sizeof *rx_posix) {
					rx_fail(P, at, "unknown class '%.*s'", (int)(e + 2 - at), s + at);
					return -1;
				}
				RxSet t = {{0}};
				for (const char *r = rx_posix[k].ranges; *r; r += 2)
					set_range(&t, (unsigned char)r[0], (unsigned char)r[1]);
				if (pneg)
					set_not(&t);
				set_or(&set, &t);
				P->pos = e + 2;
				continue;
			}
		}
		int lo;
		if (c == '\\') {
			RxSet t = {{0}};
			lo = rx_escape(P, &t, true);
			if (lo == -1)
				return -1;
			if (lo == -2) {
				set_or(&set, &t);
				continue;
			}
			if (lo < 0) {
				rx_fail(P, at, "'%.*s' does not belong in a class", 2, s + at);
				return -1;
			}
		} else if (c >= 0x80) {
			size_t e = at + 1;
			while (e < n && ((unsigned char)s[e] & 0xc0) == 0x80)
				e++;
			if (e - at > 1) {
				rx_fail(P, at, "'%.*s' is more than one byte, and a class matches one byte: "
					"write it outside the class, as an alternative ((a|%.*s))",
					(int)(e - at), s + at, (int)(e - at), s + at);
				return -1;
			}
			lo = c;
			P->pos++;
		} else {
			lo = c;
			P->pos++;
		}
		int hi = lo;
		if (P->pos + 1 < n && s[P->pos] == '-' && s[P->pos + 1] != ']') {
			size_t hat = ++P->pos;
			unsigned char h = (unsigned char)s[hat];
			if (h == '\\') {
				RxSet t = {{0}};
				hi = rx_escape(P, &t, true);
				if (hi == -1)
					return -1;
				if (hi < 0) {
					rx_fail(P, hat, "a range ends in a character, not in '%.*s'", 2, s + hat);
					return -1;
				}
			} else if (h >= 0x80) {
				rx_fail(P, hat, "a range's end is more than one byte; a class matches bytes");
				return -1;
			} else {
				hi = h;
				P->pos++;
			}
			if (hi < lo) {
				rx_fail(P, at, "range '%.*s' runs backwards; write the smaller end first",
					(int)(P->pos - at), s + at);
				return -1;
			}
		}
		set_range(&set, (unsigned)lo, (unsigned)hi);
	}
	P->pos++;           /* ']' */
	if (P->fold)
		set_fold(&set);
	if (neg)
		set_not(&set);
	bool fold = P->fold;
	P->fold = false;    /* folded above, before the negation */
	int r = rx_setnode(P, &set, open);
	P->fold = fold;
	return r;
}

static int rx_alt(RxP *P);

/* {n}, {n,}, {n,m} at P->pos: true and the bounds, or false (not a
 * repeat: the '{' is a literal, as in RE2). */
static bool rx_braces(RxP *P, int *min, int *max, size_t *end)
{
	const char *s = P->s;
	size_t i = P->pos + 1, n = P->n;
	long a = 0, b;
	if (i >= n || !rx_isdigit(s[i]))
		return false;
	while (i < n && rx_isdigit(s[i])) {
		if (a <= 100000)
			a = a * 10 + (s[i] - '0');
		i++;
	}
	b = a;
	if (i < n && s[i] == ',') {
		i++;
		if (i < n && rx_isdigit(s[i])) {
			b = 0;
			while (i < n && rx_isdigit(s[i])) {
				if (b <= 100000)
					b = b * 10 + (s[i] - '0');
				i++;
			}
		} else
			b = -1;
	}
	if (i >= n || s[i] != '}')
		return false;
	*min = (int)a;
	*max = (int)b;
	*end = i + 1;
	return true;
}

/* group -> '(' [ '?' flags ( ')' | ':' alt ')' ) | '?P<name>' alt ')' | alt ')' ]; at '('.
 * A flags-only group, (?i), returns R_EMPTY and sets the flags for the rest of the enclosing group. */
static int rx_group(RxP *P)
{
	const char *s = P->s;
	size_t n = P->n, open = P->pos;
	bool fold = P->fold;     /* the group's flags: its own, or the enclosing group's */
	P->pos++;
	if (P->pos < n && s[P->pos] == '?') {
		P->pos++;
		if (P->pos < n && (s[P->pos] == '=' || s[P->pos] == '!' ||
				   (s[P->pos] == '<' && P->pos + 1 < n && (s[P->pos + 1] == '=' || s[P->pos + 1] == '!')))) {
			rx_fail(P, open, "lookaround '(?%c' is not supported (RE2 has none)", s[P->pos]);
			return -1;
		}
		if (P->pos < n && (s[P->pos] == 'P' || s[P->pos] == '<')) {       /* (?P<name>re), (?<name>re) */
			if (s[P->pos] == 'P')
				P->pos++;
			if (P->pos >= n || s[P->pos] != '<') {
				rx_fail(P, open, "a named group is written (?P<name>...)");
				return -1;
			}
			size_t nb = ++P->pos;
			while (P->pos < n && (rx_isalnum(s[P->pos]) || s[P->pos] == '_'))
				P->pos++;
			if (P->pos == nb || P->pos >= n || s[P->pos] != '>') {
				rx_fail(P, nb, "a group's name is letters, digits and '_', closed by '>'");
				return -1;
			}
			P->pos++;
		} else {
			bool neg = false, any = false;
			for (;;) {
				if (P->pos >= n) {
					rx_fail(P, open, "'(' is not closed: add the ')'");
					return -1;
				}
				char c = s[P->pos];
				if (c == ')' || c == ':')
					break;
				if (c == '-' && !neg) {
					neg = true;
				} else if (c == 'i') {
					fold = !neg;
					any = true;
				} else if (c == 's' || c == 'U') {
					any = true;       /* '.' is any byte already; laziness is moot */
				} else if (c == 'm') {
					rx_fail(P, P->pos, "flag 'm' (multi-line) is not supported: a name is one line");
					return -1;
				} else {
					rx_fail(P, P->pos, "unknown flag '%c'; flags are i, s and U", c);
					return -1;
				}
				P->pos++;
			}
			if (!any && s[P->pos] == ')') {
				rx_fail(P, open, "'(?)' names no flag");
				return -1;
			}
			if (s[P->pos] == ')') {      /* (?i): to the end of the enclosing group */
				P->pos++;
				P->fold = fold;
				return rx_node(P, R_EMPTY, open);
			}
			P->pos++;               /* ':' */
		}
	}
	if (++P->depth > RX_MAX_DEPTH) {
		rx_fail(P, open, "groups nested more than %d deep", RX_MAX_DEPTH);
		return -1;
	}
	bool saved = P->fold;
	P->fold = fold;
	int r = rx_alt(P);
	P->fold = saved;
	P->depth--;
	if (r < 0)
		return -1;
	if (P->pos >= n || s[P->pos] != ')') {
		rx_fail(P, open, "'(' is not closed: add the ')'");
		return -1;
	}
	P->pos++;
	return r;
}

/* atom -> group | class | '.' | '^' | '$' | escape | CHAR */
static int rx_atom(RxP *P)
{
	const char *s = P->s;
	size_t n = P->n, at = P->pos;
	unsigned char c = (unsigned char)s[at];
	RxSet set = {{0}};
	switch (c) {
	case '(':
		return rx_group(P);
	case '[':
		return rx_class(P);
	case '.':
		P->pos++;
		set_not(&set);
		return rx_setnode(P, &set, at);
	case '^':
		P->pos++;
		return rx_node(P, R_BOL, at);
	case '$':
		P->pos++;
		return rx_node(P, R_EOL, at);
	case '*': case '+': case '?':
		rx_fail(P, at, "'%c' has nothing to repeat; write '\\%c' for the character", c, c);
		return -1;
	case '{': {
		int a, b;
		size_t e;
		if (rx_braces(P, &a, &b, &e)) {
			rx_fail(P, at, "'%.*s' has nothing to repeat", (int)(e - at), s + at);
			return -1;
		}
		break;
	}
	case '\\': {
		int v = rx_escape(P, &set, false);
		if (v == -1)
			return -1;
		if (v == -3)
			return rx_node(P, s[at + 1] == 'A' ? R_BOL : R_EOL, at);
		if (v == -2)
			return rx_setnode(P, &set, at);
		set_add(&set, (unsigned)v);
		return rx_setnode(P, &set, at);
	}
	default:
		break;
	}
	if (c >= 0xc0) {         /* a UTF-8 character: its bytes, one atom */
		size_t e = at + 1;
		while (e < n && ((unsigned char)s[e] & 0xc0) == 0x80)
			e++;
		if (e - at > 1) {
			RxList l = {0};
			for (size_t i = at; i < e; i++) {
				RxSet b = {{0}};
				set_add(&b, (unsigned char)s[i]);
				int k = rx_setnode(P, &b, i);
				if (k < 0 || !rx_push(P, &l, k)) {
					free(l.v);
					return -1;
				}
			}
			P->pos = e;
			return rx_listnode(P, R_CAT, &l, at);
		}
	}
	P->pos++;
	set_add(&set, c);
	return rx_setnode(P, &set, at);
}

/* repeat -> atom [ ('*' | '+' | '?' | '{n}' | '{n,}' | '{n,m}') ['?'] ] */
static int rx_repeat(RxP *P)
{
	const char *s = P->s;
	size_t n = P->n;
	int x = rx_atom(P);
	if (x < 0 || P->pos >= n)
		return x;
	size_t at = P->pos;
	int min, max;
	size_t e = at + 1;
	switch (s[at]) {
	case '*': min = 0; max = -1; break;
	case '+': min = 1; max = -1; break;
	case '?': min = 0; max = 1; break;
	case '{':
		if (rx_braces(P, &min, &max, &e)) {
			if (min > RX_MAX_REPEAT || max > RX_MAX_REPEAT) {
				rx_fail(P, at, "repeat count above %d in '%.*s'", RX_MAX_REPEAT, (int)(e - at), s + at);
				return -1;
			}
			if (max >= 0 && max < min) {
				rx_fail(P, at, "'%.*s': the maximum is below the minimum", (int)(e - at), s + at);
				return -1;
			}
			break;
		}
		return x;
	default:
		return x;
	}
	if (P->nodes[x].op == R_BOL || P->nodes[x].op == R_EOL) {
		rx_fail(P, at, "'%c' repeats an anchor, which matches no character", s[at]);
		return -1;
	}
	P->pos = e;
	if (P->pos < n && s[P->pos] == '?')       /* lazy: the same for a whole match */
		P->pos++;
	if (P->pos < n) {
		int a, b;
		size_t e2;
		char c = s[P->pos];
		if (c == '*' || c == '+' || c == '?' || (c == '{' && rx_braces(P, &a, &b, &e2))) {
			rx_fail(P, P->pos, "'%c' repeats a repeat; group the first one: (x*)%c", c, c);
			return -1;
		}
	}
	int r = rx_node(P, R_REP, at);
	if (r < 0)
		return -1;
	if (!rx_grow(P, (void **)&P->kids, &P->capk, P->nk + 1, sizeof *P->kids))
		return -1;
	P->kids[P->nk] = x;
	P->nodes[r].kid0 = (int)P->nk++;
	P->nodes[r].nkid = 1;
	P->nodes[r].min = min;
	P->nodes[r].max = max;
	return r;
}

/* cat -> repeat* ; alt -> cat { '|' cat } */
static int rx_alt(RxP *P)
{
	const char *s = P->s;
	size_t n = P->n, start = P->pos;
	RxList alts = {0};
	for (;;) {
		RxList cat = {0};
		size_t cstart = P->pos;
		while (P->pos < n && s[P->pos] != '|' && s[P->pos] != ')') {
			int x = rx_repeat(P);
			if (x < 0 || !rx_push(P, &cat, x)) {
				free(cat.v);
				free(alts.v);
				return -1;
			}
		}
		int c = rx_listnode(P, R_CAT, &cat, cstart);
		if (c < 0 || !rx_push(P, &alts, c)) {
			free(alts.v);
			return -1;
		}
		if (P->pos >= n || s[P->pos] != '|')
			break;
		P->pos++;
	}
	return rx_listnode(P, R_ALT, &alts, start);
}

/* ---- NFA ---- */

static int rx_state(RxP *P, int t, int out, int out1, int set, size_t off)
{
	if (P->failed)
		return -1;
	if (P->nnfa >= RX_MAX_NFA) {
		rx_fail(P, P->repoff != SIZE_MAX ? P->repoff : off, "the pattern is too large (over %d NFA states): shorten it or lower its repeat counts",
			RX_MAX_NFA);
		return -1;
	}
	if (!rx_grow(P, (void **)&P->nfa, &P->capnfa, P->nnfa + 1, sizeof *P->nfa))
		return -1;
	P->nfa[P->nnfa] = (RxN){t, out, out1, set};
	return (int)P->nnfa++;
}

/* The NFA of node x followed by the state next; its first state, or -1. */
static int rx_nfa(RxP *P, int x, int next)
{
	const RxNode *N = &P->nodes[x];
	if (P->failed)
		return -1;
	switch (N->op) {
	case R_EMPTY:
		return next;
	case R_SET:
		return rx_state(P, NS_SET, next, -1, N->set, N->off);
	case R_BOL:
		return rx_state(P, NS_BOL, next, -1, -1, N->off);
	case R_EOL:
		return rx_state(P, NS_EOL, next, -1, -1, N->off);
	case R_CAT:
		for (int i = N->nkid - 1; i >= 0 && next >= 0; i--)
			next = rx_nfa(P, P->kids[N->kid0 + i], next);
		return next;
	case R_ALT: {
		int r = rx_nfa(P, P->kids[N->kid0 + N->nkid - 1], next);
		for (int i = N->nkid - 2; i >= 0 && r >= 0; i--) {
			int a = rx_nfa(P, P->kids[N->kid0 + i], next);
			r = a < 0 ? -1 : rx_state(P, NS_SPLIT, a, r, -1, N->off);
		}
		return r;
	}
	case R_REP: {
		int kid = P->kids[N->kid0], min = N->min, max = N->max;
		size_t off = N->off, outer = P->repoff;
		if (outer == SIZE_MAX)
			P->repoff = off;
		int s = next;
		if (max < 0) {                   /* x*: a split looping through x */
			int loop = rx_state(P, NS_SPLIT, -1, next, -1, off);
			int body = loop < 0 ? -1 : rx_nfa(P, kid, loop);
			if (body < 0)
				return -1;
			P->nfa[loop].out = body;
			s = loop;
		} else {
			for (int i = 0; i < max - min && s >= 0; i++) {   /* x? x? ... */
				int body = rx_nfa(P, kid, s);
				s = body < 0 ? -1 : rx_state(P, NS_SPLIT, body, s, -1, off);
			}
		}
		for (int i = 0; i < min && s >= 0; i++)
			s = rx_nfa(P, kid, s);
		P->repoff = outer;
		return s;
	}
	}
	return -1;
}

/* ---- DFA ---- */

typedef struct RxD {
	RxP *P;
	unsigned *mark, gen;
	int *stack;
	int *list;                /* a closure's set states */
	size_t nlist;
	int *pool;                /* every DFA state's set states */
	size_t npool, cappool;
	size_t *start;            /* [state]: its first in pool */
	unsigned *len, *hash;
	uint8_t *acc;
	unsigned nstates;
	int *table;               /* hash -> state + 1 */
	unsigned tabsize;
} RxD;

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* The closure of the seeds into D->list (sorted set states), and whether it accepts. */
static bool rx_closure(RxD *D, const int *seeds, size_t nseeds, bool atstart)
{
	RxP *P = D->P;
	bool accept = false;
	D->nlist = 0;
	for (int pass = 0; pass < 2; pass++) {   /* 0: the states; 1: through $ to the match */
		size_t sp = 0;
		D->gen++;
		for (size_t i = 0; i < nseeds; i++)
			D->stack[sp++] = seeds[i];
		while (sp) {
			int x = D->stack[--sp];
			if (x < 0 || D->mark[x] == D->gen)
				continue;
			D->mark[x] = D->gen;
			const RxN *N = &P->nfa[x];
			switch (N->t) {
			case NS_SET:
				if (!pass)
					D->list[D->nlist++] = x;
				break;
			case NS_SPLIT:
				D->stack[sp++] = N->out;
				D->stack[sp++] = N->out1;
				break;
			case NS_BOL:
				if (atstart)
					D->stack[sp++] = N->out;
				break;
			case NS_EOL:
				if (pass)
					D->stack[sp++] = N->out;
				break;
			case NS_MATCH:
				accept = true;
				break;
			}
		}
		if (accept)
			break;
	}
	qsort(D->list, D->nlist, sizeof *D->list, cmp_int);
	return accept;
}

/* The state of D->list with accept, added if new; -1 past the cap. */
static int rx_dstate(RxD *D, bool accept)
{
	RxP *P = D->P;
	unsigned h = 2166136261u ^ accept;
	for (size_t i = 0; i < D->nlist; i++)
		h = (h ^ (unsigned)D->list[i]) * 16777619u;
	for (unsigned k = h & (D->tabsize - 1);; k = (k + 1) & (D->tabsize - 1)) {
		int t = D->table[k];
		if (!t)
			break;
		unsigned st = (unsigned)t - 1;
		if (D->hash[st] == h && D->len[st] == D->nlist && D->acc[st] == accept &&
		    !memcmp(D->pool + D->start[st], D->list, D->nlist * sizeof *D->list))
			return (int)st;
	}
	if (D->nstates >= RX_MAX_STATES) {
		rx_fail(P, 0, "the pattern needs more than %u DFA states: simplify it", RX_MAX_STATES);
		return -1;
	}
	if (!rx_grow(P, (void **)&D->pool, &D->cappool, D->npool + D->nlist + 1, sizeof *D->pool))
		return -1;
	unsigned st = D->nstates++;
	memcpy(D->pool + D->npool, D->list, D->nlist * sizeof *D->list);
	D->start[st] = D->npool;
	D->npool += D->nlist;
	D->len[st] = (unsigned)D->nlist;
	D->hash[st] = h;
	D->acc[st] = accept;
	unsigned k = h & (D->tabsize - 1);
	while (D->table[k])
		k = (k + 1) & (D->tabsize - 1);
	D->table[k] = (int)st + 1;
	return (int)st;
}

static int rx_dfa(RxP *P, int start, Rx *out)
{
	/* byte classes: bytes every set holds or lacks alike */
	uint8_t cls[256] = {0};
	unsigned nclass = 1;
	for (size_t i = 0; i < P->nnfa; i++) {
		if (P->nfa[i].t != NS_SET)
			continue;
		int map[512];
		uint8_t ncls[256];
		unsigned nc = 0;
		memset(map, -1, sizeof map);
		for (unsigned b = 0; b < 256; b++) {
			int key = cls[b] * 2 + set_has(&P->sets[P->nfa[i].set], b);
			if (map[key] < 0)
				map[key] = (int)nc++;
			ncls[b] = (uint8_t)map[key];
		}
		memcpy(cls, ncls, sizeof cls);
		nclass = nc;
	}
	unsigned rep[256];
	for (unsigned b = 256; b-- > 0;)
		rep[cls[b]] = b;

	RxD D = {.P = P, .tabsize = 2 * RX_MAX_STATES};
	size_t nn = P->nnfa;
	D.mark = calloc(nn, sizeof *D.mark);
	D.stack = malloc((3 * nn + 2) * sizeof *D.stack);
	D.list = malloc((nn + 1) * sizeof *D.list);
	D.start = malloc(RX_MAX_STATES * sizeof *D.start);
	D.len = malloc(RX_MAX_STATES * sizeof *D.len);
	D.hash = malloc(RX_MAX_STATES * sizeof *D.hash);
	D.acc = malloc(RX_MAX_STATES);
	D.table = calloc(D.tabsize, sizeof *D.table);
	int *seeds = malloc((nn + 1) * sizeof *seeds);
	uint16_t *next = malloc((size_t)RX_MAX_STATES * nclass * sizeof *next);
	int rc = -1;
	if (!D.mark || !D.stack || !D.list || !D.start || !D.len || !D.hash || !D.acc || !D.table || !seeds || !next) {
		rx_fail(P, 0, "out of memory");
		goto out;
	}
	bool acc = rx_closure(&D, &start, 1, true);
	if (rx_dstate(&D, acc) < 0)
		goto out;
	for (unsigned st = 0; st < D.nstates; st++) {
		for (unsigned c = 0; c < nclass; c++) {
			size_t ns = 0;
			const int *set = D.pool + D.start[st];
			for (unsigned i = 0; i < D.len[st]; i++)
				if (set_has(&P->sets[P->nfa[set[i]].set], rep[c]))
					seeds[ns++] = P->nfa[set[i]].out;
			acc = rx_closure(&D, seeds, ns, false);
			if (!D.nlist && !acc) {
				next[st * nclass + c] = RX_DEAD;
				continue;
			}
			int t = rx_dstate(&D, acc);
			if (t < 0)
				goto out;
			next[st * nclass + c] = (uint16_t)t;
		}
	}
	out->nstates = D.nstates;
	out->nclass = nclass;
	memcpy(out->cls, cls, sizeof cls);
	out->next = malloc((size_t)D.nstates * nclass * sizeof *next);
	out->accept = malloc(D.nstates);
	if (!out->next || !out->accept) {
		rx_free(out);
		rx_fail(P, 0, "out of memory");
		goto out;
	}
	memcpy(out->next, next, (size_t)D.nstates * nclass * sizeof *next);
	memcpy(out->accept, D.acc, D.nstates);
	rc = 0;
out:
	free(D.mark);
	free(D.stack);
	free(D.list);
	free(D.pool);
	free(D.start);
	free(D.len);
	free(D.hash);
	free(D.acc);
	free(D.table);
	free(seeds);
	free(next);
	return rc;
}

int rx_compile(const char *pat, size_t len, Rx *out, RxErr *err)
{
	RxP P = {.s = pat, .n = len, .err = err, .repoff = SIZE_MAX};
	memset(out, 0, sizeof *out);
	memset(err, 0, sizeof *err);
	int root = rx_alt(&P);
	if (root >= 0 && P.pos < len)        /* a ')' with no '(' */
		rx_fail(&P, P.pos, "')' has no '(' before it; write '\\)' for the character");
	int rc = -1;
	if (root >= 0 && !P.failed) {
		int match = rx_state(&P, NS_MATCH, -1, -1, -1, 0);
		int start = match < 0 ? -1 : rx_nfa(&P, root, match);
		if (start >= 0 && !P.failed)
			rc = rx_dfa(&P, start, out);
	}
	free(P.nodes);
	free(P.kids);
	free(P.sets);
	free(P.nfa);
	return P.failed ? -1 : rc;
}

void rx_free(Rx *rx)
{
	free(rx->next);
	free(rx->accept);
	rx->next = NULL;
	rx->accept = NULL;
}

bool rx_match(const Rx *rx, const char *s, size_t n)
{
	unsigned st = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned t = rx->next[st * rx->nclass + rx->cls[(unsigned char)s[i]]];
		if (t == RX_DEAD)
			return false;
		st = t;
	}
	return rx->accept[st];
}
