#!/usr/bin/env python3
"""Fidelity against node_exporter: on a real Debian 12 system (tests/debian),
every Sentinel metric that has a node_exporter equivalent, sampled both ways
at the same moment, must agree within the tolerance stated for it.

    python3 tests/debian/fidelity.py BUILD-DIR [BUNDLE]

(BUILD-DIR holds sentinel-inspect, build/san's in make check; BUNDLE, the
metric library compiled by rulec --all-metrics, default build/metrics.bundle)

Each comparison brackets node_exporter's scrape between two readings of
Sentinel's (sentinel-inspect metrics, the detector's own compiled metric
library): a counter must lie between them (less what /proc's rounding
takes off), a gauge between them give or take its tolerance.  Twice: with
the system idle, and under stress-ng load (CPU, memory, disk I/O) with
traffic on every NIC.  The table (MAP) is docs/metrics.md's "Against
node_exporter" section, and each row says why its tolerance is what it is.

The guest is Debian's own: its 6.1 kernel, systemd, and Debian's
prometheus-node-exporter 1.5.0 with the package's defaults (netdev leaves
out lo; diskstats leaves out partitions, loop and ram devices; filesystem
leaves out /run, /dev and the pseudo filesystems).
"""
import json
import os
import re
import subprocess
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
sys.path.insert(0, os.path.join(TOP, "tests", "debian"))
import debguest  # noqa: E402
import guest  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--table" else "build")
RES = guest.Results()


report = guest.reporter(RES, "fidelity")

# Each row: (Sentinel metric, its family, node_exporter metric, label
# filters {label: regex}, kind, tolerance, why).  Families: host (one
# value), cpu, disk, net, fs (one value per entity, matched on node_exporter's
# cpu, device, device, mountpoint label).  Kinds:
#   counter (lo, hi): Sentinel-before - lo <= node_exporter <= Sentinel-after + hi
#   gauge t:          min(before, after) - t <= node_exporter <= max(...) + t
#   exact:            before == node_exporter == after
# A tolerance may be a string: an expression of ncpus.  node_exporter's
# series with the same entity are summed (CPU modes).
CS = 0.01          # /proc/stat prints centiseconds: each field truncated by up to 10 ms
IDLE_LAG = 5.0     # NO_HZ: /proc/stat adds the idle period in progress; RAM has it at its end
MAP = [
    # /proc/stat, per CPU (node_exporter collector/cpu_linux.go)
    ("cpu.busy_time", "cpu", "node_cpu_seconds_total", {"mode": "user|nice|system|irq|softirq|steal"},
     "counter", (6 * CS, 0), "six fields, each truncated to 10 ms"),
    ("cpu.user_time", "cpu", "node_cpu_seconds_total", {"mode": "user|nice"}, "counter", (2 * CS, 0),
     "user and nice (guest time inside both), truncated"),
    ("cpu.system_time", "cpu", "node_cpu_seconds_total", {"mode": "system"}, "counter", (CS, 0), "truncated"),
    ("cpu.idle_time", "cpu", "node_cpu_seconds_total", {"mode": "idle"}, "counter", (CS, IDLE_LAG),
     "/proc/stat adds the idle period in progress (NO_HZ); RAM holds it once it ends"),
    ("cpu.iowait_time", "cpu", "node_cpu_seconds_total", {"mode": "iowait"}, "counter", (CS, IDLE_LAG),
     "as idle"),
    ("cpu.irq_time", "cpu", "node_cpu_seconds_total", {"mode": "irq|softirq"}, "counter", (2 * CS, 0), "truncated"),
    ("cpu.steal_time", "cpu", "node_cpu_seconds_total", {"mode": "steal"}, "counter", (CS, 0), "truncated"),
    ("host.cpus", "host", "node_cpu_seconds_total", {"mode": "idle"}, "count", None,
     "one idle series per CPU /proc/stat lists"),
    ("host.cpu_busy_time", "host", "node_cpu_seconds_total", {"mode": "user|nice|system|irq|softirq|steal"},
     "counter", ("6*0.01*ncpus", 0), "summed over CPUs, each field truncated"),
    ("host.cpu_user_time", "host", "node_cpu_seconds_total", {"mode": "user|nice"}, "counter",
     ("2*0.01*ncpus", 0), "summed over CPUs, truncated"),
    ("host.cpu_system_time", "host", "node_cpu_seconds_total", {"mode": "system"}, "counter",
     ("0.01*ncpus", 0), "summed over CPUs, truncated"),
    ("host.cpu_idle_time", "host", "node_cpu_seconds_total", {"mode": "idle"}, "counter",
     ("0.01*ncpus", "5.0*ncpus"), "as per CPU"),
    ("host.cpu_iowait_time", "host", "node_cpu_seconds_total", {"mode": "iowait"}, "counter",
     ("0.01*ncpus", "5.0*ncpus"), "as per CPU"),
    ("host.cpu_irq_time", "host", "node_cpu_seconds_total", {"mode": "irq|softirq"}, "counter",
     ("2*0.01*ncpus", 0), "summed over CPUs, truncated"),
    ("host.cpu_steal_time", "host", "node_cpu_seconds_total", {"mode": "steal"}, "counter",
     ("0.01*ncpus", 0), "summed over CPUs, truncated"),
    # /proc/stat's totals (stat_linux.go)
    ("host.ctx_switches", "host", "node_context_switches_total", {}, "counter", (0, 0), "nr_context_switches()"),
    ("host.forks", "host", "node_forks_total", {}, "counter", (0, 0), "total_forks"),
    # (a run under load saw Sentinel 3 and 3 around node_exporter's 6)
    ("host.procs_running", "host", "node_procs_running", {}, "gauge", "ncpus + 3",
     "a moment's value: node_exporter's own threads run while it reads (GOMAXPROCS = ncpus, and the Go "
     "runtime's), and under load each of the three stressors can be runnable at one read and not the next"),
    ("host.procs_blocked", "host", "node_procs_blocked", {}, "gauge", "ncpus", "a moment's value"),
    # /proc/loadavg
    # /proc/loadavg rounds by adding FIXED_1/200, which is 10/2048 in integers (not 0.005), then truncates
    # to 2 decimals: the printed value is off by up to 0.01 - 10/2048 (a CI run: 0.18505859375 printed 0.18)
    ("host.load1", "host", "node_load1", {}, "gauge", "0.01 - 10/2048",
     "avenrun[0], printed to 2 decimals after adding 10/2048"),
    ("host.load5", "host", "node_load5", {}, "gauge", "0.01 - 10/2048", "avenrun[1], as load1"),
    ("host.load15", "host", "node_load15", {}, "gauge", "0.01 - 10/2048", "avenrun[2], as load1"),
    # /proc/meminfo (meminfo_linux.go: kB * 1024)
    ("host.mem_total", "host", "node_memory_MemTotal_bytes", {}, "exact", None, "totalram_pages"),
    ("host.mem_free", "host", "node_memory_MemFree_bytes", {}, "gauge", 32 << 20,
     "the same global counter; node_exporter's own allocations while it reads, the page cache the disk "
     "stressor moves"),
    ("host.mem_available", "host", "node_memory_MemAvailable_bytes", {}, "gauge", 32 << 20,
     "the kernel's si_mem_available() against Sentinel's from the same counters, as MemFree"),
    ("host.swap_total", "host", "node_memory_SwapTotal_bytes", {}, "exact", None, "total_swap_pages"),
    ("host.swap_free", "host", "node_memory_SwapFree_bytes", {}, "gauge", 0, "nr_swap_pages"),
    # /proc/vmstat
    ("host.swap_ins", "host", "node_vmstat_pswpin", {}, "counter", (0, 0), "per-CPU events, summed"),
    ("host.swap_outs", "host", "node_vmstat_pswpout", {}, "counter", (0, 0), "per-CPU events, summed"),
    ("host.major_faults", "host", "node_vmstat_pgmajfault", {}, "counter", (0, 0), "per-CPU events, summed"),
    ("host.oom_kills", "host", "node_vmstat_oom_kill", {}, "counter", (0, 0), "per-CPU events, summed"),
    # /proc/pressure (pressure_linux.go: total= microseconds)
    ("host.pressure_cpu_some_time", "host", "node_pressure_cpu_waiting_seconds_total", {}, "counter",
     (1e-6, 1e-6), "psi_system.total; the read folds per-CPU time in first"),
    ("host.pressure_memory_some_time", "host", "node_pressure_memory_waiting_seconds_total", {}, "counter",
     (1e-6, 1e-6), "as cpu"),
    ("host.pressure_memory_full_time", "host", "node_pressure_memory_stalled_seconds_total", {}, "counter",
     (1e-6, 1e-6), "as cpu"),
    ("host.pressure_io_some_time", "host", "node_pressure_io_waiting_seconds_total", {}, "counter",
     (1e-6, 1e-6), "as cpu"),
    ("host.pressure_io_full_time", "host", "node_pressure_io_stalled_seconds_total", {}, "counter",
     (1e-6, 1e-6), "as cpu"),
    # adjtimex(2) (timex.go)
    ("host.clock_synced", "host", "node_timex_sync_status", {}, "gauge", 0, "not STA_UNSYNC|STA_CLOCKERR"),
    ("host.clock_maxerror", "host", "node_timex_maxerror_seconds", {}, "gauge", 1e-6,
     "grows 500 us a second between the readings"),
    ("host.clock_esterror", "host", "node_timex_estimated_error_seconds", {}, "gauge", 1e-6, "microseconds"),
    ("host.clock_offset", "host", "node_timex_offset_seconds", {}, "gauge", 1e-6, "truncated to microseconds"),
    # /proc/sys/fs/file-nr, /proc/sys/net/netfilter
    ("host.file_handles", "host", "node_filefd_allocated", {}, "gauge", "max(32, 2*ncpus)*ncpus + 64",
     "file-nr prints the per-CPU counter's shared count (off by up to its batch a CPU), Sentinel the exact sum; "
     "node_exporter's own files while it reads"),
    ("host.file_handles_max", "host", "node_filefd_maximum", {}, "exact", None, "files_stat.max_files"),
    ("host.conntrack_entries", "host", "node_nf_conntrack_entries", {}, "gauge", 2,
     "the scrape's own connection may add one"),
    ("host.conntrack_limit", "host", "node_nf_conntrack_entries_limit", {}, "exact", None, "nf_conntrack_max"),
    # /proc/diskstats (diskstats_linux.go; partitions, loop and ram left out)
    ("disk.reads", "disk", "node_disk_reads_completed_total", {}, "counter", (0, 0), "field 4"),
    ("disk.reads_merged", "disk", "node_disk_reads_merged_total", {}, "counter", (0, 0), "field 5"),
    ("disk.read_bytes", "disk", "node_disk_read_bytes_total", {}, "counter", (0, 0), "sectors * 512"),
    ("disk.read_time", "disk", "node_disk_read_time_seconds_total", {}, "counter", (0.001, 0),
     "nanoseconds truncated to milliseconds"),
    ("disk.writes", "disk", "node_disk_writes_completed_total", {}, "counter", (0, 0), "field 8"),
    ("disk.writes_merged", "disk", "node_disk_writes_merged_total", {}, "counter", (0, 0), "field 9"),
    ("disk.written_bytes", "disk", "node_disk_written_bytes_total", {}, "counter", (0, 0), "sectors * 512"),
    ("disk.write_time", "disk", "node_disk_write_time_seconds_total", {}, "counter", (0.001, 0), "milliseconds"),
    ("disk.io_time", "disk", "node_disk_io_time_seconds_total", {}, "counter", (0.004, 0.004),
     "jiffies at HZ=250; a read with I/O in flight folds time in"),
    ("disk.weighted_io_time", "disk", "node_disk_io_time_weighted_seconds_total", {}, "counter", (0.001, 0),
     "milliseconds"),
    # rtnetlink's dev_get_stats() (netdev_linux.go; lo left out by Debian)
    ("net.rx_bytes", "net", "node_network_receive_bytes_total", {}, "counter", (0, 0), "rx_bytes"),
    ("net.rx_packets", "net", "node_network_receive_packets_total", {}, "counter", (0, 0), "rx_packets"),
    ("net.rx_errors", "net", "node_network_receive_errs_total", {}, "counter", (0, 0), "rx_errors"),
    ("net.rx_dropped", "net", "node_network_receive_drop_total", {}, "counter", (0, 0),
     "rx_dropped + rx_missed_errors, as /proc/net/dev's drop"),
    ("net.tx_bytes", "net", "node_network_transmit_bytes_total", {}, "counter", (0, 0), "tx_bytes"),
    ("net.tx_packets", "net", "node_network_transmit_packets_total", {}, "counter", (0, 0), "tx_packets"),
    ("net.tx_errors", "net", "node_network_transmit_errs_total", {}, "counter", (0, 0), "tx_errors"),
    ("net.tx_dropped", "net", "node_network_transmit_drop_total", {}, "counter", (0, 0), "tx_dropped"),
    # /sys/class/net (netclass_linux.go)
    ("net.speed", "net", "node_network_speed_bytes", {}, "exact", None,
     "the link's speed, Mb/s * 125,000 (node_exporter: -125,000 for unknown, Sentinel unknown)"),
    ("net.up", "net", "node_network_carrier", {}, "gauge", 0, "carrier on an interface that is up"),
    ("net.operstate", "net", "node_network_up", {}, "up", None,
     "node_network_up is operstate \"up\" (6); loopback's is unknown (0)"),
    # /sys/class/net/BOND/bonding (bonding_linux.go; the bond in label master)
    ("net.bond_slaves", "bond", "node_bonding_slaves", {}, "gauge", 0, "bonding/slaves' words"),
    ("net.bond_active", "bond", "node_bonding_active", {}, "gauge", 0, "slaves whose mii_status is up"),
    # statfs(2) of /proc/1/mounts' mounts (filesystem_linux.go)
    ("fs.size_bytes", "fs", "node_filesystem_size_bytes", {}, "exact", None, "f_blocks * f_bsize"),
    ("fs.free_bytes", "fs", "node_filesystem_free_bytes", {}, "gauge", "0.001*v + 2*16*2**20",
     "moves with writes: the loaded phase's disk stressor writes and removes files of 16 MiB"),
    ("fs.avail_bytes", "fs", "node_filesystem_avail_bytes", {}, "gauge", "0.001*v + 2*16*2**20", "as free"),
    ("fs.files", "fs", "node_filesystem_files", {}, "exact", None, "f_files"),
    ("fs.files_free", "fs", "node_filesystem_files_free", {}, "gauge", "16 + 0.001*v", "moves with creates"),
    ("fs.readonly", "fs", "node_filesystem_readonly", {}, "gauge", 0, "ro in the mount's options"),
]
# the entity label each family is matched on, on node_exporter's side and Sentinel's
ENTITY = {"cpu": ("cpu", "cpu"), "disk": ("device", "disk.name"), "net": ("device", "net.name"),
          "bond": ("master", "net.name"), "fs": ("mountpoint", "fs.mountpoint")}
SAMPLE_KEY = {"cpu": "cpus", "disk": "disks", "net": "interfaces", "bond": "interfaces", "fs": "filesystems"}
# what Sentinel does not read, by design (docs/kernel-sources.md), by the
# interface's driver: its values must be unknown, never a guess
UNREAD = {"bonding": ("net.rx_", "net.tx_", "net.speed"),     # sums its slaves' when asked
          "8139cp": ("net.speed",)}                            # asks its PHY

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """Prometheus' text format: [(name, {label: value}, value)]."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if m:
            labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in LABEL.findall(m.group(3) or "")}
            out.append((m.group(1), labels, float(m.group(4))))
    return out


def select(series, name, match, by):
    """{entity: summed value} (entity None for a host value; by: the label)."""
    res = {}
    for n, labels, v in series:
        if n != name or any(not re.fullmatch(rx, labels.get(k, "")) for k, rx in match.items()):
            continue
        key = labels.get(by) if by else None
        res[key] = res.get(key, 0.0) + v
    return res


def tol_of(t, ncpus, v):
    return eval(t, {"max": max}, {"ncpus": ncpus, "v": abs(v)}) if isinstance(t, str) else t


class Sentinel:
    """sentinel-inspect metrics against the guest's RAM file, one sample a call."""

    def __init__(self, ram, bundle):
        self.cmd = [os.path.join(BUILD, "sentinel-inspect"), "--source", "ramfile:" + ram, "metrics", "--json",
                    "--bundle", bundle]

    def sample(self):
        p = subprocess.run(self.cmd, capture_output=True, text=True, timeout=120)
        line = p.stdout.splitlines()[0] if p.stdout else ""
        if not line.startswith("{"):
            raise RuntimeError("sentinel-inspect metrics failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
        return json.loads(line)


def values(sample, metric, family):
    """{entity: value} from one Sentinel sample."""
    if family == "host":
        return {None: dict(sample["host"]).get(metric)}
    key = ENTITY[family][1]
    res = {}
    for row in sample.get(SAMPLE_KEY[family], []):
        ent = row.get(key)
        if family == "cpu":
            ent = str(ent)
        v = row.get(metric)
        res[ent] = float(v) if isinstance(v, bool) else v
    return res


def num(v):
    if v is None:
        return None
    if isinstance(v, str):
        return float(v.replace("Inf", "inf"))
    return float(v)


def compare(phase, before, series, after, drivers):
    """Every row of MAP: node_exporter's scrape between Sentinel's two
    samples (drivers: {interface: its driver})."""
    ncpus = len(before.get("cpus", []))
    for metric, family, ne_name, match, kind, tol, why in MAP:
        by = ENTITY[family][0] if family != "host" else None
        ne = select(series, ne_name, match, by)
        if kind == "count":
            ne = {None: float(len(select(series, ne_name, match, "cpu")))}
            kind = "exact"
        sb, sa = values(before, metric, family), values(after, metric, family)
        if metric == "net.up":                       # no carrier file while down: down
            for ent in sb:
                ne.setdefault(ent, 0.0)
        if metric == "net.speed":                    # node_exporter's -125,000: unknown, as Sentinel says
            ne = {k: (None if v < 0 else v) for k, v in ne.items()}
        if metric == "net.operstate":                # up (6) or not, as node_exporter says 1 or 0
            for d in (sb, sa):
                for ent in d:
                    d[ent] = None if d[ent] is None else float(d[ent] == 6)
            kind = "gauge"
            tol = 0
        unread = sorted(ent for ent in ne if family == "net" and metric.startswith(
            UNREAD.get(drivers.get(ent), ("-",))))
        if unread:
            bad = ["%s: Sentinel %s then %s" % (e, sb.get(e), sa.get(e)) for e in unread
                   if sb.get(e) is not None or sa.get(e) is not None]
            report(not bad, "%s %s unknown on %s (%s: not read, by design)" %
                   (phase, metric, ", ".join(unread), ", ".join(sorted({drivers[e] for e in unread}))), "; ".join(bad))
            for e in unread:
                ne.pop(e)
        both = sorted(set(ne) & set(sb) & set(sa), key=str)
        if not both:
            report(False, "%s %s: node_exporter's %s and Sentinel's have an entity in common" %
                      (phase, metric, ne_name), "node_exporter %s, Sentinel %s" % (sorted(ne, key=str), sorted(sb, key=str)))
            continue
        bad = []
        for ent in both:
            b, a, n = num(sb[ent]), num(sa[ent]), ne[ent]
            if kind == "exact":
                ok = b == n == a
            elif b is None or a is None or n is None:
                ok = False
            elif kind == "counter":
                lo, hi = (tol_of(x, ncpus, n) for x in tol)
                ok = b - lo - 1e-9 <= n <= a + hi + 1e-9
            else:
                t = tol_of(tol, ncpus, n)
                ok = min(b, a) - t - 1e-9 <= n <= max(b, a) + t + 1e-9
            if not ok:
                bad.append("%s: Sentinel %s then %s, node_exporter %s" % (ent, b, a, n))
        where = "" if family == "host" else " (%s)" % ", ".join(str(e) for e in both)
        report(not bad, "%s %s = node_exporter's %s%s, %s: %s" %
                  (phase, metric, ne_name, where, kind if kind == "exact" else "within tolerance", why),
                  "; ".join(bad))


def scrape(g):
    t0 = time.time()
    text = g.scrape(timeout=60)
    return parse(text), time.time() - t0


def table():
    """MAP as docs/metrics.md's table (--table)."""
    print("| Sentinel | node_exporter | compared | tolerance | why |")
    print("|---|---|---|---|---|")
    for metric, family, ne_name, match, kind, tol, why in MAP:
        sel = ne_name + ("{%s}" % ", ".join('%s=~"%s"' % kv for kv in match.items()) if match else "")
        if kind == "count":
            sel, kind = "count(%s)" % sel, "exact"
        elif match or family == "host" and ne_name == "node_cpu_seconds_total":
            sel = "sum%s(%s)" % (" by (cpu)" if family == "cpu" else "", sel)
        if kind == "counter":
            t = "%s below, %s above" % tol if tol != (0, 0) else "none"
        elif kind == "gauge":
            t = str(tol).replace("v", "the value") if tol else "none"
        else:
            t = "equal"
        print("| `%s` | `%s` | %s | %s | %s |" % (metric, sel.replace("|", "\\|"), kind, t, why))


def main():
    inspect = os.path.join(BUILD, "sentinel-inspect")
    if not os.access(inspect, os.X_OK):
        report(False, "%s is not built" % inspect)
        return
    idir = debguest.image_or_report(report)
    if not idir:
        return
    bundle = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(TOP, "build", "metrics.bundle"))
    RES.expect(2 * len(MAP))
    t0 = time.time()
    with debguest.DebianGuest(idir, name="fid") as g:
        report(True, "a real Debian system booted in %.0f s: %s" %
                  (time.time() - t0, g.check("read -r r < /proc/sys/kernel/osrelease; echo $r").strip()))
        # what node_exporter would have on a server: connection tracking (a
        # firewall), a bond over two dummy links
        g.check("modprobe nf_conntrack; sysctl -qw net.netfilter.nf_conntrack_max=65000; "
                "ip link add dummy0 type dummy; ip link add dummy1 type dummy; "
                "ip link add bond0 type bond miimon 100; ip link set dummy0 master bond0; "
                "ip link set dummy1 master bond0; ip link set bond0 up; sleep 1; true")
        drivers = {}
        for line in g.check("for d in /sys/class/net/*; do v=-; [ -d $d/bonding ] && v=bonding; "
                            "[ -L $d/device/driver ] && v=$(readlink $d/device/driver); echo ${d##*/} ${v##*/}; "
                            "done").splitlines():
            name, drv = line.split()
            drivers[name] = drv
        report(all(d in drivers.values() for d in guest.PHYS_NICS.values()),
               "the NICs of physical and VMware machines: %s" %
               ", ".join("%s %s" % kv for kv in sorted(drivers.items()) if kv[1] != "-"), repr(drivers))
        s = Sentinel(g.ram, bundle)
        for phase in ("idle", "loaded"):
            if phase == "loaded":
                # CPU, memory, disk I/O, and traffic on every NIC (each to its own gateway)
                g.check("stress-ng --cpu 1 --vm 1 --vm-bytes 256M --vm-keep --hdd 1 --hdd-bytes 16M --timeout 120s "
                        ">/dev/null 2>&1 & for n in 2 3 4 5; do (ping -q -i 0.2 -c 400 10.0.$n.2 >/dev/null 2>&1 &) ; done; "
                        "sleep 8; true", timeout=60)
            before = s.sample()
            series, took = scrape(g)
            after = s.sample()
            report(len(series) > 500, "%s: node_exporter answered with %d series in %.1f s" %
                      (phase, len(series), took))
            compare(phase, before, series, after, drivers)


if __name__ == "__main__":
    if "--table" in sys.argv:
        sys.exit(table())
    main()
    sys.exit(RES.end())
