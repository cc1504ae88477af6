#!/bin/sh
# A suite that goes wrong on purpose, for tests/selftest/run.sh: it reports
# two passing checks, then MODE happens to it.
set -u
. "$(dirname "$0")/../lib.sh"
mode=$1
pass "victim/one"
pass "victim/two"
case $mode in
kill) kill -9 $$ ;;                        # the OOM killer, a timeout's SIGKILL
exit) exit 3 ;;                            # a bad exit with no failed check
unset) : "$no_such_variable" ;;            # a set -u abort
short) ;;                                  # fewer checks than it states (its S line: 5)
ok) pass "victim/three" ;;
python-*) "${PYTHON:-python3}" "$(dirname "$0")/victim.py" "${mode#python-}" ;;
esac
pass "victim/after"
