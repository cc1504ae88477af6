#!/bin/sh
# Build (once) a real Debian 12 system for the tests and benchmarks that
# need one: systemd, journald, udev, Debian's own kernel and initramfs,
# node_exporter, stress-ng and two real services (nginx, PostgreSQL),
# installed by mmdebstrap from Debian's packages into an ext4 image.
#
#   sh tests/debian/mkimage.sh        -> prints the image's directory:
#       rootfs.img   the root filesystem (ext4, 3 GiB sparse; boot it with a
#                    throwaway overlay, QEMU's snapshot=on, so it stays as built)
#       vmlinuz, initrd.img, release   Debian's kernel and initramfs, from /boot
#       packages     the installed packages and versions (dpkg -l)
#
# Cached under $SENTINEL_DEBIAN_CACHE (default .cache/debian), keyed by this
# script's checksum: a second run builds nothing; an edit here builds anew.
# Needs root (mmdebstrap's root mode, mke2fs -d keeps owners) and Debian's
# package archive; installs mmdebstrap and e2fsprogs itself where apt-get can.
# Boot it by hand: python3 tests/debian/debguest.py boot
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/guest/install.sh"
cache=${SENTINEL_DEBIAN_CACHE:-$top/.cache/debian}
suite=${SENTINEL_DEBIAN_SUITE:-bookworm}
mirror=${SENTINEL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# (the recipe below its marker line and the command loop, comments left
# out: a changed comment or message builds nothing anew)
sum=$( (sed -n '/^# ---- the recipe/,$p' "$0"; cat "$top/tests/debian/testshell" "$top/tests/debian/spindl/"*) |
	grep -v '^[[:space:]]*#' | sha256sum | cut -c1-16)
dir=$cache/$suite-$sum
# one builder at a time (make check starts one in the background; a
# second waits for it and finds the image ready)
mkdir -p "$cache"
exec 9> "$cache/$suite-$sum.lock"
flock 9
if [ -f "$dir/ready" ]; then
	echo "$dir"
	exit 0
fi

missing=
command -v mmdebstrap >/dev/null 2>&1 || missing="$missing mmdebstrap"
command -v mke2fs >/dev/null 2>&1 || [ -x /sbin/mke2fs ] || missing="$missing e2fsprogs"
apt_install mkimage "$missing"
if [ "$(id -u)" != 0 ]; then
	echo "mkimage: run as root (mmdebstrap installs into a chroot; the image keeps the files' owners)" >&2
	exit 1
fi
PATH=$PATH:/sbin:/usr/sbin

# images of an older recipe are stale (a GiB each): this checkout's cache
# keeps the newest alone
for old in "$cache/$suite"-*; do
	case $old in "$dir" | "$dir.lock") ;; *) rm -rf "$old" ;; esac
done

# ---- the recipe: what the image holds (the cache key: everything below)
rm -rf "$dir" && mkdir -p "$dir"
root=$dir/root
# what a small real server runs: systemd and its journal, udev, a network
# set up by systemd-networkd (DHCP from QEMU's user-mode network), cron,
# a time daemon, node_exporter, a web server and a database; stress-ng,
# ethtool and dmsetup for the faults the tests make (a NIC at 10 Mb/s, a
# suspended device-mapper disk whose writers wait in D); the tests' own
# static helpers come on a second disk, labelled sentinel, mounted on
# /opt/sentinel when there is one (debguest.py makes it); the kernel's
# headers, make and DKMS, as a host that builds an out-of-tree module has
# them (the spinlock-deadlock test module is built here, against this
# kernel; Sentinel's DKMS package builds in the guest); the libraries
# Sentinel's package depends on, so installing it needs no network
pkgs=systemd-sysv,udev,dbus,systemd-timesyncd,linux-image-amd64,initramfs-tools,kmod,procps,iproute2,\
iputils-ping,curl,ca-certificates,cron,logrotate,less,psmisc,util-linux,e2fsprogs,ethtool,dmsetup,\
prometheus-node-exporter,stress-ng,nginx-light,postgresql,\
linux-headers-amd64,make,dkms,libcurl4,libmicrohttpd12,libyaml-0-2,libbpf1,libjansson4,libinih1,libllvm19
echo "mkimage: installing Debian $suite with: $pkgs (a few minutes; packages from $mirror)" >&2
t0=$(date +%s)
mmdebstrap --mode=root --variant=minbase --include="$pkgs" \
	--aptopt='Acquire::Retries "3"' \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
	--customize-hook='echo sentinel-debian > "$1/etc/hostname"' \
	--customize-hook='printf "127.0.0.1 localhost\n127.0.1.1 sentinel-debian\n" > "$1/etc/hosts"' \
	--customize-hook='printf "LABEL=root / ext4 defaults,errors=remount-ro 0 1\nLABEL=sentinel /opt/sentinel ext4 ro,nofail,x-systemd.device-timeout=5s 0 0\n" > "$1/etc/fstab"' \
	--customize-hook='printf "[Match]\nName=en* eth*\n[Network]\nDHCP=ipv4\n" > "$1/etc/systemd/network/20-wired.network"' \
	--customize-hook='chroot "$1" systemctl enable systemd-networkd >/dev/null 2>&1' \
	--customize-hook='chroot "$1" passwd -d root >/dev/null' \
	--customize-hook="copy-in $top/tests/debian/testshell /usr/local/sbin" \
	--customize-hook='chmod 755 "$1/usr/local/sbin/testshell"' \
	--customize-hook='printf "[Unit]\nDescription=Sentinel test driver'"'"'s command loop on ttyS1\nAfter=systemd-journald.service\n[Service]\nExecStart=/usr/local/sbin/testshell /dev/ttyS1\nRestart=always\nStandardInput=null\n[Install]\nWantedBy=multi-user.target\n" > "$1/etc/systemd/system/sentinel-testshell.service"' \
	--customize-hook='chroot "$1" systemctl enable sentinel-testshell >/dev/null 2>&1' \
	--customize-hook='mkdir -p "$1/etc/systemd/journald.conf.d" && printf "[Journal]\nStorage=persistent\nSystemMaxUse=64M\n" > "$1/etc/systemd/journald.conf.d/size.conf"' \
	--customize-hook='mkdir -p "$1/usr/local/src/spindl" "$1/usr/local/lib/sentinel-test"' \
	--customize-hook="copy-in $top/tests/debian/spindl/spindl.c $top/tests/debian/spindl/Kbuild /usr/local/src/spindl" \
	--customize-hook='chroot "$1" sh -c "make -s -C /usr/src/linux-headers-\$(ls /lib/modules | sort -V | tail -n 1) M=/usr/local/src/spindl modules && cp /usr/local/src/spindl/spindl.ko /usr/local/lib/sentinel-test/"' \
	--customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" > "$1/../packages"' \
	"$suite" "$root" "$mirror" >&2
kver=$(ls "$root/lib/modules" | sort -V | tail -n 1)
cp "$root/boot/vmlinuz-$kver" "$dir/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$dir/initrd.img"
echo "$kver" > "$dir/release"
mke2fs -q -t ext4 -L root -d "$root" "$dir/rootfs.img" 3G
rm -rf "$root"
echo "$sum" > "$dir/ready"
echo "mkimage: $dir: Debian $suite, kernel $kver, $(wc -l < "$dir/packages") packages, built in $(( $(date +%s) - t0 )) s; image $(du -h "$dir/rootfs.img" | cut -f1) used of 3 GiB" >&2
echo "$dir"
