/* msrc.c - memory sources (see msrc.h). */
#include "msrc.h"
#include "sentinel_pmem.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define Q35_SPLIT_MIN 0xb0000000ull   /* q35: guests with at least 2.75 GiB ... */
#define Q35_LOWMEM    0x80000000ull   /* ... keep 2 GiB below the PCI hole */
#define FOUR_GIB      0x100000000ull

int ks_fail(char *err, size_t n, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return code;
}

const char *ms_kind_name(MsKind k)
{
	static const char *n[] = {"ramfile", "raw", "vmcore", "pmem", "kcore"};
	return n[k];
}

static void ms_add(MemSource *s, uint64_t phys, uint64_t size, const void *ptr)
{
	if (s->nranges < KX_MAX_RANGES && size)
		s->r[s->nranges++] = (kx_range){phys, size, (uint64_t)(uintptr_t)ptr};
}

static int ms_map_file(MemSource *s, char *err, size_t n)
{
	struct stat st;
	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return ks_fail(err, n, -errno, "%s: %s", s->path, strerror(errno));
	if (fstat(s->fd, &st) < 0)
		return ks_fail(err, n, -errno, "%s: %s", s->path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)KX_PAGE_SIZE)
		return ks_fail(err, n, -EINVAL, "%s: not a memory image (a regular file of at least 4 KiB)", s->path);
	s->map_len = (size_t)st.st_size;
	/* MAP_SHARED: a live guest's RAM file changes under us, and we must see it */
	s->map = mmap(NULL, s->map_len, PROT_READ, MAP_SHARED, s->fd, 0);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		return ks_fail(err, n, -errno, "%s: mmap: %s", s->path, strerror(errno));
	}
	return 0;
}

/* ramfile and raw: one range, or two around q35's PCI hole. */
static int ms_open_flat(MemSource *s, const char *opts, char *err, size_t n)
{
	int e = ms_map_file(s, err, n);
	if (e)
		return e;
	uint64_t size = s->map_len, low = size;
	if (opts && !strncmp(opts, "split=", 6)) {
		const char *v = opts + 6;
		if (!strcmp(v, "none"))
			low = size;
		else if (strcmp(v, "auto")) {
			char *end;
			low = strtoull(v, &end, 0);
			if (*end || low == 0 || low > size || low % KX_PAGE_SIZE)
				return ks_fail(err, n, -EINVAL, "split=%s: give the bytes below 4 GiB, a multiple of 4096", v);
		} else if (size >= Q35_SPLIT_MIN)
			low = Q35_LOWMEM;
	} else if (opts && *opts) {
		return ks_fail(err, n, -EINVAL, "unknown option '%s' (ramfile takes split=auto|none|BYTES)", opts);
	} else if (s->kind == MS_RAMFILE && size >= Q35_SPLIT_MIN) {
		low = Q35_LOWMEM;
	}
	ms_add(s, 0, low, s->map);
	if (low < size)
		ms_add(s, FOUR_GIB, size - low, (const char *)s->map + low);
	return 0;
}

/* ---- a running QEMU: qemu:PID, libvirt:DOMAIN ------------------------------------------ */

#define MS_QEMU_MIN_RAM (16ull << 20)

/* The guest RAM of QEMU process pid, as a file this process can map: the
 * largest shared mapping in /proc/PID/maps with something behind it (a
 * file, a memfd, a hugetlbfs file, deleted or not), reached through
 * /proc/PID/map_files (root: CAP_SYS_ADMIN).  Several memory backends
 * (NUMA nodes, DIMMs): the largest is the first node's, the one booted from. */
static int ms_qemu_path(long pid, char *out, size_t outn, char *err, size_t n)
{
	char maps[64];
	snprintf(maps, sizeof maps, "/proc/%ld/maps", pid);
	FILE *f = fopen(maps, "re");
	if (!f)
		return ks_fail(err, n, -errno, "qemu:%ld: %s: %s (is the VM running? the PID of its QEMU process)", pid,
			       maps, strerror(errno));
	char line[4096], best[64] = "", anon = 0;
	unsigned long long best_len = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi;
		char perms[8] = "";
		int path_at = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &lo, &hi, perms, &path_at) < 3 || hi - lo < MS_QEMU_MIN_RAM)
			continue;
		bool has_path = path_at > 0 && line[path_at] && line[path_at] != '\n' && line[path_at] != '[';
		if (perms[3] != 's' || !has_path) {
			anon |= perms[3] == 'p' && !has_path && hi - lo >= 64ull << 20;
			continue;
		}
		if (hi - lo > best_len) {
			best_len = hi - lo;
			snprintf(best, sizeof best, "%llx-%llx", lo, hi);
		}
	}
	fclose(f);
	if (!best_len)
		return ks_fail(err, n, -ENOENT, "qemu:%ld: no shared guest RAM in %s%s: give the VM a shared memory backend "
			       "(-object memory-backend-memfd,share=on or memory-backend-file,share=on; libvirt: "
			       "<memoryBacking><access mode='shared'/></memoryBacking>), see docs/targets.md", pid, maps,
			       anon ? " (its RAM is private anonymous memory)" : "");
	snprintf(out, outn, "/proc/%ld/map_files/%s", pid, best);
	return 0;
}

/* Where libvirt keeps a running domain's files: $SENTINEL_LIBVIRT_RUNDIR,
 * else /run/libvirt/qemu; DOMAIN.pid, DOMAIN.xml (its status). */
static void ms_libvirt_file(const char *dom, const char *ext, char *path, size_t n)
{
	const char *dir = getenv("SENTINEL_LIBVIRT_RUNDIR");
	snprintf(path, n, "%s/%s.%s", dir && *dir ? dir : "/run/libvirt/qemu", dom, ext);
}

/* libvirt:DOMAIN -> the PID libvirt wrote for the running domain's QEMU. */
static int ms_libvirt_pid(const char *dom, long *pid, char *err, size_t n)
{
	char path[4096];
	if (!*dom || strchr(dom, '/'))
		return ks_fail(err, n, -EINVAL, "libvirt:%s: give a domain's name (virsh list)", dom);
	ms_libvirt_file(dom, "pid", path, sizeof path);
	FILE *f = fopen(path, "re");
	if (!f)
		return ks_fail(err, n, -errno, "libvirt:%s: %s: %s (is the domain running? virsh start %s)", dom, path,
			       strerror(errno), dom);
	int got = fscanf(f, "%ld", pid);
	fclose(f);
	if (got != 1 || *pid <= 0)
		return ks_fail(err, n, -EINVAL, "libvirt:%s: %s holds no PID", dom, path);
	return 0;
}

/* The VM's name or PID in "qemu:ARG[,opts]" or "libvirt:ARG[,opts]" (arg
 * points past the colon) into name; returns where its options start, or NULL. */
static const char *ms_vm_arg(const char *arg, char *name, size_t n)
{
	const char *comma = strchr(arg, ',');
	snprintf(name, n, "%.*s", (int)(comma ? (size_t)(comma - arg) : strlen(arg)), arg);
	return comma;
}

int ms_vm_state(const char *spec, char *state, size_t n)
{
	if (strncmp(spec, "libvirt:", 8))
		return -ENOTSUP;
	char name[256], path[4096], buf[4096];
	ms_vm_arg(spec + 8, name, sizeof name);
	if (!*name || strchr(name, '/'))
		return -EINVAL;
	ms_libvirt_file(name, "xml", path, sizeof path);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t k = fread(buf, 1, sizeof buf - 1, f);    /* the root element comes first */
	fclose(f);
	buf[k] = 0;
	const char *at = strstr(buf, "<domstatus");
	const char *st = at ? strstr(at, "state=") : NULL;
	if (!st || (st[6] != '\'' && st[6] != '"'))
		return -EINVAL;
	const char *end = strchr(st + 7, st[6]);
	if (!end)
		return -EINVAL;
	snprintf(state, n, "%.*s", (int)(end - st - 7), st + 7);
	return 0;
}

/* qemu:PID[,opts] or libvirt:DOMAIN[,opts] -> /proc/PID/map_files/...[,opts]:
 * a RAM file as ramfile: reads it.  *out is malloc'd. */
static int ms_resolve_vm(const char *spec, char **out, char *err, size_t n)
{
	bool virt = !strncmp(spec, "libvirt:", 8);
	char name[256];
	const char *comma = ms_vm_arg(spec + (virt ? 8 : 5), name, sizeof name);
	long pid = 0;
	int e;
	if (virt) {
		if ((e = ms_libvirt_pid(name, &pid, err, n)))
			return e;
	} else {
		char *end;
		pid = strtol(name, &end, 10);
		if (!*name || *end || pid <= 0)
			return ks_fail(err, n, -EINVAL, "qemu:%s: give the QEMU process's PID (qemu:1234)", name);
	}
	char path[128];
	if ((e = ms_qemu_path(pid, path, sizeof path, err, n)))
		return e;
	size_t len = strlen(path) + (comma ? strlen(comma) : 0) + 1;
	if (!(*out = malloc(len)))
		return ks_fail(err, n, -ENOMEM, "out of memory");
	snprintf(*out, len, "%s%s", path, comma ? comma : "");
	return 0;
}

/* ELF vmcore: each PT_LOAD with file bytes is a range. */
static int ms_open_vmcore(MemSource *s, char *err, size_t n)
{
	int e = ms_map_file(s, err, n);
	if (e)
		return e;
	const unsigned char *b = s->map;
	if (s->map_len < sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG))
		return ks_fail(err, n, -EINVAL, "%s: not an ELF file", s->path);
	if (b[EI_CLASS] != ELFCLASS64 || b[EI_DATA] != ELFDATA2LSB)
		return ks_fail(err, n, -EINVAL, "%s: only 64-bit little-endian cores are supported", s->path);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
	if (eh->e_type != ET_CORE)
		return ks_fail(err, n, -EINVAL, "%s: an ELF file but not a core dump (e_type %u)", s->path, eh->e_type);
	if (eh->e_phoff > s->map_len || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > s->map_len - eh->e_phoff)
		return ks_fail(err, n, -EINVAL, "%s: program headers lie outside the file (truncated?)", s->path);
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(b + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !ph[i].p_filesz)
			continue;
		if (ph[i].p_offset > s->map_len || ph[i].p_filesz > s->map_len - ph[i].p_offset)
			return ks_fail(err, n, -EINVAL, "%s: segment %u lies outside the file (truncated?)", s->path, i);
		if (s->nranges == KX_MAX_RANGES)
			return ks_fail(err, n, -E2BIG, "%s: more than %d memory segments", s->path, KX_MAX_RANGES);
		ms_add(s, ph[i].p_paddr, ph[i].p_filesz, b + ph[i].p_offset);
	}
	if (!s->nranges)
		return ks_fail(err, n, -EINVAL, "%s: a core dump with no memory segments", s->path);
	return 0;
}

/* ---- this host: /dev/sentinel_pmem and /proc/kcore ------------------------------------ */

/* Where the running kernel keeps VMCOREINFO: /sys/kernel/vmcoreinfo says
 * "PHYS SIZE" (hex) to root.  Discovery reads there first. */
static void ms_vmcoreinfo_hint(MemSource *s)
{
	FILE *f = fopen("/sys/kernel/vmcoreinfo", "re");
	unsigned long long pa, size;
	if (!f)
		return;
	if (fscanf(f, "%llx %llx", &pa, &size) == 2 && pa && size) {
		s->vmcoreinfo_pa = pa;
		s->vmcoreinfo_size = size;
	}
	fclose(f);
}

/* ranges=A-B+C-D: inclusive ends, as /proc/iomem prints them, rounded
 * inward to whole pages */
static int ms_parse_ranges(MemSource *s, const char *v, uint64_t *phys, uint64_t *size, unsigned *n, char *err, size_t en)
{
	*n = 0;
	while (*v) {
		char *end;
		unsigned long long a = strtoull(v, &end, 16), z;
		if (end == v || *end != '-')
			goto bad;
		v = end + 1;
		z = strtoull(v, &end, 16);
		if (end == v || (*end && *end != '+') || z < a)
			goto bad;
		v = *end ? end + 1 : end;
		uint64_t lo = (a + KX_PAGE_SIZE - 1) & ~(KX_PAGE_SIZE - 1), hi = (z + 1) & ~(KX_PAGE_SIZE - 1);
		if (hi <= lo)
			continue;
		if (*n == KX_MAX_RANGES)
			return ks_fail(err, en, -E2BIG, "ranges=: more than %d ranges", KX_MAX_RANGES);
		phys[*n] = lo;
		size[*n] = hi - lo;
		(*n)++;
	}
	if (*n)
		return 0;
bad:
	return ks_fail(err, en, -EINVAL, "ranges=%s: give START-END[+START-END...] in hex, as /proc/iomem prints "
		       "System RAM (e.g. ranges=1000-9fbff+100000-1ffdbfff)", v);
}

/* The device's ranges and their generation (SENTINEL_PMEM_IOC_RANGES). */
static int ms_pmem_ranges(int fd, struct sentinel_pmem_range *r, unsigned *n, unsigned long long *gen)
{
	struct sentinel_pmem_ranges q = {.count = KX_MAX_RANGES, .ranges = (uint64_t)(uintptr_t)r};
	if (ioctl(fd, SENTINEL_PMEM_IOC_RANGES, &q))
		return -errno;
	if (q.abi != SENTINEL_PMEM_ABI)
		return -EPROTO;
	*n = q.count;
	*gen = q.generation;
	return 0;
}

/* pmem: each range mapped at its physical address (the device's mmap
 * offset is the physical address; a file standing in has RAM at its
 * offsets).  One mapping a range: the holes between them never map. */
static int ms_open_pmem(MemSource *s, const char *opts, char *err, size_t n)
{
	uint64_t phys[KX_MAX_RANGES], size[KX_MAX_RANGES];
	unsigned nr = 0;
	struct stat st;
	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return ks_fail(err, n, -ENOENT, "%s does not exist: load the module (modprobe sentinel_pmem, after "
				       "make module-install or the DKMS package; docs/targets.md), or try --source kcore, "
				       "which needs no module", s->path);
		if (e == EPERM || e == EACCES)
			return ks_fail(err, n, -e, "%s: %s: it takes root with CAP_SYS_RAWIO, and the kernel not locked "
				       "down (the kernel log says which refused)", s->path, strerror(e));
		return ks_fail(err, n, -e, "%s: %s", s->path, strerror(e));
	}
	if (fstat(s->fd, &st))
		return ks_fail(err, n, -errno, "%s: %s", s->path, strerror(errno));
	const char *rv = opts && !strncmp(opts, "ranges=", 7) ? opts + 7 : NULL;
	if (opts && *opts && !rv)
		return ks_fail(err, n, -EINVAL, "unknown option '%s' (pmem takes ranges=, for a file standing in for the "
			       "device)", opts);
	if (S_ISCHR(st.st_mode)) {
		struct sentinel_pmem_range r[KX_MAX_RANGES];
		if (rv)
			return ks_fail(err, n, -EINVAL, "%s: ranges= is for a file standing in for the device; the device "
				       "names its own", s->path);
		int e = ms_pmem_ranges(s->fd, r, &nr, &s->generation);
		if (e == -ENOTTY || e == -EINVAL)
			return ks_fail(err, n, e, "%s is not /dev/sentinel_pmem (it does not answer the ranges ioctl)",
				       s->path);
		if (e == -EPROTO)
			return ks_fail(err, n, e, "%s: the sentinel_pmem module speaks another ABI than this build (%d): "
				       "install the module of the same release", s->path, SENTINEL_PMEM_ABI);
		if (e)
			return ks_fail(err, n, e, "%s: the ranges ioctl: %s", s->path, strerror(-e));
		if (nr > KX_MAX_RANGES)
			return ks_fail(err, n, -E2BIG, "%s: this machine's RAM is %u ranges; Sentinel reads at most %d "
				       "(KX_MAX_RANGES)", s->path, nr, KX_MAX_RANGES);
		for (unsigned i = 0; i < nr; i++) {
			phys[i] = r[i].start;
			size[i] = r[i].size;
		}
		s->pmem_device = 1;
		ms_vmcoreinfo_hint(s);
	} else if (S_ISREG(st.st_mode)) {
		if (!rv)
			return ks_fail(err, n, -EINVAL, "%s: a file standing in for /dev/sentinel_pmem needs ranges= (the "
				       "System RAM lines of the machine's /proc/iomem, e.g. ranges=1000-9fbff+100000-1ffdbfff)",
				       s->path);
		int e = ms_parse_ranges(s, rv, phys, size, &nr, err, n);
		if (e)
			return e;
		for (unsigned i = 0; i < nr; i++)
			if (phys[i] + size[i] > (uint64_t)st.st_size)
				return ks_fail(err, n, -EINVAL, "%s: range %#llx-%#llx lies past the file's end (%lld bytes)",
					       s->path, (unsigned long long)phys[i],
					       (unsigned long long)(phys[i] + size[i] - 1), (long long)st.st_size);
	} else {
		return ks_fail(err, n, -EINVAL, "%s: neither the sentinel_pmem device nor a file", s->path);
	}
	for (unsigned i = 0; i < nr; i++) {
		void *p = mmap(NULL, size[i], PROT_READ, MAP_SHARED, s->fd, (off_t)phys[i]);
		if (p == MAP_FAILED)
			return ks_fail(err, n, -errno, "%s: mmap of %#llx-%#llx: %s", s->path, (unsigned long long)phys[i],
				       (unsigned long long)(phys[i] + size[i] - 1), strerror(errno));
		s->pmem_maps[s->nranges] = p;
		ms_add(s, phys[i], size[i], p);
	}
	if (!s->nranges)
		return ks_fail(err, n, -ENOENT, "%s: no RAM ranges", s->path);
	return 0;
}

/* kcore: /proc/kcore is an ELF core of the running kernel; its PT_LOAD
 * segments of the direct map carry their physical address (p_paddr), the
 * others (the kernel image, vmalloc, vmemmap, modules) are left out: the
 * reader finds those through the page tables.  kcore cannot be mapped, so
 * each range is an anonymous mapping registered with userfaultfd: the
 * first touch of a page faults, and the fault thread fills it with pread.
 * ms_refresh drops what was read, so the next touch reads again. */
struct MsKcore {
	int uffd, stop;              /* stop: an eventfd that ends the thread */
	pthread_t th;
	int running;
	uint64_t off[KX_MAX_RANGES]; /* each range's offset in the file */
	uint64_t page;
	unsigned char *buf;
	unsigned long long faults, errors;
};

static void *ms_kcore_thread(void *arg)
{
	MemSource *s = arg;
	struct MsKcore *k = s->kcore;
	struct pollfd pf[2] = {{.fd = k->uffd, .events = POLLIN}, {.fd = k->stop, .events = POLLIN}};
	for (;;) {
		if (poll(pf, 2, -1) < 0) {
			/* never leave while faults may wait on us: they would hang */
			if (errno != EINTR)
				usleep(1000);
			continue;
		}
		if (pf[1].revents)
			break;
		if (pf[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			k->errors++;
			usleep(1000);
			continue;
		}
		struct uffd_msg m;
		ssize_t got = read(k->uffd, &m, sizeof m);
		if (got != (ssize_t)sizeof m || m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		uint64_t a = m.arg.pagefault.address & ~(k->page - 1);
		unsigned i;
		for (i = 0; i < s->nranges; i++)
			if (a - s->r[i].ptr < s->r[i].size)
				break;
		if (i == s->nranges)
			continue;
		ssize_t r = pread(s->fd, k->buf, k->page, (off_t)(k->off[i] + (a - s->r[i].ptr)));
		k->faults++;
		int e;
		if (r != (ssize_t)k->page) {
			/* a page the kernel would not give (offline, poisoned): zeros, counted */
			k->errors++;
			struct uffdio_zeropage z = {.range = {.start = a, .len = k->page}};
			e = ioctl(k->uffd, UFFDIO_ZEROPAGE, &z) ? errno : 0;
		} else {
			struct uffdio_copy c = {.dst = a, .src = (uint64_t)(uintptr_t)k->buf, .len = k->page};
			e = ioctl(k->uffd, UFFDIO_COPY, &c) ? errno : 0;
		}
		if (e && e != EEXIST) {
			/* not filled (EEXIST: another fault filled it): wake the
			 * faulting thread, which faults again */
			struct uffdio_range w = {.start = a, .len = k->page};
			ioctl(k->uffd, UFFDIO_WAKE, &w);
			k->errors++;
		}
	}
	return NULL;
}

static int ms_open_kcore(MemSource *s, char *err, size_t n)
{
	Elf64_Ehdr eh;
	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		int e = errno;
		return ks_fail(err, n, -e, "%s: %s%s", s->path, strerror(e),
			       e == EPERM || e == EACCES ? " (it takes root, and a kernel not locked down in "
			       "confidentiality mode)" : e == ENOENT ? " (a kernel built without CONFIG_PROC_KCORE: load "
			       "the sentinel_pmem module and use --source pmem)" : "");
	}
	if (pread(s->fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum ||
	    eh.e_phnum > 4096)
		return ks_fail(err, n, -EINVAL, "%s: not a 64-bit ELF core", s->path);
	Elf64_Phdr *ph = calloc(eh.e_phnum, sizeof *ph);
	if (!ph)
		return ks_fail(err, n, -ENOMEM, "out of memory");
	ssize_t want = (ssize_t)(eh.e_phnum * sizeof *ph);
	if (pread(s->fd, ph, (size_t)want, (off_t)eh.e_phoff) != want) {
		free(ph);
		return ks_fail(err, n, -EIO, "%s: cannot read its program headers", s->path);
	}
	struct MsKcore *k = s->kcore = calloc(1, sizeof *k);
	if (!k) {
		free(ph);
		return ks_fail(err, n, -ENOMEM, "out of memory");
	}
	k->uffd = k->stop = -1;
	k->page = (uint64_t)sysconf(_SC_PAGESIZE);
	int e = 0;
	for (unsigned i = 0; i < eh.e_phnum && !e; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_paddr == (Elf64_Addr)-1 || ph[i].p_vaddr >= KX_START_KERNEL_MAP ||
		    !ph[i].p_memsz)
			continue;
		/* one segment a memory block (hot-added, virtio-mem): merge
		 * those that follow each other in memory and in the file */
		kx_range *last = s->nranges ? &s->r[s->nranges - 1] : NULL;
		if (last && last->phys + last->size == ph[i].p_paddr &&
		    k->off[s->nranges - 1] + last->size == ph[i].p_offset) {
			last->size += ph[i].p_memsz;
			continue;
		}
		if (s->nranges == KX_MAX_RANGES) {
			e = ks_fail(err, n, -E2BIG, "%s: more than %d RAM segments", s->path, KX_MAX_RANGES);
			break;
		}
		k->off[s->nranges] = ph[i].p_offset;
		ms_add(s, ph[i].p_paddr, ph[i].p_memsz, NULL);
	}
	free(ph);
	if (e)
		return e;
	if (!s->nranges)
		return ks_fail(err, n, -ENOENT, "%s: no RAM segments (not /proc/kcore?)", s->path);
	k->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (k->uffd < 0)
		return ks_fail(err, n, -errno, "userfaultfd: %s (kcore reads through it; a kernel without "
			       "CONFIG_USERFAULTFD, or a seccomp filter, stops it: use --source pmem)", strerror(errno));
	struct uffdio_api api = {.api = UFFD_API};
	if (ioctl(k->uffd, UFFDIO_API, &api))
		return ks_fail(err, n, -errno, "userfaultfd: UFFDIO_API: %s", strerror(errno));
	k->buf = malloc(k->page);
	k->stop = eventfd(0, EFD_CLOEXEC);
	if (!k->buf || k->stop < 0)
		return ks_fail(err, n, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < s->nranges; i++) {
		void *p = mmap(NULL, s->r[i].size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return ks_fail(err, n, -errno, "kcore: cannot reserve %llu MiB of address space: %s",
				       (unsigned long long)(s->r[i].size >> 20), strerror(errno));
		s->pmem_maps[i] = p;
		s->r[i].ptr = (uint64_t)(uintptr_t)p;
		struct uffdio_register reg = {.range = {.start = s->r[i].ptr, .len = s->r[i].size},
					      .mode = UFFDIO_REGISTER_MODE_MISSING};
		if (ioctl(k->uffd, UFFDIO_REGISTER, &reg))
			return ks_fail(err, n, -errno, "userfaultfd: register: %s", strerror(errno));
	}
	if ((e = pthread_create(&k->th, NULL, ms_kcore_thread, s)))
		return ks_fail(err, n, -e, "kcore: cannot start its reader thread: %s", strerror(e));
	k->running = 1;
	ms_vmcoreinfo_hint(s);
	return 0;
}

static void ms_close_kcore(MemSource *s)
{
	struct MsKcore *k = s->kcore;
	if (k->running) {
		uint64_t one = 1;
		if (write(k->stop, &one, sizeof one) != sizeof one)
			pthread_cancel(k->th);
		pthread_join(k->th, NULL);
	}
	for (unsigned i = 0; i < s->nranges; i++)
		if (s->pmem_maps[i]) {
			munmap(s->pmem_maps[i], s->r[i].size);
			s->pmem_maps[i] = NULL;
		}
	if (k->uffd >= 0)
		close(k->uffd);
	if (k->stop >= 0)
		close(k->stop);
	free(k->buf);
	free(k);
	s->kcore = NULL;
}

void ms_refresh(const MemSource *s)
{
	if (!s || s->kind != MS_KCORE || !s->kcore)
		return;
	for (unsigned i = 0; i < s->nranges; i++)
		madvise(s->pmem_maps[i], s->r[i].size, MADV_DONTNEED);
}

int ms_changed(const MemSource *s)
{
	if (s->kind != MS_PMEM || !s->pmem_device)
		return 0;
	struct sentinel_pmem_range r[KX_MAX_RANGES];
	unsigned nr = 0;
	unsigned long long gen = 0;
	int e = ms_pmem_ranges(s->fd, r, &nr, &gen);
	return e ? e : gen != s->generation;
}

int ms_open(const char *spec, MemSource **out, char *err, size_t errlen)
{
	MemSource *s = calloc(1, sizeof *s);
	if (!s)
		return ks_fail(err, errlen, -ENOMEM, "out of memory");
	s->fd = -1;
	const char *colon = strchr(spec, ':'), *path = spec, *dflt = "";
	char *opts = NULL, *vm = NULL;
	int e;
	if (!strncmp(spec, "qemu:", 5) || !strncmp(spec, "libvirt:", 8)) {
		/* a running VM's RAM: its QEMU's mapping, read as a RAM file */
		if ((e = ms_resolve_vm(spec, &vm, err, errlen)))
			goto out;
		s->kind = MS_RAMFILE;
		path = vm;
	} else if (colon && (!strncmp(spec, "ramfile:", 8) || !strncmp(spec, "raw:", 4) ||
		      !strncmp(spec, "vmcore:", 7) || !strncmp(spec, "pmem:", 5) || !strncmp(spec, "kcore:", 6))) {
		size_t kl = (size_t)(colon - spec);
		s->kind = !strncmp(spec, "ramfile", kl) ? MS_RAMFILE : !strncmp(spec, "raw", kl) ? MS_RAW :
			  !strncmp(spec, "vmcore", kl) ? MS_VMCORE : !strncmp(spec, "kcore", kl) ? MS_KCORE : MS_PMEM;
		path = colon + 1;
	} else if (!strcmp(spec, "pmem") || !strncmp(spec, "pmem,", 5)) {
		s->kind = MS_PMEM;                      /* the device, maybe options after it */
		dflt = "/dev/sentinel_pmem";
		path = spec + 4;
	} else if (!strcmp(spec, "kcore")) {
		s->kind = MS_KCORE;
		dflt = "/proc/kcore";
		path = spec + 5;
	} else {
		/* guess from the file itself */
		unsigned char magic[4] = {0};
		struct stat st;
		int fd = open(spec, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (read(fd, magic, 4) != 4)
				memset(magic, 0, 4);
			if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode))
				s->kind = MS_PMEM;
			close(fd);
		}
		if (s->kind != MS_PMEM)
			s->kind = !memcmp(magic, ELFMAG, SELFMAG) ? MS_VMCORE : MS_RAMFILE;
	}
	s->path = malloc(strlen(dflt) + strlen(path) + 1);
	if (!s->path) {
		e = ks_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	strcat(strcpy(s->path, dflt), path);
	char *comma = strchr(s->path, ',');
	if (comma) {
		*comma = 0;
		opts = comma + 1;
	}
	if (!*s->path) {
		e = ks_fail(err, errlen, -EINVAL, "'%s': no file given (e.g. ramfile:/dev/shm/vm.ram)", spec);
		goto out;
	}
	if (vm && access(s->path, R_OK)) {
		e = ks_fail(err, errlen, -errno, "%s: %s: %s (reading another process's memory mappings takes root)", spec,
			    s->path, strerror(errno));
		goto out;
	}
	switch (s->kind) {
	case MS_RAMFILE:
	case MS_RAW: e = ms_open_flat(s, opts, err, errlen); break;
	case MS_VMCORE: e = ms_open_vmcore(s, err, errlen); break;
	case MS_KCORE: e = ms_open_kcore(s, err, errlen); break;
	default: e = ms_open_pmem(s, opts, err, errlen); break;
	}
out:
	free(vm);
	if (e) {
		ms_close(s);
		return e;
	}
	*out = s;
	return 0;
}

void ms_close(MemSource *s)
{
	if (!s)
		return;
	if (s->kcore)
		ms_close_kcore(s);
	if (s->map)
		munmap(s->map, s->map_len);
	for (unsigned i = 0; i < s->nranges; i++)
		if (s->pmem_maps[i])
			munmap(s->pmem_maps[i], s->r[i].size);
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	free(s);
}

unsigned long long ms_total(const MemSource *s)
{
	unsigned long long t = 0;
	for (unsigned i = 0; i < s->nranges; i++)
		t += s->r[i].size;
	return t;
}

void ms_fill(const MemSource *s, kx_mem *m)
{
	m->nranges = s->nranges;
	m->phys_end = 0;
	for (unsigned i = 0; i < s->nranges; i++) {
		m->r[i] = s->r[i];
		if (s->r[i].phys + s->r[i].size > m->phys_end)
			m->phys_end = s->r[i].phys + s->r[i].size;
	}
}
