"""A Python suite that goes wrong on purpose (tests/selftest/run.sh):
two passing checks, then argv[1] happens to it."""
import os
import signal
import sys

RESULTS = os.environ.get("RESULTS")
reported = 0


def report(ok, name):
    global reported
    print("%s victim.py/%s" % ("PASS" if ok else "FAIL", name), flush=True)
    reported += 1
    with open(RESULTS, "a") as f:
        f.write("pass\n" if ok else "fail\n")


report(True, "one")
report(True, "two")
mode = sys.argv[1]
if mode == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "raise":
    raise RuntimeError("an uncaught exception after two checks")
elif mode == "nochecks":
    sys.exit(0)                                       # ends without its CHECKS line
elif mode == "few":
    print("CHECKS %d %d" % (reported, 10))
    sys.exit(0)
elif mode == "twice":
    with open(RESULTS, "a") as f:                     # a retry that counts again
        f.write("pass\npass\n")
    print("CHECKS %d %d" % (reported, 2))
    sys.exit(0)
elif mode == "ok":
    print("CHECKS %d %d" % (reported, 2))
    sys.exit(0)
