/* gpucap.c - lifting libcuda's cap on registered host memory (see gpucap.h).
 *
 * libcuda refuses cuMemHostRegister once the bytes registered would pass
 * about sysinfo().totalram less 0.6 GiB: a guard against pinning more than
 * the machine has.  Sentinel registers memory that already exists (a
 * guest's RAM file, this host's own RAM through /dev/sentinel_pmem), so
 * the guard does not apply, and a bare-metal target is all of RAM, which
 * passes it by construction.  GPUSentinel preloaded a library to change
 * sysinfo(); we define sysinfo() in the executable instead.  The
 * executable's definition comes first in the dynamic linker's global
 * scope, so libcuda (dlopen'ed later) calls it.  It asks the kernel
 * (syscall, not glibc) and adds what gpucap_lift() was told to totalram,
 * nothing else: every other field, and every caller while no lift is set,
 * sees the kernel's answer.  The programs link with
 * -Wl,--dynamic-list=engine/gpucap.dynlist so the symbol is exported.
 */
#include "gpucap.h"

#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

static unsigned long long gpucap_extra;     /* bytes added to totalram */
static unsigned long long gpucap_total;     /* tests: totalram to report, 0 = the kernel's */
static unsigned long gpucap_calls;

void gpucap_lift(unsigned long long bytes) { __atomic_store_n(&gpucap_extra, bytes, __ATOMIC_RELAXED); }

unsigned long long gpucap_lifted(void) { return __atomic_load_n(&gpucap_extra, __ATOMIC_RELAXED); }

void gpucap_pretend_total(unsigned long long bytes) { __atomic_store_n(&gpucap_total, bytes, __ATOMIC_RELAXED); }

unsigned long gpucap_sysinfo_calls(void) { return __atomic_load_n(&gpucap_calls, __ATOMIC_RELAXED); }

int sysinfo(struct sysinfo *info)
{
	long r = syscall(SYS_sysinfo, info);
	__atomic_fetch_add(&gpucap_calls, 1, __ATOMIC_RELAXED);
	if (r != 0)
		return (int)r;
	unsigned long long unit = info->mem_unit ? info->mem_unit : 1;
	unsigned long long total = __atomic_load_n(&gpucap_total, __ATOMIC_RELAXED);
	unsigned long long extra = __atomic_load_n(&gpucap_extra, __ATOMIC_RELAXED);
	if (total)
		info->totalram = (unsigned long)(total / unit);
	if (extra)
		info->totalram += (unsigned long)(extra / unit);
	return 0;
}
