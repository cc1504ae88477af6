/* kcore.h - write kernel-reading code the way kernel code is written.
 *
 * The metric library (kmetric_*.c) includes this header and reads the
 * monitored kernel's data as if it ran inside it: `p->tgid`, `init_task`,
 * `per_cpu_ptr(&runqueues, cpu)`.  Two compiler passes in rulec make that
 * true from outside the kernel:
 *
 *   CO-RE (rulec/core.c)   every field access written through KR()/KP() is
 *                          a clang `__builtin_preserve_access_index` chain;
 *                          its offset, and every kernel symbol, enum value
 *                          and type size named below, becomes a slot of a
 *                          relocation table that the loader fills from the
 *                          target's BTF and kallsyms.  One compiled bundle
 *                          runs on every kernel and survives a new KASLR
 *                          slide.  A field or symbol the target lacks gets a
 *                          poison value that makes every read through it a
 *                          read error, and the metrics that need it are
 *                          reported unavailable before any rule runs.
 *   LLView (rulec/llview.c) every load that may read kernel memory becomes a
 *                          call into the translation runtime (llview_rt.c,
 *                          kx.c): kernel virtual address -> physical ->
 *                          the mapping of the target's RAM, bounds-checked.
 *
 * The struct declarations here are *local* views: only the fields we read,
 * in any order, flattened through the kernel's anonymous members.  They are
 * matched to the target kernel's types by name (a `___flavour` suffix is
 * ignored, as libbpf does), never by layout.  Nothing here is the kernel's
 * own header.
 *
 * Freestanding: no libc.  Compiled by clang for nvptx64 and for the host.
 */
#ifndef SENTINEL_KCORE_H
#define SENTINEL_KCORE_H

#include <stdbool.h>
#include <stdint.h>

#include "simt.h"

typedef int8_t s8;
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

/* ---- CO-RE access ---------------------------------------------------- */

/* KR(p->a.b): read a kernel field; KP(p->a): its address. */
#define KP(x) __builtin_preserve_access_index(&(x))
#define KR(x) (*KP(x))
/* offsetof / container_of with relocated offsets */
#define koffsetof(T, f) ((unsigned long)__builtin_preserve_access_index(&((T *)0)->f))
#define kcontainer_of(ptr, T, f) ((T *)((char *)(ptr) - koffsetof(T, f)))

/* Markers the CO-RE pass replaces by relocation-table loads.  They are
 * extern objects with reserved names (an asm label may hold dots). */
#define KCORE_MARKER(kind, a, b) ({ \
	extern const unsigned long __kcore_##kind##_##a##_##b __asm__("__sentinel." #kind "." #a "." #b); \
	__kcore_##kind##_##a##_##b; })
/* The value of enumerator N of enum E in the target kernel. */
#define KENUM(E, N) ((long)KCORE_MARKER(enum, E, N))
/* The same for an enumerator the target kernel may lack (one under a
 * config option): then RELO_POISON (1 << 62), outside any index range the
 * code tests it against; the entry point does not need it to run. */
#define KENUM_OPT(E, N) ((long)KCORE_MARKER(enum, E##___opt, N))
/* 1 when struct T has field F in the target kernel, else 0. */
#define KFIELD_EXISTS(T, F) ((int)KCORE_MARKER(exists, T, F))
/* sizeof(struct T) in the target kernel. */
#define KSIZEOF(T) KCORE_MARKER(size, T, _)
/* 1 when the target kernel has a struct T. */
#define KTYPE_EXISTS(T) ((int)KCORE_MARKER(type, T, _))

/* Kernel symbols are plain extern declarations.  A weak one may be missing
 * from the target: its address is then 0 and the code must test it. */
#define __kweak __attribute__((weak))

/* ---- the runtime's side ---------------------------------------------- */

/* True when a translated load in the calling metric has failed; the LLView
 * pass replaces each call by the calling function's error flag. */
extern int __llview_failed(void);


/* ---- kernel types (local views) -------------------------------------- */

struct list_head {
	struct list_head *next, *prev;
};

typedef struct { int counter; } atomic_t;
typedef struct { long counter; } atomic_long_t;

struct cpumask {
	unsigned long bits[1];
};

struct prev_cputime {
	u64 utime, stime;
};

struct signal_struct {
	int nr_threads;
	struct list_head thread_head;
	u64 utime, stime, sum_sched_runtime;
	struct prev_cputime prev_cputime;
};

struct sched_entity {
	u64 sum_exec_runtime;
};

/* mm_struct.rss_stat: before 6.2 a struct of atomic counters ... */
struct mm_rss_stat {
	atomic_long_t count[4];
};
struct mm_struct {
	struct mm_rss_stat rss_stat;
};
/* ... from 6.2 an array of per-CPU counters (read as /proc does: the
 * shared count, clamped at 0). */
struct percpu_counter {
	s64 count;
	s32 *counters;            /* __percpu */
};
struct mm_struct___pcp {
	struct percpu_counter rss_stat[4];
};

struct hlist_node {
	struct hlist_node *next;
};
struct hlist_head {
	struct hlist_node *first;
};

/* the PID namespace's IDR: an xarray (4.20+) of struct pid *, by PID */
struct xarray {
	void *xa_head;
};
struct idr {
	struct xarray idr_rt;
};
struct pid_namespace {
	struct idr idr;
};
struct xa_node {
	unsigned char shift;      /* bits of the index below this node: 0 in a leaf */
	unsigned char offset;     /* its slot in the parent */
	struct xa_node *parent;
	struct xarray *array;
	void *slots[64];          /* XA_CHUNK_SIZE (CONFIG_BASE_SMALL=n) */
};
struct upid {
	int nr;
};
struct pid {
	struct hlist_head tasks[4];   /* [PIDTYPE_PID]: the task with this PID */
	struct upid numbers[1];       /* [0]: the PID in the initial namespace */
};

struct task_struct {
	struct hlist_node pid_links[4];
	unsigned int __state;
	unsigned int flags;
	int exit_state;
	int pid;
	int tgid;
	struct list_head tasks;
	struct list_head thread_node;
	struct sched_entity se;
	struct task_struct *real_parent;
	struct signal_struct *signal;
	struct mm_struct *mm;
	char comm[16];
	u64 utime, stime;
	unsigned long nvcsw, nivcsw;
	u64 start_time;
};
/* before 5.14 the state field was a long called `state` */
struct task_struct___pre514 {
	long state;
};

struct rq {
	unsigned int nr_running;
	u64 nr_switches;
	atomic_t nr_iowait;
};

struct kernel_cpustat {
	u64 cpustat[16];
};

typedef s64 ktime_t;
struct tick_sched {
	ktime_t idle_sleeptime;       /* to 6.x; gone by 7.2, whose kcpustat keeps idle time */
	ktime_t iowait_sleeptime;
};

struct vm_event_state {
	unsigned long event[128];
};

struct zone {
	unsigned long _watermark[4];
	unsigned long watermark_boost;
};
struct pglist_data {
	struct zone node_zones[8];
};

/* pressure stall information (CONFIG_PSI, 4.20+).  total[] has a row per
 * aggregator since 5.2 (PSI_AVGS = 0 first; before, one row in the same
 * place); its rows' length (NR_PSI_STATES - 1) varies, so only row 0 is
 * read.  The state index is the target's enum psi_states. */
struct psi_group {
	struct psi_group *parent; /* 6.0+, when cgroup.psi became a pointer */
	u64 total[2][8];          /* ns */
	unsigned long avg[8][3];  /* percent in fixed point (FIXED_1 = 1 << 11): 10 s, 60 s, 300 s */
};
struct static_key {
	atomic_t enabled;
};
struct static_key_false {
	struct static_key key;
};

/* block devices, 5.11+: a block_device per disk and per partition, each
 * an inode of the bdev pseudo filesystem (struct bdev_inode), its I/O
 * counters per CPU.  A partition's counts are in its disk's too. */
struct kobject {
	const char *name;
};
struct device_driver {
	const char *name;
};
struct device {
	struct kobject kobj;
	struct device *parent;
	struct device_driver *driver;
};
struct disk_stats {
	u64 nsecs[4];                 /* by enum stat_group: read, write, discard, flush */
	unsigned long sectors[4];
	unsigned long ios[4];
	unsigned long merges[4];
	unsigned long io_ticks;       /* jiffies */
	long in_flight[2];            /* local_t: one long each */
};
struct gendisk {
	int major;                    /* MD_MAJOR (9): an md array, private_data its mddev */
	unsigned long state;          /* bit 1: GD_READ_ONLY */
	struct block_device *part0;
	void *private_data;
};
/* md RAID (the md_mod module's types, from its BTF) */
struct md_personality;
struct mddev {
	struct md_personality *pers;  /* NULL: the array is not running (inactive) */
	int degraded;                 /* members missing or failed */
	int raid_disks;               /* members the array is made of */
	struct list_head disks;       /* its members, struct md_rdev by same_set (rdev_for_each) */
};
/* field order: koffsetof of each must differ (see struct inode) */
struct md_rdev {
	struct list_head same_set;    /* on mddev.disks */
	unsigned long flags;          /* enum flag_bits: bit 0 Faulty */
};
struct block_device {
	u64 bd_nr_sectors;
	struct gendisk *bd_disk;
	struct disk_stats *bd_stats;  /* __percpu */
	unsigned long bd_stamp;       /* jiffies: io_ticks counted up to here */
	bool bd_read_only;            /* up to 6.9 */
	u8 bd_partno;                 /* up to 6.9 */
	struct device bd_device;      /* its kobject's name is the device's */
};
/* 6.10+: the partition number and the read-only bit in one word */
struct block_device___610 {
	atomic_t __bd_flags;          /* BD_PARTNO 0xff, BD_READ_ONLY 1 << 8 */
};
struct hlist_node___pp {
	struct hlist_node *next, **pprev;
};
/* Field order matters here: koffsetof(struct inode, i_sb_list) and
 * koffsetof(struct bdev_inode, vfs_inode) are both
 * llvm.preserve.struct.access.index(null, K, K) in km_disk_walk, and LLVM
 * merges two such calls of the same K (they differ only in metadata), so
 * the walk read every block device at the wrong offset.  i_sb_list is
 * field 0, vfs_inode field 1. */
struct inode {
	struct list_head i_sb_list;
	struct hlist_node___pp i_hash;  /* hashed while the device is added */
};
struct bdev_inode {
	struct block_device bdev;
	struct inode vfs_inode;
};
struct super_block {
	struct list_head s_inodes;
};

/* cgroup v2: the default hierarchy's cgroups, a tree of their `self`
 * css (children / sibling lists); each controller's state hangs off
 * `subsys[]` (NULL where the controller is not enabled for the cgroup);
 * the name is the kernfs node's, the path its parents'. */
typedef struct { s64 counter; } atomic64_t;
struct cgroup_subsys_state {
	struct cgroup *cgroup;
	struct list_head sibling;
	struct list_head children;
	unsigned int flags;           /* CSS_ONLINE 1 << 1, CSS_DYING 1 << 4 */
	struct cgroup_subsys_state *parent;
};
struct kernfs_node {
	struct kernfs_node *parent;   /* renamed __parent by 7.2 (an RCU pointer) */
	struct kernfs_node *__parent;
	const char *name;
};
struct task_cputime {
	u64 stime, utime, sum_exec_runtime;
};
struct cgroup_base_stat {
	struct task_cputime cputime;
};
struct cgroup_rstat_cpu {             /* __percpu */
	struct cgroup_base_stat bstat;
	struct cgroup_base_stat last_bstat;
};
struct cgroup_rstat_base_cpu {        /* __percpu; 7.2's name for the same counters */
	struct cgroup_base_stat bstat;
	struct cgroup_base_stat last_bstat;
};
struct cgroup {
	struct cgroup_subsys_state self;
	struct kernfs_node *kn;
	struct cgroup_subsys_state *subsys[16];   /* by enum cgroup_subsys_id */
	struct cgroup_rstat_cpu *rstat_cpu;            /* to 6.x */
	struct cgroup_rstat_base_cpu *rstat_base_cpu;  /* 7.2 */
	struct cgroup_base_stat bstat;
	struct psi_group *psi;        /* 6.1+: a pointer (before, embedded) */
};
struct cgroup_root {
	struct cgroup cgrp;
};
struct page_counter {
	atomic_long_t usage;          /* pages */
	unsigned long high, max;      /* pages; PAGE_COUNTER_MAX: no limit */
};
struct mem_cgroup {
	struct cgroup_subsys_state css;
	struct page_counter memory;
	atomic_long_t memory_events[16];  /* by enum memcg_memory_event: hierarchical */
};
struct pids_cgroup {
	struct cgroup_subsys_state css;
	atomic64_t counter;
	atomic64_t limit;             /* PIDS_MAX (PID_MAX_LIMIT + 1): no limit */
};
struct cfs_bandwidth {
	s64 period;                   /* ktime_t, ns */
	u64 quota;                    /* ns a period; RUNTIME_INF (~0): no limit */
	int nr_periods;
	int nr_throttled;
	u64 throttled_time;           /* ns */
};
struct task_group {
	struct cgroup_subsys_state css;
	struct cfs_bandwidth cfs_bandwidth;
};

/* network devices: every net_device of a namespace is on its
 * net.dev_base_head; the namespaces are on net_namespace_list.  Where the counters are depends on the driver
 * (docs/kernel-sources.md): loopback's per-CPU lstats, virtio_net's
 * per-queue stats in its private area (module types: virtio_net's BTF),
 * dev->stats for drivers without a stats callback; the core's drop counts
 * per CPU in core_stats (6.0+; before, atomics in net_device). */
struct net_device_stats {
	unsigned long rx_packets, tx_packets, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_dropped, tx_dropped;
	unsigned long rx_length_errors, rx_frame_errors, rx_missed_errors, tx_fifo_errors;
};
struct net_device_core_stats {        /* __percpu */
	unsigned long rx_dropped, tx_dropped, rx_nohandler;
};
struct pcpu_lstats {                  /* __percpu */
	u64 packets, bytes;           /* u64_stats_t */
};
struct net_device_ops {
	void *ndo_get_stats64;
	void *ndo_get_stats;
};
struct net_device {
	char name[16];
	struct list_head dev_list;
	unsigned int flags;           /* IFF_UP 1, IFF_LOOPBACK 8 */
	unsigned long state;          /* bit __LINK_STATE_NOCARRIER */
	/* RFC 2863: IF_OPER_UNKNOWN 0 ... IF_OPER_UP 6; an unsigned char up
	 * to 6.9, an unsigned int after: an array, so that either relocates
	 * (no size check), read as its low byte */
	unsigned char operstate[1];
	const struct net_device_ops *netdev_ops;
	struct net_device_stats stats;
	struct net_device_core_stats *core_stats;   /* 6.0+; NULL until a drop */
	struct pcpu_lstats *lstats;
	struct device dev;
	unsigned char priv[1];        /* 6.12: the driver's private area; before, after the struct */
	/* the kernel's anonymous struct { upper, lower }: [1] is the lower
	 * devices (a bond's slaves), struct netdev_adjacent through .list */
	struct list_head adj_list[2];
	/* its namespace (CONFIG_NET_NS): possible_net_t, the kernel's
	 * typedef of an anonymous struct whose one member is this pointer */
	struct net *nd_net;
};
/* Per-CPU counters a driver keeps, in a union with lstats (dstats is not
 * there before 5.11: a flavour), and (6.7+) which of them the core sums
 * for a driver without a stats callback (enum netdev_stat_type: NONE,
 * LSTATS, TSTATS, DSTATS; an 8-bit bitfield) */
struct net_device___pcpu {
	long pad0_, pad1_, pad2_, pad3_, pad4_, pad5_, pad6_, pad7_, pad8_, pad9_, pad10_;
	struct pcpu_sw_netstats *tstats;
	struct pcpu_dstats___511 *dstats;
	u8 pcpu_stat_type;
};
struct pcpu_sw_netstats {             /* __percpu; u64_stats_t each */
	u64 rx_packets, rx_bytes, tx_packets, tx_bytes;
};
struct pcpu_dstats___511 {            /* __percpu; u64_stats_t each; 5.10's is dummy's own */
	u64 rx_packets, rx_bytes, tx_packets, tx_bytes, rx_drops, tx_drops;
};
/* one link between two devices (net/core/dev.c) */
struct netdev_adjacent {
	void *private;                /* a bond's lower device: its struct slave */
	struct list_head list;
};
struct net_device___510 {             /* before 6.0: the core's drop counts */
	atomic_long_t rx_dropped, tx_dropped;
};
/* per-network-namespace data of modules (net_generic(net, id)): a
 * flexible array in an anonymous union in the kernel */
struct net_generic {
	void *ptr[1];
};
/* conntrack (the nf_conntrack module: its types from its BTF, its
 * variables through its symbols).  The count is per namespace: in
 * nf_conntrack's own per-net data from 5.19, in net->ct before */
struct nf_conntrack_net {
	atomic_t count;
};
struct netns_ct___pre519 {
	atomic_t count;
};
struct ns_common {
	unsigned int inum;            /* /proc/PID/ns/net's net:[inum] */
};
struct net {
	struct list_head list;        /* on net_namespace_list, init_net first (CONFIG_NET_NS) */
	struct list_head dev_base_head;
	struct net_generic *gen;
	struct ns_common ns;
};
struct net___pre519 {
	struct netns_ct___pre519 ct;
};
/* EDAC: a memory controller (drivers/edac; built in where CONFIG_EDAC=y) */
struct mem_ctl_info {
	struct list_head link;        /* on mc_devices */
	int mc_idx;                   /* N of /sys/devices/system/edac/mc/mcN */
	u32 ue_mc, ce_mc;             /* errors counted: /sys/devices/system/edac/mc/mcN/{ue,ce}_count */
};
/* bonding (module types, from its BTF) */
struct slave {
	s8 link;                      /* BOND_LINK_UP 0, FAIL 1, DOWN 2, BACK 3 */
};
/* virtio_net (module types, from its BTF) */
struct virtnet_sq_stats {
	u64 packets, bytes, tx_timeouts;  /* u64_stats_t from 6.7 */
};
struct virtnet_rq_stats {
	u64 packets, bytes, drops;
};
struct send_queue {
	struct virtnet_sq_stats stats;
};
struct receive_queue {
	struct virtnet_rq_stats stats;
};
struct virtnet_info {
	struct send_queue *sq;
	struct receive_queue *rq;
	u16 max_queue_pairs;
	u32 speed;              /* Mb/s, SPEED_UNKNOWN (-1) unless the host says */
};
/* e1000e (module types, from its BTF; ___in_e1000e: e1000's module has
 * types of the same names and another layout).  Its counters are the
 * NIC's statistics registers, added into adapter->stats by
 * e1000e_update_stats: every 2 s (the watchdog) and at every read of
 * /proc/net/dev; the link's speed in Mb/s while it is up */
struct e1000_hw_stats___in_e1000e {
	u64 crcerrs, algnerrc, rxerrc, mpc, ecol, latecol, gprc, gptc, gorc, gotc, ruc, roc, cexterr;
};
struct e1000_adapter___in_e1000e {
	struct e1000_hw_stats___in_e1000e stats;
	u16 link_speed;
};
struct e1000_adapter___in_e1000 {          /* e1000's own (no stats callback: dev->stats) */
	u16 link_speed;
};
/* vmxnet3 (module types, from its BTF): per queue, the device's counters
 * in the queue descriptors it shares with the driver (UPT1 stats, which
 * the device writes when the driver asks, VMXNET3_CMD_GET_STATS: at every
 * read of /proc/net/dev, never by itself) and the driver's drops */
struct UPT1_TxStats {
	u64 ucastPktsTxOK, ucastBytesTxOK, mcastPktsTxOK, mcastBytesTxOK, bcastPktsTxOK, bcastBytesTxOK, pktsTxError;
};
struct UPT1_RxStats {
	u64 ucastPktsRxOK, ucastBytesRxOK, mcastPktsRxOK, mcastBytesRxOK, bcastPktsRxOK, bcastBytesRxOK, pktsRxError;
};
struct Vmxnet3_TxQueueDesc {
	struct UPT1_TxStats stats;
};
struct Vmxnet3_RxQueueDesc {
	struct UPT1_RxStats stats;
};
struct vmxnet3_tq_driver_stats {
	u64 drop_total;
};
struct vmxnet3_rq_driver_stats {
	u64 drop_total;
};
struct vmxnet3_tx_queue {
	struct vmxnet3_tq_driver_stats stats;
};
struct vmxnet3_rx_queue {
	struct vmxnet3_rq_driver_stats stats;
};
struct vmxnet3_adapter {
	struct vmxnet3_tx_queue tx_queue[1];      /* [VMXNET3_DEVICE_MAX_TX_QUEUES] */
	struct vmxnet3_rx_queue rx_queue[1];
	struct Vmxnet3_TxQueueDesc *tqd_start;
	struct Vmxnet3_RxQueueDesc *rqd_start;
	int num_rx_queues, num_tx_queues;
	u32 link_speed;                            /* Mb/s */
};
/* Server and cloud NICs (module types, each named ___in_MODULE: looked
 * up in that module's BTF alone, and every relocation through them
 * optional, so that a kernel without the module loses nothing else).
 * Checked against each Debian kernel's modules with the modules loaded
 * and no device (sentinel-inspect relocs ___in_igb ...); their values
 * are not checked in a guest: QEMU 7.2 emulates none of them
 * (docs/kernel-sources.md).  What each callback returns:
 * igb: adapter->stats64, as igb_update_stats last filled it (the 2 s
 * watchdog and every /proc/net/dev read; frozen while the link is down);
 * link_speed in Mb/s, 0 while the link is down */
struct rtnl_link_stats64 {
	u64 rx_packets, tx_packets, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_dropped, tx_dropped;
	u64 multicast, collisions, rx_length_errors, rx_over_errors, rx_crc_errors, rx_frame_errors, rx_fifo_errors;
	u64 rx_missed_errors;
};
struct igb_adapter___in_igb {
	struct rtnl_link_stats64 stats64;
	u16 link_speed;
};
/* ixgbe: packets and bytes summed live over its rings (rx, tx and XDP's
 * tx: arrays of 64 pointers, NULL while a ring is freed); its errors and
 * missed frames in dev->stats (the 2 s service task); link_speed a mask
 * of IXGBE_LINK_SPEED_* while link_up */
struct ixgbe_queue_stats___in_ixgbe {
	u64 packets, bytes;
};
struct ixgbe_ring___in_ixgbe {
	struct ixgbe_queue_stats___in_ixgbe stats;
};
struct ixgbe_adapter___in_ixgbe {
	struct ixgbe_ring___in_ixgbe *rx_ring[64], *tx_ring[64], *xdp_ring[64];
	int num_rx_queues, num_tx_queues, num_xdp_queues;
	u32 link_speed;
	bool link_up;
};
/* i40e: the VSI's rings (arrays of num_queue_pairs pointers; XDP's only
 * with a program) live; nothing while the VSI is down (state bit 0); the
 * rest in vsi->net_stats (the 1 s service task) */
struct i40e_queue_stats___in_i40e {
	u64 packets, bytes;
};
struct i40e_ring___in_i40e {
	struct i40e_queue_stats___in_i40e stats;
};
struct i40e_vsi___in_i40e {
	struct i40e_ring___in_i40e **rx_rings, **tx_rings, **xdp_rings;
	unsigned long state[1];
	void *xdp_prog;
	u16 num_queue_pairs;
	struct rtnl_link_stats64 net_stats;
};
struct i40e_netdev_priv___in_i40e {
	struct i40e_vsi___in_i40e *vsi;
};
/* ena: rings embedded in the adapter (128 each), live counters; drops
 * from the device's keep-alive (1 s); nothing unless ENA_FLAG_DEV_UP
 * (flags bit 1) */
struct ena_stats_tx___in_ena {
	u64 cnt, bytes;
};
struct ena_stats_rx___in_ena {
	u64 cnt, bytes, xdp_drop;
};
struct ena_ring___in_ena {
	struct ena_stats_tx___in_ena tx_stats;      /* (a union with rx_stats) */
	struct ena_stats_rx___in_ena rx_stats;
};
struct ena_stats_dev___in_ena {
	u64 rx_drops, tx_drops;
};
struct ena_adapter___in_ena {
	struct ena_ring___in_ena tx_ring[1], rx_ring[1];   /* [ENA_MAX_NUM_IO_QUEUES] */
	u32 num_io_queues, xdp_num_queues, xdp_first_ring;
	unsigned long flags;
	struct ena_stats_dev___in_ena dev_stats;
};
/* gve: arrays of rings (NULL while down), live counters; link_speed in
 * Mb/s once ethtool asked the device (0 before) */
struct gve_rx_ring___in_gve {
	u64 rpackets, rbytes;
};
struct gve_tx_ring___in_gve {
	u64 pkt_done, bytes_done;
};
struct gve_queue_config___in_gve {                /* to 6.14 */
	u16 num_queues;
};
struct gve_priv___in_gve {
	struct gve_rx_ring___in_gve *rx;
	struct gve_tx_ring___in_gve *tx;
	struct gve_queue_config___in_gve rx_cfg, tx_cfg;
	u16 num_xdp_queues;                          /* 6.4 to 6.14 */
	u64 link_speed;
};
/* 6.15+: a queue config of each kind, XDP's queues counted in tx_cfg's */
struct gve_rx_queue_config___in_gve {
	u16 num_queues;
};
struct gve_tx_queue_config___in_gve {
	u16 num_queues, num_xdp_queues;
};
struct gve_priv___in_gve___615 {
	struct gve_rx_queue_config___in_gve rx_cfg;
	struct gve_tx_queue_config___in_gve tx_cfg;
};
/* 8139too (real RTL8139 chips): packets and bytes its own, live; the
 * rest dev->stats */
struct rtl8139_stats___in_8139too {
	u64 packets, bytes;
};
struct rtl8139_private___in_8139too {
	struct rtl8139_stats___in_8139too rx_stats, tx_stats;
};
/* veth (module type, from its BTF): the pair's other end, and the
 * transmits it could not take */
struct veth_priv {
	struct net_device *peer;
	atomic64_t dropped;
};

/* Filesystems: the mounts of the initial mount namespace, a list (up to
 * 6.7) or a tree keyed by mount ID (6.8+); each mount's superblock and,
 * by its magic, the filesystem's own counters (ext4 and tmpfs: what their
 * statfs() adds up).  A separate struct for each field that changed type
 * between versions, so that no view declares a field the wrong way. */
struct rb_node {
	unsigned long __rb_parent_color;
	struct rb_node *rb_right;
	struct rb_node *rb_left;
};
struct qstr {
	u64 hash_len;                 /* len in the high half (little-endian) */
	const unsigned char *name;
};
struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
};
struct file_system_type {
	const char *name;
};
struct super_block___fs {
	struct file_system_type *s_type;   /* its name: /proc/mounts' type */
	unsigned long s_flags;        /* SB_RDONLY 1 */
	unsigned long s_magic;
	unsigned long s_blocksize;
	void *s_fs_info;
};
struct vfsmount {
	struct dentry *mnt_root;
	struct super_block___fs *mnt_sb;
	int mnt_flags;                /* MNT_READONLY 0x40; 6.1: MNT_CURSOR 0x10000000 */
};
/* (a field only some versions have is in a flavour: rulec then treats
 * it as optional, not as one whose absence makes the metrics unavailable.
 * A flavour read through the same pointer as its plain struct puts its
 * field at an index the plain struct's fields do not use, behind unread
 * padding: two accesses with the same base and the same indices are one
 * to LLVM, whatever their types (see struct inode)) */
struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
	const char *mnt_devname;      /* /proc/mounts' first column ("/dev/vda1", "tmpfs") */
};
/* field order: the two container_of offsets must differ (see struct inode) */
struct mount___list {
	struct list_head mnt_list;    /* up to 6.7: on mnt_namespace.list */
	struct rb_node mnt_node;      /* 6.8+: in mnt_namespace.mounts */
};
struct mnt_namespace;
struct mnt_namespace___list {     /* up to 6.7 */
	long pad0_, pad1_;            /* (an array would be one field) */
	struct list_head list;
};
struct mnt_namespace___rb {       /* 6.8+ (`mounts` was the count before) */
	struct rb_root___fs { struct rb_node *rb_node; } mounts;
	unsigned int nr_mounts;
};
struct nsproxy {
	struct mnt_namespace *mnt_ns;
};
struct task_struct___ns {
	struct nsproxy *nsproxy;
};
/* ext4 (a module: its types come from its BTF); the on-disk superblock
 * is little-endian, as x86-64 */
struct ext4_super_block {
	u32 s_inodes_count;
	u32 s_blocks_count_lo;
	u32 s_r_blocks_count_lo;
	u32 s_feature_incompat;       /* INCOMPAT_64BIT 0x80: the _hi halves count */
	u32 s_blocks_count_hi;
	u32 s_r_blocks_count_hi;
	u32 s_error_count;            /* errors recorded (/sys/fs/ext4/DEV/errors_count) */
};
struct ext4_sb_info {
	struct ext4_super_block *s_es;
	unsigned long s_overhead;     /* clusters */
	unsigned int s_cluster_bits;
	unsigned int s_mount_opt;     /* EXT4_MOUNT_MINIX_DF 0x80 */
	atomic64_t s_resv_clusters;
	struct percpu_counter s_freeclusters_counter;
	struct percpu_counter s_dirtyclusters_counter;
	struct percpu_counter s_freeinodes_counter;
	struct super_block___fs *s_sb;
};
/* xfs (the module's types, from its BTF): the superblock in memory, the
 * free-space and inode counters, and what is set aside */
struct xfs_sb {
	u64 sb_dblocks;               /* data blocks */
	u64 sb_logstart;              /* 0: an external log */
	u32 sb_logblocks;
	u64 sb_icount;                /* inodes allocated (as last written) */
	u8 sb_inopblog;               /* log2 of inodes a block */
};
struct xfs_ino_geometry {
	u64 maxicount;                /* 0: no limit */
};
struct xfs_freecounter {             /* 7.2: m_free[enum xfs_free_counter] */
	struct percpu_counter count;
};
struct xfs_mount {
	struct super_block___fs *m_super;
	struct xfs_sb m_sb;
	struct percpu_counter m_icount, m_ifree;
	struct percpu_counter m_fdblocks;             /* to 6.x */
	struct xfs_freecounter m_free[3];             /* 7.2: [XC_FREE_BLOCKS = 0] is m_fdblocks */
	u32 m_alloc_set_aside;        /* blocks statfs does not count free */
	atomic64_t m_allocbt_blks;
	struct xfs_ino_geometry m_ino_geo;
};
/* btrfs (the module's types, from its BTF): what btrfs_statfs adds up.
 * fs_info's space_info list (one entry a block-group type: data,
 * metadata, system; mixed: data and metadata in one), the global block
 * reserve, and the devices chunk allocation would spread data over. */
struct btrfs_super_block {
	u64 total_bytes;              /* __le64: x86-64 is little-endian */
};
struct btrfs_raid_attr {          /* btrfs_raid_array[enum btrfs_raid_types] */
	u8 dev_stripes;               /* stripes a device (DUP: 2) */
	u8 devs_min;
	u8 ncopies;
	u64 bg_flag;                  /* BTRFS_BLOCK_GROUP_RAID1 ...; SINGLE: 0 */
};
struct btrfs_block_group {
	u64 length, used, flags;
	unsigned int ro;
	struct list_head ro_list;
};
struct btrfs_space_info {
	u8 full;                      /* bool: no chunk of this type can be allocated */
	u64 disk_used, disk_total, flags;
	struct list_head list;
	struct list_head ro_bgs;      /* its read-only block groups (balance, scrub) */
	struct list_head block_groups[9];   /* by raid type: BTRFS_NR_RAID_TYPES since 5.5 */
};
struct btrfs_block_rsv {
	u64 size;
	struct btrfs_space_info *space_info;
};
struct btrfs_device {
	struct list_head dev_list;
	struct block_device *bdev;    /* null: missing */
	unsigned long dev_state;      /* bit 1 IN_FS_METADATA, bit 3 REPLACE_TGT */
	u64 total_bytes, bytes_used;
	void *name;                   /* its path: a struct rcu_string where the kernel has one, else the chars */
};
struct rcu_string {
	char str[8];                  /* (a flexible array in the kernel) */
};
struct btrfs_fs_devices {
	u64 open_devices, rw_devices;
	struct list_head devices;
	struct btrfs_device *latest_dev;  /* 5.16+: the device /proc/mounts names (btrfs_show_devname) */
};
struct btrfs_fs_info {
	struct btrfs_block_rsv global_block_rsv;
	struct btrfs_super_block *super_copy;
	struct super_block___fs *sb;
	struct btrfs_fs_devices *fs_devices;
	struct list_head space_info;
	u64 avail_data_alloc_bits;
};
/* tmpfs */
struct shmem_sb_info {
	unsigned long max_blocks;     /* 0: no limit */
	struct percpu_counter used_blocks;
	unsigned long max_inodes;     /* 0: no limit */
};
struct shmem_sb_info___inodes {   /* up to 6.5 */
	long pad0_, pad1_, pad2_, pad3_, pad4_;
	unsigned long free_inodes;
};
struct shmem_sb_info___ispace {   /* 6.6+: free inode space, BOGO_INODE_SIZE a file */
	long pad0_, pad1_, pad2_, pad3_;
	unsigned long free_ispace;
};

/* ---- kernel symbols -------------------------------------------------- */

extern struct task_struct init_task;
extern struct pid_namespace init_pid_ns;
extern unsigned long total_forks;
extern int nr_threads;
extern unsigned long avenrun[3];
extern u64 jiffies_64;
extern atomic_long_t _totalram_pages;
extern atomic_long_t vm_zone_stat[];
extern atomic_long_t vm_node_stat[];
extern atomic_long_t nr_swap_pages;
extern long total_swap_pages;
extern unsigned long totalreserve_pages;
extern unsigned long __per_cpu_offset[];
extern struct cpumask __cpu_online_mask;
extern struct cpumask __cpu_possible_mask;
extern struct super_block *blockdev_superblock;
extern unsigned int nr_cpu_ids;
extern struct pglist_data *node_data[] __kweak;       /* CONFIG_NUMA */
extern struct pglist_data contig_page_data __kweak;   /* !CONFIG_NUMA */
extern unsigned int nr_node_ids __kweak;
extern bool tick_nohz_active __kweak;                  /* CONFIG_NO_HZ_COMMON */
extern atomic_t panic_cpu;
extern unsigned long tainted_mask;
extern atomic_t oops_count __kweak;                    /* 6.2, backported to 6.1.x */
extern atomic_t warn_count __kweak;
extern struct psi_group psi_system __kweak;             /* CONFIG_PSI */
extern struct cgroup_root cgrp_dfl_root __kweak;         /* CONFIG_CGROUPS: the v2 hierarchy */
extern struct net init_net __kweak;                      /* CONFIG_NET */
extern struct list_head net_namespace_list __kweak;      /* CONFIG_NET: every struct net, by .list */
extern unsigned int nf_conntrack_net_id __kweak;         /* the nf_conntrack module, when loaded */
extern unsigned int nf_conntrack_max __kweak;
extern const struct btrfs_raid_attr btrfs_raid_array[] __kweak;  /* the btrfs module, when loaded */
/* open files (fs/file_table.c, both static): /proc/sys/fs/file-nr */
struct files_stat_struct {
	unsigned long nr_files;       /* what file-nr printed last */
	unsigned long max_files;      /* /proc/sys/fs/file-max */
};
extern struct files_stat_struct files_stat;
extern struct percpu_counter nr_files;
extern const struct net_device_ops bond_netdev_ops __kweak;
extern const char dev_get_tstats64[] __kweak;             /* functions: their addresses alone */
extern const char dummy_get_stats64[] __kweak;            /* the dummy module, when loaded */
extern const char veth_get_stats64[] __kweak;             /* the veth module, when loaded */
extern const char e1000e_get_stats64[] __kweak;           /* NIC drivers' stats callbacks, when loaded */
extern const char vmxnet3_get_stats64[] __kweak;
extern const char cp_get_stats[] __kweak;                 /* 8139cp */
extern const char e1000_netdev_ops[] __kweak;             /* e1000: no stats callback, its ops tell it */
extern const char igb_get_stats64[] __kweak;
extern const char ixgbe_get_stats64[] __kweak;
extern const char i40e_get_netdev_stats_struct[] __kweak;
extern const char ena_get_stats64[] __kweak;
extern const char gve_get_stats[] __kweak;
extern const char rtl8139_get_stats64[] __kweak;
extern struct list_head mc_devices __kweak;              /* CONFIG_EDAC: static in edac_mc.c */   /* the bonding module, when loaded */
/* kernel/time/ntp.c's state: file-static variables to 6.12; 6.13 moved
 * them into struct ntp_data tk_ntp_data (later an array, one per
 * timekeeper: element 0 is the system clock's) and dropped tick_nsec */
extern int time_status __kweak;
extern long time_maxerror __kweak;
extern long time_esterror __kweak;
extern s64 time_offset __kweak;
extern unsigned long tick_nsec __kweak;
struct ntp_data {
	u64 tick_length_base;     /* ns per NTP interval (1 / HZ) << 32, with the frequency correction */
	int time_status;
	s64 time_offset;
	long time_maxerror;
	long time_esterror;
};
extern struct ntp_data tk_ntp_data __kweak;
extern struct static_key_false psi_disabled __kweak;    /* psi=0 on the command line */
/* per-CPU variables: the symbol is an offset into each CPU's area */
extern struct rq runqueues;
extern struct kernel_cpustat kernel_cpustat;
extern struct tick_sched tick_cpu_sched __kweak;
extern struct vm_event_state vm_event_states;

#define per_cpu_ptr(p, cpu) ((__typeof__(p))((char *)(p) + __per_cpu_offset[(cpu)]))

#endif
