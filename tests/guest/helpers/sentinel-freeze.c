/* sentinel-freeze - hang the guest's scheduler: every CPU spins in a
 * SCHED_FIFO task at the top priority, with real-time throttling off, so
 * nothing else ever runs again.  From outside it is the full deadlock of
 * the paper: no CPU switches context, the kernel stays in memory.  The
 * guest's shell never answers again: the test kills the guest after.
 *
 *   sentinel-freeze
 *
 * Prints "freezing N CPUs" and returns, with the spinners (one per online
 * CPU, pinned) starting a moment later.  Static, so it runs from the
 * busybox initramfs; needs root (the guest's init runs as root).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
