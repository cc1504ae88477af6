"""Alertmanager for the benchmarks (bench/alert_latency.py, bench/hostile.py):
Debian's prometheus-alertmanager on loopback ($ALERTMANAGER names another
binary), its alerts, and its timestamps."""
import calendar
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "engine"))
from test_engine import wait  # noqa: E402

AM = os.environ.get("ALERTMANAGER", shutil.which("prometheus-alertmanager") or "prometheus-alertmanager")


def rfc3339(s):
    """Unix time of an RFC 3339 UTC timestamp with any fraction."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", s)
    return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + float(m.group(2) or 0)


def start_am(tmp, port):
    with open(os.path.join(tmp, "am.yml"), "w") as f:
        f.write("route:\n  receiver: none\nreceivers:\n  - name: none\n")
    log = open(os.path.join(tmp, "am.log"), "w")
    p = subprocess.Popen([AM, "--config.file=" + os.path.join(tmp, "am.yml"),
                          "--storage.path=" + os.path.join(tmp, "am-data"),
                          "--web.listen-address=127.0.0.1:%d" % port, "--cluster.listen-address="],
                         stdout=log, stderr=subprocess.STDOUT)
    if not wait(lambda: ready("http://127.0.0.1:%d/-/ready" % port), 30, 0.2):
        raise RuntimeError("alertmanager did not start: %s" % open(log.name).read()[-1500:])
    return p


def ready(url):
    try:
        urllib.request.urlopen(url, timeout=1)
        return True
    except OSError:
        return False


def am_alerts(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/api/v2/alerts?active=true&silenced=false&inhibited=false" %
                                port, timeout=10) as r:
        return json.load(r)
