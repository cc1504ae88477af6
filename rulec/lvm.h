/* lvm.h - rulec's one door to LLVM's infrastructure.
 *
 * Targets, target machines, the runtime library bitcode built into rulec,
 * the optimisation pipeline and code emission.  Every LLVMErrorRef and
 * every LLVM error message is translated here (lvm_error) and nowhere else.
 * Errors are negative errno values with a message in the caller's buffer.
 */
#ifndef SENTINEL_LVM_H
#define SENTINEL_LVM_H

#include "bundle.h"

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/TargetMachine.h>

#include <stdbool.h>
#include <stddef.h>

typedef enum { LVM_HOST, LVM_NVPTX } LvmTarget;

#define LVM_HOST_TRIPLE "x86_64-unknown-linux-gnu"
#define LVM_NVPTX_TRIPLE "nvptx64-nvidia-cuda"
#define LVM_HOST_CPU "x86-64"            /* bundles move between hosts: no -march=native */

/* Initialise LLVM's x86-64 and NVPTX targets (once). */
void lvm_ensure_init(void);

/* Translate an LLVMErrorRef (consumed) into err; returns -EINVAL. */
int lvm_error(LLVMErrorRef e, const char *what, char *err, size_t n);

/* The runtime library (metric library, translation runtime, evaluation
 * runtime) as bitcode for a target, parsed into ctx. */
int lvm_load_library(LLVMContextRef ctx, LvmTarget t, LLVMModuleRef *out, char *err, size_t n);
/* The same from a bitcode or textual IR file (tests, --llview). */
int lvm_load_file(LLVMContextRef ctx, const char *path, LLVMModuleRef *out, char *err, size_t n);

/* A target machine: cpu is e.g. "sm_70" for NVPTX (NULL: LVM_HOST_CPU for
 * the host).  PTX code generation is fast (FastISel, no machine-level
 * optimisation) unless full: the IR is optimised already, and the driver's
 * ptxas optimises PTX again when it loads it.  x86-64 is what the CPU
 * backend runs as it is: always the default level (registers allocated,
 * not every value spilled to the stack; its code a third smaller and its
 * tick at 25,000 tasks faster for about 0.5 s more of compile). */
int lvm_machine(LvmTarget t, const char *cpu, bool full, LLVMTargetMachineRef *out, char *err, size_t n);

int lvm_verify(LLVMModuleRef m, const char *what, char *err, size_t n);
/* Optimise: a short pipeline, or default<O2> when full. */
int lvm_optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, bool full, char *err, size_t n);

/* PTX text (NVPTX) or an ELF object (host), malloc'd into *out. */
int lvm_emit(LLVMModuleRef m, LLVMTargetMachineRef tm, void **out, size_t *len, char *err, size_t n);

/* Separately compiled PTX, for the driver's linker (ptxas's time on one
 * module grows faster than the rule count): nparts modules, of which
 * part(name, arg) says which defines each function and variable,
 * made and emitted for each of the ncpus architectures on threads.
 * out[c] is architecture c's parts one after the other, each after a line
 * mark "K of N" (malloc'd, length outlen[c]).  m's local symbols become
 * external (hidden). */
typedef unsigned (*LvmPartFn)(const char *name, void *arg);
int lvm_emit_parts(LLVMModuleRef m, unsigned nparts, LvmPartFn part, void *arg, const char *const *cpus,
		   unsigned ncpus, bool full, const char *mark, char **out, size_t *outlen, char *err, size_t n);

/* The runtime library's bitcode (both targets') into a content key */
void lvm_library_key(BdKey *k);

/* Textual IR of m, malloc'd. */
char *lvm_print(LLVMModuleRef m);

#endif
