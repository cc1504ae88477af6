/* cg_plan.c - planning a rule set's program, without LLVM (see cg.h).
 *
 * rulec --check runs this too, so the rules the compiler cannot build are
 * reported with the checker's diagnostics.
 */
#include "cg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plan ---------------------------------------------------------------- */

typedef struct Plan {
	CgProg *p;
	const Rule *r;
	const ExprSrc *src;
	DiagCtx *d;
	const Expr *ends_arg;     /* the window argument of the rate(), delta() or increase() seen last */
	bool ok;
} Plan;

bool cg_is_string(const Expr *e)
{
	return e->kind == N_STR ||
	       (e->kind == N_METRIC && (cat_metrics[e->u.metric.id].type == MT_STR ||
					cat_metrics[e->u.metric.id].type == MT_STATE));
}

static void plan_use(CgProg *p, MetricId m)
{
	if (p->slot[m] >= 0 || m == MET_TASK_COMM) {
		if (m == MET_TASK_COMM)
			p->comm = true;
		return;
	}
	if (ent_is_obj(cat_metrics[m].entity) && cat_metrics[m].type == MT_STR) {
		p->objname[cat_metrics[m].entity - ENT_FIRST_OBJ] = true;
		return;
	}
	switch (cat_metrics[m].entity) {
	case ENT_HOST: p->host_m[p->nhost] = m; p->slot[m] = (int)p->nhost++; break;
	case ENT_CPU: p->cpu_m[p->ncpu] = m; p->slot[m] = (int)p->ncpu++; break;
	case ENT_TASK: p->task_m[p->ntask] = m; p->slot[m] = (int)p->ntask++; break;
	default: {
		unsigned k = cat_metrics[m].entity - ENT_FIRST_OBJ;
		if (cat_metrics[m].type == MT_STR)
			return;                  /* the name: kept by the runtime, not a value */
		p->obj_m[k][p->nobj[k]] = m;
		p->slot[m] = (int)p->nobj[k]++;
		break;
	}
	}
}

static void plan_window(CgProg *p, MetricId m, double w)
{
	if (p->hist[m] < 0) {
		p->hist_m[p->nhist] = m;
		p->hist[m] = (int)p->nhist++;
		p->hist_win[m] = 0;
	}
	if (w > p->hist_win[m])
		p->hist_win[m] = w;
}

/* A window read by other than rate(), delta() or increase(): a tracker
 * keeps its aggregates (the first CG_HIST_TRACKS windows of a metric) */
static void plan_track(CgProg *p, MetricId m, double w)
{
	for (unsigned k = 0; k < p->hist_ntrk[m]; k++)
		if (p->hist_trk[m][k] == w)
			return;
	if (p->hist_ntrk[m] < CG_HIST_TRACKS)
		p->hist_trk[m][p->hist_ntrk[m]++] = w;
}

static void plan_twin(CgProg *p, MetricId m, BuiltinId fn, double window, bool partial)
{
	for (unsigned k = 0; k < p->ntwin; k++)
		if (p->twin[k].m == m && p->twin[k].fn == fn && p->twin[k].window == window &&
		    p->twin[k].partial == partial)
			return;
	if (p->ntwin < CG_MAX_TWIN)
		p->twin[p->ntwin++] = (CgTwin){m, fn, window, partial};
}

/* Whether window function fn reads only its window's two ends (an
 * ends-only history serves it). */
static bool plan_ends_only(BuiltinId fn)
{
	return fn == B_RATE || fn == B_DELTA || fn == B_INCREASE;
}

/* A window function over a task metric: a derived task slot (beyond
 * CG_MAX_TWIN distinct ones, the rule computes it itself). */
static void plan_task_window(CgProg *p, const Expr *e)
{
	const Expr *x = e->a;
	if (ast_builtins[e->u.call.id].cls != BC_WINDOW || !x || x->kind != N_METRIC || !x->u.metric.wlen ||
	    cat_metrics[x->u.metric.id].entity != ENT_TASK)
		return;
	plan_twin(p, x->u.metric.id, e->u.call.id, x->u.metric.window, x->u.metric.partial);
	if (e->u.call.id == B_PREDICT_LINEAR)          /* the line's value now, and its slope */
		plan_twin(p, x->u.metric.id, B_DERIV, x->u.metric.window, x->u.metric.partial);
}

static void plan_expr(Plan *P, const Expr *e, MetSet *mask)
{
	if (!e)
		return;
	if (e->kind == N_CALL) {
		plan_task_window(P->p, e);
		if (plan_ends_only(e->u.call.id))
			P->ends_arg = e->a;
	}
	switch (e->kind) {
	case N_METRIC:
		plan_use(P->p, e->u.metric.id);
		met_add(mask, e->u.metric.id);
		if (e->u.metric.wlen) {
			plan_window(P->p, e->u.metric.id, e->u.metric.window);
			/* read other than as rate(), delta() or increase()'s
			 * argument: the history keeps whole buckets */
			if (e != P->ends_arg) {
				P->p->hist_full[e->u.metric.id] = true;
				plan_track(P->p, e->u.metric.id, e->u.metric.window);
			}
		}
		return;
	case N_EQ: case N_NE:
		if (cg_is_string(e->a) || cg_is_string(e->b)) {
			const Expr *lit = e->a->kind == N_STR ? e->a : e->b->kind == N_STR ? e->b : NULL;
			const Expr *met = lit == e->a ? e->b : e->a;
			if (!lit && met->kind == N_METRIC) {
				diag_report(P->d, expr_loc(P->src, e->off, e->len), DIAG_UNSUPPORTED,
					    "comparing two task names or states with each other is not supported; "
					    "compare one with a literal, e.g. task.comm == \"postgres\"");
				P->ok = false;
			} else if (lit && met->kind == N_METRIC && met->u.metric.id == MET_TASK_COMM &&
				   lit->u.str.len > 15) {
				diag_report(P->d, expr_loc(P->src, lit->off, lit->len), DIAG_UNSUPPORTED,
					    "the kernel keeps 15 characters of a task name; \"%.*s\" never matches: "
					    "write its first 15 characters", (int)lit->u.str.len, lit->u.str.s);
				P->ok = false;
			} else if (lit && met->kind == N_METRIC && ent_is_obj(cat_metrics[met->u.metric.id].entity) &&
				   lit->u.str.len > CAT_OBJ_NAME_MAX) {
				diag_report(P->d, expr_loc(P->src, lit->off, lit->len), DIAG_UNSUPPORTED,
					    "%s holds at most %u characters; \"%.*s\" never matches",
					    cat_metrics[met->u.metric.id].name, CAT_OBJ_NAME_MAX, (int)lit->u.str.len,
					    lit->u.str.s);
				P->ok = false;
			}
		}
		break;
	default:
		break;
	}
	plan_expr(P, e->a, mask);
	plan_expr(P, e->b, mask);
}

bool cg_analyse(CgProg *p, const RuleSet *rs, DiagCtx *d)
{
	memset(p, 0, sizeof *p);
	p->rs = rs;
	for (int i = 0; i < MET__COUNT; i++)
		p->slot[i] = p->hist[i] = -1;
	bool ok = true;
	if (!rs) {
		for (int i = 0; i < MET__COUNT; i++)
			plan_use(p, (MetricId)i);
	} else {
		p->rule_metrics = calloc(rs->n ? rs->n : 1, sizeof *p->rule_metrics);
		if (!p->rule_metrics)
			return false;
		for (size_t i = 0; i < rs->n; i++) {
			const Rule *r = &rs->v[i];
			Plan P = {.p = p, .r = r, .d = d, .ok = true};
			P.src = &r->expr_src;
			plan_expr(&P, r->expr, &p->rule_metrics[i]);
			P.src = &r->clear_src;
			plan_expr(&P, r->clear, &p->rule_metrics[i]);
			ok = ok && P.ok;
		}
	}
	/* a task table always knows each task's PID: alerts name the task */
	if (p->ntask || p->comm)
		plan_use(p, MET_TASK_PID);
	if (p->ncpu)
		p->jobs[p->njobs++] = (CgJob){JOB_CPUS, 0, 0};
	for (unsigned i = 0; i < p->nhost; i++)
		p->jobs[p->njobs++] = (CgJob){JOB_HOST, p->host_m[i], 0};
	for (unsigned i = 0; i < p->ncpu; i++)
		p->jobs[p->njobs++] = (CgJob){JOB_CPU, p->cpu_m[i], 0};
	if (p->ntask)
		p->jobs[p->njobs++] = (CgJob){JOB_TASKS, 0, 0};
	for (unsigned k = 0; k < ENT_NOBJ; k++)
		if (p->nobj[k] || p->objname[k])
			p->jobs[p->njobs++] = (CgJob){JOB_OBJS, 0, (int)k};
	if (ok && rs && cg_shapes(&p->shapes, rs))
		u_oom();
	return ok;
}

void cg_free(CgProg *p)
{
	free(p->rule_metrics);
	p->rule_metrics = NULL;
	cg_shapes_free(&p->shapes);
}


int cg_entity_of(const Expr *e)
{
	if (!e)
		return -1;
	if (e->kind == N_METRIC && cat_metrics[e->u.metric.id].entity != ENT_HOST)
		return (int)cat_metrics[e->u.metric.id].entity;
	int a = cg_entity_of(e->a);
	return a >= 0 ? a : cg_entity_of(e->b);
}

/* The first numeric comparison or all()/any() reached through and/or/not. */
const Expr *cg_value_node(const Expr *e)
{
	if (!e)
		return NULL;
	switch (e->kind) {
	case N_AND: case N_OR: {
		const Expr *r = cg_value_node(e->a);
		return r ? r : cg_value_node(e->b);
	}
	case N_NOT:
		return cg_value_node(e->a);
	case N_LT: case N_LE: case N_GT: case N_GE: case N_EQ: case N_NE:
		return cg_is_string(e->a) || cg_is_string(e->b) ? NULL : e;
	case N_CALL:
		return e->u.call.id == B_ALL || e->u.call.id == B_ANY ? e : NULL;
	default:
		return NULL;
	}
}

int cg_vector_entity(const Expr *e)
{
	if (!e)
		return -1;
	if (e->kind == N_METRIC)
		return cat_metrics[e->u.metric.id].entity != ENT_HOST ? (int)cat_metrics[e->u.metric.id].entity : -1;
	if (e->kind == N_CALL && ast_builtins[e->u.call.id].cls == BC_AGG)
		return -1;                   /* its own entities, summed up */
	int a = cg_vector_entity(e->a);
	return a >= 0 ? a : cg_vector_entity(e->b);
}

int cg_value_entity(const Expr *e)
{
	int vec = cg_vector_entity(e);
	if (vec >= 0)
		return vec;
	const Expr *v = cg_value_node(e);
	if (!v)
		return -1;
	/* all()/any() say which CPU or task decided; a comparison of host
	 * values or of an aggregate (count(...) > 5) names none */
	return v->kind == N_CALL ? cg_entity_of(v) : -1;
}
