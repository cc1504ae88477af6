#!/usr/bin/env python3
"""A real GPU fault, again and again: does sentineld always exit 3?

    python3 tests/gpu/fault_repeat.py BUILD-DIR [RUNS]

The engine suite's "real GPU fault" once in a few runs: one guest, and RUNS
times a sentineld on it (CUDA) whose reload's new kernel faults
(SENTINEL_TEST_FAULTS handover-kernel-fault).  Each must exit 3; one that
dies otherwise prints its last words (with the test hook set, a crash
prints its stack as OBJECT+OFFSET: addr2line -e OBJECT OFFSET).
"""
import os
import shutil
import subprocess
import sys
import tempfile

build, runs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10
sys.argv = [sys.argv[0], build, "cuda"]          # test_engine reads them at import
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))
import test_engine as te  # noqa: E402

ks = te.guest.kernels()
g = te.guest.Guest(te.guest.main_kernel(ks), kaslr=True, name="fr")
g.start()
codes = []
try:
    for i in range(runs):
        tmp = tempfile.mkdtemp(prefix="sentinel-fault-")
        shutil.copytree(os.path.join(te.TOP, "rules"), os.path.join(tmp, "rules"))
        fault = os.path.join(tmp, "faults")
        d = te.Daemon(tmp, te.source(g), env=dict(os.environ, SENTINEL_TEST_FAULTS=fault))
        with open(fault, "w") as f:
            f.write("handover-kernel-fault\n")
        rc, out, err = te.ctl(tmp, "reload")
        try:
            code = d.p.wait(30)
        except subprocess.TimeoutExpired:
            code = None
        codes.append(code)
        print("run %d: exit %s" % (i + 1, code), flush=True)
        if code != 3:
            print(d.text()[-4000:], flush=True)
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
finally:
    g.stop()
print("%d runs: %s" % (runs, ", ".join("exit %s" % c for c in codes)))
sys.exit(0 if all(c == 3 for c in codes) else 1)
