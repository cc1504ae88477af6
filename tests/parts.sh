#!/bin/sh
# rulec on a large rule set (make check's full tier: three compiles of 600
# rules under ASan take 35 s, too long for the edit loop's tier).
#   sh tests/parts.sh RULEC
set -u
. "$(dirname "$0")/lib.sh"
rulec=$1

# Large rule sets: PTX in parts the driver's linker compiles separately
# (rulec/compile.c COMP_PART_RULES).  600 rules are three parts: the
# runtime, rules 0-511, rules 512-599.  Each rule is defined in exactly one
# part; with CUDA's ptxas and nvlink at hand, the parts compile separately
# and link.
big=$(mktemp -d "$SENTINEL_TEST_TMP/parts.XXXXXX")
sh bench/gen_rules.sh 600 "$big" > /dev/null
"$rulec" -q --emit=ptx "$big/sentinel.yaml" > "$big/all.ptx" 2> "$big/err"
marks=$(grep -c '^// sentinel: part [0-9]* of 3$' "$big/all.ptx")
defs=$(grep -c '^\.visible \.func rule_[0-9]*($' "$big/all.ptx")
uniq=$(grep '^\.visible \.func rule_[0-9]*($' "$big/all.ptx" | sort -u | wc -l)
if [ "$marks" -eq 3 ] && [ "$defs" -eq 600 ] && [ "$uniq" -eq 600 ]; then
	pass "cli/ptx-in-parts"
else
	fail "cli/ptx-in-parts" "$marks part marks (want 3), $defs rule definitions, $uniq distinct (want 600): $(cat "$big/err")"
fi
"$rulec" -q -o "$big/x.bundle" "$big/sentinel.yaml" 2>> "$big/err"
expect_msg ptx-parts-in-manifest 0 '"parts": 3' "$rulec" -q --emit=manifest "$big/sentinel.yaml"
cuda=${CUDA_HOME:-/usr/local/cuda}/bin
if command -v ptxas > /dev/null 2>&1 || [ -x "$cuda/ptxas" ]; then
	PATH=$PATH:$cuda
	awk -v d="$big" '/^\/\/ sentinel: part / { f = sprintf("%s/part%s.ptx", d, $4); next } { print > f }' "$big/all.ptx"
	out=$(for p in 1 2 3; do ptxas -c -arch=sm_90 "$big/part$p.ptx" -o "$big/part$p.o" || exit 1; done 2>&1 &&
	      nvlink -arch=sm_90 "$big/part1.o" "$big/part2.o" "$big/part3.o" -o "$big/all.cubin" 2>&1)
	if [ $? -eq 0 ] && [ -s "$big/all.cubin" ]; then pass "cli/ptx-parts-link"; else fail "cli/ptx-parts-link" "$out"; fi
else
	skip "cli/ptx-parts-link" "no ptxas: the CUDA toolkit is not installed (the GPU tests link parts through the driver)"
fi
rm -rf "$big"
