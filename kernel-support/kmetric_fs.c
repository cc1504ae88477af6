/* kmetric_fs.c - filesystems (km_fs_*): the initial mount
 * namespace's mounts, as /proc/mounts (their mount points, types and
 * devices), what statfs() reports, and the errors ext4 recorded.
 *
 * The metric library's entry points and helpers: see kmetric_int.h.
 */
#include "kmetric_int.h"

/* ---- filesystems: the initial mount namespace's mounts, as /proc/mounts ------------------
 *
 * Every mount of init's mount namespace (`init_task.nsproxy->mnt_ns`: a
 * list up to 6.7, a tree keyed by mount ID from 6.8) whose superblock is
 * ext2/3/4 (ext4's driver), tmpfs, xfs or btrfs, in mount order; the name
 * is the mount point, built as d_path does (each dentry's name up to the
 * mount's root, then on from where it is mounted).  What statfs() reports
 * is what each filesystem's statfs adds up from its superblock's counters,
 * so each is read where it keeps them: ext4's per-CPU cluster and inode
 * counters and its on-disk superblock (ext4_statfs), tmpfs's block counter
 * and limits (shmem_statfs), xfs's per-CPU counters and in-memory
 * superblock (xfs_fs_statfs), btrfs's space_info totals, global reserve
 * and devices (btrfs_statfs). */

#define KM_MAX_MOUNTS 65536u
#define KM_MAX_PATH_DEPTH 64u
#define KM_MNT_READONLY 0x40u
#define KM_MNT_CURSOR 0x10000000u        /* up to 6.7: a /proc/mounts reader's place in the list */
#define KM_SB_RDONLY 1u
#define KM_EXT4_MAGIC 0xef53ul
#define KM_TMPFS_MAGIC 0x01021994ul
#define KM_XFS_MAGIC 0x58465342ul
#define KM_BTRFS_MAGIC 0x9123683eul
#define KM_EXT4_64BIT 0x80u              /* s_feature_incompat */
#define KM_EXT4_MINIX_DF 0x80u           /* s_mount_opt: no overhead subtracted */
#define KM_BOGO_INODE_SIZE 1024ul        /* tmpfs 6.6+: free_ispace per inode */

/* n (the walk's count so far) plus one when mount m is listed: lane 0
 * writes its address */
KM_INLINE int km_fs_keep(struct mount *m, u64 sb, u64 flags, u32 skip, u64 *out, u32 cap, int n)
{
	if (!sb || ((u32)flags & skip))
		return n;
	u64 magic = KR(((struct super_block___fs *)(unsigned long)sb)->s_magic);
	if (magic != KM_EXT4_MAGIC && magic != KM_TMPFS_MAGIC && magic != KM_XFS_MAGIC && magic != KM_BTRFS_MAGIC)
		return n;
	if ((u32)n < cap && simt_lane() == 0)
		out[n] = km_addr(m);
	return n + 1;
}

/* up to 6.7: mnt_namespace.list, skipping readers' cursors */
static int km_mnt_list(struct mnt_namespace___list *ns, u64 *out, u32 cap)
{
	struct list_head *head = KP(ns->list), *cur = head, *next = KR(head->next);
	int n = 0;
	kx_loop lp;
	kx_loop_init(&lp, km_addr(head));
	for (u32 seen = 0;; seen++) {
		if (next == head || simt_any(__llview_failed()))
			break;
		struct mount *m = (struct mount *)kcontainer_of(next, struct mount___list, mnt_list);
		u64 a[4] = {km_addr(&next->next), km_addr(&next->prev), km_addr(KP(m->mnt.mnt_sb)),
			    km_addr(KP(m->mnt.mnt_flags))}, v[4];
		km_gather(a, 4, v);
		if (seen >= KM_MAX_MOUNTS || v[1] != km_addr(cur) || kx_loop_seen(&lp, km_addr(next)))
			return -40;             /* KX_ELOOP: a corrupt, changing or endless list */
		if (km_spent_all())
			return KM_EBUDGET;
		n = km_fs_keep(m, v[2], v[3], KM_MNT_CURSOR, out, cap, n);
		cur = next;
		next = (struct list_head *)(unsigned long)v[0];
	}
	return simt_any(__llview_failed()) ? -14 : n;
}

/* 6.8+: mnt_namespace.mounts, in order (rb_next through parent pointers) */
static int km_mnt_tree(struct mnt_namespace___rb *ns, u64 *out, u32 cap)
{
	struct rb_node *node = KR(ns->mounts.rb_node), *l;
	u32 steps = 0;
	int n = 0;
	kx_loop lp;                                 /* in order, each mount once */
	kx_loop_init(&lp, 0);
	while (node && (l = KR(node->rb_left)) && steps++ < KM_MAX_MOUNTS)
		node = l;
	while (node) {
		if (simt_any(__llview_failed()))
			return -14;
		if (++steps > 4 * KM_MAX_MOUNTS || kx_loop_seen(&lp, km_addr(node)))
			return -40;
		if (km_spent_all())
			return KM_EBUDGET;
		struct mount *m = (struct mount *)kcontainer_of(node, struct mount___list, mnt_node);
		u64 a[4] = {km_addr(KP(node->rb_right)), km_addr(KP(node->__rb_parent_color)),
			    km_addr(KP(m->mnt.mnt_sb)), km_addr(KP(m->mnt.mnt_flags))}, v[4];
		km_gather(a, 4, v);
		n = km_fs_keep(m, v[2], v[3], 0, out, cap, n);
		struct rb_node *r = (struct rb_node *)(unsigned long)v[0];
		if (r) {
			node = r;
			while ((l = KR(node->rb_left)) && steps++ < 4 * KM_MAX_MOUNTS && !__llview_failed())
				node = l;
			continue;
		}
		struct rb_node *p = (struct rb_node *)(unsigned long)(v[1] & ~3ul);
		while (p && node == KR(p->rb_right) && steps++ < 4 * KM_MAX_MOUNTS && !__llview_failed()) {
			node = p;
			p = (struct rb_node *)(unsigned long)(KR(p->__rb_parent_color) & ~3ul);
		}
		node = p;
	}
	return simt_any(__llview_failed()) ? -14 : n;
}

/* Warp-collective: every lane gets the count, lane 0 writes out. */
int km_fs_walk(u64 *out, u32 cap)
{
	struct task_struct___ns *it = (struct task_struct___ns *)&init_task;
	struct nsproxy *np = KR(it->nsproxy);
	if (simt_any(__llview_failed()))
		return -14;
	if (!np)
		return -2;                      /* KX_ENOENT */
	/* (no `np ? ... : 0`: a pointer that may be the kernel's or null is
	 * one LLView refuses to read through) */
	struct mnt_namespace *ns = KR(np->mnt_ns);
	if (simt_any(__llview_failed()))
		return -14;
	if (!ns)
		return -2;
	if (KFIELD_EXISTS(mnt_namespace___rb, nr_mounts))
		return km_mnt_tree((struct mnt_namespace___rb *)ns, out, cap);
	return km_mnt_list((struct mnt_namespace___list *)ns, out, cap);
}

/* The mount point ("/", "/var/lib"), as d_path builds it from the
 * namespace's root: the dentries' names up to each mount's root, then on
 * from the dentry it is mounted on; at most size - 1 bytes.  One lane. */
int km_fs_name(u64 key, char *out, u32 size)
{
	struct mount *mnt = (struct mount *)(unsigned long)key;
	struct dentry *d = KR(mnt->mnt.mnt_root);
	const unsigned char *nm[KM_MAX_PATH_DEPTH];
	u32 len[KM_MAX_PATH_DEPTH], depth = 0;
	for (u32 step = 0; step < 4 * KM_MAX_PATH_DEPTH && !__llview_failed(); step++) {
		if (d == KR(mnt->mnt.mnt_root)) {
			struct mount *p = KR(mnt->mnt_parent);
			if (!p || p == mnt)
				break;          /* the namespace's root */
			d = KR(mnt->mnt_mountpoint);
			mnt = p;
			continue;
		}
		struct dentry *up = KR(d->d_parent);
		if (!up || up == d || depth == KM_MAX_PATH_DEPTH)
			break;
		nm[depth] = KR(d->d_name.name);
		len[depth] = (u32)(KR(d->d_name.hash_len) >> 32);
		depth++;
		d = up;
	}
	u32 o = 0;
	if (!depth && size > 1)
		out[o++] = '/';
	for (u32 i = depth; i-- > 0 && o + 1 < size && !__llview_failed();) {
		out[o++] = '/';
		u64 a = km_addr(nm[i]), w = 0;
		for (u32 k = 0; k < len[i] && k < 255 && o + 1 < size; k++) {
			u64 at = a + k;
			if (k == 0 || (at & 7) == 0)
				w = *(const u64 *)(unsigned long)(at & ~7ul);
			out[o++] = (char)(w >> ((at & 7) * 8));
		}
	}
	for (u32 i = o; i < size; i++)
		out[i] = 0;
	return __llview_failed() ? -14 : 0;
}

/* A mount's statfs numbers, read once a tick into a block (km_fs_stats:
 * the mount's words, its superblock's, its filesystem's, then the per-CPU
 * counters); the metrics read the block. */
enum {
	KV_MNT_FLAGS, KV_SB_FLAGS, KV_BSIZE, KV_BLOCKS, KV_BFREE, KV_BAVAIL, KV_FILES, KV_FFREE,
	KV_KIND, KV_FAILED, KV_NOAVAIL, KV_ERRORS, KV__COUNT
};
_Static_assert(KV__COUNT <= 64, "the block rulec gives km_fs_stats (CG_OBJ_BLOCK)");
enum { KV_OTHER, KV_EXT4, KV_TMPFS, KV_XFS, KV_BTRFS };

KM_INLINE s64 km_pos(s64 v) { return v < 0 ? 0 : v; }

/* ext4_statfs */
KM_INLINE void km_ext4_statfs(u64 sbp, struct ext4_sb_info *sbi, u64 *blk)
{
	enum { E_ES, E_OVH, E_CB, E_OPT, E_RESV, E_FREE, E_FREEP, E_DIRTY, E_DIRTYP, E_INO, E_INOP, E_SB, E__N };
	u64 a[E__N], v[E__N];
	a[E_ES] = km_addr(KP(sbi->s_es));
	a[E_OVH] = km_addr(KP(sbi->s_overhead));
	a[E_CB] = km_addr(KP(sbi->s_cluster_bits));
	a[E_OPT] = km_addr(KP(sbi->s_mount_opt));
	a[E_RESV] = km_addr(KP(sbi->s_resv_clusters.counter));
	a[E_FREE] = km_addr(KP(sbi->s_freeclusters_counter.count));
	a[E_FREEP] = km_addr(KP(sbi->s_freeclusters_counter.counters));
	a[E_DIRTY] = km_addr(KP(sbi->s_dirtyclusters_counter.count));
	a[E_DIRTYP] = km_addr(KP(sbi->s_dirtyclusters_counter.counters));
	a[E_INO] = km_addr(KP(sbi->s_freeinodes_counter.count));
	a[E_INOP] = km_addr(KP(sbi->s_freeinodes_counter.counters));
	a[E_SB] = km_addr(KP(sbi->s_sb));
	km_gather(a, E__N, v);
	if (v[E_SB] != sbp || !v[E_ES])
		return;                         /* not ext4's: ext2's own driver, say */
	struct ext4_super_block *es = (struct ext4_super_block *)(unsigned long)v[E_ES];
	u64 b[7] = {km_addr(KP(es->s_inodes_count)), km_addr(KP(es->s_blocks_count_lo)),
		    km_addr(KP(es->s_r_blocks_count_lo)), km_addr(KP(es->s_feature_incompat)),
		    km_addr(KP(es->s_blocks_count_hi)), km_addr(KP(es->s_r_blocks_count_hi)),
		    km_addr(KP(es->s_error_count))}, w[7];
	km_gather(b, 7, w);
	u64 cnt[3] = {v[E_FREE], v[E_DIRTY], v[E_INO]}, pc[3] = {v[E_FREEP], v[E_DIRTYP], v[E_INOP]};
	s64 s[3];
	km_pcpu_counters(cnt, pc, 3, s);
	u32 cb = (u32)v[E_CB] & 63;
	int big = ((u32)w[3] & KM_EXT4_64BIT) != 0;
	u64 blocks = (w[1] & 0xffffffffu) | (big ? (w[4] & 0xffffffffu) << 32 : 0);
	u64 r = (w[2] & 0xffffffffu) | (big ? (w[5] & 0xffffffffu) << 32 : 0);
	u64 ovh = ((u32)v[E_OPT] & KM_EXT4_MINIX_DF) ? 0 : v[E_OVH];
	u64 resv = v[E_RESV] << cb;
	s64 bfree = km_pos(s[0]) - km_pos(s[1]);
	blk[KV_BLOCKS] = blocks - (ovh << cb);
	blk[KV_BFREE] = (u64)km_pos(bfree) << cb;
	blk[KV_BAVAIL] = blk[KV_BFREE] < r + resv ? 0 : blk[KV_BFREE] - (r + resv);
	blk[KV_FILES] = w[0] & 0xffffffffu;
	blk[KV_FFREE] = (u64)km_pos(s[2]);
	blk[KV_ERRORS] = w[6] & 0xffffffffu;
	blk[KV_KIND] = KV_EXT4;
}

/* xfs_fs_statfs (6.1, 6.12 and 7.2 alike: 7.2 keeps the free blocks in
 * m_free[XC_FREE_BLOCKS], where m_fdblocks was) for the mount's root directory;
 * a realtime directory (its rt device's extents) or a project quota's
 * (its limits) would report otherwise, and is not told apart here */
#define KM_XFS_MAXINUMBER ((1ull << 56) - 1)
KM_INLINE void km_xfs_statfs(u64 sbp, struct xfs_mount *mp, u64 *blk)
{
	enum { X_SUPER, X_DBLOCKS, X_LOGSTART, X_LOGBLOCKS, X_SBICOUNT, X_INOPBLOG, X_ICOUNT, X_ICOUNTP, X_IFREE,
	       X_IFREEP, X_FDB, X_FDBP, X_ASIDE, X_ALLOCBT, X_MAXI, X__N };
	u64 a[X__N], v[X__N];
	a[X_SUPER] = km_addr(KP(mp->m_super));
	a[X_DBLOCKS] = km_addr(KP(mp->m_sb.sb_dblocks));
	a[X_LOGSTART] = km_addr(KP(mp->m_sb.sb_logstart));
	a[X_LOGBLOCKS] = km_addr(KP(mp->m_sb.sb_logblocks));
	a[X_SBICOUNT] = km_addr(KP(mp->m_sb.sb_icount));
	a[X_INOPBLOG] = km_addr(KP(mp->m_sb.sb_inopblog));
	a[X_ICOUNT] = km_addr(KP(mp->m_icount.count));
	a[X_ICOUNTP] = km_addr(KP(mp->m_icount.counters));
	a[X_IFREE] = km_addr(KP(mp->m_ifree.count));
	a[X_IFREEP] = km_addr(KP(mp->m_ifree.counters));
	if (KFIELD_EXISTS(xfs_mount, m_free) && KTYPE_EXISTS(xfs_freecounter)) {
		a[X_FDB] = km_addr(KP(mp->m_free[0].count.count));
		a[X_FDBP] = km_addr(KP(mp->m_free[0].count.counters));
	} else if (KFIELD_EXISTS(xfs_mount, m_fdblocks)) {
		a[X_FDB] = km_addr(KP(mp->m_fdblocks.count));
		a[X_FDBP] = km_addr(KP(mp->m_fdblocks.counters));
	} else
		return;
	a[X_ASIDE] = km_addr(KP(mp->m_alloc_set_aside));
	a[X_ALLOCBT] = km_addr(KP(mp->m_allocbt_blks.counter));
	a[X_MAXI] = km_addr(KP(mp->m_ino_geo.maxicount));
	km_gather(a, X__N, v);
	if (v[X_SUPER] != sbp)
		return;
	u64 cnt[3] = {v[X_ICOUNT], v[X_IFREE], v[X_FDB]}, pc[3] = {v[X_ICOUNTP], v[X_IFREEP], v[X_FDBP]};
	s64 s[3];                               /* icount, ifree, fdblocks */
	km_pcpu_counters(cnt, pc, 3, s);
	u64 lsize = v[X_LOGSTART] ? (v[X_LOGBLOCKS] & 0xffffffffu) : 0;
	blk[KV_BLOCKS] = v[X_DBLOCKS] - lsize;
	blk[KV_BFREE] = blk[KV_BAVAIL] = (u64)km_pos(s[2] - (s64)((v[X_ASIDE] & 0xffffffffu) + v[X_ALLOCBT]));
	/* inodes: those allocated, and as many more as the free blocks hold */
	u64 files = (u64)s[0] + (blk[KV_BFREE] << (v[X_INOPBLOG] & 0x3f));
	if (files > KM_XFS_MAXINUMBER)
		files = KM_XFS_MAXINUMBER;
	if (v[X_MAXI] && files > v[X_MAXI])
		files = v[X_MAXI];
	if (files < v[X_SBICOUNT])
		files = v[X_SBICOUNT];
	blk[KV_FILES] = files;
	blk[KV_FFREE] = (u64)km_pos((s64)files - (s[0] - s[1]));
	blk[KV_KIND] = KV_XFS;
}

/* btrfs_statfs (6.1 and 6.12 alike).  Size and free are the space_info
 * totals scaled by the data profile's copies, less the global block
 * reserve; available is the data space_info's unused part plus what chunk
 * allocation could still give data over the devices (the kernel's
 * btrfs_calc_avail_data_space, simulated here over at most
 * KM_BTRFS_MAX_DEVS devices), zero once metadata can take no more chunks
 * and its free space is under the reserve plus 4 MiB.  btrfs reports no
 * inode counts (0, as df -i shows).  Not followed: a balance converting
 * the data profile (the kernel allocates for its target profile; read
 * here as the profile already in use), so available is approximate then. */
#define KM_BTRFS_NR_RAID 9u              /* enum btrfs_raid_types, 5.5+ */
#define KM_BTRFS_MAX_SPACE 16u           /* space_info entries: 3 in practice */
#define KM_BTRFS_MAX_RO 256u             /* read-only block groups walked */
#define KM_BTRFS_MAX_DEVS 32u
#define KM_BG_DATA 0x1ull
#define KM_BG_METADATA 0x4ull
#define KM_BG_RAID0 0x8ull
#define KM_BG_RAID1 0x10ull
#define KM_BG_DUP 0x20ull
#define KM_BG_RAID10 0x40ull
#define KM_BG_RAID5 0x80ull
#define KM_BG_RAID6 0x100ull
#define KM_BG_RAID1C3 0x200ull
#define KM_BG_RAID1C4 0x400ull
#define KM_BG_PROFILE_MASK 0x7f8ull
#define KM_BTRFS_STRIPE_LEN (64ull << 10)
#define KM_BTRFS_RANGE_RESERVED (1ull << 20)
#define KM_BTRFS_DEV_IN_FS_METADATA 1
#define KM_BTRFS_DEV_REPLACE_TGT 3
#define KM_BTRFS_META_THRESH (4ull << 20)

/* btrfs_raid_array[i]: the kernel's table, at its own stride */
KM_INLINE const struct btrfs_raid_attr *km_raid_attr(u32 i)
{
	return (const struct btrfs_raid_attr *)((const char *)btrfs_raid_array + (u64)i * KSIZEOF(btrfs_raid_attr));
}

/* The raid table's columns: bg_flag, ncopies, devs_min, dev_stripes */
struct km_raid { u64 flag[KM_BTRFS_NR_RAID]; u32 copies[KM_BTRFS_NR_RAID], devs_min[KM_BTRFS_NR_RAID],
		 dev_stripes[KM_BTRFS_NR_RAID]; };

KM_INLINE void km_raid_table(struct km_raid *t)
{
	u64 a[4 * KM_BTRFS_NR_RAID], v[4 * KM_BTRFS_NR_RAID];
	for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++) {
		const struct btrfs_raid_attr *r = km_raid_attr(i);
		a[i] = km_addr(KP(r->bg_flag));
		a[KM_BTRFS_NR_RAID + i] = km_addr(KP(r->ncopies));
		a[2 * KM_BTRFS_NR_RAID + i] = km_addr(KP(r->devs_min));
		a[3 * KM_BTRFS_NR_RAID + i] = km_addr(KP(r->dev_stripes));
	}
	km_gather(a, 4 * KM_BTRFS_NR_RAID, v);
	for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++) {
		t->flag[i] = v[i];
		t->copies[i] = (u32)v[KM_BTRFS_NR_RAID + i] & 0xff;
		t->devs_min[i] = (u32)v[2 * KM_BTRFS_NR_RAID + i] & 0xff;
		t->dev_stripes[i] = (u32)v[3 * KM_BTRFS_NR_RAID + i] & 0xff;
	}
}

/* the raid index of a profile (btrfs_bg_flags_to_raid_index): the entry
 * whose flag it is, SINGLE's (flag 0) for none */
KM_INLINE u32 km_raid_index(const struct km_raid *t, u64 flags)
{
	u64 p = flags & KM_BG_PROFILE_MASK;
	u32 idx = KM_BTRFS_NR_RAID;
	for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++)
		if (t->flag[i] == p)
			idx = i;
	return idx;
}

/* The data allocation profile (btrfs_data_alloc_profile: the profiles
 * data has, those the writable devices allow, the most redundant) */
KM_INLINE u64 km_btrfs_data_profile(const struct km_raid *t, u64 avail_bits, u64 rw_devices)
{
	u64 allowed = 0;
	for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++)
		if (rw_devices >= t->devs_min[i])
			allowed |= t->flag[i];
	allowed &= avail_bits | KM_BG_DATA;
	/* the most redundant first: RAID1C4, RAID6, RAID1C3, RAID5, RAID10,
	 * RAID1, DUP, RAID0, their flags' bit numbers a nibble each */
	for (u32 k = 0; k < 8; k++) {
		u32 bit = (u32)(0x3546798aull >> (4 * k)) & 0xf;
		if ((allowed >> bit) & 1)
			return 1ull << bit;
	}
	return 0;
}

/* the free space of a space_info's read-only block groups (balance and
 * scrub set them so), each times its profile's copies
 * (btrfs_account_ro_block_groups_free_space); -1: too many to walk, a
 * corrupt list, a failed read or the read budget spent */
KM_INLINE s64 km_btrfs_ro_free(struct btrfs_space_info *si, const struct km_raid *t)
{
	km_list w;
	km_list_init(&w, KP(si->ro_bgs), KM_BTRFS_MAX_RO);
	u64 sum = 0, nv;
	int r;
	while ((r = km_list_step(&w, KM_LIST_NONE, &nv)) > 0) {
		struct btrfs_block_group *bg = (struct btrfs_block_group *)kcontainer_of(w.cur, struct btrfs_block_group,
											 ro_list);
		u64 a[4] = {km_addr(KP(bg->length)), km_addr(KP(bg->used)), km_addr(KP(bg->flags)),
			    km_addr(KP(bg->ro))}, v[4];
		km_gather(a, 4, v);
		u32 i = km_raid_index(t, v[2]);
		if ((u32)v[3] && i < KM_BTRFS_NR_RAID)
			sum += (v[0] - v[1]) * t->copies[i];
	}
	return r < 0 || simt_any(__llview_failed()) ? -1 : (s64)sum;
}

/* btrfs_calc_avail_data_space: each usable device's unallocated space
 * (stripe-aligned, less the 1 MiB at its start), sorted, then chunks of
 * the data profile handed out from the smallest up; -1: not computed */
KM_INLINE s64 km_btrfs_dev_avail(struct btrfs_fs_devices *fd, const struct km_raid *t, u64 profile,
				 u64 open_devices)
{
	u32 ri = km_raid_index(t, profile);
	if (ri >= KM_BTRFS_NR_RAID || open_devices > KM_BTRFS_MAX_DEVS)
		return -1;
	u64 nr = open_devices;
	u32 stripes = 1;
	if (profile & KM_BG_RAID0)
		stripes = (u32)nr;
	else if (profile & (KM_BG_RAID1 | KM_BG_RAID1C3 | KM_BG_RAID1C4))
		stripes = t->copies[ri];
	else if (profile & KM_BG_RAID10)
		stripes = 4;
	u64 min_stripe = t->dev_stripes[ri] * KM_BTRFS_STRIPE_LEN;
	u64 avail[KM_BTRFS_MAX_DEVS], nv;
	u32 n = 0;
	km_list w;
	km_list_init(&w, KP(fd->devices), 4 * KM_BTRFS_MAX_DEVS);
	int r = 0;
	while (n < nr && (r = km_list_step(&w, KM_LIST_NONE, &nv)) > 0) {
		struct btrfs_device *d = (struct btrfs_device *)kcontainer_of(w.cur, struct btrfs_device, dev_list);
		u64 a[4] = {km_addr(KP(d->bdev)), km_addr(KP(d->dev_state)), km_addr(KP(d->total_bytes)),
			    km_addr(KP(d->bytes_used))}, v[4];
		km_gather(a, 4, v);
		if (!(v[1] & (1ul << KM_BTRFS_DEV_IN_FS_METADATA)) || !v[0] || (v[1] & (1ul << KM_BTRFS_DEV_REPLACE_TGT)))
			continue;
		u64 av = (v[2] - v[3]) / KM_BTRFS_STRIPE_LEN * KM_BTRFS_STRIPE_LEN;
		if (av <= KM_BTRFS_RANGE_RESERVED + min_stripe)
			continue;
		avail[n++] = av - KM_BTRFS_RANGE_RESERVED;
	}
	if (n < nr && r < 0)
		return -1;                      /* a corrupt list, or the read budget spent */
	if (simt_any(__llview_failed()))
		return -1;
	for (u32 i = 1; i < n; i++)             /* descending */
		for (u32 j = i; j > 0 && avail[j - 1] < avail[j]; j--) {
			u64 x = avail[j];
			avail[j] = avail[j - 1];
			avail[j - 1] = x;
		}
	u64 total = 0;
	for (u32 left = n; left >= t->devs_min[ri] && left > 0; left--) {
		u32 i = left - 1;
		if (stripes > left)
			stripes = left;
		if (avail[i] >= min_stripe) {
			u64 sz = avail[i];
			total += sz * stripes;
			for (u32 j = i + 1 - stripes; j <= i; j++)
				avail[j] -= sz;
		}
	}
	return (s64)total;
}

/* every btrfs type read (the module's BTF, 5.11+): a kernel without them
 * leaves btrfs's sizes unknown and the other filesystems' read */
KM_INLINE int km_btrfs_types(void)
{
	return KTYPE_EXISTS(btrfs_fs_info) && KTYPE_EXISTS(btrfs_space_info) && KTYPE_EXISTS(btrfs_raid_attr) &&
	       KTYPE_EXISTS(btrfs_block_rsv) && KTYPE_EXISTS(btrfs_super_block) && KTYPE_EXISTS(btrfs_fs_devices) &&
	       KTYPE_EXISTS(btrfs_device) && KTYPE_EXISTS(btrfs_block_group);
}

KM_INLINE void km_btrfs_statfs(u64 sbp, u64 bsize, struct btrfs_fs_info *fi, u64 *blk)
{
	if (!&btrfs_raid_array || !bsize || (bsize & (bsize - 1)))
		return;
	enum { B_SB, B_SUPER, B_DEVS, B_RSV, B_RSVSI, B_AVAIL, B__N };
	u64 a[B__N], v[B__N];
	a[B_SB] = km_addr(KP(fi->sb));
	a[B_SUPER] = km_addr(KP(fi->super_copy));
	a[B_DEVS] = km_addr(KP(fi->fs_devices));
	a[B_RSV] = km_addr(KP(fi->global_block_rsv.size));
	a[B_RSVSI] = km_addr(KP(fi->global_block_rsv.space_info));
	a[B_AVAIL] = km_addr(KP(fi->avail_data_alloc_bits));
	km_gather(a, B__N, v);
	if (v[B_SB] != sbp || !v[B_SUPER] || !v[B_DEVS] || !v[B_RSVSI])
		return;
	struct btrfs_super_block *sup = (struct btrfs_super_block *)(unsigned long)v[B_SUPER];
	struct btrfs_fs_devices *fd = (struct btrfs_fs_devices *)(unsigned long)v[B_DEVS];
	struct btrfs_space_info *rsi = (struct btrfs_space_info *)(unsigned long)v[B_RSVSI];
	u64 b[4] = {km_addr(KP(sup->total_bytes)), km_addr(KP(fd->open_devices)), km_addr(KP(fd->rw_devices)),
		    km_addr(KP(rsi->full))}, w[4];
	km_gather(b, 4, w);
	struct km_raid t;
	km_raid_table(&t);

	u64 used = 0, free_data = 0, free_meta = 0, factor = 1;
	int mixed = 0, noavail = 0, r;
	km_list sw;
	km_list_init(&sw, KP(fi->space_info), KM_BTRFS_MAX_SPACE);
	u64 nv;
	while ((r = km_list_step(&sw, KM_LIST_NONE, &nv)) > 0) {
		struct btrfs_space_info *si = (struct btrfs_space_info *)kcontainer_of(sw.cur, struct btrfs_space_info, list);
		enum { S_FLAGS, S_USED, S_TOTAL, S_RO, S_BG, S__N = S_BG + KM_BTRFS_NR_RAID };
		u64 c[S__N], x[S__N];
		c[S_FLAGS] = km_addr(KP(si->flags));
		c[S_USED] = km_addr(KP(si->disk_used));
		c[S_TOTAL] = km_addr(KP(si->disk_total));
		c[S_RO] = km_addr(KP(si->ro_bgs.next));
		for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++)
			c[S_BG + i] = km_addr(KP(si->block_groups[i].next));
		km_gather(c, S__N, x);
		if (x[S_FLAGS] & KM_BG_DATA) {
			free_data += x[S_TOTAL] - x[S_USED];
			if (x[S_RO] != km_addr(KP(si->ro_bgs))) {
				s64 ro = km_btrfs_ro_free(si, &t);
				if (ro < 0)
					noavail = 1;
				else
					free_data -= (u64)ro;
			}
			for (u32 i = 0; i < KM_BTRFS_NR_RAID; i++)
				if (x[S_BG + i] != km_addr(KP(si->block_groups[i])) && t.copies[i])
					factor = t.copies[i];
		}
		if (!mixed && (x[S_FLAGS] & KM_BG_METADATA)) {
			if (x[S_FLAGS] & KM_BG_DATA)
				mixed = 1;
			else
				free_meta += x[S_TOTAL] - x[S_USED];
		}
		used += x[S_USED];
	}
	if (r < 0 || simt_any(__llview_failed()))
		return;                         /* not a list we recognise: unknown */

	u32 bits = (u32)__builtin_ctzll(bsize);
	u64 blocks = (w[0] / factor) >> bits;
	u64 bfree = blocks - ((used / factor) >> bits);
	u64 rsv = v[B_RSV] >> bits;
	bfree = bfree >= rsv ? bfree - rsv : 0;
	u64 profile = km_btrfs_data_profile(&t, v[B_AVAIL], w[2]);
	s64 dev = km_btrfs_dev_avail(fd, &t, profile, w[1]);
	if (dev < 0)
		noavail = 1;
	u64 bavail = (free_data / factor + (dev < 0 ? 0 : (u64)dev) / factor) >> bits;
	if (!mixed && (w[3] & 0xff) &&
	    (free_meta < KM_BTRFS_META_THRESH || free_meta - KM_BTRFS_META_THRESH < v[B_RSV]))
		bavail = 0;
	/* in bytes: the block is in units of bsize, as statfs */
	blk[KV_BLOCKS] = blocks;
	blk[KV_BFREE] = bfree;
	blk[KV_BAVAIL] = bavail;
	blk[KV_FILES] = blk[KV_FFREE] = 0;
	blk[KV_NOAVAIL] = (u64)noavail;
	blk[KV_KIND] = KV_BTRFS;
}

/* shmem_statfs: a limit of 0 (none) reports 0, as df shows */
KM_INLINE void km_tmpfs_statfs(struct shmem_sb_info *sbi, u64 *blk)
{
	int ispace = KFIELD_EXISTS(shmem_sb_info___ispace, free_ispace);
	struct shmem_sb_info___ispace *six = (struct shmem_sb_info___ispace *)sbi;
	struct shmem_sb_info___inodes *sin = (struct shmem_sb_info___inodes *)sbi;
	u64 a[5] = {km_addr(KP(sbi->max_blocks)), km_addr(KP(sbi->used_blocks.count)),
		    km_addr(KP(sbi->used_blocks.counters)), km_addr(KP(sbi->max_inodes)),
		    ispace ? km_addr(KP(six->free_ispace)) : km_addr(KP(sin->free_inodes))}, v[5];
	km_gather(a, 5, v);
	s64 used;
	km_pcpu_counters(&v[1], &v[2], 1, &used);
	blk[KV_BLOCKS] = v[0];
	blk[KV_BFREE] = blk[KV_BAVAIL] = v[0] ? v[0] - (u64)used : 0;
	blk[KV_FILES] = v[3];
	blk[KV_FFREE] = !v[3] ? 0 : ispace ? v[4] / KM_BOGO_INODE_SIZE : v[4];
	blk[KV_KIND] = KV_TMPFS;
}

int km_fs_stats(u64 key, u64 *blk)
{
	struct mount *m = (struct mount *)(unsigned long)key;
	u64 a[2] = {km_addr(KP(m->mnt.mnt_sb)), km_addr(KP(m->mnt.mnt_flags))}, v[2];
	km_gather(a, 2, v);
	struct super_block___fs *sb = (struct super_block___fs *)(unsigned long)v[0];
	u64 d = km_dummy_addr(), b[4], w[4];
	b[0] = sb ? km_addr(KP(sb->s_flags)) : d;
	b[1] = sb ? km_addr(KP(sb->s_magic)) : d;
	b[2] = sb ? km_addr(KP(sb->s_blocksize)) : d;
	b[3] = sb ? km_addr(KP(sb->s_fs_info)) : d;
	km_gather(b, 4, w);
	for (u32 i = KV_BLOCKS; i <= KV_FFREE; i++)
		blk[i] = 0;
	blk[KV_NOAVAIL] = blk[KV_ERRORS] = 0;
	blk[KV_MNT_FLAGS] = v[1] & 0xffffffffu;
	blk[KV_SB_FLAGS] = w[0];
	blk[KV_BSIZE] = w[2];
	blk[KV_KIND] = KV_OTHER;
	if (sb && w[3] && w[1] == KM_EXT4_MAGIC && KTYPE_EXISTS(ext4_sb_info) && KTYPE_EXISTS(ext4_super_block))
		km_ext4_statfs(v[0], (struct ext4_sb_info *)(unsigned long)w[3], blk);
	else if (sb && w[3] && w[1] == KM_TMPFS_MAGIC)
		km_tmpfs_statfs((struct shmem_sb_info *)(unsigned long)w[3], blk);
	else if (sb && w[3] && w[1] == KM_XFS_MAGIC && KTYPE_EXISTS(xfs_mount) && KTYPE_EXISTS(xfs_sb) &&
		 KTYPE_EXISTS(xfs_ino_geometry))
		km_xfs_statfs(v[0], (struct xfs_mount *)(unsigned long)w[3], blk);
	else if (sb && w[3] && w[1] == KM_BTRFS_MAGIC && km_btrfs_types())
		km_btrfs_statfs(v[0], w[2], (struct btrfs_fs_info *)(unsigned long)w[3], blk);
	blk[KV_FAILED] = (u64)simt_any(__llview_failed()) || !sb;
	return 0;
}

/* The filesystem's type ("ext4", "tmpfs"; /proc/mounts' third column:
 * its superblock's file_system_type's name, without a subtype), at most
 * size - 1 bytes.  One lane. */
int km_fs_fstype(u64 key, char *out, u32 size)
{
	struct mount *mnt = (struct mount *)(unsigned long)key;
	struct super_block___fs *sb = KR(mnt->mnt.mnt_sb);
	struct file_system_type *t = KR(sb->s_type);
	return km_string(KR(t->name), out, size);
}

/* The mount's source, as /proc/mounts' first column shows it: what
 * mount(2) was given ("/dev/vda1", "tmpfs"; without /proc/mounts' octal
 * escapes; "none" for none), or for btrfs, whose show_devname replaces
 * it, the path of its latest device (btrfs_show_devname: "/dev/vdc", a
 * multi-device filesystem's newest); at most size - 1 bytes.  One lane. */
int km_fs_device(u64 key, char *out, u32 size)
{
	struct mount *mnt = (struct mount *)(unsigned long)key;
	struct super_block___fs *sb = KR(mnt->mnt.mnt_sb);
	if (KR(sb->s_magic) == KM_BTRFS_MAGIC && km_btrfs_types() && KFIELD_EXISTS(btrfs_fs_devices, latest_dev) &&
	    KFIELD_EXISTS(btrfs_device, name)) {
		struct btrfs_fs_info *fi = KR(sb->s_fs_info);
		struct btrfs_fs_devices *fd = KR(fi->fs_devices);
		struct btrfs_device *dev = KR(fd->latest_dev);
		const char *name = KR(dev->name);
		if (KTYPE_EXISTS(rcu_string))
			name = KP(((struct rcu_string *)name)->str[0]);
		return km_string(name, out, size);
	}
	const char *dev = KR(mnt->mnt_devname);
	if (__llview_failed())
		return -14;
	if (!dev) {
		const char none[5] = "none";
		for (u32 i = 0; i < size; i++)
			out[i] = i < 4 && i + 1 < size ? none[i] : 0;
		return 0;
	}
	return km_string(dev, out, size);
}

/* a count of blocks in bytes, or a count: unknown for a filesystem whose
 * counters are not read, NaN when the block could not be read */
KM_INLINE double km_fsv(const u64 *blk, u64 v, double scale)
{
	return blk[KV_FAILED] ? KM_NAN : blk[KV_KIND] == KV_OTHER ? KM_ABSENT : (double)v * scale;
}

double km_fs_size_bytes(u64 k, const u64 *blk) { return km_fsv(blk, blk[KV_BLOCKS], (double)blk[KV_BSIZE]); }
double km_fs_free_bytes(u64 k, const u64 *blk) { return km_fsv(blk, blk[KV_BFREE], (double)blk[KV_BSIZE]); }
double km_fs_avail_bytes(u64 k, const u64 *blk)
{
	return blk[KV_NOAVAIL] && !blk[KV_FAILED] ? KM_ABSENT : km_fsv(blk, blk[KV_BAVAIL], (double)blk[KV_BSIZE]);
}
double km_fs_files(u64 k, const u64 *blk) { return km_fsv(blk, blk[KV_FILES], 1); }
double km_fs_files_free(u64 k, const u64 *blk) { return km_fsv(blk, blk[KV_FFREE], 1); }
/* errors ext4 recorded in its superblock (ext4_handle_error folds them
 * into the on-disk copy in memory, which errors_count in sysfs shows);
 * unknown for a filesystem that counts none */
double km_fs_errors(u64 k, const u64 *blk)
{
	return blk[KV_FAILED] ? KM_NAN : blk[KV_KIND] != KV_EXT4 ? KM_ABSENT : (double)blk[KV_ERRORS];
}
/* read-only as /proc/mounts says "ro": the mount's flag or the superblock's */
double km_fs_readonly(u64 k, const u64 *blk)
{
	if (blk[KV_FAILED])
		return KM_NAN;
	return (blk[KV_MNT_FLAGS] & KM_MNT_READONLY) || (blk[KV_SB_FLAGS] & KM_SB_RDONLY);
}
