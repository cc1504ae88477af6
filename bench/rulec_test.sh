#!/bin/sh
# rulec test: the shipped rules' tests (rules/tests/*.yaml), and one rule
# over a day of 1 s ticks (an hour-long window, a 23 h `for`).  Each runs
# the rules' compiled code on a simulated clock.
#   sh bench/rulec_test.sh [REPEATS]
set -eu
reps=${1:-7}
rulec=${RULEC:-build/rulec}
out=bench/out
mkdir -p "$out"
. "$(dirname "$0")/lib.sh"
cat > "$out/day.yaml" <<'YAML'
groups:
  - name: day
    rules:
      - alert: DayWithoutForks
        expr: delta(host.forks[1h]) == 0
        for: 23h
        severity: warning
YAML
cat > "$out/day-test.yaml" <<'YAML'
rule_files: [day.yaml]
evaluation_interval: 1s
tests:
  - interval: 1m
    input_series:
      - series: host.forks
        values: '0+10x60 600x1445'
    alert_rule_test:
      - eval_time: 24h59m
        alertname: DayWithoutForks
      - eval_time: 25h1m
        alertname: DayWithoutForks
        exp_alerts:
          - exp_labels: {severity: warning}
YAML
echo "rulec test: $(ls rules/tests/*.yaml | wc -l) files, $(grep -c 'eval_time:' rules/tests/*.yaml | awk -F: '{s+=$2} END {print s}') alert tests; $reps runs each"
measure shipped "$rulec" test rules/tests/*.yaml
tail -n 1 "$out/shipped.out"
measure day "$rulec" test "$out/day-test.yaml"
echo "day: 90,060 ticks of 1 s; $(tail -n 1 "$out/day.out")"
