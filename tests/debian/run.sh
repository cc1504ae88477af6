#!/bin/sh
# A real Debian 12 system (tests/debian/mkimage.sh builds it once, from
# Debian's packages): Sentinel's metrics against node_exporter's on it,
# idle and under load (fidelity.py).
#   sh tests/debian/run.sh BUILD-DIR (its san/sentinel-inspect, its metrics.bundle)
set -u
. "$(dirname "$0")/../lib.sh"
build=$1
guests_can_run debian || exit 0
py_suite debian/fidelity tests/debian/fidelity.py "$build/san" "$build/metrics.bundle"
# the shipped network rules on e1000e: oversized frames fed to it raise NetworkReceiveErrors
py_suite debian/rules tests/debian/test_rules.py "$build/san"
