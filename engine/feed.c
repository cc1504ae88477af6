/* feed.c - rules on supplied values (see feed.h). */
#include "feed.h"
#include "cpu.h"
#include "world.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Feed {
	const Bundle *b;
	CpuCode *code;
	WdParams p;
	WdLayout L;
	void *block;
	sn_ring *ring;
	sn_stats stats;
	sn_world *w;
	uint64_t now;
	/* this tick's tables (sn_feed points into them) */
	double *host, *cpu, *task;
	uint8_t *cpu_on;
	uint64_t *key;
	char (*comm)[16];
	int32_t host_hist[BD_TABLE_MAX], cpu_hist[BD_TABLE_MAX], task_hist[BD_TABLE_MAX];
	int8_t host_slot[MET__COUNT], cpu_slot[MET__COUNT], task_slot[MET__COUNT];
	uint32_t ntasks, ncpus;
	struct fd_objs {              /* one object kind's tick (disks) */
		uint32_t n, cap;
		uint64_t *key;
		char (*name)[SN_OBJ_NAME];
		char (*label)[SN_OBJ_LABEL];  /* mounts: fstype, device */
		double *val;          /* [nslots][cap] */
		int32_t hist[BD_OBJ_TABLE_MAX];
		int8_t slot[MET__COUNT];
	} obj[SN_OBJ_KINDS];
};

/* The history each metric feeds: the bundle's list, by metric. */
static int32_t fd_hist_of(const Bundle *b, MetricId m)
{
	for (size_t h = 0; h < b->nhist; h++)
		if (b->hist[h].metric == m)
			return (int32_t)h;
	return -1;
}

int fd_open(const Bundle *b, const FdParams *p, Feed **out, char *err, size_t n)
{
	Feed *f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	f->b = b;
	f->p = (WdParams){.tick_ns = p->tick_ns, .max_cpus = p->max_cpus ? p->max_cpus : 1,
			  .task_cap = p->task_cap ? p->task_cap : 1, .ring_cap = WD_DEFAULT_RING};
	int r = cpu_open(b, &f->code, err, n);
	if (!r)
		r = wd_layout(b, &f->p, &f->L, err, n);
	if (r)
		goto fail;
	r = -ENOMEM;
	if (posix_memalign(&f->block, 64, f->L.total) || !(f->ring = aligned_alloc(64, (f->L.ring_bytes + 63) & ~(size_t)63)))
		goto fail;
	memset(f->block, 0, f->L.total);
	wd_ring_init(f->ring, f->p.ring_cap);
	wd_build(b, &f->p, &f->L, NULL, f->block, (uint64_t)(uintptr_t)f->block, (uint64_t)(uintptr_t)f->ring,
		 (uint64_t)(uintptr_t)&f->stats);
	f->w = wd_world(f->block);
	size_t cpus = f->p.max_cpus, cap = f->p.task_cap;
	f->host = calloc(b->nhost + 1, sizeof *f->host);
	f->cpu = calloc(b->ncpu * cpus + 1, sizeof *f->cpu);
	f->cpu_on = calloc(cpus, 1);
	f->task = calloc(b->ntask * cap + 1, sizeof *f->task);
	f->key = calloc(cap, sizeof *f->key);
	f->comm = calloc(cap, sizeof *f->comm);
	if (!f->host || !f->cpu || !f->cpu_on || !f->task || !f->key || !f->comm)
		goto fail;
	memset(f->host_slot, -1, sizeof f->host_slot);
	memset(f->cpu_slot, -1, sizeof f->cpu_slot);
	memset(f->task_slot, -1, sizeof f->task_slot);
	for (unsigned i = 0; i < b->nhost; i++) {
		f->host_slot[b->host_m[i]] = (int8_t)i;
		f->host_hist[i] = fd_hist_of(b, b->host_m[i]);
	}
	for (unsigned i = 0; i < b->ncpu; i++) {
		f->cpu_slot[b->cpu_m[i]] = (int8_t)i;
		f->cpu_hist[i] = fd_hist_of(b, b->cpu_m[i]);
	}
	for (unsigned i = 0; i < b->ntask; i++) {
		f->task_slot[b->task_m[i]] = (int8_t)i;
		f->task_hist[i] = fd_hist_of(b, b->task_m[i]);
	}
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		struct fd_objs *O = &f->obj[k];
		memset(O->slot, -1, sizeof O->slot);
		O->cap = f->L.ocap[k];
		if (!O->cap)
			continue;
		O->key = calloc(O->cap, sizeof *O->key);
		O->name = calloc(O->cap, sizeof *O->name);
		O->label = calloc(O->cap, sizeof *O->label);
		O->val = calloc((size_t)b->nobj[k] * O->cap + 1, sizeof *O->val);
		if (!O->key || !O->name || !O->label || !O->val)
			goto fail;
		for (unsigned i = 0; i < b->nobj[k]; i++) {
			O->slot[b->obj_m[k][i]] = (int8_t)i;
			O->hist[i] = fd_hist_of(b, b->obj_m[k][i]);
		}
	}
	*out = f;
	return 0;
fail:
	if (r == -ENOMEM)
		snprintf(err, n, "out of memory for the rules' tables");
	fd_close(f);
	return r;
}

void fd_close(Feed *f)
{
	if (!f)
		return;
	cpu_close(f->code);
	free(f->block);
	free(f->ring);
	free(f->host);
	free(f->cpu);
	free(f->cpu_on);
	free(f->task);
	free(f->key);
	free(f->comm);
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++) {
		free(f->obj[k].key);
		free(f->obj[k].name);
		free(f->obj[k].label);
		free(f->obj[k].val);
	}
	free(f);
}

void fd_begin(Feed *f, uint64_t now)
{
	const Bundle *b = f->b;
	f->now = now;
	for (size_t i = 0; i < b->nhost; i++)
		f->host[i] = NAN;
	for (size_t i = 0; i < b->ncpu * f->p.max_cpus; i++)
		f->cpu[i] = NAN;
	memset(f->cpu_on, 0, f->p.max_cpus);
	f->ncpus = 0;
	f->ntasks = 0;
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++)
		f->obj[k].n = 0;
}

void fd_host(Feed *f, MetricId m, double v)
{
	if (f->host_slot[m] >= 0)
		f->host[f->host_slot[m]] = v;
}

void fd_cpu(Feed *f, MetricId m, uint32_t cpu, double v)
{
	if (cpu >= f->p.max_cpus)
		return;
	f->cpu_on[cpu] = 1;
	if (cpu >= f->ncpus)
		f->ncpus = cpu + 1;
	if (f->cpu_slot[m] >= 0)
		f->cpu[(size_t)f->cpu_slot[m] * f->p.max_cpus + cpu] = v;
}

void fd_cpu_ids(Feed *f, uint32_t ids)
{
	f->ncpus = ids < f->p.max_cpus ? ids : f->p.max_cpus;
}

int fd_task_add(Feed *f, uint64_t key, const char *comm)
{
	if (f->ntasks >= f->p.task_cap || !key)
		return -1;
	uint32_t r = f->ntasks++;
	f->key[r] = key;
	snprintf(f->comm[r], sizeof f->comm[r], "%s", comm ? comm : "");
	for (size_t s = 0; s < f->b->ntask; s++)
		f->task[s * f->p.task_cap + r] = NAN;
	return (int)r;
}

void fd_task(Feed *f, MetricId m, int row, double v)
{
	if (row >= 0 && (uint32_t)row < f->ntasks && f->task_slot[m] >= 0)
		f->task[(size_t)f->task_slot[m] * f->p.task_cap + (size_t)row] = v;
}

int fd_obj_add(Feed *f, Entity e, uint64_t key, const char *name)
{
	if (!ent_is_obj(e) || !key)
		return -1;
	struct fd_objs *O = &f->obj[e - ENT_FIRST_OBJ];
	if (O->n >= O->cap)
		return -1;
	uint32_t r = O->n++;
	O->key[r] = key;
	snprintf(O->name[r], sizeof O->name[r], "%s", name ? name : "");
	memset(O->label[r], 0, sizeof O->label[r]);
	for (size_t s = 0; s < f->b->nobj[e - ENT_FIRST_OBJ]; s++)
		O->val[s * O->cap + r] = NAN;
	return (int)r;
}

void fd_obj_str(Feed *f, Entity e, int row, unsigned str, const char *s)
{
	if (!ent_is_obj(e) || e - ENT_FIRST_OBJ != SN_OBJ_FS || (str != SN_STR_FSTYPE && str != SN_STR_DEVICE))
		return;
	struct fd_objs *O = &f->obj[e - ENT_FIRST_OBJ];
	if (row < 0 || (uint32_t)row >= O->n)
		return;
	if (str == SN_STR_FSTYPE)
		snprintf(O->label[row], SN_FS_TYPE, "%s", s ? s : "");
	else
		snprintf(O->label[row] + SN_FS_TYPE, SN_FS_DEVICE, "%s", s ? s : "");
}

void fd_obj(Feed *f, MetricId m, int row, double v)
{
	Entity e = cat_metrics[m].entity;
	if (!ent_is_obj(e))
		return;
	struct fd_objs *O = &f->obj[e - ENT_FIRST_OBJ];
	if (row >= 0 && (uint32_t)row < O->n && O->slot[m] >= 0)
		O->val[(size_t)O->slot[m] * O->cap + (size_t)row] = v;
}

void fd_eval(Feed *f)
{
	sn_feed in = {.host = f->host, .host_hist = f->host_hist, .cpu = f->cpu, .cpu_hist = f->cpu_hist,
		      .cpu_on = f->cpu_on, .ncpus = f->ncpus, .ntasks = f->ntasks, .task_key = f->key,
		      .task_comm = (const char (*)[16])f->comm, .task = f->task, .task_stride = f->p.task_cap,
		      .task_hist = f->task_hist, .ntaskfed = f->b->ntask};
	for (unsigned k = 0; k < SN_OBJ_KINDS; k++)
		in.objs[k] = (struct sn_feed_objs){.n = f->obj[k].n, .stride = f->obj[k].cap, .key = f->obj[k].key,
						   .name = (const char (*)[SN_OBJ_NAME])f->obj[k].name,
						   .label = (const char (*)[SN_OBJ_LABEL])f->obj[k].label,
						   .val = f->obj[k].val, .hist = f->obj[k].hist};
	cpu_feed_tick(f->code, f->w, f->now, &in);
}

unsigned fd_drain(Feed *f, void (*fn)(void *ctx, const sn_alert *a), void *ctx)
{
	return wd_ring_drain(f->ring, fn, ctx);
}

const sn_rstate *fd_states(const Feed *f)
{
	return f->w->rstate;
}
