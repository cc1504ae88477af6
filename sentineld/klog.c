/* klog.c - an alert's kernel log lines, read off the loop.
 *
 * A critical alert (or one whose template says {{ $kernel_log }}) carries
 * the monitored kernel's last log lines, read from its RAM as it fires
 * (kl_tail: bounded, klog.h).  The read is the guest's memory and the
 * guest's ring, so it runs on one reader thread for all targets (DKlWorker),
 * never on the loop: the loop queues the target's events behind the read
 * (DTarget.kq, in order, so that a later event never overtakes an earlier
 * one), goes on draining and answering, and sends them when the reader
 * rings the wake fd.  One read serves all of a target's events of one
 * drain, as before.
 *
 * Ownership: a DKlJob is the reader's from d_kl_post until it sets done,
 * then the loop's, which frees it; it borrows the target's KlLog, which
 * the loop closes only after d_kl_flush (d_close_target).  Queued events
 * borrow their rule from a bundle that a reload may replace: a bundle a
 * reload is done with is retired (d_bundle_retire), and freed once no
 * event waits.  They borrow their target's name and labels (CfTarget's,
 * on the heap: a reload moves the DTarget, not them).
 */
#include "sentineld.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Events one target may queue behind its read; past it they go without the
 * kernel log (a reader stuck on a guest's memory holds nothing back). */
#define D_KL_QUEUE_MAX 4096u

struct DKlJob {
	struct DKlJob *next;          /* the reader's queue */
	KlLog *log;                   /* borrowed */
	unsigned nlines;
	uint64_t drain;               /* the drain whose events it is for */
	char *text;                   /* the tail (malloc'd), or NULL with err */
	char err[256];
	int done;                     /* atomic: the reader is finished with it */
};

typedef struct DKlEv {
	struct DKlEv *next;
	NtEvent ev;
	char comm[SN_OBJ_NAME];       /* ev.comm points here (the ring's copy is gone) */
	uint64_t drain;
	bool wants;                   /* it carries the kernel log */
} DKlEv;

/* The read itself: the tail, or why not. */
static void d_kl_read(DKlJob *j)
{
	if (!(j->text = kl_tail(j->log, j->nlines, j->err, sizeof j->err)) && !j->err[0])
		snprintf(j->err, sizeof j->err, "out of memory");
}

static void *d_kl_main(void *arg)
{
	DKlWorker *W = arg;
	pthread_mutex_lock(&W->mu);
	for (;;) {
		while (!W->head && !W->stop)
			pthread_cond_wait(&W->cv, &W->mu);
		if (!W->head)
			break;
		DKlJob *j = W->head;
		W->head = j->next;
		pthread_mutex_unlock(&W->mu);
		/* the tests' slow guest: a read that takes seconds */
		long slow = eng_test_fault_n("klog-slow-s");
		if (slow > 0)
			nanosleep(&(struct timespec){slow, 0}, NULL);
		d_kl_read(j);
		pthread_mutex_lock(&W->mu);
		__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&W->done_cv);
		if (W->wake_fd > 0) {
			uint64_t one = 1;
			ssize_t w = write(W->wake_fd, &one, sizeof one);
			(void)w;
		}
	}
	pthread_mutex_unlock(&W->mu);
	return NULL;
}

int d_kl_start(Daemon *D)
{
	DKlWorker *W = &D->kw;
	*W = (DKlWorker){.wake_fd = D->eo.wake_fd};
	pthread_mutex_init(&W->mu, NULL);
	pthread_cond_init(&W->cv, NULL);
	pthread_cond_init(&W->done_cv, NULL);
	int r = d_thread(&W->th, d_kl_main, W);
	W->on = r == 0;
	return -r;
}

void d_kl_stop(Daemon *D)
{
	DKlWorker *W = &D->kw;
	if (!W->on)
		return;
	pthread_mutex_lock(&W->mu);
	W->stop = true;
	pthread_cond_signal(&W->cv);
	pthread_mutex_unlock(&W->mu);
	pthread_join(W->th, NULL);
	pthread_mutex_destroy(&W->mu);
	pthread_cond_destroy(&W->cv);
	pthread_cond_destroy(&W->done_cv);
	W->on = false;
}

/* A read of T's log for the events of drain `drain`, to the reader (or, with
 * no reader, here and now). */
static void d_kl_post(DTarget *T, uint64_t drain)
{
	DKlWorker *W = &T->D->kw;
	DKlJob *j = calloc(1, sizeof *j);
	if (!j) {                           /* no log for these: nothing waits */
		free(T->klog_text);
		T->klog_text = NULL;
		T->klog_drain = drain;
		return;
	}
	*j = (DKlJob){.log = T->klog, .nlines = T->D->cf.kernel_log_lines, .drain = drain};
	T->kjob = j;
	T->klog_reads++;
	if (!W->on) {
		d_kl_read(j);
		j->done = 1;
		return;
	}
	pthread_mutex_lock(&W->mu);
	DKlJob **p = &W->head;
	while (*p)
		p = &(*p)->next;
	*p = j;
	pthread_cond_signal(&W->cv);
	pthread_mutex_unlock(&W->mu);
}

/* T's finished read becomes its kernel log text. */
static void d_kl_take(DTarget *T)
{
	DKlJob *j = T->kjob;
	free(T->klog_text);
	T->klog_text = j->text;
	T->klog_drain = j->drain;
	if (!j->text)
		nt_log(T->D->nt, 4, "%s: the kernel log could not be read: %s", T->label, j->err);
	T->kjob = NULL;
	free(j);
}

static void d_kl_send(DTarget *T, DKlEv *q, bool with_log)
{
	q->ev.kernel_log = with_log && q->wants ? T->klog_text : NULL;
	nt_event(T->D->nt, &q->ev);
}

/* Send T's queued events, in order, as far as the reads allow; start the
 * read the next one waits for.  How many were sent. */
static unsigned d_kl_run(DTarget *T)
{
	unsigned n = 0;
	for (;;) {
		if (T->kjob && __atomic_load_n(&T->kjob->done, __ATOMIC_ACQUIRE))
			d_kl_take(T);
		DKlEv *q = T->kq;
		if (!q)
			break;
		if (q->wants && T->klog_drain != q->drain) {
			if (!T->kjob)
				d_kl_post(T, q->drain);
			if (!T->kjob || !__atomic_load_n(&T->kjob->done, __ATOMIC_ACQUIRE))
				break;
			continue;
		}
		d_kl_send(T, q, true);
		T->kq = q->next;
		if (!T->kq)
			T->kq_last = NULL;
		T->kq_n--;
		free(q);
		n++;
	}
	return n;
}

void d_kl_event(DTarget *T, NtEvent *ev, bool wants)
{
	Daemon *D = T->D;
	if (!T->kq) {
		if (!wants) {
			nt_event(D->nt, ev);
			return;
		}
		if (T->klog_drain == D->drains && !T->kjob) {   /* this drain's read: done */
			ev->kernel_log = T->klog_text;
			nt_event(D->nt, ev);
			return;
		}
	}
	DKlEv *q = T->kq_n < D_KL_QUEUE_MAX ? malloc(sizeof *q) : NULL;
	if (!q) {
		/* too many behind a read that does not end (or no memory):
		 * these go now, in order, without it */
		for (DKlEv *p = T->kq, *nx; p; p = nx) {
			nx = p->next;
			d_kl_send(T, p, false);
			free(p);
		}
		T->kq = T->kq_last = NULL;
		T->kq_n = 0;
		T->klog_skipped++;
		nt_event(D->nt, ev);
		return;
	}
	*q = (DKlEv){.ev = *ev, .drain = D->drains, .wants = wants};
	if (ev->comm) {
		snprintf(q->comm, sizeof q->comm, "%s", ev->comm);
		q->ev.comm = q->comm;
	}
	if (T->kq_last)
		T->kq_last->next = q;
	else
		T->kq = q;
	T->kq_last = q;
	T->kq_n++;
	d_kl_run(T);
}

/* Retired bundles go once no event waits (one may name their rules). */
static void d_kl_free_retired(Daemon *D)
{
	for (unsigned i = 0; i < D->ntg; i++)
		if (D->tg[i].kq)
			return;
	for (unsigned i = 0; i < D->kw.nretired; i++)
		bd_free(D->kw.retired[i]);
	free(D->kw.retired);
	D->kw.retired = NULL;
	D->kw.nretired = 0;
}

void d_bundle_retire(Daemon *D, Bundle *b)
{
	if (!b)
		return;
	Bundle **r = realloc(D->kw.retired, (D->kw.nretired + 1) * sizeof *r);
	if (!r) {                           /* (the events that wait go now) */
		d_kl_flush_all(D);
		bd_free(b);
		return;
	}
	D->kw.retired = r;
	r[D->kw.nretired++] = b;
	d_kl_free_retired(D);
}

unsigned d_kl_poll(Daemon *D)
{
	unsigned n = 0;
	for (unsigned i = 0; i < D->ntg; i++)
		if (D->tg[i].kjob && __atomic_load_n(&D->tg[i].kjob->done, __ATOMIC_ACQUIRE))
			n += d_kl_run(&D->tg[i]);
	if (D->kw.nretired)
		d_kl_free_retired(D);
	return n;
}

void d_kl_flush(DTarget *T)
{
	DKlWorker *W = &T->D->kw;
	while (T->kq || T->kjob) {
		if (T->kjob && !__atomic_load_n(&T->kjob->done, __ATOMIC_ACQUIRE)) {
			pthread_mutex_lock(&W->mu);
			while (!__atomic_load_n(&T->kjob->done, __ATOMIC_ACQUIRE))
				pthread_cond_wait(&W->done_cv, &W->mu);
			pthread_mutex_unlock(&W->mu);
		}
		d_kl_run(T);
	}
}

void d_kl_flush_all(Daemon *D)
{
	bool any = false;
	for (unsigned i = 0; i < D->ntg; i++) {
		any |= D->tg[i].kq != NULL;
		d_kl_flush(&D->tg[i]);
	}
	if (any)
		nt_flush(D->nt);
	d_kl_free_retired(D);
}
