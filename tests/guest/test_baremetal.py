#!/usr/bin/env python3
"""Bare metal, from inside: the sentinel_pmem module and the static tools
running in the machine they watch.

    python3 tests/guest/test_baremetal.py BUILD-DIR

For Debian's 6.1 and 6.12 kernels: sentinel_pmem.ko is built against that
kernel's own headers package (kernel-support/module/build.sh; the headers
fetched once by tests/guest/fetch.sh --headers), and the guest boots with
it, the static sentinel-inspect and sentineld (make static) and the
bundles in its initramfs.  In the guest:

  module    it loads; /dev/sentinel_pmem is 0400 root; its ranges (ioctl
            and sysfs) are /proc/iomem's System RAM rounded to pages
  refusals  writing, a writable mapping, offsets outside System RAM (past
            the end, a hole, MMIO), read(), an unknown ioctl, root without
            CAP_SYS_RAWIO, a user other than root (sentinel-pmemtest)
  unload    rmmod while a mapping is held fails and changes nothing; once
            the mapping is gone it unloads, and loads again
  edac      tests/guest/edac's module, an EDAC memory controller with no
            hardware (QEMU emulates none), counts 3 corrected and 1
            uncorrected errors; the metric windows below check host.edac_*
  sources   sentinel-inspect --source pmem and --source kcore find the
            kernel (VMCOREINFO where /sys/kernel/vmcoreinfo says) and list
            the same tasks as /proc; every catalog metric agrees with the
            guest's /proc as the outside tests check it (metrics_check.py),
            allowing for the reader's own memory and threads
  detect    sentineld (CPU backend, shipped rules) on pmem and then on
            kcore: two busy loops fire CpuOverload from inside, in its
            JSON lines
  hotplug   128 MiB plugged in (QEMU pc-dimm, onlined movable): the ranges
            take it in and the generation moves; while a mapping of the
            device exists it cannot be taken offline (the kernel log says
            why); once the mapping is gone it goes offline, and leaves the
            ranges
  lockdown  raised to integrity at run time (securityfs), the device
            refuses every open and the kernel log names lockdown
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest  # noqa: E402
import metrics_check  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, "build"))
KERNELS = ("debian-6.1", "debian-6.12")
RES = guest.Results()
# the fewest checks a kernel's run reports: about 420 (two metric windows
# of about 190, one on pmem and one on kcore, and some 40 more)
BAREMETAL_MIN = 250

CONF = """[target]
source = %s
name = this-host
[rules]
bundle = /opt/sentinel/rules.bundle
[engine]
backend = cpu
tick = 100ms
[notify]
log = yes
jsonl = /tmp/%s.jsonl
[control]
socket = /tmp/%s.sock
"""


# stop sentineld and wait until it is gone (init, its parent since it was
# started in a subshell, reaps it here, not while reading the next command)
STOP_SENTINELD = "killall sentineld; while pidof sentineld >/dev/null; do sleep 0.2; done; sleep 0.3"


def report(ok, name, detail=""):
    print("%s baremetal/%s" % ("PASS" if ok else "FAIL", name), flush=True)
    if not ok:
        for line in str(detail).splitlines()[:30]:
            print("     " + line)
    RES.add("pass" if ok else "fail")


def skip(name, why):
    print("SKIP baremetal/%s: %s" % (name, why), flush=True)
    RES.add("skip")


def build_module(name, kdir_of):
    """sentinel_pmem.ko for kernel `name`, built against its headers."""
    p = subprocess.run(["sh", os.path.join(TOP, "kernel-support", "module", "build.sh"), kdir_of[name],
                        os.path.join(BUILD, "module")], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("building the module for %s failed:\n%s" % (name, p.stderr[-2000:]))
    return p.stdout.strip().splitlines()[-1]


def build_edac(name, kdir_of):
    """sentinel_edac_test.ko (tests/guest/edac: an EDAC memory controller
    with no hardware, for host.edac_*) for kernel `name`."""
    out = os.path.join(BUILD, "module-edac", name)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(os.path.join(TOP, "tests", "guest", "edac"), out)
    p = subprocess.run(["make", "-s", "-C", kdir_of[name], "M=" + out, "CONFIG_DEBUG_INFO_BTF_MODULES=", "modules"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("building the EDAC test module for %s failed:\n%s" % (name, p.stderr[-2000:]))
    return os.path.join(out, "sentinel_edac_test.ko")


def payload(tmp, name, kos):
    """An initramfs archive (gzipped) with the modules, the static tools, the bundles
    and sentineld's configurations."""
    root = os.path.join(tmp, "root-" + name)
    for d in ("bin", "lib/sentinel", "opt/sentinel", "etc/sentinel"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for ko in kos:
        shutil.copy(ko, os.path.join(root, "lib/sentinel"))
    for prog in ("sentinel-inspect", "sentineld"):
        shutil.copy(os.path.join(BUILD, "static", prog), os.path.join(root, "bin"))
    shutil.copy(os.path.join(BUILD, "metrics.bundle"), os.path.join(root, "opt/sentinel"))
    shutil.copy(os.path.join(tmp, "rules.bundle"), os.path.join(root, "opt/sentinel"))
    for src in ("pmem", "kcore"):
        with open(os.path.join(root, "etc/sentinel", src + ".conf"), "w") as f:
            f.write(CONF % (src, src, src))
    # gzipped: the kernel takes an uncompressed archive after another only
    # at a 4-byte boundary, and a gzip stream ends anywhere
    out = os.path.join(tmp, "payload-%s.cpio.gz" % name)
    files = subprocess.run(["find", "."], cwd=root, capture_output=True, text=True, check=True).stdout
    cpio = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root, input=files.encode(),
                          capture_output=True, check=True).stdout
    with open(out, "wb") as f:
        subprocess.run(["gzip", "-1"], input=cpio, stdout=f, check=True)
    return out


def inside_sample(g, src):
    """One sample of every metric, taken inside the guest."""
    def take():
        st, out = g.run("sentinel-inspect -s %s metrics --json --bundle /opt/sentinel/metrics.bundle" % src,
                        timeout=120)
        if st != 0:
            raise RuntimeError("sentinel-inspect -s %s metrics exited %d: %s" % (src, st, out[-800:]))
        return json.loads(out.splitlines()[-1])
    return take


def module_checks(g, name):
    st, out = g.run("insmod /lib/sentinel/sentinel_pmem.ko && dmesg | grep sentinel_pmem: | tail -n 1")
    report(st == 0 and "/dev/sentinel_pmem" in out, "%s: the module loads (%s)" % (name, out.strip()[-80:]), out)
    out = g.check("ls -l /dev/sentinel_pmem")
    report(out.startswith("cr--------") and " 0 " in out, "%s: /dev/sentinel_pmem is 0400 root" % name, out)
    iomem = g.check("grep 'System RAM' /proc/iomem")
    want = []
    for line in iomem.splitlines():
        a, z = (int(x, 16) for x in line.split(" :")[0].strip().split("-"))
        a, z = (a + 4095) // 4096 * 4096, (z + 1) // 4096 * 4096
        if z > a:
            if want and want[-1][1] == a:
                want[-1] = (want[-1][0], z)
            else:
                want.append((a, z))
    ioctl = g.check("sentinel-pmemtest ranges").splitlines()
    sysfs = g.check("cat /sys/class/misc/sentinel_pmem/ranges").splitlines()
    got = [tuple(int(x, 16) for x in l.split("-")) for l in ioctl[1:]]
    got = [(a, z + 1) for a, z in got]
    report(got == want and ioctl[1:] == sysfs,
           "%s: the ranges (ioctl and sysfs) are /proc/iomem's System RAM in whole pages: %s" %
           (name, " ".join(ioctl[1:])), "iomem %s\nioctl %s\nsysfs %s" % (iomem, ioctl, sysfs))
    st, out = g.run("sentinel-pmemtest refusals")
    for line in out.splitlines():
        if line.startswith(("ok ", "FAIL ")):
            report(line.startswith("ok "), "%s: %s" % (name, line.split(" ", 1)[1]), line)
    report(st == 0, "%s: sentinel-pmemtest refusals exits 0" % name, out)
    out = g.check("sentinel-pmemtest hold 30 > /tmp/hold.out & sleep 2; cat /tmp/hold.out; "
                  "rmmod sentinel_pmem; echo rmmod=$?; ls /dev/sentinel_pmem; kill %1; wait; "
                  "rmmod sentinel_pmem; echo rmmod=$?; ls /dev/sentinel_pmem 2>&1; "
                  "insmod /lib/sentinel/sentinel_pmem.ko; echo insmod=$?", timeout=90)
    report("mapped" in out and out.count("rmmod=1") == 1 and "rmmod=0" in out and "No such file" in out and
           "insmod=0" in out, "%s: rmmod while mapped is refused (in use) and the device stays; unmapped, it "
           "unloads and loads again" % name, out)


def source_checks(g, name, src, report_fn):
    st, out = g.run("sentinel-inspect -s %s info" % src, timeout=120)
    rel = g.release
    report(st == 0 and "Linux " + rel in out and "VMCOREINFO:" in out,
           "%s: sentinel-inspect -s %s finds the kernel inside (%s)" % (name, src,
                                                                         " ".join(l.split(":", 1)[1].strip() for l in out.splitlines()[:2] if ":" in l)),
           out)
    st, out = g.run("sentinel-inspect -s %s tasks --bundle /opt/sentinel/metrics.bundle > /tmp/tasks.out; echo rc=$?; "
                    "pids" % src, timeout=120)
    ours = set()
    tasks = g.check("cat /tmp/tasks.out").splitlines()
    for line in tasks[1:]:
        f = line.split()
        if f and f[0].isdigit():
            ours.add(int(f[0]))
    truth = {int(l.split()[0]) for l in out.splitlines() if l.split() and l.split()[0].isdigit()}
    missing = sorted(truth - ours)
    report("rc=0" in out and truth and not missing,
           "%s: sentinel-inspect -s %s tasks lists every PID of /proc (%d tasks)" % (name, src, len(ours)),
           "missing %s\n%s" % (missing, "\n".join(tasks[:10])))
    metrics_check.window(g, "%s/%s" % (name, src), None, None, report_fn, sampler=inside_sample(g, src))


def detect(g, name, src):
    """sentineld inside the guest: CpuOverload from two busy loops."""
    g.check("rm -f /tmp/%s.jsonl; : > /tmp/%s.log; (sentineld -c /etc/sentinel/%s.conf >> /tmp/%s.log 2>&1 &)" %
            (src, src, src, src))
    deadline = time.time() + 60
    out = ""
    while time.time() < deadline:
        out = g.check("head -c 4000 /tmp/%s.log" % src)
        if "started:" in out or "error" in out:
            break
        time.sleep(0.5)
    report("started:" in out, "%s: sentineld starts inside on %s (CPU backend, shipped rules)" % (name, src), out)
    if "started:" not in out:
        g.run(STOP_SENTINELD, timeout=90)
        return
    time.sleep(3)
    quiet = g.check("cat /tmp/%s.jsonl 2>/dev/null | grep -c CpuOverload || true" % src).strip()
    t0 = time.time()
    g.check("(while :; do :; done) & echo $! > /tmp/hog1; (while :; do :; done) & echo $! > /tmp/hog2")
    fired = None
    # (5 s of the guest's ticks; the wait is long because under TCG on a
    # host busy with make check's background guests they can take 40 s)
    while time.time() < t0 + 120:
        out = g.check("grep CpuOverload /tmp/%s.jsonl 2>/dev/null | tail -n 5 || true" % src)
        for line in out.splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("alert") == "CpuOverload" and ev.get("state") == "firing":
                fired = ev
        if fired:
            break
        time.sleep(0.5)
    dt = time.time() - t0
    # reaped here: a child that dies while the guest shell reads its next
    # line interrupts the read (the kernel model test does the same)
    g.check("a=$(cat /tmp/hog1); b=$(cat /tmp/hog2); kill $a $b; wait $a $b 2>/dev/null; true")
    log = g.check("wc -c < /tmp/%s.log; head -c 1500 /tmp/%s.log; echo ...; tail -c 1500 /tmp/%s.log" % (src, src, src))
    report(quiet == "0" and fired is not None,
           "%s: a CPU hog fires CpuOverload from inside on %s (%.1f s after it started; for 5 s)" % (name, src, dt),
           "before the hog %s CpuOverload lines\nthe log (bytes, head, tail):\n%s" % (quiet, log))
    g.run(STOP_SENTINELD, timeout=90)


def ranges_gen(g):
    out = g.check("sentinel-pmemtest ranges").splitlines()
    return int(out[0].split()[3]), out[1:]


def hotplug(g, name):
    """Memory plugged in under a running sentineld: the ranges take it in,
    sentineld maps them again; offline is refused while mapped."""
    gen0, r0 = ranges_gen(g)
    # the log made here, not in the background shell: the first look at it
    # may come before that shell has run
    g.check(": > /tmp/hp.log; (sentineld -c /etc/sentinel/pmem.conf >> /tmp/hp.log 2>&1 &)")
    if not wait_for(g, "head -c 4000 /tmp/hp.log", "started:", 60):
        report(False, "%s: sentineld starts on pmem before the memory is plugged in" % name, g.check("head -c 4000 /tmp/hp.log"))
        return
    g.hmp("object_add memory-backend-ram,id=hp1,size=128M")
    g.hmp("device_add pc-dimm,id=dimm1,memdev=hp1")
    deadline, gen1, r1 = time.time() + 30, gen0, r0
    while time.time() < deadline and len(r1) <= len(r0):
        time.sleep(0.5)
        gen1, r1 = ranges_gen(g)
    new = [r for r in r1 if r not in r0]
    report(gen1 > gen0 and len(new) == 1 and
           int(new[0].split("-")[1], 16) - int(new[0].split("-")[0], 16) + 1 == 128 << 20,
           "%s: 128 MiB plugged in joins the ranges (%s), generation %d -> %d" % (name, " ".join(new), gen0, gen1),
           "before %s\nafter %s" % (r0, r1))
    log = wait_for(g, "head -c 4000 /tmp/hp.log", "target back", 30) or g.check("head -c 4000 /tmp/hp.log")
    report("RAM ranges changed" in log and "target back" in log,
           "%s: sentineld sees the ranges change and maps them again (target error, then back)" % name, log[-1500:])
    if len(new) != 1:
        g.run(STOP_SENTINELD, timeout=90)
        return
    a, z = (int(x, 16) for x in new[0].split("-"))
    bs = int(g.check("cat /sys/devices/system/memory/block_size_bytes"), 16)
    blocks = " ".join("memory%d" % b for b in range(a // bs, (z + 1) // bs))
    off = ("ok=1; for b in %s; do echo offline > /sys/devices/system/memory/$b/state 2>/dev/null || ok=0; done; "
           "echo offline=$ok" % blocks)
    out = g.check("%s; dmesg | grep 'sentinel_pmem: refusing' | tail -n 1" % off, timeout=120)
    report("offline=0" in out and "refusing to take" in out,
           "%s: while sentineld maps the device, the plugged memory cannot be taken offline (%s)" %
           (name, out.splitlines()[-1][15:95] if out.splitlines() else ""), out)
    g.run(STOP_SENTINELD, timeout=90)
    out = g.check(off, timeout=120)
    gen2, r2 = ranges_gen(g)
    report("offline=1" in out and new[0] not in r2 and gen2 > gen1,
           "%s: sentineld stopped, it goes offline and leaves the ranges (generation %d -> %d)" % (name, gen1, gen2),
           "%s\nranges %s" % (out, r2))


def wait_for(g, cmd, text, timeout):
    """cmd's output once it holds text (within timeout seconds), or None."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = g.check(cmd)
        if text in out:
            return out
        time.sleep(0.5)
    return None


def edac(g, name):
    """A memory controller for EDAC (the test module: QEMU emulates none),
    3 corrected errors and 1 uncorrected counted on it by EDAC's core,
    before the metric windows: host.edac_* must say so."""
    out = g.check("insmod /lib/sentinel/sentinel_edac_test.ko && p=/sys/module/sentinel_edac_test/parameters && "
                  "echo 3 > $p/inject_ce && echo 1 > $p/inject_ue && d=/sys/devices/system/edac/mc/mc0 && "
                  "cat $d/ce_count $d/ue_count")
    report(out.split() == ["3", "1"], "%s: an EDAC memory controller (the test module) with 3 corrected and 1 "
           "uncorrected errors counted (mc0 ce_count, ue_count: %s)" % (name, " ".join(out.split())), out)


def lockdown(g, name):
    out = g.check("mkdir -p /sys/kernel/security && mount -t securityfs none /sys/kernel/security; "
                  "echo integrity > /sys/kernel/security/lockdown; cat /sys/kernel/security/lockdown; "
                  "sentinel-inspect -s pmem info; echo rc=$?; dmesg | grep sentinel_pmem | tail -n 1", timeout=60)
    report("[integrity]" in out and "rc=2" in out and "locked down" in out and "lockdown" in out.lower(),
           "%s: under lockdown (integrity) the device refuses, and says lockdown" % name, out)


def main():
    for prog in ("static/sentinel-inspect", "static/sentineld", "metrics.bundle", "rulec",
                 "guest-helpers.cpio.gz"):
        if not os.path.exists(os.path.join(BUILD, prog)):
            report(False, "%s/%s exists (make static check builds it)" % (BUILD, prog))
            return
    ks = guest.kernels()
    try:
        out = subprocess.run(["sh", os.path.join(TOP, "tests", "guest", "fetch.sh"), "--headers"] + list(KERNELS),
                             check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as e:
        report(False, "the test kernels' headers packages (tests/guest/fetch.sh --headers)", e.stderr[-1500:])
        return
    kdir_of = dict(line.split() for line in out.splitlines() if line.strip())
    tmp = tempfile.mkdtemp(prefix="baremetal-", dir=os.environ.get("SENTINEL_TEST_TMP"))
    try:
        subprocess.run([os.path.join(BUILD, "rulec"), "-q", "-o", os.path.join(tmp, "rules.bundle"),
                        os.path.join(TOP, "rules")], check=True)
        only = os.environ.get("SENTINEL_GUEST_ONLY")
        for name in KERNELS:
            if only and only not in name:
                continue
            RES.expect(BAREMETAL_MIN)
            err = None
            try:
                ko = build_module(name, kdir_of)
                edac_ko = build_edac(name, kdir_of)
            except RuntimeError as e:
                err = e
            report(err is None, "%s: the modules build against its headers package%s" %
                   (name, "" if err else " (%s, %s)" % (os.path.relpath(ko, BUILD), os.path.relpath(edac_ko, BUILD))),
                   err)
            if err:
                continue
            extra = payload(tmp, name, [ko, edac_ko])
            try:
                with guest.Guest(ks[name], name="bm", extra=[extra], hotplug_mb=128,
                                 append="memhp_default_state=online_movable") as g:
                    module_checks(g, name)
                    edac(g, name)
                    for src in ("pmem", "kcore"):
                        source_checks(g, name, src, lambda ok, what, detail="": report(ok, what, detail))
                    for src in ("pmem", "kcore"):
                        detect(g, name, src)
                    hotplug(g, name)
                    lockdown(g, name)
            except (guest.GuestError, RuntimeError, ValueError) as e:
                # the rest of this kernel's checks did not run: a failure, never a silent stop
                report(False, "%s: the guest stopped answering or a step broke; the checks after it did not run" %
                       name, e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(RES.end())
