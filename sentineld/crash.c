/* crash.c - sentineld: where a crash happened, for the fault tests.
 *
 * With SENTINEL_TEST_FAULTS set (the suites' test hook), SIGSEGV, SIGBUS
 * and SIGABRT print the faulting thread's stack as OBJECT+OFFSET lines
 * (addr2line -e OBJECT OFFSET turns them into lines of source) and the
 * signal is raised again.  Not async-signal-safe (backtrace, dladdr): a
 * test's last words, never a production path. */
#define _GNU_SOURCE                 /* dladdr */
#include "sentineld.h"

#include <dlfcn.h>
#include <execinfo.h>

static void d_crash(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char line[600];
	int n = snprintf(line, sizeof line, "sentineld: signal %d (%s) at address %p in thread %ld; its stack:\n", sig,
			 strsignal(sig), si->si_addr, (long)syscall(SYS_gettid));
	ssize_t w = write(2, line, (size_t)n);
	void *pc[48];
	int k = backtrace(pc, 48);
	for (int i = 0; i < k; i++) {
		Dl_info di;
		if (dladdr(pc[i], &di) && di.dli_fname)
			n = snprintf(line, sizeof line, "  %s+0x%lx (%s)\n", di.dli_fname,
				     (unsigned long)((uintptr_t)pc[i] - (uintptr_t)di.dli_fbase),
				     di.dli_sname ? di.dli_sname : "?");
		else
			n = snprintf(line, sizeof line, "  %p\n", pc[i]);
		w = write(2, line, (size_t)n);
	}
	(void)w;
	raise(sig);                      /* SA_RESETHAND: the default action now */
}

void d_crash_report(void)
{
#ifdef __SANITIZE_ADDRESS__
	return;                          /* ASan's own report says more */
#endif
	if (!getenv("SENTINEL_TEST_FAULTS"))
		return;
	struct sigaction sa = {.sa_sigaction = d_crash, .sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
}
