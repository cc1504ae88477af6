/* snrt_obj.c - the objects (disks, cgroups, network interfaces, mounts,
 * EDAC memory controllers):
 * found by a walk, kept in stable slots, with their names; their values
 * are in snrt_hist.c.
 *
 * Part of the evaluation runtime (snrt.h): see snrt_int.h.
 */
#include "snrt_int.h"

/* ---- objects (disks): found by a walk, kept in stable slots ---------------------------- */

static int sn_obj_walk(uint32_t k, uint64_t *out, uint32_t cap)
{
	switch (k) {
	case SN_OBJ_DISK: return km_disk_walk(out, cap);
	case SN_OBJ_CGROUP: return km_cgroup_walk(out, cap);
	case SN_OBJ_NET: return km_net_walk(out, cap);
	case SN_OBJ_FS: return km_fs_walk(out, cap);
	case SN_OBJ_EDAC: return km_edac_walk(out, cap);
	default: return -22;                     /* KX_EINVAL */
	}
}

static void sn_obj_name(uint32_t k, uint64_t key, char *out)
{
	int r = -22;
	if (k == SN_OBJ_DISK)
		r = km_disk_name(key, out);
	else if (k == SN_OBJ_CGROUP)
		r = km_cgroup_name(key, out, SN_OBJ_NAME);
	else if (k == SN_OBJ_NET)
		r = km_net_name(key, out, SN_OBJ_NAME);
	else if (k == SN_OBJ_FS)
		r = km_fs_name(key, out, SN_OBJ_NAME);
	else if (k == SN_OBJ_EDAC)
		r = km_edac_name(key, out, SN_OBJ_NAME);
	if (r < 0)
		out[0] = 0;
	out[SN_OBJ_NAME - 1] = 0;
}

/* A mount's labels (SN_OBJ_FS): its filesystem type, then its device */
static void sn_obj_label(uint32_t k, uint64_t key, char *out)
{
	if (k != SN_OBJ_FS)
		return;
	if (km_fs_fstype(key, out, SN_FS_TYPE) < 0)
		out[0] = 0;
	if (km_fs_device(key, out + SN_FS_TYPE, SN_FS_DEVICE) < 0)
		out[SN_FS_TYPE] = 0;
	out[SN_FS_TYPE - 1] = out[SN_OBJ_LABEL - 1] = 0;
}

/* This tick's walk into slots, by the warp: an object keeps its slot; one
 * gone frees it; a new one takes the lowest free slot, its histories
 * emptied.  Loops run over the slots in use (hi), lanes side by side: on
 * the GPU each step is a load of the world's memory.  A failed walk keeps
 * last tick's objects (their reads fail in turn). */
void sn_objs_assign(sn_world *w, uint32_t k, sn_objs *O, int n)
{
	uint32_t lane = simt_lane(), nl = simt_nlanes(), hi = O->hi;
	if (n < 0) {
		if (lane == 0) {
			O->err = n;
			__atomic_fetch_add(&w->stats->read_errors, 1, __ATOMIC_RELAXED);
			w->stats->objs_err[k] = n;
		}
		return;
	}
	uint32_t m = (uint32_t)n < O->cap ? (uint32_t)n : O->cap;
	for (uint32_t s = lane; s < hi; s += nl)
		O->on[s] = 0;
	simt_sync();
	for (uint32_t i = lane; i < m; i += nl)        /* each object looks for its slot */
		for (uint32_t s = 0; s < hi; s++)
			if (O->key[s] && O->key[s] == O->walk[i]) {
				O->on[s] = 1;
				O->walk[i] = 0;
				break;
			}
	simt_sync();
	for (uint32_t s = lane; s < hi; s += nl)
		if (!O->on[s])
			O->key[s] = 0;
	simt_sync();
	if (lane == 0) {
		O->found = (uint32_t)n;
		O->err = (uint32_t)n > O->cap ? -34 : 0;     /* KX_ERANGE: more than the table holds */
		w->stats->objs_found[k] = O->found;
		w->stats->objs_err[k] = O->err;
		uint32_t free = 0;
		for (uint32_t i = 0; i < m; i++) {
			if (!O->walk[i])
				continue;                    /* kept its slot */
			while (free < O->cap && O->key[free])
				free++;
			if (free == O->cap)
				break;
			O->key[free] = O->walk[i];
			O->on[free] = 2;                     /* new: its name is read this tick */
			for (uint32_t h = 0; h < w->nhist; h++)
				if (w->hist[h].kind == SN_ENT_OBJ + k && free < w->hist[h].entities)
					sn_hist_clear(&w->hist[h], free);
			if (free + 1 > hi)
				hi = free + 1;
		}
		while (hi > 0 && !O->on[hi - 1])
			hi--;
		O->hi = hi;
	}
	simt_sync();
}

void sn_objs_find(sn_world *w, uint32_t k)
{
	if (k >= SN_OBJ_KINDS || !w->objs[k].cap)
		return;
	sn_objs *O = &w->objs[k];
	int walked = sn_obj_walk(k, O->walk, O->cap);   /* the warp walks; every lane gets the count */
	simt_sync();
	sn_objs_assign(w, k, O, walked);
	/* names and labels: a new object's now, every object's every 64
	 * ticks (a network interface may be renamed) */
	int all = (w->tick & 63) == 0;
	for (uint32_t s = simt_lane(); s < O->hi; s += simt_nlanes())
		if (O->on[s] == 2 || (O->on[s] && all)) {
			sn_obj_name(k, O->key[s], O->name[s]);
			if (O->label)
				sn_obj_label(k, O->key[s], O->label[s]);
		}
	simt_sync();
}

uint64_t sn_obj_key(const sn_world *w, uint32_t k, uint32_t s)
{
	return k < SN_OBJ_KINDS && s < w->objs[k].cap && w->objs[k].on[s] ? w->objs[k].key[s] : 0;
}

uint32_t sn_nobjs(const sn_world *w, uint32_t k) { return k < SN_OBJ_KINDS ? w->objs[k].hi : 0; }

int sn_obj_on(const sn_world *w, uint32_t k, uint32_t s)
{
	return k < SN_OBJ_KINDS && s < w->objs[k].hi && w->objs[k].on[s];
}

double sn_obj(const sn_world *w, uint32_t k, uint32_t slot, uint32_t s)
{
	if (k >= SN_OBJ_KINDS)
		return SN_NAN;
	const sn_objs *O = &w->objs[k];
	return slot < O->nslots && s < O->cap && O->on[s] ? O->val[(uint64_t)slot * O->cap + s] : SN_NAN;
}

int sn_obj_str_match(const sn_world *w, uint32_t k, uint32_t f, uint32_t s, const uint8_t *cls, const uint16_t *next,
		     uint32_t nclass, const uint8_t *accept)
{
	uint32_t size;
	const char *n = sn_obj_on(w, k, s) ? sn_objs_str(&w->objs[k], f, s, &size) : 0;
	return n ? sn_dfa_match(n, size, cls, next, nclass, accept) : 0;
}

int sn_obj_str_eq(const sn_world *w, uint32_t k, uint32_t f, uint32_t s, const char *str, uint32_t len)
{
	uint32_t size;
	const char *n = sn_obj_on(w, k, s) ? sn_objs_str(&w->objs[k], f, s, &size) : 0;
	if (!n || len >= size)
		return 0;
	for (uint32_t i = 0; i < len; i++)
		if (n[i] != str[i])
			return 0;
	return n[len] == 0;
}
