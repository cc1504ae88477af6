#!/bin/sh
# sentineld end to end (tests/engine/test_engine.py): start-up failures,
# then a live guest: idle, a CPU hog, reloads, a killed guest; the remote
# sinks (test_notify.py); three guests watched by one sentineld
# (test_targets.py).
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
# (with the restart test, ten minutes of waiting for a for: 10m, unless
# SENTINEL_NOTIFY_SKIP=restart: make check runs it beside the others,
# tests/engine/restart.sh)
py_suite engine/notify tests/engine/test_notify.py "$build" "$backend"
# several targets in one sentineld: the CPU backend's for now
if [ "$backend" = cpu ]; then
	py_suite engine/targets tests/engine/test_targets.py "$build"
fi
exit 0
