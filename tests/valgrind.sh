#!/bin/sh
# rulec under valgrind (memcheck): no leaks, no invalid accesses.  Memory
# that libLLVM's own global constructors allocate stays reachable until
# exit, as in every LLVM tool: only definite and indirect leaks count.
set -u
. "$(dirname "$0")/lib.sh"
rulec=$1
if ! command -v valgrind >/dev/null 2>&1; then
	skip "valgrind/rulec" "valgrind not installed"
	exit 0
fi
tmp=$(mktemp -d "$SENTINEL_TEST_TMP/vg.XXXXXX")   # removed with the run's directory (tests/lib.sh)
# each run: the exit status rulec must give (valgrind's own is 99), then the arguments
while read -r want args; do
	# shellcheck disable=SC2086
	valgrind -q --suppressions="$(dirname "$0")/valgrind.supp" --leak-check=full --show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 "$rulec" $args > "$tmp/out" 2>&1
	rc=$?
	if [ $rc -eq "$want" ]; then
		pass "valgrind/rulec $args (exit $rc)"
	elif [ $rc -eq 99 ]; then
		fail "valgrind/rulec $args" "$(grep '==' "$tmp/out" | head -30)"
	else
		fail "valgrind/rulec $args" "exit $rc, not $want: $(tail -5 "$tmp/out")"
	fi
done <<EOF
0 --check rules/
1 --check tests/check/syntax.yaml tests/check/types.yaml tests/check/alias-bomb.yaml
0 -o $tmp/vg.bundle rules/paper.yaml
0 test rules/tests/processes.yaml
2 test rules/tests/processes.yaml tests/check/ruletest-errors.yaml
EOF
