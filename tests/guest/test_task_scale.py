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
on the CPU or the GPU; on the CPU the second round on 4 threads), /proc
again.  Each time:
  - the tick found its tasks through the PID tree;
  - every PID in both /proc listings is in the tick's set (nothing lost);
  - every PID in the tick's set is in one of the listings or was started
    by the churn (no phantom);
  - for those in both listings, the name agrees with /proc, and the
    state of the sleeping processes (others run now and then).
At the first size, a table too small for the guest: the tick says so (a
walk error, the rows that fit); sentineld grows its table to hold them
all, and at the table's ceiling ([engine] max_tasks) logs it once as a
target error and shows it in `sentinelctl status`.
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

INSPECT = os.path.abspath(sys.argv[1])
BUNDLE = os.path.abspath(sys.argv[2])
BACKEND = sys.argv[3] if len(sys.argv) > 3 else "cpu"
SIZES = [int(x) for x in (sys.argv[4] if len(sys.argv) > 4 else "5000,50000").split(",")]
TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RES = guest.Results()


def report(ok, what, detail=""):
    print("%s task-scale/%s: %s" % ("PASS" if ok else "FAIL", BACKEND, what), flush=True)
    if not ok and detail:
        print("     " + str(detail)[:1500].replace("\n", "\n     "), flush=True)
    RES.add("pass" if ok else "fail")


def listing(g):
    """{pid: (state, comm)} from the guest's /proc."""
    out = {}
    for line in g.check("sentinel-spawn --ps", timeout=600).splitlines():
        f = line.split(" ", 2)
        if len(f) == 3 and f[0].isdigit():
            out[int(f[0])] = (f[1], f[2])
    return out


def tick(g, n, threads=1):
    p = subprocess.run([INSPECT, "-s", "ramfile:" + g.ram, "metrics", "--json", "--bundle", BUNDLE,
                        "--backend", BACKEND, "--tasks", str(n + n // 4 + 1024), "--threads", str(threads)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise guest.GuestError("sentinel-inspect metrics: %s" % p.stderr.strip()[-800:])
    return json.loads(p.stdout.splitlines()[-1])


def tool(name):
    """sentineld or sentinelctl next to INSPECT (the device's bin/), else in its parent (build/)."""
    for d in (os.path.dirname(INSPECT), os.path.dirname(os.path.dirname(INSPECT))):
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return None


def full_table(g, name):
    """A task table of 1,024 against thousands of tasks."""
    p = subprocess.run([INSPECT, "-s", "ramfile:" + g.ram, "metrics", "--json", "--bundle", BUNDLE,
                        "--backend", BACKEND, "--tasks", "1024"], capture_output=True, text=True, timeout=600)
    m = json.loads(p.stdout.splitlines()[-1]) if p.stdout.strip() else {}
    report(m.get("task_walk_error") == -34 and len(m.get("tasks", [])) == 1024,
           "%s: a table of 1,024 is a walk error (%s) and holds 1,024 rows (%d)" %
           (name, m.get("task_walk_error"), len(m.get("tasks", []))), p.stderr[-800:])
    sentineld, ctl = tool("sentineld"), tool("sentinelctl")
    if not sentineld or not ctl:
        report(False, "%s: sentineld and sentinelctl next to %s" % (name, INSPECT))
        return

    def daemon(engine, done):
        """sentineld with rules/ and [engine] engine until done(status, log) or
        4 minutes: (status JSON, status text, log)."""
        tmp = tempfile.mkdtemp(prefix="sentinel-ts-")
        try:
            sock, conf, log = (os.path.join(tmp, x) for x in ("ctl.sock", "d.conf", "d.log"))
            with open(conf, "w") as f:
                f.write("[target]\nsource = ramfile:%s\n[rules]\ndirectory = %s\n[engine]\nbackend = %s\n"
                        "tick = 100ms\n%s\n[notify]\nlog = no\n[control]\nsocket = %s\n" %
                        (g.ram, os.path.join(TOP, "rules"), BACKEND, engine, sock))
            with open(log, "w") as lf:
                d = subprocess.Popen([sentineld, "-c", conf], stdout=lf, stderr=subprocess.STDOUT)
            st = {}
            deadline = time.time() + 240
            while time.time() < deadline and d.poll() is None:
                time.sleep(0.5)
                if os.path.exists(sock):
                    r = subprocess.run([ctl, "-s", sock, "--json", "status"], capture_output=True, text=True,
                                       timeout=60)
                    st = json.loads(r.stdout).get("status", {}) if r.stdout.startswith("{") else {}
                    if st.get("ticks", 0) > 20 and done(st, open(log).read()):
                        break
            text = subprocess.run([ctl, "-s", sock, "status"], capture_output=True, text=True, timeout=60).stdout
            d.terminate()
            d.wait(60)
            return st, text, open(log).read()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # at the ceiling: a target error, said once, and shown in status
    st, text, log = daemon("tasks = 1024\nmax_tasks = 1024", lambda st, log: "target error" in log)
    said = [l for l in log.splitlines() if "more than the task table" in l]
    report(len(said) == 1 and "raise [engine] max_tasks" in said[0] and st.get("tasks_found", 0) > 1024 and
           st.get("tasks") == 1024 and "FULL" in text,
           "%s: sentineld with a table of 1,024 at max_tasks says so once in its log and in status "
           "(%s of %s found)" % (name, st.get("tasks"), st.get("tasks_found")), "\n".join(said) + "\n" + text)
    # below it: the table grows between two ticks, no tick lost, all tasks held
    st, text, log = daemon("tasks = 1024", lambda st, log: "task table grew" in log and
                           st.get("tasks", 0) >= st.get("tasks_found", 1 << 30))
    grew = [l for l in log.splitlines() if "task table grew" in l]
    report(len(grew) == 1 and "target error" not in log and st.get("tasks", 0) >= st.get("tasks_found", 1 << 30) >
           1024 and "FULL" not in text and st.get("late_ticks", 0) == 0,
           "%s: sentineld with a table of 1,024 grows it to hold all %s tasks (%s rows), in one handover, "
           "no tick late" % (name, st.get("tasks_found"), st.get("tasks")), log[-1500:] + "\n" + text)


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
        print("task-scale/%s: %s: %d processes started, the churn running (%.0f s)" %
              (BACKEND, name, n, time.time() - t0), flush=True)
        if n == SIZES[0]:
            full_table(g, name)
        for rnd in range(3):
            # the CPU backend: round 1 on 4 threads (the GPU's phases as host steps)
            threads = 4 if BACKEND == "cpu" and rnd == 1 else 1
            before = listing(g)
            m = tick(g, n, threads)
            after = listing(g)
            born = {int(l[1:]) for l in g.check("cat /tmp/churn.log", timeout=120).split() if l.startswith("+")}
            ours = {int(t["task.pid"]): t for t in m["tasks"] if t.get("task.pid") is not None}
            stable = set(before) & set(after)
            lost = sorted(stable - set(ours))
            phantom = sorted(set(ours) - set(before) - set(after) - born)
            report(m.get("task_source") == "pid tree" and not m.get("task_walk_error"),
                   "%s, round %d: the tick found %d tasks through the PID tree (highest PID %d%s)" %
                   (name, rnd, len(ours), max(ours) if ours else -1,
                    ", %d threads" % threads if threads > 1 else ""),
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
        RES.expect(12)            # three rounds of four (15 at the first size: its full table's three)
        for attempt in range(2):
            # a second boot's checks replace the first's
            with RES.attempt():
                try:
                    scale(guest.main_kernel(ks), n)
                    break
                except guest.GuestError as e:
                    crashed = guest.crashed_on_its_own(e)
                    if crashed and attempt == 0:
                        sys.stderr.write("task-scale: the %d-task guest's kernel crashed on its own (an emulator "
                                         "flake; Sentinel only reads its RAM); booting it again:\n%s\n" %
                                         (n, str(e)[-1500:]))
                        RES.drop()
                        continue
                    report(False, "%d tasks: guest" % n, e)
                    break


if __name__ == "__main__":
    main()
    sys.exit(RES.end())
