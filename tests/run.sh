#!/bin/sh
# Sentinel test runner: `make check` (every suite) and `make check-quick`
# (SENTINEL_CHECK_TIER=quick: the suites without TCG guests beyond one
# short boot, for the edit loop; docs/testing.md).  Prints one line per
# test and ends with
#   N passed, N failed, N skipped
# Exit status: 0 when nothing failed.  What can happen to a suite and how
# it is counted (killed, a bad exit, fewer checks than it must): tests/lib.sh's
# suite().
#   SENTINEL_CHECK_ONLY=REGEX   only the suites whose name matches (grep -E)
#   SENTINEL_CHECK_EXTRA=FILE   more suites, lines like those below (S ...)
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
TIER=${SENTINEL_CHECK_TIER:-full}
# the edit loop's fuzz smokes are half as long (tests/fuzz/run.sh)
[ "$TIER" = quick ] && export SENTINEL_FUZZ_SMOKE_S=${SENTINEL_FUZZ_SMOKE_S:-10}

# Everything the suites print goes to the terminal and to $LOG too: the
# failures are listed again at the end, where a CI log's tail shows them.
LOG=$SENTINEL_TEST_TMP/check.log
: > "$LOG"
# Each suite's wall time goes to $TIMES, listed at the end: where a slow
# CI run spent its minutes.
TIMES=$SENTINEL_TEST_TMP/times
: > "$TIMES"
LEFT=

# wanted TIER NAME: whether this run runs the suite (SENTINEL_CHECK_ONLY,
# the tier); a full suite left out of the quick tier is listed at the end
wanted() {
	if [ -n "${SENTINEL_CHECK_ONLY:-}" ] && ! printf '%s\n' "$2" | grep -Eq -- "$SENTINEL_CHECK_ONLY"; then
		return 1
	fi
	if [ "$TIER" = quick ] && [ "$1" != quick ]; then
		LEFT="$LEFT
   $2"
		return 1
	fi
}

# S TIER NAME MIN CMD...: one suite, with the fewest checks it must report
# (pass, fail or skip lines).  A quick suite runs in both tiers; a full one
# in make check alone.
S() {
	tier=$1 name=$2 min=$3
	shift 3
	wanted "$tier" "$name" || return 0
	echo "== $name" | tee -a "$LOG"
	t0=$(date +%s)
	suite "$name" "$min" "$@"
	cat "$SUITE_OUT" >> "$LOG"
	rm -f "$SUITE_OUT" "$SUITE_OUT.rc"
	printf '%6d s  %s\n' $(($(date +%s) - t0)) "$name" >> "$TIMES"
}

# SB TIER NAME MIN CMD...: S in the background, for a suite that waits
# for minutes or only computes, beside suites that are not timed to the
# second; its output and results go to files of its own (its counts
# cannot mix with the suite in front) until SJ, at the end, prints them,
# adds them up and checks that it ran to its end (tests/lib.sh's suite())
BG_SUITES=
SB() {
	tier=$1 name=$2 min=$3
	shift 3
	wanted "$tier" "$name" || return 0
	bgn=$(($(printf '%s' "$BG_SUITES" | wc -l) + 1))
	bg=$SENTINEL_TEST_TMP/bgsuite.$bgn
	mkdir -p "$bg"
	printf '%s\n' "$name" > "$bg/name"
	echo "== $name: started in the background, collected at the end" | tee -a "$LOG"
	(
		RESULTS=$bg/results
		: > "$RESULTS"
		SUITE_SEQ=$((bgn * 1000))             # its scratch files apart from the others'
		t0=$(date +%s)
		suite "$name" "$min" "$@" > "$bg/out" 2>&1
		printf '%6d s  %s (in the background)\n' $(($(date +%s) - t0)) "$name" > "$bg/time"
		echo done > "$bg/done"
	) &
	echo $! > "$bg/pid"
	BG_SUITES="$BG_SUITES
$bg"
}
# SJ: every background suite, waited for and counted
SJ() {
	for bg in $BG_SUITES; do
		wait "$(cat "$bg/pid")"
		name=$(cat "$bg/name")
		echo "== $name (from the background)" | tee -a "$LOG"
		cat "$bg/out" | tee -a "$LOG"
		cat "$bg/results" >> "$RESULTS"
		if [ -f "$bg/done" ]; then
			cat "$bg/time" >> "$TIMES"
		else
			fail "$name: ran to its end in the background" "its last lines: $(tail -n 3 "$bg/out")" | tee -a "$LOG"
		fi
	done
	BG_SUITES=
}

S quick "layers: includes through -I, never by path" 3 sh tests/layers.sh
S quick "test runner: a suite that dies, exits badly or runs short fails make check" 15 sh tests/selftest/run.sh
S quick "unit tests (ASan/UBSan)" 190 c_tests "$B/san/test_unit"
S quick "runtime: windows on a simulated clock (ASan/UBSan)" 475 c_tests "$B/san/test_snrt"
S quick "notifier: HTTP delivery against a local server (ASan/UBSan)" 40 c_tests "$B/san/test_http"
S quick "notifier: HTTP delivery against a local server (TSan)" 40 c_tests env TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$B/tsan/test_http"
S quick "rulec diagnostics (tests/check, ASan/UBSan)" 38 sh tests/check/run.sh "$B/san/rulec"
S quick "shipped rules and command line" 54 sh tests/cli.sh "$B/san/rulec"
S full "rulec: 600 rules in PTX parts that link, a threshold changing the data part alone (ASan/UBSan)" 4 sh tests/parts.sh "$B/san/rulec"
S quick "rulec test: the shipped rules' tests (ASan/UBSan)" 14 sh tests/ruletest/run.sh "$B/san/rulec"
S quick "rules in the docs: rule blocks and table rows that rulec checks (tests/docs, ASan/UBSan)" 50 sh tests/docs/run.sh "$B/san/rulec"
S quick "JSON Schema for rule files" 1 sh tests/schema/run.sh "$B/rulec"
S quick "manual pages: mandoc's lint, every --help option in its page" 10 sh tests/man.sh "$B"
S quick "bash completion of rulec and sentinelctl" 8 sh tests/completion.sh
S quick "kernel model: robustness (ASan/UBSan)" 60 c_tests "$B/san/test_kx"
S quick "a real guest's image: discovery on threads (ASan, TSan), a hostile target and clients (sentineld)" 30 sh tests/image.sh "$B"
S full "a hostile target and clients against sentineld built with ThreadSanitizer" 24 env SENTINEL_IMAGE_TSAN=1 sh tests/image.sh "$B"
# The real Debian system's image (tests/debian/mkimage.sh: 5-7 minutes
# the first time, mostly downloads and dpkg, then cached) builds in the
# background beside the busybox guests; the Debian suite's own call waits
# for it (the script's lock), builds it if this one failed, and reports.
DEBIAN_SUITE="a real Debian system: Sentinel's metrics against node_exporter's (tests/debian)"
if [ "$TIER" = full ] && [ "${SENTINEL_SKIP_GUEST:-0}" != 1 ] && command -v qemu-system-x86_64 >/dev/null 2>&1 &&
	{ [ -z "${SENTINEL_CHECK_ONLY:-}" ] || printf '%s\n' "$DEBIAN_SUITE" | grep -Eq -- "$SENTINEL_CHECK_ONLY"; }; then
	echo "-- the Debian image: building in the background if not cached ($SENTINEL_TEST_TMP/debian-image.log)"
	sh tests/debian/mkimage.sh > "$SENTINEL_TEST_TMP/debian-image.log" 2>&1 &
fi
# then the shipped network rules on its e1000e: minutes of waiting for
# [2m] windows and a for: 2m, beside the busybox guests (compared, not timed)
SB full "a real Debian system: the shipped network rules on an e1000e (tests/debian/test_rules.py)" 4 sh tests/debian/rules.sh "$B"
# and Sentinel's own packages on it: make deb, then install, DKMS, the
# service, reload, upgrade and purge (minutes of apt and DKMS under TCG),
# at nice 10: it takes what the busybox guests beside it leave (at nice 0
# on two cores it slowed them until the bare-metal suite's CpuOverload
# waits ran out, 2026-11-28); its own waits are functional, not timed
SB full "a real Debian system: Sentinel's packages installed, upgraded and purged (tests/debian/test_package.py)" 18 nice -n 10 sh tests/debian/package.sh "$B"
S full "kernel model: live Debian guests (QEMU)" 1 sh tests/guest/run.sh "$B/san/sentinel-inspect"
S full "$DEBIAN_SUITE" 1 sh tests/debian/run.sh "$B"
# state across a restart: ten minutes of waiting on an idle guest of its
# own, beside the engine suites (which skip it)
SB full "engine: state across a restart (for: 10m; tests/engine/restart.sh)" 4 sh tests/engine/restart.sh "$B/san" cpu
S full "engine: sentineld against a live guest (CPU backend)" 1 env SENTINEL_NOTIFY_SKIP=restart sh tests/engine/run.sh "$B/san" cpu
S quick "compiler: CO-RE and LLView on IR (FileCheck)" 15 sh tests/compiler/run.sh "$B/san/rulec"
# valgrind computes and the fuzz smokes fuzz for fixed times: side by side
SB full "valgrind" 5 sh tests/valgrind.sh "$B/rulec"
S quick "fuzz smoke: front end (libFuzzer)" 1 sh tests/fuzz/run.sh smoke rules
S quick "fuzz smoke: code generator (libFuzzer)" 1 sh tests/fuzz/run.sh smoke cg
S quick "fuzz smoke: a hostile guest (libFuzzer, a real guest's RAM image)" 1 sh tests/fuzz/run.sh smoke guest
S quick "fuzz smoke: discovery and the host's parsers of guest memory (libFuzzer, a real guest's image)" 1 sh tests/fuzz/run.sh smoke discover
if [ -n "${SENTINEL_CHECK_EXTRA:-}" ]; then
	. "$SENTINEL_CHECK_EXTRA"
fi
SJ

p=$(results_count pass)
f=$(results_count fail)
s=$(results_count skip)
if [ "$f" -gt 0 ]; then
	echo
	echo "== the failures again (each with the first lines of its detail)"
	awk '/^FAIL /{n=12; print; next} n>0 && /^     /{print; n--; next} {n=0}' "$LOG"
fi
echo
echo "== time per suite"
cat "$TIMES"
if [ -n "$LEFT" ]; then
	echo
	echo "== not in the quick tier (make check runs them):$LEFT"
fi
echo
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
