// SPDX-License-Identifier: GPL-2.0
/*
 * sentinel_pmem.c - /dev/sentinel_pmem: this machine's RAM, read-only, for
 * Sentinel's detector (docs/targets.md, "This host").
 *
 * What it offers:
 *   mmap     offset = physical address; only System RAM maps (the ranges
 *            below), read-only, through remap_pfn_range: a VM_IO|VM_PFNMAP
 *            mapping that takes no page references, as /dev/mem makes;
 *            cuMemHostRegister(DEVICEMAP | IOMEMORY | READ_ONLY) takes it.
 *   ioctl    SENTINEL_PMEM_IOC_RANGES: the ranges and their generation
 *            (sentinel_pmem.h); /sys/class/misc/sentinel_pmem/ranges the same
 *            as text.
 *   refuses  opening for writing, a writable mapping, an offset outside
 *            System RAM, an opener without CAP_SYS_RAWIO, and any opener
 *            while the kernel is locked down (as /dev/mem and /proc/kcore).
 *            There is no read() or write().
 *
 * The ranges: the iomem resource tree's System RAM, depth first
 * (walk_iomem_res_desc: since 5.8 System RAM nests under other resources,
 * virtio-mem's and dax kmem's), rounded inward to whole pages, sorted,
 * merged, and cut where pages are not online (pfn_to_online_page, checked
 * every 2 MiB subsection): holes and offline memory never map.
 *
 * Memory hotplug: memory coming online, or going offline, rebuilds the
 * ranges and bumps the generation (sentineld, seeing it, maps the ranges
 * again).  While any mapping of this device exists, no memory can be taken
 * offline: the offline is refused (the memory notifier says EBUSY, with a
 * line in the log) until the mappings are gone, so a mapping never points
 * at memory that left.  Memory going offline while
 * nothing maps the device leaves the ranges at once, before any new mmap.
 *
 * Unloading: every open file and mapping holds a reference on the module,
 * so rmmod says the module is in use until they are closed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/ioport.h>
#include <linux/memory.h>
#include <linux/memory_hotplug.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "sentinel_pmem.h"

#define SP_MAX SENTINEL_PMEM_MAX_RANGES
#ifdef PAGES_PER_SUBSECTION
#define SP_STEP PAGES_PER_SUBSECTION    /* online state is kept per subsection at most */
#else
#define SP_STEP 1ul
#endif

/* Under sp_lock: the ranges, their number and generation.  The count of
 * mappings is atomic (vm_ops may not sleep on a mutex there), and mmap
 * raises it under sp_lock, so the offline check sees every mapping. */
static DEFINE_MUTEX(sp_lock);
static struct sentinel_pmem_range *sp_ranges;     /* [SP_MAX] */
static u32 sp_nranges;
static u64 sp_generation;
static atomic_t sp_mappings = ATOMIC_INIT(0);

/* ---- the ranges --------------------------------------------------------------------- */

struct sp_collect {
	struct sentinel_pmem_range *r;
	u32 n;
	bool overflow;
};

static int sp_collect_one(struct resource *res, void *arg)
{
	struct sp_collect *c = arg;
	u64 start = PAGE_ALIGN((u64)res->start), end = ((u64)res->end + 1) & PAGE_MASK;

	if (end <= start)
		return 0;
	if (c->n == SP_MAX) {
		c->overflow = true;
		return 0;
	}
	c->r[c->n].start = start;
	c->r[c->n].size = end - start;
	c->n++;
	return 0;
}

static int sp_cmp(const void *a, const void *b)
{
	const struct sentinel_pmem_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Append [start, end) to out, merging with the last range it touches. */
static void sp_emit(struct sentinel_pmem_range *out, u32 *n, u64 start, u64 end, bool *overflow)
{
	if (end <= start)
		return;
	if (*n && out[*n - 1].start + out[*n - 1].size >= start) {
		u64 last = out[*n - 1].start + out[*n - 1].size;

		if (end > last)
			out[*n - 1].size = end - out[*n - 1].start;
		return;
	}
	if (*n == SP_MAX) {
		*overflow = true;
		return;
	}
	out[*n].start = start;
	out[*n].size = end - start;
	(*n)++;
}

/* The online pages of [start, end), as runs, appended to out. */
static void sp_emit_online(struct sentinel_pmem_range *out, u32 *n, u64 start, u64 end, bool *overflow)
{
	unsigned long pfn = PHYS_PFN(start), last = PHYS_PFN(end), run = 0;
	bool in_run = false;

	while (pfn < last) {
		unsigned long next = min(ALIGN(pfn + 1, SP_STEP), last);
		bool online = pfn_to_online_page(pfn) != NULL;

		if (online && !in_run) {
			run = pfn;
			in_run = true;
		} else if (!online && in_run) {
			sp_emit(out, n, PFN_PHYS(run), PFN_PHYS(pfn), overflow);
			in_run = false;
		}
		pfn = next;
		if (!(pfn & ((1ul << 18) - 1)))
			cond_resched();                 /* every GiB */
	}
	if (in_run)
		sp_emit(out, n, PFN_PHYS(run), PFN_PHYS(last), overflow);
}

/* Build the ranges again from the resource tree; under sp_lock. */
static int sp_rebuild(void)
{
	struct sp_collect c = {0};
	struct sentinel_pmem_range *out;
	bool overflow = false;
	u32 i, n = 0;

	c.r = kvcalloc(SP_MAX, sizeof(*c.r), GFP_KERNEL);
	out = kvcalloc(SP_MAX, sizeof(*out), GFP_KERNEL);
	if (!c.r || !out) {
		kvfree(c.r);
		kvfree(out);
		return -ENOMEM;
	}
	walk_iomem_res_desc(IORES_DESC_NONE, IORESOURCE_SYSTEM_RAM | IORESOURCE_BUSY, 0, U64_MAX, &c,
			    sp_collect_one);
	sort(c.r, c.n, sizeof(*c.r), sp_cmp, NULL);
	for (i = 0; i < c.n; i++)
		sp_emit_online(out, &n, c.r[i].start, c.r[i].start + c.r[i].size, &overflow);
	if (c.overflow || overflow)
		pr_warn("more than %d System RAM ranges: the ones above %#llx are left out\n", SP_MAX,
			n ? out[n - 1].start + out[n - 1].size : 0ull);
	if (n != sp_nranges || memcmp(out, sp_ranges, n * sizeof(*out))) {
		memcpy(sp_ranges, out, n * sizeof(*out));
		sp_nranges = n;
		sp_generation++;
	}
	kvfree(c.r);
	kvfree(out);
	return 0;
}

/* [start, start + len) inside one range?  Under sp_lock. */
static bool sp_covered(u64 start, u64 len)
{
	u32 i;

	for (i = 0; i < sp_nranges; i++)
		if (start >= sp_ranges[i].start && start - sp_ranges[i].start < sp_ranges[i].size &&
		    len <= sp_ranges[i].size - (start - sp_ranges[i].start))
			return true;
	return false;
}

static bool sp_overlaps(u64 start, u64 end)
{
	u32 i;

	for (i = 0; i < sp_nranges; i++)
		if (start < sp_ranges[i].start + sp_ranges[i].size && sp_ranges[i].start < end)
			return true;
	return false;
}

/* Take [start, end) out of the ranges (memory about to go offline). */
static void sp_remove(u64 start, u64 end)
{
	struct sentinel_pmem_range *out = kvcalloc(SP_MAX, sizeof(*out), GFP_KERNEL);
	bool overflow = false;
	u32 i, n = 0;

	if (!out) {                          /* keep none rather than a stale one */
		sp_nranges = 0;
		sp_generation++;
		return;
	}
	for (i = 0; i < sp_nranges; i++) {
		u64 s = sp_ranges[i].start, e = s + sp_ranges[i].size;

		sp_emit(out, &n, s, min(e, start), &overflow);
		sp_emit(out, &n, max(s, end), e, &overflow);
	}
	memcpy(sp_ranges, out, n * sizeof(*out));
	sp_nranges = n;
	sp_generation++;
	kvfree(out);
}

static int sp_memory_event(struct notifier_block *nb, unsigned long action, void *data)
{
	struct memory_notify *m = data;
	u64 start = PFN_PHYS(m->start_pfn), end = PFN_PHYS(m->start_pfn + m->nr_pages);
	int rc = NOTIFY_OK, maps;

	mutex_lock(&sp_lock);
	switch (action) {
	case MEM_GOING_OFFLINE:
		maps = atomic_read(&sp_mappings);
		if (maps > 0) {
			pr_warn("refusing to take %#llx-%#llx offline: %d mapping%s of /dev/sentinel_pmem exist; "
				"stop sentineld (or whatever maps the device) first\n", start, end - 1, maps,
				maps == 1 ? "" : "s");
			rc = notifier_from_errno(-EBUSY);
			break;
		}
		if (sp_overlaps(start, end))
			sp_remove(start, end);
		break;
	case MEM_ONLINE:
	case MEM_OFFLINE:
	case MEM_CANCEL_OFFLINE:
		if (sp_rebuild())
			pr_warn("out of memory rebuilding the ranges after a memory hotplug event\n");
		break;
	}
	mutex_unlock(&sp_lock);
	return rc;
}

static struct notifier_block sp_memory_nb = {
	.notifier_call = sp_memory_event,
};

/* ---- the device --------------------------------------------------------------------- */

static void sp_vm_open(struct vm_area_struct *vma)
{
	atomic_inc(&sp_mappings);
}

static void sp_vm_close(struct vm_area_struct *vma)
{
	atomic_dec(&sp_mappings);
}

static const struct vm_operations_struct sp_vm_ops = {
	.open = sp_vm_open,
	.close = sp_vm_close,
};

static int sp_open(struct inode *inode, struct file *file)
{
	int rc;

	if (file->f_mode & FMODE_WRITE) {
		pr_info_ratelimited("%s (pid %d): refused an open for writing: the device is read-only\n",
				    current->comm, task_pid_nr(current));
		return -EPERM;
	}
	if (!capable(CAP_SYS_RAWIO))
		return -EPERM;
	rc = security_locked_down(LOCKDOWN_DEV_MEM);
	if (rc) {
		pr_notice_ratelimited("%s (pid %d): refused: the kernel is locked down, and reading all of RAM is "
				      "what lockdown forbids (see man 7 kernel_lockdown)\n", current->comm,
				      task_pid_nr(current));
		return rc;
	}
	return 0;
}

static int sp_mmap(struct file *file, struct vm_area_struct *vma)
{
	u64 start = (u64)vma->vm_pgoff << PAGE_SHIFT, len = vma->vm_end - vma->vm_start;
	int rc;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (vma->vm_pgoff > (U64_MAX >> PAGE_SHIFT) || start + len < start)
		return -EINVAL;
	mutex_lock(&sp_lock);
	if (!sp_covered(start, len)) {
		pr_info_ratelimited("%s (pid %d): refused a mapping of %#llx-%#llx: not System RAM\n", current->comm,
				    task_pid_nr(current), start, start + len - 1);
		rc = -EINVAL;
		goto out;
	}
	/* never writable, not even by mprotect; not inherited by children */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, VM_MAYWRITE);
	vm_flags_set(vma, VM_DONTCOPY);
#else
	vma->vm_flags &= ~VM_MAYWRITE;
	vma->vm_flags |= VM_DONTCOPY;
#endif
	vma->vm_ops = &sp_vm_ops;
	rc = remap_pfn_range(vma, vma->vm_start, vma->vm_pgoff, len, vma->vm_page_prot);
	if (!rc)
		atomic_inc(&sp_mappings);
out:
	mutex_unlock(&sp_lock);
	return rc;
}

static long sp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct sentinel_pmem_ranges q;
	struct sentinel_pmem_range *copy;
	long rc = 0;
	u32 n;

	if (cmd != SENTINEL_PMEM_IOC_RANGES)
		return -ENOTTY;
	if (copy_from_user(&q, (void __user *)arg, sizeof(q)))
		return -EFAULT;
	/* copied under the lock, handed out after it: a fault on the user's
	 * buffer takes mmap_lock, which sp_mmap holds when it takes sp_lock */
	copy = kvcalloc(SP_MAX, sizeof(*copy), GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	mutex_lock(&sp_lock);
	n = min(q.count, sp_nranges);
	memcpy(copy, sp_ranges, n * sizeof(*copy));
	q.abi = SENTINEL_PMEM_ABI;
	q.count = sp_nranges;
	q.generation = sp_generation;
	mutex_unlock(&sp_lock);
	if (n && copy_to_user(u64_to_user_ptr(q.ranges), copy, n * sizeof(*copy)))
		rc = -EFAULT;
	if (!rc && copy_to_user((void __user *)arg, &q, sizeof(q)))
		rc = -EFAULT;
	kvfree(copy);
	return rc;
}

static const struct file_operations sp_fops = {
	.owner = THIS_MODULE,
	.open = sp_open,
	.mmap = sp_mmap,
	.unlocked_ioctl = sp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static ssize_t ranges_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	int len = 0;
	u32 i;

	mutex_lock(&sp_lock);
	for (i = 0; i < sp_nranges; i++) {
		/* whole lines only: the ioctl gives the rest of a long list */
		if (len + 2 * 18 + 2 + 32 > PAGE_SIZE) {
			len += sysfs_emit_at(buf, len, "... %u more: SENTINEL_PMEM_IOC_RANGES lists them\n",
					     sp_nranges - i);
			break;
		}
		len += sysfs_emit_at(buf, len, "%#llx-%#llx\n", sp_ranges[i].start,
				     sp_ranges[i].start + sp_ranges[i].size - 1);
	}
	mutex_unlock(&sp_lock);
	return len;
}
static DEVICE_ATTR_ADMIN_RO(ranges);

static ssize_t generation_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	u64 g;

	mutex_lock(&sp_lock);
	g = sp_generation;
	mutex_unlock(&sp_lock);
	return sysfs_emit(buf, "%llu\n", g);
}
static DEVICE_ATTR_RO(generation);

static struct attribute *sp_attrs[] = {
	&dev_attr_ranges.attr,
	&dev_attr_generation.attr,
	NULL,
};
ATTRIBUTE_GROUPS(sp);

static struct miscdevice sp_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "sentinel_pmem",
	.fops = &sp_fops,
	.groups = sp_groups,
	.mode = 0400,
};

static int __init sp_init(void)
{
	u64 total = 0;
	u32 i;
	int rc;

	sp_ranges = kvcalloc(SP_MAX, sizeof(*sp_ranges), GFP_KERNEL);
	if (!sp_ranges)
		return -ENOMEM;
	/* the notifier first: memory going offline while the ranges are
	 * built is seen by one or the other */
	rc = register_memory_notifier(&sp_memory_nb);
	if (rc)
		goto fail;
	mutex_lock(&sp_lock);
	rc = sp_rebuild();
	for (i = 0; i < sp_nranges; i++)
		total += sp_ranges[i].size;
	mutex_unlock(&sp_lock);
	if (!rc)
		rc = misc_register(&sp_dev);
	if (rc) {
		unregister_memory_notifier(&sp_memory_nb);
		goto fail;
	}
	pr_info("/dev/%s: %u System RAM range%s, %llu MiB, read-only\n", sp_dev.name, sp_nranges,
		sp_nranges == 1 ? "" : "s", total >> 20);
	return 0;
fail:
	kvfree(sp_ranges);
	return rc;
}

static void __exit sp_exit(void)
{
	misc_deregister(&sp_dev);
	unregister_memory_notifier(&sp_memory_nb);
	kvfree(sp_ranges);
}

module_init(sp_init);
module_exit(sp_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("Sentinel");
MODULE_DESCRIPTION("This machine's RAM, read-only, for Sentinel's GPU detector");
MODULE_VERSION("0.1.0");
