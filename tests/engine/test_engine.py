#!/usr/bin/env python3
"""sentineld against a live guest: the engine's scenarios, end to end.

    python3 tests/engine/test_engine.py BUILD-DIR [cpu|cuda]

With the shipped rules (a copy, so reloads can change it) and a 100 ms tick,
against a Debian 6.12 guest under QEMU:

  idle      a full minute of an idle guest raises nothing, not even pending
  hog       two busy loops (one per vCPU): CpuOverload fires within its
            window, its `for` and two ticks of the hog starting (plus the
            guest's own slack under TCG), and resolves once they stop
  reload    a reload that changes a threshold takes effect at once; the
            handover's first tick is the last old tick plus one, one tick
            later; an alert that was firing stays firing (no second event)
  broken    a reload with a broken rule file changes nothing and prints the
            errors as rulec --check does; so does SIGHUP
  dead      (CUDA) the persistent kernel ends by itself (SENTINEL_TEST_FAULTS):
            a target error in status, then a restart, and it ticks again
  stall     (CPU) the tick thread held before its tick (SENTINEL_TEST_FAULTS):
            after 10 s and 50 ticks without a heartbeat it is a target
            error; released, the target comes back
  undo      handovers made to fail (SENTINEL_TEST_FAULTS): on CUDA just
            after the old kernel stopped (it is launched again), by a
            real fault of the new kernel, and never taken (the timeout);
            on the CPU a new tick thread that does not start, and never
            taken; new rules that fault in the reload's trial run (a
            child process, on either backend): each time the reload says
            so, the old rules tick on, and the next reload works
  target    killing the guest (QEMU killed, its RAM file removed) is a
            target error in the log and in `status`; sentineld keeps running
            and stops cleanly
  windows   on a guest of its own, rules with 30 s, 90 s and 2 min windows
            over host, CPU and task metrics fire once their window is
            covered and not before; a task put in state D (the
            sentinel-dstate helper) fires the shipped HungTask two minutes
            later (1 min window + 1 min `for`), which names it: pid, comm;
            a CPU hog in the middle fires CpuOverload.  On the CPU backend
            sentineld records the run ([engine] record) and rulec test
            --replay of the recording gives the same events at the same ticks

SENTINEL_TEST_SOURCE=pmem runs every scenario with the guest's RAM as the
pmem source maps /dev/sentinel_pmem: the RAM file standing in for the
device, the guest's own /proc/iomem System RAM as its ranges, each range
mapped at its physical address and, on the GPU, registered in 64 MiB
pieces ([engine] gpu_register_chunk).

Before any guest: bad configurations, an unreachable target, a missing or
foreign bundle, broken rules and (without a GPU) backend = cuda each get a
clear message and a non-zero exit, never a crash.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "guest"))
import guest  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, "build"))
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "cpu"
SENTINELD = os.path.join(BUILD, "sentineld")
INSPECT = os.path.join(BUILD, "sentinel-inspect")
SENTINELCTL = os.path.join(BUILD, "sentinelctl") if os.path.exists(os.path.join(BUILD, "sentinelctl")) \
    else os.path.join(TOP, "build", "sentinelctl")
RES = guest.Results()
TICK = 0.1
SOURCE = os.environ.get("SENTINEL_TEST_SOURCE", "ramfile")


def source(g):
    """The guest's RAM as sentineld is to read it (SENTINEL_TEST_SOURCE)."""
    if SOURCE != "pmem":
        return "ramfile:" + g.ram
    io = g.check("grep 'System RAM' /proc/iomem")
    return "pmem:%s,ranges=%s" % (g.ram, "+".join(l.split(" :")[0].strip() for l in io.splitlines()))


def report(ok, name, detail=""):
    print("%s engine/%s: %s" % ("PASS" if ok else "FAIL", BACKEND, name), flush=True)
    if not ok:
        for line in str(detail).splitlines()[:30]:
            print("     " + line)
    RES.add("pass" if ok else "fail")


def conf(tmp, source, extra="", rules=None, backend=None, engine="", notify=""):
    # the fallback poll is 10 s (default 250 ms): alerts must arrive because
    # the engine wakes sentineld (the GPU's doorbell, the CPU thread's
    # eventfd), or the timed checks below fail
    path = os.path.join(tmp, "sentinel.conf")
    with open(path, "w") as f:
        f.write("[target]\nsource = %s\nname = testvm\n[rules]\n%s\n[engine]\nbackend = %s\ntick = 100ms\n%s"
                "[notify]\nlog_pending = yes\njsonl = %s\ndelay = 10s\n%s[control]\nsocket = %s\n%s" %
                (source, rules or "directory = %s" % os.path.join(tmp, "rules"), backend or BACKEND, engine,
                 os.path.join(tmp, "alerts.jsonl"), notify, os.path.join(tmp, "ctl.sock"), extra))
    return path


def ctl(tmp, *args):
    try:
        p = subprocess.run([SENTINELCTL, "-s", os.path.join(tmp, "ctl.sock")] + list(args), capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return 124, "", "sentinelctl %s: no answer within 120 s" % " ".join(args)
    return p.returncode, p.stdout, p.stderr


def status(tmp):
    rc, out, err = ctl(tmp, "--json", "status")
    return json.loads(out)["status"] if rc == 0 else {}


def events(tmp):
    path = os.path.join(tmp, "alerts.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def clean_exit(rc):
    """Whether exit status rc is the program's own exit, not a crash.
    subprocess gives a death by signal N as -N; through a shell it would be
    128+N (134 SIGABRT, as ASan's abort_on_error ends, 139 SIGSEGV), which
    no program here exits with.  (A sanitizer's report with its default
    exit code, 1, leaves "Sanitizer" on stderr: the callers look for it.)"""
    return rc is not None and 0 <= rc < 128


def startup_failures(tmp):
    """Each bad start: one clear message, a non-zero exit, no crash."""
    def run(conf_path, want_rc, pattern, what):
        p = subprocess.run([SENTINELD, "-c", conf_path, "--check-config"], capture_output=True, text=True, timeout=120)
        ok = p.returncode == want_rc and pattern in p.stderr and clean_exit(p.returncode) and "Sanitizer" not in p.stderr
        report(ok, "%s: exit %d with '%s'" % (what, want_rc, pattern), "exit %d\n%s" % (p.returncode, p.stderr))

    bad = os.path.join(tmp, "bad.conf")
    with open(bad, "w") as f:
        f.write("[target]\nsourc = ramfile:/x\n[engine]\ntick = fast\n[notfy]\nlog = yes\n")
    run(bad, 2, "bad.conf:2: error: unknown key 'sourc'", "a bad configuration names each error's line")
    with open(bad, "w") as f:
        f.write("[target]\nsource = ramfile:/x\n[engine]\ntasks = 8192\nmax_tasks = 4096\n")
    run(bad, 2, "max_tasks (4096) is below tasks (8192)", "a task table that would start above its ceiling")
    shipped = "directory = %s" % os.path.join(TOP, "rules")
    run(conf(tmp, "ramfile:/nonexistent/vm.ram", rules=shipped), 2, "/nonexistent/vm.ram", "an unreachable target")
    run(conf(tmp, "ramfile:/dev/null", rules="bundle = %s" % os.path.join(tmp, "missing.bundle")), 2,
        "missing.bundle", "a missing bundle")
    foreign = os.path.join(tmp, "foreign.bundle")
    with open(foreign, "wb") as f:
        f.write(b"\x7fELF" + b"\0" * 60)
    run(conf(tmp, "ramfile:/dev/null", rules="bundle = %s" % foreign), 2, "not a Sentinel bundle",
        "a foreign file as the bundle")
    broken = os.path.join(tmp, "broken-rules")
    os.makedirs(broken, exist_ok=True)
    with open(os.path.join(broken, "x.yaml"), "w") as f:
        f.write("groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: host.mem_fre < 5%\n        severity: info\n")
    run(conf(tmp, "ramfile:/dev/null", rules="directory = %s" % broken), 1, "x.yaml:5:15: error",
        "broken rules: rulec's diagnostics")
    # the checker's warnings about the tick are said, at the configured tick
    warn = os.path.join(tmp, "warn-rules")
    os.makedirs(warn, exist_ok=True)
    with open(os.path.join(warn, "w.yaml"), "w") as f:
        f.write("groups:\n  - name: w\n    rules:\n      - alert: W\n        expr: host.mem_free < 1MiB\n"
                "        for: 50ms\n        severity: info\n")
    for tick, want in (("100ms", True), ("10ms", False)):
        path = os.path.join(tmp, "warn.conf")
        with open(path, "w") as f:
            f.write("[target]\nsource = ramfile:/dev/null\n[rules]\ndirectory = %s\n[engine]\nbackend = cpu\n"
                    "tick = %s\n" % (warn, tick))
        p = subprocess.run([SENTINELD, "-c", path, "--check-config"], capture_output=True, text=True, timeout=120)
        line = "w.yaml:6:14: warning: for: 50ms is shorter than one tick (%s)" % tick in p.stderr
        said = "[for-below-tick]" in p.stderr
        report(clean_exit(p.returncode) and "Sanitizer" not in p.stderr and said == want and line == want,
               "a rule's for: 50ms at a %s tick: %s" % (tick, "the checker's warning, with its line" if want else
                                                       "no warning"), "exit %d\n%s" % (p.returncode, p.stderr))
    if not os.path.exists("/dev/nvidiactl"):
        run(conf(tmp, "ramfile:/dev/null", rules=shipped, backend="cuda"), 2, "not a memory image",
            "a source that is no memory image")
        vm = os.path.join(tmp, "vm.ram")
        with open(vm, "wb") as f:
            f.truncate(1 << 20)
        run(conf(tmp, "ramfile:" + vm, rules=shipped, backend="cuda"), 2, "no Linux kernel found",
            "an empty RAM file")


class Daemon:
    def __init__(self, tmp, src, engine="", notify="", extra="", env=None):
        self.tmp = tmp
        self.log = open(os.path.join(tmp, "sentineld.log"), "w+")
        if callable(env):                # env(log file): the environment, made for this stderr
            env = env(self.log)
        if src.startswith("pmem:"):
            engine += "gpu_register_chunk = 64MiB\n"
        self.p = subprocess.Popen([SENTINELD, "-c", conf(tmp, src, engine=engine, notify=notify,
                                                         extra=extra)],
                                  stdout=self.log,
                                  stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        sock = os.path.join(tmp, "ctl.sock")
        # under a journal, "started:" goes there: the control socket says it
        while time.time() < deadline and "started:" not in self.text() and not (env and os.path.exists(sock)):
            if self.p.poll() is not None:
                break
            time.sleep(0.1)

    def text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


free_port = guest.free_port


def quiet_loop(tmp, d, when):
    """sentineld's main loop sleeps between events: its wakeups over 2 s."""
    s0 = status(tmp).get("main_loop", {})
    time.sleep(2.0)
    s1 = status(tmp).get("main_loop", {})
    dw = s1.get("wakeups", 0) - s0.get("wakeups", 0)
    report(dw <= 20 and d.p.poll() is None, "the main loop sleeps %s (%d wakeups in 2 s)" % (when, dw),
           "before %s\nafter %s" % (s0, s1))


def wait(cond, timeout, step=0.2):
    """cond()'s first true value within timeout seconds, or None."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return None


def inspect_json(ram):
    p = subprocess.run([INSPECT, "-s", "ramfile:" + ram, "metrics", "--json"],
                       capture_output=True, text=True, timeout=120)
    return json.loads(p.stdout.splitlines()[-1]) if p.returncode == 0 else None


def parse_exposition(text):
    """{(name, frozenset(labels)): value} of a text exposition (no HELP/TYPE)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if not m:
            out[("unparsed", line)] = None
            continue
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def scrape_check(ram, port, d, promtool=True):
    """/metrics: a Prometheus parser takes it; its values are the engine's."""
    url = "http://127.0.0.1:%d" % port
    try:
        before = inspect_json(ram)
        time.sleep(0.3)                  # the engine ticks (100 ms) after `before`
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            ctype, text = r.headers.get("Content-Type", ""), r.read().decode()
        time.sleep(0.3)
        after = inspect_json(ram)
    except OSError as e:
        report(False, "/metrics: scrape", "%s\n%s" % (e, d.text()[-2000:]))
        return
    if before is None or after is None:
        report(False, "/metrics: sentinel-inspect metrics --json failed beside the scrape")
        return None
    if promtool and shutil.which("promtool"):
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        report(p.returncode == 0 and ctype.startswith("text/plain; version=0.0.4"),
               "/metrics: promtool check metrics accepts the scrape (%d lines, %s)" % (len(text.splitlines()), ctype),
               p.stdout + p.stderr + text[:1500])
    s = parse_exposition(text)

    def host(name, prom):
        return s.get((prom, frozenset({("target", "testvm")})))
    # every host series the scrape has, back to its catalog name:
    # sentinel_host_cpu_busy_time_seconds_total -> host.cpu_busy_time
    steady = {"host.mem_total", "host.swap_total", "host.cpus", "host.tainted", "host.panicked", "host.oopsed",
              "host.warned"}
    bad, compared = [], []
    for (prom, labels), v in s.items():
        if not prom.startswith("sentinel_host_"):
            continue
        counter = prom.endswith("_total")
        base = re.sub(r"(_seconds|_bytes)?(_total)?$", "", prom[len("sentinel_"):])
        name = base.replace("_", ".", 1)
        a, b = before["host"].get(name), after["host"].get(name)
        if a is None or b is None or v is None:
            bad.append("%s (%s): scrape %r, inspect %r .. %r" % (prom, name, v, a, b))
            continue
        if counter:
            ok = a <= v <= b
        elif name in steady:
            ok = a == v == b
        else:
            continue                     # a gauge that moves: only that it is there
        compared.append(name)
        if not ok:
            bad.append("%s: scrape %r, inspect %r .. %r" % (prom, v, a, b))
    pids = {dict(l)["pid"] for (k, l) in s if k == "sentinel_task_state"}
    ins = {str(int(t["task.pid"])) for t in before["tasks"]} & {str(int(t["task.pid"])) for t in after["tasks"]}
    report(not bad and len(compared) >= 3 and (not pids or ins <= pids),
           "/metrics: values match sentinel-inspect metrics before and after (%s; %d tasks%s)" %
           (", ".join(sorted(compared)), len(pids), ", every task both inspections saw among them" if pids else ""),
           "\n".join(bad) + "\nmissing tasks %s" % sorted(ins - pids))
    fired = s.get(("sentinel_ticks_total", frozenset({("target", "testvm")})))
    report(fired and fired > 0 and host("", "sentinel_up") == 1,
           "/metrics: sentineld's own: sentinel_up 1, %s ticks" % fired, text[-1500:])
    # the target's kernel release, as node_uname_info gives it (a fleet's versions compared in Prometheus)
    info = subprocess.run([INSPECT, "-s", "ramfile:" + ram, "info"], capture_output=True, text=True, timeout=120)
    rel = next((l.split("Linux", 1)[1].strip() for l in info.stdout.splitlines() if l.startswith("kernel:")), None)
    kinfo = [(dict(l), v) for (k, l), v in s.items() if k == "sentinel_target_info"]
    report(rel and kinfo == [({"target": "testvm", "kernel": rel}, 1)],
           "/metrics: sentinel_target_info names the target's kernel (%s)" % rel, repr(kinfo))
    try:
        urllib.request.urlopen(url + "/nope", timeout=5)
        code = 200
    except urllib.error.HTTPError as e:
        code = e.code
    report(code == 404, "/metrics: an unknown path is 404 (%d)" % code)
    return s


def wait_event(tmp, alert, state, since, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        evs = [e for e in events(tmp)[since:] if e["alert"] == alert and e["state"] == state]
        if evs:
            return evs[0]
        time.sleep(0.05)
    return None


def test_rules(threads):
    """TestThreads changes threshold on reload; TestHogs stays as it is.  TestHogs
    counts runnable tasks, which a busy host cannot take away from the guest: the
    CPU backend's reload competes with QEMU for the host's CPUs, and a starved
    guest is less than 80% busy by the GPU's clock, which rightly resolves
    CpuOverload (seen in CI with 2 vCPUs: 72% during a 7 s reload)."""
    return ("groups:\n  - name: test\n    rules:\n"
            "      - alert: TestThreads\n        expr: host.threads > %d\n        severity: info\n"
            "      - alert: TestHogs\n        expr: host.procs_running >= 4\n        for: 1s\n"
            "        severity: info\n" % threads)


def with_guest(tmp):
    ks = guest.kernels()
    rules = os.path.join(tmp, "rules")
    shutil.copytree(os.path.join(TOP, "rules"), rules)
    with open(os.path.join(rules, "test.yaml"), "w") as f:
        f.write(test_rules(100000))
    g = guest.Guest(guest.main_kernel(ks), kaslr=True, name="eng")
    g.start()
    d = None
    try:
        if not os.path.exists("/dev/nvidiactl"):
            p = subprocess.run([SENTINELD, "-c", conf(tmp, "ramfile:" + g.ram, backend="cuda"), "--check-config"],
                               capture_output=True, text=True, timeout=120)
            report(p.returncode == 2 and "no NVIDIA driver" in p.stderr and "backend = cpu" in p.stderr,
                   "backend = cuda on a machine without a GPU: exit 2, says why and what to do",
                   "exit %d\n%s" % (p.returncode, p.stderr))
            p = subprocess.run([SENTINELD, "-c", conf(tmp, "ramfile:" + g.ram, backend="auto"), "--check-config"],
                               capture_output=True, text=True, timeout=120)
            report(p.returncode == 0 and "auto chose it because no NVIDIA driver" in p.stdout,
                   "backend = auto says which backend it chose and why", p.stdout + p.stderr)
        mport = free_port()
        fault = os.path.join(tmp, "faults")    # SENTINEL_TEST_FAULTS: engine/gpu.c's test hook
        d = Daemon(tmp, source(g), extra="[metrics]\nlisten = 127.0.0.1:%d\n" % mport,
                   env=dict(os.environ, SENTINEL_TEST_FAULTS=fault))
        st = status(tmp)
        report(d.p.poll() is None and st.get("backend") == BACKEND and st.get("target", {}).get("state") == "ok",
               "sentineld starts against the guest (%s, Linux %s, %s rules)" %
               (st.get("backend_note"), st.get("target", {}).get("kernel"), st.get("rules")), d.text())
        if d.p.poll() is not None:
            return
        if BACKEND == "cuda":                  # the GPU times its tick's phases and jobs
            sj = st.get("slowest_job", {})
            report(set(st.get("tick_phases_us", {})) >= {"jobs", "task_fields", "rules"} and
                   bool(sj.get("job")) and 0 <= sj.get("us", -1) < 10000,
                   "status times the GPU's tick: its phases, and its slowest job (%s, %s us)" %
                   (sj.get("job"), sj.get("us")), json.dumps(st))
        # ---- a full idle minute -------------------------------------------------------
        n0 = len(events(tmp))
        idle_s = float(os.environ.get("SENTINEL_IDLE_S", "60"))
        time.sleep(idle_s)
        idle = events(tmp)[n0:]
        st = status(tmp)
        report(not idle, "an idle guest raises nothing for %.0f s (%d ticks, %d late)" %
               (idle_s, st.get("ticks", 0), st.get("late_ticks", 0)), "\n".join(json.dumps(e) for e in idle[:10]))
        # every shipped rule, on a healthy guest: nothing unreadable (a metric
        # that does not apply, md on a plain disk, a bond's on an interface
        # that is not one, is unknown, not a read error)
        report(st.get("read_errors") == 0 and st.get("ticks", 0) > 0,
               "a healthy guest under every shipped rule: no read errors in %d ticks (%s)" %
               (st.get("ticks", 0), st.get("read_errors")), json.dumps(st)[:2000])
        scrape_check(g.ram, mport, d)
        quiet_loop(tmp, d, "after a scrape")
        # ---- a CPU hog --------------------------------------------------------------------
        n0 = len(events(tmp))
        # two busy loops per vCPU: one each can leave a CPU idle while the guest's
        # scheduler balances them (seen as 89-92% busy under TCG on a loaded host)
        g.check("hogs=; for i in 1 2 3 4; do (while :; do :; done) & hogs=\"$hogs $!\"; done")
        t0 = time.time()
        fired = wait_event(tmp, "CpuOverload", "firing", n0, 60)
        took = (time.time() - t0) if fired else None
        bound = 1.0 + 5.0 + 2 * TICK
        # the guest's own clock stalls under TCG (DESIGN.md): allow it 1.5 s
        report(fired is not None and 5.0 <= took <= bound + 1.5,
               "CpuOverload fires %.2f s after the hog starts (window 1 s + for 5 s + 2 ticks = %.1f s; value %s)" %
               (took or -1, bound, fired and fired.get("value")), "events: %s" % events(tmp)[n0:])
        # ---- reload: a threshold changes while CpuOverload fires -------------------------
        before = status(tmp)
        with open(os.path.join(rules, "test.yaml"), "w") as f:
            f.write(test_rules(10))
        n1 = len(events(tmp))
        rc, out, err = ctl(tmp, "reload")
        after = status(tmp)
        msg = out.strip()
        # "handover: old tick K, new tick K+1 D ms later (tick T ms)"
        ok_gap = False
        try:
            words = msg.split("handover: old tick ")[1].split()
            old_t, new_t, gap = int(words[0].rstrip(",")), int(words[3]), float(words[4])
            ok_gap = new_t == old_t + 1 and gap < 1.5 * TICK * 1000
        except (IndexError, ValueError):
            pass
        report(rc == 0 and ok_gap and after.get("reloads") == 1,
               "a reload hands over without a missed tick: %s" % msg,
               "rc %d\n%s%s\nsentineld's log:\n%s" % (rc, out, err, d.text()[-3000:]))
        # the main loop sleeps through the reload (it spun on a target check
        # the reload holds back: 250,000 wakeups a second)
        dw = after.get("main_loop", {}).get("wakeups", 0) - before.get("main_loop", {}).get("wakeups", 0)
        du = after.get("uptime_s", 0) - before.get("uptime_s", 0)
        report(du > 0 and dw <= 50 * du + 20,
               "the main loop sleeps during a reload (%d wakeups in %.1f s)" % (dw, du),
               "before %s\nafter %s" % (before.get("main_loop"), after.get("main_loop")))
        if BACKEND == "cuda":
            # the old context costs a driver thread: it goes in a pause between two ticks
            report("old CUDA context released" in msg and msg.endswith(", 0 late)"),
                   "the old engine's CUDA context is released and no tick is late: %s" % msg.split("; ")[-1], msg)
        threads = wait_event(tmp, "TestThreads", "firing", n1, 5)
        report(threads is not None, "the changed threshold takes effect (TestThreads fires, value %s)" %
               (threads and threads.get("value")), events(tmp)[n1:])
        # /metrics after the reload: the new engine's tables, its alerts
        s2 = scrape_check(g.ram, mport, d, promtool=False)
        report(s2 and s2.get(("sentinel_reloads_total", frozenset({("target", "testvm")}))) == 1 and
               any(k == "sentinel_alerts" and ("alertname", "TestThreads") in l and ("alertstate", "firing") in l
                   for (k, l) in s2),
               "/metrics after the reload: sentinel_reloads_total 1, TestThreads firing in sentinel_alerts",
               repr(sorted(k for k in s2 if k[0] in ("sentinel_alerts", "sentinel_reloads_total"))) if s2 else "")
        rc, out, err = ctl(tmp, "--json", "alerts")
        active = {a["name"]: a["state"] for a in json.loads(out)["alerts"]} if rc == 0 else {}
        again = [e for e in events(tmp)[n1:] if e["alert"] == "TestHogs"]
        report(active.get("TestHogs") == "firing" and not again,
               "an unchanged rule keeps its state across the reload (TestHogs still firing, no new event)",
               "alerts %s; TestHogs events since the reload: %s" % (active, again))
        # ---- the hog stops: resolved --------------------------------------------------
        n2 = len(events(tmp))
        g.check("kill $hogs; wait $hogs 2>/dev/null; true")
        resolved = wait_event(tmp, "TestHogs", "resolved", n2, 30)
        deadline = time.time() + 30
        while time.time() < deadline:
            rc, out, err = ctl(tmp, "--json", "alerts")
            active = {a["name"]: a["state"] for a in json.loads(out)["alerts"]} if rc == 0 else {}
            if rc == 0 and "CpuOverload" not in active:
                break
            time.sleep(0.2)
        report(resolved is not None and rc == 0 and "CpuOverload" not in active,
               "CpuOverload and TestHogs resolve after the hog stops (active alerts: %s)" % sorted(active),
               "alerts %s; events %s" % (active, events(tmp)[n2:]))
        st = status(tmp)
        want = "gpu doorbell" if BACKEND == "cuda" else "tick thread"
        report(st.get("alerts_wake") == want,
               "the engine wakes sentineld for alerts (%s), the %s poll is only a fallback" %
               (st.get("alerts_wake"), "10 s"), json.dumps(st))
        # the reload compiles on a thread of its own: status answers meanwhile (an
        # unchanged rule set, after the hog: the polling must not starve the guest)
        rp = subprocess.Popen([SENTINELCTL, "-s", os.path.join(tmp, "ctl.sock"), "reload"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        seen, slow = [], 0.0
        while rp.poll() is None:
            t = time.time()
            st = status(tmp)
            slow = max(slow, time.time() - t)
            if "reload_running_s" in st:
                seen.append(st)
            time.sleep(0.05)
        rp.communicate(timeout=120)
        report(rp.returncode == 0 and len(seen) >= 2 and slow < 1.0 and seen[-1]["ticks"] > seen[0]["ticks"],
               "sentineld answers during a reload (%d status answers, the slowest in %.0f ms; ticks %s..%s)" %
               (len(seen), slow * 1000, seen and seen[0]["ticks"], seen and seen[-1]["ticks"]),
               "statuses during the reload: %s" % seen[:3])
        # ---- clients that do not read, or leave ---------------------------------------------
        # one sends status requests and never reads the answers: once its socket
        # is full, sentineld queues them (the loop must not block on it)
        sock = os.path.join(tmp, "ctl.sock")
        hog = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        hog.connect(sock)
        hog.setblocking(False)
        sent = 0
        req = b'{"cmd":"status"}\n' * 64
        t_end = time.time() + 3
        while time.time() < t_end and sent < 4000 * len(req):
            try:
                sent += hog.send(req)
            except BlockingIOError:
                time.sleep(0.01)
        time.sleep(0.5)
        k0 = status(tmp).get("ticks", 0)
        t = time.time()
        st = status(tmp)
        slow = time.time() - t
        time.sleep(1.0)
        k1 = status(tmp).get("ticks", 0)
        report(st.get("ticks") and slow < 1.0 and k1 >= k0 + 5 and d.p.poll() is None,
               "a client that sends %d KiB of requests and reads no answer stalls nothing (status in %.0f ms, "
               "%d ticks in 1 s)" % (sent // 1024, slow * 1000, k1 - k0), d.text()[-1500:])
        hog.close()
        # one asks for a reload and leaves before the answer
        gone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        gone.connect(sock)
        gone.sendall(b'{"cmd":"reload"}\n')
        gone.close()
        r0 = status(tmp).get("reloads", 0)
        done = wait(lambda: status(tmp).get("reloads", 0) > r0, 120)
        rc, out, err = ctl(tmp, "reload")
        report(done and rc == 0 and status(tmp).get("reloads", 0) == r0 + 2 and "reload (control socket)" in d.text(),
               "a client that asks for a reload and leaves: the reload completes, and the next one is answered "
               "(%s)" % out.strip()[:100], "rc %d\n%s%s\n%s" % (rc, out, err, d.text()[-1500:]))
        quiet_loop(tmp, d, "after clients that do not read or leave")
        # ---- a broken reload changes nothing ------------------------------------------------
        with open(os.path.join(rules, "broken.yaml"), "w") as f:
            f.write("groups:\n  - name: broken\n    rules:\n      - alert: Broken\n        expr: cpu.busy_tme > 5\n"
                    "        severity: info\n")
        before = status(tmp)
        rc, out, err = ctl(tmp, "reload")
        time.sleep(0.5)
        after = status(tmp)
        report(rc == 1 and "broken.yaml:5:15: error" in err and "did you mean" in err and
               after.get("reloads") == before.get("reloads") and after.get("rules") == before.get("rules") and
               after.get("ticks", 0) > before.get("ticks", 0),
               "a reload with a broken file prints the errors, exits 1 and changes nothing",
               "rc %d\nstdout %s\nstderr %s\nbefore %s\nafter %s" % (rc, out, err, before, after))
        d.p.send_signal(signal.SIGHUP)
        time.sleep(1.5)
        report(d.p.poll() is None and "reload (SIGHUP)" in d.text() and "broken.yaml:5:15" in d.text() and
               status(tmp).get("reloads") == before.get("reloads"),
               "SIGHUP: the same, in the log", d.text()[-2000:])
        os.unlink(os.path.join(rules, "broken.yaml"))
        # ---- a reload whose compile runs out of memory: the reload fails, not the daemon ------
        # (at the 1st, 10th, 50th and 200th allocation of the front end: each
        # part way through different work; ASan's leak check at sentineld's
        # exit sees whatever an abandoned compile did not give back)
        for at in (1, 10, 50, 200):
            with open(fault, "w") as f:
                f.write("reload-oom %d\n" % at)
            before = status(tmp)
            rc, out, err = ctl(tmp, "reload")
            os.unlink(fault)
            time.sleep(0.3)
            after = status(tmp)
            said = (out + err).strip()
            report(rc != 0 and "out of memory checking the rules; nothing changed" in said and d.p.poll() is None and
                   after.get("reloads") == before.get("reloads") and after.get("rules") == before.get("rules") and
                   after.get("ticks", 0) > before.get("ticks", 0) and after.get("target", {}).get("state") == "ok",
                   "a reload that runs out of memory at its allocation %d fails, and the daemon and its rules run "
                   "on (%s)" % (at, said[-100:]),
                   "rc %d\n%s\nbefore %s\nafter %s\n%s" % (rc, said, before, after, d.text()[-2000:]))
        rc, out, err = ctl(tmp, "reload")
        report(rc == 0 and status(tmp).get("reloads") == before.get("reloads", 0) + 1,
               "with memory again, the next reload works (%s)" % out.strip()[:100], "rc %d\n%s%s" % (rc, out, err))
        quiet_loop(tmp, d, "after broken and out-of-memory reloads")
        # ---- handovers that fail (SENTINEL_TEST_FAULTS): the old rules run on ---------------
        # handover: CUDA fails it just after the old kernel stopped (which is
        #   launched again); CPU: the new tick thread does not start
        # handover-stuck: the old kernel / thread never takes it: the timeout (1 s)
        # (a real GPU fault is apart, below: CUDA makes it fatal to the process)
        # trial-kernel-fault: the reload's trial run (a child sentineld running
        #   the new rules for 3 ticks first) faults for real: on CUDA its kernel
        #   reads an address the GPU has not mapped (error 700, fatal to the
        #   child's CUDA only), on the CPU its tick reads one the host has not
        #   (SIGSEGV; under ASan the child reports it and exits 1); the reload
        #   fails and this process's rules run on
        cases = [("handover", ["the old rules run on (resumed after tick" if BACKEND == "cuda" else
                               "tick thread did not start (injected"]),
                 ("handover-stuck", ["did not complete within 1000 ms"]),
                 # (CUDA) the old kernel's resume after a failed handover fails too:
                 # the very next status says lost, never ok until the next check
                 ] + ([("handover-no-resume", ["the old rules could not be resumed"])] if BACKEND == "cuda" else []) + [
                 ("trial-kernel-fault", ["GPU kernel faulted in the trial run"] if BACKEND == "cuda" else
                  ["trial run of the new rules died of signal 11", "AddressSanitizer: SEGV"])]
        for word, want in cases:
            with open(fault, "w") as f:
                f.write(word + "\n")
            before = status(tmp)
            rc, out, err = ctl(tmp, "reload")
            os.unlink(fault)
            if word == "handover-no-resume":
                first = status(tmp)
                said = (out + err).strip()
                report(rc != 0 and any(w in said for w in want) and
                       first.get("target", {}).get("state") == "lost" and d.p.poll() is None,
                       "a handover whose undo cannot resume the old kernel: the next status says lost (%s)" %
                       first.get("target", {}).get("error"),
                       "rc %d\n%s\nfirst %s\n%s" % (rc, said, first, d.text()[-2000:]))
                back = wait(lambda: status(tmp).get("target", {}).get("state") == "ok", 30)
                report(back, "then the target is found again and its rules run", d.text()[-2000:])
                continue
            time.sleep(1.0)
            mid = status(tmp)
            time.sleep(1.0)
            after = status(tmp)
            said = (out + err).strip()
            report(rc != 0 and any(w in said for w in want) and
                   ("the old rules run on" in said or "the running rules are unchanged" in said) and
                   after.get("reloads") == before.get("reloads") and
                   after.get("ticks", 0) >= mid.get("ticks", 0) + 8 and
                   after.get("target", {}).get("state") == "ok" and d.p.poll() is None,
                   "a handover that fails (%s): the old rules tick on (%s; ticks %s -> %s in 1 s)" %
                   (word, said[-200:], mid.get("ticks"), after.get("ticks")),
                   "rc %d\n%s\nbefore %s\nafter %s\n%s" % (rc, said, before, after, d.text()[-2000:]))
            rc, out, err = ctl(tmp, "reload")
            st = status(tmp)
            report(rc == 0 and st.get("reloads") == before.get("reloads", 0) + 1 and
                   st.get("target", {}).get("state") == "ok" and
                   re.search(r"trial run first: 3 ticks in \d+ ms", out) is not None,
                   "after it (%s), the next reload's trial runs 3 ticks and it hands over (%s)" %
                   (word, out.strip()[-150:]), "rc %d\n%s%s" % (rc, out, err))
        quiet_loop(tmp, d, "after failed handovers")
        # ---- a persistent kernel that ends by itself (CUDA): loud, then restarted ----------
        if BACKEND == "cuda":
            r0 = status(tmp).get("target_restarts", 0)
            with open(fault, "w") as f:
                f.write("kernel-exit\n")
            lost = wait(lambda: (lambda t: t if t.get("state") == "lost" else None)(status(tmp).get("target", {})),
                        15)
            os.unlink(fault)
            back = wait(lambda: (lambda s: s if s.get("target", {}).get("state") == "ok" and
                                 s.get("target_restarts", 0) > r0 else None)(status(tmp)), 30)
            k0 = status(tmp).get("ticks", 0)
            time.sleep(1.0)
            k1 = status(tmp).get("ticks", 0)
            report(lost is not None and "stopped by itself" in lost.get("error", "") and back is not None and
                   k1 >= k0 + 5 and d.p.poll() is None,
                   "a persistent kernel that ends by itself is a target error (%s), then started again (%d ticks "
                   "in 1 s)" % ((lost or {}).get("error"), k1 - k0), "lost %s back %s\n%s" % (lost, back, d.text()[-2000:]))
        # ---- a tick thread that stops ticking (CPU; the GPU's heartbeat is read the same way) ---
        if BACKEND == "cpu":
            with open(fault, "w") as f:
                f.write("stall\n")
            t0 = time.time()
            lost = wait(lambda: (lambda t: t if t.get("state") == "lost" else None)(status(tmp).get("target", {})),
                        45)
            took = time.time() - t0
            os.unlink(fault)
            back = wait(lambda: status(tmp).get("target", {}).get("state") == "ok", 30)
            k0 = status(tmp).get("ticks", 0)
            time.sleep(1.0)
            k1 = status(tmp).get("ticks", 0)
            report(lost is not None and "has not ticked" in lost.get("error", "") and 14 <= took <= 25 and
                   back and k1 >= k0 + 5 and d.p.poll() is None,
                   "a tick thread that stops ticking is a target error after %.0f s (%s); once it ticks again "
                   "the target is back (%d ticks in 1 s)" % (took, (lost or {}).get("error"), k1 - k0),
                   "lost %s back %s\n%s" % (lost, back, d.text()[-2000:]))
        quiet_loop(tmp, d, "after a target error and its return")
        # ---- more cgroups than the object table's 256 slots ----------------------------------------
        cg = "/sys/fs/cgroup"
        g.check("mkdir -p %s; mount -t cgroup2 none %s 2>/dev/null; for i in $(seq 300); do mkdir -p %s/x$i; done"
                % (cg, cg, cg), timeout=120)
        # (sentineld checks the target once a second: the log follows the status)
        said = wait(lambda: "more than the 256 the table holds" in d.text() and "raise [engine] objects" in d.text(), 20)
        full = wait(lambda: (lambda o: o if o.get("error") == -34 and o.get("found", 0) >= 300 else None)(
            status(tmp).get("objects", {}).get("cgroups", {})), 20)
        ctl_out = ctl(tmp, "status")[1]
        report(full is not None and full.get("found", 0) >= 300 and full.get("table") == 256 and said and
               "FULL" in ctl_out,
               "more cgroups than [engine] objects is a target error, said once and shown by status (%s)" % full,
               "%s\n%s\n%s" % (full, ctl_out, d.text()[-2000:]))
        g.check("for i in $(seq 300); do rmdir %s/x$i; done" % cg, timeout=120)
        back = wait(lambda: "error" not in status(tmp).get("objects", {}).get("cgroups", {"error": 1}) and
                    "again: the table holds them all" in d.text(), 20)
        report(back and d.text().count("raise [engine] objects") == 1,
               "once they are gone, the table holds them all again, and it says so", d.text()[-2000:])
        # ---- a real GPU fault (CUDA): the process must start again ------------------------------
        # A kernel's fault is sticky for the whole process in CUDA (measured: the
        # old kernel of the reload failed with the new one's error 700, and no
        # context could be made after). A second sentineld, on the same guest,
        # reloads with handover-kernel-fault (the trial run passes; then the new
        # kernel of the handover itself reads an address the GPU has not
        # mapped): it must say why and exit 3 for its service manager
        # to start it again; the first one, another process, must tick on.
        if BACKEND == "cuda":
            tmp2 = os.path.join(tmp, "second")
            os.makedirs(tmp2)
            shutil.copytree(rules, os.path.join(tmp2, "rules"))
            fault2 = os.path.join(tmp2, "faults")
            d2 = Daemon(tmp2, source(g), env=dict(os.environ, SENTINEL_TEST_FAULTS=fault2))
            up = d2.p.poll() is None and status(tmp2).get("target", {}).get("state") == "ok"
            with open(fault2, "w") as f:
                f.write("handover-kernel-fault\n")
            k0 = status(tmp).get("ticks", 0)
            rc, out, err = ctl(tmp2, "reload")
            try:
                code = d2.p.wait(30)
            except subprocess.TimeoutExpired:
                code = None
            said = (out + err).strip()
            time.sleep(1.0)
            k1 = status(tmp).get("ticks", 0)
            report(up and rc != 0 and "CUDA error 700" in said and "must start again" in said and code == 3 and
                   "starts sentineld again" in d2.text() and k1 >= k0 + 10 and d.p.poll() is None,
                   "a real GPU fault (the new kernel of a reload reads an unmapped address): the reload says so, "
                   "sentineld exits %s to be started again, and another sentineld on the GPU ticks on (%d ticks)"
                   % (code, k1 - k0), "rc %d\n%s\n%s" % (rc, said, d2.text()[-2500:]))
            d2.stop()
        # ---- the guest dies --------------------------------------------------------------------
        g.proc.kill()
        g.proc.wait()
        os.unlink(g.ram)            # as a VM manager removes the RAM file of a stopped VM
        deadline = time.time() + 10
        while time.time() < deadline and status(tmp).get("target", {}).get("state") != "lost":
            time.sleep(0.2)
        st = status(tmp)
        report(d.p.poll() is None and st.get("target", {}).get("state") == "lost" and "target error" in d.text(),
               "killing the guest is a target error, not a crash: %s" % st.get("target", {}).get("error"),
               "%s\n%s" % (st, d.text()[-2000:]))
        rc = d.stop()
        # (the trial run's child faults on purpose above: its report is in a reload's answer)
        report(rc == 0 and not [l for l in d.text().splitlines() if "Sanitizer" in l and "trial run" not in l],
               "sentineld stops cleanly on SIGTERM (exit %s)" % rc,
               d.text()[-3000:])
    finally:
        if d:
            d.stop()
        g.stop()


WINDOW_RULES = """groups:
  - name: windows
    rules:
      - alert: Win30sHost
        expr: delta(host.jiffies[30s]) > 0
        severity: info
      - alert: Win90sCpu
        expr: all(delta(cpu.ctx_switches[90s]) > 0)
        severity: info
        annotations:
          summary: "slowest CPU {{ $labels.cpu }}"
      - alert: Win2mTask
        expr: any(delta(task.ctx_switches[2m]) > 0 where task.pid == 1)
        severity: info
        annotations:
          summary: "{{ $labels.comm }} pid {{ $labels.pid }}"
"""


def windows(tmp):
    """Long windows become known when covered, never before; HungTask names its task."""
    ks = guest.kernels()
    rules = os.path.join(tmp, "rules")
    os.makedirs(rules, exist_ok=True)
    shutil.copy(os.path.join(TOP, "rules", "processes.yaml"), rules)
    shutil.copy(os.path.join(TOP, "rules", "paper.yaml"), rules)
    with open(os.path.join(rules, "windows.yaml"), "w") as f:
        f.write(WINDOW_RULES)
    g = guest.Guest(guest.main_kernel(ks), kaslr=True, name="win")
    g.start()
    d = None
    try:
        # the CPU backend records what its rules see, for the replay below
        recording = os.path.join(tmp, "incident.rec")
        d = Daemon(tmp, source(g), engine="record = %s\n" % recording if BACKEND == "cpu" else "")
        t_start = time.time()
        if d.p.poll() is not None:
            report(False, "windows: sentineld starts", d.text())
            return
        # the helper prints its PID, then sleeps in D until killed; it starts
        # between t_d and t_d2
        t_d = time.time()
        out = g.check("sentinel-dstate hung-writer > /tmp/dstate.pid & sleep 1; cat /tmp/dstate.pid")
        t_d2 = time.time()
        hung_pid = out.strip().splitlines()[-1] if out.strip() else "?"
        state = g.check("cat /proc/%s/stat" % hung_pid)
        report(") D " in state, "windows: sentinel-dstate puts pid %s in state D (%s)" %
               (hung_pid, state.split(")")[-1].split()[0] if ")" in state else state), state)
        # (rule, its window, when its clock starts: not before, not after)
        want = [("Win30sHost", 30.0, t_start, t_start), ("Win90sCpu", 90.0, t_start, t_start),
                ("Win2mTask", 120.0, t_start, t_start), ("HungTask", 120.0, t_d, t_d2)]
        deadline = t_d + 150
        fired = {}
        hog = None
        while time.time() < deadline and not all(name in fired for name, _, _, _ in want):
            for e in events(tmp):
                if e["state"] == "firing" and e["alert"] not in fired:
                    fired[e["alert"]] = (time.time(), e)
            # an incident in the middle: a CPU hog for 12 s (CpuOverload fires, resolves)
            if hog is None and time.time() > t_start + 40:
                g.check("hogs=; for i in 1 2 3 4; do (while :; do :; done) & hogs=\"$hogs $!\"; done")
                hog = time.time()
            elif hog and hog > 0 and time.time() > hog + 12:
                g.check("kill $hogs; wait $hogs 2>/dev/null; true")
                hog = -1
            time.sleep(0.1)
        # a window of w is covered w after the history starts, within its
        # slack: delta() alone reads these metrics, so their histories keep
        # the ends only, each w / 18 apart, and a window is known once it
        # covers w less half of that (0.8 s at 30 s, 3.3 s at 2 min);
        # sentineld's start and the log's polling add a little, a loaded
        # host's TCG guest more
        for name, w, t0, t1 in want:
            got = fired.get(name)
            took = got[0] - t0 if got else None
            ok = got is not None and w - w / 36 - 1.5 <= took and got[0] - t1 <= w + 6
            labels = got[1].get("labels", {}) if got else {}
            ann = got[1].get("annotations", {}).get("summary", "") if got else ""
            if name == "HungTask":
                ok = ok and labels.get("pid") == hung_pid and labels.get("comm") == "hung-writer" and \
                    ("hung-writer (pid %s)" % hung_pid) in ann
            if name == "Win2mTask":
                ok = ok and labels.get("pid") == "1" and ann == "%s pid 1" % labels.get("comm")
            if name == "Win90sCpu":
                ok = ok and labels.get("cpu") in ("0", "1")
            report(ok, "windows: %s fires %s after its window of %.0f s could be covered (labels %s)" %
                   (name, "%.1f s" % took if took is not None else "never", w, labels),
                   "fired: %s\nevents: %s\nlog: %s" % (fired, events(tmp)[-10:], d.text()[-2000:]))
        g.check("kill -9 %s; true" % hung_pid)
        if BACKEND == "cpu":
            d.stop()
            replay(tmp, recording, rules)
    finally:
        if d:
            d.stop()
        g.stop()


def replay(tmp, recording, rules):
    """The recording of the incident, replayed through the same rules by
    rulec test --replay, gives the events sentineld gave live, at the same ticks."""
    live = [(e["alert"], e["state"], e["tick"], e.get("pid")) for e in events(tmp)]
    rulec = os.path.join(BUILD, "rulec")
    p = subprocess.run([rulec, "test", "--replay", recording, rules], capture_output=True, text=True, timeout=300)
    got = []
    for line in p.stdout.splitlines():
        # tick N  +S.SSSs  STATE  ALERT  value V [pid=P comm=C]
        w = line.split()
        if len(w) >= 5 and w[0] == "tick":
            pid = next((int(x[4:]) for x in w if x.startswith("pid=")), None)
            got.append((w[4], w[3], int(w[1]), pid))
    kinds = sorted(set((a, s) for a, s, _, _ in live))
    # the hog's incident is in the recording: CpuOverload went pending (on a
    # loaded host the TCG guest may hover at the 90% line and never hold
    # it 5 s; its firing has a scenario of its own, "CpuOverload fires")
    report(p.returncode == 0 and got == live and ("CpuOverload", "pending") in kinds and ("HungTask", "firing") in kinds,
           "replay: %s (%s) gives the %d events sentineld gave live, at the same ticks: %s" %
           (os.path.basename(recording), p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "?", len(live),
            ", ".join("%s %s" % k for k in kinds)),
           "rc %d\nlive %s\nreplay %s\nstderr %s" % (p.returncode, live, got, p.stderr[-2000:]))


def main():
    for f in (SENTINELD, SENTINELCTL):
        if not os.access(f, os.X_OK):
            report(False, "%s is not built" % f)
            return
    tmp = tempfile.mkdtemp(prefix="sentinel-engine-")
    # SENTINEL_ENGINE_PARTS: some of startup,guest,windows (default all;
    # a GPU run of the windows alone: SENTINEL_ENGINE_PARTS=windows)
    parts = os.environ.get("SENTINEL_ENGINE_PARTS", "startup,guest,windows").split(",")
    try:
        if "startup" in parts:
            RES.expect(8)             # 10 where there is no GPU (backend = cuda refused)
            startup_failures(tmp)
        if os.environ.get("SENTINEL_SKIP_GUEST") == "1":
            return
        if "guest" in parts:
            RES.expect(40)            # 47 on the CPU backend, 48 on CUDA (promtool: one more)
            try:
                with_guest(tmp)
            except guest.GuestError as e:
                report(False, "guest", e)
        if os.environ.get("SENTINEL_SKIP_WINDOWS") != "1" and "windows" in parts:
            RES.expect(5)             # 6 on the CPU backend (the replay)
            wtmp = os.path.join(tmp, "windows")
            os.makedirs(wtmp)
            try:
                windows(wtmp)
            except guest.GuestError as e:
                report(False, "windows: guest", e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(RES.end())
