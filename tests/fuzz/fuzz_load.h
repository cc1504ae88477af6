/* fuzz_load.h - what both fuzz targets do first: arbitrary bytes through
 * the whole front end (YAML loader, schema, lexer, parser, checker). */
#ifndef SENTINEL_FUZZ_LOAD_H
#define SENTINEL_FUZZ_LOAD_H

#include "diag.h"
#include "rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline void fuzz_load(const uint8_t *data, size_t size, RuleSet *rs, DiagCtx *d)
{
	char *text = malloc(size + 1);
	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = 0;
	CheckOpts o = {.tick = 0.1};
	rf_load_buffer(rs, "fuzz.yaml", text, size, d, &o);
	rs_check_all(rs, d);
}

#endif
