#!/usr/bin/env python3
"""Tick time with every object family collected: disks, cgroups and
network interfaces, the shipped rules on the GPU and on the CPU backend.

    python3 bench/families.py BUILD-DIR BACKENDS [SECONDS]

BACKENDS is cpu, cuda or cpu,cuda.  One Debian 6.12 guest (QEMU) with 8
virtio disks (3 blank, and tests/guest/fsimages.py's xfs, btrfs, btrfs
RAID1 over two and ext4, mounted with files), 8 virtio NICs on QEMU's user network,
a veth pair with one end in a second network namespace, and 200 cgroups
(20 slices of 9, the memory, cpu and pids controllers on); then, per backend,
sentineld with rules/ (disk, cgroup and net rules among them) at a 10 ms
tick, sampled every 20 ms for SECONDS (default 10) through `sentinelctl
status` (bench/task_scale.py's measure): the tick's length (median, p99,
longest sampled), late ticks, read errors, and on the GPU each phase and
the slowest job.  Prints a table; results go in docs/benchmarks.md by hand.
"""
import os
import shutil
import sys
import tempfile

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest  # noqa: E402
import fsimages  # noqa: E402
import task_scale  # noqa: E402

BACKENDS = sys.argv[2].split(",") if len(sys.argv) > 2 else ["cpu"]
task_scale.SECS = float(sys.argv[3]) if len(sys.argv) > 3 else 10
CGROUPS = "/sys/fs/cgroup"


def main():
    ks = guest.kernels()
    img_dir = tempfile.mkdtemp(prefix="sentinel-famfs-")
    try:
        images, err = fsimages.get(img_dir)
        if err:
            print("families: no filesystem images (%s): 5 disks fewer" % err, flush=True)
        return run(ks, images)
    finally:
        shutil.rmtree(img_dir, ignore_errors=True)


def run(ks, images):
    rows = []
    with guest.Guest(guest.main_kernel(ks), mem_mb=1024, name="fam", disks=3, nics=8, images=images) as g:
        fsimages.mount(g, len(images))
        g.check("mkdir -p %s && mount -t cgroup2 none %s && echo '+cpu +memory +pids' > %s/cgroup.subtree_control && "
                "for i in $(seq 20); do mkdir %s/s$i && echo '+cpu +memory +pids' > %s/s$i/cgroup.subtree_control && "
                "for j in $(seq 9); do mkdir %s/s$i/c$j; done; done" % ((CGROUPS,) * 6), timeout=120)
        g.check("ip link set lo up; for i in 0 1 2 3 4 5 6 7; do ip link set eth$i up; done; "
                "ip addr add 10.0.2.15/24 dev eth0; ping -c 2 -W 1 10.0.2.2 >/dev/null; " +
                guest.NETNS_VETH + "true", timeout=60)
        counts = g.check("ls -d %s/*/ %s/*/*/ | wc -l; ls /sys/class/net | wc -l; ls /sys/class/block | wc -l; "
                         "grep -c -E ' (ext2|ext4|xfs|btrfs|tmpfs|devtmpfs) ' /proc/mounts" % (CGROUPS, CGROUPS)).split()
        label = ("%s cgroups, %s interfaces (and veth1, lo in a second namespace), %s block devices, %s mounts" %
                 tuple(counts))
        print(label, flush=True)
        tasks = 200
        tmp = tempfile.mkdtemp(prefix="sentinel-fam-")
        try:
            for b in BACKENDS:
                r = task_scale.measure(tmp, g.ram, b, tasks, os.path.join(TOP, "rules"))
                rows.append((b, r))
                print("%-4s  tick median %7.0f us  p99 %7.0f us  longest %7.0f us  late %d of %d  read errors %d" %
                      (b, r["median"], r["p99"], r["max"], r["late"], r["ticks"], r["errors"]), flush=True)
                if r["phases"]:
                    print("      phases (median/longest us): %s" % r["phases"], flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\n| guest | backend | tick median | p99 | longest | late ticks at 10 ms | read errors |")
    print("|---|---|---|---|---|---|---|")
    for b, r in rows:
        print("| %s | %s | %.2f ms | %.2f ms | %.2f ms | %d of %d | %d |" %
              (label, b, r["median"] / 1e3, r["p99"] / 1e3, r["max"] / 1e3, r["late"], r["ticks"], r["errors"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
