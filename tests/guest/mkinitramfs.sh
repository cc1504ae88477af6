#!/bin/sh
# Build a busybox initramfs for guest tests.
#   sh tests/guest/mkinitramfs.sh MODULES_DIR OUT.cpio.gz
# The guest mounts /proc, /sys and /dev, puts swap on zram, and serves a
# command loop on its second serial port (ttyS1) for the test driver.
set -eu
mods=$1 out=$2
root=$(mktemp -d /tmp/sentinel-initramfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/lib/modules"
cp /bin/busybox "$root/bin/busybox"

# zram and what it depends on, in load order (from modules.dep)
load=
add_module() {
	local rel dep base
	rel=$(grep -E "(^|/)$1\.ko(\.xz)?:" "$mods/modules.dep" | head -n 1 | cut -d: -f1)
	[ -n "$rel" ] || return 0
	for dep in $(grep -E "^$rel:" "$mods/modules.dep" | cut -d: -f2); do
		add_module "$(basename "$dep" | sed 's/\.ko.*//')"
	done
	base=$(basename "$rel" | sed 's/\.xz$//')
	case " $load " in *" $base "*) return 0 ;; esac
	case $rel in
	*.xz) xz -dc "$mods/$rel" > "$root/lib/modules/$base" ;;
	*) cp "$mods/$rel" "$root/lib/modules/$base" ;;
	esac
	load="$load $base"
}
add_module zram
# a virtio disk with ext4 on it (the disk metrics' workload), and virtio
# networking: built in on some kernels, where add_module finds nothing
add_module virtio_pci
add_module virtio_blk
add_module virtio_net
add_module crc32c_generic
add_module ext4
# xfs (fs.* sizes): a filesystem mkfs.xfs made on the host, a second disk
add_module xfs
# btrfs (fs.* sizes): a filesystem mkfs.btrfs made on the host, a third disk
add_module btrfs
# connection tracking (host.conntrack_*), its hooks on from the start
# (enable_hooks=1, 5.13+: no iptables or nft in busybox to ask for them)
add_module nf_conntrack
# md RAID (disk.md_*): raid1 arrays built through md's sysfs (no mdadm)
add_module raid1
# bonding (net.bond_*): a bond made through its sysfs over dummy devices
add_module bonding
add_module dummy
# a bridge (net.* from the per-CPU tstats: dev_get_tstats64), ipip's
# fallback tunl0 (dev_get_tstats64 on 6.1; 6.7+: the core's tstats) and
# a VRF (6.7+: the core's dstats); a veth pair (net.*: its tstats, and
# its peer's transmits as its receives)
add_module bridge
add_module ipip
add_module vrf
add_module veth
# the NICs of physical machines QEMU emulates (net.*: e1000e's and
# vmxnet3's counters in their private structs, 8139cp's and e1000's in
# dev->stats), each on its own user network beside virtio's eth0
add_module e1000
add_module e1000e
add_module vmxnet3
add_module 8139cp
# server and cloud NICs QEMU does not emulate: loaded without a device,
# so that their modules' BTF is there to relocate their readers against
# (sentinel-inspect relocs); 8139too after 8139cp, which has the chip
add_module igb
add_module ixgbe
add_module i40e
add_module ena
add_module gve
add_module 8139too
echo "$load" > "$root/lib/modules/order"

cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /lib/modules/order); do
	case $m in
	nf_conntrack.ko) p=enable_hooks=1 ;;    # its hooks on from the start
	bonding.ko) p=max_bonds=0 ;;            # no bond0 until a test makes one
	dummy.ko) p=numdummies=3 ;;             # dummy0-2, down
	*) p= ;;
	esac
	insmod /lib/modules/$m $p 2>/dev/null
done
# the virtio disk: a fresh ext2 filesystem on /vda (ext4's driver mounts it)
if [ -b /dev/vda ]; then
	mke2fs -q /dev/vda >/dev/null 2>&1 && mkdir -p /vda && mount -t ext4 /dev/vda /vda
fi
if [ -e /sys/block/zram0/disksize ]; then
	echo 256M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0
fi
# Helpers for the driver.  They use shell builtins only, so reading the
# truth does not fork and does not change the counters it reads.
jiffies() {
	while read -r k v rest; do
		[ "$k" = "jiffies:" ] && { echo "$v"; return; }
	done < /proc/timer_list
}
# kv FILE KEY: the value after KEY on a line of FILE
kv() {
	while read -r k v rest; do
		[ "$k" = "$2" ] && { echo "$v"; return; }
	done < "$1"
}
# pids: "PID COMM" for every process, from /proc/PID/stat
pids() {
	for d in /proc/[0-9]*; do
		# stderr first: a process gone since the glob fails the < itself
		read -r line 2>/dev/null < "$d/stat" || continue
		pid=${line%% *}
		comm=${line#*\(}
		comm=${comm%\)*}
		echo "$pid $comm"
	done
}
exec 0</dev/ttyS1 1>/dev/ttyS1 2>&1
stty raw -echo 2>/dev/null
echo "@@READY"
# Each line is "ID LENGTH COMMAND".  A line whose length does not match was
# garbled on the wire: answer 254 so the driver resends.  `command eval`
# keeps a syntax error from ending this shell, which is PID 1.
while :; do
	if ! read -r id len cmd; then
		sleep 1
		continue
	fi
	if [ "${#cmd}" != "$len" ]; then
		echo "@@END $id 254"
		continue
	fi
	command eval "$cmd"
	echo "@@END $id $?"
done
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -9) > "$out"
echo "mkinitramfs: $out ($(wc -c < "$out") bytes; modules:$load)"
