#!/bin/sh
# Data-driven rulec tests.  Each NAME.yaml (or NAME.args, the command line)
# in this folder is checked with rulec; its output and exit status must
# equal NAME.expected.  `sh tests/check/run.sh RULEC --update` rewrites the
# expected files (review the diff before committing!).
# Then: every diagnostic rulec can emit must appear in some .expected file
# (or in the test elsewhere.txt names for it).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
rulec=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
update=${2:-}

# file-too-large needs a file over the 64 MiB limit: make a sparse one.
truncate -s 65M "$here/generated-huge.yaml"

cd "$here" || exit 1
# NAME.cmd: a whole command line instead (rulec test ...)
for f in *.yaml *.args *.cmd; do
	name=${f%.*}
	check=--check
	case $f in
	*.yaml) [ -f "$name.args" ] || [ -f "$name.cmd" ] && continue; args="--color=never $f" ;;
	*.args) args="--color=never $(cat "$f")" ;;
	*.cmd) args=$(cat "$f"); check= ;;
	esac
	# shellcheck disable=SC2086
	out=$("$rulec" $check $args 2>&1; echo "exit: $?")
	if [ "$update" = --update ]; then
		printf '%s\n' "$out" > "$name.expected"
	fi
	if [ ! -f "$name.expected" ]; then
		fail "check/$name" "no $name.expected; run: sh tests/check/run.sh build/san/rulec --update"
	elif printf '%s\n' "$out" | diff -u "$name.expected" - > "$SENTINEL_TEST_TMP/check.diff" 2>&1; then
		pass "check/$name"
	else
		fail "check/$name" "$(head -40 "$SENTINEL_TEST_TMP/check.diff")"
	fi
done
rm -f "$here/generated-huge.yaml"

# A code that needs a live kernel is tested where one boots: elsewhere.txt
# names the file and the test in it (CODE: FILE FUNCTION), and the code
# must stand in that function's body, from its def line to the next line
# that starts in the first column (a Python def, or a shell NAME() {).
missing=
for code in $("$rulec" --list-diagnostics | awk '{print $1}'); do
	grep -q "\[$code\]" ./*.expected && continue
	where=$(sed -n "s/^$code: *//p" elsewhere.txt 2>/dev/null)
	file=${where%% *} test=${where#* }
	if [ -n "$where" ] && [ -f "../../$file" ] &&
		awk -v t="$test" 'index($0, "def " t "(") == 1 || index($0, t "()") == 1 { on = 1; next }
			on && /^[^ \t#]/ { exit } on' "../../$file" | grep -qF "[$code]"; then
		continue
	fi
	missing="$missing $code${where:+ (not in $where)}"
done
if [ -z "$missing" ]; then
	pass "check/every-diagnostic-is-tested"
else
	fail "check/every-diagnostic-is-tested" "no expected output, nor the test elsewhere.txt names for it, shows:$missing"
fi
