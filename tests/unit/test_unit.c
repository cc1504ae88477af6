/* Unit tests for rulec's building blocks (run under ASan/UBSan). */
#include "ast.h"
#include "bundle.h"
#include "catalog.h"
#include "cg.h"
#include "diag.h"
#include "rules.h"
#include "rx.h"
#include "units.h"
#include "util.h"
#include "yamlt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, passes;

#define CHECK(name, cond) do { \
	if (cond) { passes++; printf("PASS unit/%s\n", name); } \
	else { failures++; printf("FAIL unit/%s (%s:%d: %s)\n", name, __FILE__, __LINE__, #cond); } \
} while (0)

static void test_durations(void)
{
	double s;
	size_t bad;
	CHECK("duration-ms", unit_parse_duration("500ms", 5, &s, &bad) == 0 && fabs(s - 0.5) < 1e-12);
	CHECK("duration-compound", unit_parse_duration("1m30s", 5, &s, &bad) == 0 && s == 90);
	CHECK("duration-fraction", unit_parse_duration("1.5h", 4, &s, &bad) == 0 && s == 5400);
	CHECK("duration-us", unit_parse_duration("250us", 5, &s, &bad) == 0 && fabs(s - 250e-6) < 1e-15);
	CHECK("duration-no-unit", unit_parse_duration("5", 1, &s, &bad) < 0);
	CHECK("duration-bytes-unit", unit_parse_duration("5MiB", 4, &s, &bad) < 0);
	CHECK("duration-empty", unit_parse_duration("", 0, &s, &bad) < 0);
	CHECK("duration-garbage", unit_parse_duration("5s!", 3, &s, &bad) < 0);
	char b[32];
	CHECK("duration-fmt-ms", !strcmp(unit_fmt_duration(0.1, b, sizeof b), "100ms"));
	CHECK("duration-fmt-s", !strcmp(unit_fmt_duration(90, b, sizeof b), "90s"));
	CHECK("duration-fmt-m", !strcmp(unit_fmt_duration(150, b, sizeof b), "2.5m") &&
	      !strcmp(unit_fmt_duration(600, b, sizeof b), "10m"));
	CHECK("duration-fmt-d", !strcmp(unit_fmt_duration(86400, b, sizeof b), "24h") &&
	      !strcmp(unit_fmt_duration(3 * 86400, b, sizeof b), "3d") &&
	      !strcmp(unit_fmt_duration(9 * 86400, b, sizeof b), "9d"));
	CHECK("duration-fmt-w", !strcmp(unit_fmt_duration(7 * 86400, b, sizeof b), "1w") &&
	      !strcmp(unit_fmt_duration(14 * 86400, b, sizeof b), "2w"));
	CHECK("duration-fmt-h", !strcmp(unit_fmt_duration(3600, b, sizeof b), "1h"));
}

static void test_units(void)
{
	const Unit *u = unit_lookup("GiB", 3);
	CHECK("unit-gib", u && u->scale == 1073741824.0 && u->dim.bytes == 1);
	u = unit_lookup("%", 1);
	CHECK("unit-percent", u && u->percent && u->scale == 0.01);
	CHECK("unit-pages", unit_lookup("pages", 5) && unit_lookup("pages", 5)->scale == 4096);
	CHECK("unit-unknown", unit_lookup("furlong", 7) == NULL);
}

static void test_edit_distance(void)
{
	CHECK("edit-equal", u_edit_distance("rate", "rate", 3) == 0);
	CHECK("edit-one", u_edit_distance("rtae", "rate", 3) == 2);
	CHECK("edit-cap", u_edit_distance("abcdefgh", "zzzzzzzz", 2) == 3);
	CHECK("edit-long", u_edit_distance("a", "abcdefghijklmnop", 3) == 4);
}

/* kernel strings as text: UTF-8 kept, other bytes and controls \xNN, cut at a whole character */
static void test_printable(void)
{
	char b[32];
	CHECK("printable-ascii", u_printable(b, sizeof b, "kworker/0:1", 16, "") == 11 && !strcmp(b, "kworker/0:1"));
	CHECK("printable-bytes", u_printable(b, sizeof b, "\xb3\xff\x01ok", 16, "") == 14 &&
	      !strcmp(b, "\\xb3\\xff\\x01ok"));
	CHECK("printable-utf8", !strcmp((u_printable(b, sizeof b, "caf\xc3\xa9", 16, ""), b), "caf\xc3\xa9"));
	CHECK("printable-c1", !strcmp((u_printable(b, sizeof b, "\xc2\x85x", 16, ""), b), "\\xc2\\x85x"));
	CHECK("printable-del", !strcmp((u_printable(b, sizeof b, "a\x7f", 16, ""), b), "a\\x7f"));
	CHECK("printable-keep", !strcmp((u_printable(b, sizeof b, "a\nb\tc", 16, "\n"), b), "a\nb\\x09c"));
	CHECK("printable-len", !strcmp((u_printable(b, sizeof b, "abcdef", 3, ""), b), "abc"));
	CHECK("printable-torn", !strcmp((u_printable(b, sizeof b, "ab\xc3", 3, ""), b), "ab\\xc3"));
	CHECK("printable-cut", u_printable(b, 6, "ab\xff" "cd", 16, "") == 2 && !strcmp(b, "ab"));
	CHECK("printable-cut-utf8", u_printable(b, 4, "a\xe2\x82\xac", 16, "") == 1 && !strcmp(b, "a"));
	CHECK("printable-empty", u_printable(b, 1, "abc", 3, "") == 0 && !b[0]);
}

/* One try: 1 when the kth allocation failed and was caught. */
static int oom_try(long k, char **paths, size_t n)
{
	RuleSet *rs = calloc(1, sizeof *rs);
	DiagCtx *d = calloc(1, sizeof *d);
	CgProg *plan = calloc(1, sizeof *plan);
	d->max_errors = 1000;
	CheckOpts co = {.tick = 0.1};
	jmp_buf jb;
	jmp_buf *prev = u_oom_catch(&jb);
	int caught = 1;
	u_oom_after(k);
	if (!setjmp(jb)) {
		for (size_t i = 0; i < n; i++)
			rf_load(rs, paths[i], d, &co);
		rs_check_all(rs, d);
		cg_analyse(plan, rs, d);
		caught = 0;
	}
	u_oom_after(0);
	u_oom_catch(prev);
	cg_free(plan);
	rs_free(rs);
	diag_free(d);
	free(plan);
	free(rs);
	free(d);
	return caught;
}

/* Out of memory anywhere in the front end (what sentineld's reload runs):
 * every allocation of loading, checking and planning every rule file in
 * rules/ and tests/check/ fails in turn, caught as comp_dir catches it;
 * each must unwind cleanly, and what was built must free (ASan: no crash,
 * LeakSanitizer at exit: no leak). */
/* sb_build: what sentineld's loop renders (/metrics, templates) fails as
 * a NULL when memory runs out at any of its allocations, never aborts
 * and leaks nothing (LeakSanitizer at exit); u_oom stays uncaught after. */
static void sb_build_big(StrBuf *b, const void *ctx)
{
	for (int i = 0; i < *(const int *)ctx; i++)
		sb_printf(b, "sentinel_metric{target=\"t%d\"} %d\n", i, i);
}

static void test_sb_build_oom(void)
{
	int n = 2000, nulls = 0;
	size_t len = 1;
	long k;
	for (k = 1; k < 64; k++) {
		u_oom_after(k);
		char *s = sb_build(sb_build_big, &n, &len);
		u_oom_after(0);
		if (s) {
			free(s);
			break;
		}
		nulls += len == 0;
	}
	CHECK("sb-build-out-of-memory-is-null-at-every-allocation", k > 5 && k < 64 && nulls == k - 1);
	char *s = sb_build(sb_build_big, &n, &len);
	CHECK("sb-build-whole", s && len == strlen(s) && strstr(s, "t1999\"} 1999\n"));
	free(s);
	CHECK("sb-build-leaves-no-catch", u_oom_catch(NULL) == NULL);
}

static void test_oom_everywhere(void)
{
	char **paths = NULL, **more = NULL;
	size_t np = 0, nm = 0;
	if (rs_list_dir("rules", &paths, &np) || rs_list_dir("tests/check", &more, &nm) ||
	    !(paths = realloc(paths, (np + nm) * sizeof *paths))) {
		CHECK("oom-files", 0);
		return;
	}
	memcpy(paths + np, more, nm * sizeof *more);
	free(more);
	long k = 1;
	while (k < 100000 && oom_try(k, paths, np + nm))
		k++;
	CHECK("oom-every-allocation-of-the-front-end-unwinds", k > 100 && k < 100000);
	printf("     (%ld allocations failed in turn, %zu files)\n", k - 1, np + nm);
	for (size_t i = 0; i < np + nm; i++)
		free(paths[i]);
	free(paths);
}

static void test_catalog(void)
{
	CHECK("catalog-lookup", cat_lookup("host.mem_free", 13) == MET_HOST_MEM_FREE);
	CHECK("catalog-unknown", cat_lookup("host.mem_fre", 12) == MET__COUNT);
	CHECK("catalog-suggest", cat_suggest("host.mem_fre") && !strcmp(cat_suggest("host.mem_fre"), "host.mem_free"));
	CHECK("catalog-suggest-none", cat_suggest("zzzzzzzzzzzz") == NULL);
	int bad = 0;
	for (int i = 0; i < MET__COUNT; i++) {
		const char *n = cat_metrics[i].name;
		const char *pre = cat_entities[cat_metrics[i].entity].prefix;
		bad += strncmp(n, pre, strlen(pre)) != 0 || n[strlen(pre)] != '.';
		bad += !cat_metrics[i].desc[0] || !cat_metrics[i].source[0];
		for (int j = 0; j < i; j++)
			bad += !strcmp(cat_metrics[j].name, n);
	}
	CHECK("catalog-names-prefixed-unique-documented", bad == 0);
}

/* Location mapping: an error inside a folded scalar points at the right
 * line and column of the file. */
static void test_scalar_locations(void)
{
	const char *text = "a: >\n  one two\n  three\nb: 'x y z'\nc: plain text\n";
	DiagCtx d = {0};
	Arena a = {0};
	SrcFile *f = src_new("t.yaml", strdup(text), strlen(text));
	YtNode *root = yt_load(f, &a, &d);
	CHECK("yaml-load", root && root->kind == YT_MAP && d.nerr == 0);
	if (root) {
		YtNode *n = yt_get(root, "a");
		const char *v = n->u.scalar.s;          /* "one two three\n" */
		SrcLoc l = yt_scalar_loc(n, (size_t)(strstr(v, "three") - v), 5);
		CHECK("loc-folded", l.line == 3 && l.col == 3);
		l = yt_scalar_loc(n, (size_t)(strstr(v, "two") - v), 3);
		CHECK("loc-folded-first-line", l.line == 2 && l.col == 7);
		n = yt_get(root, "b");
		l = yt_scalar_loc(n, 2, 1);
		CHECK("loc-quoted", l.line == 4 && l.col == 7);
		n = yt_get(root, "c");
		l = yt_scalar_loc(n, 6, 1);
		CHECK("loc-plain", l.line == 5 && l.col == 10);
	}
	src_free(f);
	arena_free(&a);
	diag_free(&d);
}

static void test_src_loc_utf8(void)
{
	const char *text = "x: \xc3\xa9t\xc3\xa9\ny: 1\n";
	SrcFile *f = src_new("u.yaml", strdup(text), strlen(text));
	SrcLoc l = src_loc_at(f, 8, 1);           /* the newline, after 6 characters (8 bytes) */
	CHECK("loc-utf8-columns", l.line == 1 && l.col == 7);
	CHECK("offset-roundtrip", src_offset(f, 2, 4) == 12);
	src_free(f);
}

/* A whole rule through parse and check: the AST and the absence of errors. */
static void test_parse_rule(void)
{
	const char *text = "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: all(rate(cpu.busy_time[500ms]) > 90%) and not host.load1 < 1\n    for: 3 of 5 ticks\n";
	RuleSet rs = {0};
	DiagCtx d = {0};
	CheckOpts o = {.tick = 0.1};
	rf_load_buffer(&rs, "p.yaml", strdup(text), strlen(text), &d, &o);
	CHECK("parse-ok", d.nerr == 0 && d.nwarn == 0 && rs.n == 1);
	if (rs.n == 1) {
		Rule *r = &rs.v[0];
		CHECK("parse-m-of-n", r->m_of == 3 && r->n_of == 5);
		Expr *e = r->expr;
		CHECK("parse-and", e && e->kind == N_AND);
		CHECK("parse-all", e && e->a->kind == N_CALL && e->a->u.call.id == B_ALL);
		Expr *cmp = e ? e->a->a : NULL;
		CHECK("parse-gt", cmp && cmp->kind == N_GT && cmp->b->kind == N_NUM &&
		      fabs(cmp->b->u.num.v - 0.9) < 1e-12 && cmp->b->u.num.percent);
		CHECK("parse-window", cmp && cmp->a->kind == N_CALL && cmp->a->a->kind == N_METRIC &&
		      cmp->a->a->u.metric.id == MET_CPU_BUSY && fabs(cmp->a->a->u.metric.window - 0.5) < 1e-12);
		CHECK("parse-not", e && e->b->kind == N_NOT && e->b->a->kind == N_LT);
	}
	rs_free(&rs);
	diag_free(&d);
}

static void test_max_errors(void)
{
	const char *text = "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: x > 1\n  - alert: B\n    expr: y > 1\n  - alert: C\n    expr: z > 1\n";
	RuleSet rs = {0};
	DiagCtx d = {.max_errors = 2};
	CheckOpts o = {.tick = 0.1};
	rf_load_buffer(&rs, "m.yaml", strdup(text), strlen(text), &d, &o);
	CHECK("max-errors-truncates", d.truncated && d.nerr == 2 && d.n == 3);
	rs_free(&rs);
	diag_free(&d);
}

static void test_arena(void)
{
	Arena a = {0};
	char *big = arena_alloc(&a, 1 << 20);
	char *small = arena_alloc(&a, 10);
	big[(1 << 20) - 1] = 1;
	small[9] = 1;
	CHECK("arena-alignment", ((uintptr_t)big % 16) == 0 && ((uintptr_t)small % 16) == 0);
	CHECK("arena-printf", !strcmp(arena_printf(&a, "%d-%s", 42, "x"), "42-x"));
	arena_free(&a);
	/* u_json_text: UTF-8 as it is (jansson escapes on output), other bytes as \xNN */
	json_t *j = u_json_text("a\"b\\c\n\x01 caf\xc3\xa9");
	char *t = json_dumps(j, JSON_ENCODE_ANY);
	CHECK("json-text-utf8", t && !strcmp(t, "\"a\\\"b\\\\c\\n\\u0001 caf\xc3\xa9\""));
	free(t);
	json_decref(j);
	j = u_json_text("bad \xb3\xff byte");
	CHECK("json-text-not-utf8", j && !strcmp(json_string_value(j), "bad \\xb3\\xff byte"));
	json_decref(j);
}

/* bd_ptx_part: a text without marks is one part; marked parts come back
 * without their mark lines, in order, and nothing after the last. */
static void test_ptx_parts(void)
{
	char one[] = ".version 7.8\n.target sm_70\n";
	BdPtx x = {.text = one, .len = strlen(one)};
	size_t len = 0;
	const char *p = bd_ptx_part(&x, NULL, &len);
	CHECK("ptx-parts-single", p == one && len == x.len && !bd_ptx_part(&x, p + len, &len));
	char many[] = BD_PTX_PART "1 of 3\nA\nB\n" BD_PTX_PART "2 of 3\nC\n" BD_PTX_PART "3 of 3\nD\n// sentinel: x\n";
	x = (BdPtx){.text = many, .len = strlen(many)};
	const char *want[] = {"A\nB\n", "C\n", "D\n// sentinel: x\n"};
	size_t k = 0;
	bool ok = true;
	for (p = bd_ptx_part(&x, NULL, &len); p; p = bd_ptx_part(&x, p + len, &len), k++)
		ok = ok && k < 3 && len == strlen(want[k]) && !memcmp(p, want[k], len);
	CHECK("ptx-parts-marked", ok && k == 3);
	x.len = 0;
	CHECK("ptx-parts-empty", !bd_ptx_part(&x, NULL, &len));
}

/* rx_compile: patterns of =~ (RE2 syntax, fully anchored) against strings,
 * each case through the DFA the runtime walks; then the errors, each at
 * its offset in the pattern. */
static void test_regex(void)
{
	static const struct { const char *pat, *str; bool want; } m[] = {
		/* anchoring: the whole string */
		{"abc", "abc", true}, {"abc", "xabc", false}, {"abc", "abcx", false}, {"abc", "ab", false},
		{"", "", true}, {"", "a", false}, {"^abc$", "abc", true}, {"^abc", "abcd", false},
		{"abc$", "zabc", false}, {"a$b", "ab", false}, {"a^b", "ab", false}, {"^$", "", true},
		{"\\Aab\\z", "ab", true},
		/* . is any byte, newline too */
		{".", "a", true}, {".", "", false}, {".", "ab", false}, {".*", "", true}, {".*", "any\nthing", true},
		{".*@.*", "veth1@4026532201", true}, {".*@.*", "eth0", false}, {".*@.*", "@", true},
		{"@", "a@b", false}, {"a.c", "a\xc3\xa9" "c", false},
		/* classes */
		{"[a-z]+", "abc", true}, {"[a-z]+", "aBc", false}, {"[a-z0-9_]+", "sda_1", true},
		{"[^0-9]+", "abc", true}, {"[^0-9]+", "ab1", false}, {"[]a]", "]", true}, {"[a-]", "-", true},
		{"[-a]", "-", true}, {"[\\d.]+", "1.5", true}, {"[\\]]", "]", true}, {"[[:digit:]]+", "42", true},
		{"[[:alpha:]]", "7", false}, {"[[:^digit:]]", "x", true}, {"[\\x41-\\x43]", "B", true},
		/* escapes */
		{"\\d+", "0123", true}, {"\\d+", "12a", false}, {"\\D", "a", true}, {"\\w+", "a_Z9", true},
		{"\\W", "-", true}, {"\\s", " ", true}, {"\\s", "\v", false}, {"\\S", "x", true},
		{"a\\.b", "a.b", true}, {"a\\.b", "axb", false}, {"\\\\", "\\", true}, {"\\*\\+\\?\\(\\)", "*+?()", true},
		{"\\t\\n", "\t\n", true}, {"\\x41\\x{42}", "AB", true}, {"\\\"", "\"", true},
		/* alternation and groups */
		{"a|b", "a", true}, {"a|b", "b", true}, {"a|b", "ab", false}, {"ab|cd", "cd", true},
		{"^(fuse.*|tmpfs|nsfs)$", "fuse.sshfs", true}, {"^(fuse.*|tmpfs|nsfs)$", "tmpfs", true},
		{"^(fuse.*|tmpfs|nsfs)$", "ext4", false}, {"^(fuse.*|tmpfs|nsfs)$", "tmpfs2", false},
		{"(?:ab)+", "ababab", true}, {"(?:ab)+", "aba", false}, {"(?P<x>a)b", "ab", true},
		{"a|", "", true}, {"()", "", true}, {"(a|b)*c", "abbac", true},
		/* repeats */
		{"a*", "", true}, {"a*", "aaaa", true}, {"a+", "", false}, {"a?", "", true}, {"a?", "aa", false},
		{"a{3}", "aaa", true}, {"a{3}", "aa", false}, {"a{3}", "aaaa", false}, {"a{2,}", "aaaaa", true},
		{"a{2,}", "a", false}, {"a{1,3}", "aaa", true}, {"a{1,3}", "aaaa", false}, {"a{0}", "", true},
		{"(ab){2}", "abab", true}, {"a*?", "aa", true}, {"a{,3}", "a{,3}", true}, {"a{", "a{", true},
		/* flags: (?i), scoped */
		{"(?i)eth", "ETH", true}, {"(?i:a)b", "Ab", true}, {"(?i:a)b", "AB", false}, {"(?i)[a-c]", "B", true},
		{"(?i)[^a]", "A", false}, {"(?s).", "\n", true},
		/* bytes: UTF-8 literals are their bytes, repeated whole */
		{"caf\xc3\xa9", "caf\xc3\xa9", true}, {"\xc3\xa9+", "\xc3\xa9\xc3\xa9", true}, {"\xc3\xa9+", "\xc3\xa9\xa9", false},
		/* names as the rules use them */
		{"veth.*|docker[0-9]+|br-[0-9a-f]{12}", "br-0123456789ab", true},
		{"veth.*|docker[0-9]+|br-[0-9a-f]{12}", "br-0123", false}, {"(sd|vd|nvme)[a-z0-9]*", "nvme0n1", true},
		{"/(run|dev)(/.*)?", "/run/user/1000", true}, {"/(run|dev)(/.*)?", "/var", false},
		{"kworker/.*", "kworker/0:1H", true}, {"k.*d", "kthreadd", true},
	};
	int bad = 0, n = 0;
	for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
		Rx rx;
		RxErr err;
		char name[64];
		snprintf(name, sizeof name, "regex-match-%zu", i);
		int rc = rx_compile(m[i].pat, strlen(m[i].pat), &rx, &err);
		bool ok = rc == 0 && rx_match(&rx, m[i].str, strlen(m[i].str)) == m[i].want;
		if (!ok) {
			bad++;
			printf("  /%s/ on \"%s\": want %d (%s)\n", m[i].pat, m[i].str, m[i].want, rc ? err.msg : "");
		}
		n++;
		CHECK(name, ok);
		if (rc == 0)
			rx_free(&rx);
	}
	CHECK("regex-match-table", bad == 0 && n >= 60);

	/* byte classes: bytes nothing tells apart share one */
	Rx rx;
	RxErr err;
	CHECK("regex-classes-few", rx_compile("[a-z]+[0-9]", 11, &rx, &err) == 0 && rx.nclass == 3 &&
	      rx.cls['a'] == rx.cls['q'] && rx.cls['0'] != rx.cls['a'] && rx.cls['-'] != rx.cls['a'] && rx.nstates == 3);
	rx_free(&rx);
	CHECK("regex-classes-dot", rx_compile(".*", 2, &rx, &err) == 0 && rx.nclass == 1 && rx.nstates == 1 && rx.accept[0]);
	rx_free(&rx);
	CHECK("regex-dead", rx_compile("ab", 2, &rx, &err) == 0 && rx.next[0 * rx.nclass + rx.cls['x']] == RX_DEAD);
	rx_free(&rx);

	/* the errors, each where it is */
	static const struct { const char *pat; size_t off; const char *msg; } e[] = {
		{"(ab", 0, "'(' is not closed"}, {"ab)", 2, "')' has no '('"}, {"*a", 0, "nothing to repeat"},
		{"a**", 2, "repeats a repeat"}, {"a{101}", 1, "repeat count above 100"}, {"a{3,2}", 1, "below the minimum"},
		{"[abc", 0, "'[' is not closed"}, {"[z-a]", 1, "runs backwards"}, {"(a)\\1", 3, "backreferences"},
		{"a(?=b)", 1, "lookaround"}, {"(?<!a)b", 0, "lookaround"}, {"\\bx", 0, "word boundary"},
		{"ab\\", 2, "lone '\\'"}, {"\\q", 0, "unknown escape"}, {"(?m)^a", 2, "multi-line"},
		{"(?z)", 2, "unknown flag"}, {"(?)", 0, "names no flag"}, {"[[:nope:]]", 1, "unknown class"}, {"\\pL", 0, "Unicode"},
		{"x{2}{3}", 4, "repeats a repeat"}, {"{2}", 0, "nothing to repeat"}, {"^*", 1, "anchor"},
		{"[\xc3\xa9]", 1, "more than one byte"}, {"\\x4", 0, "hex digits"}, {"\\x{100}", 0, "above ff"},
		/* a DFA over the cap: the 20th byte from the end is an 'a' (2^20 states) */
		{"[ab]*a[ab]{20}", 0, "more than 512 DFA states"},
		/* an NFA over its cap: at the outer repeat */
		{"x(a{100}){100}", 9, "too large"},
	};
	for (size_t i = 0; i < sizeof e / sizeof *e; i++) {
		char name[64];
		snprintf(name, sizeof name, "regex-error-%zu", i);
		int rc = rx_compile(e[i].pat, strlen(e[i].pat), &rx, &err);
		bool ok = rc < 0 && err.off == e[i].off && strstr(err.msg, e[i].msg);
		if (!ok)
			printf("  /%s/: want error at %zu \"%s\", got rc %d at %zu \"%s\"\n", e[i].pat, e[i].off, e[i].msg,
			       rc, err.off, err.msg);
		CHECK(name, ok);
		if (rc == 0)
			rx_free(&rx);
	}
	char hundred[101];
	memset(hundred, 'x', 100);
	CHECK("regex-repeat-100", rx_compile("x{100}", 6, &rx, &err) == 0 && rx_match(&rx, hundred, 100) &&
	      !rx_match(&rx, hundred, 99));
	rx_free(&rx);
	/* deep nesting is bounded */
	char deep[200];
	memset(deep, '(', 100);
	memset(deep + 100, ')', 100);
	CHECK("regex-error-depth", rx_compile(deep, 200, &rx, &err) < 0 && strstr(err.msg, "nested"));
	/* a state count just under the cap compiles */
	CHECK("regex-cap-under", rx_compile("[ab]*a[ab]{7}", 13, &rx, &err) == 0 && rx.nstates <= RX_MAX_STATES &&
	      rx_match(&rx, "bbabbbbbbb", 10) && !rx_match(&rx, "bbbbbbbbbb", 10));
	rx_free(&rx);
}

int main(void)
{
	test_durations();
	test_units();
	test_edit_distance();
	test_printable();
	test_oom_everywhere();
	test_sb_build_oom();
	test_catalog();
	test_scalar_locations();
	test_src_loc_utf8();
	test_parse_rule();
	test_max_errors();
	test_arena();
	test_ptx_parts();
	test_regex();
	printf("unit: %d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
