#!/bin/sh
# The shipped network rules on the real Debian system's e1000e
# (tests/debian/test_rules.py): NetworkReceiveErrors for the interface fed
# oversized frames, and for no other.  make check runs it in the
# background (tests/run.sh SB): its image first (tests/debian/mkimage.sh
# waits for the build make check started, or builds it), then minutes of
# waiting for the rules' [2m] windows and for: 2m.
#   sh tests/debian/rules.sh BUILD-DIR (its san/sentineld)
set -u
. "$(dirname "$0")/../lib.sh"
build=$1
guests_can_run debian || exit 0
py_suite debian/rules tests/debian/test_rules.py "$build/san"
