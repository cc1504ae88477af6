#!/bin/sh
# Pack everything the GPU tests need into .device/ (ignored by git), for a
# GPU machine that has no package registry.  Run here, then on the GPU
# machine, in one call with .device carried:
#
#     make gpu-pack                 # this script
#     sh tests/gpu/run.sh           # on the GPU machine (the device tool)
#
# .device/ holds: sentinel-inspect and sentineld linked with LLVM statically
# (the CPU backend runs there too, to compare with the GPU; sentineld
# compiles rules on reload), sentinelctl, the bundles, Debian's
# QEMU with the libraries it needs beyond glibc, its TCG module and
# firmware, and the Debian 6.1 and 6.12 test kernels with their initramfs.
# About 60 MB with both kernels, 49 MB with one, xz-compressed where it
# pays; the device tool carries at most 64 MiB with the working tree, so
# GPU_PACK_KERNELS=debian-6.12 packs one kernel (engine, scale and taskbench
# boot only 6.12; metrics boots both and reports the missing one).
#
#     sh tests/gpu/pack.sh --overlay    # after a change: the binaries alone,
#                                       # in .device/overlay (over the pack's)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
out=.device
B=build
if [ "${1:-}" = --overlay ]; then
	make -s $B/portable/sentineld $B/portable/sentinelctl
	rm -rf "$out/overlay" "$out/overlay.tar.xz"
	mkdir -p "$out/overlay/bin"
	cp $B/portable/sentineld $B/portable/sentinelctl "$out/overlay/bin/"
	strip "$out/overlay/bin/"*
	(cd "$out/overlay" && tar cf - bin | xz -T2 -6 > ../overlay.tar.xz) && rm -rf "$out/overlay"
	echo "gpu-pack: overlay $(du -sh "$out/overlay.tar.xz" | cut -f1) (sentineld, sentinelctl)"
	exit 0
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/qemu/lib" "$out/qemu/modules" "$out/qemu/firmware" "$out/guest"

echo "gpu-pack: portable sentinel-inspect (LLVM linked statically)"
make -s $B/portable/sentinel-inspect $B/portable/sentineld $B/portable/sentinelctl $B/portable/fuzz_guest_gpu \
	$B/portable/hostile_image $B/rulec \
	$B/metrics.bundle
make -s $B/procpoll $B/syncprobe $B/regprobe $B/capprobe $B/guest-helpers.cpio.gz
cp $B/portable/sentinel-inspect $B/portable/sentineld $B/portable/sentinelctl $B/portable/fuzz_guest_gpu \
	$B/portable/hostile_image $B/procpoll \
	$B/syncprobe $B/regprobe $B/capprobe "$out/bin/"
strip "$out/bin/sentinel-inspect" "$out/bin/sentineld" "$out/bin/sentinelctl" "$out/bin/fuzz_guest_gpu"
# /metrics' libmicrohttpd, found through sentineld's RUNPATH ($ORIGIN/lib)
mkdir -p "$out/bin/lib"
cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 "$out/bin/lib/"
# Alertmanager (a static Go binary) for the delivery benchmark
am=$(command -v prometheus-alertmanager) || { echo "gpu-pack: no prometheus-alertmanager (apt-get install prometheus-alertmanager)" >&2; exit 1; }
cp "$am" "$out/bin/alertmanager"
mkdir -p "$out/bin/am-templates"
cp /usr/share/prometheus/alertmanager/*.tmpl "$out/bin/am-templates/"   # Debian's build reads them there

echo "gpu-pack: bundles"
# every metric with the sm_70 baseline only (the driver compiles it for the
# GPU in hand); the shipped rules and 1,000 generated ones with native sm_90
# (inside the archive: PTX compresses well, and what is carried is bounded)
cp $B/metrics.bundle "$out/bin/metrics.bundle"
$B/rulec --list-metrics=json > "$out/bin/catalog.json"   # the metric names, for tests/gpu/fleet_values.py
$B/rulec -q --gpu-arch=sm_70,sm_90 -o "$out/bin/rules.bundle" rules/ examples/
if [ "${PACK_RULES1000:-0}" = 1 ]; then     # 11 MB: only when the 1,000-rule PTX is the question
	sh bench/gen_rules.sh 1000 bench/out > /dev/null
	$B/rulec -q --gpu-arch=sm_70,sm_90 -o "$out/bin/rules1000.bundle" bench/out/sentinel.yaml
fi

echo "gpu-pack: QEMU"
q=$(command -v qemu-system-x86_64)
cp "$q" "$out/qemu/"
# every library but glibc's own: the GPU machine's glibc is newer
ldd "$q" | awk '/=>/ {print $3}' | while read -r lib; do
	case $(basename "$lib") in
	libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
	*) cp -L "$lib" "$out/qemu/lib/" ;;
	esac
done
cp -L /usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so "$out/qemu/modules/"
for f in bios-256k.bin linuxboot_dma.bin kvmvapic.bin vgabios-stdvga.bin; do
	found=
	for d in /usr/share/qemu /usr/share/seabios; do
		if [ -e "$d/$f" ]; then cp -L "$d/$f" "$out/qemu/firmware/"; found=1; break; fi
	done
	[ -n "$found" ] || { echo "gpu-pack: no QEMU firmware $f (apt-get install qemu-system-data seabios)" >&2; exit 1; }
done

echo "gpu-pack: filesystem images (xfs, btrfs; xz)"
python3 -c 'import sys; sys.path.insert(0, "tests/guest"); import fsimages; fsimages.pack(sys.argv[1])' "$out/images"

echo "gpu-pack: kernels"
python3 -c 'import sys; sys.path.insert(0, "tests/guest"); import guest; [print(k, d) for k, d in guest.kernels().items()]' |
while read -r name dir; do
	case " ${GPU_PACK_KERNELS:-debian-6.1 debian-6.12} " in *" $name "*) ;; *) continue ;; esac   # what the GPU tests boot (the carry is 64 MiB)
	mkdir -p "$out/guest/$name"
	cp "$dir/vmlinuz" "$dir/initramfs.cpio.gz" "$dir/release" "$out/guest/$name/"
	touch "$out/guest/$name/ready"
done

cp $B/guest-helpers.cpio.gz "$out/guest/"

echo "gpu-pack: compressing"
# The three programs that link LLVM statically are 47 MB each and mostly
# the same bytes: side by side first, in one xz block whose dictionary
# spans all three, they pack to 33 MB where -9e's 64 MiB blocks gave 46.
big="bin/sentineld bin/sentinel-inspect bin/fuzz_guest_gpu"
(cd "$out" && tar cf - $big $(for f in $big; do printf -- '--exclude=%s ' "$f"; done) qemu bin |
	xz -T1 --lzma2=preset=9e,dict=192MiB > pack.tar.xz && rm -rf qemu bin)
du -sh "$out"
kib=$(du -sk "$out" | cut -f1)
[ "$kib" -lt 60000 ] || echo "gpu-pack: warning: $((kib / 1024)) MiB; with the working tree it may pass the device tool's 64 MiB carry (GPU_PACK_KERNELS=debian-6.12 packs one kernel)" >&2
echo "gpu-pack: done; on the GPU machine run: sh tests/gpu/run.sh (carrying .device)"
