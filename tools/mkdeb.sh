#!/bin/sh
# make deb: Debian's packages of this tree, built by Debian's own tooling
# (debian/: debhelper, dh-dkms) in a copy of the tree, so the developer's
# build/ and config.mk are left alone.
#
#   sh tools/mkdeb.sh OUTDIR   -> OUTDIR/sentinel_VERSION_amd64.deb,
#                                 OUTDIR/sentinel-pmem-dkms_VERSION_all.deb,
#                                 OUTDIR/lintian.txt (what lintian says of both)
# Installs the build's tools and build dependencies where it can (root with
# apt-get), otherwise names them.  Progress on stderr; the log of the
# package build in OUTDIR/build.log.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/guest/install.sh"
out=$(mkdir -p "$1" && cd "$1" && pwd)
missing=
command -v dpkg-buildpackage >/dev/null 2>&1 || missing="$missing dpkg-dev"
command -v dh >/dev/null 2>&1 || missing="$missing debhelper"
command -v dh_dkms >/dev/null 2>&1 || missing="$missing dh-dkms"
command -v lintian >/dev/null 2>&1 || missing="$missing lintian"
command -v fakeroot >/dev/null 2>&1 || missing="$missing fakeroot"
apt_install mkdeb "$missing"
# the build dependencies debian/control names (configure installs most)
unmet=$(cd "$top" && dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p' |
	sed 's/([^)]*)//g')
apt_install mkdeb "$unmet"

# the tree as git sees it (tracked files and new ones not ignored), or all
# of it but the build outputs and caches outside a git checkout
src=$out/src
rm -rf "$src" && mkdir -p "$src"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z -c -o --exclude-standard | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -xf - -C "$src"
else
	(cd "$top" && tar --exclude=./build --exclude=./.cache --exclude=./config.mk --exclude=./.device -cf - .) |
		tar -xf - -C "$src"
fi
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
echo "mkdeb: building sentinel $version with dpkg-buildpackage (a few minutes; log: $out/build.log)" >&2
t0=$(date +%s)
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
if ! (cd "$src" && dpkg-buildpackage -us -uc -b -j"$(nproc)") > "$out/build.log" 2>&1; then
	tail -n 30 "$out/build.log" >&2
	echo "mkdeb: the package build failed; the whole log: $out/build.log" >&2
	exit 1
fi
# (dpkg-buildpackage writes the packages beside the tree: in $out)
rm -rf "$src"
# errors, warnings and the informational tags (-I); each override in
# debian/*.lintian-overrides says why
lintian -I --tag-display-limit 0 "$out"/sentinel_"$version"_*.changes 2>&1 |
	grep -v '^running with root privileges' > "$out/lintian.txt" || true
echo "mkdeb: built in $(( $(date +%s) - t0 )) s:" >&2
ls -1 "$out"/*.deb >&2
if [ -s "$out/lintian.txt" ]; then
	echo "mkdeb: lintian says ($out/lintian.txt):" >&2
	cat "$out/lintian.txt" >&2
else
	echo "mkdeb: lintian: clean" >&2
fi
