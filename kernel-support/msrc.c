/* msrc.c - memory sources (see msrc.h). */
#include "msrc.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
	static const char *n[] = {"ramfile", "raw", "vmcore", "pmem"};
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

/* /dev/sentinel_pmem: map each "System RAM" range of /proc/iomem at its
 * physical address (the module's mmap offset is the physical address). */
static int ms_open_pmem(MemSource *s, char *err, size_t n)
{
	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		if (errno == ENOENT)
			return ks_fail(err, n, -ENOENT, "%s does not exist: load the kernel-support module "
				       "(sentinel_pmem.ko) first, or point --source at a VM's RAM file", s->path);
		return ks_fail(err, n, -errno, "%s: %s (it needs root)", s->path, strerror(errno));
	}
	FILE *f = fopen("/proc/iomem", "r");
	if (!f)
		return ks_fail(err, n, -errno, "/proc/iomem: %s", strerror(errno));
	char line[256];
	int e = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long a, z;
		if (line[0] == ' ' || !strstr(line, ": System RAM") || sscanf(line, "%llx-%llx", &a, &z) != 2)
			continue;
		if (a == 0 && z == 0) {
			e = ks_fail(err, n, -EPERM, "/proc/iomem shows zero addresses: run as root");
			break;
		}
		void *p = mmap(NULL, z + 1 - a, PROT_READ, MAP_SHARED, s->fd, (off_t)a);
		if (p == MAP_FAILED) {
			e = ks_fail(err, n, -errno, "%s: mmap of %#llx-%#llx: %s", s->path, a, z, strerror(errno));
			break;
		}
		s->pmem_maps[s->nranges] = p;
		ms_add(s, a, z + 1 - a, p);
	}
	fclose(f);
	return e;
}

int ms_open(const char *spec, MemSource **out, char *err, size_t errlen)
{
	MemSource *s = calloc(1, sizeof *s);
	if (!s)
		return ks_fail(err, errlen, -ENOMEM, "out of memory");
	s->fd = -1;
	const char *colon = strchr(spec, ':'), *path = spec;
	char *opts = NULL;
	int e;
	if (colon && (!strncmp(spec, "ramfile:", 8) || !strncmp(spec, "raw:", 4) ||
		      !strncmp(spec, "vmcore:", 7) || !strncmp(spec, "pmem:", 5))) {
		size_t kl = (size_t)(colon - spec);
		s->kind = !strncmp(spec, "ramfile", kl) ? MS_RAMFILE : !strncmp(spec, "raw", kl) ? MS_RAW :
			  !strncmp(spec, "vmcore", kl) ? MS_VMCORE : MS_PMEM;
		path = colon + 1;
	} else if (!strcmp(spec, "pmem")) {
		s->kind = MS_PMEM;
		path = "/dev/sentinel_pmem";
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
	s->path = strdup(path);
	char *comma = strchr(s->path, ',');
	if (comma) {
		*comma = 0;
		opts = comma + 1;
	}
	if (!*s->path) {
		e = ks_fail(err, errlen, -EINVAL, "'%s': no file given (e.g. ramfile:/dev/shm/vm.ram)", spec);
		goto out;
	}
	switch (s->kind) {
	case MS_RAMFILE:
	case MS_RAW: e = ms_open_flat(s, opts, err, errlen); break;
	case MS_VMCORE: e = ms_open_vmcore(s, err, errlen); break;
	default: e = ms_open_pmem(s, err, errlen); break;
	}
out:
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
