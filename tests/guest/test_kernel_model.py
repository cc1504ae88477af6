#!/usr/bin/env python3
"""The kernel model against real kernels: what sentinel-inspect reads from a
live guest's RAM must agree with the guest's own /proc.

    python3 tests/guest/test_kernel_model.py build/san/sentinel-inspect

Eight boots cover both kernels (Debian 6.1 and 6.12) with KASLR on and off
and 4- and 5-level paging, every combination; each is checked idle, under
CPU load, and under memory pressure that pushes pages to swap.  In each
phase, besides the raw reads, every catalog metric computed by the compiled
metric library (one bundle for all boots) is checked against /proc
(metrics_check.py says how, and which tolerances apply where).  One guest is
booted twice to show the same bundle surviving a new KASLR slide.

The guest reads its truth with shell builtins only (no fork, so reading does
not move the counters it reads).  A comparison is made inside one jiffies
window: guest truth, then the host's read of RAM, then guest truth again.
Counters must lie between the two guest reads (and equal them exactly when
the two agree); gauges must lie between the smaller and the larger.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest  # noqa: E402
import metrics_check  # noqa: E402
import fsimages  # noqa: E402

INSPECT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/sentinel-inspect")
RULEC = os.path.join(os.path.dirname(INSPECT), "rulec")
# options every sentinel-inspect run gets (the 5.10 guest: --kallsyms FILE)
INSPECT_OPTS = []
# one bundle, compiled once, for every kernel and every boot: CO-RE
BUNDLE = os.path.abspath(os.environ.get("SENTINEL_METRICS_BUNDLE", "build/metrics.bundle"))
RES = guest.Results()

# (kernel, KASLR on, 5-level paging).  Paging and KASLR are the address
# translation's, the kernel's version its layouts': make check boots each
# kernel on KASLR with 4-level paging (where hosts boot) and gives the
# other value of each to 6.12 (5-level with KASLR, 4-level without);
# SENTINEL_GUEST_MATRIX=full boots every combination (docs/testing.md)
FULL_MATRIX = os.environ.get("SENTINEL_GUEST_MATRIX", "") == "full"
CONFIGS = [(k, kaslr, la57) for k in ("debian-6.1", "debian-6.12") for kaslr in (True, False) for la57 in (False, True)
           if FULL_MATRIX or (kaslr and not la57) or (k, kaslr, la57) in
           (("debian-6.12", True, True), ("debian-6.12", False, False))]
# Debian's newest (trixie-backports): its kallsyms, per-CPU symbols and NTP
# state are laid out as 6.12's are not; one configuration
CONFIGS.append(("debian-7.2", True, False))

# guest truth: one line per value, builtins only
TRUTH = ("jiffies; kv /proc/stat processes; read -r a b c d e < /proc/loadavg; echo ${d#*/}; "
         "kv /proc/meminfo MemTotal:; kv /proc/stat ctxt; kv /proc/meminfo MemFree:; "
         "kv /proc/meminfo SwapFree:; kv /proc/meminfo SwapTotal:; jiffies")
TRUTH_KEYS = ["jiffies", "forks", "threads", "memtotal_kb", "ctxt", "memfree_kb", "swapfree_kb",
              "swaptotal_kb", "jiffies_end"]
HOST_PATHS = ["jiffies_64", "total_forks", "nr_threads", "_totalram_pages", "runqueues.nr_switches",
              "vm_zone_stat[NR_FREE_PAGES]", "nr_swap_pages", "total_swap_pages"]


def report(ok, name, detail=""):
    print("%s %s" % ("PASS" if ok else "FAIL", name))
    if not ok:
        for line in str(detail).splitlines()[:30]:
            print("     " + line)
    RES.add("pass" if ok else "fail")


def inspect(ram, *args):
    p = subprocess.run([INSPECT] + INSPECT_OPTS + ["-s", "ramfile:" + ram] + list(args), capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def truth(g):
    vals = [int(x) for x in g.check(TRUTH).split()]
    return dict(zip(TRUTH_KEYS, vals))


def window(g, name, attempts=5):
    """Guest truth, host read, guest truth; check every value.

    A gauge can move up and down inside one window (free pages while kswapd
    reclaims), and then no pair of guest reads brackets the host's read.  Such
    a window proves nothing either way, so it is measured again (up to
    `attempts` times); a value outside a window in which it did not move fails
    at once."""
    for attempt in range(attempts):
        before = truth(g)
        rc, out, err = inspect(g.ram, "-v", "read", *HOST_PATHS)
        after = truth(g)
        if rc != 0:
            report(False, name + ": read", err)
            return
        h = dict(zip(HOST_PATHS, [int(x) for x in out.split()]))
        if _window_checks(name, h, before, after, final=attempt == attempts - 1):
            return


def _window_checks(name, h, before, after, final):
    """Check one window; returns False (reporting nothing) when a gauge that
    moved inside the window is out of it and another attempt is allowed."""
    checks = [
        # name, host value, guest before, guest after, kind
        ("jiffies_64", h["jiffies_64"], before["jiffies_end"], after["jiffies"], "counter"),
        ("total_forks", h["total_forks"], before["forks"], after["forks"], "counter"),
        ("nr_threads", h["nr_threads"], before["threads"], after["threads"], "gauge"),
        ("_totalram_pages", h["_totalram_pages"] * 4, before["memtotal_kb"], after["memtotal_kb"], "gauge"),
        ("runqueues.nr_switches (sum)", h["runqueues.nr_switches"], before["ctxt"], after["ctxt"], "counter"),
        ("NR_FREE_PAGES", max(h["vm_zone_stat[NR_FREE_PAGES]"], 0) * 4, before["memfree_kb"], after["memfree_kb"], "gauge"),
        ("nr_swap_pages", h["nr_swap_pages"] * 4, before["swapfree_kb"], after["swapfree_kb"], "gauge"),
        ("total_swap_pages", h["total_swap_pages"] * 4, before["swaptotal_kb"], after["swaptotal_kb"], "gauge"),
    ]
    if not final and any(kind == "gauge" and b != a and not min(b, a) <= hv <= max(b, a)
                         for what, hv, b, a, kind in checks):
        return False
    for what, hv, b, a, kind in checks:
        lo, hi = (b, a) if kind == "counter" else (min(b, a), max(b, a))
        ok = lo <= hv <= hi
        report(ok, "%s: %s %d within guest [%d, %d]%s" % (name, what, hv, lo, hi, " (exact)" if lo == hi else ""),
               "jiffies window [%d, %d], host read %d" % (before["jiffies"], after["jiffies_end"], h["jiffies_64"]))
    return True


def guest_pids(out):
    """{pid: comm} from the guest's `pids` ("PID COMM" lines; any other
    line, a shell's message, is not one)."""
    res = {}
    for line in out.splitlines():
        pid, _, comm = line.partition(" ")
        if pid.isdigit():
            res[int(pid)] = comm
    return res


def tasks(g, name):
    """The task list read from RAM equals the guest's /proc PIDs and names."""
    before = g.check("pids")
    rc, out, err = inspect(g.ram, "tasks", "--bundle", BUNDLE)
    after = g.check("pids")
    if rc != 0:
        report(False, name + ": tasks", err)
        return
    host = {}
    for line in out.splitlines()[1:]:
        f = line.split(None, 3)
        host[int(f[0])] = f[3] if len(f) > 3 else ""
    gs = guest_pids(before)
    ga = set(guest_pids(after))
    stable = set(gs) & ga                      # present in both guest reads
    missing = sorted(p for p in stable if p not in host)
    extra = sorted(p for p in host if p not in gs and p not in ga)
    # /proc/PID/stat shows a kworker's workqueue after a dash ("kworker/0:1-events"),
    # or after a plus while it runs a work item ("kworker/u8:1+flush-253:0": the
    # kernel's wq_worker_comm), and a kernel thread's full name where task->comm
    # keeps 15 characters
    badname = sorted((p, host[p], gs[p]) for p in stable if p in host and
                     not (gs[p] == host[p] or gs[p].startswith(host[p] + "-") or
                          gs[p].startswith(host[p] + "+") or
                          (len(host[p]) == 15 and gs[p].startswith(host[p]))))
    report(not missing and not extra and not badname and len(host) > 10,
           "%s: task list (%d tasks) equals /proc PIDs and names" % (name, len(host)),
           "missing from RAM: %s\nnot in /proc: %s\nnames: %s" % (missing, extra, badname[:10]))


def run_rulec(*args):
    p = subprocess.run([RULEC] + list(args), capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def corrupted_images(g, name):
    """Robustness on a real image: copy the live guest's RAM, break it, and
    require clean errors (exit 1 or 2 with a message), never a crash or a
    hang.  INSPECT is the ASan/UBSan build, so a bad access fails loudly."""
    import random
    import shutil
    img = g.ram + ".copy"
    shutil.copyfile(g.ram, img)

    utf8 = []                # (command, True when both its outputs were UTF-8)

    def run(*args):
        p = subprocess.run([INSPECT, "-s", "raw:" + img] + list(args), capture_output=True, timeout=120)
        try:
            p.stdout.decode(), p.stderr.decode()
            utf8.append((args[0], True))
        except UnicodeDecodeError:
            # the first line that is not UTF-8, for the failure's detail
            bad = next((ln for ln in (p.stdout + p.stderr).splitlines() if not _utf8(ln)), b"")
            utf8.append(("%s: %r" % (args[0], bad[:200]), False))
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    def clean(rc, err):
        return rc in (0, 1, 2) and "Sanitizer" not in err and "runtime error" not in err

    def patch(pa, data):
        with open(img, "r+b") as f:
            f.seek(pa)
            f.write(data)

    def xlate(va):
        rc, out, err = run("xlate", "%x" % va)
        return int(out.split()[-1], 16)

    def read_u64(pa):
        with open(img, "rb") as f:
            f.seek(pa)
            return int.from_bytes(f.read(8), "little")

    try:
        rc, out, err = run("-v", "read", "init_task.tasks.next", "page_offset_base")
        n1, pob = [int(x, 16) if x.startswith("0x") else int(x) for x in out.split()]
        p1 = xlate(n1)
        n2 = read_u64(p1)
        p2 = xlate(n2)
        saved = read_u64(p2)
        patch(p2, n1.to_bytes(8, "little"))                 # task 2 -> task 1: a cycle
        rc, out, err = run("tasks", "--bundle", BUNDLE)
        report(rc == 0 and len(out.splitlines()) > 10 and clean(rc, err),
               "%s: a task-list cycle in a real image: tasks reads the PID tree, as the rules do (%d tasks)" %
               (name, len(out.splitlines()) - 1), "rc %d\n%s" % (rc, err))
        rc, out, err = run("metrics", "--json", "--bundle", BUNDLE)
        m = json.loads(out) if rc == 0 and out.startswith("{") else {}
        report(rc == 0 and m.get("task_source") == "pid tree" and "task_walk_error" not in m and
               len(m.get("tasks", [])) > 10 and clean(rc, err),
               "%s: the compiled collection finds every task through the PID tree, the broken list aside (%d)" %
               (name, len(m.get("tasks", []))), "rc %d, %r\n%s" % (rc, m.get("task_source"), err))
        # now the tree too: its root node's shift (the byte at offset 0) made
        # impossible, so the collection falls back to the list, and its cycle
        rc, out, err = run("-v", "read", "init_pid_ns:struct pid_namespace.idr.idr_rt.xa_head")
        head = int(out.split()[0], 0)
        root_pa = xlate(head - 2)
        shift = open(img, "rb").read()[root_pa:root_pa + 1]
        patch(root_pa, bytes([7]))
        rc, out, err = run("metrics", "--json", "--bundle", BUNDLE)
        m = json.loads(out) if rc == 0 and out.startswith("{") else {}
        report(rc == 0 and m.get("task_source") == "task list" and m.get("task_walk_error") == -40 and clean(rc, err),
               "%s: a PID tree that does not check out falls back to the list, whose cycle is a read error "
               "(KX_ELOOP); the rest still reads" % name,
               "rc %d, %r, task_walk_error %r\n%s" % (rc, m.get("task_source"), m.get("task_walk_error"), err))
        rc, out, err = run("tasks", "--bundle", BUNDLE)
        report(rc == 1 and "cyclic" in err and clean(rc, err),
               "%s: the same for tasks: the list's cycle is a clean error, which says so" % name,
               "rc %d\n%s" % (rc, err))
        patch(root_pa, shift)
        patch(p2, (pob + (1 << 40)).to_bytes(8, "little"))   # next points 1 TiB past RAM
        patch(root_pa, bytes([7]))                           # and the tree's root impossible
        rc, out, err = run("tasks", "--bundle", BUNDLE)
        report(rc == 1 and clean(rc, err), "%s: list pointer outside RAM is a clean error" % name,
               "rc %d\n%s" % (rc, err))
        patch(root_pa, shift)
        patch(p2, saved.to_bytes(8, "little"))
        rc, out, err = run("tasks", "--bundle", BUNDLE)
        report(rc == 0 and len(out.splitlines()) > 10, "%s: the repaired image reads again" % name, err)
        # a task name of bytes that are not text (a kernel keeps any bytes a
        # process gave prctl(PR_SET_NAME)): PID 1's comm, found near its
        # task_struct's list node, is printed escaped, in tasks and metrics
        comm1 = [l.split(None, 3)[3] for l in out.splitlines()[1:] if l.split()[0] == "1"]
        with open(img, "rb") as f:
            f.seek(max(0, p1 - 16384))
            window = f.read(32768)
        key = comm1[0].encode() + b"\0" if comm1 else b"?"
        at = [i for i in range(len(window)) if window.startswith(key, i) and i % 8 == 0]
        if len(at) == 1:
            cpa = max(0, p1 - 16384) + at[0]
            orig16 = window[at[0]:at[0] + 16]
            patch(cpa, b"\xb3\xff\x01ok\xc3\xa9\0")
            rc, out, err = run("tasks", "--bundle", BUNDLE)
            line = [l for l in out.splitlines()[1:] if l.split()[0] == "1"]
            rc2, out2, err2 = run("metrics", "--json", "--bundle", BUNDLE)
            m = json.loads(out2) if rc2 == 0 and out2.startswith("{") else {}
            names = [t.get("task.comm") for t in m.get("tasks", []) if t.get("task.pid") == 1]
            report(rc == 0 and line and line[0].endswith(" \\xb3\\xff\\x01ok\u00e9") and names == ["\\xb3\\xff\\x01ok\u00e9"],
                   "%s: a task name that is not text prints escaped (\\xNN), its UTF-8 as it is, in tasks and "
                   "metrics --json" % name, "%r %r\n%s%s" % (line, names, err, err2))
            patch(cpa, orig16)
        else:
            report(False, "%s: PID 1's name (%r) found once beside its task_struct" % (name, comm1), str(at))
        # garbage kernel page tables
        rc, out, err = run("info")
        pgd = int([l for l in out.splitlines() if l.startswith("paging")][0].split("phys")[1], 16)
        orig = open(img, "rb").read()[pgd:pgd + 4096]
        patch(pgd, bytes(random.Random(1).getrandbits(8) for _ in range(4096)))
        rc, out, err = run("tasks", "--bundle", BUNDLE)
        report(rc == 2 and clean(rc, err) and err.strip(),
               "%s: garbage kernel page tables: clean error" % name, "rc %d\n%s" % (rc, err))
        patch(pgd, orig)
        # an "unsupported" kernel: VMCOREINFO without the kallsyms entries (as
        # before Linux 6.0); then the --kallsyms override brings it back
        syms = img + ".kallsyms"
        btf = img + ".btf"
        rc, out, err = run("kallsyms")
        open(syms, "w").write(out)
        rc2, out2, err2 = run("btf", btf)
        rc, out, err = run("sym", "__start_BTF")
        bpa = xlate(int(out.split()[0], 16))
        data = bytearray(open(img, "rb").read())
        hidden = 0
        for key in (b"SYMBOL(kallsyms_names)=", b"SYMBOL(kallsyms_offsets)="):
            i = data.find(key)
            while i >= 0:
                data[i:i + 6] = b"HIDDEN"
                hidden += 1
                i = data.find(key, i)
        open(img, "wb").write(data)
        rc, out, err = run("info")
        report(hidden and rc == 2 and "kallsyms" in err and "--kallsyms" in err,
               "%s: a kernel without kallsyms in VMCOREINFO: clear error naming --kallsyms" % name, err)
        rc, out, err = run("--kallsyms", syms, "tasks", "--bundle", BUNDLE)
        report(rc == 0 and len(out.splitlines()) > 10 and rc2 == 0,
               "%s: --kallsyms FILE overrides memory" % name, err)
        # missing BTF: break its magic in memory; --btf FILE overrides
        patch(bpa, b"\0\0")
        rc, out, err = run("--kallsyms", syms, "tasks", "--bundle", BUNDLE)
        report(rc == 2 and "BTF" in err and "--btf" in err,
               "%s: unreadable BTF is a clear error" % name, err)
        rc, out, err = run("--kallsyms", syms, "--btf", btf, "tasks", "--bundle", BUNDLE)
        report(rc == 0 and len(out.splitlines()) > 10, "%s: --btf FILE overrides memory" % name, err)
        # rulec --check --target: the shipped rules against this kernel, then
        # against its types with a field renamed away (a kernel that lacks
        # task_struct.stime): the rule that needs it is an error at its line
        rc, out, err = run_rulec("--check", "--target", "raw:" + img, "--kallsyms", syms, "--btf", btf, "rules/")
        report(rc == 0 and "OK" in err,
               "%s: rulec --check --target: the shipped rules can all run here" % name, err)
        raw = bytearray(open(btf, "rb").read())
        i = raw.find(b"\0stime\0")
        bad = btf + ".nostime"
        if i >= 0:
            raw[i + 1:i + 6] = b"stimX"
            open(bad, "wb").write(raw)
        rc, out, err = run_rulec("--check", "--color=never", "--target", "raw:" + img, "--kallsyms", syms,
                                 "--btf", bad, "rules/paper.yaml")
        report(i >= 0 and rc == 1 and "[target-missing]" in err and "TaskStuckInKernel" in err and "stime" in err and
               "paper.yaml:" in err,
               "%s: rulec --check --target: a kernel without task_struct.stime fails the rule that needs it "
               "[target-missing], at its line" % name, "rc %d\n%s" % (rc, err))
        if os.path.exists(bad):
            os.unlink(bad)
        os.unlink(syms)
        os.unlink(btf)
        # random garbage in 2000 random pages: whatever happens, no crash
        rnd = random.Random(7)
        size = os.path.getsize(img)
        with open(img, "r+b") as f:
            for _ in range(2000):
                f.seek(rnd.randrange(size // 4096) * 4096)
                f.write(bytes(rnd.getrandbits(8) for _ in range(64)) * 64)
        results = [run(*a) for a in (["info"], ["tasks", "--bundle", BUNDLE], ["read", "init_task", "runqueues.nr_switches"],
                                     ["metrics", "--bundle", BUNDLE])]
        report(all(clean(rc, err) for rc, out, err in results),
               "%s: 2000 garbage pages: every command exits cleanly (%s)" %
               (name, ", ".join(str(r[0]) for r in results)),
               "\n".join(r[2][-500:] for r in results))
        report(all(ok for _, ok in utf8), "%s: whatever the image holds, every command prints UTF-8 text "
               "(a kernel string's other bytes as \\xNN)" % name, str([c for c, ok in utf8 if not ok]))
        # no VMCOREINFO at all
        data = bytearray(open(img, "rb").read())
        i = data.find(b"OSRELEASE=")
        while i >= 0:
            data[i:i + 10] = b"XXXXXXXXXX"
            i = data.find(b"OSRELEASE=", i)
        open(img, "wb").write(data)
        rc, out, err = run("info")
        report(rc == 2 and "no Linux kernel found" in err, "%s: an image without VMCOREINFO says what was looked for" % name,
               "rc %d\n%s" % (rc, err))
    finally:
        os.unlink(img)


def vmcore(g, name):
    """The same kernel through an ELF core from QEMU's dump-guest-memory."""
    core = g.ram + ".core"
    try:
        before = g.check("pids")
        g.dump(core)
        after = g.check("pids")
        p = subprocess.run([INSPECT, "-s", "vmcore:" + core, "info"], capture_output=True, text=True, timeout=120)
        live = subprocess.run([INSPECT, "-s", "ramfile:" + g.ram, "info"], capture_output=True, text=True, timeout=120)
        keys = ("kernel", "KASLR", "paging", "CPUs")
        same = [l for l in p.stdout.splitlines() if l.split(":")[0] in keys]
        same_live = [l for l in live.stdout.splitlines() if l.split(":")[0] in keys]
        report(p.returncode == 0 and same == same_live and "vmcore" in p.stdout,
               "%s: an ELF core (dump-guest-memory) discovers the same kernel" % name, p.stdout + p.stderr)
        t = subprocess.run([INSPECT, "-s", "vmcore:" + core, "tasks", "--bundle", BUNDLE], capture_output=True, text=True, timeout=120)
        pids = {int(l.split()[0]) for l in t.stdout.splitlines()[1:]}
        gb, ga = set(guest_pids(before)), set(guest_pids(after))
        report(t.returncode == 0 and gb & ga <= pids <= gb | ga,
               "%s: the core's task list matches /proc at dump time (%d tasks)" % (name, len(pids)), t.stderr)
    finally:
        if os.path.exists(core):
            os.unlink(core)


def kernel_log(g, name, wrap):
    """sentinel-inspect dmesg against the guest's own dmesg (busybox, through
    syslog(2)): the last 100 lines equal.  With wrap, first 3,000 lines of
    ~90 bytes through /dev/kmsg (one open each: the per-open rate limit)
    push the 128 KiB text ring round more than twice; the oldest record we
    read then has a sequence number above 0, and the comparison holds.
    Then the kernel is tainted D and W for the later metric phases."""
    if wrap:
        g.check("i=0; while [ $i -lt 3000 ]; do echo \"sentinel wrap test line $i: "
                "the quick brown fox jumps over the lazy dog 0123456789\" > /dev/kmsg; i=$((i+1)); done",
                timeout=300)
    for attempt in range(3):
        ours_before = inspect(g.ram, "dmesg", "-n", "100")
        theirs = g.check("dmesg | tail -n 100")
        ours_after = inspect(g.ram, "dmesg", "-n", "100")
        same = theirs.splitlines() in (ours_before[1].splitlines(), ours_after[1].splitlines())
        if same or attempt == 2:
            break
        time.sleep(0.5)                      # a record arrived between the reads: again
    diff = [l for l in theirs.splitlines() if l not in ours_after[1].splitlines()][:10]
    report(ours_after[0] == 0 and same and len(theirs.splitlines()) == 100,
           "%s: sentinel-inspect dmesg -n 100 equals the guest's dmesg%s" %
           (name, " after the ring wrapped" if wrap else ""),
           "only in the guest's:\n" + "\n".join(diff) + "\n" + ours_after[2])
    if wrap:
        rc, out, err = inspect(g.ram, "dmesg", "--kmsg")
        recs = out.splitlines()
        first = int(recs[0].split(",")[1]) if recs else -1
        last = recs[-1] if recs else ""
        report(rc == 0 and first > 0 and "line 2999:" in last and len(recs) > 1000,
               "%s: after the wrap the oldest record read is seq %d, the newest the last line written "
               "(%d records)" % (name, first, len(recs)), err + last)
        # --follow: records written after it started, as they come
        f = subprocess.Popen([INSPECT] + INSPECT_OPTS + ["-s", "ramfile:" + g.ram, "dmesg", "-n", "0", "--follow", "--every", "100ms"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # it says when it follows (after discovery, which a busy host can
        # make take seconds): the records go in after that
        said = f.stderr.readline()
        g.check("for i in 1 2 3; do echo \"sentinel follow $i\" > /dev/kmsg; done")
        time.sleep(1.5)
        f.send_signal(signal.SIGINT)
        out, err = f.communicate(timeout=30)
        lines = [l.split("] ", 1)[-1] for l in out.splitlines()]
        report(f.returncode == 0 and "following from record" in said and
               lines == ["sentinel follow 1", "sentinel follow 2", "sentinel follow 3"],
               "%s: dmesg --follow prints the records written while it runs, and only those" % name,
               said + out + err)
        # taint D (oops) and W (warning), as root may: the metric phases
        # after this one compare host.tainted/oopsed/warned with these bits set
        g.check("echo 640 > /proc/sys/kernel/tainted")


def cgroups(g):
    """A cgroup v2 hierarchy for the cgroup metrics, compared in every phase:
    controllers enabled two levels down, limits (memory.max and .high,
    pids.max, cpu.max), a task in work/b, and an OOM kill in /oom (dd's
    64 MiB buffer in a 16 MiB cgroup without swap)."""
    cg = "/sys/fs/cgroup"
    g.check("mkdir -p %s && mount -t cgroup2 none %s && echo '+cpu +memory +pids' > %s/cgroup.subtree_control && "
            "mkdir -p %s/work/a/deep %s/work/b %s/oom && echo '+cpu +memory +pids' > %s/work/cgroup.subtree_control && "
            "echo '+cpu +memory +pids' > %s/work/a/cgroup.subtree_control && echo 300M > %s/work/memory.max && "
            "echo 100M > %s/work/b/memory.high && echo 64 > %s/work/a/pids.max && "
            "echo '50000 100000' > %s/work/a/cpu.max && echo 16M > %s/oom/memory.max && "
            "echo 0 > %s/oom/memory.swap.max" % ((cg,) * 14))
    # in subshells with their output discarded: the shell's notice of the
    # killed dd would otherwise land in a later command's output
    g.run("(sh -c 'echo $$ > %s/oom/cgroup.procs; exec dd if=/dev/zero of=/dev/null bs=64M count=1') "
          ">/dev/null 2>&1; true" % cg)
    g.check("(sh -c 'echo $$ > %s/work/b/cgroup.procs; exec sleep 100000' &) >/dev/null 2>&1" % cg)
    out = g.check("read -r l < %s/oom/memory.events; cat %s/oom/memory.events" % (cg, cg))
    report("oom_kill 1" in out, "cgroups: the hierarchy is up, and /oom saw an OOM kill", out)


def network(g):
    """Traffic for the network metrics: loopback and eth0 (virtio_net on
    QEMU's user network) up, pings both ways, done before the windows;
    dummy2 (dummy: its per-CPU lstats), br0 (a bridge: dev->stats and
    its per-CPU tstats) and tunl0 (ipip's: tstats, the core's from 6.7) up
    with packets sent, vrf0 (a VRF: the core's dstats from 6.7) up, a veth
    pair (vetha sends, its peer veth0, named by the kernel as busybox's ip
    names no peer, receives: its peer's transmits); a second namespace, as
    a container has, holding veth1 (vethb's peer) and its own lo;
    conntrack (loaded with its hooks on) tracks them, its limit set to a
    value of our own (host.conntrack_*); the physical NICs (the guest's
    phys_nics) named nic-DRIVER, each up on its own user network with
    pings to its gateway."""
    guest.phys_nics_up(g)
    g.check("ip link set lo up && ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && "
            "ping -c 3 -W 1 127.0.0.1 >/dev/null; ping -c 3 -W 1 10.0.2.2 >/dev/null; "
            "ip link set dummy2 up && ip addr add 10.8.0.1/24 dev dummy2 && ping -c 3 -W 1 10.8.0.2 >/dev/null; "
            "ip link add br0 type bridge && ip link set br0 up && ip addr add 10.9.0.1/24 dev br0 && "
            "ping -c 2 -W 1 10.9.0.2 >/dev/null; "
            "ip link set tunl0 up && ip addr add 10.7.0.1/24 dev tunl0 && ping -c 2 -W 1 10.7.0.2 >/dev/null; "
            "ip link add vrf0 type vrf table 10 && ip link set vrf0 up; "
            "ip link add vetha type veth && ip link set vetha up && ip link set veth0 up && "
            "ip addr add 10.6.0.1/24 dev vetha && ping -c 2 -W 1 10.6.0.2 >/dev/null; "
            + guest.NETNS_VETH +       # a container's network
            "[ -w /proc/sys/net/netfilter/nf_conntrack_max ] && echo 7777 > /proc/sys/net/netfilter/nf_conntrack_max; "
            "true", timeout=180)   # about 15 s here: the pings' timeouts


def module_symbols(g, name):
    """Loaded modules' symbols (each module's own kallsyms table in its
    memory): sentinel-inspect sym finds them where /proc/kallsyms does,
    variables (nf_conntrack's) and functions alike."""
    want = ("nf_conntrack_max", "nf_conntrack_net_id", "virtnet_poll", "ext4_fill_super")
    out = g.check("grep -E ' (%s)([[:space:]]|$)' /proc/kallsyms; true" % "|".join(want))
    truth = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[3].startswith("["):      # a module's: ADDR TYPE NAME [MODULE]
            truth.setdefault(f[2], int(f[0], 16))
    rc, so, se = inspect(g.ram, "sym", *sorted(truth))
    ours = {}
    for line in so.splitlines():
        f = line.split()
        if len(f) == 2:
            ours[f[1]] = int(f[0], 16)
    report(len(truth) >= 3 and ours == truth,
           "%s: modules' symbols from their own tables in memory, as /proc/kallsyms lists them (%s)" %
           (name, ", ".join("%s %s" % (k, k in ours) for k in sorted(truth))),
           "guest %r\nours %r\n%s" % (truth, ours, se))


# server and cloud NICs' drivers (kcore.h: their types ___in_MODULE) and
# their stats callbacks, by which km_net_kind knows them
NIC_READERS = {"igb": "igb_get_stats64", "ixgbe": "ixgbe_get_stats64", "i40e": "i40e_get_netdev_stats_struct",
               "ena": "ena_get_stats64", "gve": "gve_get_stats", "8139too": "rtl8139_get_stats64"}


def nic_readers(g, name):
    """The readers of NICs QEMU cannot emulate, against this kernel: their
    modules loaded without a device (the initramfs loads them), every
    relocation of their types resolves in the module's own BTF and each
    callback's symbol is found (sentinel-inspect relocs).  Their values are
    not checked: no device (docs/kernel-sources.md)."""
    loaded = set(l.split()[0] for l in g.check("cat /proc/modules").splitlines() if l.strip())
    mods = [m for m in NIC_READERS if m in loaded]
    texts = ["___in_" + m for m in mods] + [NIC_READERS[m] for m in mods]
    rc, out, err = inspect(g.ram, "relocs", "--bundle", BUNDLE, *texts)
    lines = out.splitlines()
    per = {m: sum(1 for l in lines if l.startswith("ok ") and ("___in_" + m in l or NIC_READERS[m] in l))
           for m in mods}
    # a field one version lacks (gve's XDP queues before 6.4) is tested
    # by the code (KFIELD_EXISTS): its "no" and its field's FAIL are fine;
    # nothing else may fail to resolve, and every type and callback must
    # be there
    guarded = set(re.findall(r"whether (\S+\.\S+) exists: not in this kernel", out))
    # types of one version or another (gve's queue configs: one to 6.14,
    # one of each kind after); one of the two must be there
    absent = set(re.findall(r"whether struct (\S+) exists: not in this kernel", out))
    versioned = ({"gve_queue_config___in_gve"}, {"gve_tx_queue_config___in_gve", "gve_rx_queue_config___in_gve"})
    either = set().union(*versioned) if not all(v <= absent for v in versioned) else set()
    bad = [l for l in lines if (l.startswith("FAIL") and not any("field %s." % t in l for t in absent & either) and
                                not any("field %s:" % f in l for f in guarded)) or
           (l.startswith("no ") and not re.search(r"whether \S+\.\S+ exists", l) and
            not any("struct %s exists" % t in l for t in either))]
    report(rc in (0, 1) and not bad and len(mods) == len(NIC_READERS) and all(n >= 3 for n in per.values()),
           "%s: server NICs' readers relocate against their modules' BTF, no device (%s; %s)" %
           (name, ", ".join("%s %d" % (m, per[m]) for m in mods), lines[-1] if lines else "no output"),
           "modules loaded: %s\nnot resolved: %s\n%s" % (sorted(loaded & set(NIC_READERS)), bad[:20], err[-1000:]))


def raid(g, step):
    """An md RAID1 array, md0, over two zram devices, built through md's
    sysfs (no mdadm in busybox; no superblock): clean for the idle
    windows, a member failed for the CPU-load ones, stopped (inactive)
    for the memory-pressure ones (disk.md_*)."""
    md = "/sys/block/md0/md"
    if step == "build":
        out = g.check("z1=$(cat /sys/class/zram-control/hot_add); z2=$(cat /sys/class/zram-control/hot_add); "
                      "echo 64M > /sys/block/zram$z1/disksize; echo 64M > /sys/block/zram$z2/disksize; "
                      "echo md0 > /sys/module/md_mod/parameters/new_array; cd %s && echo none > metadata_version && "
                      "echo raid1 > level && echo 2 > raid_disks && echo $(cat /sys/block/zram$z1/dev) > new_dev && "
                      "echo $(cat /sys/block/zram$z2/dev) > new_dev && i=0; for d in dev-*; do echo $i > $d/slot; "
                      "echo 65536 > $d/size; i=$((i+1)); done; echo 65536 > component_size; "
                      "echo active > array_state; cat array_state; cd /" % md, timeout=60)
        report(out.strip() in ("clean", "active"), "md0: a RAID1 array over two zram devices, built (%s)" %
               out.strip(), out)
    elif step == "fail":
        g.check("cd %s && for d in dev-*; do :; done && echo faulty > $d/state; cd /" % md)
    elif step == "stop":
        g.check("echo inactive > %s/array_state" % md)


def bond(g, step):
    """A bond, bond0, over dummy0 and dummy1, made through bonding's
    sysfs (miimon 100 ms): both slaves up for the idle windows, dummy1's
    carrier off (its mii_status down) for the load ones (net.bond_*)."""
    sysb = "/sys/class/net/bond0/bonding"
    if step == "build":
        out = g.check("echo +bond0 > /sys/class/net/bonding_masters && echo 100 > %s/miimon && "
                      "ip link set bond0 up && echo +dummy0 > %s/slaves && echo +dummy1 > %s/slaves && "
                      "sleep 0.5; cat %s/slaves; cat /sys/class/net/dummy*/bonding_slave/mii_status" %
                      (sysb, sysb, sysb, sysb), timeout=30)
        report(out.split() == ["dummy0", "dummy1", "up", "up"],
               "bond0: a bond over dummy0 and dummy1, both slaves up (%s)" % " ".join(out.split()), out)
    elif step == "fail":
        out = g.check("echo 0 > /sys/class/net/dummy1/carrier; sleep 0.5; "
                      "cat /sys/class/net/dummy1/bonding_slave/mii_status")
        report(out.strip() == "down", "bond0: dummy1's carrier off, its mii_status %s" % out.strip(), out)


def filesystems(g):
    """Mounts for the filesystem metrics: files and a directory of 60
    inodes on the ext4 disk (/vda), a tmpfs with size and inode limits
    and files in it, one mounted read-only, the xfs disk (/dev/vdb, made
    by mkfs.xfs on the host) with 2 MiB and 100 files on it, btrfs on one
    disk (/btrfs) and RAID1 over two (/btrfs2) with files on them; the
    memory-pressure phase later fills a 1 GiB tmpfs on /mnt."""
    g.check("mkdir -p /vda/d /lim /ro && for i in $(seq 60); do : > /vda/d/f$i; done && "
            "dd if=/dev/zero of=/vda/big bs=64k count=64 conv=fsync 2>/dev/null && "
            "mount -t tmpfs -o size=16M,nr_inodes=200 tmpfs /lim && dd if=/dev/zero of=/lim/f bs=1M count=3 2>/dev/null && "
            "for i in $(seq 20); do : > /lim/f$i; done && mount -t tmpfs -o size=4M,ro tmpfs /ro")
    n = len(g.images)
    out = fsimages.mount(g, n)
    report(n == len(fsimages.SPECS) and out.splitlines() == fsimages.expected(n),
           "xfs on /xfs, btrfs on /btrfs (one device) and /btrfs2 (RAID1 over two), ext4 as mkfs.ext4 makes it "
           "on /ext4, files written", out)


def fs_images(tmp):
    """The filesystem images (fsimages.py: xfs, btrfs on one device, btrfs
    RAID1 over two), made by the host's mkfs tools."""
    paths, err = fsimages.make(tmp)
    if err:
        report(False, "the filesystem images for fs.*: " + err)
    return paths


def metrics(g, name, select=None):
    metrics_check.window(g, name + " metrics", [INSPECT] + INSPECT_OPTS, BUNDLE, report, select=select)


def kaslr_offset(ram):
    rc, out, err = inspect(ram, "info")
    for line in out.splitlines():
        if line.startswith("KASLR:"):
            return line.split("offset")[-1].strip()
    return None


def old_kernel(kdir, tmp):
    """Debian 11's 5.10, the layouts before 6.x: its VMCOREINFO has no
    kallsyms (6.0 added them) and no uts_namespace.name offset (the struct
    began with a kref), and its printk ring is the first lockless one (with
    a dictionary ring).  Without symbols, discovery stops and says to give
    --kallsyms; with a copy of the guest's /proc/kallsyms it reads the
    tasks, the log (wrapped) and every metric; with the same symbols at
    their link addresses (what a System.map holds) it applies the slide."""
    name = "debian-5.10 kaslr 4-level"
    with guest.Guest(kdir, kaslr=True, name="km510") as g:
        rc, out, err = inspect(g.ram, "info")
        report(rc != 0 and "--kallsyms FILE" in err and "Linux 6.0" in err,
               "%s: without symbols, discovery says what to give (--kallsyms)" % name, out + err)
        # data symbols (per-CPU ones are 'A'), and _stext/_text for the slide
        ks = g.check("grep -v ' [tTwW] ' /proc/kallsyms; grep -E ' (_stext|_text)$' /proc/kallsyms", timeout=300)
        path = os.path.join(tmp, "kallsyms-5.10")
        with open(path, "w") as f:
            f.write(ks + "\n")
        INSPECT_OPTS[:] = ["--kallsyms", path]
        try:
            rc, out, err = inspect(g.ram, "info")
            rel = g.check("read -r r < /proc/sys/kernel/osrelease; echo $r")
            info = dict(l.split(":", 1) for l in out.splitlines() if ":" in l)
            ok = rc == 0 and info.get("kernel", "").strip() == "Linux " + rel
            report(ok, "%s: discovery with a copy of /proc/kallsyms: %s, %s" %
                   (name, rel, info.get("KASLR", "?").strip()), out + err)
            if not ok:
                return
            off = int(info["KASLR"].split("offset")[-1].strip(), 16)
            link = os.path.join(tmp, "system-map-5.10")
            with open(link, "w") as f:
                for line in ks.splitlines():
                    a, rest = line.split(" ", 1)
                    v = int(a, 16)
                    f.write("%016x %s\n" % (v - off if v >= 0xffffffff80000000 else v, rest))
            INSPECT_OPTS[:] = ["--kallsyms", link]
            rc2, out2, err2 = inspect(g.ram, "info")
            INSPECT_OPTS[:] = ["--kallsyms", path]
            # (KASLR may pick the link address itself, slide 0: then the
            # System.map is the kallsyms and there is nothing to move)
            report(rc2 == 0 and ("moved by the KASLR slide" in out2 or off == 0) and
                   [l for l in out2.splitlines() if l.startswith("kernel:")] ==
                   [l for l in out.splitlines() if l.startswith("kernel:")],
                   "%s: the same symbols at link addresses (a System.map) are moved by the slide %#x%s" %
                   (name, off, " (this boot's KASLR chose slide 0: nothing to move)" if off == 0 else ""),
                   out2 + err2)
            tasks(g, name + " idle")
            kernel_log(g, name + " idle", wrap=True)
            metrics(g, name + " idle")
        finally:
            INSPECT_OPTS[:] = []


def reboot_same_bundle(ks):
    """The same bundle, unchanged, on a second boot of the same kernel with
    a new KASLR slide."""
    offs = []
    for boot in range(3):
        with guest.Guest(ks["debian-6.12"], kaslr=True, name="rb") as g:
            offs.append(kaslr_offset(g.ram))
            if len(set(offs)) > 1 or boot == 2:
                report(len(set(offs)) > 1, "debian-6.12 reboot: a new KASLR slide (%s)" % " -> ".join(map(str, offs)))
                metrics(g, "debian-6.12 reboot (same bundle)")
                return


def _utf8(b):
    try:
        b.decode()
        return True
    except UnicodeDecodeError:
        return False


def load_phases(kaslr, la57):
    """The load phases (CPU, disk, memory pressure into swap) check what the
    metrics mean while the guest moves; KASLR and 5-level paging change how
    addresses translate, which the idle phase already reads every metric
    through.  So every combination gets the idle phase, and the load phases
    run on one combination a kernel (KASLR on, 4-level paging, as most hosts
    boot), or on every one with SENTINEL_GUEST_MATRIX=full (docs/testing.md)."""
    return FULL_MATRIX or (kaslr and not la57)


def one_config(ks, kname, kaslr, la57):
    """Every check of one boot of one kernel (raises GuestError)."""
    name = "%s %s %s" % (kname, "kaslr" if kaslr else "nokaslr", "5-level" if la57 else "4-level")
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="sentinel-xfs-") as tmp, \
            guest.Guest(ks[kname], kaslr=kaslr, la57=la57, name="km", images=fs_images(tmp),
                        phys_nics=tuple(guest.PHYS_NICS)) as g:
        boot = time.time() - t0
        rc, out, err = inspect(g.ram, "info")
        rel = g.check("read -r r < /proc/sys/kernel/osrelease; echo $r")
        info = dict(l.split(":", 1) for l in out.splitlines() if ":" in l)
        ok = (rc == 0 and info.get("kernel", "").strip() == "Linux " + rel and
              ("5-level" in info.get("paging", "")) == la57 and
              info.get("KASLR", "").strip().startswith("on," if kaslr else "off,"))
        report(ok, "%s: discovery from RAM alone (boot %.1fs): %s, %s" %
               (name, boot, rel, info.get("paging", "?").split(",")[0].strip()), out + err)
        if not ok:
            return
        cgroups(g)
        network(g)
        module_symbols(g, name)
        nic_readers(g, name)
        raid(g, "build")
        bond(g, "build")
        filesystems(g)
        window(g, name + " idle")
        tasks(g, name + " idle")
        kernel_log(g, name + " idle", wrap=kaslr and not la57)
        metrics(g, name + " idle")
        if kname == "debian-6.1" and kaslr:
            corrupted_images(g, name)
        if kname == "debian-6.12" and kaslr:
            vmcore(g, name)
        if not load_phases(kaslr, la57):
            return
        # a time daemon's update: the clock synchronised, its errors
        # and a phase offset for the PLL (host.clock_*) from here on
        g.check("sentinel-adjtimex set 2000 500 300000")
        # an error ext4 records on /ext4 (fs.errors from 0 to 1: the later
        # windows compare it with sysfs' errors_count), which errors=continue
        # (mkfs.ext4's default) leaves writable; the superblock's copy is
        # updated by a work item soon after
        out = g.check("while read -r dv mp ty rest; do [ $mp = /ext4 ] || continue; e=/sys/fs/ext4/${dv#/dev/}; "
                      "echo sentinel-test > $e/trigger_fs_error; i=0; read -r n < $e/errors_count; "
                      "while [ $n = 0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); read -r n < $e/errors_count; done; "
                      "echo $n; done < /proc/mounts; true")
        report(out.strip() == "1", "%s: /ext4 recorded an error (errors_count %s)" % (name, out.strip() or "-"), out)
        # a filesystem going read-only under a running system (fs.readonly
        # from rw to ro: the later windows compare it with /proc/mounts)
        out = g.check("while read -r dv mp ty op rest; do [ $mp = /ext4 ] && mount -o remount,ro /ext4; done "
                      "< /proc/mounts; while read -r dv mp ty op rest; do [ $mp = /ext4 ] && echo ${op%%,*}; "
                      "done < /proc/mounts; true")
        report(out.strip() == "ro", "%s: /ext4 remounted read-only (%s)" % (name, out.strip() or "not mounted"), out)
        raid(g, "fail")
        bond(g, "fail")
        # CPU load: one busy loop per CPU
        # (the second in work/a/deep, throttled by work/a's cpu.max: two
        # hogs in all, as the pressure comparisons expect of 2 vCPUs)
        # and traffic while the windows read (eth0 to QEMU's gateway, and
        # loopback): the network counters move inside the windows
        # (and 200 files held open by one tail: host.file_handles well
        # past what file-nr's estimate may lack)
        g.check("(while :; do :; done) & h1=$!; "
                "sh -c 'echo $$ > /sys/fs/cgroup/work/a/deep/cgroup.procs; while :; do :; done' & h3=$!; "
                "ping -q -i 0.2 -s 600 10.0.2.2 >/dev/null 2>&1 & p1=$!; "
                "ping -q -i 0.2 127.0.0.1 >/dev/null 2>&1 & p2=$!; "
                "tail -f $(for i in $(seq 200); do echo /proc/version; done) >/dev/null 2>&1 & f1=$!")
        time.sleep(1.5)
        window(g, name + " cpu-load")
        tasks(g, name + " cpu-load")
        metrics(g, name + " cpu-load")
        g.check("kill $h1 $h3 $p1 $p2 $f1; wait $h1 $h3 $p1 $p2 $f1 2>/dev/null; true")   # reap now, not mid-read
        # disk load: a writer that syncs to the virtio disk, a reader
        # of what it wrote (the disk metrics against /proc/diskstats)
        # (a bounded loop, waited for: only the disk metrics are
        # compared in this phase, memory and load move with it)
        g.check("(for i in $(seq 40); do "
                "dd if=/dev/zero of=/vda/f bs=64k count=32 conv=fsync 2>/dev/null; "
                "echo 1 > /proc/sys/vm/drop_caches; dd if=/vda/f of=/dev/null bs=64k 2>/dev/null; done) & "
                "hd=$!")
        time.sleep(1.0)
        metrics(g, name + " disk-load", select="disk")
        g.check("wait $hd 2>/dev/null; true", timeout=300)
        raid(g, "stop")
        # memory pressure: fill a tmpfs past RAM so pages go to swap
        g.check("mkdir -p /mnt && mount -t tmpfs -o size=1G tmpfs /mnt && "
                "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do dd if=/dev/zero of=/mnt/f$i bs=1M count=40 2>/dev/null; done",
                timeout=120)   # in steps: one 480 MiB dd can stall reclaim under TCG
        sw = truth(g)
        report(sw["swapfree_kb"] < sw["swaptotal_kb"],
               "%s: memory pressure reached swap (%d of %d KiB free)" %
               (name, sw["swapfree_kb"], sw["swaptotal_kb"]))
        window(g, name + " memory-pressure")
        tasks(g, name + " memory-pressure")
        metrics(g, name + " memory-pressure")


def main():
    if not os.access(INSPECT, os.X_OK):
        report(False, "guest: %s is not built" % INSPECT)
        return
    if not os.path.exists(BUNDLE):
        report(False, "guest: %s is not built (make build/metrics.bundle)" % BUNDLE)
        return
    try:
        ks = guest.kernels()
    except subprocess.CalledProcessError as e:
        report(False, "guest: fetching kernels failed", str(e))
        return
    only = os.environ.get("SENTINEL_GUEST_ONLY")
    for kname, kaslr, la57 in CONFIGS:
        if only and only not in "%s-%s-%s" % (kname, kaslr, la57):
            continue
        if kname not in ks:                # fetch.sh said why (an archive that dropped it)
            print("SKIP %s: not fetched" % kname)
            RES.add("skip")
            continue
        name = "%s %s %s" % (kname, "kaslr" if kaslr else "nokaslr", "5-level" if la57 else "4-level")
        # about 2,080 checks with the load phases, 650 without
        RES.expect(1500 if load_phases(kaslr, la57) else 450)
        t0 = time.monotonic()
        for attempt in range(2):
            # a second boot's checks replace the first's
            with RES.attempt():
                try:
                    one_config(ks, kname, kaslr, la57)
                    break
                except guest.GuestError as e:
                    if guest.crashed_on_its_own(e) and attempt == 0:
                        sys.stderr.write("%s: the guest's kernel crashed on its own (an emulator flake; Sentinel "
                                         "only reads its RAM); booting it again:\n%s\n" % (name, str(e)[-1500:]))
                        RES.drop()
                        continue
                    if guest.went_silent(e) and attempt == 0:
                        sys.stderr.write("%s: the guest stopped answering its control channel (under TCG its "
                                         "UART can drop a line's bytes; Sentinel only reads its RAM); booting it "
                                         "again:\n%s\n" % (name, str(e)[-1500:]))
                        RES.drop()
                        continue
                    report(False, "%s: guest" % name, e)
                    break
        print("-- %s: %.0f s" % (name, time.monotonic() - t0), flush=True)
    if not only or "5.10" in only:
        RES.expect(100)                      # about 150
        try:
            with tempfile.TemporaryDirectory(prefix="sentinel-km510-") as tmp:
                old_kernel(ks["debian-5.10"], tmp)
        except (guest.GuestError, KeyError) as e:
            report(False, "debian-5.10: guest", e)
    if not only or "reboot" in only:
        RES.expect(120)                      # a plain guest's metrics window: 191 on 6.12
        try:
            reboot_same_bundle(ks)
        except guest.GuestError as e:
            report(False, "reboot: guest", e)


if __name__ == "__main__":
    main()
    sys.exit(RES.end())
