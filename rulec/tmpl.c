/* tmpl.c - annotation templates (see tmpl.h). */
#include "tmpl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const tp_vars[] = {"$value", "$alert", "$severity", "$target", "$kernel_log"};
static const char *const tp_fmts[] = {"humanize", "percent", "bytes", "duration"};

static bool tp_is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && !memcmp(s, word, len);
}

bool tp_next(const char *s, size_t *pos, TpPart *p)
{
	memset(p, 0, sizeof *p);
	size_t at = *pos;
	if (!s[at])
		return false;
	const char *open = strstr(s + at, "{{");
	if (open != s + at) {                         /* text up to the next '{{' */
		size_t end = open ? (size_t)(open - s) : strlen(s);
		p->kind = TP_TEXT;
		p->off = at;
		p->len = end - at;
		*pos = end;
		return true;
	}
	const char *close = strstr(open + 2, "}}");
	if (!close) {
		p->kind = TP_UNCLOSED;
		p->off = at;
		p->len = strlen(s + at);
		*pos = at + p->len;
		return true;
	}
	p->kind = TP_VAR;
	p->off = at;
	p->len = (size_t)(close + 2 - open);
	const char *b = open + 2, *e = close;
	while (b < e && *b == ' ')
		b++;
	while (e > b && e[-1] == ' ')
		e--;
	const char *bar = memchr(b, '|', (size_t)(e - b));
	const char *ve = bar ? bar : e;
	while (ve > b && ve[-1] == ' ')
		ve--;
	p->var_off = (size_t)(b - s);
	p->var_len = (size_t)(ve - b);
	p->var = TPV_UNKNOWN;
	for (size_t i = 0; i < sizeof tp_vars / sizeof *tp_vars; i++)
		if (tp_is(b, p->var_len, tp_vars[i]))
			p->var = (TpVar)i;
	if (p->var == TPV_UNKNOWN && p->var_len > 8 && !memcmp(b, "$labels.", 8)) {
		p->var = TPV_LABEL;
		p->label_off = p->var_off + 8;
		p->label_len = p->var_len - 8;
	}
	p->fmt = TPF_NONE;
	if (bar) {
		const char *f = bar + 1;
		while (f < e && *f == ' ')
			f++;
		p->has_fmt = true;
		p->fmt_off = (size_t)(f - s);
		p->fmt_len = (size_t)(e - f);
		p->fmt = TPF_UNKNOWN;
		for (size_t i = 0; i < sizeof tp_fmts / sizeof *tp_fmts; i++)
			if (tp_is(f, p->fmt_len, tp_fmts[i]))
				p->fmt = (TpFormat)(i + 1);
	}
	*pos = (size_t)(close + 2 - s);
	return true;
}

void tp_format(double v, TpFormat f, char *buf, size_t n)
{
	if (isnan(v)) {
		snprintf(buf, n, "unknown");
		return;
	}
	switch (f) {
	case TPF_PERCENT:
		snprintf(buf, n, "%.0f%%", v * 100);
		return;
	case TPF_BYTES: {
		static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
		int i = 0;
		double a = fabs(v);
		while (a >= 1024 && i < 5) {
			a /= 1024;
			v /= 1024;
			i++;
		}
		snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
		return;
	}
	case TPF_DURATION: {
		double s = v;
		if (s < 1)
			snprintf(buf, n, "%.0fms", s * 1e3);
		else if (s < 60)
			snprintf(buf, n, "%.3gs", s);
		else if (s < 3600)
			snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
		else
			snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
		return;
	}
	case TPF_HUMANIZE: {
		static const char *const u[] = {"", "k", "M", "G", "T", "P"};
		int i = 0;
		while (fabs(v) >= 1000 && i < 5) {
			v /= 1000;
			i++;
		}
		snprintf(buf, n, "%.4g%s", v, u[i]);
		return;
	}
	default:
		snprintf(buf, n, "%.6g", v);
		return;
	}
}
