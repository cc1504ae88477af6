#!/bin/sh
# A real guest's RAM image (build/fuzz-guest.ram), no guest running:
# - discovery (tests/unit/test_discover.c): several targets found at once
#   under ASan/UBSan and under ThreadSanitizer, and a module table that
#   asks for a guest-sized allocation, under an allocation ceiling (ASan
#   aborts on a larger malloc: the old reader's 4 GiB);
# - the CPU backend's tick on 4 threads (sentinel-inspect built with
#   ThreadSanitizer) reads every value one thread reads
#   (tests/engine/threads_agree.py);
# - the kernel log sentineld attaches to alerts (tests/unit/test_klog.c):
#   kl_tail, which reads back from the newest record, gives the excerpt
#   of the whole ring's for any number of lines and crash reports placed
#   around its lookback, reads a small part of the ring, and a header of
#   2 GiB of text allocates nothing of that size (the same ceiling);
# - sentineld with two copies of it, one made hostile, and hostile
#   clients (tests/engine/test_daemon.py).
#   sh tests/image.sh BUILD-DIR     (SENTINEL_IMAGE_TSAN=1: below)
set -u
. "$(dirname "$0")/lib.sh"
b=${1:-build}
if ! command -v qemu-system-x86_64 >/dev/null 2>&1 && [ ! -s build/fuzz-guest.ram ]; then
	skip "discover/*" "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
	exit 0
fi
guest_image discover || exit 0
# SENTINEL_IMAGE_TSAN=1 (make check's full tier): the daemon's test alone,
# against sentineld built with ThreadSanitizer (the loop, the searches'
# threads, the reload's, delivery); a report is printed in its log, which
# the test reads ("Sanitizer"), and makes it exit 66 at the end
if [ "${SENTINEL_IMAGE_TSAN:-0}" = 1 ]; then
	export TSAN_OPTIONS="exitcode=66 halt_on_error=0"
	py_suite daemon/hostile-tsan tests/engine/test_daemon.py "$b/tsan" build/fuzz-guest.ram
	exit 0
fi
c_tests env ASAN_OPTIONS=max_allocation_size_mb=1024 "$b/san/test_discover" build/fuzz-guest.ram
c_tests env ASAN_OPTIONS=max_allocation_size_mb=1024 "$b/san/test_klog" build/fuzz-guest.ram
# a data race is a failure: exit 66 with both stacks
c_tests env TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$b/tsan/test_discover" build/fuzz-guest.ram
# the CPU backend's tick on 4 threads under ThreadSanitizer reads what one thread reads
c_tests "${PYTHON:-python3}" tests/engine/threads_agree.py "$b/sentinel-inspect" "$b/tsan/sentinel-inspect" \
	"$b/metrics.bundle" build/fuzz-guest.ram 4
py_suite daemon/hostile tests/engine/test_daemon.py "$b/san" build/fuzz-guest.ram
