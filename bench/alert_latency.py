#!/usr/bin/env python3
"""Alert delivery: latency from the tick that fired to Alertmanager's
receipt with N rules firing at once, and sentineld's host CPU with every
sink on.

    python3 bench/alert_latency.py BUILD-DIR BACKEND [N] [ROUNDS] [CPU-SECONDS]

Against a Debian 6.12 guest (QEMU, TCG) and Debian's prometheus-alertmanager
on loopback ($ALERTMANAGER names another binary).

latency   N rules (default 1,000) on one condition (host.procs_running >= 4),
          sentineld at a 100 ms tick with Alertmanager, a webhook receiver
          and the disk spool on.  Four busy loops start in the guest: every
          rule fires on the same tick.  Per alert: Alertmanager's updatedAt
          (when it took the alert) minus the firing event's time (the tick's
          start, from the JSON lines).  The loops stop, everything resolves,
          again, ROUNDS times (default 3); median, p99 and max over all.
cpu       the shipped rules with every sink on (journal line, JSON lines,
          Alertmanager, webhook, spool, /metrics), an idle guest, 100 ms:
          sentineld's threads' run time over CPU-SECONDS (default 60), as
          bench/engine.py measures it.
Prints the numbers; results go in docs/benchmarks.md by hand.
"""
import http.server
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests", "engine"))
import guest  # noqa: E402
from engine import threads_ns, per_thread  # noqa: E402
from test_engine import free_port, wait  # noqa: E402
from amlib import am_alerts, rfc3339, start_am  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
BACKEND = sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
CPU_SECS = float(sys.argv[5]) if len(sys.argv) > 5 else 60


class Sink(http.server.BaseHTTPRequestHandler):
    got = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Sink.got += 1
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


def sentineld(tmp, ram, rules, notify, extra=""):
    sock = os.path.join(tmp, "ctl.sock")
    conf = os.path.join(tmp, "b.conf")
    with open(conf, "w") as f:
        f.write("[target]\nsource = ramfile:%s\nname = benchvm\n[rules]\ndirectory = %s\n[engine]\nbackend = %s\n"
                "tick = 100ms\ntasks = 1024\n[notify]\njsonl = %s\n%s[control]\nsocket = %s\n%s" %
                (ram, rules, BACKEND, os.path.join(tmp, "alerts.jsonl"), notify, sock, extra))
    log = open(os.path.join(tmp, "d.log"), "w")
    p = subprocess.Popen([os.path.join(BUILD, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    if not wait(lambda: os.path.exists(sock) or p.poll() is not None, 900, 0.1) or p.poll() is not None:
        raise RuntimeError("sentineld did not start: %s" % open(log.name).read()[-2000:])
    return p


def events(tmp):
    try:
        with open(os.path.join(tmp, "alerts.jsonl")) as f:
            return [json.loads(l) for l in f if l.strip()]
    except OSError:
        return []


def latency(g, tmp, am_port, hook_port):
    rules = os.path.join(tmp, "rules")
    os.makedirs(rules)
    with open(os.path.join(rules, "fire.yaml"), "w") as f:
        f.write("groups:\n  - name: fire\n    rules:\n")
        for i in range(N):
            f.write("      - alert: Fire%d\n        expr: host.procs_running >= 4\n        severity: warning\n"
                    "        annotations:\n          summary: \"{{ $value }} runnable\"\n" % i)
    notify = ("log = no\nalertmanager = http://127.0.0.1:%d\nwebhook = http://127.0.0.1:%d/hook\n"
              "spool = %s\n" % (am_port, hook_port, os.path.join(tmp, "spool")))
    d = sentineld(tmp, g.ram, rules, notify)
    lat = []
    # BENCH_PERF=FILE: where sentineld spends the rounds (perf record -g)
    perf = subprocess.Popen(["perf", "record", "-q", "-g", "-F", "4000", "-o", os.environ["BENCH_PERF"], "-p",
                             str(d.pid)]) if os.environ.get("BENCH_PERF") else None
    try:
        jsonl = os.path.join(tmp, "alerts.jsonl")
        for rnd in range(ROUNDS):
            n0 = len(events(tmp))
            # when the JSON lines file grows: when sentineld took the events from the ring
            size0, grew = os.path.getsize(jsonl) if os.path.exists(jsonl) else 0, []

            def watch():
                deadline = time.time() + 60
                while time.time() < deadline and not grew:
                    if os.path.exists(jsonl) and os.path.getsize(jsonl) > size0:
                        grew.append(time.time())
                    time.sleep(0.002)
            threading.Thread(target=watch, daemon=True).start()
            g.check("hogs=; for i in 1 2 3 4; do (while :; do :; done) & hogs=\"$hogs $!\"; done")
            fired = wait(lambda: [e for e in events(tmp)[n0:] if e["state"] == "firing"]
                         if len([e for e in events(tmp)[n0:] if e["state"] == "firing"]) >= N else None, 60)
            if not fired:
                raise RuntimeError("round %d: only %d of %d rules fired" %
                                   (rnd, len([e for e in events(tmp)[n0:] if e["state"] == "firing"]), N))
            t_fire = {e["alert"]: rfc3339(e["time"]) for e in fired}
            ticks = {e["tick"] for e in fired}

            def arrived():
                got = {a["labels"]["alertname"]: rfc3339(a["updatedAt"]) for a in am_alerts(am_port)
                       if a["labels"].get("alertname") in t_fire and rfc3339(a["startsAt"]) >= min(t_fire.values()) - 1}
                return got if len(got) >= N else None
            got = wait(arrived, 120, 0.2)
            if not got:
                raise RuntimeError("round %d: Alertmanager did not get all %d alerts" % (rnd, N))
            lat += [got[k] - t_fire[k] for k in t_fire]
            print("round %d: %d alerts fired on %d tick(s); in Alertmanager %.0f ms (median) .. %.0f ms (last) after "
                  "their tick; sentineld took them from the ring %.0f ms after the tick" %
                  (rnd, len(fired), len(ticks), 1e3 * sorted(got[k] - t_fire[k] for k in t_fire)[N // 2],
                   1e3 * max(got[k] - t_fire[k] for k in t_fire),
                   1e3 * (grew[0] - min(t_fire.values())) if grew else -1), flush=True)
            n1 = len(events(tmp))
            g.check("kill $hogs; wait $hogs 2>/dev/null; true")
            wait(lambda: len([e for e in events(tmp)[n1:] if e["state"] == "resolved"]) >= N, 60)
            wait(lambda: not [a for a in am_alerts(am_port) if a["labels"].get("alertname", "").startswith("Fire")],
                 120, 0.5)
    finally:
        if os.environ.get("BENCH_KEEP_LOG"):      # sentineld's log (SENTINEL_GPU_TRACE lines) kept there
            shutil.copy(os.path.join(tmp, "d.log"), os.environ["BENCH_KEEP_LOG"])
        if perf:
            perf.send_signal(2)
            perf.wait(60)
        d.terminate()
        d.wait(60)
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))] * 1e3  # noqa: E731
    print("latency (%d rules firing at once, %d rounds, %d alerts; AM, webhook and spool on): median %.0f ms, "
          "p99 %.0f ms, max %.0f ms; webhook posts received %d" % (N, ROUNDS, len(lat), q(0.5), q(0.99), q(1.0),
                                                                   Sink.got), flush=True)


def cpu(g, tmp, am_port, hook_port):
    rules = os.path.join(tmp, "shipped")
    shutil.copytree(os.path.join(TOP, "rules"), rules, ignore=shutil.ignore_patterns("tests", "*.json"))
    notify = ("log = yes\nalertmanager = http://127.0.0.1:%d\nwebhook = http://127.0.0.1:%d/hook\nspool = %s\n" %
              (am_port, hook_port, os.path.join(tmp, "spool2")))
    d = sentineld(tmp, g.ram, rules, notify, "[metrics]\nlisten = 127.0.0.1:%d\n" % free_port())
    try:
        time.sleep(5)
        a, t0 = threads_ns(d.pid), time.time()
        time.sleep(CPU_SECS)
        b, t1 = threads_ns(d.pid), time.time()
        ns = sum(x[1] for x in b.values()) - sum(x[1] for x in a.values())
        print("cpu (%d shipped rules, 100 ms, journal line + JSON lines + Alertmanager + webhook + spool + "
              "/metrics, idle guest, %.0f s): %.3f%% of a core; threads: %s" %
              (sum(1 for f in os.listdir(rules) for l in open(os.path.join(rules, f)) if "- alert:" in l),
               t1 - t0, ns / (t1 - t0) / 1e7, per_thread(a, b, t1 - t0)), flush=True)
    finally:
        d.terminate()
        d.wait(60)


def main():
    ks = guest.kernels()
    tmp = tempfile.mkdtemp(prefix="sentinel-latency-")
    am_port, hook_port = free_port(), free_port()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", hook_port), Sink)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    am = start_am(tmp, am_port)
    try:
        with guest.Guest(guest.main_kernel(ks), kaslr=True, name="lat") as g:
            latency(g, tmp, am_port, hook_port)
            cpu(g, tmp, am_port, hook_port)
    finally:
        am.terminate()
        srv.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
