#!/bin/sh
# Fetch what guest tests boot: the newest Debian 6.1 and 6.12 kernels (with
# the modules that swap on zram needs), Debian 11's 5.10 (an older
# layout: no kallsyms in VMCOREINFO, the first lockless printk ring) and
# Debian 13's backported 7.2 (the newest), and build a busybox initramfs
# for each.  Everything is cached under $SENTINEL_GUEST_CACHE (default
# .cache/guest); a second run downloads nothing.
#
#   sh tests/guest/fetch.sh            -> prints one line per kernel: NAME DIR
#   sh tests/guest/fetch.sh --headers NAME...
#                                      -> each kernel's build tree, for building
#                                         the sentinel_pmem module: NAME KDIR
#                                         (the headers packages of its exact
#                                         release, unpacked under the cache)
set -eu
PATH=$PATH:/sbin:/usr/sbin   # depmod
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/guest/install.sh"
cache=${SENTINEL_GUEST_CACHE:-$top/.cache/guest}
mkdir -p "$cache"
cd "$cache"

need_tools() {
	missing=
	command -v qemu-system-x86_64 >/dev/null 2>&1 || missing="$missing qemu-system-x86"
	[ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx insmod || missing="$missing busybox-static"
	command -v cpio >/dev/null 2>&1 || missing="$missing cpio"
	command -v xz >/dev/null 2>&1 || missing="$missing xz-utils"
	command -v depmod >/dev/null 2>&1 || [ -x /sbin/depmod ] || missing="$missing kmod"
	apt_install fetch "$missing"
}

# newest package whose name matches a regular expression
newest() {
	apt-cache $aptopts search --names-only "$1" | sed 's/ .*//' | sort -V | tail -n 1
}

# fetch_kernel NAME PATTERN [SUITE]: SUITE, another Debian release than the
# machine's, is read through package lists of its own under the cache (the
# machine's sources and lists are left alone; the archive keyring checks it)
fetch_kernel() {
	name=$1 pattern=$2 suite=${3:-}
	dir=$cache/$name
	# ready holds the initramfs script's checksum: a changed script (new
	# modules) fetches again, as the modules are not kept
	if [ -f "$dir/ready" ] && [ "$(cat "$dir/ready")" = "$initramfs_sum" ]; then
		echo "$name $dir"
		return
	fi
	aptopts=
	if [ -n "$suite" ]; then
		a=$cache/apt-$suite
		mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
		echo "deb http://deb.debian.org/debian $suite main" > "$a/sources.list"
		aptopts="-o Dir::Etc::sourcelist=$a/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$a/lists -o Dir::Cache=$a/cache"
	fi
	pkg=$(newest "$pattern")
	if [ -z "$pkg" ]; then
		apt-get $aptopts update -q >&2 || true
		pkg=$(newest "$pattern")
	fi
	[ -n "$pkg" ] || { echo "fetch: no package matches $pattern (apt-get update?)" >&2; exit 1; }
	# Debian's newest linux-image-* holds only the packaging: the kernel,
	# its modules and its config are in the linux-binary-*, linux-modules-*
	# and linux-base-* packages it depends on
	bin=$(apt-cache $aptopts depends "$pkg" | sed -n 's/^ *Depends: \(linux-\(binary\|modules\|base\)-[^ <>]*\)$/\1/p')
	echo "fetch: $name: downloading $pkg $bin" >&2
	rm -rf "$dir" && mkdir -p "$dir/pkg"
	(cd "$dir" && apt-get $aptopts download "$pkg" $bin >&2 2>/dev/null || apt-get $aptopts download "$pkg" $bin >&2)
	for f in "$dir"/*.deb; do dpkg-deb -x "$f" "$dir/pkg"; done
	rm -f "$dir"/*.deb
	# the kernel, its config and System.map in /boot, the modules in
	# /lib/modules; or (Debian 13's newest) all of them in /usr/lib/modules/RELEASE
	base=$dir/pkg
	[ -d "$base/lib/modules" ] || base=$dir/pkg/usr
	release=$(ls "$base/lib/modules")
	m=$base/lib/modules/$release
	if [ -f "$m/vmlinuz" ]; then
		cp "$m/vmlinuz" "$dir/vmlinuz" && cp "$m/config" "$dir/config"
		cp "$m/System.map" "$dir/System.map" 2>/dev/null || true
	else
		cp "$dir"/pkg/boot/vmlinuz-* "$dir/vmlinuz" && cp "$dir"/pkg/boot/config-* "$dir/config"
		cp "$dir"/pkg/boot/System.map-* "$dir/System.map" 2>/dev/null || true
	fi
	echo "$release" > "$dir/release"
	depmod -b "$base" "$release"
	sh "$top/tests/guest/mkinitramfs.sh" "$m" "$dir/initramfs.cpio.gz" >&2
	rm -rf "$dir/pkg"
	echo "$initramfs_sum" > "$dir/ready"
	echo "$name $dir"
}

# fetch_headers NAME: the linux-headers packages of the release the cached
# kernel NAME is (its -common and linux-kbuild too), unpacked into
# NAME/headers; the build tree's Makefile points at the unpacked -common
# one instead of /usr/src.  Prints "NAME KDIR".
fetch_headers() {
	name=$1
	dir=$cache/$name
	release=$(cat "$dir/release")
	h=$dir/headers
	kdir=$h/usr/src/linux-headers-$release
	if [ -f "$h/ready" ] && [ "$(cat "$h/ready")" = "$release" ]; then
		echo "$name $kdir"
		return
	fi
	aptopts=
	pkgs=$(apt-cache depends "linux-headers-$release" 2>/dev/null | sed -n 's/^ *|\{0,1\}Depends: \(linux-\(headers\|kbuild\)-[^ ]*\)$/\1/p' | sort -u)
	if [ -z "$pkgs" ]; then
		apt-get update -q >&2 || true
		pkgs=$(apt-cache depends "linux-headers-$release" 2>/dev/null | sed -n 's/^ *|\{0,1\}Depends: \(linux-\(headers\|kbuild\)-[^ ]*\)$/\1/p' | sort -u)
	fi
	if [ -z "$pkgs" ]; then
		echo "fetch: no linux-headers-$release in the package lists: the cached $name kernel is older than the" \
			"archive's; delete $dir and fetch again" >&2
		exit 1
	fi
	echo "fetch: $name: downloading linux-headers-$release" $pkgs >&2
	rm -rf "$h" && mkdir -p "$h/deb"
	(cd "$h/deb" && apt-get download "linux-headers-$release" $pkgs >&2 2>/dev/null ||
		apt-get download "linux-headers-$release" $pkgs >&2)
	for f in "$h"/deb/*.deb; do dpkg-deb -x "$f" "$h"; done
	rm -rf "$h/deb"
	sed -i "s|^include /usr/src/|include $h/usr/src/|" "$kdir/Makefile"
	echo "$release" > "$h/ready"
	echo "$name $kdir"
}

if [ "${1:-}" = --headers ]; then
	shift
	for name in "$@"; do
		[ -f "$cache/$name/release" ] || { echo "fetch: no cached kernel $name: run sh tests/guest/fetch.sh first" >&2; exit 1; }
		fetch_headers "$name"
	done
	exit 0
fi

need_tools
initramfs_sum=$(cksum < "$top/tests/guest/mkinitramfs.sh" | cut -d' ' -f1)
fetch_kernel debian-6.1 '^linux-image-6\.1\.0-[0-9]+-amd64$'
fetch_kernel debian-6.12 '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$'
fetch_kernel debian-5.10 '^linux-image-5\.10\.0-[0-9]+-amd64$' bullseye
# Debian 13's backported kernel, the newest layout tested (kallsyms offsets
# relative to themselves, the NTP state in tk_ntp_data, idle time in
# kcpustat).  The archive drops a backport's modules when the next one
# comes (6.19's went so): then it is said, and its tests are skipped
# (in a subshell of its own with -e: in a `||` list -e would be off)
set +e
(set -e; fetch_kernel debian-7.2 '^linux-image-7\.2\.[0-9]+\+deb13-amd64$' trixie-backports)
[ $? = 0 ] || echo "fetch: debian-7.2 could not be fetched (gone from trixie-backports?); its tests are skipped" >&2
