#!/bin/sh
# The rules the docs show are rules rulec accepts (issue 33): every rule
# block and every rule of a `today` table's "yes" rows in docs/*.md and
# README.md is checked by rulec; a block marked
# <!-- rulec: expect-error [CODE]... WHY --> must fail, with those codes.
# The conventions: docs/testing.md, "Rules in the docs".
#   sh tests/docs/run.sh RULEC [FILE.md...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
rulec=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
cd "$here/../.." || exit 1
[ $# -gt 0 ] || set -- docs/*.md README.md
tmp=$(mktemp -d "$SENTINEL_TEST_TMP/docs.XXXXXX")   # removed with the run's directory (tests/lib.sh)

# the extractor's verdicts, one a line: pass NAME, or fail NAME DETAILFILE
"${PYTHON:-python3}" "$here/docblocks.py" "$rulec" "$tmp" "$@" > "$tmp/verdicts" 2> "$tmp/stderr"
rc=$?
tab=$(printf '\t')
n=0
while IFS="$tab" read -r what name detail; do
	n=$((n + 1))
	case $what in
	pass) pass "$name" ;;
	fail) fail "$name" "$(cat "$detail")" ;;
	*) fail "docs/verdict $n" "not a verdict: $what $name" ;;
	esac
done < "$tmp/verdicts"
if [ $rc -ne 0 ]; then
	fail "docs/extractor ran to its end" "tests/docs/docblocks.py exited $rc after $n verdicts: $(tail -n 20 "$tmp/stderr")"
fi
[ $n -gt 0 ] || fail "docs/found rules" "no rule found in $*"
