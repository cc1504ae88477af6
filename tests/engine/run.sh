#!/bin/sh
# sentineld end to end (tests/engine/test_engine.py): start-up failures,
# then a live guest: idle, a CPU hog, reloads, a killed guest.
#   sh tests/engine/run.sh BUILD-DIR [cpu|cuda]
set -u
. "$(dirname "$0")/../lib.sh"
build=$1 backend=${2:-cpu}
py=${PYTHON:-python3}
if ! command -v qemu-system-x86_64 >/dev/null 2>&1 && [ -z "${SENTINEL_QEMU:-}" ]; then
	skip "engine/*" "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
	exit 0
fi
py_suite engine/scenarios tests/engine/test_engine.py "$build" "$backend"
# the remote sinks: a real Alertmanager and a webhook receiver on loopback
py_suite engine/notify tests/engine/test_notify.py "$build" "$backend"
exit 0
