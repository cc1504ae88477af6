/* core.c - CO-RE relocation of the metric library (see core.h).
 *
 * Compute, then patch: this pass only records *what* each access needs
 * (struct task_struct's field `stime`, the address of `init_task`) and
 * rewrites it into a load of that relocation's table slot; the loader
 * decides the values against the target kernel.
 *
 * Reading clang's debug-info metadata through the C API: DIType nodes are
 * MDNodes whose operands are, in LLVM 19: 0 file, 1 scope, 2 name, 3 base
 * type, 4 elements (composites) -- DebugInfoMetadata.h's getRaw*() order.
 */
#include "core.h"
#include "kx.h"

#include <llvm-c/DebugInfo.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DW_TAG_array_type 0x01
#define DW_TAG_enumeration_type 0x04
#define DW_TAG_member 0x0d
#define DW_TAG_pointer_type 0x0f
#define DW_TAG_structure_type 0x13
#define DW_TAG_typedef 0x16
#define DW_TAG_union_type 0x17
#define DW_TAG_base_type 0x24
#define DW_TAG_const_type 0x26
#define DW_TAG_volatile_type 0x35
#define DW_TAG_atomic_type 0x47

/* ---- the pass's context ----------------------------------------------------- */

typedef struct Core {
	LLVMModuleRef m;
	LLVMContextRef ctx;
	LLVMBuilderRef b;
	ReloSet *r;
	LLVMValueRef table;          /* __sentinel_relo, a [0 x i64] placeholder until core_finish */
	LLVMValueRef cur;            /* GPU code: __sentinel_cur, the block's target (kx.h); NULL on the host */
	LLVMTypeRef i64, i8, ptr;
	unsigned md_access, md_invariant;
	char *err;
	size_t errlen;
	int nerr;
	/* relocations used, per function: pairs (function, index) */
	struct { LLVMValueRef fn; uint32_t idx; } *uses;
	size_t nuses, capuses;
} Core;

static void core_error(Core *C, LLVMValueRef at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void core_error(Core *C, LLVMValueRef at, const char *fmt, ...)
{
	if (C->nerr++)
		return;                     /* the first error is the one to fix */
	unsigned len = 0;
	const char *file = at ? LLVMGetDebugLocFilename(at, &len) : NULL;
	size_t off = 0;
	if (file && len)
		off = (size_t)snprintf(C->err, C->errlen, "%.*s:%u:%u: ", (int)len, file, LLVMGetDebugLocLine(at),
				       LLVMGetDebugLocColumn(at));
	if (off >= C->errlen)
		return;
	off += (size_t)snprintf(C->err + off, C->errlen - off, "error: CO-RE: ");
	if (off >= C->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(C->err + off, C->errlen - off, fmt, ap);
	va_end(ap);
}

static void core_note_use(Core *C, LLVMValueRef inst, long idx)
{
	if (idx < 0)
		return;
	LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInstructionParent(inst));
	if (C->nuses == C->capuses) {
		size_t cap = C->capuses ? C->capuses * 2 : 256;
		void *v = realloc(C->uses, cap * sizeof *C->uses);
		if (!v)
			return;
		C->uses = v;
		C->capuses = cap;
	}
	C->uses[C->nuses].fn = fn;
	C->uses[C->nuses].idx = (uint32_t)idx;
	C->nuses++;
}

/* The value of relocation idx, loaded before `before`. */
static LLVMValueRef core_load(Core *C, LLVMValueRef before, long idx)
{
	LLVMPositionBuilderBefore(C->b, before);
	LLVMValueRef k = LLVMConstInt(C->i64, (unsigned long long)idx, 0);
	LLVMValueRef base = C->table;
	if (C->cur) {                /* the table of the target this block reads now */
		LLVMValueRef f = LLVMBuildStructGEP2(C->b, LLVMGlobalGetValueType(C->cur), C->cur, 1, "cur.relo.p");
		base = LLVMBuildLoad2(C->b, C->ptr, f, "cur.relo");
	}
	LLVMValueRef p = LLVMBuildInBoundsGEP2(C->b, C->i64, base, &k, 1, "relo.slot");
	LLVMValueRef v = LLVMBuildLoad2(C->b, C->i64, p, "relo");
	LLVMSetMetadata(v, C->md_invariant, LLVMMetadataAsValue(C->ctx, LLVMMDNodeInContext2(C->ctx, NULL, 0)));
	core_note_use(C, before, idx);
	return v;
}

/* ---- debug-info metadata ------------------------------------------------------ */

static LLVMValueRef md_op(Core *C, LLVMValueRef md, unsigned i)
{
	if (!md || LLVMGetValueKind(md) != LLVMMetadataAsValueValueKind)
		return NULL;
	unsigned n = LLVMGetMDNodeNumOperands(md);
	if (i >= n)
		return NULL;
	LLVMValueRef ops[16];
	LLVMValueRef *v = n <= 16 ? ops : malloc(n * sizeof *v);
	if (!v)
		return NULL;
	LLVMGetMDNodeOperands(md, v);
	LLVMValueRef r = v[i];
	if (v != ops)
		free(v);
	(void)C;
	return r;
}

static unsigned md_tag(LLVMValueRef md)
{
	return md ? LLVMGetDINodeTag(LLVMValueAsMetadata(md)) : 0;
}

static const char *md_name(LLVMValueRef md, size_t *len)
{
	*len = 0;
	const char *s = md ? LLVMDITypeGetName(LLVMValueAsMetadata(md), len) : NULL;
	return s ? s : "";
}

static uint64_t md_bits(LLVMValueRef md) { return md ? LLVMDITypeGetSizeInBits(LLVMValueAsMetadata(md)) : 0; }

/* Strip typedefs and qualifiers down to the type itself; *named receives
 * the nearest name on the way (an anonymous struct named by a typedef). */
static LLVMValueRef md_strip(Core *C, LLVMValueRef t, LLVMValueRef *named)
{
	if (named)
		*named = NULL;
	for (int guard = 0; t && guard < 32; guard++) {
		unsigned tag = md_tag(t);
		size_t len;
		md_name(t, &len);
		if (named && !*named && len)
			*named = t;
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
		    tag != DW_TAG_atomic_type)
			return t;
		t = md_op(C, t, 3);          /* base type */
	}
	return t;
}

/* A struct's name as the kernel spells it: `task_struct___pre514` is a
 * local flavour of task_struct. */
static void core_name(char *out, size_t n, const char *s, size_t len)
{
	snprintf(out, n, "%.*s", (int)len, s);
}

/* ---- the rewrites ------------------------------------------------------------------ */

static bool core_is_call_to(LLVMValueRef inst, const char *prefix, LLVMValueRef *callee)
{
	if (!LLVMIsACallInst(inst))
		return false;
	LLVMValueRef f = LLVMGetCalledValue(inst);
	if (!f || !LLVMIsAFunction(f))
		return false;
	size_t len;
	const char *name = LLVMGetValueName2(f, &len);
	if (callee)
		*callee = f;
	return len >= strlen(prefix) && !strncmp(name, prefix, strlen(prefix));
}

/* llvm.preserve.struct.access.index(base, gep_index, di_index) */
static void core_struct_access(Core *C, LLVMValueRef call)
{
	LLVMValueRef base = LLVMGetOperand(call, 0);
	unsigned di = (unsigned)LLVMConstIntGetZExtValue(LLVMGetOperand(call, 2));
	LLVMValueRef named, t = md_strip(C, LLVMGetMetadata(call, C->md_access), &named);
	unsigned tag = md_tag(t);
	if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type) {
		core_error(C, call, "a field access on something that is not a struct or union");
		return;
	}
	size_t nlen;
	const char *sname = md_name(named, &nlen);
	if (!nlen) {
		core_error(C, call, "an access through an anonymous struct or union; declare the fields of "
			   "kernel structs flat in kcore.h (BTF finds them through anonymous members)");
		return;
	}
	LLVMValueRef elems = md_op(C, t, 4);
	LLVMValueRef member = elems ? md_op(C, elems, di) : NULL;
	size_t flen;
	const char *fname = md_name(member, &flen);
	if (!member || !flen) {
		core_error(C, call, "an access through an anonymous struct or union member of %.*s; declare the "
			   "fields of kernel structs flat in kcore.h (BTF finds them through anonymous members)",
			   (int)nlen, sname);
		return;
	}
	char s[128], f[128];
	core_name(s, sizeof s, sname, nlen);
	core_name(f, sizeof f, fname, flen);
	/* the size check applies to scalars: an int read where the kernel has a long */
	LLVMValueRef mt = md_strip(C, md_op(C, member, 3), NULL);
	unsigned mtag = md_tag(mt);
	uint32_t bits = (mtag == DW_TAG_base_type || mtag == DW_TAG_pointer_type || mtag == DW_TAG_enumeration_type)
				? (uint32_t)md_bits(member) : 0;
	long idx = relo_intern(C->r, RELO_FIELD, s, f, bits, false);
	LLVMValueRef off = core_load(C, call, idx);
	LLVMValueRef p = LLVMBuildGEP2(C->b, C->i8, base, &off, 1, "core.field");
	LLVMReplaceAllUsesWith(call, p);
	LLVMInstructionEraseFromParent(call);
}

/* llvm.preserve.array.access.index(base, dim, index): constant index */
static void core_array_access(Core *C, LLVMValueRef call)
{
	LLVMValueRef base = LLVMGetOperand(call, 0);
	unsigned dim = (unsigned)LLVMConstIntGetZExtValue(LLVMGetOperand(call, 1));
	uint64_t index = LLVMConstIntGetZExtValue(LLVMGetOperand(call, 2));
	LLVMValueRef t = md_strip(C, LLVMGetMetadata(call, C->md_access), NULL);
	if (md_tag(t) != DW_TAG_array_type) {
		core_error(C, call, "an array access on something that is not an array");
		return;
	}
	LLVMValueRef subs = md_op(C, t, 4);
	if (dim != 1 || (subs && LLVMGetMDNodeNumOperands(subs) != 1)) {
		core_error(C, call, "multi-dimensional kernel arrays are not supported");
		return;
	}
	LLVMValueRef named, et = md_strip(C, md_op(C, t, 3), &named);
	unsigned etag = md_tag(et);
	LLVMValueRef off;
	if (etag == DW_TAG_structure_type || etag == DW_TAG_union_type) {
		size_t nlen;
		const char *n = md_name(named, &nlen);
		char s[128];
		core_name(s, sizeof s, n, nlen);
		if (!nlen) {
			core_error(C, call, "an array of anonymous structs");
			return;
		}
		long idx = relo_intern(C->r, RELO_SIZE, s, "", 0, false);
		LLVMValueRef sz = core_load(C, call, idx);
		off = LLVMBuildMul(C->b, sz, LLVMConstInt(C->i64, index, 0), "core.elem");
	} else {
		LLVMPositionBuilderBefore(C->b, call);
		off = LLVMConstInt(C->i64, index * (md_bits(et) / 8), 0);
	}
	LLVMValueRef p = LLVMBuildGEP2(C->b, C->i8, base, &off, 1, "core.index");
	LLVMReplaceAllUsesWith(call, p);
	LLVMInstructionEraseFromParent(call);
}

/* A variable index into an array of structs uses the *local* struct size,
 * which is not the kernel's: refuse it (use KSIZEOF). */
static bool core_unstable_struct(LLVMTypeRef t, const char **name)
{
	if (LLVMGetTypeKind(t) != LLVMStructTypeKind)
		return false;
	const char *sn = LLVMGetStructName(t);
	*name = sn ? sn : "structs";
	/* atomic_t, atomic_long_t, list_head: the kernel's layout is ours */
	return !(sn && (strstr(sn, "atomic") || strstr(sn, "list_head")));
}

static void core_check_gep(Core *C, LLVMValueRef gep)
{
	LLVMTypeRef cur = LLVMGetGEPSourceElementType(gep);
	unsigned n = (unsigned)LLVMGetNumOperands(gep);
	const char *sn = NULL;
	bool bad = n > 1 && !LLVMIsAConstantInt(LLVMGetOperand(gep, 1)) && core_unstable_struct(cur, &sn);
	for (unsigned i = 2; i < n && cur && !bad; i++) {
		LLVMValueRef ix = LLVMGetOperand(gep, i);
		if (LLVMGetTypeKind(cur) == LLVMArrayTypeKind) {
			cur = LLVMGetElementType(cur);
			bad = !LLVMIsAConstantInt(ix) && core_unstable_struct(cur, &sn);
		} else if (LLVMGetTypeKind(cur) == LLVMStructTypeKind && LLVMIsAConstantInt(ix)) {
			cur = LLVMStructGetTypeAtIndex(cur, (unsigned)LLVMConstIntGetZExtValue(ix));
		} else {
			cur = NULL;
		}
	}
	if (bad)
		core_error(C, gep, "a variable index into an array of %s uses the local size of the struct, "
			   "not the kernel's; step by KSIZEOF() instead", sn);
}

/* ---- constant expressions that name a kernel symbol become instructions ---- */

/* v with every occurrence of global g replaced by repl, built as
 * instructions before `before` (repl is not a constant, so nothing folds
 * back into a constant expression). */
static LLVMValueRef core_rebuild(Core *C, LLVMValueRef v, LLVMValueRef g, LLVMValueRef repl, LLVMValueRef before,
				 int depth)
{
	if (v == g)
		return repl;
	if (!LLVMIsAConstantExpr(v) || depth > 16)
		return v;
	unsigned n = (unsigned)LLVMGetNumOperands(v);
	LLVMValueRef ops[16];
	bool changed = false;
	if (n > 16)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		ops[i] = core_rebuild(C, LLVMGetOperand(v, i), g, repl, before, depth + 1);
		if (!ops[i])
			return NULL;
		changed = changed || ops[i] != LLVMGetOperand(v, i);
	}
	if (!changed)
		return v;
	LLVMPositionBuilderBefore(C->b, before);
	LLVMOpcode op = LLVMGetConstOpcode(v);
	switch (op) {
	case LLVMGetElementPtr: {
		LLVMTypeRef st = LLVMGetGEPSourceElementType(v);
		return LLVMIsInBounds(v) ? LLVMBuildInBoundsGEP2(C->b, st, ops[0], ops + 1, n - 1, "")
					 : LLVMBuildGEP2(C->b, st, ops[0], ops + 1, n - 1, "");
	}
	case LLVMBitCast: case LLVMPtrToInt: case LLVMIntToPtr: case LLVMAddrSpaceCast:
	case LLVMTrunc: case LLVMZExt: case LLVMSExt:
		return LLVMBuildCast(C->b, op, ops[0], LLVMTypeOf(v), "");
	case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMAnd: case LLVMOr: case LLVMXor:
	case LLVMShl: case LLVMLShr: case LLVMAShr:
		return LLVMBuildBinOp(C->b, op, ops[0], ops[1], "");
	case LLVMICmp:
		return LLVMBuildICmp(C->b, LLVMGetICmpPredicate(v), ops[0], ops[1], "");
	default:
		return NULL;
	}
}

/* Where an instruction operand's replacement goes: before the instruction,
 * or for a phi before the end of the incoming block. */
static LLVMValueRef core_insert_point(LLVMValueRef user, unsigned opno)
{
	if (LLVMIsAPHINode(user))
		return LLVMGetBasicBlockTerminator(LLVMGetIncomingBlock(user, opno));
	return user;
}

typedef LLVMValueRef (*CoreMake)(Core *C, LLVMValueRef before, long idx, LLVMValueRef g);

/* Replace every use of global g, direct or through constant expressions,
 * by make(...) computed before the instruction that uses it. */
static int core_replace_global(Core *C, LLVMValueRef g, long idx, CoreMake make)
{
	/* the instruction operands that reach g: (instruction, operand) */
	struct { LLVMValueRef inst; unsigned op; } *uses = NULL;
	size_t n = 0, cap = 0;
	LLVMValueRef work[64];
	size_t nw = 0;
	int e = 0;
	work[nw++] = g;
	while (nw && !e) {
		LLVMValueRef v = work[--nw];
		for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
			LLVMValueRef user = LLVMGetUser(u);
			if (LLVMIsAConstantExpr(user)) {
				if (nw == 64) {
					e = -E2BIG;
					break;
				}
				work[nw++] = user;
			} else if (LLVMIsAInstruction(user)) {
				unsigned k, ops = (unsigned)LLVMGetNumOperands(user);
				for (k = 0; k < ops; k++) {
					if (LLVMGetOperand(user, k) != v)
						continue;
					if (n == cap) {
						cap = cap ? cap * 2 : 64;
						void *nu = realloc(uses, cap * sizeof *uses);
						if (!nu) {
							e = -ENOMEM;
							break;
						}
						uses = nu;
					}
					uses[n].inst = user;
					uses[n].op = k;
					n++;
				}
			} else {
				e = -ENOTSUP;      /* a global initialiser, an aggregate constant */
				break;
			}
		}
	}
	/* the same operand may be listed twice (once per constant on the way) */
	for (size_t i = 0; i < n && !e; i++) {
		LLVMValueRef inst = uses[i].inst, cur = LLVMGetOperand(inst, uses[i].op);
		LLVMValueRef before = core_insert_point(inst, uses[i].op);
		if (cur != g && !LLVMIsAConstantExpr(cur))
			continue;              /* done already */
		LLVMValueRef repl = make(C, before, idx, g);
		LLVMValueRef nv = repl ? core_rebuild(C, cur, g, repl, before, 0) : NULL;
		if (!nv) {
			e = -ENOTSUP;
			break;
		}
		LLVMSetOperand(inst, uses[i].op, nv);
	}
	free(uses);
	return e;
}

/* ---- markers and kernel symbols ------------------------------------------------------ */

/* "__sentinel.KIND.A.B" */
static int core_marker(Core *C, LLVMValueRef g, const char *name)
{
	char kind[16], a[128], b[128];
	const char *p = name + strlen("__sentinel."), *d1 = strchr(p, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (!d1 || !d2 || (size_t)(d1 - p) >= sizeof kind || (size_t)(d2 - d1 - 1) >= sizeof a || strlen(d2 + 1) >= sizeof b) {
		core_error(C, NULL, "malformed marker %s", name);
		return -EINVAL;
	}
	snprintf(kind, sizeof kind, "%.*s", (int)(d1 - p), p);
	snprintf(a, sizeof a, "%.*s", (int)(d2 - d1 - 1), d1 + 1);
	snprintf(b, sizeof b, "%s", d2 + 1);
	if (!strcmp(b, "_"))
		b[0] = 0;
	ReloKind k;
	if (!strcmp(kind, "type"))
		k = RELO_TYPE;
	else if (relo_kind_parse(kind, &k) || k == RELO_FIELD || k == RELO_SYM) {
		core_error(C, NULL, "unknown marker kind in %s", name);
		return -EINVAL;
	}
	long idx = relo_intern(C->r, k, a, b, 0, false);
	if (idx < 0)
		return (int)idx;
	for (LLVMUseRef u = LLVMGetFirstUse(g); u; u = LLVMGetNextUse(u))
		if (!LLVMIsALoadInst(LLVMGetUser(u))) {
			core_error(C, NULL, "%s is used other than by reading it", name);
			return -EINVAL;
		}
	for (LLVMUseRef u; (u = LLVMGetFirstUse(g));) {
		LLVMValueRef ld = LLVMGetUser(u);
		LLVMValueRef v = core_load(C, ld, idx);
		LLVMTypeRef t = LLVMTypeOf(ld);
		if (t != C->i64)
			v = LLVMBuildIntCast2(C->b, v, t, 1, "");
		LLVMReplaceAllUsesWith(ld, v);
		LLVMInstructionEraseFromParent(ld);
	}
	return 0;
}

static LLVMValueRef core_make_symbol(Core *C, LLVMValueRef before, long idx, LLVMValueRef g)
{
	LLVMValueRef a = core_load(C, before, idx);
	return LLVMBuildIntToPtr(C->b, a, LLVMTypeOf(g), "ksym");
}

static int core_symbol(Core *C, LLVMValueRef g, const char *name)
{
	bool weak = LLVMGetLinkage(g) == LLVMExternalWeakLinkage;
	long idx = relo_intern(C->r, RELO_SYM, name, "", 0, weak);
	if (idx < 0)
		return (int)idx;
	int e = core_replace_global(C, g, idx, core_make_symbol);
	if (e == -ENOTSUP)
		core_error(C, NULL, "kernel symbol %s is used in a constant initialiser or an unusual constant "
			   "expression; take its address at run time", name);
	return e;
}

static bool core_runtime_name(const char *n)
{
	return !strncmp(n, "kx_", 3) || !strncmp(n, "__llview_", 9) || !strncmp(n, "simt_", 5) ||
	       !strncmp(n, "sn_", 3) || !strncmp(n, "llvm.", 5);
}

/* ---- which relocations each entry point needs ---------------------------------------- */

static bool core_has(const ReloSet *r, const uint32_t *set, size_t n, ReloKind k, const char *a, const char *b)
{
	for (size_t i = 0; i < n; i++) {
		const Relo *x = &r->v[set[i]];
		if (x->kind == k && !strcmp(x->a, a) && (!b || !strcmp(x->b, b)))
			return true;
	}
	return false;
}

static bool core_required(const ReloSet *r, const uint32_t *set, size_t n, const Relo *x)
{
	switch (x->kind) {
	case RELO_EXISTS: case RELO_TYPE:
		return false;
	case RELO_SYM:
		return !x->weak;
	case RELO_FIELD:
		if (strstr(x->a, "___"))
			return false;
		return !core_has(r, set, n, RELO_EXISTS, x->a, x->b) && !core_has(r, set, n, RELO_TYPE, x->a, NULL);
	case RELO_SIZE:
		return !strstr(x->a, "___") && !core_has(r, set, n, RELO_TYPE, x->a, NULL);
	case RELO_ENUM:
		return !strstr(x->a, "___");    /* KENUM_OPT: the code tests the value */
	default:
		return true;
	}
}

static int core_record_uses(Core *C)
{
	ReloSet *r = C->r;
	for (LLVMValueRef f = LLVMGetFirstFunction(C->m); f; f = LLVMGetNextFunction(f)) {
		size_t len;
		const char *name = LLVMGetValueName2(f, &len);
		if (LLVMIsDeclaration(f) || strncmp(name, "km_", 3))
			continue;
		uint32_t *set = NULL;
		size_t n = 0;
		for (size_t i = 0; i < C->nuses; i++) {
			if (C->uses[i].fn != f)
				continue;
			size_t j;
			for (j = 0; j < n && set[j] != C->uses[i].idx; j++)
				;
			if (j < n)
				continue;
			uint32_t *s = realloc(set, (n + 1) * sizeof *s);
			if (!s) {
				free(set);
				return -ENOMEM;
			}
			set = s;
			set[n++] = C->uses[i].idx;
		}
		/* merge with what another target's module recorded for this function */
		ReloUse *u = relo_use(r, name);
		if (!u) {
			free(set);
			return -ENOMEM;
		}
		for (size_t i = 0; i < n; i++)
			if (relo_use_add(u, set[i], true)) {
				free(set);
				return -ENOMEM;
			}
		for (size_t i = 0; i < u->n; i++)
			u->required[i] = core_required(r, u->idx, u->n, &r->v[u->idx[i]]);
		free(set);
	}
	return 0;
}

int core_relocate(LLVMModuleRef m, ReloSet *r, char *err, size_t n)
{
	Core C = {.m = m, .ctx = LLVMGetModuleContext(m), .r = r, .err = err, .errlen = n};
	C.b = LLVMCreateBuilderInContext(C.ctx);
	C.i64 = LLVMInt64TypeInContext(C.ctx);
	C.i8 = LLVMInt8TypeInContext(C.ctx);
	C.ptr = LLVMPointerTypeInContext(C.ctx, 0);
	C.md_access = LLVMGetMDKindIDInContext(C.ctx, "llvm.preserve.access.index", 26);
	C.md_invariant = LLVMGetMDKindIDInContext(C.ctx, "invariant.load", 14);
	C.table = LLVMGetNamedGlobal(m, CORE_TABLE);
	if (!C.table)
		C.table = LLVMAddGlobal(m, LLVMArrayType2(C.i64, 0), CORE_TABLE);
	/* the GPU's loads of the table go through the block's target (kx.h,
	 * kx_cur); the host's global is only the read budget's */
	C.cur = strstr(LLVMGetTarget(m), "nvptx") ? LLVMGetNamedGlobal(m, KX_CUR_SYM) : NULL;
	int e = 0;
	/* 1. access chains */
	for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef i = LLVMGetFirstInstruction(bb);
			while (i) {
				LLVMValueRef next = LLVMGetNextInstruction(i);
				if (core_is_call_to(i, "llvm.preserve.struct.access.index", NULL))
					core_struct_access(&C, i);
				else if (core_is_call_to(i, "llvm.preserve.array.access.index", NULL))
					core_array_access(&C, i);
				else if (core_is_call_to(i, "llvm.preserve.union.access.index", NULL)) {
					LLVMReplaceAllUsesWith(i, LLVMGetOperand(i, 0));
					LLVMInstructionEraseFromParent(i);
				} else if (LLVMIsAGetElementPtrInst(i)) {
					size_t len;
					const char *fn = LLVMGetValueName2(f, &len);
					if (!strncmp(fn, "km_", 3))
						core_check_gep(&C, i);
				}
				i = next;
			}
		}
	}
	/* 2. markers and kernel symbols: every undefined global */
	for (LLVMValueRef g = LLVMGetFirstGlobal(m), next; g && !C.nerr; g = next) {
		next = LLVMGetNextGlobal(g);
		if (!LLVMIsDeclaration(g) || g == C.table)
			continue;
		size_t len;
		const char *name = LLVMGetValueName2(g, &len);
		if (core_runtime_name(name))
			continue;
		e = !strncmp(name, "__sentinel.", 11) ? core_marker(&C, g, name) : core_symbol(&C, g, name);
		if (e)
			break;
		LLVMDeleteGlobal(g);
	}
	if (!C.nerr && !e)
		e = core_record_uses(&C);
	free(C.uses);
	LLVMDisposeBuilder(C.b);
	if (C.nerr)
		return -EINVAL;
	if (e && !*err)
		snprintf(err, n, "CO-RE: %s", strerror(-e));
	return e;
}

int core_finish(LLVMModuleRef m, const ReloSet *r)
{
	LLVMContextRef ctx = LLVMGetModuleContext(m);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
	size_t n = r->n ? r->n : 1;
	LLVMValueRef *init = malloc(n * sizeof *init);
	if (!init)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)              /* unfilled, every read fails */
		init[i] = LLVMConstInt(i64, RELO_POISON, 0);
	LLVMTypeRef at = LLVMArrayType2(i64, n);
	LLVMValueRef g = LLVMAddGlobal(m, at, "");
	LLVMSetInitializer(g, LLVMConstArray2(i64, init, n));
	free(init);
	LLVMSetAlignment(g, 8);
	LLVMValueRef old = LLVMGetNamedGlobal(m, CORE_TABLE);
	if (old) {
		LLVMReplaceAllUsesWith(old, g);
		LLVMDeleteGlobal(old);
	}
	LLVMSetValueName2(g, CORE_TABLE, strlen(CORE_TABLE));
	return 0;
}
