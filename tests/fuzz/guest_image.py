"""A guest's RAM image for the hostile-guest fuzzer (tests/fuzz/fuzz_guest.c):
boot a Debian guest (its disk, NIC and cgroups as the guest tests set them up),
its xfs and btrfs images mounted (tests/guest/fsimages.py: their statfs
reads are fuzzed too, when the host has the mkfs tools), let it settle, pause it, copy its RAM to PATH (raw: address 0 first), stop it.

    python3 tests/fuzz/guest_image.py PATH [KERNEL]
        (KERNEL: as guest.main_kernel picks it: SENTINEL_GUEST_KERNEL, else
         debian-6.12, else debian-6.1 or debian-7.2, whichever is there, as on
         a GPU machine after GPU_PACK_KERNELS=debian-6.1 make gpu-pack)
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "guest"))
import guest  # noqa: E402
import fsimages  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ks = guest.kernels()
    path = sys.argv[1]
    try:
        kdir = guest.main_kernel(ks, sys.argv[2] if len(sys.argv) > 2 else None)
    except KeyError as e:
        sys.exit("guest_image: %s" % e.args[0])
    kname = next(k for k, v in ks.items() if v == kdir)
    with tempfile.TemporaryDirectory(prefix="sentinel-fuzzfs-") as tmp:
        images, err = fsimages.get(tmp)
        if err:
            print("guest_image: no filesystem images (%s)" % err, file=sys.stderr)
        capture(kdir, path, images)
    print("guest_image: %s (%s, %d MiB)" % (path, kname, os.path.getsize(path) >> 20))


def capture(kdir, path, images):
    with guest.Guest(kdir, mem_mb=256, cpus=2, name="fuzzimg", images=images) as g:
        fsimages.mount(g, len(images))
        g.check("mkdir -p /sys/fs/cgroup/work && echo +memory +pids > /sys/fs/cgroup/cgroup.subtree_control; "
                "echo $$ > /sys/fs/cgroup/work/cgroup.procs; true")
        time.sleep(2)
        g.hmp("stop")
        tmp = path + ".part"
        shutil.copyfile(g.ram, tmp)
        os.replace(tmp, path)
        g.hmp("cont")


if __name__ == "__main__":
    main()
