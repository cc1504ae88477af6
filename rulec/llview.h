/* llview.h - the LLView pass: loads of kernel memory become translated loads.
 *
 * GPUSentinel's LLView rewrote every LLVM load of a monitor into a call to
 * its g_map() translation.  Ours rewrites only the loads that may read the
 * monitored kernel's memory and proves the others local:
 *
 *   local   the pointer comes from an alloca, a global this module defines,
 *           an argument every caller passes a local pointer (an entry
 *           point's arguments are local: the engine passes its own memory);
 *   kernel  it comes from an undefined global (a kernel symbol), an
 *           integer (inttoptr: an address read from the kernel or computed
 *           by CO-RE), or a pointer loaded through a kernel pointer.
 *
 * A kernel load `load T, ptr %p` becomes
 *     %v = call i64 @__llview_load(i64 ptrtoint %p, i32 sizeof(T), ptr %err)
 * converted back to T; a 16-byte load of <2 x i64> (two adjacent words
 * in one request) becomes __llview_load16(i64 va, ptr %err); a memcpy
 * from kernel memory becomes __llview_copy.
 * %err is an i32 the pass allocates in the function; a `km_` entry point
 * returning double returns NaN when it is set, one returning i32 returns
 * the error; calls to __llview_failed() read it.  Stores, atomics and
 * memset on kernel memory are errors (the detector never writes to the
 * kernel), as is a pointer that may be either kind.
 *
 * Runtime functions (kx_*, __llview_*, simt_*, sn_*) are not rewritten.
 */
#ifndef SENTINEL_LLVIEW_H
#define SENTINEL_LLVIEW_H

#include <llvm-c/Core.h>

#include <stddef.h>

typedef struct LvStats {
	unsigned loads_kernel;      /* rewritten */
	unsigned loads_local;       /* proved local, left alone */
	unsigned copies_kernel;     /* memcpy from kernel memory */
	unsigned functions;         /* functions with rewritten loads */
} LvStats;

/* Rewrite m.  Errors (FILE:LINE:COL: error: LLView: ...) go to err; the
 * first one is reported.  Returns 0 or -errno. */
int lv_rewrite(LLVMModuleRef m, LvStats *st, char *err, size_t n);

#endif
