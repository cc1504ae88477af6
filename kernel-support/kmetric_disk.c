/* kmetric_disk.c - disks (km_disk_*): block devices, as /proc/diskstats.
 *
 * The metric library's entry points and helpers: see kmetric_int.h.
 */
#include "kmetric_int.h"

/* ---- disks: block devices, as /proc/diskstats -------------------------------------
 *
 * Every disk and partition is a block_device inside an inode of the bdev
 * pseudo filesystem (struct bdev_inode), on blockdev_superblock's inode
 * list; one that is added is hashed (bdev_add), one deleted is unhashed,
 * the filesystem's root has no disk.  /proc/diskstats walks block_class
 * instead and shows the same devices, except hidden ones (never hashed)
 * and partitions of no sectors (skipped by both).  5.11+: before, a
 * partition's block_device existed only while it was open.  The counters
 * are per CPU, summed over the possible CPUs as diskstats does; a
 * partition's are in its disk's as well. */

#define KM_MAX_BDEV_INODES 1048576u

KM_INLINE struct block_device *km_bdev(u64 d) { return (struct block_device *)(unsigned long)d; }

/* Where the partition number and the read-only flag are: their own
 * fields up to 6.9, one flags word from 6.10 (BD_PARTNO 0xff, BD_READ_ONLY
 * 1 << 8); read through km_word, the number is the low byte either way. */
KM_INLINE u64 km_bdev_partno_at(struct block_device *b)
{
	if (KFIELD_EXISTS(block_device, bd_partno))
		return km_addr(KP(b->bd_partno));
	return km_addr(KP(((struct block_device___610 *)b)->__bd_flags.counter));
}

KM_INLINE u64 km_bdev_ro_at(struct block_device *b)
{
	if (KFIELD_EXISTS(block_device, bd_read_only))
		return km_addr(KP(b->bd_read_only));
	return km_addr(KP(((struct block_device___610 *)b)->__bd_flags.counter));
}

KM_INLINE int km_bdev_ro_of(u64 word)
{
	if (KFIELD_EXISTS(block_device, bd_read_only))
		return (word & 0xff) != 0;
	return (int)((word >> 8) & 1);
}

/* Warp-collective: every lane gets the count, lane 0 writes out. */
enum { KW_NEXT, KW_PREV, KW_HASHED, KW_DISK, KW_STATS, KW_PARTNO, KW_SECTORS, KW__N };

int km_disk_walk(u64 *out, u32 cap)
{
	struct super_block *sb = blockdev_superblock;
	struct list_head *head = KP(sb->s_inodes), *cur = head, *next = KR(head->next);
	unsigned long back = koffsetof(struct bdev_inode, vfs_inode);
	int n = 0;
	kx_loop lp;
	kx_loop_init(&lp, km_addr(head));
	for (u32 seen = 0;; seen++) {
		if (next == head || simt_any(__llview_failed()))
			break;
		struct inode *ino = kcontainer_of(next, struct inode, i_sb_list);
		struct block_device *b = (struct block_device *)((char *)ino - back);
		/* an inode's fields and its next link, a field a lane: one
		 * load for the warp an inode */
		u64 a[KW__N], v[KW__N];
		a[KW_NEXT] = km_addr(&next->next);
		a[KW_PREV] = km_addr(&next->prev);
		a[KW_HASHED] = km_addr(KP(ino->i_hash.pprev));
		a[KW_DISK] = km_addr(KP(b->bd_disk));
		a[KW_STATS] = km_addr(KP(b->bd_stats));
		a[KW_PARTNO] = km_bdev_partno_at(b);
		a[KW_SECTORS] = km_addr(KP(b->bd_nr_sectors));
		km_gather(a, KW__N, v);
		if (seen >= KM_MAX_BDEV_INODES || v[KW_PREV] != km_addr(cur) || kx_loop_seen(&lp, km_addr(next)))
			return -40;             /* KX_ELOOP: a corrupt, changing or endless list */
		if (km_spent_all())
			return KM_EBUDGET;
		if (v[KW_HASHED] && v[KW_DISK] && v[KW_STATS] && (!(v[KW_PARTNO] & 0xff) || v[KW_SECTORS])) {
			if ((u32)n < cap && simt_lane() == 0)
				out[n] = km_addr(b);
			n++;
		}
		cur = next;
		next = (struct list_head *)(unsigned long)v[KW_NEXT];
	}
	return simt_any(__llview_failed()) ? -14 : n;
}

/* The device's name ("vda", "vda1"): its kobject's, a kmalloc'd string
 * (at most 31 characters). */
int km_disk_name(u64 d, char *out) { return km_string(KR(km_bdev(d)->bd_device.kobj.name), out, 32); }

/* A disk's counters, summed over the possible CPUs once a tick into a
 * block (km_disk_stats: the device's fields one gather, the counters
 * km_pcpu_sums); its metrics are then read from the block.  One pass over
 * the CPUs instead of one per metric. */
enum {
	KD_NSECS = 0, KD_SECTORS = 4, KD_IOS = 8, KD_MERGES = 12,   /* [stat_group] each */
	KD_IO_TICKS = 16, KD_INFLIGHT = 17,                          /* in_flight[2]: summed into the first */
	KD_WORDS = 19,                                               /* the per-CPU words */
	/* the device's own fields, read once with the counters */
	KD_SIZE = KD_WORDS, KD_PARTNO, KD_RO, KD_STAMP, KD_JIFFIES, KD_HZ,
	KD_MD, KD_MD_ACTIVE, KD_MD_DEGRADED, KD_MD_DISKS, KD_MD_FAILED,  /* an md array's (KD_MD: it is one) */
	KD_FAILED, KD__COUNT
};
_Static_assert(KD__COUNT <= 32, "the block rulec gives km_disk_stats (CG_OBJ_BLOCK)");
_Static_assert(KD_WORDS <= KM_PCPU_WORDS, "km_pcpu_sums");

/* An md array's members marked Faulty (/proc/mdstat's "(F)", each
 * /sys/block/mdN/md/dev-NAME/state "faulty"): they stay on mddev.disks, the
 * array's list of its members, until removed.  KM_MD_UNREAD: a corrupt,
 * changing or endless list, a failed read or the read budget spent. */
#define KM_MD_MAX_MEMBERS 4096u
#define KM_MD_FAULTY 0                   /* enum flag_bits: Faulty is bit 0 (md.h, since 2.6) */
#define KM_MD_UNREAD (~0ull)
KM_INLINE u64 km_md_faulty(struct mddev *md)
{
	km_list w;
	km_list_init(&w, KP(md->disks), KM_MD_MAX_MEMBERS);
	long field = (long)(koffsetof(struct md_rdev, flags) - koffsetof(struct md_rdev, same_set));
	u64 n = 0, flags;
	int r;
	while ((r = km_list_step(&w, field, &flags)) > 0)
		n += (flags >> KM_MD_FAULTY) & 1;
	return r < 0 || simt_any(__llview_failed()) ? KM_MD_UNREAD : n;
}

/* the device's fields and the clock, one gather */
enum { KH_STATS, KH_DISK, KH_SECTORS, KH_STAMP, KH_PARTNO, KH_RO, KH_JIFFIES, KH_TICK, KH__N };

int km_disk_stats(u64 d, u64 *blk)
{
	struct block_device *b = km_bdev(d);
	u64 a[KH__N], h[KH__N];
	a[KH_STATS] = km_addr(KP(b->bd_stats));
	a[KH_DISK] = km_addr(KP(b->bd_disk));
	a[KH_SECTORS] = km_addr(KP(b->bd_nr_sectors));
	a[KH_STAMP] = km_addr(KP(b->bd_stamp));
	a[KH_PARTNO] = km_bdev_partno_at(b);
	a[KH_RO] = km_bdev_ro_at(b);
	a[KH_JIFFIES] = km_addr(&jiffies_64);
	u64 hz_at = km_hz_at();
	a[KH_TICK] = hz_at ? hz_at : a[KH_JIFFIES];
	km_gather(a, KH__N, h);
	struct disk_stats *st = (struct disk_stats *)(unsigned long)h[KH_STATS];
	struct gendisk *g = (struct gendisk *)(unsigned long)h[KH_DISK];
	/* the whole disk's read-only flags, and whether it is an md array:
	 * four reads more */
	u64 ga[4] = {km_addr(KP(g->state)), km_addr(KP(g->part0)), km_addr(KP(g->major)), km_addr(KP(g->private_data))},
	    gv[4], wa, wv;
	km_gather(ga, 4, gv);
	wa = km_bdev_ro_at((struct block_device *)(unsigned long)gv[1]);
	km_gather(&wa, 1, &wv);
	/* the counters' offsets in struct disk_stats, relocated */
	u64 off[KD_WORDS];
	for (u32 k = 0; k < 4; k++) {
		off[KD_NSECS + k] = km_addr(KP(st->nsecs[k])) - km_addr(st);
		off[KD_SECTORS + k] = km_addr(KP(st->sectors[k])) - km_addr(st);
		off[KD_IOS + k] = km_addr(KP(st->ios[k])) - km_addr(st);
		off[KD_MERGES + k] = km_addr(KP(st->merges[k])) - km_addr(st);
	}
	off[KD_IO_TICKS] = km_addr(KP(st->io_ticks)) - km_addr(st);
	off[KD_INFLIGHT] = km_addr(KP(st->in_flight[0])) - km_addr(st);
	off[KD_INFLIGHT + 1] = km_addr(KP(st->in_flight[1])) - km_addr(st);
	km_pcpu_sums(km_addr(st), off, KD_WORDS, blk);
	blk[KD_INFLIGHT] += blk[KD_INFLIGHT + 1];
	blk[KD_SIZE] = h[KH_SECTORS] * 512;
	blk[KD_PARTNO] = h[KH_PARTNO] & 0xff;
	blk[KD_STAMP] = h[KH_STAMP];
	blk[KD_JIFFIES] = h[KH_JIFFIES];
	blk[KD_HZ] = hz_at ? km_hz_of(h[KH_TICK]) : 0;
	blk[KD_RO] = (u64)(km_bdev_ro_of(h[KH_RO]) | ((gv[0] >> 1) & 1) | km_bdev_ro_of(wv));
	/* an md array (the whole disk, not a partition of it): its mddev,
	 * where md_mod is loaded (/sys/block/mdN/md: array_state, degraded,
	 * raid_disks, and the members' state) */
	blk[KD_MD] = 0;
	if (KTYPE_EXISTS(mddev) && KTYPE_EXISTS(md_rdev) && (u32)gv[2] == 9 && gv[3] && !blk[KD_PARTNO]) {
		struct mddev *md = (struct mddev *)(unsigned long)gv[3];
		u64 ma[3] = {km_addr(KP(md->pers)), km_addr(KP(md->degraded)), km_addr(KP(md->raid_disks))}, mv[3];
		km_gather(ma, 3, mv);
		blk[KD_MD] = 1;
		blk[KD_MD_ACTIVE] = mv[0] != 0;
		blk[KD_MD_DEGRADED] = (u32)mv[1];
		blk[KD_MD_DISKS] = (u32)mv[2];
		blk[KD_MD_FAILED] = km_md_faulty(md);
	}
	blk[KD_FAILED] = (u64)simt_any(__llview_failed());
	return 0;
}

/* block item i as a double; NaN when the block could not be read */
KM_INLINE double km_blk(const u64 *blk, long i) { return blk[KD_FAILED] ? KM_NAN : (double)blk[i]; }

#define KM_RD KENUM(stat_group, STAT_READ)
#define KM_WR KENUM(stat_group, STAT_WRITE)

double km_disk_partition(u64 d, const u64 *blk) { return blk[KD_FAILED] ? KM_NAN : blk[KD_PARTNO] != 0; }
double km_disk_size(u64 d, const u64 *blk) { return km_blk(blk, KD_SIZE); }
/* the device's flag, its disk's (whole-disk device) or the disk's GD_READ_ONLY */
double km_disk_read_only(u64 d, const u64 *blk) { return blk[KD_FAILED] ? KM_NAN : blk[KD_RO] != 0; }

/* md RAID: unknown for a device that is not an md array */
KM_INLINE double km_md(const u64 *blk, long i)
{
	return blk[KD_FAILED] ? KM_NAN : !blk[KD_MD] ? KM_ABSENT : (double)blk[i];
}
double km_disk_md_active(u64 d, const u64 *blk) { return km_md(blk, KD_MD_ACTIVE); }
double km_disk_md_degraded(u64 d, const u64 *blk) { return km_md(blk, KD_MD_DEGRADED); }
double km_disk_md_disks(u64 d, const u64 *blk) { return km_md(blk, KD_MD_DISKS); }
double km_disk_md_failed(u64 d, const u64 *blk)
{
	return blk[KD_MD] && blk[KD_MD_FAILED] == KM_MD_UNREAD ? KM_NAN : km_md(blk, KD_MD_FAILED);
}
double km_disk_reads(u64 d, const u64 *blk) { return km_blk(blk, KD_IOS + KM_RD); }
double km_disk_reads_merged(u64 d, const u64 *blk) { return km_blk(blk, KD_MERGES + KM_RD); }
double km_disk_read_bytes(u64 d, const u64 *blk) { return km_blk(blk, KD_SECTORS + KM_RD) * 512.0; }
double km_disk_read_time(u64 d, const u64 *blk) { return km_blk(blk, KD_NSECS + KM_RD) * NSEC; }
double km_disk_writes(u64 d, const u64 *blk) { return km_blk(blk, KD_IOS + KM_WR); }
double km_disk_writes_merged(u64 d, const u64 *blk) { return km_blk(blk, KD_MERGES + KM_WR); }
double km_disk_written_bytes(u64 d, const u64 *blk) { return km_blk(blk, KD_SECTORS + KM_WR) * 512.0; }
double km_disk_write_time(u64 d, const u64 *blk) { return km_blk(blk, KD_NSECS + KM_WR) * NSEC; }

double km_disk_weighted_io_time(u64 d, const u64 *blk)
{
	if (blk[KD_FAILED])
		return KM_NAN;
	return (double)(blk[KD_NSECS] + blk[KD_NSECS + 1] + blk[KD_NSECS + 2] + blk[KD_NSECS + 3]) * NSEC;
}

/* In flight: the per-CPU counts (exact from 6.10; on 6.1 a blk-mq disk's
 * diskstats counts its tags instead, which these approach from above). */
KM_INLINE long km_disk_inflight(const u64 *blk)
{
	long v = (long)blk[KD_INFLIGHT];
	return v < 0 ? 0 : v;
}

double km_disk_in_flight(u64 d, const u64 *blk) { return blk[KD_FAILED] ? KM_NAN : (double)km_disk_inflight(blk); }

/* io_ticks as diskstats prints it: with I/O in flight, the kernel adds
 * the jiffies since bd_stamp before printing (5.18+); so do we.  Seconds
 * at the kernel's HZ (km_hz_of). */
double km_disk_io_time(u64 d, const u64 *blk)
{
	if (blk[KD_FAILED] || !blk[KD_HZ])
		return KM_NAN;
	u64 ticks = blk[KD_IO_TICKS];
	unsigned long stamp = (unsigned long)blk[KD_STAMP], now = (unsigned long)blk[KD_JIFFIES];
	if (km_disk_inflight(blk) > 0 && now > stamp)
		ticks += now - stamp;
	return (double)ticks / (double)blk[KD_HZ];
}
