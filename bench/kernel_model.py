#!/usr/bin/env python3
"""Benchmark the kernel model on live guests: discovery time, and one tick of
every metric on the CPU backend (the tasks read as the rules read them) with
about 50 tasks (an idle guest) and with 5,000.

    python3 bench/kernel_model.py [RUNS]      (after `make`)
"""
import os
import subprocess
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
import guest  # noqa: E402

runs = sys.argv[1] if len(sys.argv) > 1 else "20"
bench = os.path.join(TOP, "build", "kmodel_bench")
ks = guest.kernels()
for kname in ("debian-6.1", "debian-6.12"):
    with guest.Guest(ks[kname], mem_mb=2048, name="bench") as g:
        print("== %s, 2 vCPUs, 2048 MiB (TCG)" % kname, flush=True)
        print(subprocess.run([bench, "ramfile:" + g.ram, runs], capture_output=True, text=True).stdout, flush=True)
        t0 = time.time()
        g.check("i=0; while [ $i -lt 4950 ]; do sleep 100000 & i=$((i+1)); done", timeout=600)
        print("(spawned 4950 sleeping processes in %.0fs)" % (time.time() - t0), flush=True)
        print(subprocess.run([bench, "ramfile:" + g.ram, runs], capture_output=True, text=True).stdout, flush=True)
