# tests/lib.sh - shared helpers for the shell test suites.
# A suite calls pass/fail/skip once per test; run.sh adds them up.

# A directory for this run's scratch files: make check's (tests/run.sh),
# or, for a suite run on its own, one of its own, removed when it exits.
# Suites make their scratch directories inside it and set no EXIT trap.
if [ -z "${SENTINEL_TEST_TMP:-}" ]; then
	SENTINEL_TEST_TMP=$(mktemp -d /tmp/sentinel-test.XXXXXX) || exit 1
	export SENTINEL_TEST_TMP
	trap 'rm -rf "$SENTINEL_TEST_TMP"' EXIT
fi
# Every check lands in $RESULTS, one line each: make check's, or this
# suite's own when it runs alone (suite() counts what each suite added).
if [ -z "${RESULTS:-}" ]; then
	RESULTS=$SENTINEL_TEST_TMP/results
	: > "$RESULTS"
	export RESULTS
fi

pass() { printf 'PASS %s\n' "$1"; echo pass >> "$RESULTS"; }
fail() { printf 'FAIL %s\n' "$1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/     /'; echo fail >> "$RESULTS"; }
skip() { printf 'SKIP %s (%s)\n' "$1" "$2"; echo skip >> "$RESULTS"; }

# expect NAME WANT_RC CMD... : run CMD, compare its exit status (the check is
# named $EXPECT_PREFIX/NAME, cli/NAME by default)
expect() {
	name=$1 want=$2
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want" ]; then pass "${EXPECT_PREFIX:-cli}/$name"; else fail "${EXPECT_PREFIX:-cli}/$name" "exit $rc, wanted $want; output:
$out"; fi
}

# expect_msg NAME WANT_RC PATTERN CMD... : exit status and a message matching PATTERN
expect_msg() {
	name=$1 want=$2 pat=$3
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want" ] && printf '%s' "$out" | grep -q "$pat"; then
		pass "${EXPECT_PREFIX:-cli}/$name"
	else
		fail "${EXPECT_PREFIX:-cli}/$name" "exit $rc (wanted $want), output: $out"
	fi
}

# How many lines of a kind (pass, fail, skip; or '' for all) $RESULTS holds.
results_count() {
	if [ -z "$1" ]; then
		wc -l < "$RESULTS" | tr -d ' '
	else
		grep -c "^$1\$" "$RESULTS"
	fi
}

# c_tests PROG ARGS...: a C test program; it prints PASS/FAIL lines, counted
# here.  A non-zero exit without a FAIL line (a sanitizer's report, a
# crash) is one more failure.
c_tests() {
	c_out=$SENTINEL_TEST_TMP/ctest.$$.out
	"$@" > "$c_out" 2>&1
	c_rc=$?
	cat "$c_out"
	grep -c '^PASS' "$c_out" | awk '{for(i=0;i<$1;i++) print "pass"}' >> "$RESULTS"
	grep -c '^FAIL' "$c_out" | awk '{for(i=0;i<$1;i++) print "fail"}' >> "$RESULTS"
	if [ $c_rc -ne 0 ] && ! grep -q '^FAIL' "$c_out"; then
		fail "$*: exit status" "exited $c_rc: $(grep -E 'Sanitizer|WARNING|ERROR' "$c_out" | head -n 3)"
	fi
	rm -f "$c_out"
	return 0
}

# guest_image WHAT: build/fuzz-guest.ram, a real guest's RAM captured once
# (tests/fuzz/guest_image.py boots it: the one short boot of make
# check-quick) and kept; WHAT names the suite in the failure.  Returns
# non-zero, the failure reported, when it cannot be had.
guest_image() {
	[ -s build/fuzz-guest.ram ] && return 0
	${PYTHON:-python3} tests/fuzz/guest_image.py build/fuzz-guest.ram >&2 && return 0
	fail "$1" "could not capture a guest's RAM image (tests/fuzz/guest_image.py)"
	return 1
}

# suite NAME MIN CMD...: run one suite, its output to the terminal and to
# $SUITE_OUT, and count everything that can happen to it.  A suite has
# failed, whatever its own lines said, when
#   - a signal killed it (exit status 128+N: SIGKILL by the OOM killer,
#     a sanitizer's abort, a timeout);
#   - it exited non-zero without reporting a failed check (a `set -u`
#     abort, an uncaught exception, `exit 1` by mistake);
#   - it reported fewer than MIN checks (pass, fail or skip lines): it
#     stopped halfway, or lost a part; MIN is what the suite states;
#   - it prints `CHECKS N MIN2` (the Python suites, as their last line:
#     they state their own floor, which depends on what they ran): that
#     line missing, N < MIN2, or N not what they wrote to $RESULTS (pass
#     and fail lines), so that a retry cannot count twice.
# A pipe's status is the last command's: the suite's own exit status
# comes back through a file, never through tee.
SUITE_SEQ=0
suite() {
	s_name=$1 s_min=$2
	shift 2
	SUITE_SEQ=$((SUITE_SEQ + 1))
	SUITE_OUT=$SENTINEL_TEST_TMP/suite.$$.$SUITE_SEQ.out
	s_n0=$(results_count '')
	s_f0=$(results_count fail)
	s_pf0=$((s_n0 - $(results_count skip)))
	rm -f "$SUITE_OUT.rc"
	{
		"$@" 2>&1
		echo $? > "$SUITE_OUT.rc"
	} | tee "$SUITE_OUT"
	s_rc=$(cat "$SUITE_OUT.rc" 2>/dev/null || echo 255)
	s_n=$(($(results_count '') - s_n0))
	s_f=$(($(results_count fail) - s_f0))
	s_pf=$(($(results_count '') - $(results_count skip) - s_pf0))
	if [ "$s_rc" -gt 128 ] && [ "$s_rc" -lt 192 ]; then
		fail "$s_name: ran to its end" "killed by signal $((s_rc - 128)) after $s_n checks (exit status $s_rc)"
	elif [ "$s_rc" -ne 0 ] && [ "$s_f" -eq 0 ]; then
		fail "$s_name: ran to its end" "exited $s_rc after $s_n checks without reporting a failed one: $(grep -v '^PASS ' "$SUITE_OUT" | tail -n 3)"
	fi
	if [ "$s_n" -lt "$s_min" ]; then
		fail "$s_name: ran its checks" "$s_n checks, fewer than the $s_min it must run"
	fi
	s_line=$(grep '^CHECKS [0-9]* [0-9]*$' "$SUITE_OUT" | tail -n 1)
	if [ "${SUITE_PY:-0}" = 1 ]; then
		if [ -z "$s_line" ]; then
			fail "$s_name: ran to its end" "no CHECKS line: the suite stopped before its end ($s_n checks reported)"
		else
			set -- $s_line
			if [ "$2" -lt "$3" ]; then
				fail "$s_name: ran its checks" "$2 checks, fewer than the $3 it states it must run"
			elif [ "$2" -ne "$s_pf" ]; then
				fail "$s_name: counted once" "it says $2 checks but wrote $s_pf pass/fail lines"
			fi
		fi
	fi
	return 0
}

# py_suite NAME SCRIPT ARGS...: a Python test suite (it reports its own
# PASS/FAIL lines into $RESULTS and ends with its CHECKS line).
# guests_can_run NAME: whether guests can boot here; if not, NAME/* is
# skipped with the reason (SENTINEL_SKIP_GUEST=1, or no QEMU)
guests_can_run() {
	if [ "${SENTINEL_SKIP_GUEST:-0}" = 1 ]; then
		skip "$1/*" "SENTINEL_SKIP_GUEST=1"
		return 1
	fi
	if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
		skip "$1/*" "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
		return 1
	fi
}

py_suite() {
	p_name=$1
	shift
	p_t0=$(date +%s)
	SUITE_PY=1
	suite "$p_name" 1 "${PYTHON:-python3}" "$@"
	SUITE_PY=0
	echo "-- $p_name: $(($(date +%s) - p_t0)) s"
	rm -f "$SUITE_OUT" "$SUITE_OUT.rc"
}
