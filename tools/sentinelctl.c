/* sentinelctl - talk to a running sentineld over its control socket.
 *
 * The protocol is one JSON object per line each way: {"cmd": "status"} and
 * the daemon's answer.  --json prints the answer as it came.
 */
#include <ini.h>
#include <jansson.h>

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef SENTINEL_SYSCONFDIR
#define SENTINEL_SYSCONFDIR "/usr/local/etc"
#endif
#ifndef SENTINEL_VERSION
#define SENTINEL_VERSION "0.1.0"
#endif

static void usage(FILE *out)
{
	fputs(
"Usage: sentinelctl [-s SOCKET | -c CONFIG] [--json] COMMAND\n"
"\n"
"Commands:\n"
"  status   the backend, the GPU, the target, uptime, ticks, late ticks, drops\n"
"  rules    every rule with its state and current value\n"
"  alerts   the rules now pending or firing\n"
"  reload   recompile the rule directory and swap rules without a gap; on\n"
"           errors, print them (as rulec --check does) and change nothing\n"
"\n"
"Options:\n"
"  -s, --socket PATH   sentineld's control socket\n"
"  -c, --config FILE   the socket sentineld's configuration names ([control]\n"
"                      socket); without -s or -c: $SENTINEL_SOCKET, else the\n"
"                      installed configuration's (" SENTINEL_SYSCONFDIR "/sentinel/sentinel.conf),\n"
"                      else /run/sentinel/sentinel.sock\n"
"  -t, --timeout SECS  wait at most this long for the answer (default 10; reload:\n"
"                      600, as 10,000 rules take minutes to compile)\n"
"      --json          print the daemon's answer as JSON\n"
"  -h, --help, -V, --version\n"
"\n"
"Exit status: 0 ok, 1 the command failed (e.g. a reload with rule errors),\n"
"2 no daemon, no answer in time, or a usage error.\n", out);
}

static uint64_t ctl_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for fd to be ready for ev until deadline_ms: 1 ready, 0 timed out. */
static int ctl_wait(int fd, short ev, uint64_t deadline_ms)
{
	for (;;) {
		uint64_t now = ctl_now_ms();
		if (now >= deadline_ms)
			return 0;
		struct pollfd p = {.fd = fd, .events = ev};
		int r = poll(&p, 1, (int)(deadline_ms - now > 60000 ? 60000 : deadline_ms - now));
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return 1;              /* the read or write that follows says what is wrong */
	}
}

/* The answer to cmd, or NULL (said why).  A sentineld that accepts but
 * never answers (stalled, or every client slot taken) is given up after
 * timeout_s: the socket is non-blocking, the connect retried while its
 * backlog is full, every wait bounded. */
static json_t *request(const char *path, const char *cmd, double timeout_s)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof a.sun_path) {
		fprintf(stderr, "sentinelctl: socket path too long\n");
		return NULL;
	}
	memcpy(a.sun_path, path, strlen(path));
	uint64_t deadline = ctl_now_ms() + (uint64_t)(timeout_s * 1000);
	json_t *resp = NULL;
	char *buf = NULL;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r;
	while (fd >= 0 && (r = connect(fd, (struct sockaddr *)&a, sizeof a)) && errno == EAGAIN &&
	       ctl_now_ms() < deadline) {
		struct timespec ts = {0, 20 * 1000 * 1000};    /* its backlog is full: a moment, and again */
		nanosleep(&ts, NULL);
	}
	if (fd < 0 || r) {
		if (fd >= 0 && errno == EAGAIN)
			fprintf(stderr, "sentinelctl: sentineld at %s takes no new client (its backlog stayed full for %.0f "
				"s): it may be stalled; see its log (journalctl -u sentineld)\n", path, timeout_s);
		else
			fprintf(stderr, "sentinelctl: cannot reach sentineld at %s: %s (is it running? as root? "
					"give -s SOCKET or -c its sentinel.conf)\n",
				path, strerror(errno));
		goto out;
	}
	char line[128];
	int len = snprintf(line, sizeof line, "{\"cmd\":\"%s\"}\n", cmd);
	if (!ctl_wait(fd, POLLOUT, deadline) || write(fd, line, (size_t)len) != len) {
		fprintf(stderr, "sentinelctl: %s: %s\n", path, errno ? strerror(errno) : "cannot send the request");
		goto out;
	}
	size_t have = 0, cap = 0;
	bool timed_out = false;
	for (;;) {
		if (have + 4096 > cap) {
			cap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, cap);
			if (!nb)
				break;
			buf = nb;
		}
		if (!ctl_wait(fd, POLLIN, deadline)) {
			timed_out = true;
			break;
		}
		ssize_t n = read(fd, buf + have, cap - have - 1);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		if (memchr(buf + have - (size_t)n, '\n', (size_t)n))
			break;
	}
	json_error_t je;
	resp = buf && !timed_out ? json_loadb(buf, have, JSON_DISABLE_EOF_CHECK, &je) : NULL;
	if (timed_out)
		fprintf(stderr, "sentinelctl: sentineld at %s did not answer '%s' within %.0f s: it may be stalled, or "
			"busy; see its log (journalctl -u sentineld), or give --timeout SECONDS to wait longer\n", path, cmd,
			timeout_s);
	else if (!resp)
		fprintf(stderr, "sentinelctl: no answer from sentineld (it stopped, or closed the connection)\n");
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return resp;
}

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }
static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* Several targets: one line each (the top lines are about the first). */
static void print_targets(json_t *s)
{
	json_t *a = json_object_get(s, "targets"), *t;
	size_t i;
	if (json_array_size(a) < 2)
		return;
	printf("\n%-20s %-12s %-12s %10s %6s %10s %8s %7s %s\n", "TARGET", "PHASE", "KERNEL", "TICKS", "LATE", "LAST_US",
	       "READERR", "TASKS", "SOURCE");
	json_array_foreach(a, i, t) {
		char ticks[24] = "-", late[24] = "-", last[24] = "-", rerr[24] = "-", tasks[24] = "-";
		if (json_object_get(t, "ticks")) {
			snprintf(ticks, sizeof ticks, "%.0f", num(t, "ticks"));
			snprintf(late, sizeof late, "%.0f", num(t, "late_ticks"));
			snprintf(last, sizeof last, "%.0f", num(t, "last_tick_us"));
			snprintf(rerr, sizeof rerr, "%.0f", num(t, "read_errors"));
			snprintf(tasks, sizeof tasks, "%.0f", num(t, "tasks"));
		}
		printf("%-20s %-12s %-12.12s %10s %6s %10s %8s %7s %s\n", str(t, "name"),
		       json_object_get(t, "phase") ? str(t, "phase") : str(t, "state"),
		       json_object_get(t, "kernel") ? str(t, "kernel") : "-", ticks, late, last, rerr, tasks, str(t, "source"));
		if (json_object_get(t, "error"))
			printf("    %s\n", str(t, "error"));
		if (json_object_get(t, "retry_error"))
			printf("    looking for it again: %s\n", str(t, "retry_error"));
		if (!json_object_get(t, "error") && json_object_get(t, "last_error"))
			printf("    last error (%.0f s ago): %s\n", (double)time(NULL) - num(t, "last_error_time"),
			       str(t, "last_error"));
		if (num(t, "ticks_over_budget") > 0)
			printf("    %.0f ticks cut off at its read budget of %.0f words (the most read %.0f): see the log\n",
			       num(t, "ticks_over_budget"), num(t, "read_budget"), num(t, "max_reads_per_tick"));
	}
}

static void print_status(json_t *s)
{
	json_t *t = json_object_get(s, "target");
	size_t ntg = json_array_size(json_object_get(s, "targets"));
	printf("sentineld %s, up %.0f s\n", str(s, "version"), num(s, "uptime_s"));
	printf("backend:   %s\n", json_object_get(s, "backend_note") ? str(s, "backend_note") : "(stopped)");
	if (ntg > 1)
		printf("targets:   %zu (the lines below are about the first; every target is in the table)\n", ntg);
	json_t *fl = json_object_get(s, "gpu_fleet");
	if (fl)
		printf("gpu:       one kernel for %.0f targets on %s: %.0f groups of %.0f blocks; %.0f group ticks, %.0f late, "
		       "longest %.0f us\n", num(fl, "targets"), str(fl, "device"), num(fl, "groups"), num(fl, "group_blocks"),
		       num(fl, "group_ticks"), num(fl, "late_group_ticks"), num(fl, "max_group_tick_us"));
	printf("target:    %s (%s) %s%s%s\n", str(t, "source"), str(s, "target_name"),
	       json_object_get(t, "phase") ? str(t, "phase") : str(t, "state"),
	       json_object_get(t, "kernel") ? ", Linux " : "", str(t, "kernel"));
	if (json_object_get(t, "error"))
		printf("           %s\n", str(t, "error"));
	if (json_object_get(t, "retry_error"))
		printf("           looking for it again: %s\n", str(t, "retry_error"));
	printf("rules:     %.0f from %s (%.0f disabled), %.0f reloads\n", num(s, "rules"), str(s, "rules_dir"),
	       num(s, "rules_disabled"), num(s, "reloads"));
	printf("ticks:     %.0f every %.0f ms, %.0f late; last %.0f us, longest %.0f us\n", num(s, "ticks"),
	       num(s, "tick_ns") / 1e6, num(s, "late_ticks"), num(s, "last_tick_us"), num(s, "max_tick_us"));
	printf("alerts:    %.0f delivered, %.0f dropped (ring full); %.0f read errors\n", num(s, "alerts_delivered"),
	       num(s, "ring_dropped"), num(s, "read_errors"));
	if (json_object_get(s, "reads_per_tick")) {
		printf("reads:     %.0f words a tick, the most %.0f", num(s, "reads_per_tick"), num(s, "max_reads_per_tick"));
		if (json_is_integer(json_object_get(s, "read_budget")))
			printf("; budget %.0f, %.0f ticks cut off there", num(s, "read_budget"), num(s, "ticks_over_budget"));
		else
			printf("; no read budget");
		putchar('\n');
	}
	if (json_object_get(s, "task_table")) {
		printf("tasks:     %.0f in a table of %.0f", num(s, "tasks"), num(s, "task_table"));
		if (num(s, "tasks_found") > num(s, "task_table"))
			printf(": FULL, the target has %.0f (see the log: raise [engine] max_tasks or history_memory)",
			       num(s, "tasks_found"));
		if (json_object_get(s, "task_walk_error"))
			printf(" (the last walk failed: error %.0f)", num(s, "task_walk_error"));
		putchar('\n');
	}
	const char *kind;
	json_t *ko;
	json_object_foreach(json_object_get(s, "objects"), kind, ko) {
		if (!json_object_get(ko, "error"))
			continue;
		printf("%-10s %.0f in a table of %.0f", kind, num(ko, "found"), num(ko, "table"));
		if (num(ko, "error") == -34)
			printf(": FULL (see the log: raise [engine] objects)\n");
		else
			printf(": the last walk failed (error %.0f)\n", num(ko, "error"));
	}
	if (json_object_get(s, "alerts_wake")) {
		if (strcmp(str(s, "alerts_wake"), "poll"))
			printf("delivery:  at once (woken by the %s)\n", str(s, "alerts_wake"));
		else
			printf("delivery:  every %.0f ms (this driver cannot wake sentineld)\n", num(s, "notify_delay_ns") / 1e6);
	}
	if (json_object_get(s, "last_reload"))
		printf("reload:    %s\n", str(s, "last_reload"));
	json_t *ml = json_object_get(s, "main_loop");
	if (ml && num(s, "uptime_s") > 0)
		printf("host:      sentineld's main thread used %.3f s of CPU (%.3f%% of a core), %.0f wakeups\n",
		       num(ml, "cpu_s"), 100 * num(ml, "cpu_s") / num(s, "uptime_s"), num(ml, "wakeups"));
	print_targets(s);
}

/* A value for a person: 4 significant digits, k/M/G/T past 100,000
 * (268.4M, not 2.68431e+08) */
static void ctl_value(char *buf, size_t n, double v)
{
	static const char sfx[] = "kMGTPE";
	double a = fabs(v);
	int k = -1;
	while (a >= 1e5 && k < 5) {
		a /= 1000;
		v /= 1000;
		k++;
	}
	if (k < 0)
		snprintf(buf, n, "%.4g", v);
	else
		snprintf(buf, n, "%.4g%c", v, sfx[k]);
}

/* A duration for a person: 9.2s, 3m05s, 2h10m, 1d03h */
static void ctl_duration(char *buf, size_t n, double s)
{
	unsigned long t = s > 0 ? (unsigned long)s : 0;
	if (s < 60)
		snprintf(buf, n, "%.1fs", s > 0 ? s : 0.0);
	else if (t < 3600)
		snprintf(buf, n, "%lum%02lus", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, n, "%luh%02lum", t / 3600, t % 3600 / 60);
	else
		snprintf(buf, n, "%lud%02luh", t / 86400, t % 86400 / 3600);
}

static void print_rules(json_t *a, bool alerts)
{
	size_t i;
	json_t *r;
	if (!json_array_size(a)) {
		printf(alerts ? "no alert is pending or firing\n" : "no rules\n");
		return;
	}
	/* a TARGET column where the answer is about several */
	bool several = false;
	json_array_foreach(a, i, r)
		several |= strcmp(str(r, "target"), str(json_array_get(a, 0), "target")) != 0;
	if (several)
		printf("%-16s ", "TARGET");
	printf("%-28s %-9s %-8s %12s %-10s %s\n", "RULE", "STATE", "SEVERITY", "VALUE", "WHO", alerts ? "SUMMARY" : "FOR");
	json_array_foreach(a, i, r) {
		if (several)
			printf("%-16s ", str(r, "target"));
		char who[32] = "", val[32] = "-", since[32] = "";
		/* who it is about: only while it pends or fires */
		bool active = !strcmp(str(r, "state"), "pending") || !strcmp(str(r, "state"), "firing");
		if (active && json_object_get(r, "cpu"))
			snprintf(who, sizeof who, "cpu %.0f", num(r, "cpu"));
		else if (active && json_object_get(r, "pid"))
			snprintf(who, sizeof who, "pid %.0f", num(r, "pid"));
		if (json_is_number(json_object_get(r, "value")))
			ctl_value(val, sizeof val, num(r, "value"));
		if (json_object_get(r, "for_s"))
			ctl_duration(since, sizeof since, num(r, "for_s"));
		printf("%-28s %-9s %-8s %12s %-10s %s\n", str(r, "name"), str(r, "state"), str(r, "severity"), val, who,
		       alerts ? str(r, "summary") : since);
		if (!alerts && json_object_get(r, "disabled_because"))
			printf("    disabled: %s\n", str(r, "disabled_because"));
	}
}

/* Ask sentineld at path, print its answer; the exit status. */
static int ctl_run(const char *path, const char *cmd, bool json, double timeout_s)
{
	json_t *resp = request(path, cmd, timeout_s);
	if (!resp)
		return 2;
	bool ok = json_is_true(json_object_get(resp, "ok"));
	if (json) {
		char *s = json_dumps(resp, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		puts(s ? s : "{}");
		free(s);
	} else if (!ok) {
		if (json_object_get(resp, "diagnostics"))
			fputs(str(resp, "diagnostics"), stderr);
		fprintf(stderr, "sentinelctl: %s\n", json_object_get(resp, "message") ? str(resp, "message") : str(resp, "error"));
	} else if (!strcmp(cmd, "status")) {
		print_status(json_object_get(resp, "status"));
	} else if (!strcmp(cmd, "reload")) {
		printf("%s\n", str(resp, "message"));
	} else {
		print_rules(json_object_get(resp, cmd), !strcmp(cmd, "alerts"));
	}
	json_decref(resp);
	return ok ? 0 : 1;
}

/* [control] socket in a sentinel.conf (inih, as sentineld reads it) */
typedef struct { char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; } CtlSock;
static int ctl_conf_key(void *user, const char *sec, const char *key, const char *val)
{
	if (!strcmp(sec, "control") && !strcmp(key, "socket"))
		snprintf(((CtlSock *)user)->path, sizeof ((CtlSock *)user)->path, "%s", val);
	return 1;
}

/* The socket a configuration file names: 0 (sock->path empty when it
 * names none), or -1 when the file cannot be read. */
static int ctl_conf_socket(const char *conf, CtlSock *sock)
{
	sock->path[0] = 0;
	return ini_parse(conf, ctl_conf_key, sock) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},    {"version", no_argument, NULL, 'V'},
		{"socket", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
		{"timeout", required_argument, NULL, 't'}, {"config", required_argument, NULL, 'c'},
		{NULL, 0, NULL, 0},
	};
	const char *path = NULL, *conf = NULL;
	CtlSock sock;
	bool json = false;
	double timeout_s = 0;
	char *end;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hVs:t:c:", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("sentinelctl %s\n", SENTINEL_VERSION);
			return 0;
		case 's':
			path = optarg;
			break;
		case 'c':
			conf = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 't':
			timeout_s = strtod(optarg, &end);
			if (end == optarg || *end || !(timeout_s > 0) || timeout_s > 86400) {
				fprintf(stderr, "sentinelctl: --timeout '%s': give seconds, more than 0 and at most 86400\n",
					optarg);
				return 2;
			}
			break;
		case ':':
			fprintf(stderr, "sentinelctl: %s needs a value; see sentinelctl --help\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "sentinelctl: unknown argument '%s'; see sentinelctl --help\n", argv[optind - 1]);
			return 2;
		}
	}
	const char *cmd = optind < argc ? argv[optind] : NULL;
	if (optind + 1 < argc) {
		fprintf(stderr, "sentinelctl: unknown argument '%s'; see sentinelctl --help\n", argv[optind + 1]);
		return 2;
	}
	if (!cmd) {
		fprintf(stderr, "sentinelctl: give a command: status, rules, alerts or reload (see --help)\n");
		return 2;
	}
	if (strcmp(cmd, "status") && strcmp(cmd, "rules") && strcmp(cmd, "alerts") && strcmp(cmd, "reload")) {
		fprintf(stderr, "sentinelctl: unknown command '%s'; the commands are status, rules, alerts and reload\n", cmd);
		return 2;
	}
	/* the socket: -s, the one -c's file names, $SENTINEL_SOCKET, the
	 * installed configuration's, the default */
	if (!path && conf) {
		if (ctl_conf_socket(conf, &sock) < 0) {
			fprintf(stderr, "sentinelctl: cannot read %s: %s; give sentineld's configuration file\n", conf,
				strerror(errno));
			return 2;
		}
		path = sock.path[0] ? sock.path : "/run/sentinel/sentinel.sock";
	}
	if (!path)
		path = getenv("SENTINEL_SOCKET");
	if (!path && !ctl_conf_socket(SENTINEL_SYSCONFDIR "/sentinel/sentinel.conf", &sock) && sock.path[0])
		path = sock.path;
	if (!path)
		path = "/run/sentinel/sentinel.sock";
	if (!timeout_s)
		timeout_s = strcmp(cmd, "reload") ? 10 : 600;
	return ctl_run(path, cmd, json, timeout_s);
}
