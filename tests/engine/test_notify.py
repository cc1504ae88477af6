#!/usr/bin/env python3
"""Alerts that reach people: sentineld -> a real Alertmanager and a webhook.

    python3 tests/engine/test_notify.py BUILD-DIR [cpu|cuda]

Against a live Debian 6.12 guest, a rule on runnable tasks (TestHogs) and
two busy loops in the guest:

  alertmanager  Debian's prometheus-alertmanager on loopback receives the
                alert firing (labels alertname, severity, target, the rule's),
                then resolved; Alertmanager in turn notifies its own webhook
  webhook       a receiver written here gets Alertmanager's webhook payload,
                version 4, with every field Alertmanager's own type has, for
                firing then resolved
  outage        the receiver and Alertmanager are down for 30 s while the
                alert fires and resolves; once they are back every event
                arrives, in order, and sentineld counts nothing dropped
  spool         the receiver down again, the alert fires and resolves,
                sentineld is killed with SIGKILL: its spool holds the events;
                a new sentineld sends them, in order, and empties the spool
  /metrics      [metrics] listen: a scrape parses with promtool check
                metrics, and its values match sentinel-inspect metrics read
                just before and just after (counters between the two,
                steady gauges equal, the same tasks); an unknown path is 404
  journal       sentineld's stderr is "journald's stream" (JOURNAL_STREAM
                names it) and this test listens on journald's socket: each
                alert event arrives as one native entry with its fields
                (ALERT, ALERT_STATE, SEVERITY, PRIORITY, TARGET, ...) and no
                alert line goes to stderr (where a real journald runs, or
                not as root: skipped)
  per-entity    two tmpfs mounts filled in the guest: Alertmanager gets
                two TestFsFull alerts (one per mountpoint, distinct
                fingerprints); one emptied, its alert alone resolves
  restart       [engine] state: TestLongTasks (an hour's window, for: 10m,
                over a few hundred sleeping tasks: the guest stays idle)
                fires, sentineld is killed with SIGKILL; a new one restores
                its state: still firing at once, Alertmanager keeps one alert
                with the same startsAt and hears no resolve; a corrupt state
                file is a clean start.  Its own run (SENTINEL_NOTIFY_ONLY=
                restart, a guest of its own) beside the others
                (SENTINEL_NOTIFY_SKIP=restart): tests/engine/run.sh starts it
                first and collects it last, so its ten minutes overlap
  panic         the shipped rules/kernel.yaml loaded too; the guest (booted
                with panic=0, Debian's default: it stays down) panics by
                sysrq c: KernelPanic reaches Alertmanager within 2 s of the
                trigger, its description and its kernel_log annotation
                carrying the panic line read from the dead kernel's RAM
"""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_engine as te  # noqa: E402
from test_engine import report, events, guest, free_port, wait  # noqa: E402

RULES = """groups:
  - name: notify
    rules:
      - alert: TestHogs
        expr: host.procs_running >= 4
        for: 1s
        severity: warning
        labels:
          team: infra
        annotations:
          summary: "{{ $value }} runnable tasks on {{ $target }}"
      - alert: TestFsFull
        expr: fs.avail_bytes / fs.size_bytes < 10% and fs.size_bytes > 0 and fs.size_bytes < 16MiB
        for: 1s
        severity: warning
        annotations:
          summary: "{{ $labels.mountpoint }} is full"
      - alert: TestLongTasks
        expr: min_over_time(host.threads[@WIN@]) >= @THREADS@
        for: @FOR@
        windows: partial
        severity: warning
"""
# the restart's rule: an hour's window (partial: known from its second
# sample, docs/rules.md) and for: 10m; shorter for a quick look
# (SENTINEL_RESTART_WINDOW=20s SENTINEL_RESTART_FOR=30s).  What holds is
# a count of threads that sleeping tasks raise past THREADS: the guest
# stays idle for the ten minutes (busy loops would take a host core)
LONG = {"win": os.environ.get("SENTINEL_RESTART_WINDOW", "1h"), "for": os.environ.get("SENTINEL_RESTART_FOR", "10m")}
THREADS = 400
# Debian's prometheus-alertmanager (ALERTMANAGER: a copy elsewhere, as on the GPU machine)
AM_BIN = os.environ.get("ALERTMANAGER") or shutil.which("prometheus-alertmanager")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


class Receiver:
    """A webhook receiver: keeps every POST body, per path, in order."""

    def __init__(self, port):
        self.port, self.got, self.server = port, [], None
        self.start()

    def start(self):
        got = self.got

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                got.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def payloads(self, path):
        return [b for p, b in self.got if p == path]


class Alertmanager:
    def __init__(self, tmp, port, hook):
        self.tmp, self.port = tmp, port
        with open(os.path.join(tmp, "am.yml"), "w") as f:
            f.write("route:\n  receiver: hook\n  group_by: [alertname]\n  group_wait: 0s\n  group_interval: 1s\n"
                    "  repeat_interval: 1h\nreceivers:\n  - name: hook\n    webhook_configs:\n"
                    "      - url: %s\n        send_resolved: true\n" % hook)
        self.p = None
        self.start()

    def start(self):
        self.log = open(os.path.join(self.tmp, "am.log"), "a")
        self.p = subprocess.Popen([AM_BIN, "--config.file=" + os.path.join(self.tmp, "am.yml"),
                                   "--storage.path=" + os.path.join(self.tmp, "am-data"),
                                   "--web.listen-address=127.0.0.1:%d" % self.port, "--cluster.listen-address="],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port, timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("alertmanager did not start: %s" % open(self.log.name).read()[-2000:])

    def stop(self):
        if self.p and self.p.poll() is None:
            self.p.terminate()
            self.p.wait(10)

    def alerts(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v2/alerts" % self.port, timeout=5) as r:
            return json.load(r)


def v4_ok(p, status):
    """Every field of Alertmanager's webhook Data (version 4) and its Alert."""
    try:
        a = p["alerts"][0]
        return (p["version"] == "4" and p["status"] == status and isinstance(p["groupKey"], str) and
                p["truncatedAlerts"] == 0 and p["receiver"] and p["groupLabels"] == {"alertname": "TestHogs"} and
                p["commonLabels"]["alertname"] == "TestHogs" and isinstance(p["commonAnnotations"], dict) and
                isinstance(p["externalURL"], str) and len(p["alerts"]) == 1 and a["status"] == status and
                a["labels"] == p["commonLabels"] and RFC3339.match(a["startsAt"]) and
                (a["endsAt"] == "0001-01-01T00:00:00Z" if status == "firing" else RFC3339.match(a["endsAt"])) and
                isinstance(a["generatorURL"], str) and re.match(r"^[0-9a-f]{16}$", a["fingerprint"]))
    except (KeyError, IndexError, TypeError):
        return False


def scenario(tmp):
    ks = guest.kernels()
    rules = os.path.join(tmp, "rules")
    os.makedirs(rules)
    with open(os.path.join(rules, "notify.yaml"), "w") as f:
        f.write(RULES.replace("@WIN@", LONG["win"]).replace("@FOR@", LONG["for"]).replace("@THREADS@", str(THREADS)))
    shutil.copy(os.path.join(te.TOP, "rules", "kernel.yaml"), rules)
    rport, aport = free_port(), free_port()
    recv = Receiver(rport)
    am = Alertmanager(tmp, aport, "http://127.0.0.1:%d/am" % rport)
    only = os.environ.get("SENTINEL_NOTIFY_ONLY")
    # the restart's own run has a guest of its own beside the others'
    g = guest.Guest(guest.main_kernel(ks), kaslr=True, name="ntr" if only == "restart" else "ntf", append="panic=0")
    g.start()
    d = None
    try:
        spool = os.path.join(tmp, "spool")
        notify = ("alertmanager = http://127.0.0.1:%d\nwebhook = http://127.0.0.1:%d/direct\nresend = 5s\n"
                  "spool = %s\n" % (aport, rport, spool))
        if only == "restart":
            restart(g, am, recv, tmp, notify)
            return
        if only == "per-entity":
            d = te.Daemon(tmp, te.source(g), engine="", notify=notify)
            per_entity(g, am, d)
            d.stop()
            return
        d = te.Daemon(tmp, te.source(g), engine="", notify=notify)
        if d.p.poll() is not None:
            report(False, "notify: sentineld starts with the remote sinks", d.text())
            return
        # ---- fire, and resolve, with everything up --------------------------------------
        g.check("hogs=; for i in 1 2 3 4; do (while :; do :; done) & hogs=\"$hogs $!\"; done")

        def am_has(active):
            now = time.time()
            for a in am.alerts():
                if a["labels"].get("alertname") == "TestHogs":
                    ends = time.mktime(time.strptime(a["endsAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
                    if (ends > now) == active:
                        return a
            return None
        a = wait(lambda: am_has(True), 30)
        report(a is not None and a["labels"].get("severity") == "warning" and a["labels"].get("target") == "testvm"
               and a["labels"].get("team") == "infra" and "runnable tasks on testvm" in a["annotations"].get("summary", ""),
               "alertmanager: TestHogs arrives firing with its labels and summary (%s)" %
               (a and {k: a["labels"][k] for k in sorted(a["labels"])}), "alerts %s\n%s" % (am.alerts(), d.text()[-2000:]))
        p = wait(lambda: recv.payloads("/direct"), 15)
        report(p and v4_ok(p[0], "firing"), "webhook: a version 4 payload, firing, every field as Alertmanager's type "
               "has it", json.dumps(p and p[0])[:2000])
        g.check("kill $hogs; wait $hogs 2>/dev/null; true")
        res = wait(lambda: [x for x in recv.payloads("/direct") if x.get("status") == "resolved"], 30)
        report(res and v4_ok(res[0], "resolved") and res[0]["alerts"][0]["startsAt"] == p[0]["alerts"][0]["startsAt"],
               "webhook: resolved, with the startsAt it fired with", json.dumps(recv.payloads("/direct"))[:2000])
        # Alertmanager's API lists active alerts only: resolved, it drops out,
        # and Alertmanager tells its own receiver
        via_am = wait(lambda: [x for x in recv.payloads("/am") if x.get("status") == "resolved"], 30)
        gone = not am_has(True)
        report(gone and via_am,
               "alertmanager: TestHogs resolved: no longer active there, and Alertmanager notified its own "
               "webhook: %s" % [x["status"] for x in recv.payloads("/am")], "alerts %s" % am.alerts())
        # ---- an outage: both sinks down while it fires and resolves -----------------------------
        n0, m0 = len(recv.payloads("/direct")), len(recv.payloads("/am"))
        am.stop()
        recv.stop()
        t_down = time.time()
        ev0 = len(events(tmp))
        g.check("hogs=; for i in 1 2 3 4; do (while :; do :; done) & hogs=\"$hogs $!\"; done")
        fired = wait(lambda: [e for e in events(tmp)[ev0:] if e["alert"] == "TestHogs" and e["state"] == "firing"], 30)
        time.sleep(3)
        g.check("kill $hogs; wait $hogs 2>/dev/null; true")
        resolved = wait(lambda: [e for e in events(tmp)[ev0:] if e["alert"] == "TestHogs" and e["state"] == "resolved"],
                        30)
        time.sleep(max(0, 30 - (time.time() - t_down)))
        st = te.status(tmp).get("delivery", {})
        report(fired and resolved and st.get("queued", 0) >= 2 and st.get("failed", 0) >= 1,
               "outage: sentineld keeps the events while both sinks are down for 30 s (%s)" % st, json.dumps(st))
        recv.start()
        am.start()
        back = wait(lambda: len(recv.payloads("/direct")) >= n0 + 2 and te.status(tmp).get("delivery", {}).get("queued") == 0,
                    60)
        after = [x["status"] for x in recv.payloads("/direct")[n0:]]
        st = te.status(tmp).get("delivery", {})
        report(back and after == ["firing", "resolved"] and st.get("dropped") == 0,
               "outage: once they are back every event arrives, in order (%s), none dropped (%s)" % (after, st),
               "%s\n%s" % (recv.payloads("/direct")[n0:], d.text()[-2000:]))
        # Alertmanager took every queued batch (2xx each: queued 0, dropped 0
        # above), the resolved one last: it holds nothing active
        time.sleep(2)
        report(not am_has(True), "outage: Alertmanager, restarted empty, took the queued batches and holds "
               "TestHogs as resolved (not active; it notified: %s)" % [x["status"] for x in recv.payloads("/am")[m0:]],
               "alerts %s" % am.alerts())
        rc = d.stop()
        report(rc == 0 and "Sanitizer" not in d.text(), "sentineld with the remote sinks stops cleanly (exit %s)" % rc,
               d.text()[-2000:])
        # ---- the spool: SIGKILL while it holds events, then a new sentineld ------------------------
        d = te.Daemon(tmp, te.source(g), engine="", notify=notify)
        n1 = len(recv.payloads("/direct"))
        recv.stop()
        ev0 = len(events(tmp))
        g.check("hogs=; for i in 1 2 3 4; do (while :; do :; done) & hogs=\"$hogs $!\"; done")
        wait(lambda: [e for e in events(tmp)[ev0:] if e["alert"] == "TestHogs" and e["state"] == "firing"], 30)
        time.sleep(2)
        g.check("kill $hogs; wait $hogs 2>/dev/null; true")
        wait(lambda: [e for e in events(tmp)[ev0:] if e["alert"] == "TestHogs" and e["state"] == "resolved"], 30)
        time.sleep(1)
        st = te.status(tmp).get("delivery", {})
        d.p.kill()
        d.p.wait()
        files = sorted(f for _, _, fs in os.walk(spool) for f in fs if f.endswith(".json"))
        report(st.get("queued", 0) >= 2 and st.get("spool_bytes", 0) > 0 and len(files) >= 2,
               "spool: sentineld killed with SIGKILL while it holds %d batches (%s bytes) on disk" %
               (len(files), st.get("spool_bytes")), "%s %s" % (st, files))
        recv.start()
        mport = free_port()
        d = te.Daemon(tmp, te.source(g), engine="", notify=notify, extra="[metrics]\nlisten = 127.0.0.1:%d\n" % mport)
        got = wait(lambda: [x["status"] for x in recv.payloads("/direct")[n1:]] if
                   len(recv.payloads("/direct")) >= n1 + 2 else None, 60)
        left = wait(lambda: not [f for _, _, fs in os.walk(spool) for f in fs if f.endswith(".json")] or None, 30)
        report(got == ["firing", "resolved"] and left and "from the spool, sent first" in d.text(),
               "spool: a new sentineld delivers them, in order (%s), and empties the spool" % got,
               "%s\n%s" % (recv.payloads("/direct")[n1:], d.text()[-2000:]))
        te.scrape_check(g.ram, mport, d)
        d.stop()
        d = te.Daemon(tmp, te.source(g), engine="", notify=notify)
        per_entity(g, am, d)
        d.stop()
        journal(g, tmp)
        if os.environ.get("SENTINEL_NOTIFY_SKIP") != "restart":
            restart(g, am, recv, tmp, notify)
        d = te.Daemon(tmp, te.source(g), engine="", notify=notify)
        panic(g, am, tmp, d)
        d.stop()
    finally:
        if d:
            d.stop()
        g.stop()
        am.stop()
        recv.stop()


def seconds(d):
    """A duration as rules write it (30s, 10m, 1h) in seconds."""
    return float(d[:-1]) * {"s": 1, "m": 60, "h": 3600}[d[-1]]


def restart(g, am, recv, tmp, notify):
    """State across a restart ([engine] state): TestLongTasks fires (a
    window and a for:), sentineld is killed with SIGKILL, a new one restores
    its state: the alert still fires at once, Alertmanager keeps one alert
    with the same startsAt and never hears of a resolve; then a corrupt
    state file is a clean start."""
    state = os.path.join(tmp, "state")
    eng = "state = %s\nstate_interval = 2s\n" % state
    # Alertmanager holds a firing alert until its endsAt, 4 resends ahead
    # (Prometheus' rule): the default resend, 1 min, covers a restart that
    # compiles the rules again (20 s under ASan)
    notify = notify.replace("resend = 5s", "resend = 1m")

    def long_alert():
        now = time.time()
        for a in am.alerts():
            ends = time.mktime(time.strptime(a["endsAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
            if a["labels"].get("alertname") == "TestLongTasks" and ends > now:
                return a
        return None

    def am_resolves():
        return [x for x in recv.payloads("/am") if x.get("status") == "resolved" and
                any(a["labels"].get("alertname") == "TestLongTasks" for a in x.get("alerts", []))]
    # the sleepers first: every sample of the window sentineld sees holds
    # more than THREADS threads
    n = int(g.check("read -r a b c d e < /proc/loadavg; echo ${d#*/}"))
    g.check("sl=; i=0; while [ $i -lt %d ]; do sleep 100000 & sl=\"$sl $!\"; i=$((i + 1)); done" %
            max(0, THREADS + 40 - n), timeout=120)
    n2 = int(g.check("read -r a b c d e < /proc/loadavg; echo ${d#*/}"))
    d = te.Daemon(tmp, te.source(g), engine=eng, notify=notify)
    try:
        a = wait(long_alert, seconds(LONG["for"]) + 120)
        time.sleep(5)                           # a save after it fired (every 2 s)
        files = os.listdir(state) if os.path.isdir(state) else []
        sst = te.status(tmp).get("state", {})
        report(a is not None and "testvm.state" in files and sst.get("writes", 0) >= 1 and not sst.get("errors"),
               "restart: TestLongTasks fires (min_over_time [%s], windows: partial, for %s; %d threads, then %d "
               "with the sleepers), and the state file is written (%s; status: %d writes of %d KiB)" %
               (LONG["win"], LONG["for"], n, n2, files, sst.get("writes", 0), sst.get("bytes", 0) >> 10),
               "alerts %s\nstatus %s\n%s" % (am.alerts(), sst, d.text()[-3000:]))
        d.p.kill()
        d.p.wait()
        time.sleep(3)
        d = te.Daemon(tmp, te.source(g), engine=eng, notify=notify)
        t0 = time.time()
        rc, out, err = te.ctl(tmp, "--json", "alerts")
        firing = [x for x in (json.loads(out).get("alerts", []) if rc == 0 else [])
                  if x.get("name") == "TestLongTasks" and x.get("state") == "firing"]
        report("restored the state of" in d.text() and firing,
               "restart: after kill -9 a new sentineld restores it: TestLongTasks firing at once (asked %.1f s after "
               "it started: %s)" % (time.time() - t0, firing[:1]), "%s\n%s" % (out, d.text()[-3000:]))
        time.sleep(8)
        b = long_alert()
        report(a is not None and b is not None and b["startsAt"] == a["startsAt"] and
               b["fingerprint"] == a["fingerprint"] and not am_resolves(),
               "restart: Alertmanager still has one TestLongTasks, the same fingerprint and startsAt (%s), and "
               "never heard it resolve" % (b and b["startsAt"]),
               "before %s\nafter %s\nresolves %s\n%s" % (a, b, am_resolves(), d.text()[-3000:]))
        g.check("kill $sl; wait $sl 2>/dev/null; true", timeout=120)
        gone = wait(lambda: not long_alert(), 60)
        report(b is not None and gone is not None, "restart: then the sleepers end and it resolves",
               "alerts %s" % am.alerts())
        rc = d.stop()
        # a corrupt state file: a line that says so, and a clean start
        path = os.path.join(state, "testvm.state")
        with open(path, "ab" if not os.path.exists(path) else "r+b") as f:
            f.seek(100)
            f.write(b"\xff" * 64)
        d = te.Daemon(tmp, te.source(g), engine=eng, notify=notify)
        report(rc == 0 and d.p.poll() is None and "corrupt" in d.text() and "a clean start" in d.text(),
               "restart: a corrupt state file is a logged error and a clean start", d.text()[-3000:])
    finally:
        g.check("kill $sl 2>/dev/null; true", timeout=120)
        d.stop()


def per_entity(g, am, d):
    """Two filesystems filled: Alertmanager gets two TestFsFull alerts, one
    per mount (distinct fingerprints), and each resolves on its own."""
    def active():
        now = time.time()
        out = {}
        for a in am.alerts():
            ends = time.mktime(time.strptime(a["endsAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
            if a["labels"].get("alertname") == "TestFsFull" and ends > now:
                out[a["labels"].get("mountpoint")] = a
        return out
    g.check("for m in /fa /fb; do mkdir -p $m && mount -t tmpfs -o size=4m tmpfs $m && "
            "(dd if=/dev/zero of=$m/x bs=64k count=100 2>/dev/null; true); done")
    try:
        two = wait(lambda: (lambda a: a if set(a) == {"/fa", "/fb"} else None)(active()), 40)
        fps = {a["fingerprint"] for a in (two or {}).values()}
        report(two is not None and len(fps) == 2 and all(a["annotations"].get("summary") == "%s is full" % m and
                                                          a["labels"].get("fstype") == "tmpfs" and
                                                          a["labels"].get("device") == "tmpfs"
                                                          for m, a in two.items()),
               "per-entity: two filesystems filled: Alertmanager has two TestFsFull alerts, one per mountpoint, "
               "labelled device and fstype as node_exporter does, with distinct fingerprints (%s)" % sorted(fps),
               "alerts %s\n%s" % (am.alerts(), d.text()[-2000:]))
        g.check("rm /fa/x")
        one = wait(lambda: (lambda a: a if set(a) == {"/fb"} else None)(active()), 40)
        report(one is not None and two is not None and one["/fb"]["startsAt"] == two["/fb"]["startsAt"],
               "per-entity: /fa emptied: its alert resolves alone, /fb's stays firing since it began",
               "alerts %s\n%s" % (am.alerts(), d.text()[-2000:]))
    finally:
        g.check("for m in /fa /fb; do rm -f $m/x; umount $m; done; true")


JOURNAL_SOCKET = "/run/systemd/journal/socket"


def journal_fields(datagram):
    """journald's native protocol: KEY=VALUE lines, or KEY, newline, a
    64-bit little-endian length and that many bytes, newline."""
    f, i = {}, 0
    while i < len(datagram):
        nl = datagram.index(b"\n", i)
        line = datagram[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k, n = line, int.from_bytes(datagram[nl + 1:nl + 9], "little")
            v, i = datagram[nl + 9:nl + 9 + n], nl + 9 + n + 1
        f[k.decode()] = v.decode(errors="replace")
    return f


def journal(g, tmp):
    if os.path.exists(JOURNAL_SOCKET) or os.geteuid() != 0:
        print("SKIP engine/cpu: journal: native entries (%s)" %
              ("a real journald listens here" if os.path.exists(JOURNAL_SOCKET) else "needs root to listen on " +
               JOURNAL_SOCKET), flush=True)
        te.RES.add("skip")
        return
    os.makedirs(os.path.dirname(JOURNAL_SOCKET), exist_ok=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    srv.bind(JOURNAL_SOCKET)
    srv.settimeout(0.5)
    got = []

    def listen():
        while srv.fileno() >= 0:
            try:
                got.append(journal_fields(srv.recv(1 << 20)))
            except socket.timeout:
                continue
            except (OSError, ValueError):
                return
    th = threading.Thread(target=listen, daemon=True)
    th.start()

    def env(log):
        st = os.fstat(log.fileno())
        return dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
    d = te.Daemon(tmp, te.source(g), engine="", env=env)
    try:
        g.check("hogs=; for i in 1 2 3 4; do (while :; do :; done) & hogs=\"$hogs $!\"; done")
        fired = wait(lambda: [e for e in got if e.get("ALERT") == "TestHogs" and e.get("ALERT_STATE") == "firing"], 30)
        g.check("kill $hogs; wait $hogs 2>/dev/null; true")
        res = wait(lambda: [e for e in got if e.get("ALERT") == "TestHogs" and e.get("ALERT_STATE") == "resolved"],
                   30)
        e = fired and fired[0]
        report(e and e.get("PRIORITY") == "4" and e.get("SEVERITY") == "warning" and e.get("TARGET") == "testvm" and
               e.get("SYSLOG_IDENTIFIER") == "sentineld" and "TestHogs" in e.get("MESSAGE", "") and
               "runnable tasks on testvm" in e.get("SUMMARY", "") and e.get("RULE_FILE", "").endswith(":4") and
               res and res[0].get("PRIORITY") == "4",
               "journal: TestHogs firing and resolved arrive as native entries with their fields (%s)" %
               (e and {k: e[k] for k in ("ALERT", "ALERT_STATE", "SEVERITY", "PRIORITY", "TARGET")}),
               "entries %s\nstderr %s" % (got[-5:], d.text()[-1500:]))
        notes = [x for x in got if "started:" in x.get("MESSAGE", "") and x.get("PRIORITY") == "6"]
        report(notes and "FIRING TestHogs" not in d.text() and "started:" not in d.text(),
               "journal: sentineld's own notes are entries too, and nothing went to the stderr stream",
               d.text()[-1500:])
    finally:
        d.stop()
        srv.close()
        os.unlink(JOURNAL_SOCKET)


def panic(g, am, tmp, d):
    """The guest panics; KernelPanic is in Alertmanager within 2 s, with the
    panic line.  Last: the guest is dead afterwards."""
    report(not [a for a in am.alerts() if a["labels"].get("alertname", "").startswith("Kernel")],
           "panic: before it, no Kernel* alert is active (the guest is neither panicked nor tainted)",
           "alerts %s" % am.alerts())
    t0 = time.time()
    g.send("echo c > /proc/sysrq-trigger")
    line = "Kernel panic - not syncing: sysrq triggered crash"

    def got():
        return [a for a in am.alerts() if a["labels"].get("alertname") == "KernelPanic"]
    a = wait(got, 30)
    a = a and a[0]
    # Alertmanager's updatedAt: when it took the alert (this machine's clock)
    took = None
    if a:
        u = a["updatedAt"]
        base = time.mktime(time.strptime(u[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        frac = re.match(r"\.(\d+)", u[19:])
        took = base + (float("0." + frac.group(1)) if frac else 0) - t0
    desc = a and a["annotations"].get("description", "")
    klog = a and a["annotations"].get("kernel_log", "")
    report(a is not None and took is not None and took <= 2.0 and a["labels"].get("severity") == "critical",
           "panic: KernelPanic is in Alertmanager %s s after echo c > /proc/sysrq-trigger (at most 2 s)" %
           (took if took is None else "%.2f" % took), "alert %s\n%s" % (a, d.text()[-2000:]))
    report(bool(desc) and line in desc and line in klog,
           "panic: its description and kernel_log annotation carry the panic line, read from the dead kernel's RAM",
           "description %r\nkernel_log %r\nguest console: %s" % (desc, klog, g.console_tail(20)))
    ev = [e for e in events(tmp) if e["alert"] == "KernelPanic" and e["state"] == "firing"]
    report(ev and line in ev[0].get("annotations", {}).get("kernel_log", ""),
           "panic: the JSON-lines event has the kernel log too", json.dumps(ev)[:2000])


def main():
    if not AM_BIN:
        print("SKIP notify: prometheus-alertmanager not installed (apt-get install prometheus-alertmanager)")
        te.RES.add("skip")
        return
    only = os.environ.get("SENTINEL_NOTIFY_ONLY")
    skip = os.environ.get("SENTINEL_NOTIFY_SKIP")
    te.RES.expect(4 if only == "restart" else 2 if only == "per-entity" else 17 if skip == "restart" else 21)
    # 25; 28 with promtool and the journal's two (root, no journald here)
    tmp = tempfile.mkdtemp(prefix="sentinel-notify-")
    try:
        scenario(tmp)
    except (guest.GuestError, RuntimeError) as e:
        report(False, "notify: %s" % e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(te.RES.end())
