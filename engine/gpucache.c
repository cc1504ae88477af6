/* gpucache.c - what the driver's JIT made of the rules, kept across
 * restarts (gpu.h, gpu_cache_*).
 *
 * Two levels, both under sentineld's cache directory ([engine] cache):
 *  - DIR/cuda: the driver's own compute cache (CUDA_CACHE_PATH, 4 GiB at
 *    most), which keys each PTX input of a link on its bytes, the JIT
 *    options, the GPU and the driver (docs/cuda-jit-cache.md).  rulec puts
 *    the rules' numbers in a PTX part of their own (rulec/cg_shape.c), so
 *    a reload that changes a threshold compiles that small part alone.
 *  - DIR/cubin/KEY.cubin: the whole link's result, keyed by a 128-bit hash
 *    of every part, the JIT options, the GPU's architecture and the
 *    driver's version.  A start whose rules did not change loads it and
 *    links nothing.  Each file begins with its key, its length and a
 *    checksum: a truncated, corrupt or foreign file is refused (and
 *    removed), never loaded.  At most GC_MAX_FILES files and GC_MAX_BYTES:
 *    the least recently used go.
 * Written to a temporary name and renamed: a crash leaves the old file or
 * the new one.  Process-wide: gpu_cache_setup runs once, before any engine
 * opens (the driver reads CUDA_CACHE_PATH at cuInit).
 */
#include "gpu_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GC_MAGIC "SNTCUBN1"
#define GC_MAX_FILES 16
#define GC_MAX_BYTES (512ull << 20)
#define GC_DRIVER_MAX "4294967296"   /* the driver's own cache: its largest size */

typedef struct GcHeader {
	char magic[8];
	uint64_t key[2];
	uint64_t len;             /* of the cubin after the header */
	uint64_t sum;             /* FNV-1a of the cubin */
} GcHeader;

static char gc_dir[1024];     /* "": no cache */
static GpuCacheStats gc_stats;
static pthread_mutex_t gc_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t gc_fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void gpu_cache_key_init(GpuCacheKey *k)
{
	k->h[0] = 0xcbf29ce484222325ull;
	k->h[1] = 0x84222325cbf29ce4ull;      /* a second, independent start */
	gpu_cache_key_add(k, GC_MAGIC, 8);
}

void gpu_cache_key_add(GpuCacheKey *k, const void *p, size_t n)
{
	k->h[0] = gc_fnv(&n, sizeof n, gc_fnv(p, n, k->h[0]));
	k->h[1] = gc_fnv(p, n, gc_fnv(&n, sizeof n, k->h[1]));
}

int gpu_cache_setup(const char *dir)
{
	if (!dir || !*dir) {
		gc_dir[0] = 0;
		return 0;
	}
	char sub[1100];
	if (strlen(dir) >= sizeof gc_dir - 16)
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(sub, sizeof sub, "%s/cubin", dir);
	if (mkdir(sub, 0700) && errno != EEXIST)
		return -errno;
	snprintf(sub, sizeof sub, "%s/cuda", dir);
	if (mkdir(sub, 0700) && errno != EEXIST)
		return -errno;
	/* the driver's own cache, unless the environment already chose one */
	setenv("CUDA_CACHE_PATH", sub, 0);
	setenv("CUDA_CACHE_MAXSIZE", GC_DRIVER_MAX, 0);
	snprintf(gc_dir, sizeof gc_dir, "%s", dir);
	return 0;
}

static void gc_path(const GpuCacheKey *k, char *out, size_t n)
{
	snprintf(out, n, "%s/cubin/%016llx%016llx.cubin", gc_dir, (unsigned long long)k->h[0],
		 (unsigned long long)k->h[1]);
}

void *gpu_cache_get(const GpuCacheKey *k, size_t *len, char *why, size_t n)
{
	*why = 0;
	if (!gc_dir[0])
		return NULL;
	char path[1200];
	gc_path(k, path, sizeof path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pthread_mutex_lock(&gc_lock);
		gc_stats.misses++;
		pthread_mutex_unlock(&gc_lock);
		return NULL;
	}
	GcHeader h;
	struct stat st;
	void *body = NULL;
	const char *bad = NULL;
	if (fstat(fd, &st) || read(fd, &h, sizeof h) != (ssize_t)sizeof h || memcmp(h.magic, GC_MAGIC, 8))
		bad = "not a cubin Sentinel wrote";
	else if (h.key[0] != k->h[0] || h.key[1] != k->h[1])
		bad = "made for other code (its key differs)";
	else if (h.len == 0 || h.len != (uint64_t)st.st_size - sizeof h)
		bad = "truncated";
	else if (!(body = malloc(h.len)))
		bad = "out of memory";
	else if (read(fd, body, h.len) != (ssize_t)h.len || gc_fnv(body, h.len, 0xcbf29ce484222325ull) != h.sum)
		bad = "corrupt (its checksum differs)";
	close(fd);
	pthread_mutex_lock(&gc_lock);
	if (bad) {
		free(body);
		body = NULL;
		snprintf(why, n, "the cached cubin %s is %s: removed, linking again", path, bad);
		if (strcmp(bad, "out of memory"))
			unlink(path);
		gc_stats.refused++;
	} else {
		*len = h.len;
		gc_stats.hits++;
		utimensat(AT_FDCWD, path, NULL, 0);     /* recently used */
	}
	pthread_mutex_unlock(&gc_lock);
	return body;
}

typedef struct GcFile {
	char name[64];
	struct timespec mtime;
	off_t size;
} GcFile;

static int gc_newest_first(const void *a, const void *b)
{
	const GcFile *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec > y->mtime.tv_sec ? -1 : 1;
	return x->mtime.tv_nsec > y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec < y->mtime.tv_nsec;
}

/* Past GC_MAX_FILES or GC_MAX_BYTES the least recently used go (and any
 * temporary file a crash left) */
static void gc_prune(void)
{
	char sub[1100];
	snprintf(sub, sizeof sub, "%s/cubin", gc_dir);
	DIR *d = opendir(sub);
	if (!d)
		return;
	GcFile f[256];
	size_t nf = 0;
	for (struct dirent *e; (e = readdir(d)) && nf < sizeof f / sizeof *f;) {
		struct stat st;
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len >= sizeof f->name || fstatat(dirfd(d), e->d_name, &st, 0))
			continue;
		if (len < 6 || strcmp(e->d_name + len - 6, ".cubin")) {
			if (time(NULL) - st.st_mtime > 3600)    /* a crash's leftover */
				unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		memcpy(f[nf].name, e->d_name, len + 1);
		f[nf].mtime = st.st_mtim;
		f[nf++].size = st.st_size;
	}
	qsort(f, nf, sizeof *f, gc_newest_first);
	unsigned long long bytes = 0;
	for (size_t i = 0; i < nf; i++) {
		bytes += (unsigned long long)f[i].size;
		if (i >= GC_MAX_FILES || bytes > GC_MAX_BYTES) {
			unlinkat(dirfd(d), f[i].name, 0);
			gc_stats.evicted++;
		}
	}
	closedir(d);
}

int gpu_cache_put(const GpuCacheKey *k, const void *cubin, size_t len)
{
	if (!gc_dir[0] || !len)
		return 0;
	char path[1200], tmp[1300];
	gc_path(k, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	GcHeader h = {.key = {k->h[0], k->h[1]}, .len = len, .sum = gc_fnv(cubin, len, 0xcbf29ce484222325ull)};
	memcpy(h.magic, GC_MAGIC, 8);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int e = 0;
	if (write(fd, &h, sizeof h) != (ssize_t)sizeof h || write(fd, cubin, len) != (ssize_t)len)
		e = errno ? -errno : -EIO;
	if (close(fd) && !e)
		e = -errno;
	if (!e && rename(tmp, path))
		e = -errno;
	if (e)
		unlink(tmp);
	pthread_mutex_lock(&gc_lock);
	if (!e)
		gc_stats.written++;
	gc_prune();
	pthread_mutex_unlock(&gc_lock);
	return e;
}

void gpu_cache_stats(GpuCacheStats *out, char *dir, size_t n)
{
	pthread_mutex_lock(&gc_lock);
	*out = gc_stats;
	pthread_mutex_unlock(&gc_lock);
	if (dir)
		snprintf(dir, n, "%s", gc_dir);
}
