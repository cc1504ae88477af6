/* hqueue.c - the remote sinks' queues (http.h), one per URL, under the
 * NtHttp's mu: batches in order, the bounds (queue_max, spool_max), and the
 * batches at the head joined into one request for Alertmanager. */
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Alertmanager batches sent as one request: at most this many, or bytes */
#define NH_COALESCE_MAX 1024
#define NH_COALESCE_BYTES (4u << 20)

static void nh_batch_free(NtHttp *h, NhBatch *b)
{
	nh_batch_release(h, b, false);
}

void nh_append(NhDest *d, NhBatch *b)
{
	if (d->tail)
		d->tail->next = b;
	else
		d->head = b;
	d->tail = b;
	d->queued++;
}

void nh_enqueue(NtHttp *h, NhDest *d, char *body)
{
	if (!body)
		return;
	NhBatch *b = calloc(1, sizeof *b);
	if (!b) {
		free(body);
		h->st.dropped++;
		return;
	}
	b->body = body;
	b->len = strlen(body);
	nh_spool_write(h, d, b);
	nh_append(d, b);
	/* over a bound: the oldest batch that is not in flight goes.  A request
	 * in flight carries the first req_n batches (nh_request_body joins
	 * them; nh_done pops exactly those on success): they are untouchable
	 * until it ends.  With nothing after them to drop, the queue stays over
	 * its bound until the request ends.  The last batch always stays. */
	while ((d->queued > h->c.queue_max || (h->c.spool_max && h->spool_bytes > h->c.spool_max)) && d->head &&
	       d->head->next) {
		NhBatch *prev = NULL, *victim = d->head;
		for (unsigned k = d->req ? d->req_n : 0; k && victim; k--)
			prev = victim, victim = victim->next;
		if (!victim)
			break;
		if (prev)
			prev->next = victim->next;
		else
			d->head = victim->next;
		if (d->tail == victim)
			d->tail = prev;
		nh_batch_free(h, victim);
		d->queued--;
		h->st.dropped++;
		if (h->st.dropped == 1 || h->st.dropped % 1000 == 0)
			fprintf(stderr, "sentineld: %s: the queue is full; %llu alert batches dropped so far\n", d->url,
				(unsigned long long)h->st.dropped);
	}
}

/* Remove the n batches at the head (a request's); returns how many went. */
unsigned nh_pop(NtHttp *h, NhDest *d, unsigned n)
{
	unsigned k = 0;
	for (; k < n && d->head; k++) {
		NhBatch *b = d->head;
		d->head = b->next;
		if (!d->head)
			d->tail = NULL;
		d->queued--;
		nh_batch_free(h, b);
	}
	return k;
}

/* The body of a request for the ready batches at d's head: for
 * Alertmanager, consecutive batches (JSON arrays of alerts) joined into one
 * array, in order (*n of them); for a webhook the head alone. */
const char *nh_request_body(NhDest *d, unsigned *n)
{
	*n = 1;
	if (d->kind != NH_AM || !d->head->next || !d->head->next->ready)
		return d->head->body;
	size_t len = 2;
	unsigned k = 0;
	for (NhBatch *b = d->head; b && b->ready && k < NH_COALESCE_MAX && len + b->len < NH_COALESCE_BYTES; b = b->next)
		len += b->len, k++;
	char *s = malloc(len + 1), *p = s;
	if (!s)
		return d->head->body;
	*p++ = '[';
	NhBatch *b = d->head;
	for (unsigned i = 0; i < k; i++, b = b->next) {
		if (b->len < 2 || b->body[0] != '[' || b->body[b->len - 1] != ']')
			break;                  /* not an array: sent on its own, next time */
		if (b->len > 2) {
			if (p > s + 1)
				*p++ = ',';
			memcpy(p, b->body + 1, b->len - 2);
			p += b->len - 2;
		}
		*n = i + 1;
	}
	*p++ = ']';
	*p = 0;
	if (*n <= 1) {
		free(s);
		*n = 1;
		return d->head->body;
	}
	d->req_body = s;
	return s;
}
