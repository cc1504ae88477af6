#!/bin/sh
# bash completion (tools/completion/sentinel.bash): what each word offers,
# asked the way bash asks (COMP_WORDS, COMP_CWORD, the function complete
# names), in a bash of its own.
set -u
. "$(dirname "$0")/lib.sh"
if ! command -v bash >/dev/null 2>&1; then
	skip "completion/*" "no bash"
	exit 0
fi
# NAME WANT WORD...: completing the last WORD offers WANT (a space-separated list, in order)
one() {
	name=$1 want=$2
	shift 2
	got=$(cd "$(dirname "$0")/.." && bash -c '
		. tools/completion/sentinel.bash
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		f=$(complete -p "$1" | sed "s/.*-F \([^ ]*\).*/\1/")
		"$f"; printf "%s " "${COMPREPLY[@]}"' bash "$@" 2>&1)
	got=${got% }
	if [ "$got" = "$want" ]; then pass "completion/$name: $*"; else fail "completion/$name: $*" "offered '$got', wanted '$want'"; fi
}
one ctl-commands "status" sentinelctl st
one ctl-all-commands "status rules alerts reload" sentinelctl ""
one ctl-options "--config" sentinelctl --con
one rulec-formats "--list-metrics=markdown" rulec --list-metrics=mark
one rulec-emit "--emit=ptx" rulec --emit=pt
one rulec-test "test tests" rulec te
one rulec-test-options "--run" rulec test --ru
one rulec-rule-files "rules/cpu.yaml" rulec rules/cp
exit 0
