#!/bin/sh
# Sentinel's Debian packages on a real systemd host (tests/debian/test_package.py):
# `make deb`'s build (tools/mkdeb.sh, into BUILD-DIR/deb), then install,
# DKMS, the service with kcore and pmem, reload, upgrade and purge in the
# Debian test system.  make check-system runs it in the background (tests/run.sh
# SB, the system tier).
#   sh tests/debian/package.sh BUILD-DIR
set -u
. "$(dirname "$0")/../lib.sh"
build=$1
guests_can_run debian || exit 0
if ! sh tools/mkdeb.sh "$build/deb"; then
	# the test reports the packages missing, with the build's tail above
	rm -f "$build"/deb/*.deb
fi
py_suite debian/package tests/debian/test_package.py "$build/deb"
