/* kmetric_edac.c - EDAC memory controllers (km_edac_*): one per
 * mem_ctl_info on mc_devices, as /sys/devices/system/edac/mc/mcN.
 *
 * node_exporter's edac collector reads each controller's ce_count and
 * ue_count there, a series per controller (label controller="N"): these
 * are the same counters, per controller, where host.edac_* sums them.
 * A kernel without EDAC has no controllers (an empty walk), and so has a
 * machine whose controllers EDAC does not drive (a VM).
 *
 * The metric library's entry points and helpers: see kmetric_int.h.
 */
#include "kmetric_int.h"

KM_INLINE struct mem_ctl_info *km_mci(u64 m) { return (struct mem_ctl_info *)(unsigned long)m; }

/* Warp-collective: every lane gets the count, lane 0 writes out. */
int km_edac_walk(u64 *out, u32 cap)
{
	if (!&mc_devices || !KTYPE_EXISTS(mem_ctl_info))
		return 0;
	u64 link = koffsetof(struct mem_ctl_info, link), v;
	km_list w;
	km_list_init(&w, &mc_devices, KM_MAX_MCS);
	int n = 0, r;
	while ((r = km_list_step(&w, KM_LIST_NONE, &v)) > 0) {
		if ((u32)n < cap && simt_lane() == 0)
			out[n] = km_addr(w.cur) - link;
		n++;
	}
	if (r < 0)
		return w.spent ? KM_EBUDGET : -40;       /* KX_ELOOP: a corrupt, changing or endless list */
	return simt_any(__llview_failed()) ? -14 : n;
}

/* Its name: N of mcN, node_exporter's controller label ("0"). */
int km_edac_name(u64 m, char *out, u32 size)
{
	int idx = KR(km_mci(m)->mc_idx);
	if (__llview_failed() || size < 12)
		return -14;
	char d[12];
	u32 k = 0, i = 0;
	unsigned x = idx < 0 ? (unsigned)-idx : (unsigned)idx;
	do {
		d[k++] = (char)('0' + x % 10);
		x /= 10;
	} while (x && k < sizeof d);
	if (idx < 0)
		out[i++] = '-';
	while (k)
		out[i++] = d[--k];
	out[i] = 0;
	return 0;
}

/* Its two counters into the block: ce, ue, and whether the read failed. */
enum { KE_CE, KE_UE, KE_FAILED, KE__N };

int km_edac_stats(u64 m, u64 *blk)
{
	struct mem_ctl_info *mci = km_mci(m);
	u64 a[2] = {km_addr(KP(mci->ce_mc)), km_addr(KP(mci->ue_mc))}, v[2];
	km_gather(a, 2, v);
	blk[KE_CE] = (u32)v[0];
	blk[KE_UE] = (u32)v[1];
	blk[KE_FAILED] = simt_any(__llview_failed()) != 0;
	return 0;
}

double km_edac_correctable_errors(u64 m, const u64 *blk)
{
	(void)m;
	return blk[KE_FAILED] ? KM_NAN : (double)blk[KE_CE];
}

double km_edac_uncorrectable_errors(u64 m, const u64 *blk)
{
	(void)m;
	return blk[KE_FAILED] ? KM_NAN : (double)blk[KE_UE];
}
