#!/usr/bin/env python3
"""A real Debian 12 system under QEMU, its RAM in a shared file, driven like
the busybox guests (tests/guest/guest.py's run()/check()).

The image (tests/debian/mkimage.sh) boots Debian's own kernel and
initramfs from a virtio disk with systemd, journald, udev,
systemd-networkd, node_exporter, nginx and PostgreSQL.  Its NICs are the
emulated physical kinds, each on its own QEMU user-mode network (DHCP;
10.0.2.0/24, 10.0.3.0/24, ...): e1000e first (node_exporter's port 9100 forwarded to
127.0.0.1 only), then vmxnet3, rtl8139 and e1000.  The root filesystem is
written to a throwaway overlay (snapshot=on): every boot starts from the
image as built.

    python3 tests/debian/debguest.py boot [--mem 2048] [--cpus 2]
        builds the image if needed, boots it, prints the RAM file and
        node_exporter's address, and keeps it running until Ctrl-C (try
        sentinel-inspect --source ramfile:PATH against it).
"""
import argparse
import os
import signal
import subprocess
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
import guest  # noqa: E402

# the NIC models, in PCI order; the first carries node_exporter's port
NICS = ("e1000e", "vmxnet3", "rtl8139", "e1000")
FRAME_MAC = "52:54:00:5e:00:01"


def image():
    """Build (once) and return the image's directory (tests/debian/mkimage.sh)."""
    out = subprocess.run(["sh", os.path.join(TOP, "tests", "debian", "mkimage.sh")],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


def image_or_report(report):
    """image(), or None after reporting why it could not be built."""
    try:
        return image()
    except subprocess.CalledProcessError as e:
        report(False, "the Debian image could not be built (tests/debian/mkimage.sh)", str(e))
        return None


class DebianGuest(guest.Guest):
    """A real Debian system booted from the image in `idir`."""

    def __init__(self, idir, mem_mb=2048, cpus=2, kaslr=True, name=None, nics=NICS, append="", frame_nic=None,
                 disks=None):
        """disks: {LABEL: DIRECTORY}, each directory's files on a small ext4
        disk of that label (the guest mounts it: mount LABEL=... DIR).
        frame_nic: a QEMU NIC model for one more NIC, on a socket network
        whose other end is this test (send_frames): raw Ethernet frames of
        any size or content, as a misconfigured switch would deliver them;
        its MAC is FRAME_MAC."""
        super().__init__(idir, mem_mb=mem_mb, cpus=cpus, kaslr=kaslr, name=name or "deb", append=append)
        self.nic_models = tuple(nics)
        self.exporter_port = guest.free_port()
        self.frame_nic = frame_nic
        self.frame_port = guest.free_port() if frame_nic else None
        self.disks = dict(disks or {})

    @property
    def exporter(self):
        """node_exporter's address on this machine."""
        return "http://127.0.0.1:%d/metrics" % self.exporter_port

    def _disk(self, label, src):
        """An ext4 image of label `label` holding directory src's files,
        sized to fit them."""
        img = os.path.join(self.tmp, label + ".img")
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(src) for f in fs)
        subprocess.run(["mke2fs", "-q", "-t", "ext4", "-L", label, "-d", src, img,
                        "%dM" % (32 + size * 5 // 4 // 2 ** 20)], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, PATH=os.environ.get("PATH", "") + ":/sbin:/usr/sbin"))
        return img

    def _helpers(self):
        """The tests' static helpers (build/guest-helpers: sentinel-freeze,
        sentinel-spawn, ...) on a small ext4 disk labelled sentinel, which
        the image mounts on /opt/sentinel (its bin/ in no PATH: call them
        by path).  None when they are not built."""
        src = os.path.join(TOP, "build", "guest-helpers")
        return self._disk("sentinel", src) if os.path.isdir(src) else None

    def _command(self):
        helpers = self._helpers()
        cmd = self._machine() + [
            "-kernel", os.path.join(self.kdir, "vmlinuz"),
            "-initrd", os.path.join(self.kdir, "initrd.img"),
            "-append", self._append("root=LABEL=root ro console=ttyS0 panic=-1 loglevel=4 systemd.show_status=0"),
            "-drive", "file=%s,if=virtio,format=raw,cache=unsafe,snapshot=on" % os.path.join(self.kdir, "rootfs.img"),
        ]
        for img in [helpers] + [self._disk(label, src) for label, src in sorted(self.disks.items())]:
            if img:
                cmd += ["-drive", "file=%s,if=virtio,format=raw,cache=unsafe,snapshot=on" % img]
        for i, model in enumerate(self.nic_models):
            fwd = ",hostfwd=tcp:127.0.0.1:%d-:9100" % self.exporter_port if i == 0 else ""
            # a network each (10.0.2.0/24, 10.0.3.0/24, ...): on one shared
            # subnet the guest would answer through whichever NIC it liked
            cmd += ["-netdev", "user,id=net%d,net=10.0.%d.0/24%s" % (i, 2 + i, fwd),
                    "-device", "%s,netdev=net%d,romfile=" % (model, i)]
        if self.frame_nic:
            cmd += ["-netdev", "socket,id=frames,udp=127.0.0.1:%d,localaddr=127.0.0.1:%d" %
                    (guest.free_port(), self.frame_port),
                    "-device", "%s,netdev=frames,mac=%s,romfile=" % (self.frame_nic, FRAME_MAC)]
        return cmd

    def send_frames(self, frames):
        """Each frame (bytes: an Ethernet frame without its FCS) to the
        frame NIC, one datagram each."""
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for f in frames:
                s.sendto(f, ("127.0.0.1", self.frame_port))
        finally:
            s.close()

    def start(self, timeout=300, tries=3):
        """Boot to systemd's multi-user target (the command loop is one of
        its services); then wait for the system to settle."""
        super().start(timeout, tries)
        self.check("systemctl is-system-running --wait >/dev/null; true", timeout=timeout)
        # the helpers' disk: fstab's entry gives up after 5 s (nofail), and
        # under TCG udev may name the disk later than that
        self.check("[ ! -e /dev/disk/by-label/sentinel ] || mountpoint -q /opt/sentinel || "
                   "{ mkdir -p /opt/sentinel && mount -o ro LABEL=sentinel /opt/sentinel; }", timeout=60)
        return self

    def scrape(self, timeout=10):
        """node_exporter's page, as Prometheus would scrape it."""
        import urllib.request
        with urllib.request.urlopen(self.exporter, timeout=timeout) as r:
            return r.read().decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("boot", help="boot the Debian system and keep it running")
    b.add_argument("--mem", type=int, default=2048, help="RAM in MiB")
    b.add_argument("--cpus", type=int, default=2)
    b.add_argument("--nokaslr", action="store_true")
    a = ap.parse_args()
    idir = image()
    t0 = time.time()
    g = DebianGuest(idir, mem_mb=a.mem, cpus=a.cpus, kaslr=not a.nokaslr, name="boot")
    print("booting Debian (%s) under TCG; systemd takes a minute or two ..." % open(os.path.join(idir, "release")).read().strip(),
          flush=True)
    g.start()
    print("up in %.0f s" % (time.time() - t0))
    print("RAM file: %s" % g.ram)
    print("node_exporter: %s" % g.exporter)
    print("console log: %s" % g.console)
    print("try: build/sentinel-inspect --source ramfile:%s metrics" % g.ram)
    print("Ctrl-C stops it.", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        g.stop()


if __name__ == "__main__":
    main()
