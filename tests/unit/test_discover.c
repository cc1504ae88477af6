#define _GNU_SOURCE 1   /* copy_file_range */
/* Discovery (kernel-support/ktarget.c) on a real guest's RAM image, the
 * hostile-guest fuzzer's (build/fuzz-guest.ram: tests/fuzz/guest_image.py
 * boots a Debian guest and captures it):
 *   - several targets found at once, as sentineld's d_find_targets does:
 *     four threads run kt_open on the image together and must each find
 *     the same kernel.  Built with ThreadSanitizer too (build/tsan/): the
 *     kallsyms token table was a static buffer every thread wrote.
 *   - a guest-sized allocation: one module's symbol table rewritten so
 *     that a name's offset is 0xfffffff0, as a hostile guest can.  The
 *     module list reader sized its string buffer from it (4 GiB asked of
 *     malloc); run with ASAN_OPTIONS=max_allocation_size_mb=1024, that
 *     aborted.  Now the module is skipped and the others still read.
 *   sh: test_discover IMAGE */
#include "kbtf.h"
#include "ktarget.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(name, cond, ...) do { \
	if (cond) { printf("PASS discover/%s\n", name); } \
	else { failures++; printf("FAIL discover/%s (%s:%d)\n     ", name, __FILE__, __LINE__); \
	       printf(__VA_ARGS__); printf("\n"); } \
} while (0)

#define NTHREADS 4

typedef struct Find {
	const char *spec;
	pthread_t th;
	int rc;
	char err[512], release[65];
	size_t nsyms, nmsyms;
	uint64_t sym0;
} Find;

static void *find(void *arg)
{
	Find *f = arg;
	MemSource *src = NULL;
	KTarget *t = NULL;
	if ((f->rc = ms_open(f->spec, &src, f->err, sizeof f->err)))
		return NULL;
	if (!(f->rc = kt_open(src, NULL, &t, f->err, sizeof f->err))) {
		snprintf(f->release, sizeof f->release, "%s", t->release);
		f->nsyms = t->nsyms;
		f->nmsyms = t->nmsyms;
		kt_sym(t, "init_task", &f->sym0);
		kt_close(t);
	}
	ms_close(src);
	return NULL;
}

/* The physical address of the first module's first symbol's st_name, or 0. */
static uint64_t module_name_slot(const char *spec, char *mod, size_t n)
{
	MemSource *src = NULL;
	KTarget *t = NULL;
	char err[512];
	uint64_t head, node, ks, symtab, pa = 0;
	uint32_t o_list, o_ks, o_symtab, o_num, o_name, num;
	if (ms_open(spec, &src, err, sizeof err) || kt_open(src, NULL, &t, err, sizeof err))
		goto out;
	if (kt_sym(t, "modules", &head) || kb_field_offset(t->btf, "module", "list", &o_list, NULL) ||
	    kb_field_offset(t->btf, "module", "kallsyms", &o_ks, NULL) ||
	    kb_field_offset(t->btf, "module", "name", &o_name, NULL) ||
	    kb_field_offset(t->btf, "mod_kallsyms", "symtab", &o_symtab, NULL) ||
	    kb_field_offset(t->btf, "mod_kallsyms", "num_symtab", &o_num, NULL) || kx_read64(&t->mem, head, &node) ||
	    node == head || kx_read64(&t->mem, node - o_list + o_ks, &ks) ||
	    kx_read64(&t->mem, ks + o_symtab, &symtab) || kx_read32(&t->mem, ks + o_num, &num) || num < 2 ||
	    kx_read(&t->mem, node - o_list + o_name, mod, n - 1) ||
	    kx_translate(&t->mem, symtab + 24, &pa))   /* Elf64_Sym[1].st_name: the first is the null symbol */
		pa = 0;
	mod[n - 1] = 0;
out:
	kt_close(t);
	ms_close(src);
	return pa;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_discover IMAGE (a guest's raw RAM: tests/fuzz/guest_image.py)\n");
		return 2;
	}
	char spec[4200];
	snprintf(spec, sizeof spec, "ramfile:%s", argv[1]);
	Find one = {.spec = spec};
	find(&one);
	CHECK("the image holds a kernel", one.rc == 0 && one.nsyms > 10000, "%s", one.err);
	if (one.rc)
		return 1;
	Find f[NTHREADS];
	bool started[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		f[i] = (Find){.spec = spec, .rc = -EAGAIN};
		started[i] = pthread_create(&f[i].th, NULL, find, &f[i]) == 0;
	}
	int same = 0;
	for (int i = 0; i < NTHREADS; i++) {
		if (started[i])
			pthread_join(f[i].th, NULL);
		same += f[i].rc == 0 && !strcmp(f[i].release, one.release) && f[i].nsyms == one.nsyms &&
			f[i].nmsyms == one.nmsyms && f[i].sym0 == one.sym0;
	}
	CHECK("four threads find the same kernel at once", same == NTHREADS,
	      "%d of %d agree with one alone (Linux %s, %zu symbols, %zu of modules)", same, NTHREADS, one.release,
	      one.nsyms, one.nmsyms);

	/* a module's symbol table that asks for 4 GiB */
	char mod[64] = "", copy[] = "/tmp/sentinel-discover.XXXXXX";
	uint64_t pa = module_name_slot(spec, mod, sizeof mod);
	CHECK("a module with symbols to rewrite", pa && one.nmsyms > 0, "no module symbol table found (%zu module symbols)",
	      one.nmsyms);
	int in = open(argv[1], O_RDONLY), out = mkstemp(copy);
	struct stat st;
	bool ok = pa && in >= 0 && out >= 0 && !fstat(in, &st);
	for (off_t off = 0; ok && off < st.st_size;) {
		ssize_t c = copy_file_range(in, NULL, out, NULL, (size_t)(st.st_size - off), 0);
		ok = c > 0;
		off += c;
	}
	uint32_t huge = 0xfffffff0u;
	ok = ok && pwrite(out, &huge, sizeof huge, (off_t)pa) == (ssize_t)sizeof huge;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (ok) {
		Find bad = {.spec = spec};
		snprintf(spec, sizeof spec, "ramfile:%s", copy);
		find(&bad);
		CHECK("a module name offset of 0xfffffff0: skipped, no 4 GiB allocation, the others read",
		      bad.rc == 0 && bad.nmsyms > 0 && bad.nmsyms < one.nmsyms,
		      "rc %d (%s), %zu module symbols (%zu before; module %s)", bad.rc, bad.err, bad.nmsyms,
		      one.nmsyms, mod);
	} else {
		CHECK("the image copied and rewritten", 0, "cannot copy %s to %s", argv[1], copy);
	}
	unlink(copy);
	printf("discover: Linux %s, %zu symbols, %zu of modules; %d failed\n", one.release, one.nsyms, one.nmsyms,
	       failures);
	return failures ? 1 : 0;
}
