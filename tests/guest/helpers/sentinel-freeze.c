/* sentinel-freeze - hang the guest's scheduler: every CPU spins in a
 * SCHED_FIFO task at the top priority, with real-time throttling off, so
 * nothing else ever runs again.  From outside it is the full deadlock of
 * the paper: no CPU switches context, the kernel stays in memory.  The
 * guest's shell never answers again: the test kills the guest after.
 *
 * Since Linux 6.12 RT throttling is not the only thing that lets the
 * others run: the fair server (a deadline server per CPU) gives normal
 * tasks 50 ms of every second even under a SCHED_FIFO spinner, so the
 * CPUs still switch context about once a second.  Its runtime is set to
 * 0 on every CPU (debugfs: sched/fair_server/cpuN/runtime), which the
 * kernel allows with a warning; older kernels have no such directory.
 *
 *   sentinel-freeze
 *
 * Prints "freezing N CPUs" and returns, with the spinners (one per online
 * CPU, pinned) starting a moment later.  Static, so it runs from the
 * busybox initramfs; needs root (the guest's init runs as root).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define FAIR_SERVER "/sys/kernel/debug/sched/fair_server"

/* Turn off 6.12's fair server on every CPU; 0, or -1 with a message.
 * No directory (before 6.12, or no debugfs in the kernel): nothing to do. */
static int fair_server_off(void)
{
	DIR *d = opendir(FAIR_SERVER);
	if (!d && mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL) == 0)
		d = opendir(FAIR_SERVER);
	if (!d)
		return 0;
	int n = 0, bad = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "cpu", 3))
			continue;
		char path[300];
		snprintf(path, sizeof path, FAIR_SERVER "/%s/runtime", e->d_name);
		int fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "0", 1) != 1) {
			fprintf(stderr, "sentinel-freeze: %s: %s\n", path, strerror(errno));
			bad++;
		}
		if (fd >= 0)
			close(fd);
		n++;
	}
	closedir(d);
	return bad || !n ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr, "usage: %s\n"
			"  hangs this machine's scheduler for good: one SCHED_FIFO 99 spinner per CPU\n", argv[0]);
		return 2;
	}
	/* no RT throttling: else 5% of every second is left to the rest */
	int fd = open("/proc/sys/kernel/sched_rt_runtime_us", O_WRONLY);
	if (fd < 0 || write(fd, "-1", 2) != 2) {
		perror("sentinel-freeze: /proc/sys/kernel/sched_rt_runtime_us");
		return 1;
	}
	close(fd);
	if (fair_server_off())
		return 1;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	printf("freezing %ld CPUs\n", ncpu);
	fflush(stdout);
	for (long c = 0; c < ncpu; c++) {
		pid_t p = fork();
		if (p < 0) {
			perror("sentinel-freeze: fork");
			return 1;
		}
		if (p)
			continue;
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)c, &set);
		sched_setaffinity(0, sizeof set, &set);
		sleep(1);                  /* the shell answers first */
		struct sched_param sp = {.sched_priority = sched_get_priority_max(SCHED_FIFO)};
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			perror("sentinel-freeze: sched_setscheduler");
		for (;;)
			;
	}
	return 0;
}
