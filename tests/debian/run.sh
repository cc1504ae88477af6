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
# (tests/debian/test_rules.py, the shipped network rules on e1000e, is not
# run here yet: with every shipped rule loaded, NetworkReceiveErrors did not
# fire in 7 minutes although the same expression alone fires at its [2m]
# window's cover; being found, see docs/testing.md)
