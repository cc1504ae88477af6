#!/usr/bin/env python3
"""/metrics at real task counts: how long a scrape takes and how big it is.

    python3 bench/metrics_scrape.py BUILD-DIR BACKEND [TASKS] [SCRAPES]

A Debian 6.12 guest (QEMU, TCG, 2 GiB) starts TASKS sleeping processes
(default 3,000); sentineld runs the shipped rules at 100 ms with
[metrics] listen; SCRAPES scrapes (default 10) are timed from the request to
the last byte.  One scrape is parsed with promtool check metrics (when
installed) and its task count compared with the guest's.  Prints the
numbers; results go in docs/benchmarks.md by hand.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
sys.path.insert(0, os.path.join(TOP, "tests", "engine"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest  # noqa: E402
from test_engine import free_port, wait  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
BACKEND = sys.argv[2]
TASKS = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
SCRAPES = int(sys.argv[4]) if len(sys.argv) > 4 else 10


def main():
    ks = guest.kernels()
    tmp = tempfile.mkdtemp(prefix="sentinel-scrape-")
    rules = os.path.join(tmp, "rules")
    shutil.copytree(os.path.join(TOP, "rules"), rules, ignore=shutil.ignore_patterns("tests", "*.json"))
    port = free_port()
    try:
        with guest.Guest(guest.main_kernel(ks), kaslr=True, name="scrape", mem_mb=2048) as g:
            t0 = time.time()
            g.check("echo 100000 > /proc/sys/kernel/threads-max; echo 100000 > /proc/sys/kernel/pid_max")
            g.check("i=0; while [ $i -lt %d ]; do sleep 100000 & i=$((i+1)); done" % TASKS, timeout=900)
            n = int(g.check("n=0; for d in /proc/[0-9]*; do n=$((n+1)); done; echo $n"))
            print("guest: %d processes (%d started in %.0f s)" % (n, TASKS, time.time() - t0), flush=True)
            conf = os.path.join(tmp, "s.conf")
            with open(conf, "w") as f:
                f.write("[target]\nsource = ramfile:%s\nname = vm\n[rules]\ndirectory = %s\n[engine]\nbackend = %s\n"
                        "tick = 100ms\ntasks = 16384\n[notify]\nlog = no\n[control]\nsocket = %s\n"
                        "[metrics]\nlisten = 127.0.0.1:%d\n" % (g.ram, rules, BACKEND, os.path.join(tmp, "c.sock"),
                                                               port))
            log = open(os.path.join(tmp, "d.log"), "w")
            d = subprocess.Popen([os.path.join(BUILD, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT)
            try:
                url = "http://127.0.0.1:%d/metrics" % port

                def up():
                    try:
                        return urllib.request.urlopen(url, timeout=10).read()
                    except OSError:
                        return None
                if not wait(up, 120, 0.5):
                    raise RuntimeError("no /metrics: %s" % open(log.name).read()[-1500:])
                times, body = [], b""
                for _ in range(SCRAPES):
                    t = time.time()
                    body = urllib.request.urlopen(url, timeout=30).read()
                    times.append((time.time() - t) * 1e3)
                    time.sleep(0.2)
                text = body.decode()
                pids = {l.split('pid="')[1].split('"')[0] for l in text.splitlines()
                        if l.startswith("sentinel_task_state{")}
                lint = "promtool not installed"
                if shutil.which("promtool"):
                    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
                    lint = "promtool check metrics: %s" % ("ok" if p.returncode == 0 else p.stdout + p.stderr)
                times.sort()
                print("scrape (%s backend, %d tasks in the guest, %d in the scrape): %d lines, %.1f MiB; "
                      "median %.0f ms, max %.0f ms over %d scrapes; %s" %
                      (BACKEND, n, len(pids), len(text.splitlines()), len(body) / 1048576, times[len(times) // 2],
                       times[-1], SCRAPES, lint), flush=True)
            finally:
                d.terminate()
                d.wait(60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
