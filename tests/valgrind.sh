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
out=${TMPDIR:-/tmp}/sentinel-vg.bundle
for args in "--check rules/" "--check tests/check/syntax.yaml tests/check/types.yaml tests/check/alias-bomb.yaml" \
	"-o $out rules/paper.yaml" "test rules/tests/processes.yaml tests/check/ruletest-errors.yaml"; do
	# shellcheck disable=SC2086
	if valgrind -q --suppressions="$(dirname "$0")/valgrind.supp" --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
		--error-exitcode=99 "$rulec" $args > /tmp/sentinel-vg.out 2>&1; [ $? -ne 99 ]; then
		pass "valgrind/rulec $args"
	else
		fail "valgrind/rulec $args" "$(grep '==' /tmp/sentinel-vg.out | head -30)"
	fi
done
rm -f "$out"
