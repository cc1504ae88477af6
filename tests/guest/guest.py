#!/usr/bin/env python3
"""Boot a real Linux guest under QEMU with its RAM in a shared file, and drive it.

The guest's RAM is a memory-backend-file with share=on, so the file *is* the
guest's physical memory while it runs: Sentinel reads it from outside.  The
guest serves a command loop on its second serial port (see mkinitramfs.sh);
run() sends one shell command and returns its output and exit status.

    python3 tests/guest/guest.py boot debian-6.1 [--nokaslr] [--la57] [--mem 512]
        boots a guest, prints the RAM file path, and keeps it running until
        Ctrl-C (for trying sentinel-inspect by hand).

Only TCG is used: /dev/kvm exists on the project's machines but does not work
(see DESIGN.md).
"""
import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("SENTINEL_GUEST_CACHE", os.path.join(TOP, ".cache", "guest"))
# Static test helpers (tests/guest/helpers, built by make): a second archive
# appended to the guest's initramfs, so they are in /bin without rebuilding
# the cached one.
HELPERS = os.environ.get("SENTINEL_GUEST_HELPERS", os.path.join(TOP, "build", "guest-helpers.cpio.gz"))


def kernels():
    """Fetch (once) and return {name: dir} of the test kernels.  With
    SENTINEL_GUEST_KERNELS=DIR (kernels packed for a machine without a
    package registry, tests/gpu/pack.sh), use DIR/NAME/ as they are."""
    packed = os.environ.get("SENTINEL_GUEST_KERNELS")
    if packed:
        return {k: os.path.join(packed, k) for k in sorted(os.listdir(packed))
                if os.path.exists(os.path.join(packed, k, "vmlinuz"))}
    out = subprocess.run(["sh", os.path.join(TOP, "tests", "guest", "fetch.sh")],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


def main_kernel(ks, want=None):
    """The kernel the scenario tests and benchmarks boot (the engine's, task
    scale's, the fuzzer's image): want or SENTINEL_GUEST_KERNEL (a name from
    kernels(), such as debian-7.2), else Debian 12's 6.12, else whichever
    of 6.1 and 7.2 is there (a GPU machine packed with one kernel)."""
    said = "kernel " + want if want else "SENTINEL_GUEST_KERNEL=%s" % os.environ.get("SENTINEL_GUEST_KERNEL")
    want = want or os.environ.get("SENTINEL_GUEST_KERNEL")
    if want:
        if want not in ks:
            raise KeyError("%s: no such kernel here (there are: %s; tests/guest/fetch.sh fetches them, "
                           "GPU_PACK_KERNELS packs them)" % (said, ", ".join(sorted(ks)) or "none"))
        return ks[want]
    for k in ("debian-6.12", "debian-6.1", "debian-7.2"):
        if k in ks:
            return ks[k]
    raise KeyError("no Debian 6.12, 6.1 or 7.2 kernel here (tests/guest/fetch.sh fetches them, GPU_PACK_KERNELS "
                   "packs them)")


# The NICs of physical machines and VMware's that QEMU emulates, by QEMU's
# model name, and the driver Linux binds to each (rtl8139 is a C+ chip,
# revision 0x20: 8139cp's, not 8139too's)
PHYS_NICS = {"e1000e": "e1000e", "vmxnet3": "vmxnet3", "rtl8139": "8139cp", "e1000": "e1000"}


def phys_nics_up(g):
    """A busybox guest's physical NICs (its phys_nics) named nic-DRIVER,
    each up on its own user network (10.0.3.15, 10.0.4.15, ...), with
    pings to its gateway: traffic for their counters; then one read of
    /proc/net/dev."""
    nets = " ".join("%s:%d" % (drv, 3 + i) for i, drv in enumerate(PHYS_NICS[m] for m in g.phys_nics))
    if nets:
        g.check("for d in /sys/class/net/eth*; do v=$(readlink $d/device/driver); v=${v##*/}; "
                "[ \"$v\" = virtio_net ] || ip link set ${d##*/} name nic-$v; done; "
                "for p in %s; do ip link set nic-${p%%:*} up && ip addr add 10.0.${p#*:}.15/24 dev nic-${p%%:*}; done; "
                "sleep 2; for p in %s; do ping -c 3 -W 1 10.0.${p#*:}.2 >/dev/null; done; "
                # vmxnet3's device writes its counters into RAM only when
                # the driver asks, at a read of /proc/net/dev (as node_exporter's scrape does)
                "while read -r l; do :; done < /proc/net/dev; true" % (nets, nets),
                timeout=120)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def stop(proc, timeout=60):
    """End a process a test or bench started (sentineld, Alertmanager): SIGTERM,
    then SIGKILL if it is still there after timeout seconds."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class GuestError(Exception):
    pass


# A guest kernel that crashed on its own (its console ends in an oops):
# Sentinel only reads a guest's RAM (mapped PROT_READ), so under TCG this
# is the emulator's doing.  Seen with 50,000 tasks under churn
# (prepare_creds faulting with reserved EFLAGS bits set).
OOPS = ("---[ end trace", "Oops:", "general protection fault", "BUG: ", "Kernel panic")


def crashed_on_its_own(e):
    """Whether GuestError e's console tail shows the kernel crashing."""
    return any(s in str(e) for s in OOPS)


def went_silent(e):
    """Whether GuestError e is a command that got no answer at all: not a
    byte back on the control channel before its timeout."""
    return "control channel holds b''" in str(e)


class Results:
    """A Python suite's checks for make check: a line each, pass, fail or
    skip, appended to $RESULTS (tests/run.sh adds them up).

    An attempt that may be booted again (a guest whose kernel crashed on
    its own) runs inside attempt(): its lines are held back and written
    when it ends, however it ends, unless drop() said it is booted again;
    then the next attempt's lines replace them, never add to them.
    expect(n): this run must report at least n more checks (pass or fail);
    end() prints the line the runner reads, CHECKS REPORTED MINIMUM, and
    gives the suite's exit status: 1 when a check failed."""

    def __init__(self):
        self.path = os.environ.get("RESULTS")
        self.reported = self.failed = self.minimum = 0
        self.held = None

    def add(self, line):
        if self.held is not None:
            self.held.append(line)
        else:
            self._write([line])

    def _write(self, lines):
        self.reported += sum(1 for x in lines if x != "skip")
        self.failed += lines.count("fail")
        if self.path and lines:
            with open(self.path, "a") as f:
                f.write("".join(x + "\n" for x in lines))

    @contextlib.contextmanager
    def attempt(self):
        self.held = []
        try:
            yield
        finally:
            held, self.held = self.held, None
            if held is not None:
                self._write(held)

    def drop(self):
        """Inside attempt(): forget its lines, as it is booted again."""
        print("(this attempt's %d passed and %d failed checks above are not counted: the next attempt's replace "
              "them)" % (self.held.count("pass"), self.held.count("fail")), flush=True)
        self.held = None

    def expect(self, n):
        self.minimum += n

    def end(self):
        print("CHECKS %d %d" % (self.reported, self.minimum), flush=True)
        return 1 if self.failed else 0


def reporter(res, prefix):
    """A suite's report(ok, name, detail=""): its PASS or FAIL line under
    prefix, the first 30 lines of the detail of a failure, and the count."""
    def report(ok, name, detail=""):
        print("%s %s/%s" % ("PASS" if ok else "FAIL", prefix, name), flush=True)
        if not ok:
            for line in str(detail).splitlines()[:30]:
                print("     " + line)
        res.add("pass" if ok else "fail")
    return report


# A container's network, one shell command (ends in "; "): a second
# namespace held by a sleeper (its PID in /tmp/sentinel-netns.pids, which
# metrics_check reads), vethb here and its peer veth1 there with its own
# lo, addressed 10.5.0.1 and .2, pinged across.  Sentinel names the
# namespace's devices veth1@INUM and lo@INUM.
NETNS_VETH = ("unshare -n sleep 100000 >/dev/null 2>&1 & echo $! > /tmp/sentinel-netns.pids; sleep 0.5; "
              "p=$(cat /tmp/sentinel-netns.pids); "
              "ip link add vethb type veth && ip link set veth1 netns $p && ip link set vethb up && "
              "ip addr add 10.5.0.1/24 dev vethb && "
              "nsenter -t $p -n sh -c 'ip link set lo up; ip link set veth1 up; ip addr add 10.5.0.2/24 dev veth1' && "
              "ping -c 2 -W 1 10.5.0.2 >/dev/null; ")

# seconds without an answer after which run() sends a lone newline
NUDGE_S = 5.0


class Guest:
    """One QEMU guest.  Use as a context manager."""

    def __init__(self, kdir, mem_mb=512, cpus=2, kaslr=True, la57=False, name=None,
                 append="", extra=(), hotplug_mb=0, disks=1, nics=1, memfd=False, images=(), phys_nics=()):
        """extra: more initramfs archives (gzipped cpio) appended after the
        helpers: their files land in the guest's root.  hotplug_mb: room
        for memory plugged in later (hmp object_add and device_add pc-dimm).
        memfd: the RAM in a memfd (memory-backend-memfd,share=on), as
        hypervisors back VMs: no file (self.ram is not there); read it
        through the QEMU process (qemu:PID, self.proc.pid).  images: disk
        images made on the host (a filesystem mkfs made), virtio disks
        after the blank ones, written to a throwaway overlay (snapshot).
        phys_nics: QEMU NIC models after the virtio ones (PHYS_NICS), each
        on a user network of its own (10.0.3.0/24, 10.0.4.0/24, ...)."""
        self.phys_nics = tuple(phys_nics)
        self.memfd = memfd
        self.kdir = kdir
        self.extra = list(extra)
        self.hotplug_mb = hotplug_mb
        self.ndisks, self.nics = disks, nics
        self.images = list(images)
        self.mem_mb = mem_mb
        self.cpus = cpus
        self.kaslr = kaslr
        self.la57 = la57
        self.append = append
        self.tmp = tempfile.mkdtemp(prefix="sentinel-guest-")
        tag = name or "g%d" % os.getpid()
        # /dev/shm keeps the RAM file in memory; fall back to the temp dir.
        # SENTINEL_GUEST_RAM_DIR: another place, e.g. a hugetlbfs mount
        # (2 MiB pages, as hypervisors back guests; the size is rounded up)
        shm = os.environ.get("SENTINEL_GUEST_RAM_DIR") or ("/dev/shm" if os.path.isdir("/dev/shm") else self.tmp)
        if os.environ.get("SENTINEL_GUEST_RAM_DIR"):
            self.mem_mb = (self.mem_mb + 1) // 2 * 2
        self.ram = os.path.join(shm, "sentinel-%s-%d.ram" % (tag, int(time.time() * 1000) % 100000))
        self.ctl = os.path.join(self.tmp, "ctl.sock")
        self.console = os.path.join(self.tmp, "console.log")
        self.monitor = os.path.join(self.tmp, "monitor.sock")
        self.proc = None
        self.sock = None
        self.buf = b""
        self.seq = 0

    @property
    def release(self):
        with open(os.path.join(self.kdir, "release")) as f:
            return f.read().strip()

    def start(self, timeout=90, tries=3):
        """Boot; a kernel that panics while booting is booted again (up to
        `tries` times): under TCG the Debian kernels now and then die
        patching their own text early in boot (an int3 in sched_clock_cpu,
        before any of Sentinel runs), and says so on stderr."""
        for attempt in range(1, tries + 1):
            try:
                return self._start_once(timeout)
            except GuestError:
                if attempt == tries or "Kernel panic" not in self.console_tail(400):
                    raise
                sys.stderr.write("guest: the kernel panicked while booting under TCG (a known emulator flake); "
                                 "booting again (attempt %d of %d)\n" % (attempt + 1, tries))
                self._kill()
                for f in (self.console, self.ctl, self.monitor):
                    if os.path.exists(f):
                        os.unlink(f)
                self.buf = b""

    def _disk(self, i=0):
        path = os.path.join(self.tmp, "vd%s.img" % "abcdefghijklmnop"[i])
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.truncate(64 << 20)
        return path

    def _initrd(self):
        base = os.path.join(self.kdir, "initramfs.cpio.gz")
        parts = [base] + ([HELPERS] if os.path.exists(HELPERS) else []) + self.extra
        if len(parts) == 1:
            return base
        both = os.path.join(self.tmp, "initramfs.cpio.gz")
        with open(both, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out)
        return both

    def _start_once(self, timeout):
        if os.path.exists(self.ram):
            os.unlink(self.ram)     # a stale file survives QEMU: never reuse one
        if not self.memfd:          # the whole guest's memory: for its owner only (QEMU would make it 0644)
            os.close(os.open(self.ram, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        cmd = self._command()
        # a carried QEMU (tests/gpu/pack.sh): its libraries for it alone
        env = dict(os.environ)
        if os.environ.get("SENTINEL_QEMU_LIBS"):
            env["LD_LIBRARY_PATH"] = os.environ["SENTINEL_QEMU_LIBS"]
        if os.environ.get("SENTINEL_QEMU_MODULES"):
            env["QEMU_MODULE_DIR"] = os.environ["SENTINEL_QEMU_MODULES"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise GuestError("qemu exited: %s" % self.proc.stdout.read().decode(errors="replace"))
            if os.path.exists(self.ctl):
                try:
                    self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    self.sock.connect(self.ctl)
                    break
                except OSError:
                    self.sock = None
            time.sleep(0.05)
        if not self.sock:
            raise GuestError("no control socket after %ds" % timeout)
        self._wait_for(b"@@READY", deadline)
        return self

    def _machine(self):
        """QEMU's machine, CPU and RAM (in the shared file), serial ports
        (the console to a file, the command loop's on a socket) and monitor:
        what every guest has."""
        return [
            os.environ.get("SENTINEL_QEMU", "qemu-system-x86_64"), "-machine", "q35,memory-backend=ram", "-accel", "tcg",
            "-cpu", "max" if self.la57 else "qemu64",
            "-smp", str(self.cpus),
            "-m", "%dM" % self.mem_mb + (",slots=2,maxmem=%dM" % (self.mem_mb + self.hotplug_mb) if self.hotplug_mb else ""),
            "-object", ("memory-backend-memfd,id=ram,size=%dM,share=on" % self.mem_mb) if self.memfd else
            "memory-backend-file,id=ram,size=%dM,mem-path=%s,share=on" % (self.mem_mb, self.ram),
            "-display", "none", "-no-reboot",
            "-serial", "file:" + self.console,
            "-serial", "unix:%s,server=on,wait=off" % self.ctl,
            "-monitor", "unix:%s,server=on,wait=off" % self.monitor,
        ] + (["-L", os.environ["SENTINEL_QEMU_FIRMWARE"]] if os.environ.get("SENTINEL_QEMU_FIRMWARE") else [])

    def _append(self, base):
        """The kernel's command line: base, nokaslr where asked, the caller's own."""
        return base + (" nokaslr" if not self.kaslr else "") + (" " + self.append if self.append else "")

    def _command(self):
        """The busybox guest's QEMU command line: the test kernel, its
        initramfs with the command loop as init, virtio NICs and disks."""
        cmd = self._machine() + [
            "-kernel", os.path.join(self.kdir, "vmlinuz"),
            "-initrd", self._initrd(),
            "-append", self._append("console=ttyS0 panic=-1 loglevel=4"),
        ]
        # virtio NICs on QEMU's user-mode network (no host interface needed):
        # eth0, the network metrics' device, gateway 10.0.2.2
        # (no option ROM: nothing boots from them, and a carried QEMU's
        # firmware folder holds only what -kernel needs); eth0 told its
        # link is 1 Gb/s (net.speed), the others no speed (unknown)
        for i in range(self.nics):
            cmd += ["-netdev", "user,id=net%d" % i, "-device", "virtio-net-pci,netdev=net%d,romfile=%s" %
                    (i, ",speed=1000,duplex=full" if i == 0 else "")]
        for i, model in enumerate(self.phys_nics):
            cmd += ["-netdev", "user,id=pnet%d,net=10.0.%d.0/24" % (i, 3 + i),
                    "-device", "%s,netdev=pnet%d,romfile=" % (model, i)]
        # 64 MiB virtio disks (sparse): /dev/vda, ext2 on /vda (the init script)
        for i in range(self.ndisks):
            cmd += ["-drive", "file=%s,if=virtio,format=raw,cache=unsafe" % self._disk(i)]
        for img in self.images:
            cmd += ["-drive", "file=%s,if=virtio,format=raw,cache=unsafe,snapshot=on" % img]
        return cmd

    def _wait_for(self, marker, deadline):
        while marker not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise GuestError("timed out waiting for %r; control channel holds %r; console tail:\n%s" %
                                 (marker, self.buf[-300:], self.console_tail()))
            self.sock.settimeout(min(left, 1.0))
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                self.proc.wait(timeout=5)
                raise GuestError("qemu closed the control channel: %s" % self.proc.stdout.read().decode(errors="replace"))
            except socket.timeout:
                if self.proc.poll() is not None:
                    raise GuestError("guest died; console tail:\n%s" % self.console_tail())
                continue
            if not chunk:
                raise GuestError("control socket closed; console tail:\n%s" % self.console_tail())
            self.buf += chunk
        i = self.buf.index(marker)
        before, self.buf = self.buf[:i], self.buf[i + len(marker):]
        return before

    def run(self, cmd, timeout=60):
        """Run one shell command in the guest; returns (status, output).

        The guest checks each line's length.  A line it received garbled (a
        signal can interrupt its `read` mid-line) is answered with status 254
        under whatever ID it parsed; the command is then sent again.  Under
        TCG with every vCPU busy the UART can drop bytes, the line's newline
        among them: then the guest waits for the rest of the line forever.
        So when nothing comes back for NUDGE_S, a lone newline goes after
        it: it ends a line the guest was still reading (which then runs, or
        is answered 254 and sent again), and a guest that was busy running
        the command reads it later as an empty line, whose answer has no ID
        and is ignored."""
        if "\n" in cmd:
            raise GuestError("commands are one line: %r" % cmd)
        deadline = time.time() + timeout
        for attempt in range(3):
            self.seq += 1
            self.sock.sendall(("%d %d %s\n" % (self.seq, len(cmd.encode()), cmd)).encode())
            out = b""
            nudged = False
            while True:
                try:
                    out += self._wait_for(b"@@END ", deadline if nudged else min(deadline, time.time() + NUDGE_S))
                except GuestError as e:
                    failed = GuestError("command %r (timeout %ds, %.0fs in): %s" %
                                        (cmd[:160], timeout, time.time() - deadline + timeout, e))
                    if nudged or time.time() >= deadline or self.proc.poll() is not None:
                        raise failed from None
                    nudged = True
                    try:
                        self.sock.sendall(b"\n")
                    except OSError:           # the channel is gone (a crashed guest): no line to end
                        raise failed from None
                    continue
                rest = self._wait_for(b"\n", deadline).split()
                if len(rest) != 2:
                    continue                  # an empty line's answer (the nudge): no ID
                rid, status = rest
                if rid == str(self.seq).encode() and status != b"254":
                    return int(status or b"0"), out.decode(errors="replace").replace("\r\n", "\n").strip("\n")
                if status == b"254":
                    break                     # garbled: send again
        raise GuestError("the guest received %r garbled three times" % cmd)

    def send(self, cmd):
        """Send one command and do not wait for it: for one that never
        returns (echo c > /proc/sysrq-trigger)."""
        self.seq += 1
        self.sock.sendall(("%d %d %s\n" % (self.seq, len(cmd.encode()), cmd)).encode())

    def check(self, cmd, timeout=60):
        status, out = self.run(cmd, timeout)
        if status != 0:
            raise GuestError("guest command failed (%d): %s\n%s" % (status, cmd, out))
        return out

    def hmp(self, command, timeout=120):
        """Run a QEMU human-monitor command; returns its output."""
        m = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        m.settimeout(timeout)
        m.connect(self.monitor)
        buf = b""
        while not buf.endswith(b"(qemu) "):
            buf += m.recv(4096)
        m.sendall(command.encode() + b"\n")
        buf = b""
        while not buf.endswith(b"(qemu) "):
            chunk = m.recv(65536)
            if not chunk:
                break
            buf += chunk
        m.close()
        return buf.decode(errors="replace")

    def dump(self, path):
        """Write an ELF core of the guest's memory (QEMU dump-guest-memory);
        the guest is paused while it is written."""
        if os.path.exists(path):
            os.unlink(path)
        out = self.hmp("dump-guest-memory %s" % path)
        if not os.path.exists(path):
            raise GuestError("dump-guest-memory failed: %s" % out)
        return path

    def reboot(self, timeout=90):
        """A new boot of the same machine: QEMU stopped (its RAM file goes)
        and started again on the same RAM path, a new KASLR slide."""
        self._kill()
        for f in (self.console, self.ctl, self.monitor):
            if os.path.exists(f):
                os.unlink(f)
        self.buf = b""
        self.seq = 0
        return self.start(timeout)

    def console_tail(self, n=30):
        try:
            with open(self.console, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def _kill(self):
        if self.sock:
            self.sock.close()
            self.sock = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if os.path.exists(self.ram):
            os.unlink(self.ram)

    def stop(self):
        self._kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("boot", help="boot a guest and keep it running")
    b.add_argument("kernel", help="debian-6.1 or debian-6.12")
    b.add_argument("--nokaslr", action="store_true")
    b.add_argument("--la57", action="store_true", help="5-level paging (-cpu max)")
    b.add_argument("--mem", type=int, default=512, help="RAM in MiB")
    b.add_argument("--cpus", type=int, default=2)
    a = ap.parse_args()
    ks = kernels()
    if a.kernel not in ks:
        sys.exit("unknown kernel %s; have: %s" % (a.kernel, ", ".join(ks)))
    g = Guest(ks[a.kernel], mem_mb=a.mem, cpus=a.cpus, kaslr=not a.nokaslr, la57=a.la57, name="boot")
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))   # stop QEMU too
    with g:
        print("guest %s up; RAM file: %s" % (g.release, g.ram), flush=True)
        print("try: build/sentinel-inspect --source ramfile:%s info   (Ctrl-C stops the guest)" % g.ram, flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
