#!/bin/sh
# rulec under valgrind (memcheck): no leaks, no invalid accesses.
set -u
. "$(dirname "$0")/lib.sh"
rulec=$1
if ! command -v valgrind >/dev/null 2>&1; then
	skip "valgrind/rulec" "valgrind not installed"
	exit 0
fi
for args in "rules/" "tests/check/syntax.yaml tests/check/types.yaml tests/check/alias-bomb.yaml"; do
	# shellcheck disable=SC2086
	if valgrind -q --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
		--error-exitcode=99 "$rulec" --check $args > /tmp/sentinel-vg.out 2>&1; [ $? -ne 99 ]; then
		pass "valgrind/rulec $args"
	else
		fail "valgrind/rulec $args" "$(grep '==' /tmp/sentinel-vg.out | head -30)"
	fi
done
