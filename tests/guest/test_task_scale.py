#!/usr/bin/env python3
"""The task set a tick sees, at real-host scale, while tasks come and go.

    python3 tests/guest/test_task_scale.py INSPECT BUNDLE [cpu|cuda] [N,N,...]

For each N (default 5000,50000): a Debian 6.12 guest with memory for N
processes, kernel.pid_max raised and the PID counter moved past 262,144 for
half of them (so the PID tree is four levels deep and sparse, as on a
long-running host), `sentinel-spawn N --churn 20` (a process killed and
another started 20 times a second, every PID logged).  Then, three times:
the guest's /proc (PID, state, name), one tick of the compiled metric
bundle (`sentinel-inspect metrics --json`: the detector's own collection,
on the CPU or the GPU), /proc again.  Each time:
  - the tick found its tasks through the PID tree;
  - every PID in both /proc listings is in the tick's set (nothing lost);
  - every PID in the tick's set is in one of the listings or was started
    by the churn (no phantom);
  - for those in both listings, the name agrees with /proc, and the
    state of the sleeping processes (others run now and then).
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest  # noqa: E402

INSPECT = os.path.abspath(sys.argv[1])
BUNDLE = os.path.abspath(sys.argv[2])
BACKEND = sys.argv[3] if len(sys.argv) > 3 else "cpu"
SIZES = [int(x) for x in (sys.argv[4] if len(sys.argv) > 4 else "5000,50000").split(",")]
RESULTS = os.environ.get("RESULTS")
failures = 0


def report(ok, what, detail=""):
    global failures
    print("%s task-scale/%s: %s" % ("PASS" if ok else "FAIL", BACKEND, what), flush=True)
    if not ok:
        failures += 1
        if detail:
            print("     " + str(detail)[:1500].replace("\n", "\n     "), flush=True)
    if RESULTS:
        with open(RESULTS, "a") as f:
            f.write("pass\n" if ok else "fail\n")


def listing(g):
    """{pid: (state, comm)} from the guest's /proc."""
    out = {}
    for line in g.check("sentinel-spawn --ps", timeout=600).splitlines():
        f = line.split(" ", 2)
        if len(f) == 3 and f[0].isdigit():
            out[int(f[0])] = (f[1], f[2])
    return out


def tick(g, n):
    p = subprocess.run([INSPECT, "-s", "ramfile:" + g.ram, "metrics", "--json", "--bundle", BUNDLE,
                        "--backend", BACKEND, "--tasks", str(n + n // 4 + 1024)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise guest.GuestError("sentinel-inspect metrics: %s" % p.stderr.strip()[-800:])
    return json.loads(p.stdout.splitlines()[-1])


def scale(kdir, n):
    mem = 768 + n * 120 // 1024            # 100 KiB a process measured (36 of them page tables)
    name = "%d tasks" % n
    t0 = time.time()
    with guest.Guest(kdir, mem_mb=mem, kaslr=True, name="ts") as g:
        g.check("echo 4194304 > /proc/sys/kernel/pid_max; echo 1000000 > /proc/sys/kernel/threads-max")
        half = n // 2
        g.check("sentinel-spawn %d > /tmp/low.out 2>&1 &" % half)
        g.check("i=0; until grep -q ready /tmp/low.out; do sleep 1; i=$((i+1)); [ $i -lt 900 ] || exit 1; done",
                timeout=960)
        g.check("echo 300000 > /proc/sys/kernel/ns_last_pid")
        g.check("sentinel-spawn %d --churn 20 --log /tmp/churn.log > /tmp/high.out 2>&1 &" % (n - half))
        g.check("i=0; until grep -q ready /tmp/high.out; do sleep 1; i=$((i+1)); [ $i -lt 900 ] || exit 1; done",
                timeout=960)
        report(True, "%s: %d processes started, the churn running (%.0f s)" % (name, n, time.time() - t0))
        for rnd in range(3):
            before = listing(g)
            m = tick(g, n)
            after = listing(g)
            born = {int(l[1:]) for l in g.check("cat /tmp/churn.log", timeout=120).split() if l.startswith("+")}
            ours = {int(t["task.pid"]): t for t in m["tasks"] if t.get("task.pid") is not None}
            stable = set(before) & set(after)
            lost = sorted(stable - set(ours))
            phantom = sorted(set(ours) - set(before) - set(after) - born)
            report(m.get("task_source") == "pid tree" and not m.get("task_walk_error"),
                   "%s, round %d: the tick found %d tasks through the PID tree (highest PID %d)" %
                   (name, rnd, len(ours), max(ours) if ours else -1),
                   "source %r, walk error %r" % (m.get("task_source"), m.get("task_walk_error")))
            report(not lost, "%s, round %d: all %d tasks in /proc before and after are in the tick's set" %
                   (name, rnd, len(stable)), "lost: %s" % lost[:20])
            report(not phantom, "%s, round %d: no task the guest never had (%d listed, %d started by the churn)" %
                   (name, rnd, len(set(before) | set(after)), len(born)), "phantoms: %s" % phantom[:20])
            bad = []
            for pid in stable & set(ours):
                st, comm = before[pid]
                if after[pid] != (st, comm):
                    continue                  # changed between the looks: nothing to compare with
                t = ours[pid]
                got_st = t.get("task.state") or "?"
                # /proc shows a kernel thread's full name (6.x: and its
                # workqueue); the task has the first 15 bytes
                ours_comm = t.get("task.comm") or ""
                # the state of the sleepers that never wake (others run now and then)
                if not ours_comm or not comm.startswith(ours_comm) or (comm == "spawned" and got_st != st):
                    bad.append((pid, st, comm, got_st, t.get("task.comm")))
            report(not bad, "%s, round %d: names agree with /proc, and the sleepers' state" %
                   (name, rnd), "pid, /proc state, /proc name, ours: %s" % bad[:10])


def main():
    ks = guest.kernels()
    for n in SIZES:
        try:
            scale(ks["debian-6.12"], n)
        except guest.GuestError as e:
            report(False, "%d tasks: guest" % n, e)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
