"""Metric fidelity: every catalog metric, as the compiled metric library
computes it from the guest's RAM (sentinel-inspect metrics), against the
guest's own /proc, read with shell builtins in the same jiffies window.

    window  guest truth, one `metrics --json` sample, guest truth again

Counters must lie between the two truths (the sample was taken between
them); gauges between the smaller and the larger.  Where /proc rounds or the
kernel computes a value at read time, the tolerance below says why:

  CPU times   /proc/stat prints centiseconds of the same nanosecond sums,
              truncated field by field: a sum of k fields is within the
              window, up to k cs above it.
  idle/iowait a NO_HZ kernel adds a sleeping CPU's current idle period only
              when /proc asks (get_cpu_idle_time_us reads the clock); from
              outside there is no clock to ask, so ours may trail /proc by
              the idle periods in progress: ours <= /proc, and behind by at
              most IDLE_LAG_S per CPU.
  load        /proc/loadavg prints avenrun rounded to 2 decimals: 0.005.
  run queue   procs_running counts the reading shell itself while it reads
              /proc; from outside it is asleep: within [0, max + CPUs].
  task times  /proc/PID/stat scales tick samples to the precise runtime
              (cputime_adjust); we read the tick samples: within 20 ms + 10%.
  task state  only compared for tasks in the same state in both truths,
              and not for PID 1 (the shell answering us).
  clock       adjtimex(2) (the sentinel-adjtimex helper): the offset it
              returns is truncated to whole ns (or us): +-1 unit; the
              maximum error grows 500 us a second, so between the truths.
  disks       /proc/diskstats prints the times in whole ms (truncated: +1
              ms) and io_ticks as jiffies_to_msecs (4 ms a jiffy at HZ=250);
              reading it with I/O in flight folds the time since the last
              update into io_ticks, which the truth after the sample bounds.
              In flight is a moment's count: compared only when neither
              truth nor the counters moved.
  the reader  sentinel-inspect inside the guest (the pmem and kcore sources:
              tests/guest/test_baremetal.py) is part of what it reads: its
              memory (its JSON's reader.max_rss_kb, plus READER_SLACK_KB for
              what the kernel allocates for it) may be missing from free and
              available memory, and its threads added to host.threads.
  conntrack   /proc/sys/net/netfilter/nf_conntrack_count is a moment's
              count (connections expire): between the two reads, which
              are made with cat (a /proc/sys file answers only a read at
              offset 0) just before and after the window.
  open files  /proc/sys/fs/file-nr (read with cat, just outside the
              window): its first field is nr_files' shared count on 6.1 and
              6.12, which lacks up to percpu_counter_batch (max(32, 2 x
              CPUs)) a CPU of the sum Sentinel reads; 7.2 prints the sum,
              cat's own files in it (within 8); the limit exactly.
  mounts      fs.fstype and fs.device as /proc/mounts' type and device
              columns (its octal escapes undone); fs.errors as
              /sys/fs/ext4/DEV/errors_count, unknown for other types.
  md arrays   disk.md_failed as the members whose dev-*/state says faulty.
  pressure    /proc/pressure prints the stall sums in whole microseconds
              (truncated: +1 us) and the averages' percent truncated to
              two decimals (+0.01).  Reading it folds the per-CPU times in,
              so the truth before the sample bounds ours from below.  A
              resource /proc/pressure lacks (irq without
              CONFIG_IRQ_TIME_ACCOUNTING) must be unknown in ours.
"""
import json
import re
import subprocess

IDLE_LAG_S = 5.0
READER_SLACK_KB = 8192
READER_FILES = 32

# each cgroup directory, three levels down; $p its path below the root
_CG_EACH = ("for d in /sys/fs/cgroup/*/ /sys/fs/cgroup/*/*/ /sys/fs/cgroup/*/*/*/; do "
            "[ -f ${d}cgroup.procs ] || continue; p=${d#/sys/fs/cgroup/}; p=${p%/}; ")

# The moving averages (the load average, updated every 5 s; pressure's
# avg10/60/300, every 2 s) are not counters: a window that spans two of
# their updates can hold a value outside both ends.  So they are read where
# the window is shortest, last before the sample and first after it, and
# the long rest of the truth (every task, every cgroup's other files) lies
# outside their window.
_TRUTH_HOST_AVGS = ("echo @loadavg; read -r l < /proc/loadavg; echo \"$l\"; "
                    "echo @pressure; for r in cpu memory io irq; do [ -r /proc/pressure/$r ] && "
                    "while read -r l; do echo \"$r $l\"; done < /proc/pressure/$r; done; ")
_TRUTH_CG_AVGS = ("echo @cgpressure; " + _CG_EACH +
                  "for r in cpu memory io irq; do [ -r $d$r.pressure ] && while read -r k a b c t; do "
                  "echo \"C $p $r.pressure.$k $a $b $c $t\"; done < $d$r.pressure; done; done; ")
_TRUTH_REST = ("echo @stat; while read -r l; do echo \"$l\"; done < /proc/stat; "
         "echo @meminfo; while read -r l; do echo \"$l\"; done < /proc/meminfo; "
         "echo @vmstat; while read -r l; do echo \"$l\"; done < /proc/vmstat; "
         "echo @clock; sentinel-adjtimex; "
         "echo @diskstats; while read -r l; do echo \"$l\"; done < /proc/diskstats; "
         "echo @blocksys; for d in /sys/class/block/*; do read -r s < $d/size; read -r r < $d/ro; "
         "p=0; [ -r $d/partition ] && p=1; echo \"${d##*/} $s $r $p\"; done; "
         "for d in /sys/block/md*/md; do [ -d $d ] || continue; s=-; g=-; n=-; read -r s < $d/array_state; "
         "[ -r $d/degraded ] && read -r g < $d/degraded; read -r n < $d/raid_disks; f=0; "
         "for r in $d/dev-*/state; do [ -r $r ] || continue; read -r v < $r; case ,$v, in *,faulty,*) f=$((f+1));; esac; done; "
         "x=${d%/md}; echo \"MD ${x##*/} $s $g $n $f\"; done; "
         "echo @netdev; while read -r l; do echo \"$l\"; done < /proc/net/dev; "
         "for d in /sys/class/net/*; do [ -d $d ] || continue; read -r f < $d/flags; c=-; read -r c < $d/carrier 2>/dev/null; "
         "s=-; read -r s < $d/speed 2>/dev/null; o=-; read -r o < $d/operstate; echo \"N ${d##*/} $f $c $s $o\"; done; "
         "for b in /sys/class/net/*/bonding; do [ -d $b ] || continue; sl=; read -r sl < $b/slaves; n=0; u=0; "
         "for x in $sl; do n=$((n+1)); m=-; read -r m < /sys/class/net/$x/bonding_slave/mii_status; "
         "[ \"$m\" = up ] && u=$((u+1)); done; x=${b%/bonding}; echo \"B ${x##*/} $n $u\"; done; "
         # other network namespaces (network(), test_kernel_model.py): each one's /proc/net/dev, through a
         # process of it, its devices named NAME@INUM as Sentinel names them
         "echo @netns; for p in $(cat /tmp/sentinel-netns.pids 2>/dev/null); do [ -r /proc/$p/net/dev ] || continue; "
         "n=$(readlink /proc/$p/ns/net); echo \"NS $n\"; while read -r l; do echo \"$l\"; done < /proc/$p/net/dev; done; "
         "echo @cgroups; " + _CG_EACH +
         "for f in memory.current memory.max memory.high pids.current pids.max cpu.max; do "
         "[ -r $d$f ] && read -r v w < $d$f && echo \"C $p $f $v $w\"; done; "
         "for f in memory.events cpu.stat; do [ -r $d$f ] && while read -r k v; do echo \"C $p $f.$k $v\"; done < $d$f; "
         "done; done; "
         "echo @fs; l=; while read -r dv mp ty op rest; do echo \"M $mp $ty ${op%%,*} $dv\"; l=\"$l $mp\"; "
         "case $ty in ext[234]) e=/sys/fs/ext4/${dv#/dev/}/errors_count; [ -r $e ] && read -r n < $e && echo \"E $mp $n\";; esac; "
         "done < /proc/mounts; stat -f -c 'F %n %t %b %f %a %c %d %S' $l 2>/dev/null; "
         "echo @kernel; "
         "for f in oops_count warn_count; do [ -r /sys/kernel/$f ] && read -r l < /sys/kernel/$f && echo \"$f $l\"; done; "
         "ce=0; ue=0; for d in /sys/devices/system/edac/mc/mc*; do [ -r $d/ce_count ] || continue; "
         "read -r c < $d/ce_count; read -r u < $d/ue_count; ce=$((ce+c)); ue=$((ue+u)); "
         "echo \"K ${d##*/mc} $c $u\"; done; "
         "echo \"edac_ce $ce\"; echo \"edac_ue $ue\"; "
         "echo @tasks; "
         "for d in /proc/[0-9]*; do read -r l < $d/stat 2>/dev/null || continue; echo \"S $l\"; "
         "while read -r k v r; do case $k in voluntary_ctxt_switches:|nonvoluntary_ctxt_switches:) "
         "echo \"X ${d#/proc/} $k $v\";; esac; done < $d/status 2>/dev/null; done; ")
# before the sample: the rest, then the averages; after it, the reverse
TRUTH_BEFORE = "jiffies; " + _TRUTH_REST + _TRUTH_CG_AVGS + _TRUTH_HOST_AVGS + "echo @end; jiffies"
TRUTH_AFTER = "jiffies; " + _TRUTH_HOST_AVGS + _TRUTH_CG_AVGS + _TRUTH_REST + "echo @end; jiffies"


def _unescape(s):
    """/proc/mounts' octal escapes (\\040 a space) undone"""
    return re.sub(r"\\([0-7]{3})", lambda x: chr(int(x.group(1), 8)), s)


def parse_truth(out):
    lines = out.splitlines()
    t = {"jiffies": int(lines[0]), "jiffies_end": int(lines[-1]), "cpu": {}, "mem": {}, "vm": {}, "tasks": {}}
    sec = ns = None
    for l in lines[1:-1]:
        if l.startswith("@"):
            sec = l[1:]
            continue
        f = l.split()
        if not f:
            continue
        if sec == "stat":
            if f[0].startswith("cpu"):
                t["cpu"][f[0]] = [int(x) for x in f[1:]]
            elif len(f) == 2:
                t[f[0]] = int(f[1])
        elif sec == "meminfo":
            t["mem"][f[0].rstrip(":")] = int(f[1])
        elif sec == "vmstat":
            t["vm"][f[0]] = int(f[1])
        elif sec == "loadavg":
            t["load"] = [float(x) for x in f[:3]]
            t["threads"] = int(f[3].split("/")[1])
        elif sec == "pressure":
            # "memory some avg10=0.00 avg60=0.00 avg300=0.00 total=1234" (total in us)
            t.setdefault("psi", {})[(f[0], f[1])] = {k: float(v) for k, v in (x.split("=") for x in f[2:])}
        elif sec == "clock" and f[0] == "status":
            # "status 8257 state 0 maxerror 2000 esterror 500 offset 123 nano 1"
            t["clock"] = {f[i]: int(f[i + 1]) for i in range(0, len(f) - 1, 2)}
        elif sec == "diskstats":
            # major minor name, then 17 fields (diskstats_show)
            t.setdefault("disks", {})[f[2]] = [int(x) for x in f[3:]]
        elif sec == "blocksys" and f[0] == "MD" and len(f) == 6:
            # "MD NAME ARRAY_STATE DEGRADED|- RAID_DISKS FAULTY" (/sys/block/mdN/md, its dev-*/state)
            t.setdefault("md", {})[f[1]] = {"state": f[2], "degraded": None if f[3] == "-" else int(f[3]),
                                            "disks": int(f[4]), "failed": int(f[5])}
        elif sec == "blocksys":
            t.setdefault("blocksys", {})[f[0]] = {"sectors": int(f[1]), "ro": int(f[2]), "part": int(f[3])}
        elif sec == "kernel" and f[0] == "K" and len(f) == 4:
            # "K N CE UE" (/sys/devices/system/edac/mc/mcN/{ce,ue}_count)
            t.setdefault("kernel", {}).setdefault("mcs", {})[f[1]] = (int(f[2]), int(f[3]))
        elif sec == "kernel":
            t.setdefault("kernel", {})[f[0]] = int(f[1])
        elif sec == "netdev" and ":" in l:
            # "  eth0: RXBYTES RXPKTS ERRS DROP FIFO FRAME COMPR MCAST TXBYTES TXPKTS ERRS DROP ..."
            name, rest = l.split(":", 1)
            t.setdefault("netdev", {})[name.strip()] = [int(x) for x in rest.split()]
        elif sec == "netns" and f[0] == "NS" and len(f) == 2:
            ns = f[1].split("[")[-1].rstrip("]")            # "net:[4026532201]"
        elif sec == "netns" and ":" in l and ns:
            name, rest = l.split(":", 1)
            t.setdefault("netdev", {})["%s@%s" % (name.strip(), ns)] = [int(x) for x in rest.split()]
        elif sec == "netdev" and f[0] == "B" and len(f) == 4:
            # "B BOND SLAVES UP" (/sys/class/net/BOND/bonding/slaves, each slave's mii_status)
            t.setdefault("bonds", {})[f[1]] = {"slaves": int(f[2]), "up": int(f[3])}
        elif sec == "netdev" and f[0] == "N" and len(f) == 6:
            t.setdefault("netsys", {})[f[1]] = {"flags": int(f[2], 16), "carrier": f[3], "speed": f[4],
                                                "operstate": f[5]}
        elif sec == "fs" and f[0] == "M" and len(f) == 5:
            # "M MOUNTPOINT TYPE ro|rw DEVICE" (/proc/mounts; its octal escapes undone)
            t.setdefault("mounts", {})[f[1]] = {"type": f[2], "ro": f[3] == "ro", "device": _unescape(f[4])}
        elif sec == "fs" and f[0] == "E" and len(f) == 3:
            # "E MOUNTPOINT ERRORS" (/sys/fs/ext4/DEV/errors_count)
            t.setdefault("fserrors", {})[f[1]] = int(f[2])
        elif sec == "fs" and f[0] == "F" and len(f) == 9:
            # "F MOUNTPOINT MAGIC BLOCKS FREE AVAIL FILES FFREE FRSIZE" (statfs, busybox stat -f)
            t.setdefault("statfs", {})[f[1]] = {"magic": int(f[2], 16), "blocks": int(f[3]), "bfree": int(f[4]),
                                                "bavail": int(f[5]), "files": int(f[6]), "ffree": int(f[7]),
                                                "bsize": int(f[8])}
        elif sec in ("cgroups", "cgpressure") and f[0] == "C" and len(f) >= 4:
            # "C PATH FILE VALUE [MORE]": memory.max "max", cpu.max "QUOTA PERIOD",
            # "cpu.pressure.some avg10=.. avg60=.. avg300=.. total=.."
            t.setdefault("cgroups", {}).setdefault(f[1], {})[f[2]] = f[3:]
        elif sec == "tasks":
            if f[0] == "S":
                rest = l[2:]
                pid = int(rest.split(" ", 1)[0])
                comm = rest[rest.index("(") + 1:rest.rindex(")")]
                g = rest[rest.rindex(")") + 2:].split()
                t["tasks"][pid] = {"comm": comm, "state": g[0], "ppid": int(g[1]), "utime": int(g[11]),
                                   "stime": int(g[12]), "threads": int(g[17]),
                                   # field 24, get_mm_rss() in pages: what task.rss reads (4 KiB pages)
                                   "rss_kb": int(g[21]) * 4, "vcsw": 0, "nvcsw": 0}
            elif f[0] == "X" and int(f[1]) in t["tasks"]:
                key = {"voluntary_ctxt_switches:": "vcsw",
                       "nonvoluntary_ctxt_switches:": "nvcsw"}[f[2]]
                t["tasks"][int(f[1])][key] = int(f[3])
    return t


# the pressure lines the catalog reads: (resource, some|full)
PSI = (("cpu", "some"), ("memory", "some"), ("memory", "full"), ("io", "some"), ("io", "full"), ("irq", "full"))

# /proc/stat cpu line fields
USER, NICE, SYSTEM, IDLE, IOWAIT, IRQ, SOFTIRQ, STEAL = range(8)


FIELDS = {"busy_time": 6, "user_time": 2, "system_time": 1, "irq_time": 2, "steal_time": 1}


def cpu_fields(v):
    """Our metric names -> centiseconds from a /proc/stat cpu line."""
    return {
        "busy_time": v[USER] + v[NICE] + v[SYSTEM] + v[IRQ] + v[SOFTIRQ] + v[STEAL],
        "user_time": v[USER] + v[NICE], "system_time": v[SYSTEM], "idle_time": v[IDLE],
        "iowait_time": v[IOWAIT], "irq_time": v[IRQ] + v[SOFTIRQ], "steal_time": v[STEAL],
    }


def sample(inspect, ram, bundle, backend="cpu"):
    cmd = inspect if isinstance(inspect, list) else [inspect]   # a list: the program and its options
    p = subprocess.run(cmd + ["-s", "ramfile:" + ram, "metrics", "--json", "--bundle", bundle,
                        "--backend", backend], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("metrics failed (%d): %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout.splitlines()[-1])


def compare(b, a, m, ncpus, release=None):
    """Every check of one window: (ok, what, detail) tuples."""
    out = []
    h = m["host"]

    def between(what, v, lo, hi, tol=0, counter=True, unit=""):
        if v is None:
            out.append((False, "%s: read error" % what, ""))
            return
        if not counter:
            lo, hi = min(lo, hi), max(lo, hi)
        ok = lo - tol <= v <= hi + tol
        out.append((ok, "%s %s%s within guest [%s, %s]%s" % (what, fmt(v), unit, fmt(lo), fmt(hi),
                                                              " +-%s" % fmt(tol) if tol else ""),
                    "ours %r, guest %r .. %r" % (v, lo, hi)))

    between("host.jiffies", h["host.jiffies"], b["jiffies_end"], a["jiffies"])
    between("host.forks", h["host.forks"], b["processes"], a["processes"])
    between("host.ctx_switches", h["host.ctx_switches"], b["ctxt"], a["ctxt"])
    reader = m.get("reader")
    between("host.threads", h["host.threads"], min(b["threads"], a["threads"]),
            max(b["threads"], a["threads"]) + (reader["threads"] if reader else 0))
    between("host.cpus", h["host.cpus"], len(b["cpu"]) - 1, len(a["cpu"]) - 1, counter=False)
    for key, name in (("MemTotal", "mem_total"), ("MemFree", "mem_free"), ("MemAvailable", "mem_available"),
                      ("SwapTotal", "swap_total"), ("SwapFree", "swap_free")):
        v = h["host." + name]
        lo, hi = min(b["mem"][key], a["mem"][key]), max(b["mem"][key], a["mem"][key])
        if reader and key in ("MemFree", "MemAvailable"):
            lo -= reader["max_rss_kb"] + READER_SLACK_KB
        between("host." + name, None if v is None else v / 1024, lo, hi, unit=" KiB")
    for key, name in (("pswpin", "swap_ins"), ("pswpout", "swap_outs"), ("pgmajfault", "major_faults"),
                      ("oom_kill", "oom_kills")):
        between("host." + name, h["host." + name], b["vm"][key], a["vm"][key])
    for i, name in enumerate(("load1", "load5", "load15")):
        between("host." + name, h["host." + name], b["load"][i], a["load"][i], tol=0.005, counter=False)
    between("host.procs_running", h["host.procs_running"], 0, max(b["procs_running"], a["procs_running"]) + ncpus,
            counter=False)
    between("host.procs_blocked", h["host.procs_blocked"], 0, max(b["procs_blocked"], a["procs_blocked"]) + ncpus,
            counter=False)
    # pressure stall information, what /proc/pressure shows
    for res, kind in PSI:
        name = "host.pressure_%s_%s" % (res, kind)
        pb, pa = b.get("psi", {}).get((res, kind)), a.get("psi", {}).get((res, kind))
        if pb is None or pa is None:
            vals = [h.get(name + s) for s in ("_time", "_avg10", "_avg60", "_avg300")]
            out.append((all(v is None for v in vals), "%s_*: unknown, as /proc/pressure/%s has no %s line" %
                        (name, res, kind), "ours %r" % vals))
            continue
        v = h.get(name + "_time")
        between(name + "_time", None if v is None else v * 1e6, pb["total"], pa["total"] + 1, unit=" us")
        for w in ("avg10", "avg60", "avg300"):
            v = h.get(name + "_" + w)
            between(name + "_" + w, None if v is None else v * 100, pb[w], pa[w], tol=0.01, counter=False,
                    unit="%")
    # the clock, as adjtimex(2) reports it
    cb, ca = b.get("clock"), a.get("clock")
    if cb is None or ca is None:
        out.append((False, "host.clock_*: no truth (the sentinel-adjtimex helper: make build/guest-helpers.cpio.gz)", ""))
    else:
        synced = [c["state"] != 5 for c in (cb, ca)]
        v = h.get("host.clock_synced")
        out.append((v is not None and v in synced, "host.clock_synced %s, adjtimex says %s" %
                    (v, " then ".join("synchronised" if s else "TIME_ERROR" for s in synced)), repr(v)))
        for name in ("maxerror", "esterror"):
            v = h.get("host.clock_" + name)
            between("host.clock_" + name, None if v is None else v * 1e6, cb[name], ca[name], counter=False,
                    unit=" us")
        unit = [1e-9 if c["nano"] else 1e-6 for c in (cb, ca)]
        v = h.get("host.clock_offset")
        between("host.clock_offset", None if v is None else v / unit[0], cb["offset"], ca["offset"] * unit[1] / unit[0],
                tol=1, counter=False, unit=" ns" if cb["nano"] else " us")
    # conntrack, as /proc/sys/net/netfilter shows it (the module loaded: else unknown)
    kb, ka = b.get("conntrack", {}), a.get("conntrack", {})
    ce, cl = h.get("host.conntrack_entries"), h.get("host.conntrack_limit")
    if "count" not in kb or "count" not in ka:
        out.append((ce is None and cl is None, "host.conntrack_*: unknown, as the guest has no nf_conntrack "
                    "(ours %r, %r)" % (ce, cl), ""))
    else:
        between("host.conntrack_entries", ce, min(kb["count"], ka["count"]), max(kb["count"], ka["count"]),
                counter=False)
        out.append((cl is not None and kb["max"] <= cl <= ka["max"] and kb["max"] == ka["max"],
                    "host.conntrack_limit %s, nf_conntrack_max %s then %s" % (cl, kb["max"], ka["max"]), ""))
    # open files, as /proc/sys/fs/file-nr shows them (read with cat, just outside the window)
    fb, fa = b.get("files", {}), a.get("files", {})
    if "nr" not in fb or "nr" not in fa:
        out.append((False, "host.file_handles*: no truth (/proc/sys/fs/file-nr)", ""))
    else:
        # file-nr's first field is nr_files' shared count up to 6.12: each
        # CPU's part of the sum it lacks is under percpu_counter_batch,
        # max(32, 2 x CPUs); 7.2 prints the sum, with cat's own files in it
        # (its program and file-nr); the reader inside the guest holds files
        # of its own
        ver = tuple(int(x) for x in release.split("-")[0].split(".")[:2]) if release else None
        batch = 8 if ver and ver >= (7, 0) else max(32, 2 * ncpus) * ncpus
        between("host.file_handles", h.get("host.file_handles"), max(0, min(fb["nr"], fa["nr"]) - batch),
                max(fb["nr"], fa["nr"]) + batch + (READER_FILES if reader else 0), counter=False)
        v = h.get("host.file_handles_max")
        out.append((v is not None and v == fb["max"] == fa["max"],
                    "host.file_handles_max %s, file-nr says %s then %s" % (v, fb["max"], fa["max"]), repr(v)))
    # disks, as /proc/diskstats and /sys/class/block show them
    compare_disks(b, a, m, out, between, release)
    # cgroups, as /sys/fs/cgroup shows them
    compare_cgroups(b, a, m, out, between)
    # network interfaces, as /proc/net/dev and /sys/class/net show them
    compare_nets(b, a, m, out, between, release)
    # filesystems, as /proc/mounts and statfs (df) show them
    compare_fs(b, a, m, out, between, release)
    # kernel health: a guest under test neither panics nor taints itself
    kb, ka = b.get("kernel", {}), a.get("kernel", {})
    between("host.tainted", h["host.tainted"], kb["tainted"], ka["tainted"], counter=False)
    for name, bit in (("oopsed", 7), ("warned", 9)):
        v = h["host." + name]
        between("host." + name, None if v is None else int(v), kb["tainted"] >> bit & 1, ka["tainted"] >> bit & 1,
                counter=False)
    out.append((h["host.panicked"] is False, "host.panicked is false on a running kernel", repr(h["host.panicked"])))
    for name, key in (("oopses", "oops_count"), ("warnings", "warn_count")):
        if key in kb and key in ka:
            between("host." + name, h["host." + name], kb[key], ka[key])
    # EDAC: summed over /sys/devices/system/edac/mc/mcN (none on a plain
    # guest: 0; test_baremetal loads a controller and injects errors)
    for name, key in (("edac_correctable_errors", "edac_ce"), ("edac_uncorrectable_errors", "edac_ue")):
        between("host." + name, h.get("host." + name), kb[key], ka[key])
    # ... and each controller's own (edac.*, node_exporter's series per controller)
    mcb, mca = kb.get("mcs", {}), ka.get("mcs", {})
    ours = {o.get("edac.controller"): o for o in m.get("memory controllers", [])}
    out.append((set(ours) == set(mcb) == set(mca), "edac: the memory controllers are /sys/devices/system/edac/mc's "
                "(%s)" % sorted(ours), "ours %s, sysfs %s" % (sorted(ours), sorted(mcb))))
    for n in sorted(set(ours) & set(mcb) & set(mca)):
        for i, name in enumerate(("correctable_errors", "uncorrectable_errors")):
            v = ours[n].get("edac." + name)
            between("edac.%s[%s]" % (name, n), None if v is None else int(v), mcb[n][i], mca[n][i])
    # CPU times, the whole host and each CPU, in centiseconds
    rows = [("cpu", "host.cpu_", h)] + [("cpu%d" % c["cpu"], "cpu.", c) for c in m["cpus"] if c["online"]]
    for line, prefix, src in rows:
        fb, fa = cpu_fields(b["cpu"][line]), cpu_fields(a["cpu"][line])
        for f in fb:
            v = src.get(prefix + f)
            if v is None:
                out.append((False, "%s%s: read error" % (prefix, f), ""))
                continue
            cs = v * 100
            label = "%s%s%s" % (prefix, f, "" if line == "cpu" else "[%s]" % line[3:])
            if f in ("idle_time", "iowait_time"):
                n = ncpus if line == "cpu" else 1
                ok = fb[f] - IDLE_LAG_S * 100 * n - 1 <= cs <= fa[f] + 1
                out.append((ok, "%s %.2f cs within guest [%d - %.0f s idle lag, %d] +-1" %
                            (label, cs, fb[f], IDLE_LAG_S * n, fa[f]), "ours %r" % cs))
            else:
                k = FIELDS[f]
                ok = fb[f] - 1 <= cs <= fa[f] + k
                out.append((ok, "%s %.2f cs within guest [%d, %d] (+%d cs: %d truncated field%s)" %
                            (label, cs, fb[f], fa[f], k, k, "" if k == 1 else "s"), "ours %r" % cs))
    for c in m["cpus"]:
        if c["online"]:
            # per-CPU context switches sum to ctxt, checked through the host value
            if c.get("cpu.ctx_switches") is None or c.get("cpu.nr_running") is None:
                out.append((False, "cpu%d: read error" % c["cpu"], ""))
    # tasks present in both truths
    ours = {int(t["task.pid"]): t for t in m["tasks"] if t.get("task.pid") is not None}
    stable = set(b["tasks"]) & set(a["tasks"])
    missing = sorted(p for p in stable if p not in ours)
    out.append((not missing and m.get("task_source") == "pid tree",
                "task list: %d tasks from the %s, every stable /proc PID present" % (len(ours), m.get("task_source")),
                "missing %s" % missing))
    bad = {k: [] for k in ("ppid", "threads", "rss", "ctx_switches", "state", "times", "comm", "kthread")}
    for pid in sorted(stable & set(ours)):
        tb, ta, o = b["tasks"][pid], a["tasks"][pid], ours[pid]
        if o["task.ppid"] != tb["ppid"]:
            bad["ppid"].append((pid, o["task.ppid"], tb["ppid"]))
        if not min(tb["threads"], ta["threads"]) <= o["task.threads"] <= max(tb["threads"], ta["threads"]):
            bad["threads"].append((pid, o["task.threads"], tb["threads"]))
        rss = o["task.rss"] / 1024
        if not min(tb["rss_kb"], ta["rss_kb"]) <= rss <= max(tb["rss_kb"], ta["rss_kb"]):
            bad["rss"].append((pid, rss, tb["rss_kb"], ta["rss_kb"]))
        cs = o["task.ctx_switches"]
        if not tb["vcsw"] + tb["nvcsw"] <= cs <= ta["vcsw"] + ta["nvcsw"]:
            bad["ctx_switches"].append((pid, cs, tb["vcsw"] + tb["nvcsw"], ta["vcsw"] + ta["nvcsw"]))
        if pid != 1 and tb["state"] == ta["state"] and o["task.state"] != tb["state"]:
            bad["state"].append((pid, o["task.state"], tb["state"]))
        name = o.get("task.comm", "")
        if not (tb["comm"] == name or tb["comm"].startswith(name + "-") or (len(name) == 15 and tb["comm"].startswith(name))):
            bad["comm"].append((pid, name, tb["comm"]))
        if o["task.kthread"] != (tb["ppid"] == 2 or pid == 2):
            bad["kthread"].append((pid, o["task.kthread"]))
        for ours_k, proc_k in (("task.kernel_time", "stime"), ("task.user_time", "utime")):
            v = o[ours_k] * 100
            lo, hi = tb[proc_k], ta[proc_k]
            tol = 2 + 0.1 * hi
            if not lo - tol <= v <= hi + tol:
                bad["times"].append((pid, ours_k, round(v, 1), lo, hi))
    for k, v in bad.items():
        out.append((not v, "tasks: %s agrees for %d tasks" % (k, len(stable & set(ours))), "differ: %s" % v[:8]))
    return out


# /proc/diskstats fields (after major, minor, name) -> (our metric, scale to
# the field's unit, truncated units to allow)
DISK_COUNTERS = (("disk.reads", 0, 1, 0), ("disk.reads_merged", 1, 1, 0), ("disk.read_bytes", 2, 1 / 512, 0),
                 ("disk.read_time", 3, 1000, 1), ("disk.writes", 4, 1, 0), ("disk.writes_merged", 5, 1, 0),
                 ("disk.written_bytes", 6, 1 / 512, 0), ("disk.write_time", 7, 1000, 1),
                 ("disk.io_time", 9, 1000, 4), ("disk.weighted_io_time", 10, 1000, 1))


def compare_disks(b, a, m, out, between, release):
    db, da = b.get("disks", {}), a.get("disks", {})
    ver = tuple(int(x) for x in release.split("-")[0].split(".")[:2]) if release else None
    if ver and ver < (5, 11):
        # before 5.11 a partition's block_device exists only while open:
        # the disk metrics say they are unavailable, naming the field
        why = m.get("unavailable", {}).get("disk.reads", "")
        out.append(("block_device" in why and not m.get("disks"),
                    "disk.*: unavailable on %s, said: %s" % (release, why), "ours %r" % m.get("disks")))
        return
    ours = {d.get("disk.name"): d for d in m.get("disks", [])}
    stable = set(db) & set(da)
    out.append((bool(stable) and stable <= set(ours) and set(ours) <= set(db) | set(da),
                "disks: %d devices, the ones /proc/diskstats lists (%s)" % (len(ours), " ".join(sorted(ours))),
                "ours %s, diskstats %s then %s" % (sorted(ours), sorted(db), sorted(da))))
    for name in sorted(stable & set(ours)):
        o, fb, fa = ours[name], db[name], da[name]
        for metric, i, scale, tol in DISK_COUNTERS:
            v = o.get(metric)
            between("%s{disk=%s}" % (metric, name), None if v is None else v * scale, fb[i], fa[i], tol=tol)
        v = o.get("disk.in_flight")
        if fb[8] == fa[8] == 0 and fb[:8] == fa[:8]:
            between("disk.in_flight{disk=%s}" % name, v, 0, 0, counter=False)
        sb, sa = b.get("blocksys", {}).get(name), a.get("blocksys", {}).get(name)
        if sb and sa:
            v = o.get("disk.size")
            between("disk.size{disk=%s}" % name, None if v is None else v / 512, sb["sectors"], sa["sectors"],
                    counter=False, unit=" sectors")
            for metric, key in (("disk.read_only", "ro"), ("disk.partition", "part")):
                v = o.get(metric)
                between("%s{disk=%s}" % (metric, name), None if v is None else int(v), sb[key], sa[key],
                        counter=False)
    # md RAID arrays, as /sys/block/mdN/md shows them; unknown on every other device
    mb, ma = b.get("md", {}), a.get("md", {})
    for name in sorted(set(ours)):
        o = ours[name]
        vals = (o.get("disk.md_active"), o.get("disk.md_degraded"), o.get("disk.md_disks"), o.get("disk.md_failed"))
        if name not in mb or name not in ma:
            if not name.startswith("md"):
                out.append((vals == (None, None, None, None), "disk.md_*{disk=%s}: unknown, not an md array" % name,
                            "ours %r" % (vals,)))
            continue
        tb, ta = mb[name], ma[name]
        active = [t["state"] not in ("inactive", "clear") for t in (tb, ta)]
        out.append((vals[0] is not None and bool(vals[0]) in active,
                    "disk.md_active{disk=%s} %s, array_state %s then %s" % (name, vals[0], tb["state"], ta["state"]),
                    ""))
        if tb["degraded"] is not None and ta["degraded"] is not None:
            between("disk.md_degraded{disk=%s}" % name, vals[1], tb["degraded"], ta["degraded"], counter=False)
        between("disk.md_disks{disk=%s}" % name, vals[2], tb["disks"], ta["disks"], counter=False)
        between("disk.md_failed{disk=%s} (dev-*/state faulty)" % name, vals[3], tb["failed"], ta["failed"],
                counter=False)


# /proc/net/dev fields -> our metric
NET_COUNTERS = (("net.rx_bytes", 0), ("net.rx_packets", 1), ("net.rx_errors", 2), ("net.rx_dropped", 3),
                ("net.tx_bytes", 8), ("net.tx_packets", 9), ("net.tx_errors", 10), ("net.tx_dropped", 11))


# drivers whose counters Sentinel does not read (by the names the guests give
# their interfaces): bonding's, sums over its slaves made when asked
# (docs/kernel-sources.md); their counters must be unknown
UNREAD_DRIVERS = ("bond",)
# interfaces whose driver reads its link's speed from the PHY when asked
# (8139cp: mii_ethtool_get_link_ksettings), so net.speed is unknown
SPEED_FROM_PHY = ("nic-8139cp",)


def compare_nets(b, a, m, out, between, release=None):
    """Each interface's counters against /proc/net/dev, up against
    /sys/class/net.  Before 5.11 the kernel keeps no module BTF, so
    virtio_net's counters (its private types) must be unknown there."""
    ver = tuple(int(x) for x in release.split("-")[0].split(".")[:2]) if release else None
    nb, na = b.get("netdev", {}), a.get("netdev", {})
    ours = {d.get("net.name"): d for d in m.get("interfaces", [])}
    stable = set(nb) & set(na)
    out.append((stable <= set(ours) and set(ours) <= set(nb) | set(na),
                "interfaces: %d, the ones /proc/net/dev lists (%s)" % (len(ours), " ".join(sorted(ours))),
                "ours %s, /proc/net/dev %s then %s" % (sorted(ours), sorted(nb), sorted(na))))
    other = sorted(n for n in stable if "@" in n)
    if other:                        # the guest made a namespace (test_kernel_model.py: network())
        out.append((set(other) <= set(ours),
                    "interfaces of another network namespace, as its own /proc/net/dev lists them: %s" %
                    " ".join(other), "ours %s" % sorted(ours)))
    wrong = {n: o.get("net.init_namespace") for n, o in ours.items() if o.get("net.init_namespace") != ("@" not in n)}
    out.append((not wrong, "net.init_namespace: true for the %d of the initial namespace, false for the %d of "
                "others" % (sum("@" not in n for n in ours), sum("@" in n for n in ours)), repr(wrong)))
    for name in sorted(stable & set(ours)):
        o = ours[name]
        if name.startswith(UNREAD_DRIVERS):
            vals = [o.get(metric) for metric, _ in NET_COUNTERS]
            out.append((all(v is None for v in vals), "net.*{interface=%s}: unknown (its driver keeps its "
                        "counters where Sentinel does not read them)" % name, repr(vals)))
            continue
        if ver and ver < (6, 7) and name.startswith("vrf"):
            vals = [o.get(metric) for metric, _ in NET_COUNTERS]
            out.append((all(v is None for v in vals), "net.*{interface=%s}: unknown on %s (a VRF's own stats "
                        "callback before 6.7)" % (name, release), repr(vals)))
            continue
        if ver and ver < (5, 11) and name.startswith("veth"):
            vals = [o.get(metric) for metric, _ in NET_COUNTERS]
            out.append((all(v is None for v in vals), "net.*{interface=%s}: unknown on %s (veth's types: no "
                        "module BTF before 5.11)" % (name, release), repr(vals)))
            continue
        if ver and ver < (5, 11) and name.startswith(("eth", "tunl")):
            # virtio_net's types: no module BTF before 5.11; tunl0's
            # callback, a kernel function: the copy of 5.10's kallsyms the
            # test gives holds data symbols alone
            vals = [o.get(metric) for metric, _ in NET_COUNTERS]
            out.append((all(v is None for v in vals), "net.*{interface=%s}: unknown on %s (%s)" %
                        (name, release, "virtio_net's types: no module BTF before 5.11" if name.startswith("eth")
                         else "its stats callback: no functions in the kallsyms given"), repr(vals)))
            continue
        for metric, i in NET_COUNTERS:
            between("%s{interface=%s}" % (metric, name), o.get(metric), nb[name][i], na[name][i])
        sb, sa = b.get("netsys", {}).get(name), a.get("netsys", {}).get(name)
        if sb and sa:
            up = [s["flags"] & 1 == 1 and s["carrier"] == "1" for s in (sb, sa)]
            v = o.get("net.up")
            out.append((v is not None and v in up, "net.up{interface=%s} %s, /sys/class/net says %s" %
                        (name, v, " then ".join("up" if u else "down" for u in up)), repr(v)))
            # operstate's names (net/core/net-sysfs.c operstates[]) by IF_OPER_* value
            names = ["unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up"]
            v = o.get("net.operstate")
            st = [s["operstate"] for s in (sb, sa)]
            out.append((v is not None and 0 <= v < len(names) and names[int(v)] in st,
                        "net.operstate{interface=%s} %s, /sys/class/net says %s" % (name, v, " then ".join(st)),
                        repr(v)))
            # speed in Mb/s, -1 unknown, unreadable for loopback: ours in bytes/s, or unknown
            sp = sb["speed"] if sb["speed"] == sa["speed"] else None
            want = int(sp) * 125000 if sp and sp.lstrip("-").isdigit() and int(sp) > 0 else None
            if name in SPEED_FROM_PHY:       # its driver asks the PHY (mii): nothing in RAM to read
                want = None
            v = o.get("net.speed")
            out.append((sp is not None and v == want, "net.speed{interface=%s} %s, /sys/class/net says %s Mb/s" %
                        (name, v, sp), "ours %r, want %r (speed file %r then %r)" % (v, want, sb["speed"], sa["speed"])))
    # bonds, as /sys/class/net/BOND/bonding shows them; unknown on every other interface
    bb, ba = b.get("bonds", {}), a.get("bonds", {})
    for name in sorted(ours):
        o = ours[name]
        vals = (o.get("net.bond_slaves"), o.get("net.bond_active"))
        if ver and ver < (5, 11) and name in bb:
            out.append((vals == (None, None), "net.bond_*{interface=%s}: unknown on %s (bonding's types: no "
                        "module BTF before 5.11)" % (name, release), "ours %r" % (vals,)))
            continue
        if name not in bb or name not in ba:
            if name not in bb and name not in ba:
                out.append((vals == (None, None), "net.bond_*{interface=%s}: unknown, not a bond" % name,
                            "ours %r" % (vals,)))
            continue
        between("net.bond_slaves{interface=%s}" % name, vals[0], bb[name]["slaves"], ba[name]["slaves"],
                counter=False)
        between("net.bond_active{interface=%s}" % name, vals[1], bb[name]["up"], ba[name]["up"], counter=False)


# the filesystems fs.* lists: ext2/3/4, tmpfs (and devtmpfs, rootfs on tmpfs), xfs, btrfs
FS_MAGICS = {0xEF53: "ext4", 0x01021994: "tmpfs", 0x58465342: "xfs", 0x9123683E: "btrfs"}
FS_READ = ("ext4", "tmpfs", "xfs", "btrfs")     # whose sizes are read


def compare_fs(b, a, m, out, between, release=None):
    """Each mount of a listed filesystem type against statfs (busybox
    stat -f, what df prints) and /proc/mounts' ro: sizes in bytes of the
    fundamental block size, free and available space, inodes (btrfs
    reports none: 0).  ext4, xfs and btrfs are modules in Debian's kernels: before 5.11 they keep no module BTF, so
    their sizes must be unknown there."""
    ver = tuple(int(x) for x in release.split("-")[0].split(".")[:2]) if release else None
    sb_, sa_ = b.get("statfs", {}), a.get("statfs", {})
    mb, ma = b.get("mounts", {}), a.get("mounts", {})
    want = {mp for mp in set(sb_) & set(sa_) if sb_[mp]["magic"] in FS_MAGICS and mp in mb and mp in ma}
    maybe = {mp for mp, s in list(sb_.items()) + list(sa_.items()) if s["magic"] in FS_MAGICS}
    ours = {o.get("fs.mountpoint"): o for o in m.get("filesystems", [])}
    out.append((want <= set(ours) and set(ours) <= maybe,
                "filesystems: %d mounts, the ones /proc/mounts lists of ext4, tmpfs, xfs and btrfs (%s)" %
                (len(ours), " ".join(sorted(ours))),
                "ours %s, the guest's %s" % (sorted(ours), sorted(want))))
    for mp in sorted(want & set(ours)):
        o, fb, fa = ours[mp], sb_[mp], sa_[mp]
        kind = FS_MAGICS[fb["magic"]]
        old_ext4 = kind in ("ext4", "xfs", "btrfs") and ver and ver < (5, 11)
        if kind not in FS_READ or old_ext4:
            vals = [o.get(k) for k in ("fs.size_bytes", "fs.free_bytes", "fs.avail_bytes", "fs.errors")]
            out.append((all(v is None for v in vals), "fs.*{mountpoint=%s}: unknown for %s%s" %
                        (mp, kind, " on %s (no module BTF before 5.11)" % release if old_ext4 else ""), repr(vals)))
        else:
            for metric, key, bytes_ in (("fs.size_bytes", "blocks", True), ("fs.free_bytes", "bfree", True),
                                        ("fs.avail_bytes", "bavail", True), ("fs.files", "files", False),
                                        ("fs.files_free", "ffree", False)):
                lo, hi = fb[key] * (fb["bsize"] if bytes_ else 1), fa[key] * (fa["bsize"] if bytes_ else 1)
                between("%s{mountpoint=%s} (%s)" % (metric, mp, kind), o.get(metric), lo, hi, counter=False)
        v = o.get("fs.readonly")
        ro = [mb[mp]["ro"], ma[mp]["ro"]]
        out.append((v is not None and v in ro, "fs.readonly{mountpoint=%s} %s, /proc/mounts says %s" %
                    (mp, v, " then ".join("ro" if r else "rw" for r in ro)), repr(v)))
        # its labels: /proc/mounts' type and device (a mount point mounted
        # over holds the newer mount's, in both)
        for metric, key in (("fs.fstype", "type"), ("fs.device", "device")):
            v = o.get(metric)
            out.append((v == mb[mp][key] == ma[mp][key], "%s{mountpoint=%s} %r, /proc/mounts says %r" %
                        (metric, mp, v, mb[mp][key]), "ours %r, /proc/mounts %r then %r" %
                        (v, mb[mp][key], ma[mp][key])))
        # errors ext4 recorded, as sysfs shows them; unknown for filesystems that count none
        eb, ea = b.get("fserrors", {}).get(mp), a.get("fserrors", {}).get(mp)
        v = o.get("fs.errors")
        if kind == "ext4" and not old_ext4 and eb is not None and ea is not None:
            between("fs.errors{mountpoint=%s} (/sys/fs/ext4 errors_count)" % mp, v, eb, ea, counter=False)
        elif kind != "ext4":
            out.append((v is None, "fs.errors{mountpoint=%s}: unknown for %s" % (mp, kind), repr(v)))


def _cg_num(v, scale=1.0):
    """A cgroup file's value: "max" is +Inf."""
    return float("inf") if v == "max" else int(v) * scale


def compare_cgroups(b, a, m, out, between):
    """Each cgroup in both truths against ours: memory, pids, CPU and its
    throttling, pressure.  cpu.stat's usage is flushed by the truth's own
    read, so ours (the flushed sum plus the cgroup's own unflushed time)
    lies between the two reads."""
    cb, ca = b.get("cgroups", {}), a.get("cgroups", {})
    ours = {c.get("cgroup.name"): c for c in m.get("cgroups", [])}
    stable = set(cb) & set(ca)
    out.append((stable <= set(ours) and set(ours) <= set(cb) | set(ca),
                "cgroups: %d, the ones /sys/fs/cgroup lists (%s)" % (len(ours), " ".join(sorted(ours)) or "none"),
                "ours %s, /sys/fs/cgroup %s then %s" % (sorted(ours), sorted(cb), sorted(ca))))
    inf = float("inf")
    for p in sorted(stable & set(ours)):
        # JSON has no infinity: sentinel-inspect writes a limit of "max" as "+Inf"
        o = {k: inf if v == "+Inf" else v for k, v in ours[p].items()}
        fb, fa = cb[p], ca[p]

        def gauge(metric, key, scale=1.0, tol=0):
            if key not in fb or key not in fa:
                v = o.get(metric)
                out.append((v is None, "%s{cgroup=%s}: unknown, as it has no %s" % (metric, p, key), repr(v)))
                return
            lo, hi = _cg_num(fb[key][0], scale), _cg_num(fa[key][0], scale)
            v = o.get(metric)
            if v is None:
                out.append((False, "%s{cgroup=%s}: read error" % (metric, p), ""))
            elif lo == hi == inf:
                out.append((v == inf, "%s{cgroup=%s} %s, /sys/fs/cgroup says max" % (metric, p, v), repr(v)))
            else:
                between("%s{cgroup=%s}" % (metric, p), v, min(lo, hi), max(lo, hi), tol=tol)

        def counter(metric, key, scale=1.0, tol=0):
            if key not in fb or key not in fa:
                v = o.get(metric)
                out.append((v is None, "%s{cgroup=%s}: unknown, as it has no %s" % (metric, p, key), repr(v)))
                return
            v = o.get(metric)
            between("%s{cgroup=%s}" % (metric, p), None if v is None else v / scale, int(fb[key][0]),
                    int(fa[key][0]), tol=tol)
        gauge("cgroup.memory_current", "memory.current")
        gauge("cgroup.memory_max", "memory.max")
        gauge("cgroup.memory_high", "memory.high")
        counter("cgroup.memory_max_events", "memory.events.max")
        counter("cgroup.ooms", "memory.events.oom")
        counter("cgroup.oom_kills", "memory.events.oom_kill")
        gauge("cgroup.pids_current", "pids.current")
        gauge("cgroup.pids_max", "pids.max")
        counter("cgroup.cpu_usage_time", "cpu.stat.usage_usec", 1e-6, tol=1)
        counter("cgroup.cpu_periods", "cpu.stat.nr_periods")
        counter("cgroup.cpu_throttled_periods", "cpu.stat.nr_throttled")
        counter("cgroup.cpu_throttled_time", "cpu.stat.throttled_usec", 1e-6, tol=1)
        if "cpu.max" in fb and "cpu.max" in fa:
            q = [inf if x[0] == "max" else int(x[0]) / int(x[1]) for x in (fb["cpu.max"], fa["cpu.max"])]
            v = o.get("cgroup.cpu_max")
            out.append((v is not None and (v == q[0] or v == q[1] or (v != inf and abs(v - q[0]) < 1e-9)),
                        "cgroup.cpu_max{cgroup=%s} %s, cpu.max says %s" % (p, v, " ".join(fb["cpu.max"])), repr(v)))
        for res, kind in (("cpu", "some"), ("cpu", "full"), ("memory", "some"), ("memory", "full"),
                          ("io", "some"), ("io", "full"), ("irq", "full")):
                key = "%s.pressure.%s" % (res, kind)
                name = "cgroup.pressure_%s_%s" % (res, kind)
                if key not in fb or key not in fa:
                    # a kernel without IRQ time accounting has no irq.pressure: ours unknown
                    if res == "irq" and "cpu.pressure.some" in fb:
                        vals = [o.get(name + s) for s in ("_time", "_avg10", "_avg60", "_avg300")]
                        out.append((all(v is None for v in vals), "%s_*{cgroup=%s}: unknown, as it has no "
                                    "irq.pressure" % (name, p), "ours %r" % vals))
                    continue
                pb = dict(x.split("=") for x in fb[key])
                pa = dict(x.split("=") for x in fa[key])
                v = o.get(name + "_time")
                between("%s_time{cgroup=%s}" % (name, p), None if v is None else v * 1e6, int(pb["total"]),
                        int(pa["total"]) + 1, unit=" us")
                for w in ("avg10", "avg60", "avg300"):
                    v = o.get(name + "_" + w)
                    between("%s_%s{cgroup=%s}" % (name, w, p), None if v is None else v * 100, float(pb[w]),
                            float(pa[w]), tol=0.01, counter=False, unit="%")


def fmt(x):
    return ("%.3f" % x).rstrip("0").rstrip(".") if isinstance(x, float) else str(x)


def window(g, name, inspect, bundle, report, attempts=5, backend="cpu", select=None, sampler=None):
    """One metrics window; retried (as the kernel model's) while a gauge
    moved inside it and is out of it.  select: compare only the checks whose
    description starts with it (a load that moves everything else).
    sampler: a function giving the sample (default: sentinel-inspect on
    this machine reading the guest's RAM file)."""
    ncpus = g.cpus
    # /proc/sys files answer only a read at offset 0 (a byte-at-a-time
    # `read` gets one digit), so the taint mask is read with cat, outside
    # the window: a fork inside it moves the free-memory counts.  It only
    # changes when the test taints the kernel, before a window.
    tainted = int(g.check("cat /proc/sys/kernel/tainted"))

    def conntrack():
        # the same for conntrack's count and limit, and the open files: with
        # cat, just outside the window
        v = g.check("cat /proc/sys/net/netfilter/nf_conntrack_count /proc/sys/net/netfilter/nf_conntrack_max "
                    "2>/dev/null; true").split()
        return {"count": int(v[0]), "max": int(v[1])} if len(v) == 2 else {}

    def files():
        v = g.check("cat /proc/sys/fs/file-nr").split()
        return {"nr": int(v[0]), "max": int(v[2])} if len(v) == 3 else {}
    for attempt in range(attempts):
        ct, fl = conntrack(), files()
        b = parse_truth(g.check(TRUTH_BEFORE, timeout=120))
        b.setdefault("kernel", {})["tainted"] = tainted
        b["conntrack"], b["files"] = ct, fl
        try:
            m = sampler() if sampler else sample(inspect, g.ram, bundle, backend)
        except RuntimeError as e:
            report(False, "%s: metrics" % name, str(e))
            return
        a = parse_truth(g.check(TRUTH_AFTER, timeout=120))
        a.setdefault("kernel", {})["tainted"] = tainted
        a["conntrack"], a["files"] = conntrack(), files()
        results = compare(b, a, m, ncpus, g.release)
        if select:
            results = [r for r in results if r[1].startswith(select)]
        failed = [r for r in results if not r[0]]
        if failed and attempt < attempts - 1:
            continue
        for ok, what, detail in results:
            report(ok, "%s: %s" % (name, what), detail)
        return


if __name__ == "__main__":
    # One guest by hand:  python3 tests/guest/metrics_check.py debian-6.12 [--la57] [--nokaslr] [--load]
    import os
    import sys
    import time
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import guest
    args = sys.argv[1:]
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    inspect = os.environ.get("INSPECT", os.path.join(top, "build", "sentinel-inspect"))
    bundle = os.environ.get("BUNDLE", os.path.join(top, "build", "metrics.bundle"))
    ks = guest.kernels()

    def report(ok, what, detail=""):
        print("%s %s" % ("PASS" if ok else "FAIL", what))
        if not ok and detail:
            print("     " + str(detail)[:400])
    with guest.Guest(ks[args[0]], kaslr="--nokaslr" not in args, la57="--la57" in args, name="mc") as g:
        if "--load" in args:
            g.check("(while :; do :; done) & (while :; do :; done) &")
            time.sleep(1.5)
        window(g, args[0], inspect, bundle, report, attempts=1)
