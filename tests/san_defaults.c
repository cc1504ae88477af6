/* san_defaults.c - sanitizer options built into the ASan/UBSan test binaries.
 *
 * intercept_tls_get_addr=0: GCC 12's sanitizer runtime (Debian 12) takes a
 * dynamic TLS block whose address is 16 bytes past a page boundary for a
 * glibc 2.19 block and reads the two words before it as its bounds; since
 * glibc 2.25 there is no such header, so LeakSanitizer then scans a bogus
 * range at exit and dies ("Tracer caught signal 11", "DTLS 5 at 0x4ca-...").
 * Where malloc puts libLLVM's TLS decides it, so any change to the code
 * could turn it on or off (google/sanitizers#1322; fixed in LLVM 17).
 * Leaks are still found everywhere else; only pointers held solely in a
 * shared library's dynamic TLS go unscanned.  ASAN_OPTIONS in the
 * environment still adds to and overrides this. */
const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
	return "intercept_tls_get_addr=0";
}
