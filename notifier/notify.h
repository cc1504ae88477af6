/* notify.h - where alerts go: the sinks.
 *
 * The engine hands over each alert event (pending, firing, resolved,
 * cancelled) with the rule it belongs to; the notifier renders the rule's
 * annotation templates (tmpl.h) with the event's value, labels and target
 * and writes it to every configured sink:
 *
 *   log     one line per event on stderr; under systemd a journal entry
 *           with fields of its own (journal.h: ALERT=, SEVERITY=, ...)
 *   jsonl   one JSON object per line appended to a file, written and
 *           synced on a thread of its own (jsonl.h: a slow or stalled
 *           disk holds that thread, not the caller), once per drain of
 *           the alert ring (nt_flush)
 *   alertmanager, webhook
 *           firing and resolved alerts over HTTP, on a thread of their own
 *           (http.h): labels alertname, severity, target, the target's own
 *           ([target] labels =), the rule's (which win over the target's)
 *           and the entity's; the rendered annotations (and description)
 *
 * Critical events, and those of rules whose templates name $kernel_log,
 * carry the target's last log lines (NtEvent.kernel_log, read by sentineld
 * from the printk ring): annotation kernel_log, journal field KERNEL_LOG.
 * The rendering (nt_render, nt_entity_labels, nt_kind_name,
 * nt_wants_kernel_log) lives in render.c, apart from the sinks, for the
 * compiler's back end; everything else here is sentineld's alone.
 *
 * Ownership: a Notifier owns its sinks' files; nt_close().
 */
#ifndef SENTINEL_NOTIFY_H
#define SENTINEL_NOTIFY_H

#include "bundle.h"
#include "snrt.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct json_t;

typedef struct NtConfig {
	bool log;                 /* stderr / journal */
	bool log_pending;         /* also pending and cancelled events */
	const char *jsonl;        /* path, or NULL */
	const char *target;       /* $target: the monitored machine's name (events may name their own) */
	bool several;             /* several targets: the log's lines say which */
	const char *alertmanager; /* Alertmanager base URLs, comma-separated (http.h), or NULL */
	const char *webhook;      /* webhook URLs, comma-separated, or NULL */
	const char *external_url; /* generatorURL / externalURL, or NULL */
	uint64_t resend_ns;       /* firing alerts re-sent to Alertmanager this often (0: 1 min) */
	uint64_t tick_ns;         /* the engine's tick */
	const char *spool;        /* the remote sinks' spool folder, or NULL */
	uint64_t spool_max;       /* its bound in bytes (0: 64 MiB) */
	size_t jsonl_queue_max;   /* bytes of alert lines waiting for the jsonl file's disk (0: 16 MiB, jsonl.h) */
} NtConfig;

typedef struct NtEvent {
	const BdRule *rule;
	SnEventKind kind;
	double value;
	int64_t entity;           /* a CPU, a PID, or -1 (rule->entity says which) */
	const char *comm;         /* the task's name (a PID), an object's name, or NULL; a mount's is
				   * sn_alert.comm's SN_OBJ_NAME bytes, its labels after its name */
	uint64_t tick;
	struct timespec when;     /* wall clock */
	const char *kernel_log;   /* the target's last log lines ($kernel_log), or NULL (borrowed) */
	const char *target;       /* the target it is about (several targets), or NULL: NtConfig's */
	char *const *tlabels;     /* the target's labels ([target] labels =): [2 * ntlabels] keys and values */
	unsigned ntlabels;
} NtEvent;

typedef struct Notifier Notifier;

int nt_open(const NtConfig *c, Notifier **out, char *err, size_t n);
void nt_close(Notifier *nt);
/* Send one event to every sink.  Never blocks on a slow sink: the jsonl
 * file's and the remote sinks' threads do the waiting (the log sink
 * writes stderr, journald's stream under systemd). */
void nt_event(Notifier *nt, const NtEvent *e);
/* After a run of nt_event calls (a drain of the alert ring): the remote
 * sinks' events go to disk together (one sync) and on their way.  Events
 * are not delivered before it. */
void nt_flush(Notifier *nt);
/* A restart (sentineld's state file): a firing alert restored tells
 * Alertmanager it still fires, with the startsAt it had (starts: from
 * nt_firing_starts before the restart, by labels; else e->when); no
 * other sink hears of it (it is no new event). */
void nt_restored(Notifier *nt, const NtEvent *e, const struct json_t *starts);
struct json_t *nt_firing_starts(Notifier *nt, const char *target);
/* The remote sinks' counters (all zero without them). */
struct NhStats;
void nt_delivery(Notifier *nt, struct NhStats *out);
/* How many fdatasyncs of the jsonl file failed (each logged: the first, then every 1000th). */
uint64_t nt_jsonl_sync_errors(const Notifier *nt);
/* How many alert lines the jsonl file did not take: their write failed (ENOSPC, EIO),
 * or its disk was so far behind that they were dropped (jsonl.h; logged: the first,
 * then every 1000th). */
uint64_t nt_jsonl_write_errors(const Notifier *nt);
/* Wait up to timeout_ns for the jsonl file to have written and synced
 * every event so far: 0, or -ETIMEDOUT (its disk is stalled). */
int nt_settle(Notifier *nt, uint64_t timeout_ns);
/* A note of the engine's own (started, reloaded, target lost): the log sink
 * only.  level: 3 error, 4 warning, 6 info. */
void nt_log(Notifier *nt, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

const char *nt_kind_name(SnEventKind k);
/* The entity's labels of event e: cpu="N", pid="N" and comm="NAME", or an
 * object's name (disk="vda", cgroup="system.slice/cron.service"; a
 * mount's mountpoint="/var", then device="/dev/vda2" and fstype="ext4"
 * where it has them, as node_exporter labels it); returns how many (0 to
 * NT_ENTITY_LABELS) it wrote to key[] and val[]. */
#define NT_LABEL_MAX SN_OBJ_NAME
#define NT_ENTITY_LABELS 3
int nt_entity_labels(const NtEvent *e, const char *key[NT_ENTITY_LABELS], char val[NT_ENTITY_LABELS][NT_LABEL_MAX]);
/* Whether events of rule r carry the target's kernel log: it is critical,
 * or one of its templates names $kernel_log. */
bool nt_wants_kernel_log(const BdRule *r);
/* Render template tmpl for event e into a malloc'd string. */
char *nt_render(const char *tmpl, const NtEvent *e, const char *target);

#endif
