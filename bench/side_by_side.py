#!/usr/bin/env python3
"""Sentinel beside the incumbent: the same real Debian system, the same
faults, one run, one Alertmanager.

    python3 bench/side_by_side.py BUILD-DIR [SCENARIO,...] [--backend cpu|cuda]

The guest is tests/debian's Debian 12 (systemd, node_exporter 1.5.0 with
Debian's defaults, nginx, PostgreSQL) under QEMU.  Watching it:

  prometheus-15s  Debian's prometheus (2.42), scrape and evaluation every
                  15 s (Prometheus' defaults), the community's node_exporter
                  host rules (docs/community-rules.txt, 40 alerts)
  prometheus-2s   the same at 2 s (BENCH_FAST=1s for 1 s, as tight as people
                  run it: in the emulated guest node_exporter takes 0.76 to
                  1.0 s to answer, and at 1 s a quarter of the scrapes time
                  out, so `for:` never holds; the run says how many scrapes
                  each Prometheus got)
  sentinel        sentineld on the guest's RAM, the shipped rules (rules/),
                  100 ms tick

All three send to one Alertmanager (Debian's, 0.25), each alert labelled
with its stack; a poller reads Alertmanager's API every 250 ms and keeps
when each alert first reached it.  Then the scenarios, one after the
other (SCENARIOS below): each starts a fault in the guest and waits until
every stack has raised what it raises for it or the scenario's time is up,
then stops the fault and lets the alerts resolve.  The hang and the panic
come last: after the hang the guest is booted again.  Also sampled: each
stack's CPU time and memory (RSS) on the host over the run (for
Prometheus, node_exporter's share inside the guest is not counted: it is
the guest's).

Prints one table (docs/comparison.md has the results and what they mean)
and writes the raw alert log to $BENCH_OUT (default /tmp/side_by_side.json).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
sys.path.insert(0, os.path.join(TOP, "tests", "debian"))
sys.path.insert(0, os.path.join(TOP, "tests", "engine"))
import debguest  # noqa: E402
import guest  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ONLY = sys.argv[2].split(",") if len(sys.argv) > 2 and not sys.argv[2].startswith("-") else None
BACKEND = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
PROMETHEUS = os.environ.get("PROMETHEUS") or shutil.which("prometheus")
ALERTMANAGER = os.environ.get("ALERTMANAGER") or shutil.which("prometheus-alertmanager")
HELPER = "/opt/sentinel/bin/"
FAST = os.environ.get("BENCH_FAST", "2s")
STACKS = ("sentinel", "prometheus-" + FAST, "prometheus-15s")

# (name, what it is, the fault (a guest command; it must return at once),
#  the stop (a guest command, or None: the guest is dead after),
#  the alerts that are each stack's answer, the most seconds to wait)
SCENARIOS = [
    ("cpu", "CPU saturation: stress-ng on every CPU",
     "stress-ng --cpu 0 --timeout 1200s >/dev/null 2>&1 &", "pkill stress-ng; true",
     {"sentinel": ("CpuOverload", "CpuUtilisationHigh", "LoadAverageHigh"), "prometheus": ("HostHighCpuLoad", "HostCpuLoadSaturation")}, 1020),
    ("memory", "memory exhaustion: stress-ng's workers take more than there is, the OOM killer acts",
     "stress-ng --vm 2 --vm-bytes 110% --vm-keep --oomable --timeout 1200s >/dev/null 2>&1 &",
     "pkill stress-ng; true",
     {"sentinel": ("OutOfMemory", "OomKill", "MemoryAvailableLow", "MemoryRunningOut"),
      "prometheus": ("HostOutOfMemory", "HostOomKillDetected", "HostMemoryUnderMemoryPressure")}, 300),
    ("forkbomb", "a fork bomb: stress-ng --fork, thousands of short-lived processes a second",
     "stress-ng --fork 4 --timeout 1200s >/dev/null 2>&1 &", "pkill stress-ng; true",
     {"sentinel": ("ForkBomb",), "prometheus": ("HostHighCpuLoad", "HostCpuLoadSaturation")}, 300),
    ("diskfull", "a disk filling: / to 97% with fallocate",
     "a=$(df --output=avail -B1 / | tail -1); fallocate -l $((a - a / 40)) /var/tmp/fill", "rm -f /var/tmp/fill",
     {"sentinel": ("FilesystemAlmostFull",), "prometheus": ("HostOutOfDiskSpace",)}, 300),
    ("io", "I/O saturation: stress-ng --hdd writing the root disk",
     "stress-ng --hdd 2 --hdd-bytes 256M --timeout 1200s >/dev/null 2>&1 &", "pkill stress-ng; rm -rf /root/tmp-stress-ng*; true",
     {"sentinel": ("DiskBusy", "DiskIoSaturation", "IoPressureFull", "IowaitStorm"),
      "prometheus": ("HostUnusualDiskIo", "HostDiskIoSaturation", "HostCpuHighIowait")}, 720),
    ("dstate", "a task stuck in D (uninterruptible sleep, never woken)",
     HELPER + "sentinel-dstate stuck-writer >/dev/null 2>&1 &", "pkill -9 -f stuck-writer; true",
     {"sentinel": ("HungTask",), "prometheus": ()}, 240),
    ("leak", "a systemd service leaking memory into its MemoryMax (512 MiB)",
     "systemd-run --unit=leaky -p MemoryMax=512M stress-ng --vm 1 --vm-bytes 600M --vm-keep --timeout 1200s",
     "systemctl stop leaky; true",
     {"sentinel": ("CgroupMemoryNearLimit", "CgroupOomKill"), "prometheus": ()}, 300),
    ("spinlock", "a spinlock deadlock: a test module's kernel thread takes a lock it holds, its CPU spins for good",
     "insmod /usr/local/lib/sentinel-test/spindl.ko", None,
     {"sentinel": ("TaskStuckInKernel", "CpuSoftLockup"), "prometheus": ()}, 120),
    ("hang", "the scheduler hung for good (SCHED_FIFO spinners on every CPU: no context switch again)",
     HELPER + "sentinel-freeze >/dev/null 2>&1 &", None,
     {"sentinel": ("NoContextSwitches",), "prometheus": ()}, 120),
    ("panic", "a kernel panic (sysrq c)", "echo c > /proc/sysrq-trigger &", None,
     {"sentinel": ("KernelPanic",), "prometheus": ()}, 120),
]


# what the guest's kernel itself says of a scenario on its console, and
# when (its soft-lockup watchdog; its RCU stall detector)
KERNEL_SAYS = {"spinlock": ("soft lockup", "rcu_preempt detected stall", "rcu: INFO"),
               "hang": ("soft lockup", "rcu_preempt detected stall", "rcu: INFO", "hung_task")}
# after these the guest is booted again (the panic comes last)
REBOOT_AFTER = ("spinlock", "hang")


def console_says(g, start, needles):
    """The first console line after byte `start` holding one of needles, or None."""
    try:
        with open(g.console, "rb") as f:
            f.seek(start)
            for line in f.read().decode(errors="replace").splitlines():
                if any(n in line for n in needles):
                    return line.strip()
    except OSError:
        pass
    return None


def community_rules(path):
    """docs/community-rules.txt's 40 rules as a Prometheus rule file."""
    rules = []
    with open(os.path.join(TOP, "docs", "community-rules.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, dur, sev, expr = line.rstrip("\n").split("\t")
            rules.append("      - alert: %s\n        expr: %s\n        for: %s\n        labels:\n"
                         "          severity: %s\n" % (name, json.dumps(expr), dur, sev))
    with open(path, "w") as f:
        f.write("groups:\n  - name: node-exporter\n    rules:\n" + "".join(rules))
    return len(rules)


def wait_http(url, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("%s did not answer at %s" % (what, url))


class Proc:
    """A process on this host, its log in tmp, its CPU time and memory sampled."""

    def __init__(self, name, cmd, tmp):
        self.name = name
        self.log = open(os.path.join(tmp, name + ".log"), "w")
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.rss_max = self.private_max = 0

    def cpu_s(self):
        try:
            with open("/proc/%d/stat" % self.p.pid) as f:
                v = f.read().rsplit(")", 1)[1].split()
            return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return 0.0

    def sample(self):
        """Its largest RSS, and its largest private memory: sentineld's RSS
        holds the guest's RAM it maps (shared with QEMU, the guest's pages)."""
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        self.rss_max = max(self.rss_max, int(line.split()[1]) * 1024)
            with open("/proc/%d/smaps_rollup" % self.p.pid) as f:
                priv = sum(int(line.split()[1]) * 1024 for line in f if line.startswith(("Private_Clean:",
                                                                                         "Private_Dirty:")))
            self.private_max = max(self.private_max, priv)
        except OSError:
            pass

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()


class Poller(threading.Thread):
    """Alertmanager's active alerts every 250 ms: when each (stack, alert,
    labels) first reached it, and when it was last seen active."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.url = "http://127.0.0.1:%d/api/v2/alerts" % port
        self.seen, self.lock, self.stop_ = {}, threading.Lock(), False

    def run(self):
        while not self.stop_:
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    alerts = json.load(r)
                now = time.time()
                with self.lock:
                    for a in alerts:
                        if a.get("status", {}).get("state") != "active":
                            continue
                        lab = a["labels"]
                        key = (lab.get("stack", "?"), lab.get("alertname", "?"), a["fingerprint"])
                        e = self.seen.setdefault(key, {"first": now, "labels": lab, "startsAt": a.get("startsAt")})
                        e["last"] = now
            except (OSError, ValueError):
                pass
            time.sleep(0.25)

    def since(self, t0):
        """{stack: [(seconds after t0, alertname, labels)]} of alerts first seen after t0."""
        out = {}
        with self.lock:
            for (stack, name, _), e in self.seen.items():
                if e["first"] >= t0:
                    out.setdefault(stack, []).append((e["first"] - t0, name, e["labels"]))
        for v in out.values():
            v.sort(key=lambda x: x[0])
        return out


def prom_query(port, q):
    """One instant query's first value, or None."""
    try:
        url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
        with urllib.request.urlopen(url, timeout=10) as r:
            res = json.load(r)["data"]["result"]
        return float(res[0]["value"][1]) if res else None
    except (OSError, ValueError, KeyError, IndexError):
        return None


def prom_up(port):
    """Prometheus' own view of the target: up's last value, or None."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/query?query=up" % port, timeout=5) as r:
            res = json.load(r)["data"]["result"]
        return float(res[0]["value"][1]) if res else None
    except (OSError, ValueError, KeyError, IndexError):
        return None


def main():
    for b, what in ((PROMETHEUS, "prometheus"), (ALERTMANAGER, "prometheus-alertmanager")):
        if not b:
            sys.exit("side_by_side: %s is not installed (apt-get install prometheus prometheus-alertmanager)" % what)
    tmp = tempfile.mkdtemp(prefix="sentinel-sbs-")
    idir = debguest.image()
    n = community_rules(os.path.join(tmp, "community.yml"))
    print("community rules: %d alerts (docs/community-rules.txt)" % n, flush=True)
    am_port = guest.free_port()
    with open(os.path.join(tmp, "am.yml"), "w") as f:
        f.write("route:\n  receiver: none\n  group_wait: 0s\nreceivers:\n  - name: none\n")
    procs = {}
    g = debguest.DebianGuest(idir, name="sbs")
    poller = None
    rows = []
    try:
        procs["alertmanager"] = Proc("alertmanager", [ALERTMANAGER, "--config.file=" + os.path.join(tmp, "am.yml"),
                                                      "--storage.path=" + os.path.join(tmp, "am-data"),
                                                      "--web.listen-address=127.0.0.1:%d" % am_port,
                                                      "--cluster.listen-address="], tmp)
        wait_http("http://127.0.0.1:%d/-/ready" % am_port, "alertmanager")
        t0 = time.time()
        g.start()
        print("guest up in %.0f s (%s); node_exporter at %s" % (time.time() - t0, g.release, g.exporter), flush=True)
        prom_ports = {}
        for stack, every in (("prometheus-15s", "15s"), ("prometheus-" + FAST, FAST)):
            port = guest.free_port()
            prom_ports[stack] = port
            cfg = os.path.join(tmp, stack + ".yml")
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: %s\n  evaluation_interval: %s\n  external_labels:\n"
                        "    stack: %s\nalerting:\n  alertmanagers:\n    - static_configs:\n"
                        "        - targets: ['127.0.0.1:%d']\nrule_files: ['%s']\nscrape_configs:\n"
                        "  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" %
                        (every, every, stack, am_port, os.path.join(tmp, "community.yml"), g.exporter_port))
            procs[stack] = Proc(stack, [PROMETHEUS, "--config.file=" + cfg, "--storage.tsdb.path=" +
                                        os.path.join(tmp, stack + "-data"), "--web.listen-address=127.0.0.1:%d" % port],
                                tmp)
            wait_http("http://127.0.0.1:%d/-/ready" % port, stack)
        sock = os.path.join(tmp, "ctl.sock")
        with open(os.path.join(tmp, "sentinel.conf"), "w") as f:
            f.write("[target]\nsource = ramfile:%s\nname = debian\nlabels = stack=sentinel\n[rules]\ndirectory = %s\n"
                    "[engine]\nbackend = %s\ntick = 100ms\nstate = none\n[notify]\nlog = yes\nalertmanager = "
                    "http://127.0.0.1:%d\n[control]\nsocket = %s\n" %
                    (g.ram, os.path.join(TOP, "rules"), BACKEND, am_port, sock))
        procs["sentinel"] = Proc("sentinel", [os.path.join(BUILD, "sentineld"), "-c", os.path.join(tmp, "sentinel.conf")],
                                 tmp)
        deadline = time.time() + 120
        while time.time() < deadline and not os.path.exists(sock):
            time.sleep(0.5)
        poller = Poller(am_port)
        poller.start()
        # settle: every stack has seen the idle guest (Prometheus' [5m] windows need five minutes)
        settle = float(os.environ.get("BENCH_SETTLE_S", "330"))
        print("settling for %.0f s (the windows of the idle guest) ..." % settle, flush=True)
        time.sleep(settle)
        idle = poller.since(0)
        print("alerts on the idle guest: %s" % ({s: [a[1] for a in v] for s, v in idle.items()} or "none"), flush=True)
        cpu0 = {k: p.cpu_s() for k, p in procs.items()}
        tr0 = time.time()
        for name, what, fault, stop, want, wait_s in SCENARIOS:
            if ONLY and name not in ONLY:
                continue
            print("\n== %s: %s" % (name, what), flush=True)
            con0 = os.path.getsize(g.console) if os.path.exists(g.console) else 0
            kernel_said = None
            t = time.time()
            rc, out = g.run(fault, timeout=120)
            if rc != 0:
                print("   the fault's command failed (%d): %s" % (rc, out.strip()[-500:]), flush=True)
            ups = []
            while time.time() - t < wait_s:
                for p in procs.values():
                    p.sample()
                got = poller.since(t)
                # every stack raised its answer; a stack with none expected
                # (Prometheus has no rule for it) gets the whole time to say something
                done = all(want[k] and any(a[1] in want[k] for a in got.get(s, []))
                           for s, k in ((s, "sentinel" if s == "sentinel" else "prometheus") for s in STACKS))
                if stop is None:
                    ups.append(prom_up(prom_ports["prometheus-" + FAST]))
                if name in KERNEL_SAYS and kernel_said is None:
                    line = console_says(g, con0, KERNEL_SAYS[name])
                    if line:
                        kernel_said = (round(time.time() - t, 1), line)
                if done and time.time() - t > 30:
                    break
                time.sleep(1)
            got = poller.since(t)
            row = {"scenario": name, "what": what, "stacks": {}, "kernel_said": kernel_said}
            for s in STACKS:
                w = want[s if s == "sentinel" else "prometheus"]
                mine = got.get(s, [])
                answer = [a for a in mine if a[1] in w]
                row["stacks"][s] = {"first": (round(mine[0][0], 1), mine[0][1]) if mine else None,
                                    "answer": (round(answer[0][0], 1), answer[0][1]) if answer else None,
                                    "all": [(round(a[0], 1), a[1]) for a in mine]}
                print("   %-15s %s" % (s, ", ".join("%s at %.1f s" % (a[1], a[0]) for a in mine) or "nothing"),
                      flush=True)
            if name in KERNEL_SAYS:
                print("   the guest's kernel on its console: %s" %
                      ("at %.1f s: %s" % kernel_said if kernel_said else "nothing"), flush=True)
            if stop is None:
                row["prometheus_up"] = [u for u in ups if u is not None][-3:]
                print("   prometheus-%s's up{job=node} at the end: %s" % (FAST, row["prometheus_up"]), flush=True)
            rows.append(row)
            if stop is not None:
                g.run(stop, timeout=120)
                time.sleep(float(os.environ.get("BENCH_QUIET_S", "90")))
            elif name in REBOOT_AFTER:
                g.reboot(timeout=300)
                g.check("systemctl is-system-running --wait >/dev/null; true", timeout=300)
                time.sleep(60)
        run_s = time.time() - tr0
        scrapes = {s: prom_query(prom_ports[s], "avg_over_time(up[%ds])" % int(run_s + 1)) for s in prom_ports}
        usage = {k: {"cpu_s": round(p.cpu_s() - cpu0.get(k, 0), 1), "rss_mib": round(p.rss_max / 2 ** 20, 1),
                     "private_mib": round(p.private_max / 2 ** 20, 1)} for k, p in procs.items()}
    finally:
        if poller:
            poller.stop_ = True
        for p in procs.values():
            p.stop()
        g.stop()
    out = os.environ.get("BENCH_OUT", "/tmp/side_by_side.json")
    with open(out, "w") as f:
        json.dump({"rows": rows, "usage": usage, "run_s": run_s, "backend": BACKEND, "scrapes_ok": scrapes}, f,
                  indent=1)
    print("\n| scenario | Sentinel (%s) | Prometheus, %s | Prometheus, 15 s |" % (BACKEND, FAST))
    print("|---|---|---|---|")
    for r in rows:
        cells = []
        for s in STACKS:
            a = r["stacks"][s]["answer"] or r["stacks"][s]["first"]
            cells.append("%s at %.1f s" % (a[1], a[0]) if a else "nothing")
        print("| %s | %s |" % (r["scenario"], " | ".join(cells)))
    print("\nover the %.0f s of scenarios, on this host: %s" % (run_s, ", ".join(
        "%s %.1f s CPU, %.0f MiB RSS (%.0f MiB its own)" % (k, v["cpu_s"], v["rss_mib"], v["private_mib"])
        for k, v in usage.items())))
    print("scrapes that succeeded over the run: %s" % ", ".join(
        "%s %s" % (k, "%.0f%%" % (100 * v) if v is not None else "?") for k, v in scrapes.items()))
    print("raw: %s; logs: %s" % (out, tmp))


if __name__ == "__main__":
    main()
