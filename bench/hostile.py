#!/usr/bin/env python3
"""Ten healthy targets and one hostile one in one sentineld (issue 32).

    python3 bench/hostile.py BUILD-DIR [ROUNDS]

Targets, at a 100 ms tick, the shipped rules, Alertmanager on loopback
(Debian's prometheus-alertmanager; $ALERTMANAGER names another binary):
  L      a live Debian guest (QEMU, TCG): where the fault is made
  f1-f9  nine copies of a real guest's RAM image (build/fuzz-guest.ram),
         frozen: healthy targets that tick (their own alerts fire once)
  H      (the second run only) a tenth copy made hostile before start by
         build/hostile_image: a printk ring header claiming 2 GiB of text
         and 16 M descriptors, every module claiming 65,536 symbols and the
         module list looping; 5 s after the start its VMCOREINFO is
         destroyed and a fake 'OSRELEASE=' planted on every page, so it is
         lost and looked for again and again

Two runs: without H (the usual latency), then with it.  Each round starts
four busy loops in L (fault onset: the host's clock before the command
is sent to the guest's console, so the latency includes the console's
round trip: an upper bound) and measures until Alertmanager holds BenchFault for L (a rule
of the bench's own beside the shipped ones: host.procs_running >= 4, no
`for`, so the number is detection and delivery, not a window; CpuOverload
needs the guest's CPUs above 90%, which TCG on a loaded host does not
always give), polled every 50 ms, then stops them and waits for it to
resolve.
Meanwhile `sentinelctl status` is asked every 0.5 s (its slowest answer),
and the healthy targets' late ticks are counted over the run.
BENCH_BACKEND=cuda runs on the GPU.  Prints a table; results go in
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
sys.path.insert(0, os.path.join(TOP, "tests", "engine"))
import guest  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_engine import free_port, wait  # noqa: E402
from amlib import am_alerts, rfc3339, start_am  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, "build"))
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
BACKEND = os.environ.get("BENCH_BACKEND", "cpu")
IMAGE = os.environ.get("BENCH_IMAGE", os.path.join(TOP, "build", "fuzz-guest.ram"))
CTL = os.path.join(BUILD, "sentinelctl")
HEALTHY = ["L"] + ["f%d" % i for i in range(1, 10)]


def fault_alert(port, since):
    """BenchFault for L as Alertmanager holds it: started at or after since,
    not yet ended."""
    now = time.time()
    try:
        alerts = am_alerts(port)
    except OSError:                       # asked again at the next poll
        return []
    return [a for a in alerts if a["labels"].get("alertname") == "BenchFault" and
            a["labels"].get("target") == "L" and rfc3339(a["startsAt"]) >= since - 0.5 and rfc3339(a["endsAt"]) > now]


def status(tmp, timeout=10):
    t0 = time.monotonic()
    p = subprocess.run([CTL, "-s", os.path.join(tmp, "ctl.sock"), "--timeout", str(timeout), "--json", "status"],
                       capture_output=True, text=True)
    took = time.monotonic() - t0
    try:
        return json.loads(p.stdout)["status"], took
    except (ValueError, KeyError):
        return {}, took


def targets(st):
    return {t["name"]: t for t in st.get("targets", [])}


def run(tmp, g, am_port, hostile):
    names = HEALTHY + (["H"] if hostile else [])
    conf = os.path.join(tmp, "s.conf")
    with open(conf, "w") as f:
        f.write("[target L]\nsource = ramfile:%s\n" % g.ram)
        for n in names[1:]:
            f.write("[target %s]\nsource = ramfile:%s\n" % (n, os.path.join(tmp, n + ".ram")))
        f.write("[rules]\ndirectory = %s\n[engine]\nbackend = %s\ntick = 100ms\ntasks = 1024\nreload_trial = no\n"
                "[notify]\nlog = yes\njsonl = %s\nalertmanager = http://127.0.0.1:%d\n[control]\nsocket = %s\n" %
                (os.path.join(tmp, "rules"), BACKEND, os.path.join(tmp, "alerts.jsonl"), am_port,
                 os.path.join(tmp, "ctl.sock")))
    log = open(os.path.join(tmp, "d%d.log" % hostile), "w")
    t_start = time.monotonic()
    d = subprocess.Popen([os.path.join(BUILD, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    res = {"run": "with H" if hostile else "without H", "lat": []}
    try:
        up = wait(lambda: all(targets(status(tmp)[0]).get(n, {}).get("state") == "ok" for n in names), 600, 1)
        if not up:
            raise RuntimeError("not every target started: %s" % open(log.name).read()[-3000:])
        res["start_s"] = time.monotonic() - t_start
        if hostile:
            time.sleep(5)
            subprocess.run([os.path.join(BUILD, "hostile_image"), os.path.join(tmp, "H.ram"), "vmcoreinfo"], check=True)
        time.sleep(10)                              # the frozen copies' own alerts come and go
        st0 = targets(status(tmp)[0])
        slow = [0.0]
        stop = threading.Event()

        def ask():
            while not stop.is_set():
                slow[0] = max(slow[0], status(tmp)[1])
                time.sleep(0.5)
        th = threading.Thread(target=ask, daemon=True)
        th.start()
        for rnd in range(ROUNDS):
            onset = time.time()           # before the command is sent: an upper bound on the latency
            g.check("hogs=; for i in 1 2 3 4; do (while :; do :; done) & hogs=\"$hogs $!\"; done")
            got = wait(lambda: fault_alert(am_port, onset), 60, 0.05)
            res["lat"].append(time.time() - onset if got else None)
            g.check("kill $hogs; wait $hogs 2>/dev/null; true")
            # resolved: its endsAt (the resolve time) in the past
            wait(lambda: not fault_alert(am_port, onset), 60, 0.2)
            time.sleep(2)
        stop.set()
        th.join()
        st1, _ = status(tmp)
        t1 = targets(st1)
        # (a sentineld that does not answer: no numbers, said as such)
        res["late"] = sum(t1.get(n, {}).get("late_ticks", 0) - st0.get(n, {}).get("late_ticks", 0) for n in HEALTHY)
        res["ticks"] = sum(t1.get(n, {}).get("ticks", 0) - st0.get(n, {}).get("ticks", 0) for n in HEALTHY)
        res["status_max_s"] = slow[0]
        if hostile:
            h = t1.get("H", {})
            res["H"] = "%s, %s searches, last: %.120s" % (h.get("state"), h.get("searches"), h.get("retry_error", ""))
        t0 = time.monotonic()
        d.terminate()
        try:
            d.wait(60)
            res["stop_s"] = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            res["stop_s"] = float("inf")        # SIGTERM did not stop it: killed below
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
    return res


def main():
    if not os.path.exists(IMAGE):
        sys.exit("bench/hostile: no %s (python3 tests/fuzz/guest_image.py %s)" % (IMAGE, IMAGE))
    tmp = tempfile.mkdtemp(prefix="sentinel-hostile-")
    am_port = free_port()
    am = start_am(tmp, am_port)
    try:
        shutil.copytree(os.path.join(TOP, "rules"), os.path.join(tmp, "rules"),
                        ignore=shutil.ignore_patterns("tests", "*.json"))
        with open(os.path.join(tmp, "rules", "bench.yaml"), "w") as f:
            f.write("groups:\n  - name: bench\n    rules:\n      - alert: BenchFault\n"
                    "        expr: host.procs_running >= 4\n        severity: warning\n"
                    "        annotations:\n          summary: \"{{ $value }} runnable\"\n")
        for n in HEALTHY[1:] + ["H"]:
            shutil.copyfile(IMAGE, os.path.join(tmp, n + ".ram"))
        for what in ("log", "modules"):
            subprocess.run([os.path.join(BUILD, "hostile_image"), os.path.join(tmp, "H.ram"), what], check=True)
        out = []
        with guest.Guest(guest.main_kernel(guest.kernels()), kaslr=True, name="hostile-L") as g:
            for hostile in (False, True):
                r = run(tmp, g, am_port, hostile)
                out.append(r)
                print(json.dumps(r), flush=True)
        print("\n| run | start s | BenchFault onset -> Alertmanager, s (each round) | healthy ticks | late | slowest "
              "status s | stop s |\n|---|---|---|---|---|---|---|")
        for r in out:
            print("| %s | %.1f | %s | %d | %d | %.2f | %.1f |" % (
                r["run"], r["start_s"], ", ".join("%.2f" % x if x is not None else "never" for x in r["lat"]),
                r["ticks"], r["late"], r["status_max_s"], r["stop_s"]))
        if len(out) > 1:
            print("\nH at the end: %s" % out[1]["H"])
    finally:
        am.terminate()
        am.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
