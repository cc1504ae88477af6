/* tmpl.h - annotation templates: one grammar for the checker and the notifier.
 *
 *   template -> { TEXT | '{{' SP* VAR [ SP* '|' SP* FORMAT ] SP* '}}' }
 *   VAR      -> '$value' | '$alert' | '$severity' | '$target' | '$kernel_log'
 *             | '$labels.' NAME
 *   FORMAT   -> 'humanize' | 'percent' | 'bytes' | 'duration'
 *
 * tp_next walks a template part by part; the checker reports what it finds
 * (rulefile.c), the notifier renders it (notifier/notify.c).
 */
#ifndef SENTINEL_TMPL_H
#define SENTINEL_TMPL_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { TP_TEXT, TP_VAR, TP_UNCLOSED } TpKind;
/* TPV_KERNEL_LOG: the watched kernel's last log lines, read from its RAM
 * when the alert fires (notify.h) */
typedef enum { TPV_VALUE, TPV_ALERT, TPV_SEVERITY, TPV_TARGET, TPV_KERNEL_LOG, TPV_LABEL, TPV_UNKNOWN } TpVar;
typedef enum { TPF_NONE, TPF_HUMANIZE, TPF_PERCENT, TPF_BYTES, TPF_DURATION, TPF_UNKNOWN } TpFormat;

typedef struct TpPart {
	TpKind kind;
	size_t off, len;              /* TP_TEXT: the text; TP_VAR: the whole {{...}} */
	size_t var_off, var_len;      /* TP_VAR: the variable */
	size_t fmt_off, fmt_len;      /* TP_VAR with a format (fmt_len 0: none) */
	bool has_fmt;
	TpVar var;
	TpFormat fmt;
	size_t label_off, label_len;  /* TPV_LABEL: the label's name */
} TpPart;

/* The next part of s at *pos; false at the end.  A '{{' without '}}' is
 * one TP_UNCLOSED part and the end. */
bool tp_next(const char *s, size_t *pos, TpPart *p);
/* A value as a format shows it: 1.2k, 93%, 1.5 GiB, 1m30s. */
void tp_format(double v, TpFormat f, char *buf, size_t n);

#endif
