/* hostile_image - turn a copy of a real guest's raw RAM image into a
 * hostile guest, in place, for bench/hostile.py and the tests:
 *
 *   hostile_image IMAGE log        the printk ring's header claims the
 *                                  largest ring the kernel allows (2 GiB of
 *                                  text, 16 M descriptors: count_bits 24,
 *                                  size_bits 31)
 *   hostile_image IMAGE modules    every module's symbol table claims 65,536
 *                                  symbols, and the module list loops back
 *                                  to its first module from its last
 *   hostile_image IMAGE vmcoreinfo every 'OSRELEASE=' broken (the kernel's
 *                                  own VMCOREINFO among them) and a fake one
 *                                  planted at the start of every page
 *
 * Addresses come from the image itself (discovery, BTF); the image is raw
 * (file offset = physical address), as tests/fuzz/guest_image.py makes it. */
#define _GNU_SOURCE 1   /* memmem */
#include "kbtf.h"
#include "ktarget.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int hi_fd = -1;
static unsigned hi_writes;

/* Write n bytes at kernel virtual address va (translated in t). */
static int hi_put(const KTarget *t, uint64_t va, const void *v, size_t n)
{
	uint64_t pa;
	if (kx_translate(&t->mem, va, &pa) || pwrite(hi_fd, v, n, (off_t)pa) != (ssize_t)n)
		return -EFAULT;
	hi_writes++;
	return 0;
}

static int hi_field(const KTarget *t, const char *s, const char *f, uint32_t *off)
{
	if (kb_field_offset(t->btf, s, f, off, NULL)) {
		fprintf(stderr, "hostile_image: the kernel's BTF has no %s.%s\n", s, f);
		return -ENOENT;
	}
	return 0;
}

static int hi_log(const KTarget *t)
{
	uint64_t prb;
	uint32_t o_desc, o_text, o_count, o_size;
	size_t vl;
	const char *v = kt_info(t, "SYMBOL(prb)", &vl);
	if (!v || kx_read64(&t->mem, strtoull(v, NULL, 16), &prb) || hi_field(t, "printk_ringbuffer", "desc_ring", &o_desc) ||
	    hi_field(t, "printk_ringbuffer", "text_data_ring", &o_text) || hi_field(t, "prb_desc_ring", "count_bits", &o_count) ||
	    hi_field(t, "prb_data_ring", "size_bits", &o_size))
		return -ENOENT;
	uint32_t count_bits = 24, size_bits = 31;
	return hi_put(t, prb + o_desc + o_count, &count_bits, 4) || hi_put(t, prb + o_text + o_size, &size_bits, 4) ? -EFAULT : 0;
}

static int hi_modules(const KTarget *t)
{
	uint64_t head, node, first = 0, last = 0, ks;
	uint32_t o_list, o_ks, o_num, big = 65536;
	if (kt_sym(t, "modules", &head) || hi_field(t, "module", "list", &o_list) ||
	    hi_field(t, "module", "kallsyms", &o_ks) || hi_field(t, "mod_kallsyms", "num_symtab", &o_num))
		return -ENOENT;
	unsigned n = 0;
	for (uint64_t cur = head; !kx_read64(&t->mem, cur, &node) && node != head && n < 4096; cur = node, n++) {
		if (!first)
			first = node;
		last = node;
		if (!kx_read64(&t->mem, node - o_list + o_ks, &ks) && ks)
			hi_put(t, ks + o_num, &big, 4);
	}
	if (!first)
		return -ENOENT;
	/* the last module's next is the first again: the list never ends */
	int r = hi_put(t, last, &first, 8);
	printf("hostile_image: %u modules, each claiming 65536 symbols; the list loops\n", n);
	return r;
}

static int hi_vmcoreinfo(const char *path)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	if (fd < 0 || fstat(fd, &st))
		return -errno;
	char *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	size_t size = (size_t)st.st_size, broken = 0, planted = 0;
	for (char *p = m; (p = memmem(p, size - (size_t)(p - m), "OSRELEASE=", 10)); p++, broken++)
		*p = 'X';
	static const char fake[] = "OSRELEASE=6.1.0-hostile\n";
	for (size_t off = 0; off + sizeof fake <= size; off += 4096, planted++)
		memcpy(m + off, fake, sizeof fake - 1);
	munmap(m, size);
	printf("hostile_image: %zu 'OSRELEASE=' broken, %zu fake ones planted\n", broken, planted);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[2], "log") && strcmp(argv[2], "modules") && strcmp(argv[2], "vmcoreinfo"))) {
		fprintf(stderr, "usage: hostile_image IMAGE log|modules|vmcoreinfo (changes IMAGE: give it a copy)\n");
		return 2;
	}
	if (!strcmp(argv[2], "vmcoreinfo"))
		return hi_vmcoreinfo(argv[1]) ? 1 : 0;
	char spec[4200], err[512];
	snprintf(spec, sizeof spec, "ramfile:%s", argv[1]);
	MemSource *src = NULL;
	KTarget *t = NULL;
	int r = 1;
	if (ms_open(spec, &src, err, sizeof err) || kt_open(src, NULL, &t, err, sizeof err)) {
		fprintf(stderr, "hostile_image: %s\n", err);
		goto out;
	}
	if ((hi_fd = open(argv[1], O_WRONLY)) < 0) {
		fprintf(stderr, "hostile_image: %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	r = !strcmp(argv[2], "log") ? hi_log(t) : hi_modules(t);
	printf("hostile_image: %s: %u writes%s\n", argv[2], hi_writes, r ? " (failed)" : "");
	r = r != 0;
out:
	if (hi_fd >= 0)
		close(hi_fd);
	kt_close(t);
	ms_close(src);
	return r;
}
