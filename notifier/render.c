/* render.c - what every sink shows of an event: its kind's name, the
 * entity's labels and the rendered templates (notify.h).  Apart from the
 * sinks, so the compiler's back end (rulec test renders annotations) needs
 * none of their libraries. */
#include "notify.h"
#include "tmpl.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

const char *nt_kind_name(SnEventKind k)
{
	switch (k) {
	case SN_EV_PENDING: return "pending";
	case SN_EV_FIRING: return "firing";
	case SN_EV_RESOLVED: return "resolved";
	case SN_EV_CANCELLED: return "cancelled";
	default: return "?";
	}
}

int nt_entity_labels(const NtEvent *e, const char *key[NT_ENTITY_LABELS], char val[NT_ENTITY_LABELS][NT_LABEL_MAX])
{
	if (e->entity == SN_ENT_OVERFLOW && e->rule->per_entity) {
		/* a per-entity rule's overflow alert: $value entities hold with
		 * no alert of their own (max_alerts); one alert, whatever $value */
		key[0] = "overflow";
		snprintf(val[0], NT_LABEL_MAX, "true");
		return 1;
	}
	if (e->entity < 0 || e->rule->entity < 0)
		return 0;
	if (ent_is_obj(e->rule->entity)) {       /* an object (a disk): its name */
		if (!e->comm || !*e->comm)
			return 0;
		key[0] = cat_entities[e->rule->entity].label;
		u_printable(val[0], NT_LABEL_MAX, e->comm, NT_LABEL_MAX, "");   /* kernel bytes: any */
		if (e->rule->entity != ENT_FS)
			return 1;
		/* a mount's: "MOUNTPOINT\0FSTYPE\0DEVICE\0" in its SN_OBJ_NAME bytes
		 * (snrt.h), the labels while they fit; an empty one is none */
		static const char *const fs_keys[2] = {"fstype", "device"};
		const char *s[2] = {NULL, NULL};
		size_t at = strnlen(e->comm, SN_OBJ_NAME) + 1;
		for (int f = 0; f < 2 && at < SN_OBJ_NAME; f++) {
			s[f] = e->comm + at;
			at += strnlen(s[f], SN_OBJ_NAME - at) + 1;
		}
		int n = 1;
		for (int f = 1; f >= 0; f--)             /* device, then fstype: the order people read them */
			if (s[f] && *s[f]) {
				key[n] = fs_keys[f];
				u_printable(val[n++], NT_LABEL_MAX, s[f], SN_OBJ_NAME - (size_t)(s[f] - e->comm), "");
			}
		return n;
	}
	key[0] = e->rule->entity == ENT_CPU ? "cpu" : "pid";
	snprintf(val[0], NT_LABEL_MAX, "%lld", (long long)e->entity);
	if (e->rule->entity == ENT_CPU)
		return 1;
	key[1] = "comm";
	u_printable(val[1], NT_LABEL_MAX, e->comm ? e->comm : "", NT_LABEL_MAX, "");
	return 2;
}

/* Label `name` of the event: the rule's own, else the entity's (a rule's
 * label of the same name wins, as in Prometheus' alerting rules). */
static void nt_label(StrBuf *b, const NtEvent *e, const char *name, size_t len)
{
	const BdRule *r = e->rule;
	for (size_t i = 0; i < r->nlabels; i++)
		if (strlen(r->labels[i].key) == len && !memcmp(r->labels[i].key, name, len)) {
			sb_puts(b, r->labels[i].value);
			return;
		}
	const char *key[NT_ENTITY_LABELS];
	char val[NT_ENTITY_LABELS][NT_LABEL_MAX];
	for (int i = 0, k = nt_entity_labels(e, key, val); i < k; i++)
		if (strlen(key[i]) == len && !memcmp(key[i], name, len))
			sb_puts(b, val[i]);
}

typedef struct NtRender {
	const char *tmpl, *target;
	const NtEvent *e;
} NtRender;

static void nt_render_into(StrBuf *b, const void *ctx)
{
	const NtRender *R = ctx;
	const NtEvent *e = R->e;
	size_t pos = 0;
	TpPart p;
	char buf[64];
	while (tp_next(R->tmpl, &pos, &p)) {
		if (p.kind != TP_VAR) {
			sb_putn(b, R->tmpl + p.off, p.len);
			continue;
		}
		switch (p.var) {
		case TPV_VALUE:
			tp_format(e->value, p.fmt == TPF_UNKNOWN ? TPF_NONE : p.fmt, buf, sizeof buf);
			sb_puts(b, buf);
			break;
		case TPV_ALERT: sb_puts(b, e->rule->name); break;
		case TPV_SEVERITY: sb_puts(b, e->rule->severity); break;
		case TPV_TARGET: sb_puts(b, R->target); break;
		case TPV_KERNEL_LOG: sb_puts(b, e->kernel_log ? e->kernel_log : "(the kernel log could not be read)"); break;
		case TPV_LABEL: nt_label(b, e, R->tmpl + p.label_off, p.label_len); break;
		default: sb_putn(b, R->tmpl + p.off, p.len); break;
		}
	}
}

/* Out of memory: NULL (the callers send the alert with that text empty),
 * never an abort: this runs on sentineld's main loop. */
char *nt_render(const char *tmpl, const NtEvent *e, const char *target)
{
	NtRender R = {.tmpl = tmpl, .target = target, .e = e};
	return sb_build(nt_render_into, &R, NULL);
}

static bool nt_uses_kernel_log(const char *tmpl)
{
	size_t pos = 0;
	TpPart p;
	while (tmpl && tp_next(tmpl, &pos, &p))
		if (p.kind == TP_VAR && p.var == TPV_KERNEL_LOG)
			return true;
	return false;
}

bool nt_wants_kernel_log(const BdRule *r)
{
	if (!strcmp(r->severity, "critical") || nt_uses_kernel_log(r->description))
		return true;
	for (size_t i = 0; i < r->nannotations; i++)
		if (nt_uses_kernel_log(r->annotations[i].value))
			return true;
	return false;
}
