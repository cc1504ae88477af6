#!/usr/bin/env python3
"""Start and reload of a large rule set: sentineld from exec to its first
tick with empty caches, again with nothing changed since, and a reload that
changes one rule's threshold; each build given in the same run, against the
same guest (issue 36's "start in seconds").

    python3 bench/startup.py BACKEND N BUILD-DIR[:NAME] [BUILD-DIR:NAME ...]

BACKEND is cuda or cpu; N rules come from bench/gen_rules.sh.  Each build
gets a cache directory of its own, empty at first: `[engine] cache` where
the build knows it (BENCH_CACHE_KEY=0 for one that does not), and
CUDA_CACHE_PATH in the environment either way, so the driver's cache is
empty for the first start too.  The tick is 100 ms; after each start the
daemon runs SECONDS (5) and its tick time is read from status.  Prints a
table; results go in docs/benchmarks.md by hand.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
import guest  # noqa: E402

BACKEND = sys.argv[1]
N = int(sys.argv[2])
BUILDS = [(b.split(":")[0], b.split(":")[1] if ":" in b else os.path.basename(b.rstrip("/"))) for b in sys.argv[3:]]
SECS = float(os.environ.get("BENCH_SECONDS", "5"))


def ctl(build, sock, cmd, timeout=600):
    p = subprocess.run([os.path.join(build, "sentinelctl"), "-s", sock, "--json", cmd], capture_output=True,
                       text=True, timeout=timeout)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": (p.stdout + p.stderr).strip()}


def status(build, sock):
    r = ctl(build, sock, "status", 30)
    return r.get("status", {})


def first_tick(build, sock, p, t0, limit=900):
    """Seconds from t0 until status reports a tick (None: the daemon died or never ticked)."""
    while time.time() - t0 < limit and p.poll() is None:
        if os.path.exists(sock) and status(build, sock).get("ticks", 0) >= 1:
            return time.time() - t0
        time.sleep(0.05)
    return None


def start(build, tmp, ram, rules, cache, knows_cache):
    sock = os.path.join(tmp, "ctl.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    conf = os.path.join(tmp, "b.conf")
    with open(conf, "w") as f:
        f.write("[target]\nsource = ramfile:%s\n[rules]\ndirectory = %s\n[engine]\nbackend = %s\ntick = 100ms\n"
                "tasks = 1024\nstate = none\n%s[notify]\nlog = no\n[control]\nsocket = %s\n" %
                (ram, rules, BACKEND, "cache = %s\n" % cache if knows_cache else "", sock))
    log = open(os.path.join(tmp, "d.log"), "a")
    env = dict(os.environ, CUDA_CACHE_PATH=os.path.join(cache, "cuda"), CUDA_CACHE_MAXSIZE="4294967296",
               SENTINEL_GPU_TRACE="1")
    t0 = time.time()
    p = subprocess.Popen([os.path.join(build, "sentineld"), "-c", conf], stdout=log, stderr=subprocess.STDOUT, env=env)
    return p, sock, first_tick(build, sock, p, t0)


def stop(p):
    p.terminate()
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def change_threshold(rules):
    """Rule0's threshold, up by one percent: a rule changed, nothing else"""
    path = os.path.join(rules, "gen.yaml")
    with open(path) as f:
        text = f.read()
    i = text.index("alert: Rule0\n")
    j = text.index("expr:", i)
    k = text.index("%", j)
    num = text.rindex(" ", j, k) + 1
    new = str(int(text[num:k]) + 1)
    with open(path, "w") as f:
        f.write(text[:num] + new + text[k:])


def bench(build, name, ram):
    tmp = tempfile.mkdtemp(prefix="sentinel-startup-")
    rules, cache = os.path.join(tmp, "rules"), os.path.join(tmp, "cache")
    os.makedirs(rules)
    os.makedirs(os.path.join(cache, "cuda"))
    subprocess.run(["sh", os.path.join(TOP, "bench", "gen_rules.sh"), str(N), tmp], check=True,
                   stdout=subprocess.DEVNULL)
    shutil.move(os.path.join(tmp, "sentinel.yaml"), os.path.join(rules, "gen.yaml"))
    knows = os.environ.get("BENCH_CACHE_KEY_" + name, "1") != "0"
    row = {"build": name}
    for what in ("cold", "warm"):
        if what == "warm" and os.environ.get("BENCH_CORRUPT"):
            # every cached cubin damaged: each must be refused (a log line),
            # linked again, and the rules run all the same
            for d, _, fs in os.walk(os.path.join(cache, "cubin")):
                for f in fs:
                    with open(os.path.join(d, f), "r+b") as x:
                        x.seek(os.path.getsize(os.path.join(d, f)) // 2)
                        x.write(b"\xde\xad" * 256)
            print("%s: every cached cubin damaged before the warm start" % name, flush=True)
        p, sock, t = start(build, tmp, ram, rules, cache, knows)
        row[what] = t
        if t is None:
            print("%s: %s start: no tick (log: %s)" % (name, what, os.path.join(tmp, "d.log")), flush=True)
            stop(p)
            return row
        time.sleep(SECS)
        s = status(build, sock)
        row[what + "_tick_us"] = s.get("last_tick_us")
        row["late"] = row.get("late", 0) + s.get("late_ticks", 0)
        print("%s: %s start %.2f s to the first tick; tick %s us, %s late of %s" %
              (name, what, t, s.get("last_tick_us"), s.get("late_ticks"), s.get("ticks")), flush=True)
        if what == "warm":
            s0 = status(build, sock)
            change_threshold(rules)
            t0 = time.time()
            r = ctl(build, sock, "reload")
            row["reload"] = time.time() - t0 if r.get("ok") else None
            time.sleep(SECS)
            s1 = status(build, sock)
            row["reload_late"] = s1.get("late_ticks", 0) - s0.get("late_ticks", 0)
            row["after_tick_us"] = s1.get("last_tick_us")
            if os.environ.get("BENCH_TRACE"):
                with open(os.path.join(tmp, "d.log")) as f:
                    tr = [l.strip() for l in f if l.startswith("gpu-trace")]
                print("%s: the reload's last GPU steps:\n  %s" % (name, "\n  ".join(tr[-int(os.environ["BENCH_TRACE"]):])))
            print("%s: reload of one changed threshold: %s (%s); then %s ticks, %s late, tick %s us" %
                  (name, "%.2f s" % row["reload"] if row["reload"] is not None else "failed",
                   r.get("message", r.get("error", r)), s1.get("ticks", 0) - s0.get("ticks", 0), row["reload_late"],
                   s1.get("last_tick_us")), flush=True)
        stop(p)
    parts = []
    for sub in sorted(os.listdir(cache)):
        fs = [os.path.join(d, f) for d, _, names in os.walk(os.path.join(cache, sub)) for f in names]
        parts.append("%s %d files %.1f MiB" % (sub, len(fs), sum(os.path.getsize(f) for f in fs) / 1048576))
    row["cache"] = ", ".join(parts)
    with open(os.path.join(tmp, "d.log")) as f:
        for line in f:
            if "cache" in line and "gpu-trace" not in line:
                print("%s: sentineld: %s" % (name, line.strip()[:300]), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return row


def main():
    ks = guest.kernels()
    rows = []
    with guest.Guest(guest.main_kernel(ks), kaslr=True, name="startup") as g:
        for build, name in BUILDS:
            rows.append(bench(os.path.abspath(build), name, g.ram))
    fmt = lambda v, u: "-" if v is None else ("%.2f %s" % (v, u))
    hdr = ("build", "start, caches empty", "start, nothing changed", "reload, one threshold", "tick before",
           "tick after", "late", "cache")
    out = [hdr] + [(r["build"], fmt(r.get("cold"), "s"), fmt(r.get("warm"), "s"), fmt(r.get("reload"), "s"),
                    "%s us" % r.get("warm_tick_us"), "%s us" % r.get("after_tick_us"),
                    str(r.get("late", 0) + (r.get("reload_late") or 0)), r.get("cache", "")) for r in rows]
    w = [max(len(x[i]) for x in out) for i in range(len(hdr))]
    print("\n%d rules, backend %s, tick 100 ms" % (N, BACKEND))
    for r in out:
        print("  ".join(x.ljust(w[i]) for i, x in enumerate(r)))
    ok = all(r.get("warm") is not None and r.get("reload") is not None for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
