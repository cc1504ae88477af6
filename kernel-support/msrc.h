/* msrc.h - where the target's physical memory comes from.
 *
 *   ramfile:PATH[,split=auto|none|BYTES]  a QEMU guest's RAM file
 *                        (memory-backend-file,share=on); q35 puts RAM above
 *                        2 GiB of a >= 2.75 GiB guest at 4 GiB: split=auto
 *   qemu:PID[,split=...] a running QEMU's guest RAM, when it is shared
 *                        (memory-backend-memfd/-file, share=on): the largest
 *                        shared mapping of the process, through
 *                        /proc/PID/map_files (root); read as a ramfile
 *   libvirt:DOMAIN[,...] the same for a libvirt domain: the PID libvirt
 *                        keeps in /run/libvirt/qemu/DOMAIN.pid
 *   raw:PATH             a raw physical memory image, address 0 first
 *   vmcore:PATH          an ELF core (QEMU dump-guest-memory, kdump ELF)
 *   pmem[:PATH][,ranges=A-B+C-D...]
 *                        this host's RAM through /dev/sentinel_pmem (the
 *                        module in kernel-support/module/): each range the
 *                        device names mapped at its physical address.  A
 *                        regular file may stand in for the device (tests: a
 *                        guest's RAM file, its /proc/iomem System RAM as
 *                        ranges=, inclusive ends as iomem prints them)
 *   kcore[:PATH]         this host's RAM through /proc/kcore (root, no
 *                        module): its direct-map segments, read with pread
 *                        page by page as they are touched (userfaultfd);
 *                        ms_refresh() makes the next reads fresh.  For trying
 *                        Sentinel and the CPU backend; the GPU cannot map it
 *   PATH                 guessed: ELF magic -> vmcore, a device -> pmem, else ramfile
 *
 * Every source is a set of physically contiguous ranges mapped read-only into
 * this process (kx_range: phys, size, host pointer), so the same ranges can be
 * registered with the GPU.  Ownership: a MemSource owns its mappings, file
 * descriptors and (kcore) its fault thread; ms_close() releases them.
 */
#ifndef SENTINEL_MSRC_H
#define SENTINEL_MSRC_H

#include "kx.h"

#include <stddef.h>

typedef enum { MS_RAMFILE, MS_RAW, MS_VMCORE, MS_PMEM, MS_KCORE } MsKind;

struct MsKcore;

typedef struct MemSource {
	MsKind kind;
	char *path;
	int fd;
	void *map;            /* the whole file, for file sources */
	size_t map_len;
	kx_range r[KX_MAX_RANGES];
	unsigned nranges;
	void *pmem_maps[KX_MAX_RANGES];   /* pmem, kcore: one mapping per range */
	int pmem_device;      /* pmem: the module's device (not a file standing in) */
	unsigned long long generation;    /* pmem device: its ranges' generation */
	/* where VMCOREINFO is, when the kernel says (this host's
	 * /sys/kernel/vmcoreinfo): discovery reads there instead of scanning */
	unsigned long long vmcoreinfo_pa, vmcoreinfo_size;
	struct MsKcore *kcore;
} MemSource;

/* Write a message into err (errlen bytes) and return code: the one error
 * formatter of kernel-support's host side. */
int ks_fail(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Open spec; on failure returns -errno and writes a message (with what to do
 * next) into err. */
int ms_open(const char *spec, MemSource **out, char *err, size_t errlen);
void ms_close(MemSource *s);
const char *ms_kind_name(MsKind k);
/* Make the next reads of the source current (kcore: drop the pages read
 * so far); nothing for the others, whose mappings are the memory itself. */
void ms_refresh(const MemSource *s);
/* 1 when the memory the source maps has changed shape since it was opened
 * (pmem: the device's ranges, after memory hotplug), 0 if not, -errno. */
int ms_changed(const MemSource *s);
/* The VM's run state as its hypervisor says, for spec libvirt:DOMAIN: the
 * state of DOMAIN.xml's <domstatus> beside its PID file ("running",
 * "paused", "pmsuspended", ...).  0, -ENOTSUP for other sources, or -errno.
 * A paused VM's memory holds still: no context switches, and not hung. */
int ms_vm_state(const char *spec, char *state, size_t n);
/* Total bytes of RAM the source maps. */
unsigned long long ms_total(const MemSource *s);
/* Fill a kx_mem's ranges from the source. */
void ms_fill(const MemSource *s, kx_mem *m);

#endif
