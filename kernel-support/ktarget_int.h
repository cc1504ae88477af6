/* ktarget_int.h - what discovery's two files (ktarget.c, ksyms.c) share;
 * private to them: nothing outside kernel-support/ includes it but the
 * discovery fuzzer (tests/fuzz/fuzz_discover.c), which runs kt_open's
 * steps one at a time. */
#ifndef SENTINEL_KTARGET_INT_H
#define SENTINEL_KTARGET_INT_H

#include "ktarget.h"

#define KT_MAX_MODULES 4096

/* Where the VMCOREINFO scan is (ktarget.c): each call goes on from the
 * last hit, so that all RAM is scanned once however many candidates it
 * holds. */
typedef struct KtScan {
	unsigned range;
	size_t off;
	unsigned tried;               /* candidates handed out */
} KtScan;

/* A VMCOREINFO number (base 10 or 16), false when absent or malformed. */
bool kt_info_u64(const KTarget *t, const char *key, int base, uint64_t *v);
/* Whether a search must stop (KtOptions: cancelled, past its deadline):
 * 0, -ECANCELED or -ETIMEDOUT; and that answer as the caller's error. */
int kt_stop(const KtOptions *o);
int kt_stopped(char *err, size_t n, int e, const char *what, const KtScan *sc);

/* ksyms.c: the kernel's symbols from its memory or a file; the modules'. */
int kt_kallsyms_memory(KTarget *t, const KtOptions *o, char *err, size_t n);
int kt_kallsyms_file(KTarget *t, const char *path, char *err, size_t n);
int kt_setup_module_syms(KTarget *t, const KtOptions *opt);

/* ktarget.c: kt_open's steps, in its order.  VMCOREINFO found, loaded and
 * proved (t->src and t->mem set: ms_fill); then, after the symbols, the
 * direct map, the CPUs, the kernel's BTF, the modules' BTF (their
 * symbols: kt_setup_module_syms) and KASLR. */
int kt_vmcoreinfo(KTarget *t, const KtOptions *o, char *err, size_t n);
int kt_setup_direct_map(KTarget *t, char *err, size_t n);
int kt_setup_cpus(KTarget *t, char *err, size_t n);
int kt_setup_btf(KTarget *t, const char *file, char *err, size_t n);
int kt_setup_module_btf(KTarget *t, const KtOptions *opt);
void kt_setup_kaslr(KTarget *t);

#endif
