#!/usr/bin/env python3
"""One sentineld, many targets: what each more target costs.

    python3 bench/targets.py BUILD-DIR [N,N,...] [SECONDS] [TICK_MS] [TASKS]

A Debian 6.12 guest (QEMU, TCG) is booted once and dumped (QEMU's
dump-guest-memory: an ELF vmcore, 512 MiB); every target is that image
(`vmcore:` source), so N targets read N kernels' worth of memory through
the same page cache: the read pattern is real, the memory still.  For each
N, sentineld runs the shipped rules against all of them at the given tick
(default 100 ms) for SECONDS (default 30) and the table says: start-up time
until every target ticks, sentineld's host CPU (all threads, schedstat),
its resident memory, ticks and late ticks summed over the targets, the
longest tick.  BENCH_BACKEND=cuda runs the targets in the GPU's one kernel
for all of them (a fleet), and the table adds its groups, its group ticks
late and its longest group tick (default: cpu).  BENCH_PROFILE: a shell
command run over the measurement window, {pid} being sentineld's.  The
window starts once the images' own alerts (each frozen guest fires
NoContextSwitches within seconds of its start) have stopped coming.  TASKS sets [engine] tasks, the task table's first rows
(default 4096; each row costs 4 KiB of history per windowed task metric,
and the table grows for a target with more).  Results go in
docs/benchmarks.md by hand.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
import guest  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
COUNTS = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "1,10,50,100").split(",")]
SECS = float(sys.argv[3]) if len(sys.argv) > 3 else 30
TICK_MS = float(sys.argv[4]) if len(sys.argv) > 4 else 100
TASKS = int(sys.argv[5]) if len(sys.argv) > 5 else 4096
BACKEND = os.environ.get("BENCH_BACKEND", "cpu")
# BENCH_LIVE=1: N live guests instead (TCG, 1 CPU, 256 MiB each, booted for
# each N), each watched through its RAM file: memory that moves
LIVE = os.environ.get("BENCH_LIVE") == "1"


def threads_ns(pid):
    """CPU time by thread name (the main loop, the CUDA driver's threads, ...)."""
    by = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                t = int(f.read().split()[0])
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
        except OSError:
            continue
        by[name] = by.get(name, 0) + t
    return by


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


def status(sock):
    p = subprocess.run([os.path.join(BUILD, "sentinelctl"), "-s", sock, "--json", "status"], capture_output=True,
                       text=True, timeout=120)
    try:
        return json.loads(p.stdout)["status"] if p.returncode == 0 else {}
    except ValueError:
        return {}


def run(tmp, core, n, sources=None):
    conf = os.path.join(tmp, "n%d.conf" % n)
    sock = os.path.join(tmp, "n%d.sock" % n)
    with open(conf, "w") as f:
        for i in range(n):
            f.write("[target vm%04d]\nsource = %s\n" % (i, sources[i] if sources else "vmcore:" + core))
        f.write("[rules]\ndirectory = %s\n[engine]\nbackend = %s\ntick = %gms\ntasks = %d\n[notify]\nlog = no\n"
                "[control]\nsocket = %s\n" % (os.path.join(TOP, "rules"), BACKEND, TICK_MS, TASKS, sock))
    log = open(os.path.join(tmp, "n%d.log" % n), "w")
    t0 = time.time()
    d = subprocess.Popen([os.path.join(BUILD, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    try:
        up = None
        while time.time() - t0 < 600 and d.poll() is None:
            tg = status(sock).get("targets", [])
            if len(tg) == n and all(t.get("ticks", 0) > 0 for t in tg):
                up = time.time() - t0
                break
            time.sleep(0.5)
        if up is None:
            return "N=%d: did not start (see %s)" % (n, log.name)
        # the images' own alerts (a frozen guest switches no context: NoContextSwitches
        # fires for each within seconds of its start) are a one-time cost, ~1 ms each
        # on the host: the window starts once they have stopped coming (3 s without one)
        settle, last, quiet = time.time(), -1, time.time()
        while time.time() - settle < 120:
            a = status(sock).get("alerts_delivered", 0)
            if a != last:
                last, quiet = a, time.time()
            elif time.time() - quiet >= 3:
                break
            time.sleep(0.5)
        s0 = status(sock)
        b0 = threads_ns(d.pid)
        c0 = sum(b0.values())
        prof = None
        if os.environ.get("BENCH_PROFILE"):      # a command on sentineld over the window ({pid})
            prof = subprocess.Popen(os.environ["BENCH_PROFILE"].replace("{pid}", str(d.pid)), shell=True)
        time.sleep(SECS)
        b1 = threads_ns(d.pid)
        c1 = sum(b1.values())
        if prof:
            prof.wait()
        s1 = status(sock)
        top = sorted(((b1[k] - b0.get(k, 0), k) for k in b1), reverse=True)[:3]
        alerts = s1.get("alerts_delivered", 0) - s0.get("alerts_delivered", 0)
        who = ", ".join("%s %.2f%%" % (k, v / SECS / 1e7) for v, k in top)
        ticks = sum(t["ticks"] for t in s1["targets"]) - sum(t["ticks"] for t in s0["targets"])
        late = sum(t["late_ticks"] for t in s1["targets"]) - sum(t["late_ticks"] for t in s0["targets"])
        longest = max(t["max_tick_us"] for t in s1["targets"])
        tables = s1["targets"][0].get("table_bytes", 0) / 1048576
        hist = s1["targets"][0].get("history_bytes", 0) / 1048576
        last = sum(t["last_tick_us"] for t in s1["targets"]) / n
        m0, m1 = s0.get("main_loop", {}), s1.get("main_loop", {})
        p0, p1 = m0.get("cpu_s_by_phase", {}), m1.get("cpu_s_by_phase", {})
        phases = ", ".join("%s %.3f%%" % (k, (p1[k] - p0.get(k, 0)) / SECS * 100)
                           for k in sorted(p1, key=lambda k: p0.get(k, 0) - p1[k]))
        loop = ("\n        main loop: %.1f wakeups/s; its CPU by phase: %s" %
                ((m1.get("wakeups", 0) - m0.get("wakeups", 0)) / SECS, phases)) if p1 else ""
        fleet = ""
        if BACKEND == "cuda":
            f0, f1 = s0.get("gpu_fleet", {}), s1.get("gpu_fleet", {})
            skipped = sum(t.get("skipped_ticks", 0) for t in s1["targets"]) - \
                sum(t.get("skipped_ticks", 0) for t in s0["targets"])
            fleet = ("\n        GPU %s: %d groups of %d blocks (grid %d); group ticks %d, late %d, longest %.0f us; "
                     "skipped %d" % (f1.get("device"), f1.get("groups", 0), f1.get("group_blocks", 0),
                                     f1.get("grid", 0), f1.get("group_ticks", 0) - f0.get("group_ticks", 0),
                                     f1.get("late_group_ticks", 0) - f0.get("late_group_ticks", 0),
                                     f1.get("max_group_tick_us", 0), skipped))
        return ("N=%4d  start %6.1f s  CPU %7.2f%% of a core (%s)  RSS %7.0f MiB  ticks %7d (%.0f%% of due)  late %5d  "
                "tick mean %7.0f us, longest %8.0f us  tables %.1f MiB a target (histories %.1f)  alerts %d" %
                (n, up, (c1 - c0) / SECS / 1e7, who, rss_mib(d.pid), ticks, 100.0 * ticks / (n * SECS * 1000 / TICK_MS),
                 late, last, longest, tables, hist, alerts)) + loop + fleet
    finally:
        guest.stop(d)


def live(tmp):
    """N live guests for each N: booted together, then watched."""
    ks = guest.kernels()
    print("live guests (Debian 6.12, TCG, 1 CPU, 256 MiB); backend %s, %s ms tick, %.0f s per N, task table %d "
          "rows, %d CPUs here" % (BACKEND, TICK_MS, SECS, TASKS, os.cpu_count()), flush=True)
    for n in COUNTS:
        gs = [guest.Guest(guest.main_kernel(ks), mem_mb=256, cpus=1, name="bl%d" % i) for i in range(n)]
        try:
            t0 = time.time()
            # booted together, a few at a time per CPU here (one after another, 32 took minutes)
            errs = []

            def boot(g):
                try:
                    g.start(timeout=300)
                except guest.GuestError as e:
                    errs.append(e)
            per = os.cpu_count() or 1
            for k in range(0, n, per):
                ts = [threading.Thread(target=boot, args=(g,)) for g in gs[k:k + per]]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
            if errs:
                raise errs[0]
            print("N=%d: %d guests booted in %.0f s" % (n, n, time.time() - t0), flush=True)
            print(run(tmp, None, n, ["ramfile:" + g.ram for g in gs]), flush=True)
        except guest.GuestError as e:
            print("N=%d: guest: %s" % (n, e), flush=True)
        finally:
            for g in gs:
                g.stop()


def main():
    tmp = tempfile.mkdtemp(prefix="sentinel-bench-targets-")
    if LIVE:
        try:
            live(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    try:
        ks = guest.kernels()
        core = os.path.join(tmp, "guest.core")
        with guest.Guest(guest.main_kernel(ks), name="bt") as g:
            g.dump(core)
        print("image: %s (%.0f MiB); backend %s, %s ms tick, %.0f s per N, task table %d rows, %d CPUs here" %
              (core, os.path.getsize(core) / 1048576, BACKEND, TICK_MS, SECS, TASKS, os.cpu_count()), flush=True)
        for n in COUNTS:
            print(run(tmp, core, n), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
