/* lvm.c - rulec's one door to LLVM's infrastructure (see lvm.h). */
#include "lvm.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The runtime library, built by make (build/lib/sentinel.*.bc) and linked
 * into rulec (rulec/libbc.c). */
extern const char lvm_bc_host[], lvm_bc_host_end[];
extern const char lvm_bc_nvptx[], lvm_bc_nvptx_end[];

static int lvm_msg(char *err, size_t n, int code, const char *what, const char *msg)
{
	snprintf(err, n, "%s: %s", what, msg && *msg ? msg : "unknown LLVM error");
	return code;
}

int lvm_error(LLVMErrorRef e, const char *what, char *err, size_t n)
{
	char *m = LLVMGetErrorMessage(e);       /* consumes e */
	lvm_msg(err, n, -EINVAL, what, m);
	LLVMDisposeErrorMessage(m);
	return -EINVAL;
}

static pthread_once_t lvm_once = PTHREAD_ONCE_INIT;

static void lvm_init(void)
{
	LLVMInitializeX86TargetInfo();
	LLVMInitializeX86Target();
	LLVMInitializeX86TargetMC();
	LLVMInitializeX86AsmPrinter();
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
}

void lvm_ensure_init(void)
{
	pthread_once(&lvm_once, lvm_init);
}

static int lvm_parse(LLVMContextRef ctx, LLVMMemoryBufferRef buf, const char *what, LLVMModuleRef *out,
		     char *err, size_t n)
{
	/* bitcode first; textual IR (tests) otherwise */
	const char *start = LLVMGetBufferStart(buf);
	size_t len = LLVMGetBufferSize(buf);
	if (len >= 4 && !memcmp(start, "BC\xc0\xde", 4)) {
		if (LLVMParseBitcodeInContext2(ctx, buf, out)) {
			LLVMDisposeMemoryBuffer(buf);
			return lvm_msg(err, n, -EINVAL, what, "not valid LLVM bitcode");
		}
		LLVMDisposeMemoryBuffer(buf);
		return 0;
	}
	char *msg = NULL;
	if (LLVMParseIRInContext(ctx, buf, out, &msg)) {      /* takes buf */
		lvm_msg(err, n, -EINVAL, what, msg);
		LLVMDisposeMessage(msg);
		return -EINVAL;
	}
	return 0;
}

int lvm_load_library(LLVMContextRef ctx, LvmTarget t, LLVMModuleRef *out, char *err, size_t n)
{
	pthread_once(&lvm_once, lvm_init);
	const char *b = t == LVM_NVPTX ? lvm_bc_nvptx : lvm_bc_host;
	const char *e = t == LVM_NVPTX ? lvm_bc_nvptx_end : lvm_bc_host_end;
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(b, (size_t)(e - b), "sentinel-runtime", 0);
	return lvm_parse(ctx, buf, "the runtime library built into rulec", out, err, n);
}

int lvm_load_file(LLVMContextRef ctx, const char *path, LLVMModuleRef *out, char *err, size_t n)
{
	pthread_once(&lvm_once, lvm_init);
	LLVMMemoryBufferRef buf;
	char *msg = NULL;
	if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
		lvm_msg(err, n, -ENOENT, path, msg);
		LLVMDisposeMessage(msg);
		return -ENOENT;
	}
	return lvm_parse(ctx, buf, path, out, err, n);
}

int lvm_machine(LvmTarget t, const char *cpu, bool full, LLVMTargetMachineRef *out, char *err, size_t n)
{
	pthread_once(&lvm_once, lvm_init);
	const char *triple = t == LVM_NVPTX ? LVM_NVPTX_TRIPLE : LVM_HOST_TRIPLE;
	LLVMTargetRef target;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		lvm_msg(err, n, -ENOTSUP, triple, msg);
		LLVMDisposeMessage(msg);
		return -ENOTSUP;
	}
	if (!cpu)
		cpu = t == LVM_NVPTX ? "sm_70" : LVM_HOST_CPU;
	/* PTX 7.8 (CUDA 11.8 drivers and later) has everything we use */
	const char *features = t == LVM_NVPTX ? "+ptx78" : "";
	*out = LLVMCreateTargetMachine(target, triple, cpu, features, full || t != LVM_NVPTX ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelNone,
				       t == LVM_NVPTX ? LLVMRelocDefault : LLVMRelocPIC, LLVMCodeModelDefault);
	if (!*out)
		return lvm_msg(err, n, -ENOTSUP, triple, "LLVM cannot make a target machine for this CPU");
	return 0;
}

int lvm_verify(LLVMModuleRef m, const char *what, char *err, size_t n)
{
	char *msg = NULL;
	if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
		/* the first line is enough: the rest is the offending IR */
		char *nl = msg && !getenv("SENTINEL_DEBUG_VERIFY") ? strchr(msg, '\n') : NULL;
		if (nl)
			*nl = 0;
		snprintf(err, n, "%s: the generated code does not verify (a rulec bug; please report it): %s",
			 what, msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return -EINVAL;
	}
	LLVMDisposeMessage(msg);
	return 0;
}

/* The library was optimised at -O2 by clang when rulec was built; what is
 * new is the rules' code (allocas, small runtime calls) and LLView's error
 * flags.  Scalar replacement, CSE, combining, inlining of the small
 * runtime accessors and dead-code removal give the same code as -O2 here
 * in an eighth of the time (docs/benchmarks.md); full runs default<O2>.
 * Rotation and unrolling serve the loops cg marks (llvm.loop.unroll.count:
 * the loops over tasks).  Combining runs once a time, as the default
 * pipelines run it: a second round it would have found is missed code,
 * not an error (LLVM 19's pass string alone asks for the fixpoint and
 * aborts the process without it). */
#define LVM_IC "instcombine<no-verify-fixpoint>"
#define LVM_PIPELINE "function(sroa,early-cse," LVM_IC ",simplifycfg),cgscc(inline)," \
	"function(sroa,early-cse," LVM_IC ",simplifycfg,loop(loop-rotate),loop-unroll<O2>," LVM_IC ",simplifycfg)," \
	"globaldce"

int lvm_optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, bool full, char *err, size_t n)
{
	LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
	/* GPU loads of host memory are the cost: keep them scalar and
	 * independent, never vectorised into wide loads of kernel memory */
	LLVMPassBuilderOptionsSetLoopVectorization(o, 0);
	LLVMPassBuilderOptionsSetSLPVectorization(o, 0);
	LLVMErrorRef e = LLVMRunPasses(m, full ? "default<O2>" : LVM_PIPELINE, tm, o);
	LLVMDisposePassBuilderOptions(o);
	return e ? lvm_error(e, "optimiser", err, n) : 0;
}

/* v becomes a hidden external symbol with a valid PTX name. */
static void lvm_export(LLVMValueRef v)
{
	size_t len;
	const char *name = LLVMGetValueName2(v, &len);
	char clean[256];
	size_t k = 0;
	for (size_t i = 0; i < len && k + 1 < sizeof clean; i++) {
		char c = name[i];
		clean[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
				     c == '$' ? c : '_';
	}
	clean[k] = 0;
	if (k != len || memcmp(clean, name, len))
		LLVMSetValueName2(v, clean, k);     /* LLVM makes it unique, without dots for NVPTX */
	LLVMSetLinkage(v, LLVMExternalLinkage);
	LLVMSetVisibility(v, LLVMHiddenVisibility);
}

static bool lvm_local(LLVMValueRef v)
{
	LLVMLinkage l = LLVMGetLinkage(v);
	return !LLVMIsDeclaration(v) && (l == LLVMInternalLinkage || l == LLVMPrivateLinkage);
}

/* NVPTX lowers each call to a function of local linkage after asking
 * whether its address is taken, which walks every use of the callee: with
 * N rules calling the same helpers that is N^2 (10,000 rules took 6
 * minutes, half of it there).  After optimization, local linkage has done
 * its work; the helpers become hidden external functions, whose calls are
 * lowered without the walk.  Their names become valid PTX identifiers here
 * (NVPTX only cleans up names of local symbols). */
static void lvm_unlocal(LLVMModuleRef m)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
		if (lvm_local(f))
			lvm_export(f);
}

/* A declaration in v's place: the C API cannot drop a body or an
 * initializer, so a new symbol takes v's uses and then its name. */
static void lvm_declare(LLVMModuleRef m, LLVMValueRef v)
{
	size_t len;
	char name[256];
	snprintf(name, sizeof name, "%s", LLVMGetValueName2(v, &len));
	LLVMValueRef d;
	if (LLVMIsAFunction(v)) {
		d = LLVMAddFunction(m, "", LLVMGlobalGetValueType(v));
		LLVMSetFunctionCallConv(d, LLVMGetFunctionCallConv(v));
	} else {
		/* an array without its length: a part that reads the rules' data
		 * does not change when the number of rules does */
		LLVMTypeRef t = LLVMGlobalGetValueType(v);
		if (LLVMGetTypeKind(t) == LLVMArrayTypeKind)
			t = LLVMArrayType2(LLVMGetElementType(t), 0);
		d = LLVMAddGlobalInAddressSpace(m, t, "", LLVMGetPointerAddressSpace(LLVMTypeOf(v)));
		LLVMSetAlignment(d, LLVMGetAlignment(v));
	}
	LLVMReplaceAllUsesWith(v, d);
	if (LLVMIsAFunction(v))
		LLVMDeleteFunction(v);
	else
		LLVMDeleteGlobal(v);
	LLVMSetValueName2(d, name, strlen(name));
}

/* Make m part p: the functions part() gives to p keep their bodies, every
 * other function becomes a declaration (.extern in PTX); variables are
 * defined in part 0 and declared elsewhere, except local constants, which
 * each part keeps a copy of where it uses them.  What the part does not
 * use goes (globaldce). */
static int lvm_part(LLVMModuleRef m, unsigned p, LvmPartFn part, void *arg, char *err, size_t n)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(m), next; f; f = next) {
		next = LLVMGetNextFunction(f);
		if (!LLVMIsDeclaration(f) && part(LLVMGetValueName2(f, &(size_t){0}), arg) != p)
			lvm_declare(m, f);
	}
	for (LLVMValueRef g = LLVMGetFirstGlobal(m), next; g; g = next) {
		next = LLVMGetNextGlobal(g);
		if (!LLVMIsDeclaration(g) && !lvm_local(g) && part(LLVMGetValueName2(g, &(size_t){0}), arg) != p)
			lvm_declare(m, g);
	}
	LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = LLVMRunPasses(m, "globaldce", NULL, o);
	LLVMDisposePassBuilderOptions(o);
	return e ? lvm_error(e, "splitting the PTX", err, n) : 0;
}

/* NVPTX numbers call sequences in comments ("{ // callseq 12, 0") with
 * one counter for the whole process: the same rules would give other PTX
 * after other code, or on other threads, and miss the driver's JIT cache.
 * The comments go; returns the new length. */
static size_t lvm_uncount(char *t, size_t len)
{
	static const char tag[] = " // callseq ";
	char *w = t, *r = t, *end = t + len;
	while (r < end) {
		char *hit = strstr(r, tag);
		char *stop = hit ? hit : end;
		memmove(w, r, (size_t)(stop - r));
		w += stop - r;
		if (!hit)
			break;
		r = memchr(hit, '\n', (size_t)(end - hit));
		if (!r)
			r = end;
	}
	*w = 0;
	return (size_t)(w - t);
}

int lvm_emit(LLVMModuleRef m, LLVMTargetMachineRef tm, void **out, size_t *len, char *err, size_t n)
{
	char *triple = LLVMGetTargetMachineTriple(tm);
	int ptx = strncmp(triple, "nvptx", 5) == 0;
	LLVMDisposeMessage(triple);
	if (ptx)
		lvm_unlocal(m);
	LLVMMemoryBufferRef buf;
	char *msg = NULL;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, ptx ? LLVMAssemblyFile : LLVMObjectFile, &msg, &buf)) {
		lvm_msg(err, n, -EINVAL, ptx ? "PTX code generation" : "host code generation", msg);
		LLVMDisposeMessage(msg);
		return -EINVAL;
	}
	*len = LLVMGetBufferSize(buf);
	*out = malloc(*len + 1);
	if (!*out) {
		LLVMDisposeMemoryBuffer(buf);
		return lvm_msg(err, n, -ENOMEM, "code generation", "out of memory");
	}
	memcpy(*out, LLVMGetBufferStart(buf), *len);
	((char *)*out)[*len] = 0;
	LLVMDisposeMemoryBuffer(buf);
	if (ptx)
		*len = lvm_uncount(*out, *len);
	return 0;
}

/* ---- PTX in parts, on threads ----------------------------------------------------------
 *
 * Each part is made from the whole module, so each worker parses the
 * module's bitcode into an LLVM context of its own (contexts are not
 * shared between threads), cuts it down to its part and emits it for each
 * architecture.  The copies cost memory: LVM_PART_THREADS at most. */
#define LVM_PART_THREADS 4

typedef struct LvmParts {
	const char *bc;               /* the whole module's bitcode */
	size_t bclen;
	unsigned nparts, ncpus;
	LvmPartFn part;
	void *arg;
	const char *const *cpus;
	bool full;
	char **text;                  /* [part * ncpus + cpu], malloc'd */
	size_t *len;
	pthread_mutex_t lock;         /* guards next, e and err */
	unsigned next;
	int e;
	char err[1024];
} LvmParts;

static int lvm_one_part(LvmParts *P, unsigned p, char *err, size_t n)
{
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef m = NULL;
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(P->bc, P->bclen, "part", 0);
	int e = lvm_parse(ctx, buf, "splitting the PTX", &m, err, n);
	if (!e)
		e = lvm_part(m, p, P->part, P->arg, err, n);
	for (unsigned c = 0; c < P->ncpus && !e; c++) {
		LLVMTargetMachineRef tm;
		e = lvm_machine(LVM_NVPTX, P->cpus[c], P->full, &tm, err, n);
		if (e)
			break;
		/* code generation rewrites its module: copies but for the last */
		LLVMModuleRef x = c + 1 < P->ncpus ? LLVMCloneModule(m) : m;
		void *t;
		e = lvm_emit(x, tm, &t, &P->len[p * P->ncpus + c], err, n);
		if (!e)
			P->text[p * P->ncpus + c] = t;
		if (x != m)
			LLVMDisposeModule(x);
		LLVMDisposeTargetMachine(tm);
	}
	if (m)
		LLVMDisposeModule(m);
	LLVMContextDispose(ctx);
	return e;
}

static void *lvm_parts_worker(void *arg)
{
	LvmParts *P = arg;
	char err[1024];
	for (;;) {
		pthread_mutex_lock(&P->lock);
		unsigned p = P->e ? P->nparts : P->next++;
		pthread_mutex_unlock(&P->lock);
		if (p >= P->nparts)
			break;
		int e = lvm_one_part(P, p, err, sizeof err);
		if (e) {
			pthread_mutex_lock(&P->lock);
			if (!P->e) {
				P->e = e;
				snprintf(P->err, sizeof P->err, "%s", err);
			}
			pthread_mutex_unlock(&P->lock);
		}
	}
	return NULL;
}

int lvm_emit_parts(LLVMModuleRef m, unsigned nparts, LvmPartFn part, void *arg, const char *const *cpus,
		   unsigned ncpus, bool full, const char *mark, char **out, size_t *outlen, char *err, size_t n)
{
	pthread_once(&lvm_once, lvm_init);
	/* one definition of each function and variable in all the parts: the
	 * local ones become hidden external symbols first (constants excepted:
	 * a copy in each part is cheaper than a symbol) */
	lvm_unlocal(m);
	for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
		if (lvm_local(g) && !LLVMIsGlobalConstant(g))
			lvm_export(g);
	LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(m);
	LvmParts P = {.nparts = nparts, .ncpus = ncpus, .part = part, .arg = arg, .cpus = cpus, .full = full,
		      .text = calloc((size_t)nparts * ncpus, sizeof *P.text), .len = calloc((size_t)nparts * ncpus, sizeof *P.len)};
	int e = 0;
	if (!bc || !P.text || !P.len) {
		e = lvm_msg(err, n, -ENOMEM, "splitting the PTX", "out of memory");
		goto out;
	}
	P.bc = LLVMGetBufferStart(bc);
	P.bclen = LLVMGetBufferSize(bc);
	pthread_mutex_init(&P.lock, NULL);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nth = cores < 1 ? 1 : cores > LVM_PART_THREADS ? LVM_PART_THREADS : (unsigned)cores, started = 0;
	if (nth > nparts)
		nth = nparts;
	pthread_t th[LVM_PART_THREADS];
	for (unsigned t = 1; t < nth; t++)              /* this thread is the first worker */
		if (!pthread_create(&th[started], NULL, lvm_parts_worker, &P))
			started++;
	lvm_parts_worker(&P);
	for (unsigned t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&P.lock);
	if ((e = P.e)) {
		snprintf(err, n, "%s", P.err);
		goto out;
	}
	/* per architecture: the parts in order, each after its mark line */
	for (unsigned c = 0; c < ncpus && !e; c++) {
		size_t total = 0, used = 0;
		for (unsigned p = 0; p < nparts; p++)
			total += P.len[p * ncpus + c] + 64;
		out[c] = malloc(total + 1);
		if (!out[c]) {
			e = lvm_msg(err, n, -ENOMEM, "splitting the PTX", "out of memory");
			break;
		}
		for (unsigned p = 0; p < nparts; p++) {
			used += (size_t)snprintf(out[c] + used, 64, "%.40s%u of %u\n", mark, p + 1, nparts);
			memcpy(out[c] + used, P.text[p * ncpus + c], P.len[p * ncpus + c]);
			used += P.len[p * ncpus + c];
		}
		out[c][used] = 0;
		outlen[c] = used;
	}
	if (e)
		for (unsigned c = 0; c < ncpus; c++) {
			free(out[c]);
			out[c] = NULL;
		}
out:
	for (size_t i = 0; P.text && i < (size_t)nparts * ncpus; i++)
		free(P.text[i]);
	free(P.text);
	free(P.len);
	if (bc)
		LLVMDisposeMemoryBuffer(bc);
	return e;
}

void lvm_library_key(BdKey *k)
{
	bd_key_add(k, lvm_bc_host, (size_t)(lvm_bc_host_end - lvm_bc_host));
	bd_key_add(k, lvm_bc_nvptx, (size_t)(lvm_bc_nvptx_end - lvm_bc_nvptx));
}

char *lvm_print(LLVMModuleRef m)
{
	char *s = LLVMPrintModuleToString(m);
	char *r = strdup(s);
	LLVMDisposeMessage(s);
	return r;
}
