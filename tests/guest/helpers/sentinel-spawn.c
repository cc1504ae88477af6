/* sentinel-spawn - fill a guest with tasks, and keep them coming and going:
 * the load of the task-scale tests and benchmarks.
 *
 *   sentinel-spawn PROCS [THREADS] [--churn PER_SECOND] [--log FILE]
 *   sentinel-spawn --ps
 *
 * Starts PROCS sleeping processes, each with THREADS threads in all (the
 * leader and THREADS - 1 more on 16 KiB stacks; default 1), prints
 * "ready N" once every one runs, and then sleeps; killing it (SIGTERM,
 * SIGINT) kills them all.  With --churn, it also kills one of them and
 * starts another PER_SECOND times a second, and with --log every PID it
 * started or reaped goes to FILE ("+PID" or "-PID", a line each, flushed):
 * a test that compares a snapshot with /proc can tell a task that came
 * and went between two looks from one that never was.
 *
 * --ps prints "PID STATE COMM" for every process in /proc, what the tests
 * compare with: a shell loop over 50,000 /proc entries takes minutes under
 * TCG.
 *
 * Small by construction (static, no allocation in the children), so
 * 50,000 tasks fit in a few GiB of guest; raise kernel.pid_max and
 * kernel.threads-max first.  Static, so it runs from the busybox initramfs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static pid_t *kids;
static long nkids;
static FILE *logf;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* The child: its threads, a byte on the pipe, then sleep until killed. */
static void child(int threads, int fd)
{
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	prctl(PR_SET_NAME, "spawned", 0, 0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 16384);
	for (int t = 1; t < threads; t++) {
		pthread_t th;
		if (pthread_create(&th, &a, sleeper, NULL))
			break;
	}
	char c = 1;
	if (write(fd, &c, 1) < 0)
		_exit(1);
	for (;;)
		pause();
}

static pid_t spawn(int threads, int fd)
{
	pid_t p = fork();
	if (p == 0)
		child(threads, fd);
	if (p > 0 && logf) {
		fprintf(logf, "+%d\n", (int)p);
		fflush(logf);
	}
	return p;
}

/* --ps: "PID STATE COMM" from each /proc/PID/stat */
static int ps(void)
{
	DIR *d = opendir("/proc");
	if (!d) {
		perror("sentinel-spawn: /proc");
		return 1;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], buf[512];
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		char *l = strchr(buf, '('), *r = strrchr(buf, ')');
		if (!l || !r || r[1] != ' ' || !r[2])
			continue;
		*r = 0;
		printf("%s %c %s\n", e->d_name, r[2], l + 1);
	}
	closedir(d);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: sentinel-spawn PROCS [THREADS] [--churn PER_SECOND] [--log FILE]\n"
		"  starts PROCS sleeping processes of THREADS threads each, prints \"ready N\",\n"
		"  and with --churn replaces one of them PER_SECOND times a second\n"
		"usage: sentinel-spawn --ps\n"
		"  prints PID STATE COMM for every process\n");
}

int main(int argc, char **argv)
{
	long procs = -1, threads = 1;
	double churn = 0;
	const char *logpath = NULL;
	if (argc == 2 && !strcmp(argv[1], "--ps"))
		return ps();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--churn") && i + 1 < argc)
			churn = atof(argv[++i]);
		else if (!strcmp(argv[i], "--log") && i + 1 < argc)
			logpath = argv[++i];
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return usage(), 0;
		else if (procs < 0)
			procs = atol(argv[i]);
		else
			threads = atol(argv[i]);
	}
	if (procs < 1 || threads < 1 || churn < 0) {
		usage();
		return 2;
	}
	if (logpath && !(logf = fopen(logpath, "w"))) {
		fprintf(stderr, "sentinel-spawn: %s: %s\n", logpath, strerror(errno));
		return 1;
	}
	kids = calloc((size_t)procs, sizeof *kids);
	int pfd[2];
	if (!kids || pipe(pfd)) {
		perror("sentinel-spawn");
		return 1;
	}
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	for (nkids = 0; nkids < procs && !stop; nkids++) {
		if ((kids[nkids] = spawn((int)threads, pfd[1])) < 0) {
			fprintf(stderr, "sentinel-spawn: fork after %ld: %s (raise kernel.pid_max, kernel.threads-max?)\n",
				nkids, strerror(errno));
			break;
		}
	}
	for (long got = 0; got < nkids && !stop;) {
		char buf[4096];
		ssize_t r = read(pfd[0], buf, sizeof buf);
		if (r > 0)
			got += r;
		else if (r < 0 && errno != EINTR)
			break;
	}
	printf("ready %ld\n", nkids);
	fflush(stdout);
	struct timespec gap = {0, 0};
	if (churn > 0) {
		double s = 1.0 / churn;
		gap.tv_sec = (time_t)s;
		gap.tv_nsec = (long)((s - (double)gap.tv_sec) * 1e9);
	}
	unsigned seed = (unsigned)getpid();
	while (!stop) {
		if (churn <= 0) {
			pause();
			continue;
		}
		nanosleep(&gap, NULL);
		if (stop || !nkids)
			break;
		long k = (long)(rand_r(&seed) % (unsigned)nkids);
		kill(kids[k], SIGKILL);
		waitpid(kids[k], NULL, 0);
		if (logf) {
			fprintf(logf, "-%d\n", (int)kids[k]);
			fflush(logf);
		}
		pid_t p = spawn((int)threads, pfd[1]);
		if (p > 0) {
			kids[k] = p;
			char c;
			while (read(pfd[0], &c, 1) < 0 && errno == EINTR && !stop)
				;
		}
	}
	for (long i = 0; i < nkids; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return 0;
}
