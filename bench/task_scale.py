#!/usr/bin/env python3
"""Tick time against the number of tasks: the shipped rules on the GPU and
on the CPU backend, in the same run, against one guest per size.

    python3 bench/task_scale.py BUILD-DIR BACKENDS [N,N,...] [SECONDS] [CHURN]

BACKENDS is cpu, cuda or cpu,cuda.  For each N (default 60,5000,50000): a
Debian 6.12 guest (QEMU) with memory for N processes, `sentinel-spawn`
filling it to N tasks with CHURN (default 20) replaced a second; then, per
backend, sentineld with rules/ at a 10 ms tick and a task table for N,
sampled every 20 ms for SECONDS (default 10) through `sentinelctl status`
(the CPU backend with [engine] threads = $BENCH_THREADS, default auto;
with BENCH_THREADS_PER_PROC=T the N tasks are N/T processes of T threads
each, on 16 KiB stacks: the PID tree holds every thread, the rows only
the processes, as /proc lists them; BENCH_RULES=DIR[,DIR...] runs other
rule sets against the same guests, e.g. rules and bench/gen_rules.sh's
10,000, with BENCH_START_S for their compile; BENCH_READ_BUDGET=B[,B...]
runs each [engine] read_budget in turn, e.g. none,auto; the name
`pertask` is rules/ with HungTask made per task, one alert per hung task
capped at 100, to compare with rules/'s any(); `pertask-busy` adds a
per-task rule that holds for most tasks, every state taken and the
overflow raised; BENCH_THREADS may list several, e.g. 1,4,8, each run in
turn; BENCH_BASELINE=DIR runs DIR's sentineld and sentinelctl (an older
build) against the same guests after this build's, for a before and after
in one run):
the tick's length (median, p99, longest sampled), late ticks of all ticks,
and on the GPU the median and longest time of each phase of the tick.
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
BACKENDS = sys.argv[2].split(",") if len(sys.argv) > 2 else ["cpu"]
SIZES = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "60,5000,50000").split(",")]
SECS = float(sys.argv[4]) if len(sys.argv) > 4 else 10
CHURN = float(sys.argv[5]) if len(sys.argv) > 5 else 20
RULES = os.environ.get("BENCH_RULES", os.path.join(TOP, "rules")).split(",")
THREADS = os.environ.get("BENCH_THREADS", "auto").split(",")
BASELINE = os.environ.get("BENCH_BASELINE")
# [engine] read_budget, each in turn against the same guest (none,auto: what counting the reads costs)
BUDGETS = os.environ.get("BENCH_READ_BUDGET", "auto").split(",")          # the CPU backend's [engine] threads
PER_PROC = int(os.environ.get("BENCH_THREADS_PER_PROC", "1"))   # N tasks as N / PER_PROC processes
START_S = float(os.environ.get("BENCH_START_S", "90"))     # to compile, load and tick (10,000 rules: minutes)


def ctl_of(sock, cmd, build=None):
    p = subprocess.run([os.path.join(build or BUILD, "sentinelctl"), "-s", sock, "--json", cmd],
                       capture_output=True, text=True, timeout=120)
    return json.loads(p.stdout) if p.stdout.startswith("{") else {"error": p.stderr}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def measure(tmp, ram, backend, n, rules, budget="auto", threads="auto", build=None):
    build = build or BUILD

    def ctl(sock, cmd):
        return ctl_of(sock, cmd, build)
    sock = os.path.join(tmp, "ctl-%s.sock" % backend)
    conf = os.path.join(tmp, "b-%s.conf" % backend)
    with open(conf, "w") as f:
        f.write("[target]\nsource = ramfile:%s\n[rules]\ndirectory = %s\n[engine]\nbackend = %s\ntick = 10ms\n"
                "tasks = %d\nthreads = %s\nread_budget = %s\n[notify]\nlog = no\n[control]\nsocket = %s\n" %
                (ram, rules, backend, n * 5 // 4 + 1024, threads, budget, sock))
    log = open(os.path.join(tmp, "d-%s.log" % backend), "w")
    p = subprocess.Popen([os.path.join(build, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + START_S
        while time.time() < deadline and p.poll() is None:
            st = ctl(sock, "status") if os.path.exists(sock) else {}
            if st.get("status", {}).get("ticks", 0) > 10:
                break
            time.sleep(0.2)
        if p.poll() is not None or time.time() >= deadline:
            log.flush()
            with open(os.path.join(tmp, "d-%s.log" % backend)) as f:
                raise RuntimeError("sentineld (%s) did not tick within %.0f s (BENCH_START_S):\n%s" %
                                   (backend, START_S, f.read()[-2000:]))
        time.sleep(2)                                        # settle: every task has its slot
        s0 = ctl(sock, "status")["status"]
        lens, phases, t_end = [], {}, time.time() + SECS
        while time.time() < t_end:
            st = ctl(sock, "status")["status"]
            lens.append(st["last_tick_us"])
            for k, v in st.get("tick_phases_us", {}).items():   # the GPU's own phase times
                phases.setdefault(k, []).append(v)
            sj = st.get("slowest_job")
            if sj:
                phases.setdefault("slowest job (%s)" % sj["job"], []).append(sj["us"])
            sr = st.get("slowest_rule")
            if sr:
                phases.setdefault("slowest rule (%s, %d warps a rule over tasks)" % (sr["rule"], sr.get("parts", 1)),
                                  []).append(sr["us"])
            time.sleep(0.02)
        s1 = ctl(sock, "status")["status"]
        # the per-entity rules' alerts at the end (100 states and an overflow: 101)
        per = {r["name"]: r["alerts"] for r in ctl(sock, "rules").get("rules", []) if "alerts" in r}
        return {"alerts": ", ".join("%s %d" % kv for kv in sorted(per.items()) if kv[1]),"median": pct(lens, 0.5), "p99": pct(lens, 0.99), "max": max(lens), "ticks": s1["ticks"] - s0["ticks"],
                "late": s1["late_ticks"] - s0["late_ticks"], "errors": s1.get("read_errors", 0) - s0.get("read_errors", 0),
                "note": s1.get("backend", ""), "reads": s1.get("reads_per_tick", 0),
                "max_reads": s1.get("max_reads_per_tick", 0), "over_budget": s1.get("ticks_over_budget", 0),
                "budget": s1.get("read_budget"),
                "phases": ", ".join("%s %.0f/%.0f" % (k, pct(v, 0.5), max(v)) for k, v in phases.items())}
    finally:
        guest.stop(p)


def pertask(tmp):
    """rules/ with HungTask one alert per hung task (at most 100)."""
    d = os.path.join(tmp, "pertask")
    shutil.copytree(os.path.join(TOP, "rules"), d)
    p = os.path.join(d, "processes.yaml")
    with open(p) as f:
        text = f.read()
    old = 'expr: any(task.state == "D" and delta(task.ctx_switches[1m]) == 0)'
    assert old in text
    text = text.replace(old, 'expr: task.state == "D" and delta(task.ctx_switches[1m]) == 0\n        max_alerts: 100')
    with open(p, "w") as f:
        f.write(text)
    return d


def pertask_busy(tmp):
    """rules/ with a per-task rule that holds for every sleeping task that
    did not run within the minute (most of the spawned ones) from its
    second tick on (windows: partial): every state taken, the overflow
    alert raised, every task looked up each tick: the per-task rule's worst
    case, beside `pertask`'s idle one."""
    d = os.path.join(tmp, "pertask-busy")
    shutil.copytree(os.path.join(TOP, "rules"), d)
    with open(os.path.join(d, "busy.yaml"), "w") as f:
        f.write("""groups:
  - name: busy
    rules:
      - alert: IdleTask
        expr: task.state == "S" and delta(task.ctx_switches[1m]) == 0
        windows: partial
        max_alerts: 100
        severity: info
""")
    return d


def main():
    ks = guest.kernels()
    keep = tempfile.mkdtemp(prefix="sentinel-tsb-rules-")
    global RULES
    named = {"pertask": pertask, "pertask-busy": pertask_busy}
    RULES = [named[r](keep) if r in named else r for r in RULES]
    rows = []
    for n in SIZES:
        with guest.Guest(guest.main_kernel(ks), mem_mb=768 + n * 120 // 1024, kaslr=True, name="tsb") as g:
            g.check("echo 4194304 > /proc/sys/kernel/pid_max; echo 1000000 > /proc/sys/kernel/threads-max")
            have = int(g.check("read a b c d e < /proc/loadavg; echo ${d#*/}").strip())   # threads, all
            if n > have:
                t0 = time.time()
                g.check("sentinel-spawn %d %d --churn %g > /tmp/s.out 2>&1 &" %
                        (max(1, (n - have) // PER_PROC), PER_PROC, CHURN))
                g.check("i=0; until grep -q ready /tmp/s.out; do sleep 1; i=$((i+1)); [ $i -lt 900 ] || exit 1; done",
                        timeout=960)
                print("%d tasks: started in %.0f s" % (n, time.time() - t0), flush=True)
            tasks = len(g.check("sentinel-spawn --ps", timeout=300).splitlines())
            label = "%d" % tasks
            if PER_PROC > 1:
                threads = int(g.check("read a b c d e < /proc/loadavg; echo ${d#*/}").strip())
                print("%d threads in %d processes (the rows)" % (threads, tasks), flush=True)
                label = "%d threads in %d processes" % (threads, tasks)
            tmp = tempfile.mkdtemp(prefix="sentinel-tsb-")
            try:
                builds = [(BUILD, "")] + ([(BASELINE, " (baseline)")] if BASELINE else [])
                for rules, b, bud, th, (bd, tag) in [(r, b, u, t, x) for r in RULES for u in BUDGETS for b in BACKENDS
                                                     for t in (THREADS if b == "cpu" else ["auto"]) for x in builds]:
                    r = measure(tmp, g.ram, b, tasks, rules, bud, th, bd)
                    if len(RULES) > 1:
                        print("rules: %s" % rules, flush=True)
                    what = label if len(RULES) == 1 else "%s, %s" % (label, os.path.basename(rules.rstrip("/")))
                    if len(BUDGETS) > 1:
                        what += ", read_budget %s" % bud
                    bl = b + (", %s threads" % th if b == "cpu" and len(THREADS) > 1 else "") + tag
                    rows.append((what, bl, r))
                    print("%6d tasks  %-4s  tick median %7.0f us  p99 %7.0f us  longest %7.0f us  late %d of %d  "
                          "read errors %d" % (tasks, bl, r["median"], r["p99"], r["max"], r["late"], r["ticks"],
                                              r["errors"]), flush=True)
                    print("        reads a tick %d, the most %d; read budget %s, %d ticks cut off" %
                          (r["reads"], r["max_reads"], r["budget"], r["over_budget"]), flush=True)
                    if r["alerts"]:
                        print("        per-entity alerts at the end: %s" % r["alerts"], flush=True)
                    if r["phases"]:
                        print("        phases (median/longest us): %s" % r["phases"], flush=True)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    print("\n| tasks | backend | tick median | p99 | longest | late ticks at 10 ms |")
    print("|---|---|---|---|---|---|")
    for label, b, r in rows:
        print("| %s | %s | %.2f ms | %.2f ms | %.2f ms | %d of %d |" %
              (label, b, r["median"] / 1e3, r["p99"] / 1e3, r["max"] / 1e3, r["late"], r["ticks"]))


if __name__ == "__main__":
    sys.exit(main())
