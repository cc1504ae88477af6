#!/bin/sh
# The test runner's own test: make check must fail, and say why, whenever a
# suite goes wrong in a way its own lines would not show (tests/lib.sh's
# suite()).  Each case runs `make check` again with SENTINEL_CHECK_ONLY
# limited to one victim suite (victim.sh, victim.py) and checks its exit
# status and closing line; a healthy victim must pass, or the cases prove
# nothing.
set -u
. "$(dirname "$0")/../lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "$SENTINEL_TEST_TMP/selftest.XXXXXX")
# victims: the S lines a nested make check adds (tests/run.sh's format)
cat > "$tmp/extra.sh" <<'X'
S quick "victim kill" 3 sh tests/selftest/victim.sh kill
S quick "victim exit" 3 sh tests/selftest/victim.sh exit
S quick "victim unset" 3 sh tests/selftest/victim.sh unset
S quick "victim short" 5 sh tests/selftest/victim.sh short
S quick "victim ok" 4 sh tests/selftest/victim.sh ok
S quick "victim python-kill" 1 sh -c '. tests/lib.sh; py_suite victim.py tests/selftest/victim.py kill'
S quick "victim python-raise" 1 sh -c '. tests/lib.sh; py_suite victim.py tests/selftest/victim.py raise'
S quick "victim python-nochecks" 1 sh -c '. tests/lib.sh; py_suite victim.py tests/selftest/victim.py nochecks'
S quick "victim python-few" 1 sh -c '. tests/lib.sh; py_suite victim.py tests/selftest/victim.py few'
S quick "victim python-twice" 1 sh -c '. tests/lib.sh; py_suite victim.py tests/selftest/victim.py twice'
S quick "victim python-ok" 1 sh -c '. tests/lib.sh; py_suite victim.py tests/selftest/victim.py ok'
SB quick "victim sb-ok" 4 sh tests/selftest/victim.sh ok
SB quick "victim sb-kill" 3 sh tests/selftest/victim.sh kill
SB quick "victim sb-short" 5 sh tests/selftest/victim.sh short
SB quick "victim sb-python-few" 1 sh -c '. tests/lib.sh; py_suite victim.py tests/selftest/victim.py few'
X
# one case: VICTIM, the exit status make check must give (0 or 2: make's
# own for a failed recipe), the failures its closing line must count, and
# a phrase its output must hold
one() {
	v=$1 want_rc=$2 want_f=$3 why=$4
	out=$tmp/$v.out
	# a fresh make: not the jobserver of the make check that runs this
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL RESULTS= SENTINEL_TEST_TMP= SENTINEL_CHECK_TIER=quick \
		SENTINEL_CHECK_ONLY="^victim $v\$" SENTINEL_CHECK_EXTRA="$tmp/extra.sh" \
		make -s -C "$top" check > "$out" 2>&1
	rc=$?
	last=$(grep '^[0-9]* passed, [0-9]* failed' "$out" | tail -n 1)
	f=$(printf '%s\n' "$last" | sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/p')
	if [ "$rc" -eq "$want_rc" ] && [ "${f:-x}" = "$want_f" ] && grep -q -- "$why" "$out"; then
		pass "selftest/$v: make check exits $rc, '$last'"
	else
		fail "selftest/$v: make check exits $want_rc with $want_f failed and says '$why'" \
			"exit $rc, closing line '$last':
$(grep -A3 '^FAIL' "$out" | head -20)"
	fi
}
one ok 0 0 "4 passed, 0 failed"
one kill 2 2 "killed by signal 9 after 2 checks"
one exit 2 2 "exited 3 after 2 checks without reporting a failed one"
one unset 2 2 "parameter not set"
one short 2 1 "3 checks, fewer than the 5 it must run"
one python-ok 0 0 "2 passed, 0 failed"
one python-kill 2 2 "killed by signal 9"
one python-raise 2 2 "no CHECKS line"
one python-nochecks 2 1 "no CHECKS line"
one python-few 2 1 "2 checks, fewer than the 10 it states"
one python-twice 2 1 "it says 2 checks but wrote 4 pass/fail lines"
# make check's own background suites (tests/run.sh SB, collected by SJ)
one sb-ok 0 0 "4 passed, 0 failed"
one sb-kill 2 2 "killed by signal 9 after 2 checks"
one sb-short 2 1 "3 checks, fewer than the 5 it must run"
one sb-python-few 2 1 "2 checks, fewer than the 10 it states"
