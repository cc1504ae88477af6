#!/bin/sh
# State across a restart (tests/engine/test_notify.py's restart part,
# issue 33): a for: 10m alert with an hour's window fires on an idle guest
# of its own, sentineld is killed and a new one restores it.  Ten minutes
# of waiting: make check runs it in the background (tests/run.sh SB)
# beside the other engine suites, which skip it (SENTINEL_NOTIFY_SKIP).
#   sh tests/engine/restart.sh BUILD-DIR [cpu|cuda]
set -u
. "$(dirname "$0")/../lib.sh"
build=$1 backend=${2:-cpu}
if ! command -v qemu-system-x86_64 >/dev/null 2>&1 && [ -z "${SENTINEL_QEMU:-}" ]; then
	skip "engine/restart" "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
	exit 0
fi
SENTINEL_NOTIFY_ONLY=restart py_suite engine/notify-restart tests/engine/test_notify.py "$build" "$backend"
exit 0
