/* rx.h - patterns of =~ and !~: RE2 syntax, fully anchored, compiled to a DFA.
 *
 * rx_compile parses a pattern (the subset below), builds a Thompson NFA
 * and turns it into a DFA by subset construction over byte classes: bytes
 * no part of the pattern tells apart share a class, so the table is
 * states x classes.  The DFA is what the generated code carries (constant
 * arrays) and what the runtime walks over a name's bytes
 * (sn_obj_str_match, sn_task_comm_match): no regex engine on the GPU.
 *
 * Supported: literals, '.', escapes (\. \\ \d \D \w \W \s \S \t \n \r \f
 * \v \xHH, any escaped punctuation), classes [a-z0-9_] and [^...] with
 * ranges, escapes and [:alpha:]-style names, groups ( ) (?: ) (?P<n> ),
 * alternation, * + ? (a trailing ? for laziness is accepted: the match is
 * whole either way), {n} {n,} {n,m} up to 100, ^ and $ (the pattern is
 * anchored at both ends anyway, as Prometheus anchors label matchers),
 * flags (?i) (?s) (?U) and (?i: ).  Matching is by bytes, '.' is any
 * byte ((?s) is the default, as in Prometheus).  Backreferences,
 * lookaround, \b, \p and (?m) are errors.
 */
#ifndef SENTINEL_RX_H
#define SENTINEL_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RX_MAX_STATES 512u    /* DFA states; more is an error */
#define RX_MAX_REPEAT 100     /* n and m of {n,m} */
#define RX_DEAD 0xffffu       /* a transition into no state: no match */

typedef struct Rx {
	unsigned nstates;         /* state 0 is the start */
	unsigned nclass;          /* byte classes */
	uint8_t cls[256];         /* byte -> class */
	uint16_t *next;           /* [nstates * nclass]: the next state, or RX_DEAD */
	uint8_t *accept;          /* [nstates]: 1 where the input may end */
} Rx;

typedef struct RxErr {
	size_t off;               /* byte offset of the offending character in the pattern */
	char msg[200];
} RxErr;

/* Compile pat (len bytes).  0 and *out filled (free it with rx_free), or
 * -1 and *err. */
int rx_compile(const char *pat, size_t len, Rx *out, RxErr *err);
void rx_free(Rx *rx);
/* Does the whole of s (n bytes) match? */
bool rx_match(const Rx *rx, const char *s, size_t n);

#endif
