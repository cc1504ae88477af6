/* llview.c - the LLView pass (see llview.h).
 *
 * Analysis first: a provenance class for every pointer the module loads
 * through (llv_class), with argument classes found by iterating over call
 * sites to a fixed point.  Rewrite second, function by function.
 */
#include "llview.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lattice: NONE (no information yet) < LOCAL, KERNEL < MIXED */
typedef enum { LV_NONE = 0, LV_LOCAL = 1, LV_KERNEL = 2, LV_MIXED = 3 } LvClass;

static LvClass lv_join(LvClass a, LvClass b) { return (LvClass)(a | b); }

/* A small map from LLVM values to classes (open addressing). */
typedef struct LvMap {
	LLVMValueRef *k;
	unsigned char *v;
	size_t cap, n;
} LvMap;

static size_t lv_hash(LLVMValueRef p, size_t cap)
{
	uintptr_t x = (uintptr_t)p;
	x ^= x >> 17;
	x *= 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 20) & (cap - 1);
}

static int lv_map_put(LvMap *m, LLVMValueRef k, int v)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		LLVMValueRef *nk = calloc(cap, sizeof *nk);
		unsigned char *nv = calloc(cap, 1);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->k[i])
				continue;
			size_t j = lv_hash(m->k[i], cap);
			while (nk[j])
				j = (j + 1) & (cap - 1);
			nk[j] = m->k[i];
			nv[j] = m->v[i];
		}
		free(m->k);
		free(m->v);
		m->k = nk;
		m->v = nv;
		m->cap = cap;
	}
	size_t j = lv_hash(k, m->cap);
	while (m->k[j] && m->k[j] != k)
		j = (j + 1) & (m->cap - 1);
	if (!m->k[j])
		m->n++;
	m->k[j] = k;
	m->v[j] = (unsigned char)v;
	return 0;
}

static int lv_map_get(const LvMap *m, LLVMValueRef k)
{
	if (!m->cap)
		return -1;
	for (size_t j = lv_hash(k, m->cap); m->k[j]; j = (j + 1) & (m->cap - 1))
		if (m->k[j] == k)
			return m->v[j];
	return -1;
}

static void lv_map_free(LvMap *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

typedef struct Lv {
	LLVMModuleRef m;
	LLVMContextRef ctx;
	LLVMBuilderRef b;
	LvMap memo;            /* instruction -> class */
	LvMap args;            /* argument -> class */
	LvMap stored;          /* root object -> class of the pointers stored into it */
	LLVMTypeRef i64, i32, i8, ptr, dbl;
	LLVMValueRef fn_load, fn_load16, fn_copy;
	LLVMTypeRef v2;           /* <2 x i64>: a 16-byte read (__llview_load16) */
	char *err;
	size_t errlen;
	int nerr;
	LvStats *st;
} Lv;


static void lv_error(Lv *L, LLVMValueRef at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void lv_error(Lv *L, LLVMValueRef at, const char *fmt, ...)
{
	if (L->nerr++)
		return;
	unsigned len = 0;
	const char *file = at && LLVMIsAInstruction(at) ? LLVMGetDebugLocFilename(at, &len) : NULL;
	size_t off = 0;
	if (file && len)
		off = (size_t)snprintf(L->err, L->errlen, "%.*s:%u:%u: ", (int)len, file, LLVMGetDebugLocLine(at),
				       LLVMGetDebugLocColumn(at));
	else if (at && LLVMIsAInstruction(at)) {
		size_t fl;
		const char *fn = LLVMGetValueName2(LLVMGetBasicBlockParent(LLVMGetInstructionParent(at)), &fl);
		off = (size_t)snprintf(L->err, L->errlen, "in %.*s: ", (int)fl, fn);
	}
	if (off >= L->errlen)
		return;
	off += (size_t)snprintf(L->err + off, L->errlen - off, "error: LLView: ");
	if (off >= L->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(L->err + off, L->errlen - off, fmt, ap);
	va_end(ap);
}

static const char *lv_name(LLVMValueRef v)
{
	size_t len;
	const char *n = LLVMGetValueName2(v, &len);
	return n ? n : "";
}

static bool lv_runtime(LLVMValueRef fn)
{
	const char *n = lv_name(fn);
	return !strncmp(n, "kx_", 3) || !strncmp(n, "__llview_", 9) || !strncmp(n, "simt_", 5) ||
	       !strncmp(n, "sn_", 3) || !strncmp(n, "llvm.", 5);
}

static LLVMValueRef lv_callee(LLVMValueRef call)
{
	LLVMValueRef f = LLVMGetCalledValue(call);
	return f && LLVMIsAFunction(f) ? f : NULL;
}

/* The object a pointer is derived from: strip address arithmetic. */
static LLVMValueRef lv_root(LLVMValueRef v)
{
	for (int guard = 0; guard < 64 && v; guard++) {
		if (LLVMIsAGetElementPtrInst(v) || LLVMIsABitCastInst(v) || LLVMIsAAddrSpaceCastInst(v) ||
		    LLVMIsAFreezeInst(v))
			v = LLVMGetOperand(v, 0);
		else if (LLVMIsAConstantExpr(v) &&
			 (LLVMGetConstOpcode(v) == LLVMGetElementPtr || LLVMGetConstOpcode(v) == LLVMBitCast ||
			  LLVMGetConstOpcode(v) == LLVMAddrSpaceCast))
			v = LLVMGetOperand(v, 0);
		else
			break;
	}
	return v;
}

/* The class of v as far as the analysis has got: instructions and
 * arguments from the maps, constants and globals directly. */
static LvClass lv_class(Lv *L, LLVMValueRef v)
{
	for (int guard = 0; guard < 64; guard++) {
		if (LLVMIsAInstruction(v)) {
			int c = lv_map_get(&L->memo, v);
			return c < 0 ? LV_NONE : (LvClass)c;
		}
		if (LLVMIsAArgument(v)) {
			int c = lv_map_get(&L->args, v);
			return c < 0 ? LV_NONE : (LvClass)c;
		}
		if (LLVMIsAGlobalVariable(v))
			return LLVMIsDeclaration(v) ? LV_KERNEL : LV_LOCAL;
		if (LLVMIsAConstantExpr(v)) {
			switch (LLVMGetConstOpcode(v)) {
			case LLVMIntToPtr: return LV_KERNEL;
			case LLVMGetElementPtr: case LLVMBitCast: case LLVMAddrSpaceCast:
				v = LLVMGetOperand(v, 0);
				continue;
			default: return LV_MIXED;
			}
		}
		if (LLVMIsAFunction(v) || LLVMIsAConstantPointerNull(v) || LLVMIsAUndefValue(v) || LLVMIsAPoisonValue(v))
			return LV_LOCAL;
		return LV_MIXED;
	}
	return LV_MIXED;
}

/* What an instruction producing a pointer points to, given its inputs. */
static LvClass lv_transfer(Lv *L, LLVMValueRef v)
{
	if (LLVMIsAAllocaInst(v))
		return LV_LOCAL;
	if (LLVMIsAIntToPtrInst(v))
		return LV_KERNEL;
	if (LLVMIsAGetElementPtrInst(v) || LLVMIsABitCastInst(v) || LLVMIsAAddrSpaceCastInst(v) || LLVMIsAFreezeInst(v))
		return lv_class(L, LLVMGetOperand(v, 0));
	if (LLVMIsAPHINode(v)) {
		LvClass c = LV_NONE;
		for (unsigned i = 0; i < LLVMCountIncoming(v); i++)
			c = lv_join(c, lv_class(L, LLVMGetIncomingValue(v, i)));
		return c;
	}
	if (LLVMIsASelectInst(v))
		return lv_join(lv_class(L, LLVMGetOperand(v, 1)), lv_class(L, LLVMGetOperand(v, 2)));
	if (LLVMIsALoadInst(v)) {
		/* a pointer read out of kernel memory points into the kernel; one
		 * read out of our memory is whatever was stored there */
		LLVMValueRef p = LLVMGetOperand(v, 0);
		LvClass from = lv_class(L, p);
		if (from == LV_NONE)
			return LV_NONE;
		if (from & LV_KERNEL)
			return from == LV_KERNEL ? LV_KERNEL : LV_MIXED;
		int c = lv_map_get(&L->stored, lv_root(p));
		return c < 0 ? LV_LOCAL : (LvClass)c;
	}
	if (LLVMIsACallInst(v)) {
		LLVMValueRef f = lv_callee(v);
		const char *n = f ? lv_name(f) : "";
		if (!strncmp(n, "llvm.ptrmask", 12) || !strncmp(n, "llvm.launder", 12) || !strncmp(n, "llvm.strip", 10))
			return lv_class(L, LLVMGetOperand(v, 0));
		if (f && !LLVMIsDeclaration(f) && !lv_runtime(f)) {
			LvClass c = LV_NONE;
			for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
				LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
				if (t && LLVMIsAReturnInst(t) && LLVMGetNumOperands(t) == 1)
					c = lv_join(c, lv_class(L, LLVMGetOperand(t, 0)));
			}
			return c;
		}
		if (f && lv_runtime(f))
			return LV_LOCAL;      /* the runtime hands out the engine's own memory */
		return LV_MIXED;      /* a pointer from outside the module: cannot tell */
	}
	return LV_MIXED;
}

static bool lv_is_ptr(LLVMValueRef v) { return LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMPointerTypeKind; }

static bool lv_mem_intrinsic(LLVMValueRef call, const char *what)
{
	LLVMValueRef f = lv_callee(call);
	return f && !strncmp(lv_name(f), what, strlen(what));
}

/* Raise map entry k to at least c; true if it changed. */
static bool lv_raise(LvMap *m, LLVMValueRef k, LvClass c, int *err)
{
	int old = lv_map_get(m, k);
	LvClass n = lv_join(old < 0 ? LV_NONE : (LvClass)old, c);
	if (old == (int)n)
		return false;
	if (lv_map_put(m, k, n))
		*err = -ENOMEM;
	return true;
}

/* A monotone fixed point over every pointer the module computes, the
 * arguments of its functions and what is stored in its own memory: classes
 * only ever rise in the lattice, so the iteration ends. */
static int lv_analyse(Lv *L)
{
	int err = 0;
	/* functions nobody in the module calls directly are entry points: the
	 * engine (or LLView's own tests) pass them local memory */
	for (LLVMValueRef f = LLVMGetFirstFunction(L->m); f; f = LLVMGetNextFunction(f)) {
		if (LLVMIsDeclaration(f) || lv_runtime(f))
			continue;
		bool called = false;
		for (LLVMUseRef u = LLVMGetFirstUse(f); u && !called; u = LLVMGetNextUse(u)) {
			LLVMValueRef user = LLVMGetUser(u);
			called = LLVMIsACallInst(user) && lv_callee(user) == f;
		}
		if (!called || LLVMGetLinkage(f) == LLVMExternalLinkage)
			for (LLVMValueRef a = LLVMGetFirstParam(f); a; a = LLVMGetNextParam(a))
				if (lv_is_ptr(a))
					lv_raise(&L->args, a, LV_LOCAL, &err);
	}
	for (int round = 0; round < 1000 && !err; round++) {
		bool changed = false;
		for (LLVMValueRef f = LLVMGetFirstFunction(L->m); f; f = LLVMGetNextFunction(f)) {
			if (LLVMIsDeclaration(f) || lv_runtime(f))
				continue;
			for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
				for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
					if (lv_is_ptr(i))
						changed |= lv_raise(&L->memo, i, lv_transfer(L, i), &err);
					if (LLVMIsAStoreInst(i) && lv_is_ptr(LLVMGetOperand(i, 0))) {
						LLVMValueRef dst = LLVMGetOperand(i, 1);
						if (lv_class(L, dst) == LV_LOCAL)
							changed |= lv_raise(&L->stored, lv_root(dst),
									    lv_class(L, LLVMGetOperand(i, 0)), &err);
					}
					LLVMValueRef callee = LLVMIsACallInst(i) ? lv_callee(i) : NULL;
					if (!callee || LLVMIsDeclaration(callee) || lv_runtime(callee))
						continue;
					unsigned k = 0;
					for (LLVMValueRef a = LLVMGetFirstParam(callee); a; a = LLVMGetNextParam(a), k++)
						if (lv_is_ptr(a) && k < LLVMGetNumArgOperands(i))
							changed |= lv_raise(&L->args, a, lv_class(L, LLVMGetOperand(i, k)), &err);
				}
			}
		}
		if (!changed)
			return err;
	}
	return err ? err : -ELOOP;
}

/* ---- the rewrite ------------------------------------------------------------------ */

static LLVMValueRef lv_err_slot(Lv *L, LLVMValueRef fn, LLVMValueRef *slot)
{
	if (*slot)
		return *slot;
	LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
	LLVMValueRef first = LLVMGetFirstInstruction(entry);
	LLVMPositionBuilderBefore(L->b, first);
	*slot = LLVMBuildAlloca(L->b, L->i32, "llview.err");
	LLVMBuildStore(L->b, LLVMConstInt(L->i32, 0, 0), *slot);
	return *slot;
}

/* A 16-byte load of two words, <2 x i64> (kmetric_int.h, km_pair: two
 * adjacent fields in one request): __llview_load16, the vector back. */
static void lv_load16(Lv *L, LLVMValueRef fn, LLVMValueRef ld, LLVMValueRef *slot)
{
	LLVMValueRef err = lv_err_slot(L, fn, slot);
	LLVMPositionBuilderBefore(L->b, ld);
	LLVMValueRef args[2] = {LLVMBuildPtrToInt(L->b, LLVMGetOperand(ld, 0), L->i64, "llview.va"), err};
	LLVMValueRef v = LLVMBuildCall2(L->b, LLVMGlobalGetValueType(L->fn_load16), L->fn_load16, args, 2, "llview.raw");
	LLVMReplaceAllUsesWith(ld, v);
	LLVMInstructionEraseFromParent(ld);
	L->st->loads_kernel++;
}

static void lv_load(Lv *L, LLVMValueRef fn, LLVMValueRef ld, LLVMValueRef *slot)
{
	LLVMTypeRef t = LLVMTypeOf(ld);
	LLVMTypeKind k = LLVMGetTypeKind(t);
	unsigned size;
	switch (k) {
	case LLVMIntegerTypeKind: size = LLVMGetIntTypeWidth(t) / 8; break;
	case LLVMPointerTypeKind: size = 8; break;
	case LLVMDoubleTypeKind: size = 8; break;
	case LLVMFloatTypeKind: size = 4; break;
	default:
		if (t == L->v2) {
			lv_load16(L, fn, ld, slot);
			return;
		}
		lv_error(L, ld, "a load of an aggregate or vector from kernel memory; read its fields one by one "
			 "(or two adjacent words as <2 x i64>: km_pair)");
		return;
	}
	if (size == 0 || size > 8 || (size & (size - 1))) {
		lv_error(L, ld, "a %u-byte load from kernel memory; read 1, 2, 4 or 8 bytes at a time", size);
		return;
	}
	LLVMValueRef err = lv_err_slot(L, fn, slot);
	LLVMPositionBuilderBefore(L->b, ld);
	LLVMValueRef va = LLVMBuildPtrToInt(L->b, LLVMGetOperand(ld, 0), L->i64, "llview.va");
	LLVMValueRef args[3] = {va, LLVMConstInt(L->i32, size, 0), err};
	LLVMValueRef raw = LLVMBuildCall2(L->b, LLVMGlobalGetValueType(L->fn_load), L->fn_load, args, 3, "llview.raw");
	LLVMValueRef v;
	if (k == LLVMPointerTypeKind) {
		v = LLVMBuildIntToPtr(L->b, raw, t, "");
		/* its users were classified through the load it replaces */
		int c = lv_map_get(&L->memo, ld);
		lv_map_put(&L->memo, v, c < 0 ? LV_KERNEL : c);
	}
	else if (k == LLVMIntegerTypeKind)
		v = size == 8 ? raw : LLVMBuildTrunc(L->b, raw, t, "");
	else if (k == LLVMDoubleTypeKind)
		v = LLVMBuildBitCast(L->b, raw, t, "");
	else
		v = LLVMBuildBitCast(L->b, LLVMBuildTrunc(L->b, raw, L->i32, ""), t, "");
	LLVMReplaceAllUsesWith(ld, v);
	LLVMInstructionEraseFromParent(ld);
	L->st->loads_kernel++;
}

static void lv_copy(Lv *L, LLVMValueRef fn, LLVMValueRef call, LLVMValueRef *slot)
{
	LLVMValueRef err = lv_err_slot(L, fn, slot);
	LLVMPositionBuilderBefore(L->b, call);
	LLVMValueRef len = LLVMGetOperand(call, 2);
	if (LLVMGetIntTypeWidth(LLVMTypeOf(len)) != 64)
		len = LLVMBuildZExt(L->b, len, L->i64, "");
	LLVMValueRef args[4] = {LLVMGetOperand(call, 0), LLVMBuildPtrToInt(L->b, LLVMGetOperand(call, 1), L->i64, ""),
				len, err};
	LLVMBuildCall2(L->b, LLVMGlobalGetValueType(L->fn_copy), L->fn_copy, args, 4, "");
	LLVMInstructionEraseFromParent(call);
	L->st->copies_kernel++;
}

/* A km_ entry point reports its read errors through its return value. */
static void lv_returns(Lv *L, LLVMValueRef fn, LLVMValueRef slot)
{
	LLVMTypeRef rt = LLVMGetReturnType(LLVMGlobalGetValueType(fn));
	LLVMTypeKind k = LLVMGetTypeKind(rt);
	bool dbl = k == LLVMDoubleTypeKind, i32 = k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(rt) == 32;
	if (strncmp(lv_name(fn), "km_", 3) || (!dbl && !i32))
		return;
	/* attributes inferred before the rewrite no longer hold */
	static const char *const drop[] = {"range", "nofpclass", "noundef"};
	for (size_t i = 0; i < sizeof drop / sizeof *drop; i++)
		LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeReturnIndex,
					       LLVMGetEnumAttributeKindForName(drop[i], strlen(drop[i])));
	for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
		LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
		if (!t || !LLVMIsAReturnInst(t) || LLVMGetNumOperands(t) != 1)
			continue;
		LLVMPositionBuilderBefore(L->b, t);
		LLVMValueRef e = LLVMBuildLoad2(L->b, L->i32, slot, "llview.e");
		LLVMValueRef failed = LLVMBuildICmp(L->b, LLVMIntNE, e, LLVMConstInt(L->i32, 0, 0), "");
		LLVMValueRef bad = dbl ? LLVMConstRealOfStringAndSize(rt, "nan", 3) : e;
		LLVMValueRef v = LLVMBuildSelect(L->b, failed, bad, LLVMGetOperand(t, 0), "llview.ret");
		LLVMSetOperand(t, 0, v);
	}
}

static void lv_function(Lv *L, LLVMValueRef fn)
{
	LLVMValueRef slot = NULL;
	unsigned before = L->st->loads_kernel + L->st->copies_kernel;
	bool uses_failed = false;
	for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
		LLVMValueRef i = LLVMGetFirstInstruction(bb);
		while (i && !L->nerr) {
			LLVMValueRef next = LLVMGetNextInstruction(i);
			if (LLVMIsALoadInst(i)) {
				LvClass c = lv_class(L, LLVMGetOperand(i, 0));
				if (c == LV_KERNEL)
					lv_load(L, fn, i, &slot);
				else if (c == LV_MIXED)
					lv_error(L, i, "this load may read kernel memory or the detector's own; "
						 "keep kernel and local pointers apart");
				else
					L->st->loads_local++;
			} else if (LLVMIsAStoreInst(i) || LLVMIsAAtomicRMWInst(i) || LLVMIsAAtomicCmpXchgInst(i)) {
				LvClass c = lv_class(L, LLVMGetOperand(i, LLVMIsAStoreInst(i) ? 1 : 0));
				if (c & LV_KERNEL)
					lv_error(L, i, "a write to kernel memory; the detector only reads the kernel");
			} else if (LLVMIsACallInst(i)) {
				LLVMValueRef f = lv_callee(i);
				if (lv_mem_intrinsic(i, "llvm.memcpy") || lv_mem_intrinsic(i, "llvm.memmove")) {
					if (lv_class(L, LLVMGetOperand(i, 0)) & LV_KERNEL)
						lv_error(L, i, "a copy into kernel memory; the detector only reads the kernel");
					else if (lv_class(L, LLVMGetOperand(i, 1)) & LV_KERNEL)
						lv_copy(L, fn, i, &slot);
				} else if (lv_mem_intrinsic(i, "llvm.memset")) {
					if (lv_class(L, LLVMGetOperand(i, 0)) & LV_KERNEL)
						lv_error(L, i, "a memset of kernel memory; the detector only reads the kernel");
				} else if (f && !strcmp(lv_name(f), "__llview_failed")) {
					uses_failed = true;
				} else if (f && (LLVMIsDeclaration(f) || lv_runtime(f))) {
					/* a kernel pointer must not escape into code LLView does not see */
					unsigned n = LLVMGetNumArgOperands(i);
					for (unsigned k = 0; k < n; k++) {
						LLVMValueRef a = LLVMGetOperand(i, k);
						if (lv_is_ptr(a) && (lv_class(L, a) & LV_KERNEL) && strncmp(lv_name(f), "llvm.", 5))
							lv_error(L, i, "a kernel pointer passed to %s, which LLView does not rewrite",
								 lv_name(f));
					}
				}
			}
			i = next;
		}
	}
	if (L->nerr)
		return;
	bool rewrote = L->st->loads_kernel + L->st->copies_kernel > before;
	if (!rewrote && !uses_failed)
		return;
	if (rewrote)
		L->st->functions++;
	lv_err_slot(L, fn, &slot);
	/* __llview_failed() reads this function's flag */
	for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
		LLVMValueRef i = LLVMGetFirstInstruction(bb);
		while (i) {
			LLVMValueRef next = LLVMGetNextInstruction(i);
			LLVMValueRef f = LLVMIsACallInst(i) ? lv_callee(i) : NULL;
			if (f && !strcmp(lv_name(f), "__llview_failed")) {
				LLVMPositionBuilderBefore(L->b, i);
				LLVMValueRef e = LLVMBuildLoad2(L->b, L->i32, slot, "");
				LLVMValueRef v = LLVMBuildZExt(L->b, LLVMBuildICmp(L->b, LLVMIntNE, e, LLVMConstInt(L->i32, 0, 0), ""),
							       LLVMTypeOf(i), "llview.failed");
				LLVMReplaceAllUsesWith(i, v);
				LLVMInstructionEraseFromParent(i);
			}
			i = next;
		}
	}
	if (strncmp(lv_name(fn), "km_", 3) && rewrote && LLVMGetLinkage(fn) != LLVMExternalLinkage)
		lv_error(L, LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(fn)),
			 "%s reads kernel memory but is not a km_ entry point: its read errors would be lost; "
			 "make it static inline", lv_name(fn));
	lv_returns(L, fn, slot);
	/* it now calls the runtime, which reads memory and writes the flag */
	LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMGetEnumAttributeKindForName("memory", 6));
}

static LLVMValueRef lv_declare(Lv *L, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, unsigned n)
{
	LLVMValueRef f = LLVMGetNamedFunction(L->m, name);
	if (!f)
		f = LLVMAddFunction(L->m, name, LLVMFunctionType(ret, params, n, 0));
	return f;
}

int lv_rewrite(LLVMModuleRef m, LvStats *st, char *err, size_t n)
{
	LvStats none;
	Lv L = {.m = m, .ctx = LLVMGetModuleContext(m), .err = err, .errlen = n, .st = st ? st : &none};
	memset(L.st, 0, sizeof *L.st);
	L.b = LLVMCreateBuilderInContext(L.ctx);
	L.i64 = LLVMInt64TypeInContext(L.ctx);
	L.i32 = LLVMInt32TypeInContext(L.ctx);
	L.i8 = LLVMInt8TypeInContext(L.ctx);
	L.dbl = LLVMDoubleTypeInContext(L.ctx);
	L.ptr = LLVMPointerTypeInContext(L.ctx, 0);
	LLVMTypeRef lp[3] = {L.i64, L.i32, L.ptr}, cp[4] = {L.ptr, L.i64, L.i64, L.ptr};
	L.fn_load = lv_declare(&L, "__llview_load", L.i64, lp, 3);
	L.v2 = LLVMVectorType(L.i64, 2);
	LLVMTypeRef lp16[2] = {L.i64, L.ptr};
	L.fn_load16 = lv_declare(&L, "__llview_load16", L.v2, lp16, 2);
	L.fn_copy = lv_declare(&L, "__llview_copy", LLVMVoidTypeInContext(L.ctx), cp, 4);
	int e = lv_analyse(&L);
	if (e) {
		snprintf(err, n, "LLView: the pointer analysis did not settle (%s)", e == -ENOMEM ? "out of memory" : "a cycle");
	} else {
		for (LLVMValueRef f = LLVMGetFirstFunction(m); f && !L.nerr; f = LLVMGetNextFunction(f))
			if (!LLVMIsDeclaration(f) && !lv_runtime(f))
				lv_function(&L, f);
		if (L.nerr)
			e = -EINVAL;
	}
	lv_map_free(&L.memo);
	lv_map_free(&L.args);
	lv_map_free(&L.stored);
	LLVMDisposeBuilder(L.b);
	return e;
}
