/* gpumap.c - the target's RAM on the GPU: our own mapping of the source,
 * registered with the driver in pieces (see gpu_int.h). */
#include "gpu_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

/* The target's RAM is registered in pieces of at most this (the driver
 * takes one physically contiguous range a call; [engine] gpu_register_chunk) */
#define GPU_REG_CHUNK (64ull << 30)

void gpu_set_register_chunk(GpuCode *g, uint64_t bytes)
{
	g->reg_chunk = bytes ? bytes & ~(uint64_t)(KX_PAGE_SIZE - 1) : GPU_REG_CHUNK;
}

const char *gpu_mapping(const GpuCode *g) { return g->mapping; }

static const char *gpu_flag_names(unsigned f)
{
	return (f & CU_MEMHOSTREGISTER_IOMEMORY) ? (f & CU_MEMHOSTREGISTER_READ_ONLY) ? "DEVICEMAP|IOMEMORY|READ_ONLY"
		: "DEVICEMAP|IOMEMORY" : (f & CU_MEMHOSTREGISTER_READ_ONLY) ? "DEVICEMAP|READ_ONLY" : "DEVICEMAP";
}

/* Register m's mapping in pieces of g->reg_chunk, with the first of
 * flags[] the driver takes (the first piece tries them; the rest take
 * what it took).  The pieces' GPU addresses must follow each other, so
 * that the range is one span on the GPU as it is on the host: with
 * unified addressing the driver gives the host addresses themselves. */
static int gpu_register(GpuCode *g, struct GpuMap *m, const unsigned *flags, unsigned nflags, char *err, size_t n)
{
	CUresult c = CUDA_SUCCESS;
	for (size_t off = 0; off < m->len; off += g->reg_chunk) {
		size_t len = m->len - off < g->reg_chunk ? m->len - off : g->reg_chunk;
		void *p = (char *)m->map + off;
		if (off == 0) {
			for (unsigned i = 0; i < nflags; i++) {
				c = g->d.MemHostRegister(p, len, flags[i]);
				if (!c) {
					m->flags = flags[i];
					break;
				}
			}
		} else {
			c = g->d.MemHostRegister(p, len, m->flags);
		}
		if (c)
			return gpu_err(g, c, err, n, "cannot map the target's RAM (%zu MiB at %zu MiB of a %zu MiB range, "
				       "%s) into %s; a registration above the driver's limit (about the host's RAM - "
				       "0.6 GiB) fails, and [engine] gpu_register_chunk sets the piece", len >> 20, off >> 20,
				       m->len >> 20, off ? gpu_flag_names(m->flags) : "every flag set", g->name);
		m->pieces++;
		CUdeviceptr dp;
		CU(g->d.MemHostGetDevicePointer(&dp, p, 0), "no GPU address for the target's RAM");
		if (off == 0) {
			m->dev = dp;
		} else if (dp != m->dev + off) {
			snprintf(err, n, "the GPU mapped the pieces of the target's RAM apart (%#llx after %#llx + %zu): raise "
				 "[engine] gpu_register_chunk to the range's size (%zu MiB)", (unsigned long long)dp,
				 (unsigned long long)m->dev, off, m->len >> 20);
			return -EIO;
		}
	}
	return 0;
}

/* The target's RAM, mapped into the GPU: each engine maps the source's
 * file again and registers its own mapping, read-only, in its own context.
 * Sharing one registration between the engines of a reload would tie the
 * new engine to the old one's context, which gpu_reap destroys.  The pmem
 * source is mapped a range at a time, at the range's physical address, as
 * the device wants; the driver takes the device's VM_IO|VM_PFNMAP mapping
 * with IOMEMORY, and a file standing in for it without. */
int gpu_map_target(GpuCode *g, const kx_mem *mem, const MemSource *src, kx_mem *dmem, char *err, size_t n)
{
	static const unsigned pmem_flags[] = {
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY,
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY,
		CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY,
	}, file_flags[] = {CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY};
	if (!g->reg_chunk)
		g->reg_chunk = GPU_REG_CHUNK;
	if (src->kind == MS_KCORE) {
		snprintf(err, n, "the kcore source cannot be mapped into the GPU: use source = pmem, or backend = cpu");
		return -EINVAL;
	}
	*dmem = *mem;
	uint64_t bytes = 0;
	unsigned pieces = 0;
	for (uint32_t i = 0; i < mem->nranges; i++) {
		void *base;                          /* the source's mapping the range lies in */
		size_t len;
		off_t off;
		bool pmem = src->kind == MS_PMEM;
		if (pmem) {
			base = src->pmem_maps[i];
			len = mem->r[i].size;
			off = (off_t)mem->r[i].phys;
		} else {
			base = src->map;
			len = src->map_len;
			off = 0;
		}
		unsigned k;
		for (k = 0; k < g->nmaps && g->maps[k].src != base; k++)
			;
		if (k == g->nmaps) {
			void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, src->fd, off);
			if (p == MAP_FAILED) {
				snprintf(err, n, "cannot map the target's RAM (%s, %zu MiB) again for the GPU: %s", src->path,
					 len >> 20, strerror(errno));
				return -errno;
			}
			g->maps[k] = (struct GpuMap){.src = base, .map = p, .len = len};
			g->nmaps++;
			int r = pmem ? gpu_register(g, &g->maps[k], pmem_flags, 3, err, n)
				     : gpu_register(g, &g->maps[k], file_flags, 1, err, n);
			if (r)
				return r;
			bytes += len;
			pieces += g->maps[k].pieces;
		}
		dmem->r[i].ptr = g->maps[k].dev + (mem->r[i].ptr - (uint64_t)(uintptr_t)base);
	}
	snprintf(g->mapping, sizeof g->mapping, "%u MiB in %u range%s, %u piece%s, %s", (unsigned)(bytes >> 20),
		 g->nmaps, g->nmaps == 1 ? "" : "s", pieces, pieces == 1 ? "" : "s",
		 g->nmaps ? gpu_flag_names(g->maps[0].flags) : "none");
	return 0;
}

/* Undo gpu_map_target: the registrations (g's context current, when it
 * has one), then our mappings. */
void gpu_unmap_target(GpuCode *g)
{
	if (g->d.lib && g->ctx_held)
		for (unsigned i = 0; i < g->nmaps; i++)
			for (unsigned k = 0; k < g->maps[i].pieces; k++)
				g->d.MemHostUnregister((char *)g->maps[i].map + k * g->reg_chunk);
	for (unsigned i = 0; i < g->nmaps; i++)
		munmap(g->maps[i].map, g->maps[i].len);
	g->nmaps = 0;
}
