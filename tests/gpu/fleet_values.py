#!/usr/bin/env python3
"""The GPU's one kernel for all targets computes what the CPU backend does.

    python3 tests/gpu/fleet_values.py BIN-DIR [TARGETS]

One Debian 6.12 guest is booted and captured three times, each time in a
different state (idle; 300 more tasks; a CPU hog, 64 MiB in a tmpfs and a
cgroup tree), as ELF vmcores: three kernels' memories that differ.  TARGETS
targets (default 6) are those images in turn (0 1 2 0 1 2 ...), so that
every group of the fleet runs members of different images one after another,
and a member reading another's memory, or another's relocation table, shows
as a wrong value.  One sentineld runs the shipped rules on them in the GPU's
fleet, another on the CPU backend; once both have ticked, every metric series
of /metrics (per target; host, CPU, task and object metrics with their
labels) must be the same in both, value for value.  The images hold still,
so nothing differs in time.  Per-entity rules are loaded beside the shipped
ones (one alert per task, filesystem, CPU, disk, interface and cgroup, a cap
that overflows, names matched by patterns): both backends raise the same alerts, entity for entity
(sentinel_alerts with its entity labels, and sentinelctl alerts).
Ends with "N passed, N failed".
(sh tests/gpu/run.sh fleetvalues on the GPU machine.)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
sys.path.insert(0, os.path.join(TOP, "tests", "engine"))
import guest  # noqa: E402
from test_engine import free_port  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
NTARGETS = int(sys.argv[2]) if len(sys.argv) > 2 else 6
passed = failed = 0


def report(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print("%s fleet-values: %s" % ("PASS" if ok else "FAIL", what), flush=True)
    if not ok and detail:
        for line in str(detail).splitlines()[:30]:
            print("     " + line)


def families():
    """The /metrics names of the catalog's metrics (notifier/prom.c's px_name)."""
    packed = os.path.join(BIN, "catalog.json")      # tests/gpu/pack.sh's (no rulec on the GPU machine)
    if os.path.exists(packed):
        with open(packed) as f:
            out = f.read()
    else:
        out = subprocess.run([os.path.join(BIN, "rulec"), "--list-metrics=json"], capture_output=True, text=True,
                             check=True).stdout
    names = set()
    for m in json.loads(out):
        base = "sentinel_" + m["name"].replace(".", "_")
        unit = {"seconds": "_seconds", "bytes": "_bytes", "bytes/s": "_bytes_per_second"}.get(m["unit"], "")
        names.add(base + unit + ("_total" if m["kind"] == "counter" else ""))
    return names


def series(text, fams):
    """{(target, 'name{labels}'): value} for the catalog's families."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("sentinel_"):
            continue
        key, _, val = line.rpartition(" ")
        name = key.split("{", 1)[0]
        if name not in fams:
            continue
        tgt = key.split('target="', 1)[1].split('"', 1)[0] if 'target="' in key else ""
        out[(tgt, key)] = val
    return out


ENTITY_RULES = """groups:
  - name: entities
    rules:
      - alert: EveryTaskAsleep
        expr: task.state == "S"
        max_alerts: 40
      - alert: EveryMount
        expr: fs.size_bytes >= 0
      - alert: EveryCpu
        expr: rate(cpu.busy_time[1s]) >= 0
      - alert: EveryDisk
        expr: rate(disk.read_bytes[1s]) >= 0
      - alert: EveryInterface
        expr: rate(net.rx_bytes[1s]) >= 0
      - alert: EveryCgroup
        expr: cgroup.memory_current >= 0
      - alert: BigTasks
        expr: task.rss > 1MiB
        max_alerts: 1000
      - alert: SomeNames
        expr: task.comm =~ "(k|s)[a-z]+.*" and not task.comm !~ ".*[0-9]"
      - alert: SomeMounts
        expr: fs.mountpoint =~ "/(sys|proc|dev)?.*"
"""


def rules_dir(tmp):
    d = os.path.join(tmp, "rules")
    if not os.path.isdir(d):
        shutil.copytree(os.path.join(TOP, "rules"), d)
        with open(os.path.join(d, "zz-entities.yaml"), "w") as f:
            f.write(ENTITY_RULES)
    return d


def alerts(sock):
    """{(target, alert, labels...)} from sentinelctl alerts."""
    p = subprocess.run([os.path.join(BIN, "sentinelctl"), "-s", sock, "--json", "alerts"], capture_output=True,
                       text=True, timeout=120)
    try:
        rows = json.loads(p.stdout)["alerts"] if p.returncode == 0 else []
    except ValueError:
        rows = []
    keys = ("pid", "comm", "cpu", "disk", "interface", "mountpoint", "cgroup", "overflow")
    return {(r.get("target"), r.get("name"), r.get("state")) + tuple(str(r.get(k, "")) for k in keys) for r in rows}


def sentineld(tmp, name, backend, sources):
    port = free_port()
    conf = os.path.join(tmp, name + ".conf")
    sock = os.path.join(tmp, name + ".sock")
    with open(conf, "w") as f:
        for i, src in enumerate(sources):
            f.write("[target t%d]\nsource = vmcore:%s\n" % (i, src))
        f.write("[rules]\ndirectory = %s\n[engine]\nbackend = %s\ntick = 100ms\ntasks = 1024\n[notify]\nlog = no\n"
                "[control]\nsocket = %s\n[metrics]\nlisten = 127.0.0.1:%d\n" %
                (rules_dir(tmp), backend, sock, port))
    log = open(os.path.join(tmp, name + ".log"), "w")
    d = subprocess.Popen([os.path.join(BIN, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    return d, sock, port, log.name


def status(sock):
    p = subprocess.run([os.path.join(BIN, "sentinelctl"), "-s", sock, "--json", "status"], capture_output=True,
                       text=True, timeout=60)
    try:
        return json.loads(p.stdout)["status"] if p.returncode == 0 else {}
    except ValueError:
        return {}


def ticking(d, sock, n, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout and d.poll() is None:
        tg = status(sock).get("targets", [])
        if len(tg) == n and all(t.get("ticks", 0) > 20 for t in tg):
            return status(sock)
        time.sleep(0.5)
    return None


def main():
    tmp = tempfile.mkdtemp(prefix="sentinel-fleet-values-")
    procs = []
    try:
        ks = guest.kernels()
        imgs = [os.path.join(tmp, "g%d.core" % i) for i in range(3)]
        with guest.Guest(guest.main_kernel(ks), name="fv", phys_nics=tuple(guest.PHYS_NICS)) as g:
            guest.phys_nics_up(g)           # e1000e's, vmxnet3's, 8139cp's and e1000's counters
            time.sleep(2)
            g.dump(imgs[0])
            g.check("for i in $(seq 300); do sleep 100000 & done; true")
            time.sleep(1)
            g.dump(imgs[1])
            cg = "/sys/fs/cgroup"
            g.check("(while :; do :; done) & mkdir -p /mnt && mount -t tmpfs -o size=256M tmpfs /mnt && "
                    "dd if=/dev/zero of=/mnt/f bs=1M count=64 2>/dev/null; mkdir -p %s && "
                    "mount -t cgroup2 none %s && echo '+cpu +memory +pids' > %s/cgroup.subtree_control && "
                    "for i in 1 2 3 4 5; do mkdir -p %s/s$i/c; done; echo $$ > %s/s2/cgroup.procs" % ((cg,) * 5))
            time.sleep(2)
            g.dump(imgs[2])
        sources = [imgs[i % 3] for i in range(NTARGETS)]
        fams = families()
        runs = {}
        # (SENTINEL_FLEET_BACKEND=cpu: a dry run of this script where there is no GPU)
        for name, backend in (("gpu", os.environ.get("SENTINEL_FLEET_BACKEND", "cuda")), ("cpu", "cpu")):
            d, sock, port, logname = sentineld(tmp, name, backend, sources)
            procs.append(d)
            st = ticking(d, sock, NTARGETS)
            with open(logname) as f:
                log = f.read()
            if not st:
                report(False, "%s: sentineld runs %d targets" % (name, NTARGETS), log[-3000:])
                return
            if backend == "cuda":
                fl = st.get("gpu_fleet", {})
                report(fl.get("targets") == NTARGETS and all(t.get("backend") == "cuda" for t in st["targets"]),
                       "the GPU runs the %d targets in one kernel (%d groups of %d blocks on %s)" %
                       (NTARGETS, fl.get("groups", 0), fl.get("group_blocks", 0), fl.get("device")),
                       json.dumps(st, indent=1)[:2000])
            time.sleep(3)                   # the 1 s windows are known, every state stepped
            body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60).read().decode()
            runs[name] = series(body, fams)
            runs[name + "_alerts"] = series(body, {"sentinel_alerts"})
            runs[name + "_ctl"] = alerts(sock)
            errs = {t["name"]: t.get("read_errors", 0) for t in st["targets"]}
            runs[name + "_errors"] = errs
            d.terminate()
            d.wait(60)
        gpu, cpu = runs["gpu"], runs["cpu"]
        per = {}
        for k in cpu:
            per[k[0]] = per.get(k[0], 0) + 1
        report(len(per) == NTARGETS and min(per.values()) > 100,
               "/metrics on the CPU backend has the catalog's series for every target (%s)" %
               ", ".join("%s %d" % kv for kv in sorted(per.items())))
        # the images differ: targets of different images have different series
        differ = cpu.get(("t0", 'sentinel_host_threads{target="t0"}')) != \
            cpu.get(("t1", 'sentinel_host_threads{target="t1"}'))
        report(differ, "the three images differ (host.threads of t0 and t1: %s, %s)" %
               (cpu.get(("t0", 'sentinel_host_threads{target="t0"}')),
                cpu.get(("t1", 'sentinel_host_threads{target="t1"}'))))
        # the NICs of physical and VMware machines: read on both (their own structs), not unknown
        nics = {}
        for name, run in (("cpu", cpu), ("gpu", gpu)):
            for (t, k), v in run.items():
                if t == "t0" and k.startswith("sentinel_net_rx_bytes") and 'interface="nic-' in k:
                    nics.setdefault(k.split('interface="', 1)[1].split('"', 1)[0], {})[name] = v
        want = {"nic-" + d for d in guest.PHYS_NICS.values()}
        report(set(nics) == want and all(len(v) == 2 and v["cpu"] == v["gpu"] and v["cpu"] not in ("NaN", "0")
                                         for v in nics.values()),
               "the NICs of physical and VMware machines, read on both backends: %s" %
               ", ".join("%s rx %s" % (n, v.get("gpu")) for n, v in sorted(nics.items())), repr(nics))
        wrong = [(k[1], cpu[k], gpu.get(k)) for k in sorted(cpu) if gpu.get(k) != cpu[k]]
        extra = [k[1] for k in sorted(gpu) if k not in cpu]
        report(not wrong and not extra,
               "the fleet's values are the CPU backend's, series for series: %d series over %d targets "
               "(%d differ, %d only on the GPU)" % (len(cpu), NTARGETS, len(wrong), len(extra)),
               "\n".join("%s: cpu %s, gpu %s" % w for w in wrong[:20]) + "\n" + "\n".join(extra[:10]))
        # a capped rule: which 40 of its entities have an alert is the order the
        # lanes claimed states in (not defined); how many, and the overflow, are
        capped = lambda d: {k: v for k, v in d.items() if 'alertname="EveryTaskAsleep"' not in k[1] or
                            'overflow="true"' in k[1]}                                        # noqa: E731
        count = lambda d: sorted(k[0] for k in d if 'alertname="EveryTaskAsleep"' in k[1])  # noqa: E731
        ga, ca = runs["gpu_alerts"], runs["cpu_alerts"]
        report(count(ga) == count(ca), "the capped rule has as many alerts per target on both backends (%s)" %
               ", ".join("%s %d" % (t, count(ca).count(t)) for t in sorted(set(count(ca)))),
               "gpu %s\ncpu %s" % (count(ga), count(ca)))
        ga, ca = capped(ga), capped(ca)
        kinds = {}
        for k in ca:
            n = k[1].split('alertname="', 1)[1].split('"', 1)[0]
            kinds[n] = kinds.get(n, 0) + 1
        report(ca and ga == ca and all(kinds.get(n, 0) >= NTARGETS for n in
                                       ("EveryMount", "EveryCpu", "EveryCgroup", "BigTasks", "SomeNames")),
               "per-entity alerts: the same on both backends, entity for entity: %d alerts (%s)" %
               (len(ca), ", ".join("%s %d" % kv for kv in sorted(kinds.items()))),
               "only cpu: %s\nonly gpu: %s" % (sorted(k[1] for k in set(ca) - set(ga))[:10],
                                               sorted(k[1] for k in set(ga) - set(ca))[:10]))
        over = [k for k in ca if 'alertname="EveryTaskAsleep"' in k[1] and 'overflow="true"' in k[1]]
        busy = sum(1 for i in range(NTARGETS) if i % 3)      # images 1 and 2: 300 tasks more, over the cap
        ctl = lambda c: {k for k in c if k[1] != "EveryTaskAsleep" or k[-1] == "true"}      # noqa: E731
        runs["gpu_ctl"], runs["cpu_ctl"] = ctl(runs["gpu_ctl"]), ctl(runs["cpu_ctl"])
        report(len(over) == busy and runs["gpu_ctl"] == runs["cpu_ctl"] and len(runs["cpu_ctl"]) == len(ca),
               "the cap: EveryTaskAsleep has 40 alerts and its overflow alert on the %d targets with 300 more "
               "tasks, and sentinelctl alerts lists the same %d alerts on both" % (busy, len(runs["cpu_ctl"])),
               "overflow %s\nctl only cpu %s\nctl only gpu %s" % (over, sorted(runs["cpu_ctl"] - runs["gpu_ctl"])[:10],
                                                                 sorted(runs["gpu_ctl"] - runs["cpu_ctl"])[:10]))
        report(runs["gpu_errors"] == runs["cpu_errors"],
               "read errors per target are the same: gpu %s, cpu %s" % (runs["gpu_errors"], runs["cpu_errors"]))
    finally:
        for d in procs:
            if d.poll() is None:
                d.kill()
                d.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        print("%d passed, %d failed" % (passed, failed), flush=True)


if __name__ == "__main__":
    main()
    sys.exit(1 if failed else 0)
