/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/* sentinel_pmem.h - the interface of /dev/sentinel_pmem, shared by the
 * module (sentinel_pmem.c) and user space (kernel-support/msrc.c).
 *
 * The device maps this machine's System RAM read-only: mmap's offset is the
 * physical address, and only offsets inside the ranges below map.  The
 * ranges are the iomem resource tree's System RAM (nested ones included),
 * rounded inward to whole pages, merged, and cut where pages are offline;
 * /sys/class/misc/sentinel_pmem/ranges shows the same as text.
 */
#ifndef SENTINEL_PMEM_H
#define SENTINEL_PMEM_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SENTINEL_PMEM_ABI 1
#define SENTINEL_PMEM_MAX_RANGES 1024

struct sentinel_pmem_range {
	__u64 start;          /* physical address, page-aligned */
	__u64 size;           /* bytes, a multiple of the page size */
};

/* SENTINEL_PMEM_IOC_RANGES: the ranges now.  count in: the room at
 * ranges; out: how many there are (when more than the room, only the room
 * was filled: ask again with more).  generation changes whenever the set
 * changes (memory brought online or taken offline): a mapping made under
 * an older generation may hold ranges that are gone (see the module). */
struct sentinel_pmem_ranges {
	__u32 abi;            /* out: SENTINEL_PMEM_ABI */
	__u32 count;          /* in: room; out: ranges */
	__u64 generation;     /* out */
	__u64 ranges;         /* in: user address of count struct sentinel_pmem_range */
};

#define SENTINEL_PMEM_IOC_MAGIC 0xE7
#define SENTINEL_PMEM_IOC_RANGES _IOWR(SENTINEL_PMEM_IOC_MAGIC, 0x01, struct sentinel_pmem_ranges)

#endif
