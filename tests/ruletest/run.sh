#!/bin/sh
# `rulec test`: the shipped rules' own tests, and the runner's behaviour.
#   sh tests/ruletest/run.sh RULEC
# (The test-file parser's diagnostics and a deliberately wrong test's diff
# are data-driven cases in tests/check: ruletest-*.cmd.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
top=$(cd "$here/../.." && pwd)
rulec=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d "$SENTINEL_TEST_TMP/ruletest.XXXXXX")   # removed with the run's directory (tests/lib.sh)
cd "$top" || exit 1

# every shipped rule file's tests pass, through the compiled rules
if out=$("$rulec" test --junit "$tmp/junit.xml" rules/tests/*.yaml 2>&1); then
	pass "ruletest/shipped: $(printf '%s\n' "$out" | tail -n 1)"
else
	fail "ruletest/shipped" "$out"
fi

# every shipped rule is named by some test
missing=
for r in $(sed -n 's/^ *- alert: *//p' rules/*.yaml); do
	grep -q "alertname: $r\$" rules/tests/*.yaml || missing="$missing $r"
done
if [ -z "$missing" ]; then
	pass "ruletest/every-shipped-rule-is-tested"
else
	fail "ruletest/every-shipped-rule-is-tested" "no test in rules/tests names:$missing"
fi

# the JUnit report: well-formed, one testcase per alert test, no failures
if python3 - "$tmp/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall(".//testcase")
assert root.tag == "testsuites" and len(cases) >= 40, (root.tag, len(cases))
assert not root.findall(".//failure")
PY
then
	pass "ruletest/junit-report"
else
	fail "ruletest/junit-report" "$(head -c 2000 "$tmp/junit.xml")"
fi

# a failing test: exit 1, and a <failure> in the report
"$rulec" test --junit "$tmp/wrong.xml" tests/check/ruletest-wrong.yaml > "$tmp/wrong.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q '<failure message="expected: {severity=&quot;warning&quot;}' "$tmp/wrong.xml"; then
	pass "ruletest/failure-exit-1-and-junit"
else
	fail "ruletest/failure-exit-1-and-junit" "exit $rc; $(cat "$tmp/wrong.out" "$tmp/wrong.xml")"
fi

# --run: only the named groups
out=$("$rulec" test -v --run 'hung task' rules/tests/processes.yaml 2>&1)
if printf '%s\n' "$out" | grep -q "ok: a hung task names itself: HungTask" &&
   ! printf '%s\n' "$out" | grep -q "ForkBomb" && printf '%s\n' "$out" | grep -q ": 3 passed, 0 failed"; then
	pass "ruletest/run-filter"
else
	fail "ruletest/run-filter" "$out"
fi

# usage errors: exit 2 with advice
"$rulec" test > "$tmp/none.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "no test files" "$tmp/none.out"; then
	pass "ruletest/no-files-is-usage-error"
else
	fail "ruletest/no-files-is-usage-error" "exit $rc: $(cat "$tmp/none.out")"
fi

# an hour-long window in milliseconds: 24 h of 1 s ticks (day-test.yaml)
start=$(date +%s%N)
out=$("$rulec" test tests/ruletest/day-test.yaml 2>&1)
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ $rc -eq 0 ]; then
	pass "ruletest/24h-of-1s-ticks ($ms ms: $(printf '%s\n' "$out" | tail -n 1))"
else
	fail "ruletest/24h-of-1s-ticks" "$out"
fi

# One test file of tests/ruletest: NAME FILE [no-warnings]; it passes, and
# (no-warnings) rulec says no warning about its rules.
test_file() {
	if out=$("$rulec" test "tests/ruletest/$2" 2>&1) && { [ "${3:-}" != no-warnings ] ||
			! printf '%s\n' "$out" | grep -q warning; }; then
		pass "ruletest/$1: $(printf '%s\n' "$out" | tail -n 1)"
	else
		fail "ruletest/$1" "$out"
	fi
}

# weeks: a [2w] window and for: 1w over three weeks of 10 min ticks
test_file weeks week-test.yaml

# total(): counters compared as they are, since boot
test_file total total-test.yaml

# increase(): rate() times the window, host and per-task (a derived task column)
test_file increase increase-test.yaml

# windows: partial (Prometheus' meaning) against covered, an hour's window in its first minutes
test_file partial partial-test.yaml

# windows over conditions: min/max/avg_over_time of a condition metric, per host and per interface
test_file condition-windows condwin-test.yaml

# aggregations over tasks with a where filter (a predicate in the task loop)
test_file where-over-tasks where-test.yaml

# count, max, min, all and any over disks, interfaces, mounts and cgroups
test_file aggregations-over-objects objects-test.yaml

# per-entity rules: one alert per filesystem, task, CPU and disk, each with
# its own for:, M of N and clear:, the cap's overflow alert
test_file one-alert-per-entity entities-test.yaml no-warnings

# =~ and !~ over every kind of name (interfaces, disks, mounts, cgroups,
# tasks) and task states: the pattern's DFA in the compiled code
test_file patterns-over-names match-test.yaml
