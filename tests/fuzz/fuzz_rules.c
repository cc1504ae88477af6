/* libFuzzer target: the whole rulec front end (YAML loader, schema, lexer,
 * parser, checker and the diagnostic formatter) on arbitrary bytes. */
#include "diag.h"
#include "rules.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	RuleSet rs = {0};
	DiagCtx d = {.max_errors = 200};
	CheckOpts o = {.tick = 0.1};
	rf_load_buffer(&rs, "fuzz.yaml", text, size, &d, &o);
	rs_check_all(&rs, &d);
	diag_sort(&d);
	/* format everything, as rulec would, into a null sink */
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		diag_print_text(&d, null, true);
		diag_print_json(&d, null);
		fclose(null);
	}
	rs_free(&rs);
	diag_free(&d);
	return 0;
}
