/* jsonl.c - the JSON-lines alert log's writer (see jsonl.h). */
#define _GNU_SOURCE 1   /* O_CLOEXEC, fdatasync */
#include "jsonl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A group of lines: what waits (NlLog.q), or what the writer writes (w). */
typedef struct NlBuf {
	char *p;
	size_t len, cap;
	uint64_t lines;
} NlBuf;

struct NlLog {
	int fd;
	char *path;
	size_t queue_max;
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* the writer waits for lines; nl_settle and nl_close for the writer */
	NlBuf q;                      /* handed over, not yet taken (mu) */
	NlBuf w;                      /* the writer's (its own while it writes) */
	bool sync_req, stop, exited;  /* (mu) */
	uint64_t appended, done;      /* groups: handed over, and written and synced (mu) */
	NlStats st;                   /* (mu) */
};

/* How long lines wait for an nl_sync before they are written anyway. */
#define NL_LINGER_NS 100000000ull

static void nl_deadline(struct timespec *ts, uint64_t ns)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ns += (uint64_t)ts->tv_nsec;
	ts->tv_sec += (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* The group in w onto the disk (no lock held: this is what may block;
 * the only place the writer can be cancelled, by nl_close). */
static void nl_write(NlLog *l, bool sync, uint64_t *werr, int *wcode, int *scode)
{
	const char *p = l->w.p;
	size_t n = l->w.len;
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	while (n) {
		ssize_t k = write(l->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			*wcode = k < 0 ? errno : EIO;
			/* the lines from here on are not in the log */
			for (size_t i = 0; i < n; i++)
				*werr += p[i] == '\n';
			break;
		}
		p += k;
		n -= (size_t)k;
	}
	/* EINVAL: a pipe or a terminal, which has nothing to sync */
	if (sync && fdatasync(l->fd) != 0 && errno != EINVAL)
		*scode = errno;
	pthread_setcancelstate(old, NULL);
}

static void *nl_main(void *arg)
{
	NlLog *l = arg;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&l->mu);
	for (;;) {
		/* lines are written when the notifier syncs (once a drain), or
		 * after lingering NL_LINGER_NS without one */
		while (!l->sync_req && !l->stop) {
			if (!l->q.len) {
				pthread_cond_wait(&l->cv, &l->mu);
				continue;
			}
			struct timespec ts;
			nl_deadline(&ts, NL_LINGER_NS);
			if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT)
				break;
		}
		if (l->stop && !l->q.len)
			break;
		NlBuf t = l->w;                  /* take the queue; the writer's old buffer becomes it */
		l->w = l->q;
		l->q = t;
		l->q.len = 0;
		l->q.lines = 0;
		uint64_t upto = l->appended;
		l->sync_req = false;
		pthread_mutex_unlock(&l->mu);
		uint64_t werr = 0;
		int wcode = 0, scode = 0;
		nl_write(l, l->w.len > 0, &werr, &wcode, &scode);
		pthread_mutex_lock(&l->mu);
		l->st.written += l->w.lines - werr;
		l->st.write_errors += werr;
		l->st.sync_errors += scode != 0;
		uint64_t we = l->st.write_errors, se = l->st.sync_errors;
		l->w.len = 0;
		l->w.lines = 0;
		l->done = upto;
		pthread_cond_broadcast(&l->cv);
		/* said once, then every 1000th (a full disk fails every line) */
		if (wcode && (we == werr || we / 1000 != (we - werr) / 1000))
			fprintf(stderr, "sentineld: %s: cannot write alerts: %s; they are not in the alert log (%llu lines "
				"lost so far)\n", l->path, strerror(wcode), (unsigned long long)we);
		if (scode && (se == 1 || se % 1000 == 0))
			fprintf(stderr, "sentineld: %s: cannot sync the alert log: %s; its newest lines may not survive a "
				"crash (%llu failed syncs so far)\n", l->path, strerror(scode), (unsigned long long)se);
	}
	l->exited = true;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int nl_open(const char *path, size_t queue_max, NlLog **out, char *err, size_t n)
{
	NlLog *l = calloc(1, sizeof *l);
	if (!l || !(l->path = strdup(path))) {
		free(l);
		snprintf(err, n, "out of memory");
		return -ENOMEM;
	}
	l->queue_max = queue_max ? queue_max : NL_QUEUE_MAX;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (l->fd < 0) {
		int e = errno;
		snprintf(err, n, "%s: cannot open the alert log: %s (create its directory, or change [notify] jsonl)", path,
			 strerror(e));
		nl_close(l, 0);
		return -e;
	}
	/* the writer takes no signal: they are the loop's (sentineld.c) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int e = pthread_create(&l->th, NULL, nl_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		snprintf(err, n, "%s: cannot start the alert log's writer: %s", path, strerror(e));
		nl_close(l, 0);
		return -e;
	}
	l->started = true;
	*out = l;
	return 0;
}

void nl_append(NlLog *l, const char *line, size_t len)
{
	pthread_mutex_lock(&l->mu);
	NlBuf *q = &l->q;
	bool fits = q->len + len <= l->queue_max;
	if (fits && q->len + len > q->cap) {
		size_t cap = q->cap ? q->cap : 4096;
		while (cap < q->len + len)
			cap *= 2;
		char *p = realloc(q->p, cap);
		if (p) {
			q->p = p;
			q->cap = cap;
		}
		fits = p != NULL;
	}
	if (fits) {
		memcpy(q->p + q->len, line, len);
		q->len += len;
		q->lines++;
		l->appended++;
	} else {
		l->st.dropped++;
		l->st.write_errors++;
		if (l->st.dropped == 1 || l->st.dropped % 1000 == 0)
			fprintf(stderr, "sentineld: %s: the alert log's disk does not keep up (%zu bytes wait for it): an "
				"alert line was dropped (%llu so far); the other sinks still have them\n", l->path, q->len,
				(unsigned long long)l->st.dropped);
	}
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void nl_sync(NlLog *l)
{
	pthread_mutex_lock(&l->mu);
	if (l->q.len) {
		l->sync_req = true;
		pthread_cond_broadcast(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
}

int nl_settle(NlLog *l, uint64_t timeout_ns)
{
	struct timespec ts;
	nl_deadline(&ts, timeout_ns);
	int r = 0;
	pthread_mutex_lock(&l->mu);
	uint64_t want = l->appended;
	l->sync_req = true;
	pthread_cond_broadcast(&l->cv);
	while (l->done < want && !l->exited && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&l->cv, &l->mu, &ts);
	r = l->done < want ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&l->mu);
	return r;
}

void nl_stats(NlLog *l, NlStats *out)
{
	if (!l) {
		*out = (NlStats){0};
		return;
	}
	pthread_mutex_lock(&l->mu);
	*out = l->st;
	out->queued_bytes = l->q.len;
	pthread_mutex_unlock(&l->mu);
}

void nl_close(NlLog *l, uint64_t timeout_ns)
{
	if (!l)
		return;
	if (l->started) {
		struct timespec ts;
		nl_deadline(&ts, timeout_ns);
		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_broadcast(&l->cv);
		int r = 0;
		while (!l->exited && r != ETIMEDOUT)
			r = pthread_cond_timedwait(&l->cv, &l->mu, &ts);
		bool stuck = !l->exited;
		size_t left = l->q.len + l->w.len;
		pthread_mutex_unlock(&l->mu);
		if (stuck) {                     /* on the disk still: it is cancelled there (nl_write) */
			fprintf(stderr, "sentineld: %s: the alert log's disk did not take its last %zu bytes in %.0f s: "
				"they are lost\n", l->path, left, (double)timeout_ns / 1e9);
			pthread_cancel(l->th);
		}
		pthread_join(l->th, NULL);
	}
	if (l->fd >= 0)
		close(l->fd);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l->q.p);
	free(l->w.p);
	free(l->path);
	free(l);
}
