/* sentinel-pmemtest - drive /dev/sentinel_pmem from inside a test guest.
 *
 *   sentinel-pmemtest ranges      the module's ranges (ioctl) and generation
 *   sentinel-pmemtest refusals    every refusal the module promises, one
 *                                 line each: "ok WHAT" or "FAIL WHAT"
 *   sentinel-pmemtest hold SECS [I]  map range I (default 0) and sleep (for
 *                                 rmmod, and memory offlining)
 *
 * Static, no libc beyond what -static gives; built by make into the
 * guest-helpers archive (tests/guest/helpers).
 */
#define _GNU_SOURCE
#include "sentinel_pmem.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEV "/dev/sentinel_pmem"

static struct sentinel_pmem_range r[SENTINEL_PMEM_MAX_RANGES];
static int failed;

static int get_ranges(int fd, struct sentinel_pmem_ranges *q)
{
	memset(q, 0, sizeof *q);
	q->count = SENTINEL_PMEM_MAX_RANGES;
	q->ranges = (uint64_t)(uintptr_t)r;
	return ioctl(fd, SENTINEL_PMEM_IOC_RANGES, q);
}

static void expect(int cond, const char *what, int err)
{
	printf("%s %s%s%s\n", cond ? "ok" : "FAIL", what, cond ? "" : ": ", cond ? "" : strerror(err));
	failed |= !cond;
}

/* open (in a child that gave something up) must fail with want */
static void open_as(const char *what, int drop_rawio, uid_t uid, int flags, int want)
{
	pid_t p = fork();
	if (p == 0) {
		if (drop_rawio) {
			struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
			struct __user_cap_data_struct d[2];
			if (syscall(SYS_capget, &h, d))
				_exit(3);
			d[CAP_SYS_RAWIO / 32].effective &= ~(1u << (CAP_SYS_RAWIO % 32));
			d[CAP_SYS_RAWIO / 32].permitted &= ~(1u << (CAP_SYS_RAWIO % 32));
			if (syscall(SYS_capset, &h, d))
				_exit(3);
		}
		if (uid && setuid(uid))
			_exit(3);
		int fd = open(DEV, flags);
		_exit(fd >= 0 ? 0 : errno == want ? 1 : 2);
	}
	int st = 0;
	waitpid(p, &st, 0);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 9;
	printf("%s %s%s\n", code == 1 ? "ok" : "FAIL", what,
	       code == 0 ? ": it opened" : code == 2 ? ": another error" : code == 3 ? ": setup failed" : "");
	failed |= code != 1;
}

static int refusals(void)
{
	struct sentinel_pmem_ranges q;
	int fd = open(DEV, O_RDONLY);
	if (fd < 0) {
		printf("FAIL open %s read-only as root: %s\n", DEV, strerror(errno));
		return 1;
	}
	if (get_ranges(fd, &q) || !q.count) {
		printf("FAIL the ranges ioctl: %s\n", strerror(errno));
		return 1;
	}
	uint64_t a = r[0].start, n = r[0].size, end = r[q.count - 1].start + r[q.count - 1].size;
	long pg = sysconf(_SC_PAGESIZE);
	void *p;
	/* what works */
	p = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, (off_t)a);
	expect(p != MAP_FAILED, "a read-only shared mapping of the first range maps", errno);
	if (p != MAP_FAILED) {
		volatile uint64_t v = *(volatile uint64_t *)p;
		(void)v;
		expect(mprotect(p, (size_t)pg, PROT_READ | PROT_WRITE) && errno == EACCES,
		       "mprotect to writable is refused (EACCES)", errno);
		munmap(p, (size_t)pg);
	}
	p = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE, fd, (off_t)a);
	expect(p != MAP_FAILED, "a read-only private mapping maps", errno);
	if (p != MAP_FAILED)
		munmap(p, (size_t)pg);
	/* what does not */
	errno = 0;
	p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a);
	expect(p == MAP_FAILED && errno == EACCES, "a writable shared mapping is refused (EACCES: opened read-only)", errno);
	errno = 0;
	p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)a);
	expect(p == MAP_FAILED && errno == EPERM, "a writable private mapping is refused (EPERM)", errno);
	errno = 0;
	p = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, (off_t)end);
	expect(p == MAP_FAILED && errno == EINVAL, "an offset past the last System RAM range is refused (EINVAL)", errno);
	errno = 0;
	p = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, (off_t)(a + n));
	expect(p == MAP_FAILED && errno == EINVAL, "the first page after the first range (a hole) is refused (EINVAL)",
	       errno);
	errno = 0;
	p = mmap(NULL, 2 * (size_t)pg, PROT_READ, MAP_SHARED, fd, (off_t)(a + n - (uint64_t)pg));
	expect(p == MAP_FAILED && errno == EINVAL, "a mapping that runs past the end of a range is refused (EINVAL)",
	       errno);
	errno = 0;
	p = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, (off_t)0xfee00000);
	expect(p == MAP_FAILED && errno == EINVAL, "MMIO (the local APIC at 0xfee00000) is refused (EINVAL)", errno);
	char c;
	errno = 0;
	expect(read(fd, &c, 1) < 0 && errno == EINVAL, "read() is refused (EINVAL: mmap only)", errno);
	errno = 0;
	expect(ioctl(fd, _IO(SENTINEL_PMEM_IOC_MAGIC, 0x7f), 0) < 0 && errno == ENOTTY,
	       "an unknown ioctl is refused (ENOTTY)", errno);
	close(fd);
	errno = 0;
	fd = open(DEV, O_RDWR);
	expect(fd < 0 && errno == EPERM, "open for reading and writing is refused (EPERM)", errno);
	if (fd >= 0)
		close(fd);
	errno = 0;
	fd = open(DEV, O_WRONLY);
	expect(fd < 0 && errno == EPERM, "open for writing is refused (EPERM)", errno);
	if (fd >= 0)
		close(fd);
	open_as("root without CAP_SYS_RAWIO is refused (EPERM)", 1, 0, O_RDONLY, EPERM);
	open_as("a user other than root is refused (EACCES: the node is 0400 root)", 0, 65534, O_RDONLY, EACCES);
	return failed;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help")) {
		printf("usage: sentinel-pmemtest ranges | refusals | hold SECONDS [RANGE]\n");
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "refusals"))
		return refusals();
	int fd = open(DEV, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "sentinel-pmemtest: %s: %s\n", DEV, strerror(errno));
		return 1;
	}
	struct sentinel_pmem_ranges q;
	if (get_ranges(fd, &q)) {
		fprintf(stderr, "sentinel-pmemtest: ranges: %s\n", strerror(errno));
		return 1;
	}
	if (!strcmp(argv[1], "ranges")) {
		printf("abi %u generation %llu ranges %u\n", q.abi, (unsigned long long)q.generation, q.count);
		for (unsigned i = 0; i < q.count && i < SENTINEL_PMEM_MAX_RANGES; i++)
			printf("%#llx-%#llx\n", (unsigned long long)r[i].start,
			       (unsigned long long)(r[i].start + r[i].size - 1));
		return 0;
	}
	if (!strcmp(argv[1], "hold") && argc > 2) {
		unsigned i = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
		if (i >= q.count || i >= SENTINEL_PMEM_MAX_RANGES) {
			fprintf(stderr, "sentinel-pmemtest: no range %u (%u ranges)\n", i, q.count);
			return 1;
		}
		void *p = mmap(NULL, (size_t)r[i].size, PROT_READ, MAP_SHARED, fd, (off_t)r[i].start);
		if (p == MAP_FAILED) {
			perror("sentinel-pmemtest: mmap");
			return 1;
		}
		close(fd);                          /* the mapping alone holds the module */
		printf("mapped %#llx bytes at %#llx\n", (unsigned long long)r[i].size, (unsigned long long)r[i].start);
		fflush(stdout);
		sleep((unsigned)atoi(argv[2]));
		return 0;
	}
	fprintf(stderr, "sentinel-pmemtest: unknown command %s\n", argv[1]);
	return 2;
}
