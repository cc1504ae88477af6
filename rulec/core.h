/* core.h - CO-RE relocation of the metric library, and the relocation
 * table the loader fills for each target kernel.
 *
 * The pass (core_relocate) rewrites, in one module:
 *   - clang's llvm.preserve.{struct,array,union}.access.index chains into
 *     address arithmetic on offsets loaded from __sentinel_relo[k];
 *   - the marker objects of kcore.h (__sentinel.enum.E.N, .size.T._,
 *     .exists.T.F, .type.T._) into loads of __sentinel_relo[k];
 *   - every other undefined global (a kernel symbol) into an address loaded
 *     from __sentinel_relo[k].
 * Relocations are interned in a ReloSet shared by the host and the NVPTX
 * module, so one table serves both.  The loader (engine/reloc.c) decides
 * every value first and patches the table second; a relocation it cannot
 * resolve gets RELO_POISON, which makes any read through it a read error.
 *
 * The relocation records themselves are in relo.h.
 */
#ifndef SENTINEL_CORE_H
#define SENTINEL_CORE_H

#include "kx.h"
#include "relo.h"

#include <llvm-c/Core.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Rewrite module m (see above).  Errors about the library (an anonymous
 * member, an unsupported access) go to err as FILE:LINE:COL messages;
 * returns 0 or -errno. */
int core_relocate(LLVMModuleRef m, ReloSet *r, char *err, size_t n);

/* Once every module that shares r is relocated: define the table in m
 * with r->n slots, each RELO_POISON until the loader fills it. */
int core_finish(LLVMModuleRef m, const ReloSet *r);

/* the table's name (kx.h) */
#define CORE_TABLE KX_RELO_SYM

#endif
