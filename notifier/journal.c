/* journal.c - journald's native protocol (journal.h). */
#include "journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#define NJ_MAX_FIELDS 24

bool nj_attached(void)
{
	const char *s = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	return s && sscanf(s, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static int nj_add(char **buf, size_t *n, const char *key, const char *value)
{
	size_t len = strlen(key) + 1 + strlen(value) + 1;
	if (!(buf[*n] = malloc(len)))
		return -ENOMEM;
	snprintf(buf[*n], len, "%s=%s", key, value);
	(*n)++;
	return 0;
}

int nj_send(int priority, const char *message, const NjField *f, size_t nf)
{
	struct iovec iov[NJ_MAX_FIELDS + 3];
	char *buf[NJ_MAX_FIELDS + 3], prio[4];
	size_t n = 0;
	snprintf(prio, sizeof prio, "%d", priority & 7);
	int r = nj_add(buf, &n, "MESSAGE", message);
	r = r ? r : nj_add(buf, &n, "PRIORITY", prio);
	r = r ? r : nj_add(buf, &n, "SYSLOG_IDENTIFIER", "sentineld");
	for (size_t i = 0; i < nf && i < NJ_MAX_FIELDS && !r; i++)
		if (f[i].value)
			r = nj_add(buf, &n, f[i].key, f[i].value);
	if (!r) {
		for (size_t i = 0; i < n; i++)
			iov[i] = (struct iovec){.iov_base = buf[i], .iov_len = strlen(buf[i])};
		r = sd_journal_sendv(iov, (int)n);
	}
	for (size_t i = 0; i < n; i++)
		free(buf[i]);
	return r;
}
