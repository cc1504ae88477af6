#!/usr/bin/env python3
"""sentineld's own costs: GPU (or CPU) tick time and host CPU use with 10,
1,000 and 10,000 rules, and reload time; side by side, in the same run,
with a 10 Hz /proc poller (bench/procpoll).

    python3 bench/engine.py BUILD-DIR BACKEND [N,N,...] [SECONDS]

Against a Debian 6.12 guest (QEMU, TCG).  For each rule count: sentineld at
a 100 ms tick for SECONDS (host CPU use from its threads' schedstat, ns
precision; the poller's over the same window), then the same rules at a
10 ms tick (late ticks, longest tick); after each, a reload that changes
one rule (at 100 ms, then SECONDS more of CPU use: a reloaded daemon's).
10,000 rules reload at 10 ms only (each reload compiles for minutes).
Prints a table; results go in docs/benchmarks.md by hand.
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
BACKEND = sys.argv[2]
COUNTS = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "10,1000,10000").split(",")]
SECS = float(sys.argv[4]) if len(sys.argv) > 4 else 30


def threads_ns(pid):
    """{tid: (name, run time in ns, wakeups)} for every thread of pid."""
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                w = f.read().split()
            with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                out[t] = (f.read().strip(), int(w[0]), int(w[2]))
        except OSError:
            pass
    return out


def cpu_ns(pid):
    """Run time of every thread of pid, in ns."""
    return sum(x[1] for x in threads_ns(pid).values())


def per_thread(a, b, secs):
    """Each thread's share of one core between two threads_ns samples, busiest first."""
    rows = [(name, (ns - a.get(t, (name, 0, 0))[1]) / secs / 1e7, (k - a.get(t, (name, 0, 0))[2]) / secs)
            for t, (name, ns, k) in b.items()]
    return ", ".join("%s %.3f%% (%.0f runs/s)" % r for r in sorted(rows, key=lambda r: -r[1]) if r[1] > 0.0005) or "none"


def ctl(sock, cmd):
    p = subprocess.run([os.path.join(BUILD, "sentinelctl"), "-s", sock, "--json", cmd], capture_output=True,
                       text=True, timeout=600)
    return json.loads(p.stdout) if p.stdout.startswith("{") else {"error": p.stderr}


def run(tmp, ram, rules, tick, secs, poller, env=None):
    sock = os.path.join(tmp, "ctl.sock")
    conf = os.path.join(tmp, "b.conf")
    with open(conf, "w") as f:
        f.write("[target]\nsource = ramfile:%s\n[rules]\ndirectory = %s\n[engine]\nbackend = %s\ntick = %s\n"
                "tasks = 1024\n[notify]\nlog = no\n[control]\nsocket = %s\n" % (ram, rules, BACKEND, tick, sock))
    log = open(os.path.join(tmp, "d.log"), "w")
    t_start = time.time()
    p = subprocess.Popen([os.path.join(BUILD, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT,
                         env=dict(os.environ, **(env or {})))
    while not os.path.exists(sock) and p.poll() is None:
        time.sleep(0.05)
    startup = time.time() - t_start
    res = measure(p, sock, tick, secs, poller)
    res["startup_s"] = startup
    return p, sock, res


def measure(p, sock, tick, secs, poller):
    """sentineld's and the poller's CPU, ticks and late ticks over secs."""
    time.sleep(3)                        # settle
    s0, h0, q0, t0 = ctl(sock, "status")["status"], threads_ns(p.pid), cpu_ns(poller.pid), time.time()
    time.sleep(secs)
    s1, h1, q1, t1 = ctl(sock, "status")["status"], threads_ns(p.pid), cpu_ns(poller.pid), time.time()
    c0, c1 = sum(x[1] for x in h0.values()), sum(x[1] for x in h1.values())
    print("  threads (%s): %s" % (tick, per_thread(h0, h1, t1 - t0)), flush=True)
    return {"cpu_pct": (c1 - c0) / (t1 - t0) / 1e7, "poll_pct": (q1 - q0) / (t1 - t0) / 1e7,
            "ticks": s1["ticks"] - s0["ticks"], "late": s1["late_ticks"] - s0["late_ticks"],
            "last_tick_us": s1["last_tick_us"], "max_tick_us": s1["max_tick_us"],
            "expected": (t1 - t0) / float(tick[:-2]) * 1000}


def change_one_rule(rules):
    with open(os.path.join(rules, "gen.yaml")) as f:
        text = f.read()
    with open(os.path.join(rules, "gen.yaml"), "w") as f:
        f.write(text.replace("alert: Rule0\n", "alert: Rule0x\n", 1) if "alert: Rule0\n" in text
                else text.replace("alert: Rule0x\n", "alert: Rule0\n", 1))


def link_ms(logpath):
    """The driver's JIT (cuLink) time from sentineld's SENTINEL_GPU_TRACE lines."""
    t = {}
    with open(logpath) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[0] == "gpu-trace" and " ".join(w[2:]) in ("link: create", "link: complete"):
                t.setdefault(" ".join(w[2:]), float(w[1]))
    return (t["link: complete"] - t["link: create"]) * 1000 if len(t) == 2 else -1


def jit_levels(tmp, ram, rules, levels, poller):
    """BENCH_JIT=4,1,0: JIT time and tick time of the same rules at each ptxas -O level."""
    for lv in levels:
        p, sock, r = run(tmp, ram, rules, "100ms", 5, poller,
                         {"SENTINEL_GPU_JIT_O": lv, "SENTINEL_GPU_TRACE": "1"})
        p.terminate()
        p.wait(60)
        print("jit -O%s: link %.0f ms, start %.1f s, tick %.0f us (max %.0f us)" %
              (lv, link_ms(os.path.join(tmp, "d.log")), r["startup_s"], r["last_tick_us"], r["max_tick_us"]),
              flush=True)


def main():
    ks = guest.kernels()
    poller = subprocess.Popen([os.path.join(BUILD, "procpoll"), "10"])
    rows = []
    try:
        with guest.Guest(guest.main_kernel(ks), kaslr=True, name="bench") as g:
            for n in COUNTS:
                tmp = tempfile.mkdtemp(prefix="sentinel-bench-")
                rules = os.path.join(tmp, "rules")
                os.makedirs(rules)
                subprocess.run(["sh", os.path.join(TOP, "bench", "gen_rules.sh"), str(n), tmp], check=True,
                               stdout=subprocess.DEVNULL)
                shutil.move(os.path.join(tmp, "sentinel.yaml"), os.path.join(rules, "gen.yaml"))
                if os.environ.get("BENCH_JIT") and BACKEND == "cuda":
                    jit_levels(tmp, g.ram, rules, os.environ["BENCH_JIT"].split(","), poller)
                    if os.environ.get("BENCH_JIT_ONLY"):
                        continue
                for tick in ("100ms", "10ms"):
                    p, sock, r = run(tmp, g.ram, rules, tick, SECS if tick == "100ms" else SECS / 2, poller)
                    # what was measured, before a reload that may take long
                    print("  %s rules at %s: %d/%d ticks, %d late, tick %.0f us (longest %.0f us), CPU %.3f%%" %
                          (n, tick, r["ticks"], round(r["expected"]), r["late"], r["last_tick_us"],
                           r["max_tick_us"], r["cpu_pct"]), flush=True)
                    rel, after = "", "-"
                    if tick == "10ms" or n <= 10000:
                        change_one_rule(rules)
                        t = time.time()
                        rr = ctl(sock, "reload")
                        rel = "%.2f s" % (time.time() - t) if rr.get("ok") else "failed: %s" % rr
                        print("reload:", rr.get("message", rr), flush=True)
                        if tick == "100ms" and rr.get("ok"):
                            # a long-running daemon has been reloaded: its cost then
                            a = measure(p, sock, tick, SECS, poller)
                            after = "%.3f%%" % a["cpu_pct"]
                            print("  after the reload: CPU %.3f%% (poller %.3f%%), %d late" %
                                  (a["cpu_pct"], a["poll_pct"], a["late"]), flush=True)
                    p.terminate()
                    p.wait(60)
                    rows.append((n, tick, "%.1f s" % r["startup_s"], "%d/%d" % (r["ticks"], round(r["expected"])),
                                 r["late"], "%.0f" % r["last_tick_us"], "%.0f" % r["max_tick_us"],
                                 "%.3f%%" % r["cpu_pct"], after, "%.3f%%" % r["poll_pct"], rel))
                    print(rows[-1], flush=True)
                shutil.rmtree(tmp, ignore_errors=True)
    finally:
        poller.kill()
    hdr = ("rules", "tick", "start", "ticks/expected", "late", "tick us", "max tick us", "sentineld CPU",
           "after reload", "10 Hz poller CPU", "reload")
    w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
    print()
    for r in [hdr] + rows:
        print("  ".join(str(x).ljust(w[i]) for i, x in enumerate(r)))


if __name__ == "__main__":
    main()
