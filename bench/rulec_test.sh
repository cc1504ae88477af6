#!/bin/sh
# rulec test: the shipped rules' tests (rules/tests/*.yaml), and one rule
# over a day of 1 s ticks (tests/ruletest/day-test.yaml: an hour-long
# window, a 23 h `for`).  Each runs
# the rules' compiled code on a simulated clock.
#   sh bench/rulec_test.sh [REPEATS]
set -eu
reps=${1:-7}
rulec=${RULEC:-build/rulec}
out=bench/out
mkdir -p "$out"
. "$(dirname "$0")/lib.sh"
echo "rulec test: $(ls rules/tests/*.yaml | wc -l) files, $(grep -c 'eval_time:' rules/tests/*.yaml | awk -F: '{s+=$2} END {print s}') alert tests; $reps runs each"
measure shipped "$rulec" test rules/tests/*.yaml
tail -n 1 "$out/shipped.out"
measure day "$rulec" test tests/ruletest/day-test.yaml
echo "day: 90,060 ticks of 1 s; $(tail -n 1 "$out/day.out")"
