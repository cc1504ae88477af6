#!/usr/bin/env python3
"""The metric library's tick on the CPU backend, builds side by side, on a
guest held still: every catalog metric for N tasks.

    python3 bench/metrics_paused.py BUILD-DIR [BUILD-DIR...] [--tasks N] [--rounds R]

A Debian 6.12 guest (QEMU) with N processes (sentinel-spawn, no churn,
default 5,000) is stopped (SIGSTOP: its RAM does not change and it takes no
CPU), then each build's `sentinel-inspect metrics --bundle
BUILD/metrics.bundle` ticks 30 times, 20 ms apart, R rounds (default 2)
in turn.  Prints the median and fastest tick (the first 5 dropped).
Unlike bench/task_scale.py nothing else runs meanwhile: a change to the
library's reads shows in a few percent, not in the guest's noise.
"""
import json
import os
import signal
import statistics
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
import guest  # noqa: E402


def main():
    args, builds, tasks, rounds = sys.argv[1:], [], 5000, 2
    while args:
        a = args.pop(0)
        if a == "--tasks":
            tasks = int(args.pop(0))
        elif a == "--rounds":
            rounds = int(args.pop(0))
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            builds.append(os.path.abspath(a))
    if not builds:
        print(__doc__, file=sys.stderr)
        return 2
    ks = guest.kernels()
    with guest.Guest(guest.main_kernel(ks), mem_mb=768 + tasks * 120 // 1024, kaslr=True, name="mp") as g:
        g.check("echo 4194304 > /proc/sys/kernel/pid_max")
        g.check("sentinel-spawn %d 1 --churn 0 > /tmp/s.out 2>&1 &" % tasks)
        g.check("i=0; until grep -q ready /tmp/s.out; do sleep 1; i=$((i+1)); [ $i -lt 600 ] || exit 1; done",
                timeout=620)
        qemu = [int(p) for p in subprocess.run(["pgrep", "-f", g.ram], capture_output=True, text=True).stdout.split()]
        for p in qemu:
            os.kill(p, signal.SIGSTOP)
        try:
            for r in range(rounds):
                for b in builds:
                    out = subprocess.run([os.path.join(b, "sentinel-inspect"), "-s", "ramfile:" + g.ram, "metrics",
                                          "--json", "--bundle", os.path.join(b, "metrics.bundle"), "--tasks",
                                          str(tasks * 5 // 4 + 1024), "--every", "20ms", "--count", "30"],
                                         capture_output=True, text=True, timeout=600).stdout.splitlines()
                    samples = [json.loads(l) for l in out if l.startswith("{")]
                    ts = [s["tick_us"] for s in samples][5:]
                    print("round %d  %-40s %d tasks: tick median %.0f us, fastest %.0f us" %
                          (r + 1, b, len(samples[-1]["tasks"]), statistics.median(ts), min(ts)), flush=True)
        finally:
            for p in qemu:
                os.kill(p, signal.SIGCONT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
