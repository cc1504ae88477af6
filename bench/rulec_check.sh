#!/bin/sh
# rulec --check on 10,000 rules, side by side with promtool check rules on
# 10,000 equivalent Prometheus rules, in the same run.
#   sh bench/rulec_check.sh [N] [REPEATS]
# Prints the median wall time and the peak RSS of each tool.
set -eu
n=${1:-10000}
reps=${2:-7}
rulec=${RULEC:-build/rulec}
out=bench/out
sh bench/gen_rules.sh "$n" "$out"
command -v promtool >/dev/null 2>&1 || { echo "promtool not found: apt-get install prometheus"; promtool=; }
. "$(dirname "$0")/lib.sh"

echo "rules: $n (sentinel $(wc -c < "$out/sentinel.yaml") bytes, prometheus $(wc -c < "$out/prometheus.yaml") bytes), $reps runs each"
measure rulec "$rulec" --check -q "$out/sentinel.yaml"
[ -n "${promtool-x}" ] && measure promtool promtool check rules "$out/prometheus.yaml"
tail -n 1 "$out/rulec.out" 2>/dev/null || true
