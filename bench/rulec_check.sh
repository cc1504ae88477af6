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
[ -x /usr/bin/time ] || { echo "GNU time not found: apt-get install time"; exit 2; }

# measure NAME CMD... : REPEATS runs; median seconds and max RSS (KiB)
measure() {
	name=$1; shift
	: > "$out/times"
	i=0
	while [ $i -lt "$reps" ]; do
		/usr/bin/time -f '%e %M' -o "$out/one" "$@" > "$out/$name.out" 2>&1 || {
			echo "$name failed:"; tail -5 "$out/$name.out"; exit 1; }
		cat "$out/one" >> "$out/times"
		i=$((i + 1))
	done
	sort -n "$out/times" | awk -v name="$name" -v n="$reps" '
		{ t[NR] = $1; if ($2 > m) m = $2 }
		END { printf "%-10s median %.3f s  (min %.3f, max %.3f)  peak RSS %.1f MiB\n",
			name, t[int((n + 1) / 2)], t[1], t[n], m / 1024 }'
}
echo "rules: $n (sentinel $(wc -c < "$out/sentinel.yaml") bytes, prometheus $(wc -c < "$out/prometheus.yaml") bytes), $reps runs each"
measure rulec "$rulec" --check -q "$out/sentinel.yaml"
[ -n "${promtool-x}" ] && measure promtool promtool check rules "$out/prometheus.yaml"
tail -n 1 "$out/rulec.out" 2>/dev/null || true
