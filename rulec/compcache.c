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
 * recently used go.
 */
#include "compile.h"
#include "lvm.h"
#include "snrt.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CC_MAX_FILES 8
#define CC_MAX_BYTES (256ull << 20)

/* What decides the bundle of rs's files (their names and the text the
 * front end read, not read again) */
static void cc_key(const RuleSet *rs, const CompOpts *o, BdKey *k)
{
	bd_key_init(k, "sentinel bundle 1");
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
	for (size_t i = 0; i < rs->nfiles; i++) {
		bd_key_add(k, rs->files[i]->name, strlen(rs->files[i]->name));
		bd_key_add(k, rs->files[i]->text, rs->files[i]->len);
	}
}

static void cc_path(const char *dir, const BdKey *k, char *out, size_t n)
{
	snprintf(out, n, "%s/bundle/%016llx%016llx.bundle", dir, (unsigned long long)k->h[0],
		 (unsigned long long)k->h[1]);
}

int comp_cache_get(const RuleSet *rs, const CompOpts *o, Bundle **out, char *note, size_t n)
{
	BdKey k;
	char path[4200], err[512];
	*note = 0;
	if (!o->cache_dir || o->emit)
		return -ENOENT;
	cc_key(rs, o, &k);
	cc_path(o->cache_dir, &k, path, sizeof path);
	if (access(path, R_OK))
		return -ENOENT;
	int e = bd_read(path, out, err, sizeof err);
	if (e) {
		snprintf(note, n, "the cached bundle %s cannot be used (%s): removed, compiling again", path, err);
		unlink(path);
		return e;
	}
	utimensat(AT_FDCWD, path, NULL, 0);          /* recently used */
	snprintf(note, n, "the rules' code from the cache (%s), nothing changed since it was compiled", path);
	return 0;
}

int comp_cache_put(const RuleSet *rs, const CompOpts *o, const Bundle *b, char *note, size_t n)
{
	BdKey k;
	char sub[4200], path[4200], tmp[4300], err[512];
	*note = 0;
	if (!o->cache_dir || o->emit)
		return 0;
	cc_key(rs, o, &k);
	snprintf(sub, sizeof sub, "%s/bundle", o->cache_dir);
	if (mkdir(o->cache_dir, 0700) && errno != EEXIST)
		return snprintf(note, n, "cannot make %s: %s", o->cache_dir, strerror(errno)), -errno;
	if (mkdir(sub, 0700) && errno != EEXIST)
		return snprintf(note, n, "cannot make %s: %s", sub, strerror(errno)), -errno;
	cc_path(o->cache_dir, &k, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	int e = bd_write(b, tmp, err, sizeof err);
	if (!e && rename(tmp, path))
		e = -errno;
	if (e) {
		unlink(tmp);
		snprintf(note, n, "cannot keep the compiled rules in %s: %s", sub, *err ? err : strerror(-e));
		return e;
	}
	u_dir_prune(sub, ".bundle", CC_MAX_FILES, CC_MAX_BYTES);
	return 0;
}
