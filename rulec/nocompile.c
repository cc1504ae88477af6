/* nocompile.c - what a static build has in place of the compiler.
 *
 * `make static` links sentinel-inspect and sentineld without LLVM (one
 * file to copy onto a machine, or to run inside a test guest): they run
 * bundles that rulec compiled elsewhere, on the CPU backend.  These stand
 * in for compile.c's entry points and say what to do instead.
 */
#include "compile.h"

#include <errno.h>
#include <stdio.h>

int comp_build(const CgProg *p, const CompOpts *o, Bundle **out, char *err, size_t n)
{
	(void)p; (void)o;
	*out = NULL;
	snprintf(err, n, "this is the static build (make static), which does not compile: give a bundle made by "
		 "rulec (--bundle FILE; rulec --all-metrics -o FILE for every metric)");
	return -ENOTSUP;
}

int comp_dir(const char *dir, const CompOpts *o, Bundle **out, char **diags, char *err, size_t n)
{
	(void)o;
	*out = NULL;
	*diags = NULL;
	snprintf(err, n, "this is the static sentineld (make static), which does not compile rules: compile %s with "
		 "rulec -o FILE %s elsewhere and give [rules] bundle = FILE", dir, dir);
	return -ENOTSUP;
}

int comp_build_all(const char *version, Bundle **out, char *err, size_t n)
{
	(void)version;
	return comp_build(NULL, NULL, out, err, n);
}

int comp_cache_keep(const CompOpts *o, const CompKeep *k, const Bundle *b, char *note, size_t n)
{
	(void)o; (void)k; (void)b;
	*note = 0;
	(void)n;
	return 0;                 /* comp_dir kept nothing to keep */
}
