#!/bin/sh
# Compiler IR tests: each file is an input and its expected rewrite.
#
#   NAME.ll  LLVM IR, run through `rulec --pass=P`
#   NAME.c   C, compiled by clang (-O1 -g, as the metric library is), then
#            the same
#
# Directives, in comments (; for .ll, // for .c):
#   PASS: core,llview       the passes to run (required)
#   TARGET: nvptx64-nvidia-cuda   for .c files (default: the host)
#   CHECK:, CHECK-NOT:, ...   FileCheck lines against rulec's output
#   ERROR: TEXT             the passes must fail (exit 1: an error, not a
#                           crash) with TEXT in the message
#
#   sh tests/compiler/run.sh build/san/rulec
set -u
. "$(dirname "$0")/../lib.sh"
rulec=$1
dir=$(dirname "$0")
bindir=$(${LLVM_CONFIG:-llvm-config-19} --bindir 2>/dev/null || echo /usr/lib/llvm-19/bin)
clang=${CLANG:-clang-19}
tmp=$(mktemp -d "$SENTINEL_TEST_TMP/compiler.XXXXXX")   # removed with the run's directory (tests/lib.sh)
for f in "$dir"/*.ll "$dir"/*.c; do
	[ -e "$f" ] || continue
	name=compiler/$(basename "$f")
	passes=$(sed -n 's|^[;/ ]*PASS: *||p' "$f" | head -n 1)
	if [ -z "$passes" ]; then
		fail "$name" "no PASS: line"
		continue
	fi
	ir=$f
	case $f in
	*.c)
		target=$(sed -n 's|^// TARGET: *||p' "$f" | head -n 1)
		ir=$tmp/in.ll
		if ! $clang ${target:+-target $target} -O1 -g -ffreestanding -nostdlib -std=gnu11 -Wno-everything \
			-I "$dir/../../kernel-support" -S -emit-llvm -o "$ir" "$f" 2>"$tmp/cc.err"; then
			fail "$name" "clang: $(cat "$tmp/cc.err")"
			continue
		fi ;;
	esac
	"$rulec" --pass="$passes" "$ir" > "$tmp/out.ll" 2> "$tmp/err"
	rc=$?
	want_err=$(sed -n 's|^[;/ ]*ERROR: *||p' "$f" | head -n 1)
	if [ -n "$want_err" ]; then
		if [ $rc -eq 1 ] && grep -qF "$want_err" "$tmp/err"; then
			pass "$name"
		else
			fail "$name" "wanted an error with '$want_err'; exit $rc: $(cat "$tmp/err")"
		fi
		continue
	fi
	if [ $rc -ne 0 ]; then
		fail "$name" "rulec --pass=$passes failed: $(cat "$tmp/err")"
		continue
	fi
	if "$bindir/FileCheck" --input-file="$tmp/out.ll" "$f" > "$tmp/fc" 2>&1; then
		pass "$name"
	else
		fail "$name" "$(head -n 20 "$tmp/fc")"
	fi
done
