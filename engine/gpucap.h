/* gpucap.h - lifting libcuda's cap on registered host memory.
 *
 * libcuda caps the host memory registered with cuMemHostRegister at about
 * sysinfo().totalram - 0.6 GiB.  The programs that load libcuda define
 * sysinfo() themselves (gpucap.c) and export it (gpucap.dynlist), so libcuda
 * calls ours; it reports the kernel's totalram plus the lift.  The CUDA
 * backend sets the lift to the bytes of the target's RAM it registers: memory
 * that exists already, which the cap, a guard against pinning more than the
 * machine has, was not meant for.  docs/targets.md says more.
 */
#ifndef SENTINEL_GPUCAP_H
#define SENTINEL_GPUCAP_H

/* Add bytes to the totalram sysinfo() reports (0: none, the default). */
void gpucap_lift(unsigned long long bytes);
unsigned long long gpucap_lifted(void);

/* Tests only: report totalram as bytes (0: the kernel's), before the lift. */
void gpucap_pretend_total(unsigned long long bytes);
/* How many times sysinfo() was called in this process (tests). */
unsigned long gpucap_sysinfo_calls(void);

#endif
