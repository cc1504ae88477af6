#!/bin/sh
# A real Debian 12 system (tests/debian/mkimage.sh builds it once, from
# Debian's packages): Sentinel's metrics against node_exporter's on it,
# idle and under load (fidelity.py).
#   sh tests/debian/run.sh BUILD-DIR (its san/sentinel-inspect, its metrics.bundle)
set -u
. "$(dirname "$0")/../lib.sh"
build=$1
if [ "${SENTINEL_SKIP_GUEST:-0}" = 1 ]; then
	skip "debian/*" "SENTINEL_SKIP_GUEST=1"
	exit 0
fi
if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	skip "debian/*" "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
	exit 0
fi
py_suite debian/fidelity tests/debian/fidelity.py "$build/san" "$build/metrics.bundle"
