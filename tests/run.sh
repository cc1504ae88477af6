#!/bin/sh
# Sentinel test runner: `make check` calls this after building.
# Runs every suite, prints one line per test and ends with
#   N passed, N failed, N skipped
# Exit status: 0 when nothing failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
# this run's files, whatever runs beside it (another checkout's make check)
SENTINEL_TEST_TMP=$(mktemp -d /tmp/sentinel-check.XXXXXX) || exit 1
export SENTINEL_TEST_TMP
trap 'rm -rf "$SENTINEL_TEST_TMP"' EXIT
RESULTS=$SENTINEL_TEST_TMP/results
: > "$RESULTS"
export RESULTS
. tests/lib.sh
B=build

# Everything the suites print goes to the terminal and to $LOG too: the
# failures are listed again at the end, where a CI log's tail shows them.
LOG=$SENTINEL_TEST_TMP/check.log
: > "$LOG"
# Each suite's wall time goes to $TIMES, listed at the end: where a slow
# CI run spent its minutes.
TIMES=$SENTINEL_TEST_TMP/times
: > "$TIMES"
run_suite() {
	name=$1
	echo "== $name" | tee -a "$LOG"
	shift
	t0=$(date +%s)
	"$@" 2>&1 | tee -a "$LOG"
	printf '%6d s  %s\n' $(($(date +%s) - t0)) "$name" >> "$TIMES"
}

# C test programs (under ASan/UBSan) print PASS/FAIL lines themselves.
c_tests() {
	out=$SENTINEL_TEST_TMP/ctest.out
	"$1" > "$out" 2>&1
	rc=$?
	cat "$out"
	grep -c '^PASS' "$out" | awk '{for(i=0;i<$1;i++) print "pass"}' >> "$RESULTS"
	grep -c '^FAIL' "$out" | awk '{for(i=0;i<$1;i++) print "fail"}' >> "$RESULTS"
	[ $rc -eq 0 ] || grep -q '^FAIL' "$out" || fail "$(basename "$1")/exit-status" "exited $rc"
}

run_suite "layers: includes through -I, never by path" sh tests/layers.sh
run_suite "unit tests (ASan/UBSan)" c_tests "$B/san/test_unit"
run_suite "runtime: windows on a simulated clock (ASan/UBSan)" c_tests "$B/san/test_snrt"
run_suite "notifier: HTTP delivery against a local server (ASan/UBSan)" c_tests "$B/san/test_http"
run_suite "rulec diagnostics (tests/check, ASan/UBSan)" sh tests/check/run.sh "$B/san/rulec"
run_suite "shipped rules and command line" sh tests/cli.sh "$B/san/rulec"
run_suite "rulec test: the shipped rules' tests (ASan/UBSan)" sh tests/ruletest/run.sh "$B/san/rulec"
run_suite "JSON Schema for rule files" sh tests/schema/run.sh "$B/rulec"
run_suite "kernel model: robustness (ASan/UBSan)" c_tests "$B/san/test_kx"
run_suite "kernel model: live Debian guests (QEMU)" sh tests/guest/run.sh "$B/san/sentinel-inspect"
run_suite "engine: sentineld against a live guest (CPU backend)" sh tests/engine/run.sh "$B/san" cpu
run_suite "compiler: CO-RE and LLView on IR (FileCheck)" sh tests/compiler/run.sh "$B/san/rulec"
run_suite "valgrind" sh tests/valgrind.sh "$B/rulec"
run_suite "fuzz smoke: front end (libFuzzer)" sh tests/fuzz/run.sh smoke rules
run_suite "fuzz smoke: code generator (libFuzzer)" sh tests/fuzz/run.sh smoke cg
run_suite "fuzz smoke: a hostile guest (libFuzzer, a real guest's RAM image)" sh tests/fuzz/run.sh smoke guest

p=$(grep -c '^pass$' "$RESULTS")
f=$(grep -c '^fail$' "$RESULTS")
s=$(grep -c '^skip$' "$RESULTS")
if [ "$f" -gt 0 ]; then
	echo
	echo "== the failures again (each with the first lines of its detail)"
	awk '/^FAIL /{n=12; print; next} n>0 && /^     /{print; n--; next} {n=0}' "$LOG"
fi
echo
echo "== time per suite"
cat "$TIMES"
echo
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
