#!/usr/bin/env python3
"""The CPU backend's tick against a paused guest: what a window costs, and
one build against another, on memory that does not change between runs.

    python3 bench/paused_tick.py BUILD-DIR [N,N,...] [SECONDS] [ROUNDS]

For each N (default 5000,50000): a Debian 6.12 guest (QEMU) with N tasks
(`sentinel-spawn`), paused, so that every run reads the same memory.  Then
ROUNDS times (default 3), in turn, sentineld on the CPU backend
([engine] threads = $BENCH_THREADS, default 1; tick $BENCH_TICK, default
10ms; a task table for N) with each rule set of BENCH_KINDS (default
"window,no window"):

    window      any(task.state == "D" and delta(task.ctx_switches[1m]) == 0)
    no window   any(task.state == "D" and total(task.ctx_switches) == 0)
    changes     any(task.state == "D" and changes(task.ctx_switches[1m]) == 0)
    max         any(task.state == "D" and max_over_time(task.ctx_switches[1m]) == task.ctx_switches)
    shipped     the rules in rules/

(window and no window read the same task metrics in the same loop; the
window adds a history per task and its lookup), each sampled for SECONDS
(default 10) after it settles (BENCH_SETTLE seconds after its tenth tick,
default 2; 62 to measure the window once it is covered, as a daemon
runs: before that, every task's window is still filling; with
BENCH_PERF=PREFIX, `perf record` of sentineld over the samples into
PREFIX-KIND-ROUND.data, and SENTINEL_PERF_MAP=1 in the environment names
the linked code's functions); with BENCH_BASELINE=DIR, DIR's sentineld
and sentinelctl too (an older build), in the same rounds.  Prints each
run, then per build the median of the rounds' medians of each kind, the
window's cost in percent (when both ran) and the tables' bytes
(`sentinelctl status`: table_bytes, history_bytes).  Results go in
docs/benchmarks.md by hand.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
import guest  # noqa: E402

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else sys.exit(__doc__)
SIZES = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "5000,50000").split(",")]
SECS = float(sys.argv[3]) if len(sys.argv) > 3 else 10
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
THREADS = os.environ.get("BENCH_THREADS", "1")
BASELINE = os.environ.get("BENCH_BASELINE")
TICK = os.environ.get("BENCH_TICK", "10ms")
SETTLE = float(os.environ.get("BENCH_SETTLE", "2"))
PERF = os.environ.get("BENCH_PERF")

RULES = {
    "window": 'any(task.state == "D" and delta(task.ctx_switches[1m]) == 0)',
    "no window": 'any(task.state == "D" and total(task.ctx_switches) == 0)',
    "changes": 'any(task.state == "D" and changes(task.ctx_switches[1m]) == 0)',
    "max": 'any(task.state == "D" and max_over_time(task.ctx_switches[1m]) == task.ctx_switches)',
    "shipped": None,
}
KINDS = os.environ.get("BENCH_KINDS", "window,no window").split(",")


def ctl(sock, cmd, build=None):
    p = subprocess.run([os.path.join(build or BUILD, "sentinelctl"), "-s", sock, "--json", cmd], capture_output=True,
                       text=True, timeout=60)
    return json.loads(p.stdout) if p.stdout.startswith("{") else {}


def run(tmp, ram, n, kind, build, label="", rnd=0):
    rules = os.path.join(TOP, "rules")
    if RULES[kind]:
        rules = os.path.join(tmp, kind.replace(" ", "-"))
        os.makedirs(rules, exist_ok=True)
        with open(os.path.join(rules, "r.yaml"), "w") as f:
            f.write("groups:\n  - name: bench\n    rules:\n      - alert: HungTask\n        expr: %s\n"
                    "        for: 1m\n        severity: critical\n" % RULES[kind])
    sock = os.path.join(tmp, "ctl.sock")
    conf = os.path.join(tmp, "b.conf")
    with open(conf, "w") as f:
        f.write("[target]\nsource = ramfile:%s\n[rules]\ndirectory = %s\n[engine]\nbackend = cpu\ntick = %s\n"
                "tasks = %d\nthreads = %s\n[notify]\nlog = no\n[control]\nsocket = %s\n" %
                (ram, rules, TICK, n * 5 // 4 + 1024, THREADS, sock))
    log = open(os.path.join(tmp, "d.log"), "w")
    p = subprocess.Popen([os.path.join(build, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            if os.path.exists(sock) and ctl(sock, "status", build).get("status", {}).get("ticks", 0) > 10:
                break
            time.sleep(0.2)
        if p.poll() is not None or time.time() >= deadline:
            raise RuntimeError("sentineld did not tick: %s" % open(os.path.join(tmp, "d.log")).read()[-2000:])
        time.sleep(SETTLE)
        perf = subprocess.Popen(["perf", "record", "-q", "-o", "%s-%s-%d.data" % (PERF, label, rnd), "-p",
                                 str(p.pid), "--", "sleep", str(SECS)]) if PERF else None
        lens, t_end = [], time.time() + SECS
        while time.time() < t_end:
            lens.append(ctl(sock, "status", build)["status"]["last_tick_us"])
            time.sleep(0.02)
        if perf:
            perf.wait()
        st = ctl(sock, "status", build)["status"]
        return statistics.median(lens), st["table_bytes"], st["history_bytes"], st["tasks"]
    finally:
        guest.stop(p)
        if os.path.exists(sock):
            os.unlink(sock)


def main():
    ks = guest.kernels()
    rows = []
    for n in SIZES:
        with guest.Guest(guest.main_kernel(ks), mem_mb=768 + n * 120 // 1024, kaslr=True, name="wc") as g:
            g.check("echo 4194304 > /proc/sys/kernel/pid_max; echo 1000000 > /proc/sys/kernel/threads-max")
            have = int(g.check("read a b c d e < /proc/loadavg; echo ${d#*/}").strip())
            if n > have:
                g.check("sentinel-spawn %d 1 --churn 0 > /tmp/s.out 2>&1 &" % (n - have))
                g.check("i=0; until grep -q ready /tmp/s.out; do sleep 1; i=$((i+1)); [ $i -lt 900 ] || exit 1; done",
                        timeout=960)
            time.sleep(2)
            g.hmp("stop")                                   # the same memory for every run
            builds = [(BUILD, "")] + ([(os.path.abspath(BASELINE), " (baseline)")] if BASELINE else [])
            med, mem = {}, {}
            with tempfile.TemporaryDirectory(prefix="sentinel-wc-") as tmp:
                for r in range(ROUNDS):
                    for bd, tag in builds:
                        for kind in KINDS:
                            label = "".join(c for c in (kind + tag).replace(" ", "-") if c not in "()")
                            m, tb, hb, tasks = run(tmp, g.ram, n, kind, bd, label, r + 1)
                            med.setdefault((tag, kind), []).append(m)
                            mem[(tag, kind)] = (tb, hb)
                            print("%6d tasks  round %d  %-9s%s  tick median %7.0f us  tables %.1f MiB (histories "
                                  "%.1f MiB)" % (tasks, r + 1, kind, tag, m, tb / 2**20, hb / 2**20), flush=True)
            for _, tag in builds:
                rows.append(("%d%s" % (tasks, tag), {k: statistics.median(med[(tag, k)]) for k in KINDS},
                             {k: mem[(tag, k)] for k in KINDS}))
    print("\n| tasks | " + " | ".join("tick, %s | tables, %s" % (k, k) for k in KINDS) +
          (" | the window's cost |" if {"window", "no window"} <= set(KINDS) else " |"))
    print("|---|" + "---|---|" * len(KINDS) + ("---|" if {"window", "no window"} <= set(KINDS) else ""))
    for label, ticks, mems in rows:
        cells = ["%.2f ms | %.1f MiB (histories %.1f)" % (ticks[k] / 1e3, mems[k][0] / 2**20, mems[k][1] / 2**20)
                 for k in KINDS]
        cost = ""
        if {"window", "no window"} <= set(KINDS):
            cost = " %+.1f%% |" % (100 * (ticks["window"] - ticks["no window"]) / ticks["no window"])
        print("| %s | %s |%s" % (label, " | ".join(cells), cost))


if __name__ == "__main__":
    main()
