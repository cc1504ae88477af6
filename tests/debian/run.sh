#!/bin/sh
# A real Debian 12 system (tests/debian/mkimage.sh builds it once, from
# Debian's packages): Sentinel's metrics against node_exporter's on it,
# idle and under load (fidelity.py).
#   sh tests/debian/run.sh BUILD-DIR (its san/sentinel-inspect, its metrics.bundle)
set -u
. "$(dirname "$0")/../lib.sh"
build=$1
guests_can_run debian || exit 0
# make check's background build of the image, if it started one
if [ -s "$SENTINEL_TEST_TMP/debian-image.log" ]; then
	echo "-- the image's background build said:"
	sed 's/^/   /' "$SENTINEL_TEST_TMP/debian-image.log"
fi
py_suite debian/fidelity tests/debian/fidelity.py "$build/san" "$build/metrics.bundle"
# (tests/debian/rules.sh, the shipped network rules on an e1000e: make
# check runs it in the background beside the busybox guests)
