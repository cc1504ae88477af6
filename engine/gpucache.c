/* gpucache.c - what the driver's JIT made of the rules, kept across
 * restarts (gpu.h, gpu_cache_*).
 *
 * Two levels, both under sentineld's cache directory ([engine] cache):
 *  - DIR/cuda: the driver's own compute cache (CUDA_CACHE_PATH, 4 GiB at
 *    most), which keys each PTX input of a link on its bytes, the JIT
 *    options, the GPU and the driver (docs/cuda-jit-cache.md).  The rules'
 *    numbers are not in the PTX (rulec/cg_shape.c; the engine writes them
 *    into the module, gpu_write_data), so a reload that changes a
 *    threshold links the same PTX and finds the cubin below.
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
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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

static void gc_path(const BdKey *k, char *out, size_t n)
{
	snprintf(out, n, "%s/cubin/%016llx%016llx.cubin", gc_dir, (unsigned long long)k->h[0],
		 (unsigned long long)k->h[1]);
}

/* Count a refusal (or, refused false, a failed write) and keep its words
 * for sentineld's log (d_cache_log); under gc_lock */
static void gc_note(bool refused, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gc_note(bool refused, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(gc_stats.last_note, sizeof gc_stats.last_note, fmt, ap);
	va_end(ap);
	if (refused)
		gc_stats.refused++;
	else
		gc_stats.unwritten++;
}

void *gpu_cache_get(const BdKey *k, size_t *len)
{
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
	else if (read(fd, body, h.len) != (ssize_t)h.len || bd_fnv1a(body, h.len, BD_FNV_INIT) != h.sum)
		bad = "corrupt (its checksum differs)";
	close(fd);
	pthread_mutex_lock(&gc_lock);
	if (bad) {
		free(body);
		body = NULL;
		if (strcmp(bad, "out of memory"))
			unlink(path);
		gc_note(true, "the cached cubin %s is %s: removed, linking again", path, bad);
	} else {
		*len = h.len;
		gc_stats.hits++;
		utimensat(AT_FDCWD, path, NULL, 0);     /* recently used */
	}
	pthread_mutex_unlock(&gc_lock);
	return body;
}

void gpu_cache_refused(const BdKey *k, int cuerr)
{
	char path[1200];
	gc_path(k, path, sizeof path);
	pthread_mutex_lock(&gc_lock);
	gc_note(true, "the driver would not load the cached cubin %s (CUDA error %d): linking again", path, cuerr);
	pthread_mutex_unlock(&gc_lock);
}

void gpu_cache_put(const BdKey *k, const void *cubin, size_t len)
{
	if (!gc_dir[0] || !len)
		return;
	char path[1200], tmp[1300];
	gc_path(k, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	GcHeader h = {.key = {k->h[0], k->h[1]}, .len = len, .sum = bd_fnv1a(cubin, len, BD_FNV_INIT)};
	memcpy(h.magic, GC_MAGIC, 8);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int e = fd < 0 ? -errno : 0;
	if (!e && (write(fd, &h, sizeof h) != (ssize_t)sizeof h || write(fd, cubin, len) != (ssize_t)len))
		e = errno ? -errno : -EIO;
	if (fd >= 0 && close(fd) && !e)
		e = -errno;
	if (!e && rename(tmp, path))
		e = -errno;
	if (e)
		unlink(tmp);
	pthread_mutex_lock(&gc_lock);
	if (!e)
		gc_stats.written++;
	else
		gc_note(false, "cannot keep the linked cubin in %s: %s; the next start links again", path, strerror(-e));
	char sub[1100];
	snprintf(sub, sizeof sub, "%s/cubin", gc_dir);
	gc_stats.evicted += u_dir_prune(sub, ".cubin", GC_MAX_FILES, GC_MAX_BYTES);
	pthread_mutex_unlock(&gc_lock);
}

void gpu_cache_stats(GpuCacheStats *out)
{
	pthread_mutex_lock(&gc_lock);
	*out = gc_stats;
	pthread_mutex_unlock(&gc_lock);
}
