"""Filesystem images for the guests' fs.* metrics, made on the host
(busybox has no mkfs.xfs or mkfs.btrfs) and attached as virtio disks in
this order, after the guest's own disks (/dev/vda, ext2 on /vda: the
names below are for a guest of one disk):

  /dev/vdb         xfs, 300 MiB (mkfs.xfs's smallest), mounted on /xfs
  /dev/vdc         btrfs on one device, 256 MiB (single data, DUP
                   metadata, as mkfs.btrfs makes it), on /btrfs
  /dev/vdd, vde    btrfs over two, 256 MiB each (data and metadata
                   RAID1: statfs halves its sizes), on /btrfs2
  /dev/vdf         ext4 as mkfs.ext4 makes it (a journal, extents,
                   64bit, flex_bg: the guest's own /vda is busybox's
                   ext2), 128 MiB, on /ext4

make() runs the mkfs tools here (get() takes packed ones instead where
$SENTINEL_FS_PACK says); pack() leaves the images xz-compressed
in a folder for a machine without them (tests/gpu/pack.sh) and unpack()
writes them back, sparse.  mount() mounts them in a running guest and
writes files on each."""

import lzma
import os
import shutil
import subprocess

# (file, MiB, mkfs tool, Debian package, its arguments); one mkfs call
# per tool and argument list, over the files that share them
SPECS = [
    ("xfs.img", 300, "mkfs.xfs", "xfsprogs", ("-q", "-f")),
    ("btrfs.img", 256, "mkfs.btrfs", "btrfs-progs", ("-q", "-f")),
    ("btrfs-r1a.img", 256, "mkfs.btrfs", "btrfs-progs", ("-q", "-f", "-d", "raid1", "-m", "raid1")),
    ("btrfs-r1b.img", 256, "mkfs.btrfs", "btrfs-progs", ("-q", "-f", "-d", "raid1", "-m", "raid1")),
    ("ext4.img", 128, "mkfs.ext4", "e2fsprogs", ("-q", "-F")),
]


def make(tmp):
    """Make every image under tmp; returns (paths, error).  On an error
    (a missing tool: the message says what to install) paths holds the
    images made before it, in order."""
    paths, groups = [], []
    for name, mib, tool, pkg, args in SPECS:
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.truncate(mib << 20)
        if groups and groups[-1][0] == (tool, pkg, args):
            groups[-1][1].append(path)
        else:
            groups.append(((tool, pkg, args), [path]))
    for (tool, pkg, args), files in groups:
        exe = shutil.which(tool) or "/sbin/" + tool
        try:
            p = subprocess.run([exe] + list(args) + files, capture_output=True, text=True)
            err = p.stderr[-500:] if p.returncode else ""
        except OSError as e:
            err = str(e)
        if err:
            return paths, "%s failed (apt-get install %s; ./configure --install-deps does): %s" % (tool, pkg, err)
        paths += files
    return paths, None


def pack(outdir):
    """The images, xz-compressed, in outdir (a few hundred KiB)."""
    os.makedirs(outdir, exist_ok=True)
    paths, err = make(outdir)
    if err:
        raise RuntimeError(err)
    for p in paths:
        with open(p, "rb") as src, lzma.open(p + ".xz", "wb", preset=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.unlink(p)


def unpack(packdir, tmp):
    """pack()'s images written back under tmp, sparse; [] when packdir has
    none."""
    paths = []
    for name, _, _, _, _ in SPECS:
        src = os.path.join(packdir, name + ".xz")
        if not os.path.exists(src):
            return []
        dst = os.path.join(tmp, name)
        with lzma.open(src, "rb") as f, open(dst, "wb") as out:
            while True:
                chunk = f.read(1 << 16)
                if not chunk:
                    break
                if chunk.count(0) == len(chunk):
                    out.seek(len(chunk), os.SEEK_CUR)
                else:
                    out.write(chunk)
            out.truncate()
        paths.append(dst)
    return paths


def expected(n):
    """What mount() reports with the first n images attached."""
    return ["/xfs xfs", "/btrfs btrfs", "/btrfs2 btrfs", "/ext4 ext4"][:{0: 0, 1: 1, 2: 2, 3: 2, 4: 3}.get(n, 4)]


def get(tmp):
    """The images under tmp: unpacked from $SENTINEL_FS_PACK (a machine
    without the mkfs tools: tests/gpu/run.sh sets it) when it holds them,
    else made here; returns (paths, error)."""
    pack_dir = os.environ.get("SENTINEL_FS_PACK")
    if pack_dir:
        paths = unpack(pack_dir, tmp)
        return paths, None if paths else "no images in %s (make gpu-pack makes them)" % pack_dir
    return make(tmp)


def mount(g, n):
    """Mount the first n images in guest g (attached after its own disks:
    the first is /dev/vdb behind one) and write files on them; returns
    what /proc/mounts says of each mount point ("/xfs xfs ...").  A mount
    that fails fails the command (GuestError)."""
    dev = ["/dev/vd" + chr(ord("a") + g.ndisks + i) for i in range(n)]
    cmds = []
    if n >= 1:
        cmds.append("mkdir -p /xfs && mount -t xfs %s /xfs && mkdir /xfs/d && "
                    "for i in $(seq 100); do : > /xfs/d/f$i; done && "
                    "dd if=/dev/zero of=/xfs/big bs=64k count=32 conv=fsync 2>/dev/null" % dev[0])
    if n >= 2:
        cmds.append("mkdir -p /btrfs && mount -t btrfs %s /btrfs && "
                    "dd if=/dev/zero of=/btrfs/big bs=1M count=24 conv=fsync 2>/dev/null && "
                    "for i in $(seq 50); do echo $i > /btrfs/f$i; done" % dev[1])
    if n >= 4:
        cmds.append("mkdir -p /btrfs2 && mount -t btrfs -o device=%s,device=%s %s /btrfs2 && "
                    "dd if=/dev/zero of=/btrfs2/big bs=1M count=40 conv=fsync 2>/dev/null" % (dev[2], dev[3], dev[2]))
    if n >= 5:
        cmds.append("mkdir -p /ext4 && mount -t ext4 %s /ext4 && mkdir /ext4/d && "
                    "for i in $(seq 40); do : > /ext4/d/f$i; done && "
                    "dd if=/dev/zero of=/ext4/big bs=64k count=48 conv=fsync 2>/dev/null" % dev[4])
    if not cmds:
        return ""
    return g.check(" && ".join(cmds) + " && sync && while read -r dv mp ty rest; do case $mp in /xfs|/btrfs*|/ext4) "
                   "echo $mp $ty;; esac; done < /proc/mounts", timeout=180)
