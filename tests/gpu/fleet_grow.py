#!/usr/bin/env python3
"""A task table that grows in the GPU's fleet: the fleet hands over.

    python3 tests/gpu/fleet_grow.py BUILD-DIR [cuda|cpu]

Two guests watched by one sentineld with [engine] tasks = 32: each guest
has some 65 tasks, so the watch grows each target's table (a reload of the
same rules with a larger table for that target; on the GPU a new fleet for
all of them, docs/targets.md).  Each growth must be logged, the target's
table must then hold its tasks, and both targets must tick on with no late
tick.  Then a restart with [engine] state: the state written at stop is
taken over by a new sentineld (on the GPU, each member of the new fleet's
kernel takes its saved world over at its first launch): both targets are
restored and their tick count goes on from where it was.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

build = sys.argv[1]
backend = sys.argv[2] if len(sys.argv) > 2 else "cuda"
sys.argv = [sys.argv[0], build]                 # test_targets reads them at import
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))
import test_targets as tt  # noqa: E402
from test_engine import status, wait  # noqa: E402

tmp = tempfile.mkdtemp(prefix="sentinel-grow-")
shutil.copytree(os.path.join(tt.TOP, "rules"), os.path.join(tmp, "rules"))
ks = tt.guest.kernels()
gs = {n: tt.guest.Guest(tt.guest.main_kernel(ks), cpus=1, name="gr" + n) for n in ("a", "b")}
fails = 0
d = None
log, text = tt.open_log(os.path.join(tmp, "log"))


def report(ok, what, detail=""):
    global fails
    print("%s fleet-grow/%s: %s" % ("PASS" if ok else "FAIL", backend, what), flush=True)
    if not ok:
        fails += 1
        for line in str(detail).splitlines()[-30:]:
            print("     " + line)


try:
    for g in gs.values():
        g.start()
    conf = tt.write_conf(tmp, [(("target %s" % n), "source = ramfile:%s\n" % gs[n].ram) for n in ("a", "b")],
                         engine="backend = %s\ntasks = 32\nstate = %s\n" % (backend, os.path.join(tmp, "state")))
    d = subprocess.Popen([tt.SENTINELD, "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    grown = wait(lambda: text().count("the task table grew from 32 to") >= 2 or d.poll() is not None, 90)
    time.sleep(3.0)
    tg = tt.targets(tmp)
    report(bool(grown) and d.poll() is None and
           all(t.get("state") == "ok" and t.get("task_table", 0) >= t.get("tasks_found", 1) > 32 for t in tg.values()),
           "both targets' task tables grew past their %s tasks (%s)" %
           ([t.get("tasks_found") for t in tg.values()],
            "; ".join(l.split("sentineld: ")[-1][:160] for l in text().splitlines() if "grew from" in l)),
           json.dumps(tg, indent=1)[:2000] + "\n" + text()[-3000:])
    k0 = {n: t.get("ticks", 0) for n, t in tg.items()}
    time.sleep(2.0)
    tg = tt.targets(tmp)
    late = {n: t.get("late_ticks") for n, t in tg.items()}
    report(all(tg[n].get("ticks", 0) >= k0[n] + 15 for n in tg) and all(v == 0 for v in late.values()),
           "both tick on after the growths, no tick late (late ticks %s)" % late, json.dumps(tg, indent=1)[:2000])
    if backend == "cuda":
        fl = status(tmp).get("gpu_fleet", {})
        report(fl.get("targets") == 2, "the GPU runs both in its (new) kernel: %s" % json.dumps(fl), json.dumps(fl))
    k1 = {n: t.get("ticks", 0) for n, t in tt.targets(tmp).items()}
    d.terminate()
    rc = d.wait(30)
    report(rc == 0 and text().count("state saved to") >= 2, "sentineld stops cleanly (exit %s), its state saved "
           "for both targets" % rc, text()[-2000:])
    # ---- a restart: the saved state taken over by each target of the new kernel ----------
    n0 = text().count("restored the state of")
    d = subprocess.Popen([tt.SENTINELD, "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    back = wait(lambda: text().count("restored the state of") >= n0 + 2 or d.poll() is not None, 120)
    time.sleep(3.0)
    tg = tt.targets(tmp)
    report(bool(back) and d.poll() is None and all(tg.get(n, {}).get("state") == "ok" and
                                                   tg[n].get("ticks", 0) > k1[n] for n in k1),
           "restarted: both targets restored, their tick counts go on from before the stop (%s, were %s)" %
           ({n: t.get("ticks") for n, t in tg.items()}, k1),
           json.dumps(tg, indent=1)[:2000] + "\n" + text()[-3000:])
    d.terminate()
    rc = d.wait(30)
    report(rc == 0, "the restarted sentineld stops cleanly (exit %s)" % rc, text()[-2000:])
finally:
    if d and d.poll() is None:
        d.kill()
    for g in gs.values():
        g.stop()
    shutil.rmtree(tmp, ignore_errors=True)
print("%d failed" % fails)
sys.exit(1 if fails else 0)
