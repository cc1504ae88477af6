#!/bin/sh
# check-options.sh PROGRAM PAGE
#
# Every option that `PROGRAM --help` prints must appear in the man page PAGE,
# written with a roff escape for each hyphen ("--check" as "\-\-check").
#
# Options are taken from
#   - help lines that start (after leading blanks) with '-': the option part
#     of the line, up to the first run of two or more blanks, so that
#     "-s, --socket PATH   text" gives -s and --socket, and
#     "--trial B --trial-target N [--trial-backend B]" gives all three;
#   - the "Usage:" line and its continuation lines (those that start with
#     blanks and the program's name).
# A value is stripped: "--emit=WHAT" -> --emit, "--list-metrics[=json]" ->
# --list-metrics.  Font escapes (\fB, \fR, \f(CW, \f[B]) are removed from the
# page before the search; an option matches only as a whole word ("\-c" is
# not found inside "\-\-check" or "\-\-color").
#
# Exit status: 0 every option is in the page, 1 some are missing (listed on
# stderr), 2 usage error or the program cannot be run.
LC_ALL=C
export LC_ALL

if [ $# -ne 2 ]; then
	echo "usage: $0 PROGRAM PAGE" >&2
	exit 2
fi
prog=$1
page=$2
if [ ! -r "$page" ]; then
	echo "$0: cannot read $page" >&2
	exit 2
fi
help=$("$prog" --help 2>&1) || {
	echo "$0: '$prog --help' failed" >&2
	exit 2
}
name=${prog##*/}

opts=$(printf '%s\n' "$help" | awk -v name="$name" '
function grab(s,    t) {
	while (match(s, /-(-)?[A-Za-z0-9][A-Za-z0-9_-]*/)) {
		t = substr(s, RSTART, RLENGTH)
		# a token, not the inside of a word ("rulec-backend", "x-y")
		if (RSTART == 1 || substr(s, RSTART - 1, 1) ~ /[ \t,\[|(]/)
			print t
		s = substr(s, RSTART + RLENGTH)
	}
}
/^Usage:/ { usage = 1; sub(/^Usage:[ \t]*/, ""); grab($0); next }
usage && $1 == name { grab($0); next }
{ usage = 0 }
/^[ \t]*-/ {
	line = $0
	sub(/^[ \t]+/, "", line)
	# the option part: up to two blanks in a row (the description after)
	if (match(line, /[ \t][ \t]/))
		line = substr(line, 1, RSTART - 1)
	grab(line)
}' | sort -u)

if [ -z "$opts" ]; then
	echo "$0: no options found in '$prog --help'" >&2
	exit 2
fi

# the page's text without font escapes
text=$(sed -e 's/\\f\[[^]]*\]//g' -e 's/\\f([A-Za-z][A-Za-z]//g' -e 's/\\f[A-Za-z1-4]//g' "$page")

missing=
n=0
for o in $opts; do
	n=$((n + 1))
	esc=$(printf '%s' "$o" | sed 's/-/\\\\-/g')        # -- -> \\-\\- (an ERE)
	if ! printf '%s\n' "$text" |
		grep -Eq "(^|[^A-Za-z0-9_-])${esc}(\$|[^A-Za-z0-9_\\\\]|\\\\[^-])"; then
		missing="$missing $o"
	fi
done

if [ -n "$missing" ]; then
	echo "$page lacks these options of $prog --help (written with \\- for each -):" >&2
	for o in $missing; do
		echo "  $o" >&2
	done
	exit 1
fi
echo "$page: all $n options of $name --help are there"
exit 0
