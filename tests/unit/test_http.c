/* test_http.c - notifier/http.c and the files it shares http_int.h with
 * (libcurl, its thread, its queues, its spool) against an HTTP server of the
 * test's own on 127.0.0.1 (run under ASan/UBSan).
 *
 * The server answers one request per connection and holds each until the
 * test lets it go, so a request (Alertmanager: several batches joined into
 * one array) stays in flight while more events overflow the queue; every
 * body it answered 200 is kept, and each batch (one alert, named a0, a1,
 * ...) is counted where it arrived.  Then sentineld's counters must tell
 * what the server saw: sent = batches it got, and every batch enqueued is
 * sent, dropped or still queued, once; the batches of a request in flight
 * stay in the spool until it is answered, and spool_bytes is what the
 * spool's files hold.  Three ways to overflow while a joined request is in
 * flight: queue_max, spool_max, and a restart that finds more than
 * queue_max batches in the spool (of which it loads the newest
 * queue_max; the same with spool_max).
 *
 * And the notifier's local sink beside them (notifier/notify.c): a JSON
 * lines file whose writes fail is counted. */
#include "http.h"
#include "notify.h"

#include <jansson.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures, passes;

#define CHECK(name, cond, ...) do { \
	if (cond) { passes++; printf("PASS http/%s\n", name); } \
	else { failures++; printf("FAIL http/%s (%s:%d: %s): ", name, __FILE__, __LINE__, #cond); \
	       printf(__VA_ARGS__); printf("\n"); } \
	fflush(stdout); \
} while (0)

#define WAIT_NS 10000000000ll     /* the longest any step may take */
#define MAX_REQ 64

/* ---- the server ------------------------------------------------------------------------------- */

typedef struct Srv {
	int lfd;
	unsigned port;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	int status;               /* what it answers: 200, or 503 */
	unsigned released;        /* request i is answered once released > i */
	unsigned nreq;            /* requests read */
	char *body[MAX_REQ];      /* each request's body */
	int answered[MAX_REQ];    /* the status it got (0 while held) */
} Srv;

static int64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void deadline(struct timespec *ts, int64_t ns)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ns += ts->tv_nsec;
	ts->tv_sec += ns / 1000000000ll;
	ts->tv_nsec = ns % 1000000000ll;
}

static bool send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		p += w, n -= (size_t)w;
	}
	return true;
}

/* One request from fd: its body (malloc'd), or NULL. */
static char *read_request(int fd)
{
	size_t cap = 1 << 16, len = 0, want = 0;
	char *buf = malloc(cap + 1), *body = NULL;
	struct timeval tv = {10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	while (buf && !body) {
		ssize_t r = recv(fd, buf + len, cap - len, 0);
		if (r <= 0)
			break;
		len += (size_t)r;
		buf[len] = 0;
		char *end = strstr(buf, "\r\n\r\n");
		if (!end) {
			if (len == cap)
				break;
			continue;
		}
		for (char *l = buf; l < end; l = strstr(l, "\r\n") + 2) {
			if (!strncasecmp(l, "Content-Length:", 15))
				want = strtoul(l + 15, NULL, 10);
			if (!strncasecmp(l, "Expect: 100-continue", 20) && !send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25))
				goto out;
		}
		size_t have = len - (size_t)(end + 4 - buf);
		if (!(body = malloc(want + 1)))
			break;
		memcpy(body, end + 4, have < want ? have : want);
		while (have < want) {
			r = recv(fd, body + have, want - have, 0);
			if (r <= 0) {
				free(body);
				body = NULL;
				goto out;
			}
			have += (size_t)r;
		}
		body[want] = 0;
	}
out:
	free(buf);
	return body;
}

static void *srv_thread(void *arg)
{
	Srv *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		bool stop = s->stop;
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
		struct pollfd p = {s->lfd, POLLIN, 0};
		if (poll(&p, 1, 20) <= 0)
			continue;
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		char *body = read_request(fd);
		pthread_mutex_lock(&s->mu);
		unsigned i = s->nreq;
		if (!body || i == MAX_REQ) {
			pthread_mutex_unlock(&s->mu);
			free(body);
			close(fd);
			continue;
		}
		s->body[i] = body;
		s->nreq++;
		pthread_cond_broadcast(&s->cv);
		while (s->released <= i && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		int status = s->stop ? 0 : s->status;
		pthread_mutex_unlock(&s->mu);
		char resp[128];
		snprintf(resp, sizeof resp, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status,
			 status == 200 ? "OK" : "Service Unavailable");
		bool ok = status && send_all(fd, resp, strlen(resp));
		pthread_mutex_lock(&s->mu);
		s->answered[i] = ok ? status : -1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		close(fd);
	}
	return NULL;
}

static int srv_start(Srv *s, int status, unsigned released)
{
	memset(s, 0, sizeof *s);
	s->status = status;
	s->released = released;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if ((s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) ||
	    listen(s->lfd, 16) || getsockname(s->lfd, (struct sockaddr *)&a, &al) ||
	    pthread_create(&s->th, NULL, srv_thread, s))
		return -1;
	s->port = ntohs(a.sin_port);
	return 0;
}

static void srv_stop(Srv *s)
{
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	close(s->lfd);
	for (unsigned i = 0; i < s->nreq; i++)
		free(s->body[i]);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
}

static void srv_set(Srv *s, int status, unsigned released)
{
	pthread_mutex_lock(&s->mu);
	s->status = status;
	s->released = released;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Wait until the server has read n requests (held or not). */
static bool srv_wait(Srv *s, unsigned n)
{
	struct timespec ts;
	deadline(&ts, WAIT_NS);
	pthread_mutex_lock(&s->mu);
	while (s->nreq < n && pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT)
		;
	bool ok = s->nreq >= n;
	pthread_mutex_unlock(&s->mu);
	return ok;
}

/* Wait until every request read was answered (or the client left): the
 * server's count is complete.  Returns how many it read. */
static unsigned srv_quiet(Srv *s)
{
	struct timespec ts;
	deadline(&ts, WAIT_NS);
	pthread_mutex_lock(&s->mu);
	while (s->nreq && !s->answered[s->nreq - 1] && pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT)
		;
	unsigned n = s->nreq;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* ---- batches by name ------------------------------------------------------------------------- */

#define MAX_NAMES 32

typedef struct Tally {
	unsigned n;
	char name[MAX_NAMES][16];
	unsigned count[MAX_NAMES];
} Tally;

static unsigned *tally_at(Tally *t, const char *name)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], name))
			return &t->count[i];
	if (t->n == MAX_NAMES)
		return NULL;
	snprintf(t->name[t->n], sizeof t->name[0], "%s", name);
	t->count[t->n] = 0;
	return &t->count[t->n++];
}

static unsigned tally_get(Tally *t, const char *name)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], name))
			return t->count[i];
	return 0;
}

/* Count the alerts of one Alertmanager body (a JSON array) by alertname;
 * returns how many, or -1 if it is not such a body. */
static int tally_body(Tally *t, const char *body)
{
	json_t *a = json_loads(body, 0, NULL);
	int n = json_is_array(a) ? 0 : -1;
	for (size_t i = 0; n >= 0 && i < json_array_size(a); i++) {
		const char *name = json_string_value(json_object_get(json_object_get(json_array_get(a, i), "labels"),
								       "alertname"));
		unsigned *c = name ? tally_at(t, name) : NULL;
		if (c)
			(*c)++, n++;
		else
			n = -1;
	}
	json_decref(a);
	return n;
}

/* What the server answered 200 to, from request `from` on: alerts by name;
 * returns how many alerts. */
static unsigned srv_delivered(Srv *s, unsigned from, Tally *t)
{
	unsigned n = 0, nreq = srv_quiet(s);
	memset(t, 0, sizeof *t);
	pthread_mutex_lock(&s->mu);
	for (unsigned i = from; i < nreq; i++) {
		int k = s->answered[i] == 200 ? tally_body(t, s->body[i]) : 0;
		n += k > 0 ? (unsigned)k : 0;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Request i's body, by name. */
static int srv_request(Srv *s, unsigned i, Tally *t)
{
	memset(t, 0, sizeof *t);
	pthread_mutex_lock(&s->mu);
	int n = i < s->nreq ? tally_body(t, s->body[i]) : -1;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* The spool's batches (every line of every file in its URL folders) by
 * name; *bytes: their length without the newlines, as spool_bytes counts. */
static unsigned spool_scan(const char *root, Tally *t, uint64_t *bytes)
{
	memset(t, 0, sizeof *t);
	*bytes = 0;
	unsigned n = 0;
	DIR *r = opendir(root);
	for (struct dirent *u; r && (u = readdir(r));) {
		if (u->d_name[0] == '.')
			continue;
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/%s", root, u->d_name);
		DIR *d = opendir(dir);
		for (struct dirent *f; d && (f = readdir(d));) {
			size_t l = strlen(f->d_name);
			if (l < 5 || strcmp(f->d_name + l - 5, ".json"))
				continue;
			char path[8192], *line = NULL;
			size_t cap = 0;
			ssize_t len;
			snprintf(path, sizeof path, "%s/%s", dir, f->d_name);
			FILE *fp = fopen(path, "r");
			while (fp && (len = getline(&line, &cap, fp)) > 0) {
				if (line[len - 1] == '\n')
					line[--len] = 0;
				*bytes += (uint64_t)len;
				int k = tally_body(t, line);
				n += k > 0 ? (unsigned)k : 0;
			}
			free(line);
			if (fp)
				fclose(fp);
		}
		if (d)
			closedir(d);
	}
	if (r)
		closedir(r);
	return n;
}

/* ---- sentineld's side ------------------------------------------------------------------------ */

/* One scenario: its receiver, its spool, the batches it enqueued (by name). */
typedef struct Run {
	const char *sc;
	Srv s;
	char root[4096];              /* the spool folder */
	NtHttp *h;
	unsigned nq;
	char names[MAX_NAMES][16];
} Run;

/* A firing alert named `name` then the number i, its summary `extra`
 * bytes long: one batch, in this flush's spool file. */
static void event(Run *r, const char *name, int i, size_t extra)
{
	char labels[64], *ann = malloc(extra + 32);
	if (!ann || r->nq == MAX_NAMES)
		abort();
	snprintf(r->names[r->nq], sizeof r->names[0], "%s%d", name, i);
	snprintf(labels, sizeof labels, "{\"alertname\":\"%s\"}", r->names[r->nq]);
	strcpy(ann, "{\"summary\":\"");
	memset(ann + 12, 'x', extra);
	strcpy(ann + 12 + extra, "\"}");
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
	NhAlertState a = {.name = r->names[r->nq++], .target = "t", .labels_json = labels, .annotations_json = ann, .firing = true,
			  .starts_ns = now, .ends_ns = now};
	nh_event(r->h, &a);
	free(ann);
}

/* The same, flushed: one batch, one spool file. */
static void fire(Run *r, const char *name, int i, size_t extra)
{
	event(r, name, i, extra);
	nh_flush(r->h);
}

/* Wait until nothing is queued; the last stats. */
static NhStats settle(NtHttp *h)
{
	NhStats st;
	for (int64_t end = mono() + WAIT_NS; nh_stats(h, &st), st.queued && mono() < end;)
		usleep(5000);
	return st;
}

static void open_am(Run *r, unsigned queue_max, uint64_t spool_max)
{
	char url[64], err[256] = "";
	snprintf(url, sizeof url, "http://127.0.0.1:%u", r->s.port);
	NhConfig c = {.alertmanager = url, .external_url = "", .resend_ns = 3600000000000ull, .tick_ns = 1000000000ull,
		      .timeout_ns = 30000000000ull, .queue_max = queue_max, .spool = r->root, .spool_max = spool_max};
	if (nh_open(&c, &r->h, err, sizeof err) || !r->h) {
		printf("FAIL http/%s/open: %s\n", r->sc, err);
		exit(1);
	}
}

static bool run_start(Run *r, const char *sc, int status, unsigned released)
{
	memset(r, 0, sizeof *r);
	r->sc = sc;
	const char *tmp = getenv("SENTINEL_TEST_TMP");  /* tests/run.sh's, else /tmp */
	snprintf(r->root, sizeof r->root, "%s/sentinel-test-http.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(r->root) || srv_start(&r->s, status, released)) {
		printf("FAIL http/%s/setup: %s\n", sc, strerror(errno));
		failures++;
		return false;
	}
	return true;
}

static void run_end(Run *r)
{
	nh_close(r->h, 1000000000ull);
	srv_stop(&r->s);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->root);
	if (system(cmd) != 0)
		fprintf(stderr, "test_http: cannot remove %s\n", r->root);
}

#define NAME(r, what) (snprintf(nm, sizeof nm, "%s/%s", (r)->sc, what), nm)

/* The counters against what the server answered 200 to, from request
 * `from` on, once nothing is queued. */
static void check_accounts(Run *r, unsigned from)
{
	char nm[96];
	NhStats st = settle(r->h);
	Tally got;
	unsigned ngot = srv_delivered(&r->s, from, &got), twice = 0, never = 0;
	for (unsigned i = 0; i < r->nq; i++) {
		unsigned c = tally_get(&got, r->names[i]);
		twice += c > 1;
		never += c == 0;
	}
	CHECK(NAME(r, "each-batch-received-at-most-once"), twice == 0, "%u batches arrived more than once", twice);
	CHECK(NAME(r, "sent-is-what-the-server-got"), st.sent == ngot, "sent %llu, the server got %u",
	      (unsigned long long)st.sent, ngot);
	CHECK(NAME(r, "sent-dropped-queued-add-up"), st.sent + st.dropped + st.queued == r->nq,
	      "sent %llu + dropped %llu + queued %u != %u enqueued", (unsigned long long)st.sent,
	      (unsigned long long)st.dropped, st.queued, r->nq);
	CHECK(NAME(r, "none-counted-sent-that-never-arrived"), never == st.dropped + st.queued,
	      "%u batches never arrived, but dropped %llu + queued %u", never, (unsigned long long)st.dropped, st.queued);
	Tally disk;
	uint64_t bytes;
	unsigned n = spool_scan(r->root, &disk, &bytes);
	nh_stats(r->h, &st);
	CHECK(NAME(r, "spool-empty-at-the-end"), n == 0 && bytes == 0 && st.spool_bytes == 0,
	      "%u batches (%llu bytes) on disk, spool_bytes %llu", n, (unsigned long long)bytes,
	      (unsigned long long)st.spool_bytes);
}

/* The spool while a request is in flight: its batches (in_flight) still on
 * disk, and spool_bytes what the files hold. */
static void check_spool_in_flight(Run *r, Tally *in_flight)
{
	char nm[96];
	Tally disk;
	uint64_t bytes;
	NhStats st;
	spool_scan(r->root, &disk, &bytes);
	nh_stats(r->h, &st);
	unsigned gone = 0;
	for (unsigned i = 0; i < in_flight->n; i++)
		gone += tally_get(&disk, in_flight->name[i]) == 0;
	CHECK(NAME(r, "in-flight-batches-stay-in-the-spool"), gone == 0,
	      "%u of the %u batches in flight were removed from the spool", gone, in_flight->n);
	CHECK(NAME(r, "spool-bytes-in-flight"), st.spool_bytes == bytes, "spool_bytes %llu, the files hold %llu",
	      (unsigned long long)st.spool_bytes, (unsigned long long)bytes);
}

/* ---- the scenarios ----------------------------------------------------------------------------- */

/* A first run whose receiver answers 503 (then sentineld waits 1 s to
 * retry), so every batch fired by spool() stays in the spool; returns the
 * requests the server read, false (a FAIL) if the spool does not hold n. */
static bool first_run(Run *r, unsigned n, unsigned *first)
{
	char nm[96];
	Tally disk;
	uint64_t bytes;
	bool refused = srv_wait(&r->s, 1);
	*first = srv_quiet(&r->s);
	nh_close(r->h, 0);
	r->h = NULL;
	unsigned k = spool_scan(r->root, &disk, &bytes);
	CHECK(NAME(r, "spooled"), refused && k == n, "the spool holds %u batches, not %u", k, n);
	return refused && k == n;
}

/* Right after a restart that found more in the spool than its bounds
 * allow: the oldest `dropped` were dropped and counted as the queue's
 * drops are, the rest (`kept`, newest first in names[]) is queued, goes as
 * the one request the server holds, and is all the spool still holds. */
static void check_loaded(Run *r, unsigned first, unsigned dropped, unsigned kept, Tally *req)
{
	char nm[96];
	NhStats st;
	nh_stats(r->h, &st);
	CHECK(NAME(r, "spool-load-bounded"), st.dropped == dropped && st.queued == kept,
	      "dropped %llu, queued %u after the restart; want %u and %u", (unsigned long long)st.dropped, st.queued,
	      dropped, kept);
	Tally disk;
	int k = srv_wait(&r->s, first + 1) ? srv_request(&r->s, first, req) : -1;
	unsigned newest = 0;
	for (unsigned i = r->nq - kept; i < r->nq; i++)
		newest += tally_get(req, r->names[i]) == 1;
	CHECK(NAME(r, "the-newest-sent-first"), k == (int)kept && newest == kept,
	      "the first request carried %d batches, %u of the %u newest", k, newest, kept);
	uint64_t bytes;
	unsigned n = spool_scan(r->root, &disk, &bytes);
	nh_stats(r->h, &st);
	CHECK(NAME(r, "spool-holds-what-was-loaded"), n == kept && bytes == st.spool_bytes,
	      "the spool holds %u batches (%llu bytes), %u loaded (spool_bytes %llu)", n, (unsigned long long)bytes, kept,
	      (unsigned long long)st.spool_bytes);
}

/* A restart with six batches in the spool (a file each) and queue_max 3:
 * the three oldest are dropped as it loads, the other three go as one
 * request, held by the server while three more events overflow the
 * queue. */
static void test_restart(void)
{
	Run r;
	Tally req;
	unsigned first;
	if (!run_start(&r, "restart", 503, 1000))
		return;
	open_am(&r, 100, 0);
	for (int i = 0; i < 6; i++)
		fire(&r, "a", i, 0);
	if (first_run(&r, 6, &first)) {
		srv_set(&r.s, 200, first);
		open_am(&r, 3, 0);
		check_loaded(&r, first, 3, 3, &req);
		for (int i = 0; i < 3; i++)
			fire(&r, "e", i, 0);
		check_spool_in_flight(&r, &req);
		srv_set(&r.s, 200, 1000);
		check_accounts(&r, first);
	}
	run_end(&r);
}

/* A restart over spool_max: four batches of about 1.1 KB in one file (one
 * flush), then two more a file each; spool_max 3.5 batches.  The newest
 * three stay: the first file's last batch is all that is left of it, on
 * disk too. */
static void test_restart_bytes(void)
{
	Run r;
	Tally req;
	unsigned first;
	if (!run_start(&r, "restart-bytes", 503, 1000))
		return;
	open_am(&r, 100, 0);
	for (int i = 0; i < 4; i++)
		event(&r, "m", i, 1000);
	nh_flush(r.h);
	fire(&r, "a", 0, 1000);
	fire(&r, "a", 1, 1000);
	NhStats st;
	nh_stats(r.h, &st);
	uint64_t one = st.spool_bytes / 6;
	if (first_run(&r, 6, &first)) {
		srv_set(&r.s, 200, first);
		open_am(&r, 100, one * 7 / 2);
		check_loaded(&r, first, 3, 3, &req);
		check_spool_in_flight(&r, &req);
		srv_set(&r.s, 200, 1000);
		check_accounts(&r, first);
	}
	run_end(&r);
}

/* Scenario sc with queue_max 3 and spool_max: a0 alone, held; a1 and a2
 * queued meanwhile; a0 answered: a1 and a2 go as one request (*req),
 * held.  False if it could not start. */
static bool hold_two(Run *r, const char *sc, uint64_t spool_max, Tally *req)
{
	char nm[96];
	if (!run_start(r, sc, 200, 0))
		return false;
	open_am(r, 3, spool_max);
	fire(r, "a", 0, 0);
	bool held = srv_wait(&r->s, 1);
	fire(r, "a", 1, 0);
	fire(r, "a", 2, 0);
	srv_set(&r->s, 200, 1);
	int k = held && srv_wait(&r->s, 2) ? srv_request(&r->s, 1, req) : -1;
	CHECK(NAME(r, "one-request-of-two"), k == 2, "the second request carried %d batches", k);
	return true;
}

/* queue_max 3: while two batches are in flight as one request, three more
 * events overflow the queue; then the server answers. */
static void test_queue_bound(void)
{
	Run r;
	Tally req;
	if (!hold_two(&r, "queue-bound", 0, &req))
		return;
	for (int i = 3; i < 6; i++)
		fire(&r, "a", i, 0);
	check_spool_in_flight(&r, &req);
	srv_set(&r.s, 200, 1000);
	check_accounts(&r, 0);
	run_end(&r);
}

/* The spool's byte bound: while two batches are in flight as one request,
 * one batch bigger than the bound comes; then the server answers. */
static void test_spool_bound(void)
{
	Run r;
	Tally req;
	if (!hold_two(&r, "spool-bound", 2048, &req))
		return;
	fire(&r, "big", 0, 4096);
	check_spool_in_flight(&r, &req);
	srv_set(&r.s, 200, 2);
	settle(r.h);
	fire(&r, "a", 3, 0);
	srv_set(&r.s, 200, 1000);
	check_accounts(&r, 0);
	run_end(&r);
}

/* ---- the JSON-lines sink ---------------------------------------------------------------------- */

/* /dev/full as the jsonl file: every write fails (ENOSPC), and each lost
 * line counts as a write error, not as a sync error (fdatasync of a device
 * is EINVAL, which is not one). */
static void test_jsonl_write_errors(void)
{
	NtConfig c = {.jsonl = "/dev/full", .target = "t"};
	Notifier *nt = NULL;
	char err[256] = "";
	if (nt_open(&c, &nt, err, sizeof err)) {
		printf("FAIL http/jsonl/setup: %s\n", err);
		failures++;
		return;
	}
	BdRule rule = {.name = "Full", .severity = "warning", .file = "full.yaml", .line = 1, .entity = -1};
	NtEvent e = {.rule = &rule, .kind = SN_EV_FIRING, .value = 1, .entity = -1, .tick = 1};
	clock_gettime(CLOCK_REALTIME, &e.when);
	for (int i = 0; i < 3; i++)
		nt_event(nt, &e);
	nt_flush(nt);
	nt_settle(nt, 10000000000ull);            /* (the file's own thread writes) */
	CHECK("jsonl/write-errors-counted", nt_jsonl_write_errors(nt) == 3 && nt_jsonl_sync_errors(nt) == 0,
	      "3 lines written to /dev/full: %llu write errors, %llu sync errors",
	      (unsigned long long)nt_jsonl_write_errors(nt), (unsigned long long)nt_jsonl_sync_errors(nt));
	nt_close(nt);
}

/* A stalled disk: the jsonl file is a FIFO that a reader holds open and
 * does not read (64 KiB fill it), as a hung NFS server or a disk that
 * takes seconds a sync would.  Events go on at once (the file's thread
 * waits, not the caller: before, nt_event blocked in write for good);
 * past its queue's bound lines are dropped and counted; once the reader
 * reads, every line kept arrives, whole. */
static void test_jsonl_stalled(void)
{
	char dir[] = "/tmp/sentinel-jsonl.XXXXXX", path[64];
	if (!mkdtemp(dir)) {
		printf("FAIL http/jsonl/stalled-setup: mkdtemp: %s\n", strerror(errno));
		failures++;
		return;
	}
	snprintf(path, sizeof path, "%s/alerts.fifo", dir);
	int rfd = mkfifo(path, 0600) ? -1 : open(path, O_RDONLY | O_NONBLOCK);
	NtConfig c = {.jsonl = path, .target = "t", .jsonl_queue_max = 256 << 10};
	Notifier *nt = NULL;
	char err[256] = "";
	if (rfd < 0 || nt_open(&c, &nt, err, sizeof err)) {
		printf("FAIL http/jsonl/stalled-setup: %s %s\n", err, strerror(errno));
		failures++;
		if (rfd >= 0)
			close(rfd);
		rmdir(dir);
		return;
	}
	char desc[400];
	memset(desc, 'x', sizeof desc - 1);
	desc[sizeof desc - 1] = 0;
	BdRule rule = {.name = "Stalled", .severity = "warning", .file = "s.yaml", .line = 1, .entity = -1,
		       .description = desc};
	NtEvent e = {.rule = &rule, .kind = SN_EV_FIRING, .value = 1, .entity = -1};
	clock_gettime(CLOCK_REALTIME, &e.when);
	/* 2,000 lines of ~0.6 KB: 1.2 MB, against a pipe of 64 KiB and a
	 * queue of 256 KiB; a flush every 10, as drains do */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 2000; i++) {
		e.tick = (uint64_t)i;
		nt_event(nt, &e);
		if (i % 10 == 9)
			nt_flush(nt);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	uint64_t lost = nt_jsonl_write_errors(nt);
	CHECK("jsonl/stalled-disk-does-not-block", took < 5 && lost > 0 && lost < 2000,
	      "2,000 events with the file's disk stalled: %.2f s, %llu lines dropped past the queue's bound", took,
	      (unsigned long long)lost);
	CHECK("jsonl/stalled-settle-times-out", nt_settle(nt, 200000000ull) == -ETIMEDOUT,
	      "nt_settle waits for a disk that does not write");
	/* the disk comes back: the reader reads until every line kept is in */
	int fl = fcntl(rfd, F_GETFL);
	fcntl(rfd, F_SETFL, fl & ~O_NONBLOCK);
	size_t got = 0, lines = 0, bad = 0;
	char buf[65536];
	uint64_t want = 2000 - lost;
	char part[1024];
	size_t plen = 0;
	while (lines < want) {
		ssize_t k = read(rfd, buf, sizeof buf);
		if (k <= 0)
			break;
		got += (size_t)k;
		for (ssize_t i = 0; i < k; i++) {
			if (plen < sizeof part)
				part[plen++] = buf[i];
			if (buf[i] != '\n')
				continue;
			lines++;
			bad += plen < 2 || part[0] != '{' || part[plen - 2] != '}';
			plen = 0;
		}
	}
	CHECK("jsonl/stalled-lines-arrive-whole", lines == want && bad == 0 && nt_settle(nt, 10000000000ull) == 0,
	      "%zu lines (%zu bytes) of the %llu kept, %zu not whole", lines, got, (unsigned long long)want, bad);
	nt_close(nt);
	close(rfd);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_queue_bound();
	test_restart();
	test_restart_bytes();
	test_spool_bound();
	test_jsonl_write_errors();
	test_jsonl_stalled();
	printf("%d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
