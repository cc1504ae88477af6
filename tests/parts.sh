#!/bin/sh
# rulec on a large rule set (make check's full tier: three compiles of 600
# rules under ASan take 35 s, too long for the edit loop's tier).
#   sh tests/parts.sh RULEC
set -u
. "$(dirname "$0")/lib.sh"
rulec=$1

# Large rule sets: PTX in parts the driver's linker compiles separately
# (rulec/compile.c COMP_PART_RULES).  600 generated rules are five shapes
# (rulec/cg_shape.c: rules that differ only in their numbers share one
# function): three parts, the runtime, the five shapes' functions, and the
# rules' data tables (their numbers and descriptors, zeros in the code:
# the engine writes them at load).  Each shape is defined in exactly one
# part; a changed threshold and for: change no PTX at all, only the
# bundle's data; with CUDA's ptxas and nvlink at hand, the parts compile
# separately and link.
big=$(mktemp -d "$SENTINEL_TEST_TMP/parts.XXXXXX")
sh bench/gen_rules.sh 600 "$big" > /dev/null
"$rulec" -q --emit=ptx "$big/sentinel.yaml" > "$big/all.ptx" 2> "$big/err"
marks=$(grep -c '^// sentinel: part [0-9]* of 3$' "$big/all.ptx")
defs=$(grep -c '^\.visible \.func rule_[0-9]*($' "$big/all.ptx")
uniq=$(grep '^\.visible \.func rule_[0-9]*($' "$big/all.ptx" | sort -u | wc -l)
data=$(awk '/^\/\/ sentinel: part 3 of 3$/{f=1} f && /^\.visible \.global .* sn_rule_(shape|desc|cbase|const)\[/' "$big/all.ptx" | wc -l)
if [ "$marks" -eq 3 ] && [ "$defs" -eq 5 ] && [ "$uniq" -eq 5 ] && [ "$data" -eq 4 ]; then
	pass "cli/ptx-in-parts"
else
	fail "cli/ptx-in-parts" "$marks part marks (want 3), $defs shape functions, $uniq distinct (want 5), $data data tables in the last part (want 4): $(cat "$big/err")"
fi
split_parts() {     # split_parts FILE PREFIX: PREFIX1.ptx ... one file a part
	awk -v d="$2" '/^\/\/ sentinel: part / { f = sprintf("%s%s.ptx", d, $4); next } { print > f }' "$1"
}
sed -e '0,/> 50%)/s//> 51%)/' -e '0,/for: 1s/s//for: 7s/' "$big/sentinel.yaml" > "$big/changed.yaml"
"$rulec" -q --emit=ptx "$big/changed.yaml" > "$big/changed.ptx" 2>> "$big/err"
split_parts "$big/all.ptx" "$big/a"
split_parts "$big/changed.ptx" "$big/b"
# the data: the bundles' last sections (BD_SEC_DATA), sn_rule_const's
# doubles and sn_rule_desc's for_ns, differ; one would if a number were lost
"$rulec" -q -o "$big/x.bundle" "$big/sentinel.yaml" 2>> "$big/err"
"$rulec" -q -o "$big/y.bundle" "$big/changed.yaml" 2>> "$big/err"
datadiff=$(python3 - "$big/x.bundle" "$big/y.bundle" <<'PY'
import struct, sys
def tables(path):
    b = open(path, "rb").read()
    n = struct.unpack_from("<I", b, 12)[0]
    q, out = 32, {}
    for _ in range(n):
        kind, nl, dl = struct.unpack_from("<IIQ", b, q)
        name = b[q + 16:q + 16 + nl].decode()
        if kind == 4:
            out[name] = b[q + 16 + nl:q + 16 + nl + dl]
        q += 16 + nl + dl + (8 - (nl + dl) % 8) % 8
    return out
a, b = tables(sys.argv[1]), tables(sys.argv[2])
print(" ".join(sorted(k for k in a if a[k] != b.get(k))) or "none", len(a))
PY
)
if ! cmp -s "$big/sentinel.yaml" "$big/changed.yaml" && cmp -s "$big/all.ptx" "$big/changed.ptx" &&
	[ "$datadiff" = "sn_rule_const sn_rule_desc 4" ]; then
	pass "cli/ptx-threshold-changes-data-alone"
else
	fail "cli/ptx-threshold-changes-data-alone" "a threshold and a for: changed: the PTX must stay byte for byte ($(cmp "$big/all.ptx" "$big/changed.ptx")), the bundles' data tables sn_rule_const and sn_rule_desc of 4 must differ (differing, tables: $datadiff)"
fi
expect_msg ptx-parts-in-manifest 0 '"parts": 3' "$rulec" -q --emit=manifest "$big/sentinel.yaml"
cuda=${CUDA_HOME:-/usr/local/cuda}/bin
if command -v ptxas > /dev/null 2>&1 || [ -x "$cuda/ptxas" ]; then
	PATH=$PATH:$cuda
	split_parts "$big/all.ptx" "$big/part"
	out=$(for p in 1 2 3; do ptxas -c -arch=sm_90 "$big/part$p.ptx" -o "$big/part$p.o" || exit 1; done 2>&1 &&
	      nvlink -arch=sm_90 "$big/part1.o" "$big/part2.o" "$big/part3.o" -o "$big/all.cubin" 2>&1)
	if [ $? -eq 0 ] && [ -s "$big/all.cubin" ]; then pass "cli/ptx-parts-link"; else fail "cli/ptx-parts-link" "$out"; fi
else
	skip "cli/ptx-parts-link" "no ptxas: the CUDA toolkit is not installed (the GPU tests link parts through the driver)"
fi
rm -rf "$big"
