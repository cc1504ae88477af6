/* journal.h - the log sink under systemd: journald's native protocol.
 *
 * When sentineld's stderr is journald's stream (systemd sets
 * JOURNAL_STREAM=DEVICE:INODE of it), each alert event is one journal entry
 * with fields of its own (sd_journal_sendv): MESSAGE, PRIORITY (2 critical,
 * 4 warning, 6 info), SYSLOG_IDENTIFIER=sentineld, ALERT, ALERT_STATE,
 * SEVERITY, TARGET, VALUE, the entity (ALERT_CPU, or ALERT_PID and
 * ALERT_COMM), RULE_FILE, SUMMARY and, for critical alerts, KERNEL_LOG.
 * So `journalctl ALERT=CpuOverload` or `journalctl SEVERITY=critical` find
 * them.  Elsewhere, and if journald refuses an entry, the plain stderr line
 * is written instead (notify.c).
 */
#ifndef SENTINEL_JOURNAL_H
#define SENTINEL_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct NjField {
	const char *key;      /* upper case, digits and '_' (journald's rule) */
	const char *value;    /* any bytes up to NUL; may span lines */
} NjField;

/* Whether stderr is journald's stream. */
bool nj_attached(void);
/* One entry: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER and fields.  0, or -errno
 * (journald not there, out of memory). */
int nj_send(int priority, const char *message, const NjField *f, size_t nf);

#endif
