#!/usr/bin/env python3
"""One sentineld, many targets: what each more target costs (CPU backend).

    python3 bench/targets.py BUILD-DIR [N,N,...] [SECONDS] [TICK_MS] [TASKS]

A Debian 6.12 guest (QEMU, TCG) is booted once and dumped (QEMU's
dump-guest-memory: an ELF vmcore, 512 MiB); every target is that image
(`vmcore:` source), so N targets read N kernels' worth of memory through
the same page cache: the read pattern is real, the memory still.  For each
N, sentineld runs the shipped rules against all of them at the given tick
(default 100 ms) for SECONDS (default 30) and the table says: start-up time
until every target ticks, sentineld's host CPU (all threads, schedstat),
its resident memory, ticks and late ticks summed over the targets, the
longest tick.  TASKS sets [engine] tasks, the task table's first rows
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
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
import guest  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
COUNTS = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "1,10,50,100").split(",")]
SECS = float(sys.argv[3]) if len(sys.argv) > 3 else 30
TICK_MS = float(sys.argv[4]) if len(sys.argv) > 4 else 100
TASKS = int(sys.argv[5]) if len(sys.argv) > 5 else 4096


def cpu_ns(pid):
    t = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                t += int(f.read().split()[0])
        except OSError:
            pass
    return t


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


def run(tmp, core, n):
    conf = os.path.join(tmp, "n%d.conf" % n)
    sock = os.path.join(tmp, "n%d.sock" % n)
    with open(conf, "w") as f:
        for i in range(n):
            f.write("[target vm%04d]\nsource = vmcore:%s\n" % (i, core))
        f.write("[rules]\ndirectory = %s\n[engine]\nbackend = cpu\ntick = %gms\ntasks = %d\n[notify]\nlog = no\n"
                "[control]\nsocket = %s\n" % (os.path.join(TOP, "rules"), TICK_MS, TASKS, sock))
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
        s0, c0 = status(sock), cpu_ns(d.pid)
        time.sleep(SECS)
        s1, c1 = status(sock), cpu_ns(d.pid)
        ticks = sum(t["ticks"] for t in s1["targets"]) - sum(t["ticks"] for t in s0["targets"])
        late = sum(t["late_ticks"] for t in s1["targets"]) - sum(t["late_ticks"] for t in s0["targets"])
        longest = max(t["max_tick_us"] for t in s1["targets"])
        tables = s1["targets"][0].get("table_bytes", 0) / 1048576
        hist = s1["targets"][0].get("history_bytes", 0) / 1048576
        last = sum(t["last_tick_us"] for t in s1["targets"]) / n
        return ("N=%4d  start %6.1f s  CPU %7.2f%% of a core  RSS %7.0f MiB  ticks %7d (%.0f%% of due)  late %5d  "
                "tick mean %7.0f us, longest %8.0f us  tables %.1f MiB a target (histories %.1f)" %
                (n, up, (c1 - c0) / SECS / 1e7, rss_mib(d.pid), ticks, 100.0 * ticks / (n * SECS * 1000 / TICK_MS),
                 late, last, longest, tables, hist))
    finally:
        d.terminate()
        try:
            d.wait(60)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait()


def main():
    tmp = tempfile.mkdtemp(prefix="sentinel-bench-targets-")
    try:
        ks = guest.kernels()
        core = os.path.join(tmp, "guest.core")
        with guest.Guest(ks["debian-6.12"], name="bt") as g:
            g.dump(core)
        print("image: %s (%.0f MiB); %s ms tick, %.0f s per N, task table %d rows, %d CPUs here" %
              (core, os.path.getsize(core) / 1048576, TICK_MS, SECS, TASKS, os.cpu_count()), flush=True)
        for n in COUNTS:
            print(run(tmp, core, n), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
