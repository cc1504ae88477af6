/* units.h - units of number literals and durations. */
#ifndef SENTINEL_UNITS_H
#define SENTINEL_UNITS_H

#include "ast.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct Unit {
	const char *name;
	double scale;        /* to base units: seconds, bytes, or 1 */
	Dim dim;
	bool percent;
} Unit;

/* The unit spelled s[0..n), or NULL. */
const Unit *unit_lookup(const char *s, size_t n);
/* A comma-separated list of every unit, for messages. */
const char *unit_all(void);

/* Parse a duration such as 500ms, 5s, 1m30s, 1.5h into seconds.
 * Returns 0, or -1 with *bad set to the offset of the first bad character. */
int unit_parse_duration(const char *s, size_t n, double *sec, size_t *bad);

/* Format seconds compactly (10ms, 1.5s, 2m) into buf. */
const char *unit_fmt_duration(double sec, char *buf, size_t n);

#endif
