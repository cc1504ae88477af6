/* cg.c - code generation for rules and collection jobs (see cg.h).
 *
 * Loops and accumulators use allocas; the optimiser turns them into SSA.
 * Every function generated here runs on every lane of a warp: entity loops
 * stride by simt_nlanes() from simt_lane() and finish with a warp
 * reduction, so the same IR is right on the GPU (32 lanes) and the host
 * (one).
 */
#include "cg.h"
#include "kstate.h"
#include "rx.h"
#include "snrt.h"

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sn_rdesc as the generated code lays it out (cg_rule): two u64, six u32 */
_Static_assert(sizeof(sn_rdesc) == 40, "sn_rdesc: rulec/cg.c builds it as {i64, i64, i32 x 6}");
_Static_assert(offsetof(sn_rdesc, for_ns) == 0 && offsetof(sn_rdesc, clear_for_ns) == 8 &&
	       offsetof(sn_rdesc, m_of) == 16 && offsetof(sn_rdesc, n_of) == 20 && offsetof(sn_rdesc, has_clear) == 24 &&
	       offsetof(sn_rdesc, pid_slot) == 28 && offsetof(sn_rdesc, obj) == 32 && offsetof(sn_rdesc, vec) == 36,
	       "sn_rdesc: the field order rulec/cg.c's constant follows");

/* ---- IR building ---------------------------------------------------------------- */

/* task slots whose columns a function keeps (more are read through sn_task) */
#define CG_MAX_TASKSLOTS 64
#define CG_TASK_UNROLL 4      /* rows a lane has in flight in a loop over tasks */

typedef struct Cg {
	LLVMModuleRef m;
	LLVMContextRef ctx;
	LLVMBuilderRef b;
	const CgProg *p;
	LLVMTypeRef dbl, i32, i64, i8, i1, ptr, vd;
	LLVMValueRef fn, w;       /* the function being built and its world argument */
	const Expr *track;        /* the aggregation that tracks the rule's value */
	LLVMValueRef value, entity;
	bool deriving;            /* building rules_task_derive: windows are computed, not read */
	bool in_rule;             /* building a rule_N: see cg_inline_in_rule */
	/* the rule's code in parts (sn_eval_parts): it loops over tasks (the
	 * only family large enough to pay for the parts' meetings), and meets
	 * its other parts (a reduction) only outside loops */
	unsigned depth;           /* loops open around the builder */
	bool has_task_loop, meets_in_loop;
	uint8_t *split;           /* [shapes] the shape's code can run in parts */
	/* building shape N's function rule_N(w, i): rule i's row of the data
	 * tables (cg_rule_row); the shape's numbers, loaded in its entry */
	LLVMValueRef ri, desc;
	const Expr *lit[CG_MAX_LITS];
	LLVMValueRef litv[CG_MAX_LITS];
	unsigned nlit;
	LLVMValueRef t_shape, t_desc, t_cbase, t_const;   /* the data tables (cg_tables) */
	LLVMTypeRef desc_t;
	/* the function's task columns and row count, taken in its entry
	 * block on first use (cg_task_value); colfn says whose they are */
	LLVMValueRef colfn, col[CG_MAX_TASKSLOTS], nrows, nan_cell;
	char *err;
	size_t errlen;
	int nerr;
} Cg;

/* Words of an object's counter block (km_disk_stats) */
#define CG_OBJ_BLOCK 64
/* Values of one object, a column each (SN_OBJ_COLS) */
#define CG_OBJ_COLS SN_OBJ_COLS

/* Which entity an expression ranges over, and the loop index if any. */
typedef struct Ent {
	int kind;                 /* -1: none (host), ENT_CPU, ENT_TASK, an object entity */
	LLVMValueRef idx;         /* i32 */
} Ent;

static LLVMValueRef cg_fn(Cg *C, const char *name)
{
	LLVMValueRef f = LLVMGetNamedFunction(C->m, name);
	if (!f && !C->nerr++)
		snprintf(C->err, C->errlen, "the runtime library has no %s (rulec and its library disagree: rebuild)",
			 name);
	return f;
}

/* In a rule's function the runtime's accessors are inlined (a task
 * column's load in the row loop) and the rest stay calls: windows,
 * reductions and the state machine inlined into 10,000 rules made their
 * optimisation 3.5 times slower for no faster tick.  The jobs and the
 * task row inline everything: their metric reads interleave. */
static bool cg_inline_in_rule(const char *name)
{
	static const char *const small[] = {
		"sn_host", "sn_cpu", "sn_task", "sn_task_col", "sn_ntasks", "sn_ncpus", "sn_cpu_on",
		"sn_task_pid", "sn_task_comm_eq", "simt_lane", "simt_nlanes",
		"sn_obj", "sn_nobjs", "sn_obj_on", "sn_obj_str_eq", "sn_ent_busy", "sn_row0", "sn_rowstep",
	};
	for (size_t i = 0; i < sizeof small / sizeof *small; i++)
		if (!strcmp(name, small[i]))
			return true;
	return false;
}

static LLVMValueRef cg_call(Cg *C, const char *name, LLVMValueRef *args, unsigned n)
{
	LLVMValueRef f = cg_fn(C, name);
	if (!f)
		return LLVMGetUndef(C->dbl);
	LLVMValueRef call = LLVMBuildCall2(C->b, LLVMGlobalGetValueType(f), f, args, n, "");
	if (C->in_rule && !cg_inline_in_rule(name)) {
		unsigned k = LLVMGetEnumAttributeKindForName("noinline", 8);
		LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(C->ctx, k, 0));
	}
	return call;
}

static LLVMValueRef cg_real(Cg *C, double v) { return LLVMConstReal(C->dbl, v); }
static LLVMValueRef cg_u32(Cg *C, unsigned v) { return LLVMConstInt(C->i32, v, 0); }
static LLVMValueRef cg_s32(Cg *C, int v) { return LLVMConstInt(C->i32, (unsigned long long)(long long)v, 1); }

static LLVMValueRef cg_alloca(Cg *C, LLVMTypeRef t, LLVMValueRef init, const char *name)
{
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(C->b);
	LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(C->fn);
	LLVMValueRef first = LLVMGetFirstInstruction(entry);
	if (first)
		LLVMPositionBuilderBefore(C->b, first);
	else
		LLVMPositionBuilderAtEnd(C->b, entry);
	LLVMValueRef a = LLVMBuildAlloca(C->b, t, name);
	LLVMPositionBuilderAtEnd(C->b, cur);
	LLVMBuildStore(C->b, init, a);
	return a;
}

static LLVMValueRef cg_ld(Cg *C, LLVMValueRef a) { return LLVMBuildLoad2(C->b, LLVMGetAllocatedType(a), a, ""); }

static LLVMValueRef cg_intrinsic(Cg *C, const char *name, LLVMValueRef *args, unsigned n)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(C->m, id, &C->dbl, 1);
	return LLVMBuildCall2(C->b, LLVMIntrinsicGetType(C->ctx, id, &C->dbl, 1), f, args, n, "");
}

static LLVMValueRef cg_sel(Cg *C, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(C->b, c, a, b, "");
}

static LLVMValueRef cg_isnan(Cg *C, LLVMValueRef x) { return LLVMBuildFCmp(C->b, LLVMRealUNO, x, x, ""); }
static LLVMValueRef cg_nan(Cg *C) { return cg_real(C, NAN); }
static LLVMValueRef cg_b2d(Cg *C, LLVMValueRef c) { return cg_sel(C, c, cg_real(C, 1), cg_real(C, 0)); }

/* !llvm.loop !{!self, !{"llvm.loop.unroll.count", i32 n}} on a loop's
 * back edge.  The loop ID refers to itself: a temporary node stands in
 * for it and is replaced by the node (which LLVM then makes distinct). */
static void cg_unroll_hint(Cg *C, LLVMValueRef backedge, unsigned n)
{
	static const char key[] = "llvm.loop.unroll.count";
	LLVMMetadataRef tmp = LLVMTemporaryMDNode(C->ctx, NULL, 0);
	LLVMMetadataRef cnt[2] = {LLVMMDStringInContext2(C->ctx, key, sizeof key - 1),
				  LLVMValueAsMetadata(LLVMConstInt(C->i32, n, 0))};
	LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(C->ctx, cnt, 2)};
	LLVMMetadataRef id = LLVMMDNodeInContext2(C->ctx, ops, 2);
	LLVMMetadataReplaceAllUsesWith(tmp, id);
	LLVMSetMetadata(backedge, LLVMGetMDKindIDInContext(C->ctx, "llvm.loop", 9),
			LLVMMetadataAsValue(C->ctx, id));
}

/* A loop `for (i = start; i < end; i += step) body`: returns the body's
 * block with the builder in it and the index; cg_loop_end closes it. */
typedef struct Loop {
	LLVMValueRef iv, var;
	LLVMBasicBlockRef head, body, latch, exit;
	LLVMValueRef step;
	unsigned unroll;          /* > 1: ask LLVM to unroll the loop this many times */
	LLVMValueRef pred;        /* i1: this entity counts (a task loop's where), NULL: every one */
} Loop;

static void cg_loop_begin(Cg *C, Loop *L, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step)
{
	L->unroll = 0;
	L->pred = NULL;
	C->depth++;
	L->var = cg_alloca(C, C->i32, start, "i");
	L->step = step;
	L->head = LLVMAppendBasicBlockInContext(C->ctx, C->fn, "loop");
	L->body = LLVMAppendBasicBlockInContext(C->ctx, C->fn, "body");
	L->latch = LLVMAppendBasicBlockInContext(C->ctx, C->fn, "next");
	L->exit = LLVMAppendBasicBlockInContext(C->ctx, C->fn, "done");
	LLVMBuildBr(C->b, L->head);
	LLVMPositionBuilderAtEnd(C->b, L->head);
	L->iv = cg_ld(C, L->var);
	LLVMBuildCondBr(C->b, LLVMBuildICmp(C->b, LLVMIntULT, L->iv, end, ""), L->body, L->exit);
	LLVMPositionBuilderAtEnd(C->b, L->body);
}

/* Skip to the next iteration unless cond (i1) holds. */
static void cg_loop_continue_unless(Cg *C, Loop *L, LLVMValueRef cond)
{
	LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(C->ctx, C->fn, "keep");
	LLVMBuildCondBr(C->b, cond, go, L->latch);
	LLVMPositionBuilderAtEnd(C->b, go);
}

static void cg_loop_end(Cg *C, Loop *L)
{
	LLVMBuildBr(C->b, L->latch);
	LLVMPositionBuilderAtEnd(C->b, L->latch);
	/* nuw: indexes stay far below 2^32 (a task table holds at most
	 * 2^20 rows), and it lets LLVM count the trips to unroll the loop */
	LLVMBuildStore(C->b, LLVMBuildNUWAdd(C->b, L->iv, L->step, ""), L->var);
	LLVMValueRef br = LLVMBuildBr(C->b, L->head);
	if (L->unroll > 1)
		cg_unroll_hint(C, br, L->unroll);
	LLVMPositionBuilderAtEnd(C->b, L->exit);
	C->depth--;
}

/* A loop of the lanes over entities: in a rule, this part's rows
 * (sn_row0, sn_rowstep: the lanes' when the rule runs whole) */
static LLVMValueRef cg_lane_loop_start(Cg *C, Loop *L, LLVMValueRef end)
{
	LLVMValueRef lane = cg_call(C, C->in_rule ? "sn_row0" : "simt_lane", NULL, 0);
	LLVMValueRef nl = cg_call(C, C->in_rule ? "sn_rowstep" : "simt_nlanes", NULL, 0);
	cg_loop_begin(C, L, lane, end, nl);
	return L->iv;
}

/* ---- expressions --------------------------------------------------------------------- */

static LLVMValueRef cg_expr(Cg *C, const Expr *e, Ent ent);


/* v = name(w[, slot]) computed in the function's entry block. */
static LLVMValueRef cg_at_entry(Cg *C, const char *name, LLVMValueRef slot)
{
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(C->b);
	LLVMValueRef first = LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(C->fn));
	if (first)
		LLVMPositionBuilderBefore(C->b, first);
	else
		LLVMPositionBuilderAtEnd(C->b, LLVMGetEntryBasicBlock(C->fn));
	LLVMValueRef a[2] = {C->w, slot};
	LLVMValueRef v = cg_call(C, name, a, slot ? 2 : 1);
	LLVMPositionBuilderAtEnd(C->b, cur);
	return v;
}

/* Task slot `slot` of row `row`: the slot's column and the row count are
 * taken once a function (the table holds still while rules run), so a
 * rule's loop over 50,000 rows loads one word a row and a metric, with no
 * call and no checks between the loads.  A row past the count, or a slot
 * the table lacks, reads a NaN. */
static LLVMValueRef cg_task_value(Cg *C, unsigned slot, LLVMValueRef row)
{
	if (C->colfn != C->fn) {
		memset(C->col, 0, sizeof C->col);
		C->nrows = NULL;
		C->colfn = C->fn;
	}
	if (slot >= CG_MAX_TASKSLOTS) {
		LLVMValueRef a[3] = {C->w, cg_u32(C, slot), row};
		return cg_call(C, "sn_task", a, 3);
	}
	if (!C->col[slot])
		C->col[slot] = cg_at_entry(C, "sn_task_col", cg_u32(C, slot));
	if (!C->nrows)
		C->nrows = cg_at_entry(C, "sn_ntasks", NULL);
	if (!C->nan_cell) {
		C->nan_cell = LLVMAddGlobal(C->m, C->dbl, "sn.nan");
		LLVMSetInitializer(C->nan_cell, cg_nan(C));
		LLVMSetGlobalConstant(C->nan_cell, 1);
		LLVMSetLinkage(C->nan_cell, LLVMPrivateLinkage);
	}
	LLVMValueRef col = C->col[slot];
	LLVMValueRef ok = LLVMBuildAnd(C->b, LLVMBuildICmp(C->b, LLVMIntULT, row, C->nrows, ""),
				       LLVMBuildIsNotNull(C->b, col, ""), "");
	LLVMValueRef idx = LLVMBuildZExt(C->b, row, C->i64, "");
	LLVMValueRef at = LLVMBuildGEP2(C->b, C->dbl, col, &idx, 1, "");
	return LLVMBuildLoad2(C->b, C->dbl, LLVMBuildSelect(C->b, ok, at, C->nan_cell, ""), "");
}

static LLVMValueRef cg_metric(Cg *C, const Expr *e, Ent ent)
{
	MetricId m = e->u.metric.id;
	const Metric *M = &cat_metrics[m];
	int slot = C->p->slot[m];
	if (slot < 0)
		return cg_nan(C);
	LLVMValueRef a[3] = {C->w, cg_u32(C, (unsigned)slot), ent.idx};
	switch (M->entity) {
	case ENT_HOST: return cg_call(C, "sn_host", a, 2);
	case ENT_CPU: return cg_call(C, "sn_cpu", a, 3);
	case ENT_TASK: return cg_task_value(C, (unsigned)slot, ent.idx);
	default: {                  /* an object's slot */
		LLVMValueRef o[4] = {C->w, cg_u32(C, M->entity - ENT_FIRST_OBJ), cg_u32(C, (unsigned)slot), ent.idx};
		return cg_call(C, "sn_obj", o, 4);
	}
	}
}

static LLVMValueRef cg_window(Cg *C, const Expr *e, Ent ent)
{
	static const SnWinFn fns[B__COUNT] = {
		[B_RATE] = SN_W_RATE, [B_DELTA] = SN_W_DELTA, [B_CHANGES] = SN_W_CHANGES, [B_INCREASE] = SN_W_RATE,
		[B_AVG_OVER_TIME] = SN_W_AVG, [B_MAX_OVER_TIME] = SN_W_MAX, [B_MIN_OVER_TIME] = SN_W_MIN,
		[B_DERIV] = SN_W_DERIV, [B_PREDICT_LINEAR] = SN_W_FIT,   /* the line's value now; see cg_predict */
	};
	const Expr *x = e->a;
	int h = C->p->hist[x->u.metric.id];
	if (h < 0)
		return cg_nan(C);
	/* a window over a task metric in a rule: derived once a row a tick by
	 * every thread (rules_task_derive), read here as a value */
	if (cat_metrics[x->u.metric.id].entity == ENT_TASK && ent.idx && !C->deriving)
		for (unsigned k = 0; k < C->p->ntwin; k++)
			if (C->p->twin[k].m == x->u.metric.id && C->p->twin[k].fn == e->u.call.id &&
			    C->p->twin[k].window == x->u.metric.window && C->p->twin[k].partial == x->u.metric.partial) {
				return cg_task_value(C, C->p->ntask + k, ent.idx);
			}
	LLVMValueRef idx = cat_metrics[x->u.metric.id].entity == ENT_HOST || !ent.idx ? cg_u32(C, 0) : ent.idx;
	LLVMValueRef a[5] = {C->w, cg_u32(C, (unsigned)h), idx,
			     cg_u32(C, fns[e->u.call.id] | (x->u.metric.partial ? SN_W_PARTIAL : 0)),
			     cg_real(C, x->u.metric.window)};
	LLVMValueRef v = cg_call(C, "sn_window", a, 5);
	/* increase(): the rate over the window times its length (Prometheus' increase()) */
	return e->u.call.id == B_INCREASE ? LLVMBuildFMul(C->b, v, cg_real(C, x->u.metric.window), "") : v;
}

/* predict_linear(m[w], t): the least-squares line's value now plus its
 * slope times t (both windows, so a task metric's are derived slots) */
static LLVMValueRef cg_predict(Cg *C, const Expr *e, Ent ent)
{
	Expr d = *e;
	d.u.call.id = B_DERIV;
	LLVMValueRef now = cg_window(C, e, ent), slope = cg_window(C, &d, ent);
	return LLVMBuildFAdd(C->b, now, LLVMBuildFMul(C->b, slope, cg_expr(C, e->b, ent), ""), "");
}

/* a OP b over numbers: NaN if either is NaN, else 1 or 0 */
static LLVMValueRef cg_compare(Cg *C, NodeKind k, LLVMValueRef a, LLVMValueRef b)
{
	LLVMRealPredicate p = k == N_LT ? LLVMRealOLT : k == N_LE ? LLVMRealOLE : k == N_GT ? LLVMRealOGT :
			      k == N_GE ? LLVMRealOGE : k == N_EQ ? LLVMRealOEQ : LLVMRealONE;
	LLVMValueRef uno = LLVMBuildFCmp(C->b, LLVMRealUNO, a, b, "");
	return cg_sel(C, uno, cg_nan(C), cg_b2d(C, LLVMBuildFCmp(C->b, p, a, b, "")));
}

static LLVMValueRef cg_string_compare(Cg *C, const Expr *e, Ent ent)
{
	const Expr *lit = e->a->kind == N_STR ? e->a : e->b;
	const Expr *met = lit == e->a ? e->b : e->a;
	LLVMValueRef eq;
	if (met->kind == N_STR) {            /* two literals */
		eq = cg_real(C, lit->u.str.len == met->u.str.len && !memcmp(lit->u.str.s, met->u.str.s, lit->u.str.len));
	} else if (ent_is_obj(cat_metrics[met->u.metric.id].entity)) {   /* disk.name == "vda", fs.fstype == "xfs" */
		char tmp[SN_OBJ_NAME];
		snprintf(tmp, sizeof tmp, "%.*s", (int)(lit->u.str.len < SN_OBJ_NAME - 1 ? lit->u.str.len : SN_OBJ_NAME - 1),
			 lit->u.str.s);
		LLVMValueRef s = LLVMBuildGlobalStringPtr(C->b, tmp, "name");
		LLVMValueRef a[6] = {C->w, cg_u32(C, cat_metrics[met->u.metric.id].entity - ENT_FIRST_OBJ),
				     cg_u32(C, cat_obj_str(met->u.metric.id)), ent.idx, s, cg_u32(C, (unsigned)strlen(tmp))};
		eq = LLVMBuildSIToFP(C->b, cg_call(C, "sn_obj_str_eq", a, 6), C->dbl, "");
	} else if (met->u.metric.id == MET_TASK_COMM) {
		char tmp[32];
		snprintf(tmp, sizeof tmp, "%.*s", (int)(lit->u.str.len < 16 ? lit->u.str.len : 16), lit->u.str.s);
		LLVMValueRef s = LLVMBuildGlobalStringPtr(C->b, tmp, "comm");
		LLVMValueRef a[4] = {C->w, ent.idx, s, cg_u32(C, (unsigned)strlen(tmp))};
		LLVMValueRef r = cg_call(C, "sn_task_comm_eq", a, 4);
		eq = LLVMBuildSIToFP(C->b, r, C->dbl, "");
	} else {                                 /* task.state == "D": the letter's code */
		LLVMValueRef v = cg_metric(C, met, ent);
		eq = cg_compare(C, N_EQ, v, cg_real(C, lit->u.str.len ? (unsigned char)lit->u.str.s[0] : 0));
	}
	if (e->kind == N_NE)
		eq = cg_sel(C, cg_isnan(C, eq), eq, LLVMBuildFSub(C->b, cg_real(C, 1), eq, ""));
	return eq;
}

/* A constant table of n bytes (b8) or 16-bit words (b16), private to the module. */
static LLVMValueRef cg_table(Cg *C, const uint8_t *b8, const uint16_t *b16, unsigned n, const char *name)
{
	LLVMTypeRef et = b8 ? C->i8 : LLVMInt16TypeInContext(C->ctx);
	LLVMValueRef *v = malloc((n ? n : 1) * sizeof *v);
	if (!v) {
		if (!C->nerr++)
			snprintf(C->err, C->errlen, "out of memory");
		return LLVMConstNull(C->ptr);
	}
	for (unsigned i = 0; i < n; i++)
		v[i] = LLVMConstInt(et, b8 ? b8[i] : b16[i], 0);
	LLVMValueRef init = LLVMConstArray2(et, v, n);
	free(v);
	LLVMValueRef g = LLVMAddGlobal(C->m, LLVMTypeOf(init), name);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
	return g;
}

/* name =~ "pattern" / name !~ "pattern": the pattern's DFA (rx.h) as
 * constant tables the runtime walks over the name (sn_obj_str_match,
 * sn_task_comm_match); task.state: the letters the pattern matches,
 * compared here.  1, 0, or NaN for an unknown state; !~ negates, NaN
 * kept. */
static LLVMValueRef cg_string_match(Cg *C, const Expr *e, Ent ent)
{
	const Expr *met = e->a, *lit = e->b;
	Rx rx;
	RxErr err;
	if (rx_compile(lit->u.str.raw, lit->u.str.rawlen, &rx, &err) < 0) {   /* the checker reported it */
		if (!C->nerr++)
			snprintf(C->err, C->errlen, "pattern \"%s\": %s", lit->u.str.raw, err.msg);
		return cg_nan(C);
	}
	LLVMValueRef r;
	MetricId id = met->u.metric.id;
	if (cat_metrics[id].type == MT_STATE) {
		LLVMValueRef v = cg_metric(C, met, ent);
		r = cg_real(C, 0);
		for (const char *p = KSTATE_LETTERS; *p; p++)
			if (rx_match(&rx, p, 1))
				r = cg_sel(C, LLVMBuildFCmp(C->b, LLVMRealOEQ, v, cg_real(C, (unsigned char)*p), ""),
					   cg_real(C, 1), r);
		r = cg_sel(C, cg_isnan(C, v), cg_nan(C), r);
	} else {
		LLVMValueRef cls = cg_table(C, rx.cls, NULL, 256, "rx.class");
		LLVMValueRef next = cg_table(C, NULL, rx.next, rx.nstates * rx.nclass, "rx.next");
		LLVMValueRef acc = cg_table(C, rx.accept, NULL, rx.nstates, "rx.accept");
		if (ent_is_obj(cat_metrics[id].entity)) {          /* disk.name =~ "vd.*" */
			LLVMValueRef a[8] = {C->w, cg_u32(C, cat_metrics[id].entity - ENT_FIRST_OBJ),
					     cg_u32(C, cat_obj_str(id)), ent.idx, cls, next, cg_u32(C, rx.nclass), acc};
			r = cg_call(C, "sn_obj_str_match", a, 8);
		} else {                                           /* task.comm */
			LLVMValueRef a[6] = {C->w, ent.idx, cls, next, cg_u32(C, rx.nclass), acc};
			r = cg_call(C, "sn_task_comm_match", a, 6);
		}
		r = LLVMBuildSIToFP(C->b, r, C->dbl, "");
	}
	rx_free(&rx);
	if (e->kind == N_NMATCH)
		r = cg_sel(C, cg_isnan(C, r), r, LLVMBuildFSub(C->b, cg_real(C, 1), r, ""));
	return r;
}

/* Three-valued logic on 1 / 0 / NaN */
static LLVMValueRef cg_logic(Cg *C, const Expr *e, Ent ent)
{
	LLVMValueRef a = cg_expr(C, e->a, ent);
	if (e->kind == N_NOT)
		return cg_sel(C, cg_isnan(C, a), a, LLVMBuildFSub(C->b, cg_real(C, 1), a, ""));
	LLVMValueRef b = cg_expr(C, e->b, ent);
	LLVMValueRef uno = LLVMBuildFCmp(C->b, LLVMRealUNO, a, b, "");
	if (e->kind == N_AND) {
		LLVMValueRef f = LLVMBuildOr(C->b, LLVMBuildFCmp(C->b, LLVMRealOEQ, a, cg_real(C, 0), ""),
					     LLVMBuildFCmp(C->b, LLVMRealOEQ, b, cg_real(C, 0), ""), "");
		return cg_sel(C, f, cg_real(C, 0), cg_sel(C, uno, cg_nan(C), cg_real(C, 1)));
	}
	LLVMValueRef t = LLVMBuildOr(C->b, LLVMBuildFCmp(C->b, LLVMRealONE, a, cg_real(C, 0), ""),
				     LLVMBuildFCmp(C->b, LLVMRealONE, b, cg_real(C, 0), ""), "");
	return cg_sel(C, t, cg_real(C, 1), cg_sel(C, uno, cg_nan(C), cg_real(C, 0)));
}

/* A warp reduction (simt_sum_f64, _min_, _max_); in a rule, over every
 * part of it (sn_red_*: the parts meet there) */
static LLVMValueRef cg_reduce(Cg *C, const char *fn, LLVMValueRef v)
{
	if (C->in_rule) {
		C->meets_in_loop |= C->depth > 0;
		fn = !strcmp(fn, "simt_sum_f64") ? "sn_red_sum" : !strcmp(fn, "simt_min_f64") ? "sn_red_min" : "sn_red_max";
	}
	return cg_call(C, fn, &v, 1);
}

/* n (at most SN_MEET_VALS) warp reductions at once, v[i] by fn[i] in
 * place: in a rule one call, sn_red_n, so that a rule in parts meets once
 * for all of them (a fresh array: the loop's accumulators do not escape) */
static void cg_reduce_n(Cg *C, LLVMValueRef *v, const char *const *fn, unsigned n)
{
	if (!C->in_rule || n < 2) {
		for (unsigned i = 0; i < n; i++)
			v[i] = cg_reduce(C, fn[i], v[i]);
		return;
	}
	C->meets_in_loop |= C->depth > 0;
	LLVMTypeRef at = LLVMArrayType2(C->dbl, SN_MEET_VALS);
	LLVMValueRef arr = cg_alloca(C, at, LLVMConstNull(at), "meet");
	unsigned minmask = 0, maxmask = 0;
	for (unsigned i = 0; i < n; i++) {
		LLVMValueRef idx[2] = {cg_u32(C, 0), cg_u32(C, i)};
		LLVMBuildStore(C->b, v[i], LLVMBuildInBoundsGEP2(C->b, at, arr, idx, 2, ""));
		minmask |= !strcmp(fn[i], "simt_min_f64") ? 1u << i : 0;
		maxmask |= !strcmp(fn[i], "simt_max_f64") ? 1u << i : 0;
	}
	LLVMValueRef a[4] = {arr, cg_u32(C, n), cg_u32(C, minmask), cg_u32(C, maxmask)};
	cg_call(C, "sn_red_n", a, 4);
	for (unsigned i = 0; i < n; i++) {
		LLVMValueRef idx[2] = {cg_u32(C, 0), cg_u32(C, i)};
		v[i] = LLVMBuildLoad2(C->b, C->dbl, LLVMBuildInBoundsGEP2(C->b, at, arr, idx, 2, ""), "");
	}
}

/* Start an entity loop: the entity count, then per entity the online test
 * (CPUs) and the where filter. */
static Loop cg_entity_loop(Cg *C, int kind, const Expr *where, Ent *ent)
{
	Loop L;
	LLVMValueRef ok[2] = {C->w, ent_is_obj(kind) ? cg_u32(C, (unsigned)(kind - ENT_FIRST_OBJ)) : NULL};
	LLVMValueRef n = ok[1] ? cg_call(C, "sn_nobjs", ok, 2) : cg_call(C, kind == ENT_CPU ? "sn_ncpus" : "sn_ntasks", &C->w, 1);
	cg_lane_loop_start(C, &L, n);
	/* over tasks: a lane's next rows' loads in flight at once, not one
	 * load's latency per row (a warp walks 50,000 rows in 1,563 steps) */
	if (kind == ENT_TASK) {
		L.unroll = CG_TASK_UNROLL;
		C->has_task_loop |= C->in_rule;
	}
	*ent = (Ent){kind, L.iv};
	if (kind == ENT_CPU) {
		LLVMValueRef a[2] = {C->w, L.iv};
		LLVMValueRef on = cg_call(C, "sn_cpu_on", a, 2);
		cg_loop_continue_unless(C, &L, LLVMBuildICmp(C->b, LLVMIntNE, on, cg_s32(C, 0), ""));
	} else if (ok[1]) {          /* an object slot holds one this tick */
		LLVMValueRef a[3] = {C->w, ok[1], L.iv};
		LLVMValueRef on = cg_call(C, "sn_obj_on", a, 3);
		cg_loop_continue_unless(C, &L, LLVMBuildICmp(C->b, LLVMIntNE, on, cg_s32(C, 0), ""));
	}
	if (where) {
		LLVMValueRef f = cg_expr(C, where, *ent);
		LLVMValueRef keep = LLVMBuildFCmp(C->b, LLVMRealOEQ, f, cg_real(C, 1), "");
		/* over tasks the filter is a predicate, not a branch: a branch on
		 * a row's column waits for its load, so the unrolled rows' loads
		 * would go out one after the other (the body reads only columns
		 * of a valid row, and has no effects) */
		if (kind == ENT_TASK)
			L.pred = keep;
		else
			cg_loop_continue_unless(C, &L, keep);
	}
	return L;
}

/* A best-entity tracker: key (compared), value, entity. */
typedef struct Track {
	LLVMValueRef k, v, e;
	int dir;                  /* +1 largest key, -1 smallest */
} Track;

static Track cg_track_new(Cg *C, int dir, const char *name)
{
	Track t = {.dir = dir};
	t.k = cg_alloca(C, C->dbl, cg_real(C, dir > 0 ? -INFINITY : INFINITY), name);
	t.v = cg_alloca(C, C->dbl, cg_nan(C), name);
	t.e = cg_alloca(C, C->dbl, cg_real(C, INFINITY), name);
	return t;
}

static void cg_track(Cg *C, Track *t, LLVMValueRef k, LLVMValueRef v, LLVMValueRef e, LLVMValueRef when)
{
	LLVMValueRef better = LLVMBuildFCmp(C->b, t->dir > 0 ? LLVMRealOGT : LLVMRealOLT, k, cg_ld(C, t->k), "");
	if (when)
		better = LLVMBuildAnd(C->b, better, when, "");
	LLVMBuildStore(C->b, cg_sel(C, better, k, cg_ld(C, t->k)), t->k);
	LLVMBuildStore(C->b, cg_sel(C, better, v, cg_ld(C, t->v)), t->v);
	LLVMBuildStore(C->b, cg_sel(C, better, e, cg_ld(C, t->e)), t->e);
}

/* Across lanes: the best key, then the lowest entity holding it, then its value. */
static void cg_track_reduce(Cg *C, const Track *t, LLVMValueRef *value, LLVMValueRef *entity, LLVMValueRef *found)
{
	LLVMValueRef k = cg_ld(C, t->k), v = cg_ld(C, t->v), e = cg_ld(C, t->e);
	if (C->in_rule) {
		/* the same three steps in the runtime, each part's winner then
		 * the parts' (sn_red_track): one meeting, not three */
		C->meets_in_loop |= C->depth > 0;
		LLVMTypeRef at = LLVMArrayType2(C->dbl, 3);
		LLVMValueRef arr = cg_alloca(C, at, LLVMConstNull(at), "track");
		LLVMValueRef in[3] = {k, v, e}, el[3];
		for (unsigned i = 0; i < 3; i++) {
			LLVMValueRef idx[2] = {cg_u32(C, 0), cg_u32(C, i)};
			el[i] = LLVMBuildInBoundsGEP2(C->b, at, arr, idx, 2, "");
			LLVMBuildStore(C->b, in[i], el[i]);
		}
		LLVMValueRef a[2] = {arr, cg_s32(C, t->dir > 0 ? 1 : -1)};
		cg_call(C, "sn_red_track", a, 2);
		LLVMValueRef E = LLVMBuildLoad2(C->b, C->dbl, el[2], "");
		*value = LLVMBuildLoad2(C->b, C->dbl, el[1], "");
		*found = LLVMBuildFCmp(C->b, LLVMRealOLT, E, cg_real(C, INFINITY), "");
		*entity = cg_sel(C, *found, E, cg_real(C, -1));
		return;
	}
	LLVMValueRef K = cg_reduce(C, t->dir > 0 ? "simt_max_f64" : "simt_min_f64", k);
	LLVMValueRef mine = LLVMBuildFCmp(C->b, LLVMRealOEQ, k, K, "");
	LLVMValueRef E = cg_reduce(C, "simt_min_f64", cg_sel(C, mine, e, cg_real(C, INFINITY)));
	LLVMValueRef it = LLVMBuildAnd(C->b, mine, LLVMBuildFCmp(C->b, LLVMRealOEQ, e, E, ""), "");
	*value = cg_reduce(C, "simt_max_f64", cg_sel(C, it, v, cg_nan(C)));
	*found = LLVMBuildFCmp(C->b, LLVMRealOLT, E, cg_real(C, INFINITY), "");
	*entity = cg_sel(C, *found, E, cg_real(C, -1));
}


/* all(x OP t) / any(x OP t) as the rule's value: which entity decides, and
 * its x.  any(): the extreme entity among those that hold (else among
 * all); all(): the extreme over all (the closest to breaking it).  Tracked
 * in the aggregation's own loop. */
typedef struct ValTrack {
	const Expr *cmp;          /* the comparison whose left side is the value */
	bool any;
	Track held, all;
} ValTrack;

static void cg_value_begin(Cg *C, const Expr *agg, ValTrack *vt)
{
	vt->cmp = cg_value_node(agg->a);
	if (vt->cmp && vt->cmp->kind == N_CALL)
		vt->cmp = NULL;
	/* without a numeric comparison (any(task.state == "D")) the value is
	 * unknown, but the entity is still the first that holds */
	vt->any = agg->u.call.id == B_ANY;
	NodeKind k = vt->cmp ? vt->cmp->kind : N_EQ;
	int dir = k == N_GT || k == N_GE ? (vt->any ? 1 : -1) : k == N_LT || k == N_LE ? (vt->any ? -1 : 1) : 0;
	vt->held = cg_track_new(C, dir ? dir : -1, "best.held");
	vt->all = cg_track_new(C, dir ? dir : -1, "best");
	vt->held.dir = vt->all.dir = dir ? dir : -2;      /* -2: the first entity (by index) */
}

/* The entity is the CPU number or the task's row (sn_step makes a row its
 * PID and names the task). */
static void cg_value_step(Cg *C, ValTrack *vt, Ent ent, LLVMValueRef cond, LLVMValueRef keep)
{
	LLVMValueRef x = vt->cmp ? cg_expr(C, vt->cmp->a, ent) : cg_nan(C);
	LLVMValueRef id = LLVMBuildUIToFP(C->b, ent.idx, C->dbl, "");
	bool first = vt->all.dir == -2;
	if (first)
		vt->held.dir = vt->all.dir = -1;
	LLVMValueRef key = first ? id : x;
	LLVMValueRef known = vt->cmp ? LLVMBuildFCmp(C->b, LLVMRealORD, x, x, "") : LLVMConstInt(C->i1, 1, 0);
	if (keep)
		known = LLVMBuildAnd(C->b, known, keep, "");
	cg_track(C, &vt->held, key, x, id,
		 LLVMBuildAnd(C->b, known, LLVMBuildFCmp(C->b, LLVMRealOEQ, cond, cg_real(C, 1), ""), ""));
	cg_track(C, &vt->all, key, x, id, known);
	if (first)
		vt->held.dir = vt->all.dir = -2;
}

static void cg_value_end(Cg *C, ValTrack *vt, LLVMValueRef *value, LLVMValueRef *entity)
{
	if (vt->all.dir == -2)
		vt->held.dir = vt->all.dir = -1;
	LLVMValueRef hv, he, hf, av, ae, af;
	cg_track_reduce(C, &vt->held, &hv, &he, &hf);
	cg_track_reduce(C, &vt->all, &av, &ae, &af);
	LLVMValueRef use_held = vt->any ? hf : LLVMConstInt(C->i1, 0, 0);
	*value = cg_sel(C, use_held, hv, av);
	*entity = cg_sel(C, use_held, he, ae);
}

/* An aggregation over CPUs or tasks: one loop over the entities, lanes
 * striding, then only the warp reductions its kind needs.  When it is the
 * rule's value node, the value is tracked in the same loop. */
static LLVMValueRef cg_aggregate(Cg *C, const Expr *e)
{
	BuiltinId id = e->u.call.id;
	int kind = cg_entity_of(e->a);
	if (kind < 0)
		kind = cg_entity_of(e->b);
	bool cond = id == B_ALL || id == B_ANY || id == B_COUNT;
	bool sums = id == B_SUM || id == B_AVG, extremes = id == B_MIN || id == B_MAX;
	LLVMValueRef zero = cg_real(C, 0), one = cg_real(C, 1);
	LLVMValueRef t = NULL, f = NULL, u = NULL, s = NULL, c = NULL, ex = NULL;
	if (cond) {
		t = cg_alloca(C, C->dbl, zero, "n.true");
		f = cg_alloca(C, C->dbl, zero, "n.false");
	} else {
		c = cg_alloca(C, C->dbl, zero, "n");
	}
	if (id != B_COUNT && id != B_AVG)
		u = cg_alloca(C, C->dbl, zero, "n.unknown");
	if (sums)
		s = cg_alloca(C, C->dbl, zero, "sum");
	if (extremes)
		ex = cg_alloca(C, C->dbl, cg_real(C, id == B_MIN ? INFINITY : -INFINITY), id == B_MIN ? "min" : "max");
	ValTrack vt = {0};
	bool track = C->track == e;
	if (track)
		cg_value_begin(C, e, &vt);
	Ent ent;
	Loop L = cg_entity_loop(C, kind, e->b, &ent);
	LLVMValueRef x = cg_expr(C, e->a, ent);
	LLVMValueRef isn = cg_isnan(C, x);
	/* keep: the entity passes the where (a task loop's predicate) */
	LLVMValueRef keep = L.pred ? L.pred : LLVMConstInt(C->i1, 1, 0);
#define KEEP(cond_) LLVMBuildAnd(C->b, keep, (cond_), "")
	if (cond) {
		LLVMBuildStore(C->b, LLVMBuildFAdd(C->b, cg_ld(C, t), cg_b2d(C, KEEP(LLVMBuildFCmp(C->b, LLVMRealOEQ, x, one, ""))), ""), t);
		LLVMBuildStore(C->b, LLVMBuildFAdd(C->b, cg_ld(C, f), cg_b2d(C, KEEP(LLVMBuildFCmp(C->b, LLVMRealOEQ, x, zero, ""))), ""), f);
	} else {
		LLVMBuildStore(C->b, LLVMBuildFAdd(C->b, cg_ld(C, c), cg_b2d(C, KEEP(LLVMBuildNot(C->b, isn, ""))), ""), c);
	}
	if (s)
		LLVMBuildStore(C->b, LLVMBuildFAdd(C->b, cg_ld(C, s), cg_sel(C, KEEP(LLVMBuildNot(C->b, isn, "")), x, zero), ""), s);
	if (ex) {
		LLVMValueRef a[2] = {cg_ld(C, ex), cg_sel(C, keep, x, cg_nan(C))};
		LLVMBuildStore(C->b, cg_intrinsic(C, id == B_MIN ? "llvm.minnum" : "llvm.maxnum", a, 2), ex);
	}
	if (u)
		LLVMBuildStore(C->b, LLVMBuildFAdd(C->b, cg_ld(C, u), cg_b2d(C, KEEP(isn)), ""), u);
#undef KEEP
	if (track)
		cg_value_step(C, &vt, ent, x, L.pred);
	cg_loop_end(C, &L);
	if (track)
		cg_value_end(C, &vt, &C->value, &C->entity);
	/* the counts, sums and extreme, reduced together */
	LLVMValueRef acc[6] = {t, f, u, c, s, ex}, *out[6], T = NULL, F = NULL, U = NULL, N = NULL, S = NULL, X = NULL;
	LLVMValueRef *dst[6] = {&T, &F, &U, &N, &S, &X}, v[6];
	const char *fns[6];
	unsigned nv = 0;
	for (unsigned i = 0; i < 6; i++)
		if (acc[i]) {
			out[nv] = dst[i];
			fns[nv] = i < 5 ? "simt_sum_f64" : id == B_MIN ? "simt_min_f64" : "simt_max_f64";
			v[nv++] = cg_ld(C, acc[i]);
		}
	cg_reduce_n(C, v, fns, nv);
	for (unsigned i = 0; i < nv; i++)
		*out[i] = v[i];
#define GT0(v) LLVMBuildFCmp(C->b, LLVMRealOGT, v, zero, "")
	switch (id) {
	case B_ALL:     /* false if any is false; unknown if any is unknown; false if none */
		return cg_sel(C, GT0(F), zero, cg_sel(C, GT0(U), cg_nan(C), cg_sel(C, GT0(T), one, zero)));
	case B_ANY:
		return cg_sel(C, GT0(T), one, cg_sel(C, GT0(U), cg_nan(C), zero));
	case B_COUNT:   /* entities known to hold; unknown ones are not counted */
		return T;
	case B_SUM:
		return cg_sel(C, LLVMBuildAnd(C->b, GT0(U), LLVMBuildFCmp(C->b, LLVMRealOEQ, N, zero, ""), ""), cg_nan(C), S);
	case B_AVG:
		return cg_sel(C, GT0(N), LLVMBuildFDiv(C->b, S, N, ""), cg_nan(C));
	case B_MIN:
	case B_MAX:
		return cg_sel(C, GT0(N), X, cg_nan(C));
	default:
		return cg_nan(C);
	}
#undef GT0
}

static LLVMValueRef cg_expr(Cg *C, const Expr *e, Ent ent)
{
	switch (e->kind) {
	case N_NUM:
		for (unsigned k = 0; k < C->nlit; k++)
			if (C->lit[k] == e)
				return C->litv[k];
		return cg_real(C, e->u.num.v);
	case N_STR:
		return cg_nan(C);          /* only inside comparisons */
	case N_METRIC:
		return cg_metric(C, e, ent);
	case N_CALL: {
		const Builtin *bi = &ast_builtins[e->u.call.id];
		if (e->u.call.id == B_PREDICT_LINEAR)
			return cg_predict(C, e, ent);
		if (bi->cls == BC_WINDOW)
			return cg_window(C, e, ent);
		if (bi->cls == BC_AGG)
			return cg_aggregate(C, e);
		if (e->u.call.id == B_TOTAL)                   /* the counter as it is */
			return cg_expr(C, e->a, ent);
		LLVMValueRef x = cg_expr(C, e->a, ent);       /* abs */
		return cg_intrinsic(C, "llvm.fabs", &x, 1);
	}
	case N_NEG:
		return LLVMBuildFNeg(C->b, cg_expr(C, e->a, ent), "");
	case N_ADD: case N_SUB: case N_MUL: case N_DIV: {
		LLVMValueRef a = cg_expr(C, e->a, ent), b = cg_expr(C, e->b, ent);
		switch (e->kind) {
		case N_ADD: return LLVMBuildFAdd(C->b, a, b, "");
		case N_SUB: return LLVMBuildFSub(C->b, a, b, "");
		case N_MUL: return LLVMBuildFMul(C->b, a, b, "");
		default: return LLVMBuildFDiv(C->b, a, b, "");
		}
	}
	case N_LT: case N_LE: case N_GT: case N_GE: case N_EQ: case N_NE:
		if (cg_is_string(e->a) || cg_is_string(e->b))
			return cg_string_compare(C, e, ent);
		return cg_compare(C, e->kind, cg_expr(C, e->a, ent), cg_expr(C, e->b, ent));
	case N_MATCH: case N_NMATCH:
		return cg_string_match(C, e, ent);
	case N_AND: case N_OR: case N_NOT:
		return cg_logic(C, e, ent);
	default:
		return cg_nan(C);
	}
}

/* ---- the rule's value ------------------------------------------------------------------ */


/* The rule's value: the left side of its first numeric comparison; when
 * that sits in all()/any(), the aggregation tracked it (C->track). */
static void cg_value(Cg *C, const Expr *e, LLVMValueRef *value, LLVMValueRef *entity)
{
	const Expr *v = cg_value_node(e);
	Ent none = {-1, NULL};
	if (v && v->kind == N_CALL && C->value) {
		*value = C->value;
		*entity = C->entity;
		return;
	}
	*entity = cg_real(C, -1);
	*value = v && v->kind != N_CALL ? cg_expr(C, v->a, none) : cg_nan(C);
}

/* ---- functions -------------------------------------------------------------------------- */

static LLVMValueRef cg_begin(Cg *C, const char *name, LLVMTypeRef *params, unsigned n)
{
	LLVMTypeRef ft = LLVMFunctionType(C->vd, params, n, 0);
	C->fn = LLVMAddFunction(C->m, name, ft);
	LLVMSetLinkage(C->fn, LLVMInternalLinkage);
	C->w = LLVMGetParam(C->fn, 0);
	LLVMPositionBuilderAtEnd(C->b, LLVMAppendBasicBlockInContext(C->ctx, C->fn, "entry"));
	return C->fn;
}

/* Rule r's descriptor (its row of sn_rule_desc). */
static sn_rdesc cg_rdesc(const CgProg *p, const Rule *r)
{
	int vec = cg_vector_entity(r->expr);
	int vent = vec >= 0 ? vec : cg_value_entity(r->expr);
	unsigned sv = vec < 0 ? 0 : 1 + (vec == ENT_CPU ? SN_ENT_CPU : vec == ENT_TASK ? SN_ENT_TASK :
					 SN_ENT_OBJ + (unsigned)(vec - ENT_FIRST_OBJ));
	return (sn_rdesc){.for_ns = (uint64_t)(r->for_s * 1e9 + 0.5), .clear_for_ns = (uint64_t)(r->clear_for_s * 1e9 + 0.5),
			  .m_of = r->m_of, .n_of = r->n_of, .has_clear = r->clear != NULL,
			  .pid_slot = vent == ENT_TASK ? p->slot[MET_TASK_PID] : -1,
			  .obj = ent_is_obj(vent) ? (uint32_t)(vent - ENT_FIRST_OBJ + 1) : 0, .vec = sv};
}

/* The data tables' rows: rules, rules, rules and numbers (at least one). */
static size_t cg_table_rows(const CgProg *p, unsigned t)
{
	size_t nc = p->shapes.nconsts;
	return t == 3 ? (nc ? nc : 1) : p->rs->n;
}

static const char *const cg_table_names[CG_TABLES] = {"sn_rule_shape", "sn_rule_desc", "sn_rule_cbase",
						      "sn_rule_const"};

int cg_table_bytes(const CgProg *p, CgTable out[CG_TABLES], unsigned *n)
{
	*n = 0;
	if (!p->rs || !p->rs->n)
		return 0;
	const CgShapes *S = &p->shapes;
	static const size_t row[CG_TABLES] = {sizeof(uint32_t), sizeof(sn_rdesc), sizeof(uint32_t), sizeof(double)};
	for (unsigned t = 0; t < CG_TABLES; t++) {
		size_t rows = cg_table_rows(p, t);
		out[t] = (CgTable){cg_table_names[t], calloc(rows, row[t]), rows * row[t]};
		if (!out[t].bytes) {
			for (unsigned k = 0; k <= t; k++)
				free(out[k].bytes);
			return -ENOMEM;
		}
	}
	uint32_t *shape = out[0].bytes, *cbase = out[2].bytes;
	sn_rdesc *desc = out[1].bytes;
	for (size_t i = 0; i < p->rs->n; i++) {
		shape[i] = S->of[i];
		desc[i] = cg_rdesc(p, &p->rs->v[i]);
		cbase[i] = S->cbase[i];
	}
	if (S->nconsts)
		memcpy(out[3].bytes, S->consts, S->nconsts * sizeof(double));
	*n = CG_TABLES;
	return 0;
}

/* The data tables, a row per rule: sn_rule_shape (its shape, which
 * rules_eval dispatches on), sn_rule_desc (its sn_rdesc), sn_rule_cbase
 * (where its numbers start in sn_rule_const).  Zeros here, external and
 * written by no code: the engine writes cg_table_bytes' rows into the
 * loaded code (bundle.h, BD_SEC_DATA), so a rule's numbers are not in the
 * code, and the code of a rule set whose numbers changed is the same
 * (rulec's code cache, the GPU's link cache).  The last table in a PTX
 * part of its own (compile.c). */
static LLVMValueRef cg_data(Cg *C, unsigned t, LLVMTypeRef elt)
{
	LLVMTypeRef at = LLVMArrayType2(elt, cg_table_rows(C->p, t));
	LLVMValueRef g = LLVMAddGlobal(C->m, at, cg_table_names[t]);
	LLVMSetInitializer(g, LLVMConstNull(at));
	return g;
}

static void cg_tables(Cg *C)
{
	C->t_shape = cg_data(C, 0, C->i32);
	C->t_desc = cg_data(C, 1, C->desc_t);
	C->t_cbase = cg_data(C, 2, C->i32);
	C->t_const = cg_data(C, 3, C->dbl);
}

/* A load from a data table that no one writes (ld.global.nc on the GPU) */
static LLVMValueRef cg_data_load(Cg *C, LLVMTypeRef t, LLVMValueRef table, LLVMValueRef idx, const char *name)
{
	LLVMValueRef l = LLVMBuildLoad2(C->b, t, LLVMBuildInBoundsGEP2(C->b, t, table, &idx, 1, ""), name);
	unsigned kind = LLVMGetMDKindIDInContext(C->ctx, "invariant.load", 14);
	LLVMSetMetadata(l, kind, LLVMMetadataAsValue(C->ctx, LLVMMDNodeInContext2(C->ctx, NULL, 0)));
	return l;
}

/* In rule_N's entry: rule i's descriptor and the shape's numbers from
 * its row (model: the shape's first rule, whose nodes cg_expr meets) */
static void cg_rule_row(Cg *C, const Rule *model)
{
	C->desc = LLVMBuildInBoundsGEP2(C->b, C->desc_t, C->t_desc, &C->ri, 1, "desc");
	C->nlit = cg_shape_lits(model, C->lit);
	if (!C->nlit)
		return;
	LLVMValueRef base = cg_data_load(C, C->i32, C->t_cbase, C->ri, "cbase");
	for (unsigned k = 0; k < C->nlit; k++)
		C->litv[k] = cg_data_load(C, C->dbl, C->t_const, LLVMBuildAdd(C->b, base, cg_u32(C, k), ""), "num");
}

/* A per-entity rule: every entity's verdict, lanes striding, then the
 * states step (snrt_ent.c). */
static void cg_rule_vector(Cg *C, const Rule *r, int vec)
{
	/* an entity whose condition does not hold matters only when some
	 * entity has a state (its own may): else the loop is any()'s, and the
	 * call is not made (it is not inlined: 25,000 calls a tick cost) */
	LLVMValueRef ba[2] = {C->w, C->ri};
	LLVMValueRef busy = LLVMBuildICmp(C->b, LLVMIntNE, cg_call(C, "sn_ent_busy", ba, 2), cg_s32(C, 0), "");
	Ent ent;
	Loop L = cg_entity_loop(C, vec, NULL, &ent);
	LLVMValueRef cond = cg_expr(C, r->expr, ent);
	LLVMValueRef need = LLVMBuildOr(C->b, busy, LLVMBuildFCmp(C->b, LLVMRealOEQ, cond, cg_real(C, 1), ""), "");
	cg_loop_continue_unless(C, &L, need);
	LLVMValueRef clear = r->clear ? cg_expr(C, r->clear, ent) : cg_real(C, 0);
	const Expr *v = cg_value_node(r->expr);
	LLVMValueRef value = v && v->kind != N_CALL ? cg_expr(C, v->a, ent) : cg_nan(C);
	LLVMValueRef a[7] = {C->w, C->ri, C->desc, ent.idx, cond, clear, value};
	cg_call(C, "sn_ent_put", a, 7);
	cg_loop_end(C, &L);
	LLVMValueRef e[3] = {C->w, C->ri, C->desc};
	cg_call(C, "sn_ent_end", e, 3);
}

/* rule_N(w, i): shape N's code, for its rule i */
static LLVMValueRef cg_rule(Cg *C, unsigned shape)
{
	const Rule *r = &C->p->rs->v[C->p->shapes.first[shape]];
	char name[32];
	snprintf(name, sizeof name, "rule_%u", shape);
	LLVMTypeRef pt[2] = {C->ptr, C->i32};
	LLVMValueRef fn = cg_begin(C, name, pt, 2);
	C->ri = LLVMGetParam(fn, 1);
	cg_rule_row(C, r);
	Ent none = {-1, NULL};
	C->in_rule = true;
	C->has_task_loop = C->meets_in_loop = false;
	int vec = cg_vector_entity(r->expr);
	if (vec >= 0) {
		cg_rule_vector(C, r, vec);
	} else {
		const Expr *vn = cg_value_node(r->expr);
		C->track = vn && vn->kind == N_CALL ? vn : NULL;
		C->value = C->entity = NULL;
		LLVMValueRef cond = cg_expr(C, r->expr, none);
		LLVMValueRef clear = r->clear ? cg_expr(C, r->clear, none) : cg_real(C, 0);
		LLVMValueRef value, entity;
		cg_value(C, r->expr, &value, &entity);
		LLVMValueRef a[7] = {C->w, C->ri, C->desc, cond, clear, value, LLVMBuildFPToSI(C->b, entity, C->i64, "")};
		cg_call(C, "sn_step", a, 7);
	}
	C->in_rule = false;
	C->nlit = 0;
	C->split[shape] = C->has_task_loop && !C->meets_in_loop;
	LLVMBuildRetVoid(C->b);
	return fn;
}

/* rules_split(w, i): whether rule i's shape can run in parts
 * (sn_shape_split[sn_rule_shape[i]], a constant of the code: it changes
 * with the shapes, not with a rule's numbers); 0 without rules. */
static void cg_split_fn(Cg *C, unsigned nshapes, bool rules)
{
	LLVMTypeRef pt[2] = {C->ptr, C->i32};
	LLVMValueRef f = LLVMGetNamedFunction(C->m, "rules_split");
	if (!f)
		f = LLVMAddFunction(C->m, "rules_split", LLVMFunctionType(C->i32, pt, 2, 0));
	LLVMGlobalClearMetadata(f);     /* the library's declaration carried debug info */
	C->fn = f;
	C->w = LLVMGetParam(f, 0);
	LLVMPositionBuilderAtEnd(C->b, LLVMAppendBasicBlockInContext(C->ctx, f, "entry"));
	LLVMValueRef v = cg_u32(C, 0);
	if (rules) {
		LLVMTypeRef at = LLVMArrayType2(C->i8, nshapes);
		LLVMValueRef g = LLVMAddGlobal(C->m, at, "sn_shape_split");
		LLVMValueRef *e = malloc((nshapes ? nshapes : 1) * sizeof *e);
		if (!e) {
			if (!C->nerr++)
				snprintf(C->err, C->errlen, "out of memory");
			LLVMBuildRet(C->b, v);
			return;
		}
		for (unsigned k = 0; k < nshapes; k++)
			e[k] = LLVMConstInt(C->i8, C->split[k], 0);
		LLVMSetInitializer(g, LLVMConstArray2(C->i8, e, nshapes));
		free(e);
		LLVMSetGlobalConstant(g, 1);
		LLVMSetLinkage(g, LLVMInternalLinkage);
		LLVMValueRef shape = cg_data_load(C, C->i32, C->t_shape, LLVMGetParam(f, 1), "shape");
		v = LLVMBuildZExt(C->b, cg_data_load(C, C->i8, g, shape, "split"), C->i32, "");
	}
	LLVMBuildRet(C->b, v);
}

static void cg_put(Cg *C, const char *put, MetricId m, LLVMValueRef idx, LLVMValueRef v)
{
	LLVMValueRef a[5] = {C->w, cg_u32(C, (unsigned)C->p->slot[m]), cg_s32(C, C->p->hist[m]), idx, v};
	if (idx)
		cg_call(C, put, a, 5);
	else {
		a[3] = v;
		cg_call(C, put, a, 4);
	}
}

static LLVMValueRef cg_job(Cg *C, unsigned j)
{
	const CgJob *J = &C->p->jobs[j];
	char name[32], fn[64];
	snprintf(name, sizeof name, "job_%u", j);
	LLVMValueRef f = cg_begin(C, name, &C->ptr, 1);
	Loop L;
	switch (J->kind) {
	case JOB_CPUS: {
		LLVMValueRef ids = cg_call(C, "km_cpu_ids", NULL, 0);
		LLVMValueRef a[3] = {C->w, ids};
		cg_call(C, "sn_cpus_set", a, 2);
		cg_lane_loop_start(C, &L, ids);
		a[1] = L.iv;
		a[2] = cg_call(C, "km_cpu_online", &L.iv, 1);
		cg_call(C, "sn_cpu_set_online", a, 3);
		cg_loop_end(C, &L);
		break;
	}
	case JOB_HOST:
		cat_metric_fn(J->metric, fn, sizeof fn);
		cg_put(C, "sn_put_host", J->metric, NULL, cg_call(C, fn, NULL, 0));
		break;
	case JOB_CPU: {
		cat_metric_fn(J->metric, fn, sizeof fn);
		LLVMValueRef ids = cg_call(C, "km_cpu_ids", NULL, 0);
		cg_lane_loop_start(C, &L, ids);
		cg_put(C, "sn_put_cpu", J->metric, L.iv, cg_call(C, fn, &L.iv, 1));
		cg_loop_end(C, &L);
		break;
	}
	case JOB_TASKS:
		/* one warp finds them; the runtime's phases then spread the
		 * rows over every thread, each running rules_task_row */
		cg_call(C, "sn_tasks_find", &C->w, 1);
		break;
	case JOB_OBJS: {
		/* the warp finds them; their rows follow (rules_obj_row) */
		LLVMValueRef a[2] = {C->w, cg_u32(C, (unsigned)J->obj)};
		cg_call(C, "sn_objs_find", a, 2);
		break;
	}
	}
	LLVMBuildRetVoid(C->b);
	return f;
}

/* Start the body of name(w[, u32, u32]) of nparams parameters, which the
 * runtime declared (or, in a module where it calls nothing by that name,
 * a new one); returns the function. */
static LLVMValueRef cg_rt_fn(Cg *C, const char *name, unsigned nparams)
{
	LLVMTypeRef pt[3] = {C->ptr, C->i32, C->i32};   /* w, then u32s */
	LLVMValueRef f = LLVMGetNamedFunction(C->m, name);
	if (!f)
		f = LLVMAddFunction(C->m, name, LLVMFunctionType(C->vd, pt, nparams, 0));
	LLVMGlobalClearMetadata(f);
	C->fn = f;
	C->w = LLVMGetParam(f, 0);
	LLVMPositionBuilderAtEnd(C->b, LLVMAppendBasicBlockInContext(C->ctx, f, "entry"));
	return f;
}

/* The same for name(w, row); returns row. */
static LLVMValueRef cg_row_fn(Cg *C, const char *name) { return LLVMGetParam(cg_rt_fn(C, name, 2), 1); }

/* rules_task_row(w, row): every task metric the rules read, for one row,
 * on one lane (empty without task rules). */
static void cg_task_row(Cg *C)
{
	LLVMValueRef row = cg_row_fn(C, "rules_task_row");
	char fn[64];
	bool any = false;
	for (unsigned j = 0; j < C->p->njobs; j++)
		any |= C->p->jobs[j].kind == JOB_TASKS;
	if (any) {
		LLVMValueRef pa[2] = {C->w, row};
		LLVMValueRef task = cg_call(C, "sn_task_ptr", pa, 2), sig = NULL;
		for (unsigned s = 0; s < C->p->ntask; s++) {
			MetricId m = C->p->task_m[s];
			cat_metric_fn(m, fn, sizeof fn);
			LLVMValueRef pa3[3] = {C->w, row, task}, v;
			if (m == MET_TASK_PID) {
				/* the PID: the scan's, where it walked the PID tree */
				v = cg_call(C, "sn_task_found_pid", pa3, 3);
			} else if (m == MET_TASK_KERNEL_TIME || m == MET_TASK_USER_TIME || m == MET_TASK_THREADS) {
				/* from the signal_struct the task's slot keeps */
				if (!sig)
					sig = cg_call(C, "sn_task_signal", pa3, 3);
				LLVMValueRef ts[2] = {task, sig};
				strncat(fn, "_sig", sizeof fn - strlen(fn) - 1);
				v = cg_call(C, fn, ts, 2);
			} else {
				v = cg_call(C, fn, &task, 1);
			}
			cg_put(C, "sn_put_task", m, row, v);
		}
		if (C->p->comm) {
			LLVMValueRef ca[2] = {task, cg_call(C, "sn_task_comm_buf", pa, 2)};
			cg_call(C, "km_task_comm", ca, 2);
		}
		LLVMValueRef da[2] = {C->w, row};
		cg_call(C, "rules_task_derive", da, 2);
	}
	LLVMBuildRetVoid(C->b);
}

/* rules_obj_row(w, kind, slot): every metric the rules read of one object
 * of a kind a job finds, for a warp (its reads are warp-collective: lanes
 * split the CPUs of a per-CPU counter).  Its counters, summed over CPUs
 * once (km_PREFIX_stats), into a block; then each metric from that block. */
static void cg_obj_row(Cg *C)
{
	LLVMValueRef f = cg_rt_fn(C, "rules_obj_row", 3);
	LLVMValueRef kind = LLVMGetParam(f, 1), slot = LLVMGetParam(f, 2);
	LLVMBasicBlockRef out = LLVMAppendBasicBlockInContext(C->ctx, f, "out");
	LLVMTypeRef vt = LLVMArrayType(C->dbl, CG_OBJ_COLS);
	LLVMValueRef blk = LLVMBuildAlloca(C->b, LLVMArrayType(C->i64, CG_OBJ_BLOCK), "blk");
	LLVMValueRef vals = LLVMBuildAlloca(C->b, vt, "vals");
	LLVMValueRef sw = LLVMBuildSwitch(C->b, kind, out, SN_OBJ_KINDS);
	bool done[SN_OBJ_KINDS] = {false};
	char fn[64];
	for (unsigned j = 0; j < C->p->njobs; j++) {
		const CgJob *J = &C->p->jobs[j];
		if (J->kind != JOB_OBJS || (unsigned)J->obj >= SN_OBJ_KINDS || done[J->obj])
			continue;
		done[J->obj] = true;
		LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(C->ctx, f, "kind");
		LLVMBasicBlockRef on_bb = LLVMAppendBasicBlockInContext(C->ctx, f, "present");
		LLVMAddCase(sw, cg_u32(C, (unsigned)J->obj), bb);
		LLVMPositionBuilderAtEnd(C->b, bb);
		LLVMValueRef a[4] = {C->w, cg_u32(C, (unsigned)J->obj), slot};
		LLVMValueRef on = cg_call(C, "sn_obj_on", a, 3);
		LLVMBuildCondBr(C->b, LLVMBuildICmp(C->b, LLVMIntNE, on, cg_s32(C, 0), ""), on_bb, out);
		LLVMPositionBuilderAtEnd(C->b, on_bb);
		LLVMValueRef key = cg_call(C, "sn_obj_key", a, 3);
		snprintf(fn, sizeof fn, "km_%s_stats", cat_entities[ENT_FIRST_OBJ + J->obj].prefix);
		LLVMValueRef ka[2] = {key, blk};
		cg_call(C, fn, ka, 2);
		for (unsigned i = 0; i < C->p->nobj[J->obj]; i++) {
			MetricId m = C->p->obj_m[J->obj][i];
			cat_metric_fn(m, fn, sizeof fn);
			LLVMValueRef idx[2] = {cg_u32(C, 0), cg_u32(C, (unsigned)C->p->slot[m])};
			LLVMBuildStore(C->b, cg_call(C, fn, ka, 2), LLVMBuildInBoundsGEP2(C->b, vt, vals, idx, 2, ""));
		}
		a[3] = vals;
		cg_call(C, "sn_put_objs", a, 4);
		LLVMBuildBr(C->b, out);
	}
	LLVMPositionBuilderAtEnd(C->b, out);
	LLVMBuildRetVoid(C->b);
}

/* rules_task_derive(w, row): each window the rules take over a task
 * metric (CgProg.twin), for one row, into task slot ntask + k. */
static void cg_task_derive(Cg *C)
{
	LLVMValueRef row = cg_row_fn(C, "rules_task_derive");
	C->deriving = true;
	for (unsigned k = 0; k < C->p->ntwin; k++) {
		Expr metric = {.kind = N_METRIC}, call = {.kind = N_CALL};
		metric.u.metric.id = C->p->twin[k].m;
		metric.u.metric.window = C->p->twin[k].window;
		metric.u.metric.wlen = 1;
		metric.u.metric.partial = C->p->twin[k].partial;
		call.u.call.id = C->p->twin[k].fn;
		call.a = &metric;
		Ent ent = {ENT_TASK, row};
		LLVMValueRef a[4] = {C->w, cg_u32(C, C->p->ntask + k), row, cg_window(C, &call, ent)};
		cg_call(C, "sn_set_task", a, 4);
	}
	C->deriving = false;
	LLVMBuildRetVoid(C->b);
}

/* f's body: switch (key) { case k: callees[k](w[, i]); }, k from 0 to n-1 */
static void cg_switch(Cg *C, LLVMValueRef f, LLVMValueRef key, LLVMValueRef *callees, unsigned n, bool pass_i)
{
	C->fn = f;
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(C->ctx, f, "entry");
	LLVMBasicBlockRef out = LLVMAppendBasicBlockInContext(C->ctx, f, "out");
	LLVMPositionBuilderAtEnd(C->b, entry);
	if (!key)
		key = LLVMGetParam(f, 1);
	LLVMValueRef sw = LLVMBuildSwitch(C->b, key, out, n);
	LLVMValueRef args[2] = {LLVMGetParam(f, 0), LLVMGetParam(f, 1)};
	for (unsigned k = 0; k < n; k++) {
		LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(C->ctx, f, "case");
		LLVMAddCase(sw, cg_u32(C, k), bb);
		LLVMPositionBuilderAtEnd(C->b, bb);
		LLVMBuildCall2(C->b, LLVMGlobalGetValueType(callees[k]), callees[k], args, pass_i ? 2 : 1, "");
		LLVMBuildBr(C->b, out);
	}
	LLVMPositionBuilderAtEnd(C->b, out);
	LLVMBuildRetVoid(C->b);
}

/* The key a dispatch function switches on: its second parameter, or for
 * rules_eval the shape of rule i (sn_rule_shape[i]); less first. */
static LLVMValueRef cg_key(Cg *C, LLVMValueRef f, bool shape, unsigned first)
{
	LLVMValueRef i = LLVMGetParam(f, 1);
	LLVMValueRef k = shape ? cg_data_load(C, C->i32, C->t_shape, i, "shape") : i;
	return first ? LLVMBuildSub(C->b, k, cg_u32(C, first), "k") : k;
}

/* name(w, i): fns[i](w), or with shape fns[sn_rule_shape[i]](w, i).  One
 * switch of n cases is one function of n call sites, which ptxas compiles
 * in time worse than linear (10,000 rules took 9 minutes to load); above
 * CG_FANOUT the switch is on the key / CG_FANOUT and calls one of the
 * functions dispatch_NAME_K (noinline, see comp_internalize), each a
 * switch of CG_FANOUT cases. */
static void cg_dispatch(Cg *C, const char *name, LLVMValueRef *fns, unsigned n, bool shape)
{
	LLVMTypeRef pt[2] = {C->ptr, C->i32};
	LLVMTypeRef ft = LLVMFunctionType(C->vd, pt, 2, 0);
	LLVMValueRef f = LLVMGetNamedFunction(C->m, name);
	if (!f)
		f = LLVMAddFunction(C->m, name, ft);
	LLVMGlobalClearMetadata(f);     /* the library's declaration carried debug info */
	unsigned nchunks = n <= CG_FANOUT ? 0 : (n + CG_FANOUT - 1) / CG_FANOUT;
	LLVMValueRef *chunks = nchunks ? malloc(nchunks * sizeof *chunks) : NULL;
	if (nchunks && !chunks) {
		if (!C->nerr++)
			snprintf(C->err, C->errlen, "out of memory");
		return;
	}
	for (unsigned c = 0; c < nchunks; c++) {
		char cname[96];
		snprintf(cname, sizeof cname, "dispatch_%s_%u", name, c);
		chunks[c] = LLVMAddFunction(C->m, cname, ft);
		LLVMSetLinkage(chunks[c], LLVMInternalLinkage);
		unsigned first = c * CG_FANOUT, cnt = n - first < CG_FANOUT ? n - first : CG_FANOUT;
		LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(C->ctx, chunks[c], "key");
		LLVMPositionBuilderAtEnd(C->b, entry);
		cg_switch(C, chunks[c], cg_key(C, chunks[c], shape, first), fns + first, cnt, shape);
		/* the key block falls into the switch's entry */
		LLVMPositionBuilderAtEnd(C->b, entry);
		LLVMBuildBr(C->b, LLVMGetNextBasicBlock(entry));
	}
	LLVMBasicBlockRef top = LLVMAppendBasicBlockInContext(C->ctx, f, "key");
	LLVMPositionBuilderAtEnd(C->b, top);
	LLVMValueRef key = cg_key(C, f, shape && !nchunks, 0);
	if (nchunks) {
		if (shape)
			key = cg_data_load(C, C->i32, C->t_shape, key, "shape");
		key = LLVMBuildUDiv(C->b, key, cg_u32(C, CG_FANOUT), "chunk");
	}
	cg_switch(C, f, key, nchunks ? chunks : fns, nchunks ? nchunks : n, nchunks || shape);
	LLVMPositionBuilderAtEnd(C->b, top);
	LLVMBuildBr(C->b, LLVMGetNextBasicBlock(top));
	free(chunks);
}

int cg_emit(LLVMModuleRef m, const CgProg *p, char *err, size_t n)
{
	Cg C = {.m = m, .ctx = LLVMGetModuleContext(m), .p = p, .err = err, .errlen = n};
	C.b = LLVMCreateBuilderInContext(C.ctx);
	C.dbl = LLVMDoubleTypeInContext(C.ctx);
	C.i32 = LLVMInt32TypeInContext(C.ctx);
	C.i64 = LLVMInt64TypeInContext(C.ctx);
	C.i8 = LLVMInt8TypeInContext(C.ctx);
	C.i1 = LLVMInt1TypeInContext(C.ctx);
	C.ptr = LLVMPointerTypeInContext(C.ctx, 0);
	C.vd = LLVMVoidTypeInContext(C.ctx);
	size_t nrules = p->rs ? p->rs->n : 0;
	LLVMValueRef *fns = malloc((nrules > p->njobs ? nrules : p->njobs) * sizeof *fns + 1);
	if (!fns) {
		LLVMDisposeBuilder(C.b);
		snprintf(err, n, "out of memory");
		return -ENOMEM;
	}
	for (unsigned j = 0; j < p->njobs && !C.nerr; j++)
		fns[j] = cg_job(&C, j);
	if (!C.nerr)
		cg_dispatch(&C, "rules_collect", fns, p->njobs, false);
	if (!C.nerr)
		cg_task_derive(&C);          /* first: rules_task_row calls it */
	if (!C.nerr)
		cg_task_row(&C);
	if (!C.nerr)
		cg_obj_row(&C);
	/* the rules: a function per shape, a row of data per rule */
	LLVMTypeRef dt[8] = {C.i64, C.i64, C.i32, C.i32, C.i32, C.i32, C.i32, C.i32};
	C.desc_t = LLVMStructTypeInContext(C.ctx, dt, 8, 0);
	if (!C.nerr && nrules)
		cg_tables(&C);
	C.split = calloc(p->shapes.n + 1, 1);
	if (!C.split && !C.nerr++)
		snprintf(err, n, "out of memory");
	for (unsigned s = 0; nrules && s < p->shapes.n && !C.nerr; s++)
		fns[s] = cg_rule(&C, s);
	if (!C.nerr)
		cg_dispatch(&C, "rules_eval", fns, nrules ? p->shapes.n : 0, nrules > 0);
	if (!C.nerr)
		cg_split_fn(&C, nrules ? p->shapes.n : 0, nrules > 0);
	free(C.split);
	free(fns);
	LLVMDisposeBuilder(C.b);
	return C.nerr ? -EINVAL : 0;
}
