#!/usr/bin/env python3
"""The shipped network rules on a physical NIC's driver, on the real Debian
system: sentineld (CPU backend) with rules/ watches the guest, whose e1000e
(Intel's driver; its counters in its private adapter struct) is fed by this
test through a socket network: a stream of ordinary frames, and among them
frames longer than the link allows, as a switch with jumbo frames on would
send to a host without them.  The NIC drops those and counts them
(ROC, "receive oversize"), e1000e reports them as receive errors, and
NetworkReceiveErrors ("over 1% of the packets in error", for 2 minutes)
must fire for that interface, with its labels, and for no other.

    python3 tests/debian/test_rules.py BUILD-DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))
sys.path.insert(0, os.path.join(TOP, "tests", "debian"))
import debguest  # noqa: E402
import guest  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
RES = guest.Results()
WAIT_S = 420        # [2m] windows covered, then for: 2m, with TCG's slack


report = guest.reporter(RES, "debian-rules")


def frame(dst, size):
    """An Ethernet frame of `size` bytes (without FCS) from a made-up host,
    ethertype 0x88b5 (IEEE's local experimental: no stack answers it)."""
    mac = bytes.fromhex(dst.replace(":", ""))
    head = mac + bytes.fromhex("020000000001") + struct.pack("!H", 0x88B5)
    return head + bytes(size - len(head))


def feed(g, stop):
    """20 frames a second: 15 of 60 bytes, 5 of 2,000 (over the 1,518 a
    link without jumbo frames takes)."""
    good, big = frame(debguest.FRAME_MAC, 60), frame(debguest.FRAME_MAC, 2000)
    while not stop.is_set():
        g.send_frames([good] * 15 + [big] * 5)
        time.sleep(1)


def main():
    sentineld = os.path.join(BUILD, "sentineld")
    sentinelctl = os.path.join(BUILD, "sentinelctl")
    if not os.access(sentinelctl, os.X_OK):         # build/san has no sentinelctl of its own
        sentinelctl = os.path.join(TOP, "build", "sentinelctl")
    if not os.access(sentineld, os.X_OK):
        report(False, "%s is not built" % sentineld)
        return
    idir = debguest.image_or_report(report)
    if not idir:
        return
    RES.expect(4)
    tmp = tempfile.mkdtemp(prefix="sentinel-debrules-")
    stop = threading.Event()
    d = None
    with debguest.DebianGuest(idir, name="drl", frame_nic="e1000e") as g:
        ifname = g.check("for d in /sys/class/net/*; do [ \"$(cat $d/address)\" = %s ] && echo ${d##*/}; done; true" %
                         debguest.FRAME_MAC).strip()
        drv = g.check("v=$(readlink /sys/class/net/%s/device/driver); echo ${v##*/}" % ifname).strip() if ifname else ""
        report(ifname and drv == "e1000e", "the frame NIC is %s, driver %s" % (ifname or "missing", drv))
        if not ifname:
            return
        sock = os.path.join(tmp, "ctl.sock")
        conf = os.path.join(tmp, "sentinel.conf")
        with open(conf, "w") as f:
            f.write("[target]\nsource = ramfile:%s\nname = debian\n[rules]\ndirectory = %s\n[engine]\nbackend = cpu\n"
                    "tick = 100ms\nstate = none\n[notify]\nlog = yes\n[control]\nsocket = %s\n" %
                    (g.ram, os.path.join(TOP, "rules"), sock))
        log = open(os.path.join(tmp, "sentineld.log"), "w+")
        d = subprocess.Popen([sentineld, "-c", conf], stdout=log, stderr=subprocess.STDOUT)
        feeder = threading.Thread(target=feed, args=(g, stop), daemon=True)
        feeder.start()
        t0 = time.time()
        fired, alerts = None, []
        try:
            while time.time() - t0 < WAIT_S and d.poll() is None:
                p = subprocess.run([sentinelctl, "-s", sock, "--json", "alerts"], capture_output=True, text=True,
                                   timeout=60)
                if p.returncode == 0:
                    alerts = json.loads(p.stdout).get("alerts", [])
                    mine = [a for a in alerts if a.get("name") == "NetworkReceiveErrors" and a.get("state") == "firing"]
                    if mine:
                        fired = (time.time() - t0, mine)
                        break
                time.sleep(2)
            proc = g.check("while read -r l; do case $l in %s:*) echo \"$l\";; esac; done < /proc/net/dev" % ifname)
            # what sentineld says of the rule and of the interface (a failure's detail)
            p = subprocess.run([sentinelctl, "-s", sock, "--json", "rules"], capture_output=True, text=True, timeout=60)
            state = [r for r in (json.loads(p.stdout).get("rules", []) if p.returncode == 0 else [])
                     if r.get("name") == "NetworkReceiveErrors"] or p.stderr
        finally:
            stop.set()
            if d.poll() is None:
                d.terminate()
                d.wait(30)
        log.seek(0)
        text = log.read()
        errs = int(proc.split(":", 1)[1].split()[2]) if ":" in proc else 0
        report(errs > 0, "the guest's /proc/net/dev counts %s's oversized frames as receive errors: %s" %
               (ifname, proc.strip()))
        report(fired is not None, "NetworkReceiveErrors fired for %s (e1000e) %.0f s after the first oversized frame "
               "(its [2m] windows covered, then for: 2m)" % (ifname, fired[0] if fired else -1),
               "alerts: %s\nthe rule: %s\nsentineld:\n%s" % (json.dumps(alerts)[:1500], json.dumps(state)[:1500],
                                                           text[-1500:]))
        if fired:
            who = sorted({str(a.get("interface")) for a in fired[1]})
            report(who == [ifname], "... for that interface alone (%s)" % ", ".join(who), json.dumps(fired[1])[:1500])


if __name__ == "__main__":
    main()
    sys.exit(RES.end())
