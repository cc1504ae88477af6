/* http.c - Alertmanager and webhook delivery (see http.h): the delivery
 * thread and its transport (libcurl), setup and stop.  The queues are in
 * hqueue.c, the spool in spool.c, what is sent in payload.c
 * (http_int.h). */
#include "http_int.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void nh_flush(NtHttp *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	nh_commit(h);
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
}

/* ---- the delivery thread ----------------------------------------------------------------------- */

static size_t nh_discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p, (void)ctx;
	return size * n;
}

/* Start the head request of d (under mu). */
static void nh_start(NtHttp *h, NhDest *d)
{
	CURL *c = curl_easy_init();
	if (!c)
		return;
	curl_easy_setopt(c, CURLOPT_URL, d->url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, nh_request_body(d, &d->req_n));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, d->hdr);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(h->c.timeout_ns / 1000000));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, nh_discard);
	curl_easy_setopt(c, CURLOPT_PRIVATE, d);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "sentineld");
	if (curl_multi_add_handle(h->multi, c) != CURLM_OK) {
		curl_easy_cleanup(c);
		free(d->req_body);
		d->req_body = NULL;
		return;
	}
	d->req = c;
}

/* A request ended: delivered (2xx), or kept for a retry with backoff.  A
 * 4xx but 429 means the receiver will never take it: dropped, counted. */
static void nh_done(NtHttp *h, NhDest *d, CURLcode rc)
{
	long status = 0;
	curl_easy_getinfo(d->req, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(h->multi, d->req);
	curl_easy_cleanup(d->req);
	d->req = NULL;
	free(d->req_body);
	d->req_body = NULL;
	if (rc == CURLE_OK && status >= 200 && status < 300) {
		h->st.sent += nh_pop(h, d, d->req_n);
		d->backoff_ms = 0;
	} else if (rc == CURLE_OK && status >= 400 && status < 500 && status != 429) {
		fprintf(stderr, "sentineld: %s refused %u alert batch%s (HTTP %ld); dropped\n", d->url, d->req_n,
			d->req_n == 1 ? "" : "es", status);
		h->st.dropped += nh_pop(h, d, d->req_n);
	} else {
		h->st.failed++;
		d->backoff_ms = d->backoff_ms ? (d->backoff_ms * 2 > 30000 ? 30000 : d->backoff_ms * 2) : 1000;
		d->retry_at = (int64_t)u_now_ns() + (int64_t)d->backoff_ms * 1000000;
		if (d->backoff_ms == 1000 || d->backoff_ms == 30000)
			fprintf(stderr, "sentineld: %s: %s; retrying every %u s or sooner\n", d->url,
				rc != CURLE_OK ? curl_easy_strerror(rc) : "HTTP error", d->backoff_ms / 1000);
	}
}

static void *nh_thread(void *arg)
{
	NtHttp *h = arg;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		int64_t now = (int64_t)u_now_ns();
		if (h->stop && (now >= h->stop_by || !h->st.queued))
			break;
		if (!h->stop && now >= h->next_resend) {
			nh_am_send(h, NULL);
			nh_commit(h);
			h->next_resend = now + (int64_t)h->c.resend_ns;
		}
		int64_t wake = h->next_resend;
		unsigned queued = 0;
		for (int i = 0; i < h->ndest; i++) {
			NhDest *d = &h->dest[i];
			queued += d->queued;
			if (!d->req && d->head && d->head->ready && now >= d->retry_at)
				nh_start(h, d);
			else if (!d->req && d->head && d->head->ready && d->retry_at < wake)
				wake = d->retry_at;
		}
		h->st.queued = queued;
		pthread_mutex_unlock(&h->mu);
		int ms = wake > now ? (int)((wake - now) / 1000000 + 1) : 0;
		curl_multi_poll(h->multi, NULL, 0, ms > 1000 ? 1000 : ms, NULL);
		int running;
		curl_multi_perform(h->multi, &running);
		CURLMsg *m;
		int left;
		pthread_mutex_lock(&h->mu);
		while ((m = curl_multi_info_read(h->multi, &left)))
			if (m->msg == CURLMSG_DONE) {
				NhDest *d = NULL;
				curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&d);
				if (d)
					nh_done(h, d, m->data.result);
			}
		pthread_mutex_unlock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* ---- setup --------------------------------------------------------------------------------------- */

static void nh_global(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int nh_add_urls(NtHttp *h, const char *list, int kind, char *err, size_t n)
{
	if (!list)
		return 0;
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return -ENOMEM;
	for (char *u = strtok_r(copy, ", ", &save); u; u = strtok_r(NULL, ", ", &save)) {
		if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
			snprintf(err, n, "%s: '%s' is not an http:// or https:// URL", kind == NH_AM ? "alertmanager" : "webhook",
				 u);
			free(copy);
			return -EINVAL;
		}
		if (h->ndest == NH_MAX_DEST) {
			snprintf(err, n, "at most %d alertmanager and webhook URLs", NH_MAX_DEST);
			free(copy);
			return -E2BIG;
		}
		NhDest *d = &h->dest[h->ndest++];
		size_t l = strlen(u);
		while (l && u[l - 1] == '/')
			u[--l] = 0;
		d->kind = kind;
		if (kind == NH_AM) {
			d->url = malloc(l + 16);
			if (d->url)
				snprintf(d->url, l + 16, "%s/api/v2/alerts", u);
		} else {
			d->url = strdup(u);
		}
		d->hdr = curl_slist_append(NULL, "Content-Type: application/json");
		if (!d->url || !d->hdr) {
			free(copy);
			return -ENOMEM;
		}
		int r = h->c.spool ? nh_spool_open(h, d, err, n) : 0;
		if (r) {
			free(copy);
			return r;
		}
	}
	free(copy);
	return 0;
}

int nh_open(const NhConfig *c, NtHttp **out, char *err, size_t n)
{
	*out = NULL;
	if (!c->alertmanager && !c->webhook)
		return 0;
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, nh_global);
	NtHttp *h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	h->c = *c;
	if (!h->c.resend_ns)
		h->c.resend_ns = 60000000000ull;
	if (!h->c.timeout_ns)
		h->c.timeout_ns = 10000000000ull;
	if (!h->c.queue_max)
		h->c.queue_max = 10000;
	pthread_mutex_init(&h->mu, NULL);
	h->multi = curl_multi_init();
	int r = h->multi ? 0 : -ENOMEM;
	if (!r)
		r = nh_add_urls(h, c->alertmanager, NH_AM, err, n);
	if (!r)
		r = nh_add_urls(h, c->webhook, NH_WEBHOOK, err, n);
	h->next_resend = (int64_t)u_now_ns() + (int64_t)h->c.resend_ns;
	if (!r && pthread_create(&h->thread, NULL, nh_thread, h))
		r = -EAGAIN;
	if (r) {
		if (!*err)
			snprintf(err, n, "cannot start the alert delivery: %s", strerror(-r));
		nh_close(h, 0);
		return r;
	}
	h->thread_on = true;
	*out = h;
	return 0;
}

void nh_stats(NtHttp *h, NhStats *out)
{
	memset(out, 0, sizeof *out);
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	*out = h->st;
	unsigned q = 0;
	for (int i = 0; i < h->ndest; i++)
		q += h->dest[i].queued;
	out->queued = q;
	out->spool_bytes = h->spool_bytes;
	pthread_mutex_unlock(&h->mu);
}

void nh_close(NtHttp *h, uint64_t grace_ns)
{
	if (!h)
		return;
	if (h->thread_on) {
		pthread_mutex_lock(&h->mu);
		nh_commit(h);
		h->stop = true;
		h->stop_by = (int64_t)u_now_ns() + (int64_t)grace_ns;
		unsigned q = 0;
		for (int i = 0; i < h->ndest; i++)
			q += h->dest[i].queued;
		h->st.queued = q;
		pthread_mutex_unlock(&h->mu);
		curl_multi_wakeup(h->multi);
		pthread_join(h->thread, NULL);
	}
	for (int i = 0; i < h->ndest; i++) {
		NhDest *d = &h->dest[i];
		if (d->req) {
			curl_multi_remove_handle(h->multi, d->req);
			curl_easy_cleanup(d->req);
		}
		free(d->req_body);
		while (d->head) {              /* undelivered: their spool files stay for the next start */
			NhBatch *b = d->head;
			d->head = b->next;
			nh_batch_release(h, b, true);
		}
		curl_slist_free_all(d->hdr);
		free(d->url);
		free(d->spool);
	}
	for (size_t i = 0; i < h->nact; i++) {
		free(h->act[i].name);
		free(h->act[i].target);
		free(h->act[i].labels);
		free(h->act[i].annotations);
	}
	free(h->act);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
