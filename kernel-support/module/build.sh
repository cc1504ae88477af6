#!/bin/sh
# Build sentinel_pmem.ko against a kernel's build tree, out of the source
# folder (one copy a kernel release), and print the module's path.
#   sh kernel-support/module/build.sh KDIR OUTDIR   -> OUTDIR/RELEASE/sentinel_pmem.ko
# (RELEASE: the module's vermagic, what uname -r says on that kernel)
# `make module [KDIR=...]` runs it.
set -eu
kdir=$1 out=$2
src=$(cd "$(dirname "$0")" && pwd)
if [ ! -e "$kdir/Makefile" ]; then
	echo "module: no kernel build tree at $kdir: install the headers of the kernel to build for" \
		"(Debian/Ubuntu: apt-get install linux-headers-\$(uname -r)) or give KDIR=" >&2
	exit 1
fi
kdir=$(cd "$kdir" && pwd)
# the release the module is for is its vermagic's (Debian's headers give
# make kernelrelease the upstream version instead)
tmp=$out/.build-$(basename "$kdir")
rm -rf "$tmp" && mkdir -p "$tmp"
cp "$src/Kbuild" "$src/Makefile" "$src/sentinel_pmem.c" "$src/sentinel_pmem.h" "$tmp/"
(cd "$tmp" && make -s KDIR="$kdir" >&2)
release=$(PATH=$PATH:/sbin:/usr/sbin modinfo -F vermagic "$tmp/sentinel_pmem.ko" | cut -d' ' -f1)
[ -n "$release" ] || { echo "module: cannot read the vermagic of $tmp/sentinel_pmem.ko" >&2; exit 1; }
rm -rf "${out:?}/$release"
mv "$tmp" "$out/$release"
echo "$out/$release/sentinel_pmem.ko"
