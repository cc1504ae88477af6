/* procpoll - what a 10 Hz /proc-polling agent costs: the comparison point
 * for sentineld's host CPU use (bench/engine.py runs both side by side).
 *
 *   procpoll [HZ]      every 1/HZ s read /proc/stat, /proc/meminfo,
 *                      /proc/vmstat, /proc/loadavg and every /proc/PID/stat,
 *                      parse the numbers, as node_exporter-style agents do
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long long sink;

static void slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[4096];
	while (fgets(line, sizeof line, f))
		for (char *p = line; *p; p++)
			if (*p >= '0' && *p <= '9')
				sink += (unsigned long long)strtoull(p, &p, 10), p--;
	fclose(f);
}

int main(int argc, char **argv)
{
	double hz = argc > 1 ? atof(argv[1]) : 10;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	long step = (long)(1e9 / hz);
	for (;;) {
		slurp("/proc/stat");
		slurp("/proc/meminfo");
		slurp("/proc/vmstat");
		slurp("/proc/loadavg");
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] < '0' || de->d_name[0] > '9')
				continue;
			char p[300];
			snprintf(p, sizeof p, "/proc/%s/stat", de->d_name);
			slurp(p);
		}
		if (d)
			closedir(d);
		next.tv_nsec += step;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return (int)(sink & 1);
}
