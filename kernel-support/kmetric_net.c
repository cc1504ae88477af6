/* kmetric_net.c - network interfaces (km_net_*): every namespace's,
 * as each one's /proc/net/dev.
 *
 * The metric library's entry points and helpers: see kmetric_int.h.
 */
#include "kmetric_int.h"

/* ---- network devices: every namespace's, as each one's /proc/net/dev ----------------------
 *
 * Every net_device of every namespace, on its dev_base_head (registered
 * and not yet unregistered): the initial namespace's by their names, a
 * container's (the other end of its veth, its own lo) as NAME@INUM, INUM
 * the namespace's inode number (/proc/PID/ns/net, lsns -t net).  Each
 * namespace's /proc/net/dev prints dev_get_stats(): the driver's
 * ndo_get_stats64 when it has one, else (6.7+) the core's per-CPU tstats
 * or dstats over dev->stats as pcpu_stat_type says, else dev->stats, plus
 * the core's drop counts.  From outside there is no calling the driver,
 * so the counters are read where each driver keeps them: loopback's
 * per-CPU lstats, virtio_net's per-queue stats (its types come from the
 * module's BTF), dev->stats and the per-CPU tstats for a driver whose
 * callback is dev_get_tstats64 (a bridge, vxlan, ip tunnels), dummy's
 * lstats (its callback fills the transmits alone), dev->stats with the
 * core's tstats or dstats for a driver without a callback (e1000, and
 * 8139cp, whose callback only adds a register of missed frames to it),
 * veth's tstats with its peer's transmits as its receives, e1000e's
 * adapter->stats and vmxnet3's queue descriptors (both as of the driver's
 * last update: docs/metrics.md), and the server and cloud NICs' own
 * (igb, ixgbe, i40e, ena, gve, 8139too: relocated against their modules'
 * BTF, not run against their devices: docs/kernel-sources.md).  Any other
 * driver's counters (bonding's, ice's, mlx5's) are unknown (KM_ABSENT),
 * never a guess. */

#define KM_MAX_NETDEVS 65536u
#define KM_IFF_UP 0x1u
#define KM_IFF_LOOPBACK 0x8u

#define KM_MAX_NETNS 65536u

/* Warp-collective: every lane gets the count, lane 0 writes out.  Every
 * namespace's devices (net_namespace_list: init_net's first, then the
 * containers'), or init_net's alone where the list cannot be read. */
int km_net_walk(u64 *out, u32 cap)
{
	if (!&init_net)
		return -2;                      /* KX_ENOENT: a kernel without networking */
	int all = &net_namespace_list && KFIELD_EXISTS(net, list);
	km_list ns;
	if (all)
		km_list_init(&ns, KP(net_namespace_list), KM_MAX_NETNS);
	int n = 0, r = 0, done = 0;
	u64 v;
	while (!done) {
		/* through an integer: LLView reads a kernel address there (ns.cur
		 * sits in the detector's own memory) */
		u64 at = km_addr(&init_net);
		if (all) {
			if ((r = km_list_step(&ns, KM_LIST_NONE, &v)) <= 0)
				break;
			at = km_addr(ns.cur) - (u64)koffsetof(struct net, list);
		} else {
			done = 1;
		}
		struct net *net = (struct net *)(unsigned long)at;
		km_list w;
		km_list_init(&w, KP(net->dev_base_head), KM_MAX_NETDEVS);
		int rd;
		while ((rd = km_list_step(&w, KM_LIST_NONE, &v)) > 0) {
			if ((u32)n < cap && simt_lane() == 0)
				out[n] = km_addr(kcontainer_of(w.cur, struct net_device, dev_list));
			n++;
		}
		if (rd < 0)
			return w.spent ? KM_EBUDGET : -40;  /* KX_ELOOP: a corrupt, changing or endless list */
		if (simt_any(__llview_failed()))
			return -14;
		if (n > (int)KM_MAX_NETDEVS)
			return -40;
	}
	if (r < 0)
		return ns.spent ? KM_EBUDGET : -40;
	return simt_any(__llview_failed()) ? -14 : n;
}

/* The interface's name ("eth0"): IFNAMSIZ bytes inline.  One lane. */
int km_net_name(u64 d, char *out, u32 size)
{
	const u64 *p = (const u64 *)KP(((struct net_device *)(unsigned long)d)->name);
	u64 w[2] = {p[0], p[1]};
	u32 i = 0;
	for (; i < 16 && i + 1 < size; i++) {
		char c = (char)(w[i / 8] >> (8 * (i % 8)));
		if (!c)
			break;
		out[i] = c;
	}
	/* a device of another namespace (a container's end of a veth):
	 * NAME@INUM, INUM its namespace's, as /proc/PID/ns/net says net:[INUM] */
	u64 na = KFIELD_EXISTS(net_device, nd_net) ? km_addr(KR(((struct net_device *)(unsigned long)d)->nd_net)) : 0;
	if (na && na != km_addr(&init_net)) {
		u32 inum = KR(((struct net *)(unsigned long)na)->ns.inum), k = 0;
		char dig[10];
		do
			dig[k++] = (char)('0' + inum % 10);
		while ((inum /= 10) && k < 10);
		if (i + 1 < size)
			out[i++] = '@';
		while (k && i + 1 < size)
			out[i++] = dig[--k];
	}
	for (; i < size; i++)
		out[i] = 0;
	return __llview_failed() ? -14 : 0;
}

/* A device's counters, read once a tick into a block (km_net_stats: its
 * fields one gather, its driver's name two more, the core's drops and
 * loopback's counters km_pcpu_sums, virtio_net's queues a (queue, field)
 * pair a lane); the metrics read the block. */
enum {
	KN_RX_PACKETS, KN_TX_PACKETS, KN_RX_BYTES, KN_TX_BYTES, KN_RX_ERRORS, KN_TX_ERRORS, KN_RX_DROPPED,
	KN_TX_DROPPED, KN_RX_MISSED,                             /* dev->stats */
	KN_FLAGS, KN_STATE, KN_OPS, KN_CORE, KN_LSTATS, KN_PARENT, KN_OPER,
	KN_G1,                                                   /* the device's words, one gather */
	KN_CORE_RXD = KN_G1, KN_CORE_TXD,                        /* the core's drops, summed over CPUs */
	KN_LO_PACKETS, KN_LO_BYTES,                              /* loopback */
	KN_V_RXP, KN_V_RXB, KN_V_RXD, KN_V_TXP, KN_V_TXB, KN_V_TXE, /* the driver's own: virtio_net's queues, */
	KN_V_RXE, KN_V_TXD,                                      /* summed, e1000e's, vmxnet3's; drops without the core's */
	KN_V_SPEED, KN_V_SPEED_CARRIER,                          /* the driver's link speed (Mb/s); only with a carrier */
	KN_BOND, KN_BOND_SLAVES, KN_BOND_UP,                     /* a bond's (KN_BOND: it is one) */
	KN_P_RXP, KN_P_RXB, KN_P_TXP, KN_P_TXB, KN_P_RXD, KN_P_TXD, /* per-CPU tstats, dstats or dummy's lstats */
	KN_VE_TXD,                                               /* veth: its transmits the peer dropped */
	KN_KIND, KN_FAILED, KN__COUNT
};
_Static_assert(KN__COUNT <= 64, "the block rulec gives km_net_stats (CG_OBJ_BLOCK)");
/* how dev_get_stats() gets a driver's counters, and so how they are read:
 * dev->stats (GENERIC), per-CPU lstats (LOOPBACK), virtio_net's queues,
 * dev->stats plus the per-CPU tstats (dev_get_tstats64: bridge, vxlan,
 * ip tunnels...) or dstats (6.7+, the core's, for a driver without a
 * callback), dummy's lstats (its transmits alone) */
enum {
	KN_GENERIC, KN_LOOPBACK, KN_VIRTIO, KN_TSTATS, KN_DSTATS, KN_DUMMY, KN_VETH,
	KN_E1000E, KN_VMXNET3, KN_IGB, KN_IXGBE, KN_I40E, KN_ENA, KN_GVE, KN_RTL8139,   /* their totals in KN_V_* */
	KN_UNKNOWN
};
enum { KM_PCPU_STAT_TSTATS = 2, KM_PCPU_STAT_DSTATS = 3 };      /* enum netdev_stat_type */

#define KM_IFF_MASTER 0x400u
#define KM_MAX_SLAVES 256u

/* A bond (the bonding module's netdev_ops, where it was loaded when the
 * target was found): its slaves are its lower devices, each adjacency's
 * private its struct slave (bond_for_each_slave); a slave is active when
 * its link is BOND_LINK_UP (0), as /sys/class/net/BOND/lower_IF/
 * bonding_slave/mii_status says "up".  A corrupt or changing list leaves
 * the counts unknown. */
KM_INLINE void km_bond(struct net_device *dev, u64 *blk)
{
	blk[KN_BOND] = blk[KN_BOND_SLAVES] = blk[KN_BOND_UP] = 0;
	if (!(blk[KN_FLAGS] & KM_IFF_MASTER) || !&bond_netdev_ops || blk[KN_OPS] != km_addr(&bond_netdev_ops) ||
	    !KTYPE_EXISTS(slave) || !KTYPE_EXISTS(netdev_adjacent))
		return;
	long priv = (long)koffsetof(struct netdev_adjacent, private) - (long)koffsetof(struct netdev_adjacent, list);
	km_list w;
	km_list_init(&w, KP(dev->adj_list[1]), KM_MAX_SLAVES);
	u32 up = 0;
	u64 v, la, lv;
	int r;
	while ((r = km_list_step(&w, priv, &v)) > 0) {
		la = v ? km_addr(KP(((struct slave *)(unsigned long)v)->link)) : km_dummy_addr();
		km_gather(&la, 1, &lv);
		up += v && (s8)(lv & 0xff) == 0;
	}
	if (r < 0)
		return;
	blk[KN_BOND] = 1;
	blk[KN_BOND_SLAVES] = w.n;
	blk[KN_BOND_UP] = up;
}

/* netdev_priv(): the driver's private area, after the net_device (6.12+
 * keeps a pointer to it) */
KM_INLINE u64 km_netdev_priv(struct net_device *dev)
{
	return KFIELD_EXISTS(net_device, priv) ? km_addr(KP(dev->priv))
					       : km_addr(dev) + ((KSIZEOF(net_device) + 31) & ~31ul);
}

/* virtio_net's types are the module's: present only while it is loaded */
KM_INLINE int km_virtio_types(void)
{
	return KTYPE_EXISTS(virtnet_info) && KTYPE_EXISTS(receive_queue) && KTYPE_EXISTS(send_queue) &&
	       KTYPE_EXISTS(virtnet_rq_stats) && KTYPE_EXISTS(virtnet_sq_stats);
}

/* virtio_net: each queue pair's counters, as virtnet_stats sums them */
KM_INLINE void km_virtio_queues(struct net_device *dev, u64 *blk)
{
	struct virtnet_info *vi = (struct virtnet_info *)(unsigned long)km_netdev_priv(dev);
	u64 a[4] = {km_addr(KP(vi->sq)), km_addr(KP(vi->rq)), km_addr(KP(vi->max_queue_pairs)),
		    KFIELD_EXISTS(virtnet_info, speed) ? km_addr(KP(vi->speed)) : km_dummy_addr()}, v[4];
	km_gather(a, 4, v);
	/* SPEED_UNKNOWN (-1) until the host tells (VIRTIO_NET_F_SPEED_DUPLEX) */
	blk[KN_V_SPEED] = KFIELD_EXISTS(virtnet_info, speed) ? v[3] & 0xffffffffu : 0xffffffffu;
	struct send_queue *sq = (struct send_queue *)(unsigned long)v[0];
	struct receive_queue *rq = (struct receive_queue *)(unsigned long)v[1];
	u32 nq = (u32)(v[2] & 0xffff), lane = simt_lane(), nl = simt_nlanes();
	if (nq > 1024)
		nq = 1024;
	u64 base[6] = {km_addr(KP(rq->stats.packets)), km_addr(KP(rq->stats.bytes)), km_addr(KP(rq->stats.drops)),
		       km_addr(KP(sq->stats.packets)), km_addr(KP(sq->stats.bytes)), km_addr(KP(sq->stats.tx_timeouts))};
	u64 stride[6] = {KSIZEOF(receive_queue), KSIZEOF(receive_queue), KSIZEOF(receive_queue),
			 KSIZEOF(send_queue), KSIZEOF(send_queue), KSIZEOF(send_queue)};
	u64 acc[6] = {0, 0, 0, 0, 0, 0};
	for (u32 j = lane; j < nq * 6; j += nl) {
		u32 q = j / 6, f = j % 6;
		acc[f] += km_word(base[f] + (u64)q * stride[f]);
	}
	for (u32 f = 0; f < 6; f++)
		blk[KN_V_RXP + f] = simt_sum_u64(acc[f]);
	blk[KN_V_TXD] = blk[KN_TX_DROPPED];         /* virtnet_stats: dev->stats' */
}

/* e1000e: e1000e_get_stats64's sums of adapter->stats, the NIC's
 * registers as the driver last added them up; its speed while the
 * carrier is on (e1000_get_link_ksettings) */
KM_INLINE int km_e1000e_types(void)
{
	return KTYPE_EXISTS(e1000_adapter___in_e1000e) && KTYPE_EXISTS(e1000_hw_stats___in_e1000e);
}
KM_INLINE void km_e1000e(struct net_device *dev, u64 *blk)
{
	struct e1000_adapter___in_e1000e *ad = (struct e1000_adapter___in_e1000e *)(unsigned long)km_netdev_priv(dev);
	enum { GPRC, GORC, GPTC, GOTC, RXERRC, CRCERRS, ALGNERRC, RUC, ROC, CEXTERR, ECOL, LATECOL, MPC, SPEED, N };
	u64 a[N] = {km_addr(KP(ad->stats.gprc)), km_addr(KP(ad->stats.gorc)), km_addr(KP(ad->stats.gptc)),
		    km_addr(KP(ad->stats.gotc)), km_addr(KP(ad->stats.rxerrc)), km_addr(KP(ad->stats.crcerrs)),
		    km_addr(KP(ad->stats.algnerrc)), km_addr(KP(ad->stats.ruc)), km_addr(KP(ad->stats.roc)),
		    km_addr(KP(ad->stats.cexterr)), km_addr(KP(ad->stats.ecol)), km_addr(KP(ad->stats.latecol)),
		    km_addr(KP(ad->stats.mpc)), km_addr(KP(ad->link_speed))}, v[N];
	km_gather(a, N, v);
	blk[KN_V_RXP] = v[GPRC];
	blk[KN_V_RXB] = v[GORC];
	blk[KN_V_TXP] = v[GPTC];
	blk[KN_V_TXB] = v[GOTC];
	blk[KN_V_RXE] = v[RXERRC] + v[CRCERRS] + v[ALGNERRC] + v[RUC] + v[ROC] + v[CEXTERR];
	blk[KN_V_TXE] = v[ECOL] + v[LATECOL];
	blk[KN_V_RXD] = v[MPC];                     /* rx_missed_errors; no rx_dropped of its own */
	blk[KN_V_TXD] = 0;                          /* "Tx Dropped needs to be maintained elsewhere" */
	blk[KN_V_SPEED] = v[SPEED] & 0xffff;
	blk[KN_V_SPEED_CARRIER] = 1;
}

/* e1000 (no stats callback: dev->stats) keeps its link's speed too, in
 * its own struct e1000_adapter (e1000_get_link_ksettings) */
KM_INLINE void km_e1000_speed(struct net_device *dev, u64 *blk)
{
	if (!&e1000_netdev_ops || blk[KN_OPS] != km_addr(e1000_netdev_ops) || !KTYPE_EXISTS(e1000_adapter___in_e1000))
		return;
	struct e1000_adapter___in_e1000 *ad = (struct e1000_adapter___in_e1000 *)(unsigned long)km_netdev_priv(dev);
	u64 a = km_addr(KP(ad->link_speed)), v;
	km_gather(&a, 1, &v);
	blk[KN_V_SPEED] = v & 0xffff;
	blk[KN_V_SPEED_CARRIER] = 1;
}

/* vmxnet3: vmxnet3_get_stats64's sums over its queues, a (queue, field)
 * pair a lane: the device's counters in each queue descriptor (as of
 * the last VMXNET3_CMD_GET_STATS) and the driver's drops (live) */
KM_INLINE int km_vmxnet3_types(void)
{
	/* every module type the reads name, or their relocations are
	 * required ones: a kernel without the module's BTF (5.10) would
	 * lose every interface's counters, not just this driver's */
	return KTYPE_EXISTS(vmxnet3_adapter) && KTYPE_EXISTS(Vmxnet3_TxQueueDesc) && KTYPE_EXISTS(Vmxnet3_RxQueueDesc) &&
	       KTYPE_EXISTS(vmxnet3_tx_queue) && KTYPE_EXISTS(vmxnet3_rx_queue) && KTYPE_EXISTS(UPT1_TxStats) &&
	       KTYPE_EXISTS(UPT1_RxStats) && KTYPE_EXISTS(vmxnet3_tq_driver_stats) && KTYPE_EXISTS(vmxnet3_rq_driver_stats);
}
KM_INLINE void km_vmxnet3(struct net_device *dev, u64 *blk)
{
	struct vmxnet3_adapter *ad = (struct vmxnet3_adapter *)(unsigned long)km_netdev_priv(dev);
	u64 a[5] = {km_addr(KP(ad->tqd_start)), km_addr(KP(ad->rqd_start)), km_addr(KP(ad->num_tx_queues)),
		    km_addr(KP(ad->num_rx_queues)), km_addr(KP(ad->link_speed))}, v[5];
	km_gather(a, 5, v);
	blk[KN_V_SPEED] = v[4] & 0xffffffffu;
	blk[KN_V_SPEED_CARRIER] = 1;
	struct Vmxnet3_TxQueueDesc *tqd = (struct Vmxnet3_TxQueueDesc *)(unsigned long)v[0];
	struct Vmxnet3_RxQueueDesc *rqd = (struct Vmxnet3_RxQueueDesc *)(unsigned long)v[1];
	u32 ntx = (u32)(v[2] & 0xffffffffu), nrx = (u32)(v[3] & 0xffffffffu), lane = simt_lane(), nl = simt_nlanes();
	if (ntx > 32)                               /* VMXNET3_DEVICE_MAX_TX_QUEUES */
		ntx = 32;
	if (nrx > 32)
		nrx = 32;
	if (!tqd)
		ntx = 0;
	if (!rqd)
		nrx = 0;
	/* the fields a queue adds: tx packets (3), bytes (3), errors, drops;
	 * then rx the same; into RXP RXB RXE RXD / TXP TXB TXE TXD */
	enum { F = 16 };
	u64 dd = KSIZEOF(Vmxnet3_TxQueueDesc), rd = KSIZEOF(Vmxnet3_RxQueueDesc);
	u64 tq = KSIZEOF(vmxnet3_tx_queue), rq = KSIZEOF(vmxnet3_rx_queue);
	u64 base[F] = {km_addr(KP(tqd->stats.ucastPktsTxOK)), km_addr(KP(tqd->stats.mcastPktsTxOK)),
		       km_addr(KP(tqd->stats.bcastPktsTxOK)), km_addr(KP(tqd->stats.ucastBytesTxOK)),
		       km_addr(KP(tqd->stats.mcastBytesTxOK)), km_addr(KP(tqd->stats.bcastBytesTxOK)),
		       km_addr(KP(tqd->stats.pktsTxError)), km_addr(KP(ad->tx_queue[0].stats.drop_total)),
		       km_addr(KP(rqd->stats.ucastPktsRxOK)), km_addr(KP(rqd->stats.mcastPktsRxOK)),
		       km_addr(KP(rqd->stats.bcastPktsRxOK)), km_addr(KP(rqd->stats.ucastBytesRxOK)),
		       km_addr(KP(rqd->stats.mcastBytesRxOK)), km_addr(KP(rqd->stats.bcastBytesRxOK)),
		       km_addr(KP(rqd->stats.pktsRxError)), km_addr(KP(ad->rx_queue[0].stats.drop_total))};
	u64 stride[F] = {dd, dd, dd, dd, dd, dd, dd, tq, rd, rd, rd, rd, rd, rd, rd, rq};
	u64 acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};   /* by slot - KN_V_RXP */
	u32 n = 32 * F;                          /* pairs of up to 32 queues, F fields */
	for (u32 j = lane; j < n; j += nl) {
		u32 q = j / F, f = j % F, g = f % 8, rx = f >= 8;
		/* packets (3), bytes (3), errors, drops */
		u32 slot = g < 3 ? (rx ? KN_V_RXP : KN_V_TXP) : g < 6 ? (rx ? KN_V_RXB : KN_V_TXB)
			   : g == 6 ? (rx ? KN_V_RXE : KN_V_TXE) : (rx ? KN_V_RXD : KN_V_TXD);
		if (q < (rx ? nrx : ntx))
			acc[slot - KN_V_RXP] += km_word(base[f] + (u64)q * stride[f]);
	}
	for (u32 f = 0; f < 8; f++)
		blk[KN_V_RXP + f] = simt_sum_u64(acc[f]);
}

/* Sums of a (packets, bytes) pair over n rings, a (ring, field) pair a
 * lane: the rings' pointers in an array at arr (ptrs), or the rings
 * themselves stride bytes apart from arr; a NULL ring adds nothing. */
KM_INLINE void km_ring_sums(u64 arr, u32 n, int ptrs, u64 stride, u64 off_p, u64 off_b, u64 *p, u64 *b)
{
	u32 lane = simt_lane(), nl = simt_nlanes();
	u64 acc[2] = {0, 0};
	for (u32 j = lane; j < 2 * n; j += nl) {
		u32 q = j / 2, f = j % 2;
		u64 r = ptrs ? km_word(arr + 8ull * q) : arr + (u64)q * stride;
		if (r)
			acc[f] += km_word(r + (f ? off_b : off_p));
	}
	*p = simt_sum_u64(acc[0]);
	*b = simt_sum_u64(acc[1]);
}

/* a driver's errors and drops, into their KN_V_* slots */
KM_INLINE void km_v_errs(u64 *blk, u64 rxe, u64 txe, u64 rxd, u64 txd)
{
	blk[KN_V_RXE] = rxe;
	blk[KN_V_TXE] = txe;
	blk[KN_V_RXD] = rxd;
	blk[KN_V_TXD] = txd;
}

/* a count from a signed or narrow field, at most max */
KM_INLINE u32 km_count(u64 v, u32 bits, u32 max)
{
	u64 c = bits < 64 ? v & ((1ull << bits) - 1) : v;
	if (bits == 32 && (c >> 31))
		return 0;                             /* a negative int */
	return c > max ? max : (u32)c;
}

/* igb: igb_get_stats64 copies adapter->stats64 (igb_update_stats: the
 * rings' packets and bytes, the registers' errors and missed frames) */
KM_INLINE void km_igb(struct net_device *dev, u64 *blk)
{
	struct igb_adapter___in_igb *ad = (struct igb_adapter___in_igb *)(unsigned long)km_netdev_priv(dev);
	enum { RXP, TXP, RXB, TXB, RXE, TXE, RXD, TXD, MISS, SPEED, N };
	u64 a[N] = {km_addr(KP(ad->stats64.rx_packets)), km_addr(KP(ad->stats64.tx_packets)),
		    km_addr(KP(ad->stats64.rx_bytes)), km_addr(KP(ad->stats64.tx_bytes)),
		    km_addr(KP(ad->stats64.rx_errors)), km_addr(KP(ad->stats64.tx_errors)),
		    km_addr(KP(ad->stats64.rx_dropped)), km_addr(KP(ad->stats64.tx_dropped)),
		    km_addr(KP(ad->stats64.rx_missed_errors)), km_addr(KP(ad->link_speed))}, v[N];
	km_gather(a, N, v);
	blk[KN_V_RXP] = v[RXP];
	blk[KN_V_TXP] = v[TXP];
	blk[KN_V_RXB] = v[RXB];
	blk[KN_V_TXB] = v[TXB];
	km_v_errs(blk, v[RXE], v[TXE], v[RXD] + v[MISS], v[TXD]);
	blk[KN_V_SPEED] = v[SPEED] & 0xffff;       /* 0 while the link is down */
	blk[KN_V_SPEED_CARRIER] = 1;
}

/* ixgbe: ixgbe_get_stats64 sums its rings live (XDP's with the tx ones)
 * and copies dev->stats' errors and missed frames */
KM_INLINE u64 km_ixgbe_mbps(u64 m)
{
	return m & 0x80 ? 10000 : m & 0x800 ? 5000 : m & 0x400 ? 2500 : m & 0x20 ? 1000 : m & 0x8 ? 100 : m & 0x2 ? 10 : 0;
}
KM_INLINE void km_ixgbe(struct net_device *dev, u64 *blk)
{
	struct ixgbe_adapter___in_ixgbe *ad = (struct ixgbe_adapter___in_ixgbe *)(unsigned long)km_netdev_priv(dev);
	u64 a[5] = {km_addr(KP(ad->num_rx_queues)), km_addr(KP(ad->num_tx_queues)), km_addr(KP(ad->num_xdp_queues)),
		    km_addr(KP(ad->link_speed)), km_addr(KP(ad->link_up))}, v[5];
	km_gather(a, 5, v);
	u64 op = koffsetof(struct ixgbe_ring___in_ixgbe, stats.packets), ob = koffsetof(struct ixgbe_ring___in_ixgbe, stats.bytes);
	u64 tp, tb, xp, xb;
	km_ring_sums(km_addr(KP(ad->rx_ring[0])), km_count(v[0], 32, 64), 1, 0, op, ob, &blk[KN_V_RXP], &blk[KN_V_RXB]);
	km_ring_sums(km_addr(KP(ad->tx_ring[0])), km_count(v[1], 32, 64), 1, 0, op, ob, &tp, &tb);
	km_ring_sums(km_addr(KP(ad->xdp_ring[0])), km_count(v[2], 32, 64), 1, 0, op, ob, &xp, &xb);
	blk[KN_V_TXP] = tp + xp;
	blk[KN_V_TXB] = tb + xb;
	km_v_errs(blk, blk[KN_RX_ERRORS], 0, blk[KN_RX_MISSED], 0);
	blk[KN_V_SPEED] = v[4] & 0xff ? km_ixgbe_mbps(v[3] & 0xffffffffu) : 0;
	blk[KN_V_SPEED_CARRIER] = 1;
}

/* i40e: i40e_get_netdev_stats_struct: nothing while the VSI is down;
 * else its rings live (XDP's with a program) and vsi->net_stats' errors
 * and drops.  Its speed is the firmware's link info: not read. */
KM_INLINE void km_i40e(struct net_device *dev, u64 *blk)
{
	struct i40e_netdev_priv___in_i40e *np = (struct i40e_netdev_priv___in_i40e *)(unsigned long)km_netdev_priv(dev);
	u64 va = km_addr(KP(np->vsi)), vv;
	km_gather(&va, 1, &vv);
	struct i40e_vsi___in_i40e *vsi = (struct i40e_vsi___in_i40e *)(unsigned long)vv;
	u64 dm = km_dummy_addr();
	enum { RX, TX, XDP, STATE, PROG, NQP, RXE, TXE, RXD, TXD, MISS, N };
	u64 a[N] = {vsi ? km_addr(KP(vsi->rx_rings)) : dm, vsi ? km_addr(KP(vsi->tx_rings)) : dm,
		    vsi ? km_addr(KP(vsi->xdp_rings)) : dm, vsi ? km_addr(KP(vsi->state[0])) : dm,
		    vsi ? km_addr(KP(vsi->xdp_prog)) : dm, vsi ? km_addr(KP(vsi->num_queue_pairs)) : dm,
		    vsi ? km_addr(KP(vsi->net_stats.rx_errors)) : dm, vsi ? km_addr(KP(vsi->net_stats.tx_errors)) : dm,
		    vsi ? km_addr(KP(vsi->net_stats.rx_dropped)) : dm, vsi ? km_addr(KP(vsi->net_stats.tx_dropped)) : dm,
		    vsi ? km_addr(KP(vsi->net_stats.rx_missed_errors)) : dm}, v[N];
	km_gather(a, N, v);
	if (!vsi || (v[STATE] & 1) || !v[TX])
		return;                               /* __I40E_VSI_DOWN, or no rings: zeros */
	u32 n = km_count(v[NQP], 16, 1024);
	u64 op = koffsetof(struct i40e_ring___in_i40e, stats.packets), ob = koffsetof(struct i40e_ring___in_i40e, stats.bytes);
	u64 tp, tb, xp = 0, xb = 0;
	km_ring_sums(v[RX], v[RX] ? n : 0, 1, 0, op, ob, &blk[KN_V_RXP], &blk[KN_V_RXB]);
	km_ring_sums(v[TX], n, 1, 0, op, ob, &tp, &tb);
	km_ring_sums(v[XDP], v[PROG] && v[XDP] ? n : 0, 1, 0, op, ob, &xp, &xb);
	blk[KN_V_TXP] = tp + xp;
	blk[KN_V_TXB] = tb + xb;
	km_v_errs(blk, v[RXE], v[TXE], v[RXD] + v[MISS], v[TXD]);
}

/* ena: ena_get_stats64: nothing unless the device is up; its rings
 * (embedded) live, XDP's transmit rings after the others; the drops the
 * device reports in its keep-alive.  (6.1's callback leaves XDP's rings
 * out: the same without an XDP program; its XDP drops are not read.)
 * Its speed is asked of the device: not read. */
KM_INLINE void km_ena(struct net_device *dev, u64 *blk)
{
	struct ena_adapter___in_ena *ad = (struct ena_adapter___in_ena *)(unsigned long)km_netdev_priv(dev);
	enum { NIO, NX, FLAGS, RXD, TXD, N };
	u64 a[N] = {km_addr(KP(ad->num_io_queues)), km_addr(KP(ad->xdp_num_queues)), km_addr(KP(ad->flags)),
		    km_addr(KP(ad->dev_stats.rx_drops)), km_addr(KP(ad->dev_stats.tx_drops))}, v[N];
	km_gather(a, N, v);
	if (!(v[FLAGS] & 2))
		return;                               /* ENA_FLAG_DEV_UP clear: zeros */
	u32 nio = km_count(v[NIO], 32, 128), nx = km_count(v[NX], 32, 128 - nio);
	u64 st = KSIZEOF(ena_ring___in_ena);
	km_ring_sums(km_addr(KP(ad->rx_ring[0])), nio, 0, st, koffsetof(struct ena_ring___in_ena, rx_stats.cnt),
		     koffsetof(struct ena_ring___in_ena, rx_stats.bytes), &blk[KN_V_RXP], &blk[KN_V_RXB]);
	km_ring_sums(km_addr(KP(ad->tx_ring[0])), nio + nx, 0, st, koffsetof(struct ena_ring___in_ena, tx_stats.cnt),
		     koffsetof(struct ena_ring___in_ena, tx_stats.bytes), &blk[KN_V_TXP], &blk[KN_V_TXB]);
	blk[KN_V_RXD] = v[RXD];
	blk[KN_V_TXD] = v[TXD];
}

/* gve: gve_get_stats sums its rings (arrays of them, NULL while down)
 * live; no errors or drops; link_speed once ethtool asked the device */
KM_INLINE void km_gve(struct net_device *dev, u64 *blk)
{
	struct gve_priv___in_gve *pr = (struct gve_priv___in_gve *)(unsigned long)km_netdev_priv(dev);
	struct gve_priv___in_gve___615 *pn = (struct gve_priv___in_gve___615 *)pr;
	u64 dm = km_dummy_addr();
	int split = KTYPE_EXISTS(gve_tx_queue_config___in_gve) && KTYPE_EXISTS(gve_rx_queue_config___in_gve);
	int has_xdp = split || KFIELD_EXISTS(gve_priv___in_gve, num_xdp_queues);
	enum { RX, TX, NRX, NTX, NX, SPEED, N };
	u64 a[N] = {km_addr(KP(pr->rx)), km_addr(KP(pr->tx)),
		    split ? km_addr(KP(pn->rx_cfg.num_queues)) : km_addr(KP(pr->rx_cfg.num_queues)),
		    split ? km_addr(KP(pn->tx_cfg.num_queues)) : km_addr(KP(pr->tx_cfg.num_queues)),
		    split ? km_addr(KP(pn->tx_cfg.num_xdp_queues)) : has_xdp ? km_addr(KP(pr->num_xdp_queues)) : dm,
		    km_addr(KP(pr->link_speed))}, v[N];
	km_gather(a, N, v);
	u32 nrx = v[RX] ? km_count(v[NRX], 16, 1024) : 0;
	u32 ntx = v[TX] ? km_count(v[NTX], 16, 1024) + (has_xdp ? km_count(v[NX], 16, 1024) : 0) : 0;
	km_ring_sums(v[RX], nrx, 0, KSIZEOF(gve_rx_ring___in_gve), koffsetof(struct gve_rx_ring___in_gve, rpackets),
		     koffsetof(struct gve_rx_ring___in_gve, rbytes), &blk[KN_V_RXP], &blk[KN_V_RXB]);
	km_ring_sums(v[TX], ntx, 0, KSIZEOF(gve_tx_ring___in_gve), koffsetof(struct gve_tx_ring___in_gve, pkt_done),
		     koffsetof(struct gve_tx_ring___in_gve, bytes_done), &blk[KN_V_TXP], &blk[KN_V_TXB]);
	blk[KN_V_SPEED] = v[SPEED] > 0xffffffffu ? 0 : v[SPEED];
}

/* 8139too: rtl8139_get_stats64: its own packets and bytes, the rest
 * dev->stats (missed frames still in the chip's register not yet added) */
KM_INLINE void km_rtl8139(struct net_device *dev, u64 *blk)
{
	struct rtl8139_private___in_8139too *tp = (struct rtl8139_private___in_8139too *)(unsigned long)km_netdev_priv(dev);
	u64 a[4] = {km_addr(KP(tp->rx_stats.packets)), km_addr(KP(tp->rx_stats.bytes)),
		    km_addr(KP(tp->tx_stats.packets)), km_addr(KP(tp->tx_stats.bytes))}, v[4];
	km_gather(a, 4, v);
	blk[KN_V_RXP] = v[0];
	blk[KN_V_RXB] = v[1];
	blk[KN_V_TXP] = v[2];
	blk[KN_V_TXB] = v[3];
	km_v_errs(blk, blk[KN_RX_ERRORS], blk[KN_TX_ERRORS], blk[KN_RX_DROPPED] + blk[KN_RX_MISSED], blk[KN_TX_DROPPED]);
}

/* veth: veth_get_stats64 sums its tstats (what it sent) and its peer's
 * transmits as its receives (what one end sends the other receives), and
 * adds priv->dropped (sends the peer could not take) to its transmit
 * drops.  Its XDP counters (per receive queue, veth_rq_stats: packets an
 * XDP program redirected or dropped) are not read: 0 without XDP.  The
 * totals go in virtio_net's slots, which a veth does not use. */
KM_INLINE void km_veth(struct net_device *dev, u64 *blk)
{
	struct veth_priv *vp = (struct veth_priv *)(unsigned long)km_netdev_priv(dev);
	u64 a[2] = {km_addr(KP(vp->peer)), km_addr(KP(vp->dropped.counter))}, v[2];
	km_gather(a, 2, v);
	blk[KN_VE_TXD] = v[1];
	u64 s[2] = {0, 0};
	struct net_device___pcpu *peer = (struct net_device___pcpu *)(unsigned long)v[0];
	if (peer) {                              /* no peer: its end is being deleted */
		u64 ta = km_addr(KP(peer->tstats)), tv;
		km_gather(&ta, 1, &tv);
		struct pcpu_sw_netstats *t = (struct pcpu_sw_netstats *)(unsigned long)tv;
		u64 off[2] = {km_addr(KP(t->tx_packets)) - tv, km_addr(KP(t->tx_bytes)) - tv};
		if (tv)
			km_pcpu_sums(tv, off, 2, s);
	}
	blk[KN_V_RXP] = blk[KN_P_RXP] + s[0];
	blk[KN_V_RXB] = blk[KN_P_RXB] + s[1];
	blk[KN_V_TXP] = blk[KN_P_TXP];
	blk[KN_V_TXB] = blk[KN_P_TXB];
}

KM_INLINE u64 km_net_kind(struct net_device *dev, u64 flags, int virtio, u64 get64, u64 get)
{
	if (flags & KM_IFF_LOOPBACK)
		return KN_LOOPBACK;
	if (virtio)
		return km_virtio_types() ? KN_VIRTIO : KN_UNKNOWN;
	/* veth keeps tstats since 6.7 (commit 6f2684bf2b44; 6.1.120's
	 * backport too), and says so in the core's pcpu_stat_type, which came
	 * with it; before, its lstats (its transmits alone): not read */
	if (get64 && get64 == km_addr(veth_get_stats64) && &veth_get_stats64)
		return KTYPE_EXISTS(veth_priv) && KFIELD_EXISTS(net_device___pcpu, tstats) &&
		       KFIELD_EXISTS(net_device___pcpu, pcpu_stat_type) &&
		       (KR(((struct net_device___pcpu *)dev)->pcpu_stat_type) & 0xff) == KM_PCPU_STAT_TSTATS
		       ? KN_VETH : KN_UNKNOWN;
	if (get64 && get64 == km_addr(e1000e_get_stats64) && &e1000e_get_stats64)
		return km_e1000e_types() ? KN_E1000E : KN_UNKNOWN;
	if (get64 && get64 == km_addr(vmxnet3_get_stats64) && &vmxnet3_get_stats64)
		return km_vmxnet3_types() ? KN_VMXNET3 : KN_UNKNOWN;
	/* server and cloud NICs, by their callbacks (module symbols) */
	if (get64 && get64 == km_addr(igb_get_stats64) && &igb_get_stats64)
		return KTYPE_EXISTS(igb_adapter___in_igb) ? KN_IGB : KN_UNKNOWN;
	if (get64 && get64 == km_addr(ixgbe_get_stats64) && &ixgbe_get_stats64)
		return KTYPE_EXISTS(ixgbe_adapter___in_ixgbe) && KTYPE_EXISTS(ixgbe_ring___in_ixgbe) &&
		       KTYPE_EXISTS(ixgbe_queue_stats___in_ixgbe) ? KN_IXGBE : KN_UNKNOWN;
	if (get64 && get64 == km_addr(i40e_get_netdev_stats_struct) && &i40e_get_netdev_stats_struct)
		return KTYPE_EXISTS(i40e_netdev_priv___in_i40e) && KTYPE_EXISTS(i40e_vsi___in_i40e) &&
		       KTYPE_EXISTS(i40e_ring___in_i40e) && KTYPE_EXISTS(i40e_queue_stats___in_i40e) ? KN_I40E : KN_UNKNOWN;
	if (get64 && get64 == km_addr(ena_get_stats64) && &ena_get_stats64)
		return KTYPE_EXISTS(ena_adapter___in_ena) && KTYPE_EXISTS(ena_ring___in_ena) &&
		       KTYPE_EXISTS(ena_stats_tx___in_ena) && KTYPE_EXISTS(ena_stats_rx___in_ena) &&
		       KTYPE_EXISTS(ena_stats_dev___in_ena) ? KN_ENA : KN_UNKNOWN;
	if (get64 && get64 == km_addr(gve_get_stats) && &gve_get_stats)
		return KTYPE_EXISTS(gve_priv___in_gve) && KTYPE_EXISTS(gve_rx_ring___in_gve) &&
		       KTYPE_EXISTS(gve_tx_ring___in_gve) &&
		       (KTYPE_EXISTS(gve_queue_config___in_gve) ||
			(KTYPE_EXISTS(gve_tx_queue_config___in_gve) && KTYPE_EXISTS(gve_rx_queue_config___in_gve)))
		       ? KN_GVE : KN_UNKNOWN;
	if (get64 && get64 == km_addr(rtl8139_get_stats64) && &rtl8139_get_stats64)
		return KTYPE_EXISTS(rtl8139_private___in_8139too) && KTYPE_EXISTS(rtl8139_stats___in_8139too)
		       ? KN_RTL8139 : KN_UNKNOWN;
	if (get64)
		return get64 == km_addr(dev_get_tstats64) && &dev_get_tstats64 ? KN_TSTATS
		       : get64 == km_addr(dummy_get_stats64) && &dummy_get_stats64 ? KN_DUMMY : KN_UNKNOWN;
	/* 8139cp's callback adds the chip's count of missed frames (a
	 * register) to dev->stats and returns it: dev->stats, less the
	 * missed frames since the last read of /proc/net/dev */
	if (get && get == km_addr(cp_get_stats) && &cp_get_stats)
		return KN_GENERIC;
	if (get)
		return KN_UNKNOWN;
	if (!KFIELD_EXISTS(net_device___pcpu, pcpu_stat_type))
		return KN_GENERIC;                      /* before 6.7: dev->stats */
	u64 t = KR(((struct net_device___pcpu *)dev)->pcpu_stat_type) & 0xff;
	return t == KM_PCPU_STAT_TSTATS ? KN_TSTATS : t == KM_PCPU_STAT_DSTATS ? KN_DSTATS : KN_GENERIC;
}

/* The per-CPU counters dev_get_stats() adds for the kind: tstats' or
 * dstats' four (six) sums, or dummy's transmits and, as its callback
 * fills nothing else, the core's drops alone */
KM_INLINE void km_net_pcpu(struct net_device *dev, u64 kind, u64 *blk)
{
	for (u32 f = 0; f < 6; f++)
		blk[KN_P_RXP + f] = 0;
	if (kind == KN_VETH)
		kind = KN_TSTATS;                   /* its own: the core's tstats */
	if (kind == KN_TSTATS || kind == KN_DSTATS) {
		struct net_device___pcpu *pd = (struct net_device___pcpu *)dev;
		u64 dm = km_dummy_addr(), v[2], s[6];
		u64 a[2] = {KFIELD_EXISTS(net_device___pcpu, tstats) ? km_addr(KP(pd->tstats)) : dm,
			    KFIELD_EXISTS(net_device___pcpu, dstats) ? km_addr(KP(pd->dstats)) : dm};
		km_gather(a, 2, v);
		if (!KFIELD_EXISTS(net_device___pcpu, tstats))
			v[0] = 0;
		if (!KFIELD_EXISTS(net_device___pcpu, dstats))
			v[1] = 0;
		if (kind == KN_TSTATS && v[0]) {
			struct pcpu_sw_netstats *t = (struct pcpu_sw_netstats *)(unsigned long)v[0];
			u64 off[4] = {km_addr(KP(t->rx_packets)) - v[0], km_addr(KP(t->rx_bytes)) - v[0],
				      km_addr(KP(t->tx_packets)) - v[0], km_addr(KP(t->tx_bytes)) - v[0]};
			km_pcpu_sums(v[0], off, 4, s);
			s[4] = s[5] = 0;
		} else if (kind == KN_DSTATS && v[1] && KTYPE_EXISTS(pcpu_dstats___511)) {
			struct pcpu_dstats___511 *t = (struct pcpu_dstats___511 *)(unsigned long)v[1];
			u64 off[6] = {km_addr(KP(t->rx_packets)) - v[1], km_addr(KP(t->rx_bytes)) - v[1],
				      km_addr(KP(t->tx_packets)) - v[1], km_addr(KP(t->tx_bytes)) - v[1],
				      km_addr(KP(t->rx_drops)) - v[1], km_addr(KP(t->tx_drops)) - v[1]};
			km_pcpu_sums(v[1], off, 6, s);
		} else {
			return;
		}
		for (u32 f = 0; f < 6; f++)
			blk[KN_P_RXP + f] = s[f];
	} else if (kind == KN_DUMMY) {              /* its lstats' sums (km_net_stats): the transmits */
		blk[KN_P_TXP] = blk[KN_LO_PACKETS];
		blk[KN_P_TXB] = blk[KN_LO_BYTES];
	}
}

int km_net_stats(u64 d, u64 *blk)
{
	struct net_device *dev = (struct net_device *)(unsigned long)d;
	u64 a[KN_G1];
	a[KN_RX_PACKETS] = km_addr(KP(dev->stats.rx_packets));
	a[KN_TX_PACKETS] = km_addr(KP(dev->stats.tx_packets));
	a[KN_RX_BYTES] = km_addr(KP(dev->stats.rx_bytes));
	a[KN_TX_BYTES] = km_addr(KP(dev->stats.tx_bytes));
	a[KN_RX_ERRORS] = km_addr(KP(dev->stats.rx_errors));
	a[KN_TX_ERRORS] = km_addr(KP(dev->stats.tx_errors));
	a[KN_RX_DROPPED] = km_addr(KP(dev->stats.rx_dropped));
	a[KN_TX_DROPPED] = km_addr(KP(dev->stats.tx_dropped));
	a[KN_RX_MISSED] = km_addr(KP(dev->stats.rx_missed_errors));
	a[KN_FLAGS] = km_addr(KP(dev->flags));
	a[KN_STATE] = km_addr(KP(dev->state));
	a[KN_OPS] = km_addr(KP(dev->netdev_ops));
	a[KN_CORE] = KFIELD_EXISTS(net_device, core_stats) ? km_addr(KP(dev->core_stats)) : km_dummy_addr();
	a[KN_LSTATS] = km_addr(KP(dev->lstats));
	a[KN_PARENT] = km_addr(KP(dev->dev.parent));
	a[KN_OPER] = km_addr(KP(dev->operstate));
	km_gather(a, KN_G1, blk);
	blk[KN_FLAGS] &= 0xffffffffu;
	blk[KN_OPER] &= 0xffu;
	if (!KFIELD_EXISTS(net_device, core_stats))
		blk[KN_CORE] = 0;
	/* the driver: its stats callbacks, and its name through the parent device */
	const struct net_device_ops *ops = (const struct net_device_ops *)(unsigned long)blk[KN_OPS];
	struct device *parent = (struct device *)(unsigned long)blk[KN_PARENT];
	u64 dm = km_dummy_addr(), b[3], w[3];
	b[0] = ops ? km_addr(KP(ops->ndo_get_stats64)) : dm;
	b[1] = ops ? km_addr(KP(ops->ndo_get_stats)) : dm;
	b[2] = parent ? km_addr(KP(parent->driver)) : dm;
	km_gather(b, 3, w);
	u64 get64 = ops ? w[0] : 0, get = ops ? w[1] : 0;
	struct device_driver *drv = (struct device_driver *)(unsigned long)(parent ? w[2] : 0);
	u64 nm[2] = {0, 0};
	if (drv) {
		/* its first 11 bytes ("virtio_net" and the NUL): a string at any
		 * alignment, so the aligned words that hold them and no more */
		u64 na = km_addr(KP(drv->name)), np;
		km_gather(&na, 1, &np);
		u64 al = np & ~7ul, sh = (np & 7) * 8, sa[3], ww[3] = {0, 0, 0};
		u32 cnt = (u32)(((np & 7) + 11 + 7) / 8);
		for (u32 i = 0; i < 3; i++)
			sa[i] = np && i < cnt ? al + 8 * i : dm;
		km_gather(sa, 3, ww);
		nm[0] = sh ? (ww[0] >> sh) | (ww[1] << (64 - sh)) : ww[0];
		nm[1] = sh ? (ww[1] >> sh) | (ww[2] << (64 - sh)) : ww[1];
	}
	/* "virtio_net\0", little-endian */
	int virtio = drv && nm[0] == 0x6e5f6f6974726976ull && (nm[1] & 0xffffff) == 0x7465ull;
	u64 kind = km_net_kind(dev, blk[KN_FLAGS], virtio, get64, get);
	/* the core's drops: per CPU (6.0+), else two atomics in the device */
	u64 core = blk[KN_CORE];
	if (core && KTYPE_EXISTS(net_device_core_stats)) {     /* 6.0+ (5.10 has no such type) */
		struct net_device_core_stats *cs = (struct net_device_core_stats *)(unsigned long)core;
		u64 off[2] = {km_addr(KP(cs->rx_dropped)) - core, km_addr(KP(cs->tx_dropped)) - core}, s[2];
		km_pcpu_sums(core, off, 2, s);
		blk[KN_CORE_RXD] = s[0];
		blk[KN_CORE_TXD] = s[1];
	} else if (KFIELD_EXISTS(net_device___510, rx_dropped)) {
		struct net_device___510 *old = (struct net_device___510 *)dev;
		u64 oa[2] = {km_addr(KP(old->rx_dropped)), km_addr(KP(old->tx_dropped))}, ov[2];
		km_gather(oa, 2, ov);
		blk[KN_CORE_RXD] = ov[0];
		blk[KN_CORE_TXD] = ov[1];
	} else {
		blk[KN_CORE_RXD] = blk[KN_CORE_TXD] = 0;
	}
	/* the per-CPU lstats: loopback's (rx = tx), dummy's (its transmits) */
	blk[KN_LO_PACKETS] = blk[KN_LO_BYTES] = 0;
	if ((kind == KN_LOOPBACK || kind == KN_DUMMY) && blk[KN_LSTATS]) {
		struct pcpu_lstats *ls = (struct pcpu_lstats *)(unsigned long)blk[KN_LSTATS];
		u64 off[2] = {km_addr(KP(ls->packets)) - km_addr(ls), km_addr(KP(ls->bytes)) - km_addr(ls)}, s[2];
		km_pcpu_sums(km_addr(ls), off, 2, s);
		blk[KN_LO_PACKETS] = s[0];
		blk[KN_LO_BYTES] = s[1];
	}
	km_net_pcpu(dev, kind, blk);
	for (u32 f = 0; f < 8; f++)
		blk[KN_V_RXP + f] = 0;
	blk[KN_V_SPEED] = 0xffffffffu;
	blk[KN_V_SPEED_CARRIER] = 0;
	/* the driver's own counters (the kind is the warp's: one branch) */
	switch (kind) {
	case KN_GENERIC: km_e1000_speed(dev, blk); break;
	case KN_VIRTIO: if (km_virtio_types()) km_virtio_queues(dev, blk); break;
	case KN_E1000E: km_e1000e(dev, blk); break;
	case KN_VMXNET3: km_vmxnet3(dev, blk); break;
	case KN_IGB: km_igb(dev, blk); break;
	case KN_IXGBE: km_ixgbe(dev, blk); break;
	case KN_I40E: km_i40e(dev, blk); break;
	case KN_ENA: km_ena(dev, blk); break;
	case KN_GVE: km_gve(dev, blk); break;
	case KN_RTL8139: km_rtl8139(dev, blk); break;
	default: break;
	}
	blk[KN_VE_TXD] = 0;
	if (kind == KN_VETH)
		km_veth(dev, blk);
	km_bond(dev, blk);
	blk[KN_KIND] = kind;
	blk[KN_FAILED] = (u64)simt_any(__llview_failed());
	return 0;
}

/* a counter: by the driver's kind (dev_get_stats: lo for loopback,
 * virtio for virtio_net, generic from dev->stats, which tstats and dstats
 * add their per-CPU sums to, dummy's these sums alone); KM_ABSENT for a
 * driver whose counters are not read, NaN when the block could not be read */
KM_INLINE double km_nc(const u64 *blk, u64 lo, u64 virtio, u64 generic, u64 percpu)
{
	if (blk[KN_FAILED])
		return KM_NAN;
	switch (blk[KN_KIND]) {
	case KN_LOOPBACK: return (double)lo;
	case KN_VIRTIO:
	case KN_E1000E:
	case KN_VMXNET3:
	case KN_IGB:
	case KN_IXGBE:
	case KN_I40E:
	case KN_ENA:
	case KN_GVE:
	case KN_RTL8139:
	case KN_VETH: return (double)virtio;     /* (km_veth and the NIC drivers' readers: their totals in these slots) */
	case KN_GENERIC: return (double)generic;
	case KN_TSTATS:
	case KN_DSTATS: return (double)(generic + percpu);
	case KN_DUMMY: return (double)percpu;
	default: return KM_ABSENT;
	}
}

/* up: administratively up (IFF_UP) with a carrier, what `ip link` shows as UP,LOWER_UP */
double km_net_up(u64 d, const u64 *blk)
{
	if (blk[KN_FAILED])
		return KM_NAN;
	long nocarrier = KENUM(netdev_state_t, __LINK_STATE_NOCARRIER);
	return (blk[KN_FLAGS] & KM_IFF_UP) && !((blk[KN_STATE] >> nocarrier) & 1);
}

/* the RFC 2863 operational state, as /sys/class/net/IF/operstate names it */
double km_net_operstate(u64 d, const u64 *blk)
{
	return blk[KN_FAILED] ? KM_NAN : (double)blk[KN_OPER];
}

double km_net_rx_packets(u64 d, const u64 *blk)
{
	return km_nc(blk, blk[KN_LO_PACKETS], blk[KN_V_RXP], blk[KN_RX_PACKETS], blk[KN_P_RXP]);
}
double km_net_tx_packets(u64 d, const u64 *blk)
{
	return km_nc(blk, blk[KN_LO_PACKETS], blk[KN_V_TXP], blk[KN_TX_PACKETS], blk[KN_P_TXP]);
}
double km_net_rx_bytes(u64 d, const u64 *blk)
{
	return km_nc(blk, blk[KN_LO_BYTES], blk[KN_V_RXB], blk[KN_RX_BYTES], blk[KN_P_RXB]);
}
double km_net_tx_bytes(u64 d, const u64 *blk)
{
	return km_nc(blk, blk[KN_LO_BYTES], blk[KN_V_TXB], blk[KN_TX_BYTES], blk[KN_P_TXB]);
}
double km_net_rx_errors(u64 d, const u64 *blk) { return km_nc(blk, 0, blk[KN_V_RXE], blk[KN_RX_ERRORS], 0); }
double km_net_tx_errors(u64 d, const u64 *blk) { return km_nc(blk, 0, blk[KN_V_TXE], blk[KN_TX_ERRORS], 0); }
/* /proc/net/dev's receive "drop": rx_dropped + rx_missed_errors, and the core's */
double km_net_rx_dropped(u64 d, const u64 *blk)
{
	u64 core = blk[KN_CORE_RXD];
	if (blk[KN_KIND] == KN_DUMMY)
		return km_nc(blk, 0, 0, 0, core);
	return km_nc(blk, core, core + blk[KN_V_RXD], core + blk[KN_RX_DROPPED] + blk[KN_RX_MISSED], blk[KN_P_RXD]);
}
/* the host's own device, not a container's (km_net_name: NAME@INUM) */
double km_net_init_namespace(u64 d, const u64 *blk)
{
	u64 home = km_addr(&init_net);
	u64 na = KFIELD_EXISTS(net_device, nd_net) ? km_addr(KR(((struct net_device *)(unsigned long)d)->nd_net)) : home;
	return km_collective(na == home);
}

/* bonding: unknown for an interface that is not a bond */
KM_INLINE double km_bondv(const u64 *blk, long i)
{
	return blk[KN_FAILED] ? KM_NAN : !blk[KN_BOND] ? KM_ABSENT : (double)blk[i];
}
double km_net_bond_slaves(u64 d, const u64 *blk) { return km_bondv(blk, KN_BOND_SLAVES); }
double km_net_bond_active(u64 d, const u64 *blk) { return km_bondv(blk, KN_BOND_UP); }

/* /sys/class/net/IF/speed, in bytes a second: virtio_net's own field,
 * e1000's, e1000e's, vmxnet3's, igb's and ixgbe's link speed while the
 * carrier is on (their get_link_ksettings), gve's once ethtool asked,
 * and veth's constant (veth_get_link_ksettings: SPEED_10000); no other
 * driver we read keeps one (8139cp's asks the PHY, i40e's and ena's the
 * firmware) */
double km_net_speed(u64 d, const u64 *blk)
{
	if (blk[KN_FAILED])
		return KM_NAN;
	if (blk[KN_KIND] == KN_VETH)
		return 10000.0 * 125000.0;
	u64 mbps = blk[KN_V_SPEED];
	if (blk[KN_V_SPEED_CARRIER] && km_net_up(d, blk) != 1.0)
		return KM_ABSENT;       /* no carrier: SPEED_UNKNOWN */
	if (mbps == 0 || mbps >= 0x7fffffffu)
		return KM_ABSENT;       /* SPEED_UNKNOWN, or no driver we read */
	return (double)mbps * 125000.0;
}

double km_net_tx_dropped(u64 d, const u64 *blk)
{
	u64 core = blk[KN_CORE_TXD];
	if (blk[KN_KIND] == KN_DUMMY)
		return km_nc(blk, 0, 0, 0, core);
	if (blk[KN_KIND] == KN_VETH)
		return km_nc(blk, 0, core + blk[KN_VE_TXD], 0, 0);
	return km_nc(blk, core, core + blk[KN_V_TXD], core + blk[KN_TX_DROPPED], blk[KN_P_TXD]);
}
