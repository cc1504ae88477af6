#!/usr/bin/env python3
"""The CPU backend's tick on several threads reads what one thread reads.

    python3 tests/engine/threads_agree.py INSPECT INSPECT-TSAN BUNDLE IMAGE [THREADS]

A real guest's RAM image (no guest running: the same memory for both):
`INSPECT --threads 1 metrics --json --bundle BUNDLE` and `INSPECT-TSAN --threads THREADS`
(default 4; sentinel-inspect built with ThreadSanitizer: engine/cpu.c's
barrier, its threads' copies of the code and their read counts; a report
makes it exit 66).  Every value must be the same: host, CPUs, every task
(rows are in the threads' order: compared by PID), every object.  Prints
PASS/FAIL lines (tests/lib.sh c_tests counts them).
"""
import json
import os
import subprocess
import sys

TIMING = {"sample", "open_ms", "tick_us", "backend_note"}


def run(inspect, threads, bundle, image, env=None):
    p = subprocess.run([inspect, "--threads", str(threads), "--source", "ramfile:" + image, "metrics", "--json",
                        "--bundle", bundle], capture_output=True, text=True, timeout=600, env=env)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    inspect, tsan, bundle, image = sys.argv[1:5]
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    fails = 0

    def report(ok, name, detail=""):
        nonlocal fails
        fails += not ok
        print("%s threads/%s%s" % ("PASS" if ok else "FAIL", name, "" if ok else "\n     " + detail), flush=True)

    rc1, out1, err1 = run(inspect, 1, bundle, image)
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1 exitcode=66")
    rct, outt, errt = run(tsan, threads, bundle, image, env)
    report(rc1 == 0, "one thread's tick of the image", err1[-1500:])
    report(rct == 0 and "ThreadSanitizer" not in errt,
           "the tick on %d threads under ThreadSanitizer: no report, exit 0" % threads, errt[-3000:])
    if rc1 or rct:
        return 1
    a, b = json.loads(out1), json.loads(outt)
    def by_pid(t):
        pid = t.get("task.pid")
        return (pid is None, pid or 0, json.dumps(t, sort_keys=True))
    a["tasks"] = sorted(a.get("tasks", []), key=by_pid)
    b["tasks"] = sorted(b.get("tasks", []), key=by_pid)
    keys = sorted((set(a) | set(b)) - TIMING)
    diff = [k for k in keys if a.get(k) != b.get(k)]
    detail = "; ".join("%s: %.200s | %.200s" % (k, a.get(k), b.get(k)) for k in diff[:3])
    report(not diff and len(a["tasks"]) > 50,
           "%d threads read what one reads: %d tasks, %d host values, every object (%s)" %
           (threads, len(a["tasks"]), len(a.get("host", {})), ", ".join(keys)), detail)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
