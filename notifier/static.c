/* static.c - the sinks a static sentineld goes without (make static).
 *
 * A statically linked sentineld (one file an admin copies onto a machine,
 * or runs inside a test guest) links no libcurl, libmicrohttpd or
 * libsystemd: their static forms drag in TLS, Kerberos and LDAP.  It keeps
 * the log on stderr and JSON lines; this file stands in for the rest
 * (Alertmanager, webhooks and their spool, /metrics, the journal's own
 * fields), and a configuration that asks for them is refused at start with
 * what to do instead.  The packaged (dynamic) sentineld has them all.
 */
#include "http.h"
#include "journal.h"
#include "prom.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define NOT_HERE "this sentineld is the static build (make static), which has no %s: use the packaged sentineld for it"

int nh_open(const NhConfig *c, NtHttp **out, char *err, size_t n)
{
	*out = NULL;
	if (!c->alertmanager && !c->webhook && !c->spool)
		return 0;                       /* nothing asked of it */
	snprintf(err, n, NOT_HERE, c->spool && !c->alertmanager && !c->webhook ? "spool ([notify] spool)"
		 : "HTTP sinks ([notify] alertmanager, webhook)");
	return -ENOTSUP;
}

void nh_event(NtHttp *h, const NhAlertState *a) { (void)h; (void)a; }
void nh_flush(NtHttp *h) { (void)h; }
struct json_t *nh_firing_starts(NtHttp *h, const char *target) { (void)h; (void)target; return NULL; }
void nh_stats(NtHttp *h, NhStats *out) { (void)h; *out = (NhStats){0}; }
void nh_close(NtHttp *h, uint64_t grace_ns) { (void)h; (void)grace_ns; }

int px_open(const char *listen, PxServer **out, char *err, size_t n)
{
	(void)listen;
	*out = NULL;
	snprintf(err, n, NOT_HERE, "/metrics endpoint ([metrics] listen)");
	return -ENOTSUP;
}

void px_close(PxServer *s) { (void)s; }
unsigned px_port(const PxServer *s) { (void)s; return 0; }
int px_fd(const PxServer *s) { (void)s; return -1; }
int px_wanted(PxServer *s) { (void)s; return 0; }
void px_publish(PxServer *s, char *text, size_t len) { (void)s; (void)len; free(text); }
char *px_render(const PxInput *in, size_t *len) { (void)in; *len = 0; return NULL; }

bool nj_attached(void) { return false; }

int nj_send(int priority, const char *message, const NjField *f, size_t nf)
{
	(void)priority; (void)message; (void)f; (void)nf;
	return -ENOTSUP;
}
