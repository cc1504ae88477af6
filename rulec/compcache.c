/* compcache.c - a rule directory's bundle, kept across restarts
 * (compile.h, CompOpts.cache_dir).
 *
 * sentineld compiles its rule directory at every start and reload.  When
 * nothing that decides the bundle changed since an earlier compile, the
 * bundle that compile wrote is read back instead: DIR/bundle/KEY.bundle,
 * KEY a 128-bit hash of the rule files (names and the bytes the front end
 * read), the compile's
 * options (architectures, host only, -O2) and the compiler itself (its
 * version, the runtime library's bitcode and the running program's file:
 * a rebuilt or upgraded sentineld compiles again).  The rules are checked
 * each time all the same (their warnings and errors are the checker's, in
 * milliseconds); only the code generation is skipped.  bd_read checks what
 * it reads (magic, ABI, checksum): a bad file is removed and compiled
 * again.  At most CC_MAX_FILES bundles and CC_MAX_BYTES: the least
 * recently used go.  DIR/code keeps the code alone (comp_code_key below):
 * a rule set whose numbers changed and nothing else skips the back end.
 */
#include "compile.h"
#include "lvm.h"
#include "snrt.h"
#include "util.h"

#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CC_MAX_FILES 8
#define CC_MAX_BYTES (256ull << 20)

/* What decides the code made from anything: the compiler (its version,
 * the runtime library's bitcode, the running program's file) and the
 * compile's options. */
static void cc_compiler(BdKey *k, const CompOpts *o)
{
	unsigned abi = SN_ABI_VERSION;
	bd_key_add(k, &abi, sizeof abi);
	const char *v = o->version ? o->version : "?";
	bd_key_add(k, v, strlen(v));
	struct stat st;
	if (!stat("/proc/self/exe", &st)) {
		uint64_t id[4] = {(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
				  (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec};
		bd_key_add(k, id, sizeof id);
	}
	lvm_library_key(k);
	const char *archs = o->archs ? o->archs : COMP_DEFAULT_ARCHS;
	bd_key_add(k, archs, strlen(archs));
	bool flags[2] = {o->full, o->host_only};
	bd_key_add(k, flags, sizeof flags);
}

/* What decides the bundle of rs's files (their names and the text the
 * front end read, not read again) */
static void cc_key(const RuleSet *rs, const CompOpts *o, BdKey *k)
{
	bd_key_init(k, "sentinel bundle 1");
	cc_compiler(k, o);
	for (size_t i = 0; i < rs->nfiles; i++) {
		bd_key_add(k, rs->files[i]->name, strlen(rs->files[i]->name));
		bd_key_add(k, rs->files[i]->text, rs->files[i]->len);
	}
}

static void cc_path(const char *dir, const char *kind, const BdKey *k, char *out, size_t n)
{
	snprintf(out, n, "%s/%s/%016llx%016llx.%s", dir, kind, (unsigned long long)k->h[0],
		 (unsigned long long)k->h[1], kind);
}

/* Read the cache's file of kind for k: 0 and *out, or -errno (a note when
 * a file was there and refused: it is removed). */
static int cc_get(const CompOpts *o, const char *kind, const BdKey *k, Bundle **out, char *note, size_t n)
{
	char path[4200], err[512];
	cc_path(o->cache_dir, kind, k, path, sizeof path);
	if (access(path, R_OK))
		return -ENOENT;
	int e = bd_read(path, out, err, sizeof err);
	if (e) {
		snprintf(note, n, "the cached %s %s cannot be used (%s): removed, compiling again", kind, path, err);
		unlink(path);
		return e;
	}
	utimensat(AT_FDCWD, path, NULL, 0);          /* recently used */
	return 0;
}

/* Keep b as the cache's file of kind for k (written beside it, renamed). */
static int cc_put(const CompOpts *o, const char *kind, const BdKey *k, const Bundle *b, char *note, size_t n)
{
	char sub[4200], path[4200], tmp[4300], err[512];
	snprintf(sub, sizeof sub, "%s/%s", o->cache_dir, kind);
	if (mkdir(o->cache_dir, 0700) && errno != EEXIST)
		return snprintf(note, n, "cannot make %s: %s", o->cache_dir, strerror(errno)), -errno;
	if (mkdir(sub, 0700) && errno != EEXIST)
		return snprintf(note, n, "cannot make %s: %s", sub, strerror(errno)), -errno;
	cc_path(o->cache_dir, kind, k, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	int e = bd_write(b, tmp, err, sizeof err);
	if (!e && rename(tmp, path))
		e = -errno;
	if (e) {
		unlink(tmp);
		snprintf(note, n, "cannot keep the compiled rules in %s: %s", sub, *err ? err : strerror(-e));
		return e;
	}
	char ext[16];
	snprintf(ext, sizeof ext, ".%s", kind);
	u_dir_prune(sub, ext, CC_MAX_FILES, CC_MAX_BYTES);
	return 0;
}

int comp_cache_get(const RuleSet *rs, const CompOpts *o, Bundle **out, char *note, size_t n)
{
	BdKey k;
	*note = 0;
	if (!o->cache_dir || o->emit)
		return -ENOENT;
	cc_key(rs, o, &k);
	int e = cc_get(o, "bundle", &k, out, note, n);
	if (!e)
		snprintf(note, n, "the rules' code from the cache (%s/bundle), nothing changed since it was compiled",
			 o->cache_dir);
	return e;
}

int comp_cache_put(const RuleSet *rs, const CompOpts *o, const Bundle *b, char *note, size_t n)
{
	BdKey k;
	*note = 0;
	if (!o->cache_dir || o->emit)
		return 0;
	cc_key(rs, o, &k);
	if (o->keep) {
		o->keep->want = true;
		o->keep->key = k;
		return 0;
	}
	return cc_put(o, "bundle", &k, b, note, n);
}

int comp_cache_keep(const CompOpts *o, const CompKeep *k, const Bundle *b, char *note, size_t n)
{
	*note = 0;
	return k->want && o->cache_dir ? cc_put(o, "bundle", &k->key, b, note, n) : 0;
}

/* ---- the code alone --------------------------------------------------------------------
 *
 * A rule set whose files changed but whose code did not (a threshold, a
 * label, a description, a rule's name: cg_shape.c puts the numbers in
 * data tables the engine writes at load) compiles to the same x86-64
 * object and PTX.  DIR/code/KEY.code keeps them, KEY a hash of the
 * compiler, the options and every target's module as the back end gets it
 * (after LLView: its bitcode); the front end runs each time, the back end
 * (most of a compile) only when that module is new. */
bool comp_code_key(LLVMModuleRef const *m, unsigned nm, const CompOpts *o, BdKey *k)
{
	bd_key_init(k, "sentinel code 1");
	cc_compiler(k, o);
	for (unsigned i = 0; i < nm; i++) {
		LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(m[i]);
		if (!bc)
			return false;
		bd_key_add(k, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
		LLVMDisposeMemoryBuffer(bc);
	}
	return true;
}

int comp_code_get(const CompOpts *o, const BdKey *k, Bundle *b, char *note, size_t n)
{
	Bundle *c = NULL;
	*note = 0;
	if (!o->cache_dir || o->emit)
		return -ENOENT;
	int e = cc_get(o, "code", k, &c, note, n);
	if (e)
		return e;
	b->host_obj = c->host_obj;
	b->host_len = c->host_len;
	c->host_obj = NULL;
	for (size_t i = 0; i < c->nptx; i++)
		b->ptx[i] = c->ptx[i];
	b->nptx = c->nptx;
	c->nptx = 0;
	bd_free(c);
	snprintf(note, n, "the rules' code from the cache (%s/code): only their data changed", o->cache_dir);
	return 0;
}

int comp_code_put(const CompOpts *o, const BdKey *k, const Bundle *b, char *note, size_t n)
{
	*note = 0;
	if (!o->cache_dir || o->emit)
		return 0;
	Bundle c = {.abi = SN_ABI_VERSION, .rulec_version = (char *)(o->version ? o->version : "?"),
		    .created = (char *)"", .host_obj = b->host_obj, .host_len = b->host_len, .nptx = b->nptx};
	memcpy(c.ptx, b->ptx, sizeof c.ptx);
	return cc_put(o, "code", k, &c, note, n);
}
