#!/bin/sh
# Sentinel's Debian packages on a real systemd host (tests/debian/test_package.py):
# `make deb`'s build (tools/mkdeb.sh, into BUILD-DIR/deb), then install,
# DKMS, the service with kcore and pmem, reload, upgrade and purge in the
# Debian test system.  make check runs it in the background at nice 10
# (tests/run.sh SB).
#   sh tests/debian/package.sh BUILD-DIR
set -u
. "$(dirname "$0")/../lib.sh"
build=$1
guests_can_run debian || exit 0
# (the package build's own test step runs what make check runs anyway)
if ! DEB_BUILD_OPTIONS="nocheck${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}" sh tools/mkdeb.sh "$build/deb"; then
	# the test reports the packages missing, with the build's tail above
	rm -f "$build"/deb/*.deb
fi
py_suite debian/package tests/debian/test_package.py "$build/deb"
