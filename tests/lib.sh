# tests/lib.sh - shared helpers for the shell test suites.
# A suite calls pass/fail/skip once per test; run.sh adds them up.

: "${RESULTS:=/dev/null}"

# A directory for this run's scratch files: make check's (tests/run.sh),
# or, for a suite run on its own, one of its own, removed when it exits.
# Suites make their scratch directories inside it and set no EXIT trap.
if [ -z "${SENTINEL_TEST_TMP:-}" ]; then
	SENTINEL_TEST_TMP=$(mktemp -d /tmp/sentinel-test.XXXXXX) || exit 1
	export SENTINEL_TEST_TMP
	trap 'rm -rf "$SENTINEL_TEST_TMP"' EXIT
fi

pass() { printf 'PASS %s\n' "$1"; echo pass >> "$RESULTS"; }
fail() { printf 'FAIL %s\n' "$1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/     /'; echo fail >> "$RESULTS"; }
skip() { printf 'SKIP %s (%s)\n' "$1" "$2"; echo skip >> "$RESULTS"; }

# py_suite NAME SCRIPT ARGS...: run a Python test suite (it reports its own
# PASS/FAIL lines into $RESULTS).  A suite that dies of an uncaught
# exception has not run the checks after it: that is one more failure,
# never a quiet stop.
py_suite() {
	name=$1
	shift
	out=$SENTINEL_TEST_TMP/py-suite.$$.out
	t0=$(date +%s)
	"${PYTHON:-python3}" "$@" 2>&1 | tee "$out"
	echo "-- $name: $(($(date +%s) - t0)) s"
	if grep -q '^Traceback (most recent call last)' "$out"; then
		fail "$name/ran-to-the-end" "$(grep -A1 '^[A-Za-z.]*Error\|^Traceback' "$out" | tail -n 3)"
	fi
	rm -f "$out"
}
