#!/bin/sh
# The manual pages (docs/man): each lints clean (mandoc -T lint, warnings
# and up), and every option a program's --help prints is in its page
# (tests/man-options.sh).
#   sh tests/man.sh BUILD-DIR
set -u
. "$(dirname "$0")/lib.sh"
b=${1:-build}
if ! command -v mandoc >/dev/null 2>&1; then
	skip "man/*" "mandoc not installed (apt-get install mandoc)"
	exit 0
fi
for page in docs/man/*.[158]; do
	out=$(mandoc -T lint -W warning "$page" 2>&1)
	if [ -z "$out" ]; then pass "man/lint: $page"; else fail "man/lint: $page" "$out"; fi
done
for prog in rulec sentineld sentinelctl sentinel-inspect; do
	page=$(ls docs/man/$prog.[18] 2>/dev/null | head -n 1)
	if [ -z "$page" ]; then
		fail "man/options: $prog has no page in docs/man"
		continue
	fi
	out=$(sh tests/man-options.sh "$b/$prog" "$page" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then pass "man/options: every option of $prog --help is in $page"; else fail "man/options: $prog --help against $page (exit $rc)" "$out"; fi
done
exit 0
