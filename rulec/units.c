/* units.c - the unit table and duration parsing. */
#include "units.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T {1, 0}
#define B {0, 1}
#define S {0, 0}

static const Unit unit_table[] = {
	{"%", 0.01, S, true},
	{"ns", 1e-9, T, false}, {"us", 1e-6, T, false}, {"\xc2\xb5s", 1e-6, T, false},
	{"ms", 1e-3, T, false}, {"s", 1, T, false}, {"m", 60, T, false},
	{"min", 60, T, false}, {"h", 3600, T, false}, {"d", 86400, T, false}, {"w", 604800, T, false},
	{"y", 31536000, T, false},
	{"B", 1, B, false},
	{"KiB", 1024.0, B, false}, {"MiB", 1048576.0, B, false},
	{"GiB", 1073741824.0, B, false}, {"TiB", 1099511627776.0, B, false},
	{"KB", 1e3, B, false}, {"MB", 1e6, B, false}, {"GB", 1e9, B, false}, {"TB", 1e12, B, false},
	{"pages", 4096, B, false}, {"page", 4096, B, false},
};

const Unit *unit_lookup(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof unit_table / sizeof unit_table[0]; i++)
		if (strlen(unit_table[i].name) == n && !memcmp(unit_table[i].name, s, n))
			return &unit_table[i];
	return NULL;
}

const char *unit_all(void)
{
	return "%, ns, us, ms, s, m, h, d, w, y, B, KiB, MiB, GiB, TiB, KB, MB, GB, TB, pages";
}

int unit_parse_duration(const char *s, size_t n, double *sec, size_t *bad)
{
	size_t i = 0;
	double total = 0;
	int parts = 0;
	while (i < n && s[i] == ' ')
		i++;
	while (i < n) {
		size_t start = i;
		while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'))
			i++;
		if (i == start) { *bad = i; return -1; }
		char num[64];
		size_t nl = i - start < 63 ? i - start : 63;
		memcpy(num, s + start, nl);
		num[nl] = 0;
		char *e;
		double v = strtod(num, &e);
		if (*e) { *bad = start; return -1; }
		size_t us = i;
		while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (unsigned char)s[i] >= 0x80))
			i++;
		const Unit *u = unit_lookup(s + us, i - us);
		if (!u || u->dim.time != 1) { *bad = us; return -1; }
		total += v * u->scale;
		parts++;
		while (i < n && s[i] == ' ')
			i++;
	}
	if (!parts || !isfinite(total)) { *bad = 0; return -1; }
	*sec = total;
	return 0;
}

const char *unit_fmt_duration(double sec, char *buf, size_t n)
{
	if (sec != 0 && sec < 1e-3)
		snprintf(buf, n, "%gus", sec * 1e6);
	else if (sec != 0 && sec < 1)
		snprintf(buf, n, "%gms", sec * 1e3);
	else if (sec < 120)
		snprintf(buf, n, "%gs", sec);
	else if (sec < 3600)
		snprintf(buf, n, "%gm", sec / 60);
	else if (sec < 86400 * 2)
		snprintf(buf, n, "%gh", sec / 3600);
	else if (fmod(sec, 604800) == 0)
		snprintf(buf, n, "%gw", sec / 604800);
	else
		snprintf(buf, n, "%gd", sec / 86400);
	return buf;
}
