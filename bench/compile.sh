#!/bin/sh
# rulec -o on the shipped rules and on N generated rules (bench/gen_rules.sh:
# five rule shapes, one file), the median of REPEATS runs each, and the
# device code each rule becomes.
#   sh bench/compile.sh [N] [REPEATS]
set -eu
n=${1:-1000}
reps=${2:-5}
rulec=${RULEC:-build/rulec}
out=bench/out
sh bench/gen_rules.sh "$n" "$out" > /dev/null
width=22
. "$(dirname "$0")/lib.sh"
echo "rulec -o, $reps runs each ($(nproc) CPUs)"
measure "shipped rules ($(grep -c 'alert:' rules/*.yaml | awk -F: '{s+=$2} END {print s}'))" \
	"$rulec" -q -o "$out/shipped.bundle" rules/
measure "$n generated rules" "$rulec" -q -o "$out/generated.bundle" "$out/sentinel.yaml"
ls -l "$out/generated.bundle" | awk '{printf "bundle: %.1f MiB\n", $5 / 1048576}'

# Device code per rule: each rule is one PTX function (rule_N); the rest is
# the runtime and the metric library, shared by all rules.
"$rulec" --emit=ptx "$out/sentinel.yaml" > "$out/generated.ptx" 2>/dev/null
# (PTX declares every function first, "NAME\n(...)\n;", and defines it
# later: only definitions count)
awk '
	/^[.]((visible|weak) [.])?(func|entry)/ { cur = ($0 ~ /rule_[0-9]/) ? "rule" : ($0 ~ /job_[0-9]/) ? "job" : "shared"
		hdr = 1; buf = 0 }
	hdr { buf += length($0) + 1; if ($0 == ";") { hdr = 0; cur = "decl" } else if ($0 ~ /^\{/) { hdr = 0
		if (cur == "rule") { nr++; rb[nr] = buf } b[cur] += buf } next }
	{ b[cur] += length($0) + 1; if (cur == "rule") rb[nr] += length($0) + 1 }
	END {
		for (i = 1; i <= nr; i++) print rb[i] > "'"$out"'/rule-sizes"
		printf "%d %.0f %.0f %.0f\n", nr, b["rule"] / nr, b["shared"] / 1024, b["job"] / 1024
	}' "$out/generated.ptx" > "$out/sizes"
read -r nr avg shared jobs < "$out/sizes"
sort -n "$out/rule-sizes" | awk -v nr="$nr" -v avg="$avg" -v shared="$shared" -v jobs="$jobs" '
	{ s[NR] = $1 } END {
		printf "PTX (sm_70): %d rules, %d bytes per rule (median %d, min %d, max %d); shared runtime %d KiB; jobs %d KiB\n",
			nr, avg, s[int((NR + 1) / 2)], s[1], s[NR], shared, jobs }'
"$rulec" -q --emit=ptx rules/ > "$out/shipped.ptx" 2>/dev/null
awk '/^[.]((visible|weak) [.])?func rule_[0-9]+[(]$/ { nr++; cur = 1; next } /^[.]((visible|weak) [.])?(func|entry)/ { cur = 0 }
	cur { b += length($0) + 1 } END { printf "PTX (sm_70), shipped rules: %d rules, %.0f bytes per rule\n", nr, b / nr }' \
	"$out/shipped.ptx"
