#!/bin/sh
# The source folders' includes (docs/design.md, "Layers").  Each folder is
# reached through the compiler's -I list, never through a path: an include
# that names a folder ("../engine/snrt.h", "engine/snrt.h") ties a file to
# where another lives and hides the dependency from the layering.  Then,
# for the record, which folder includes which (the circles that issue 16's
# runtime/ folder and bundle library are to break).
set -u
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.." || exit 1
dirs="rulec engine kernel-support notifier"
bad=$(grep -rn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' --include='*.c' --include='*.h' --include='*.def' \
	$dirs tools tests bench 2>/dev/null | grep -v '"module/')
if [ -z "$bad" ]; then
	pass "layers/no-include-by-path"
else
	fail "layers/no-include-by-path" "$bad"
fi
# the programs live in tools/: no library folder holds a main()
mains=$(for d in $dirs; do grep -ln '^int main(' "$d"/*.c; done 2>/dev/null)
if [ -z "$mains" ]; then
	pass "layers/programs-in-tools"
else
	fail "layers/programs-in-tools" "main() outside tools/: $mains"
fi
# the folder graph: A -> B when a file in A includes a header that lives in B
for a in $dirs tools; do
	to=$(grep -ho '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*"' "$a"/*.c "$a"/*.h 2>/dev/null |
		sed 's/.*"\(.*\)"/\1/' | sort -u | while read -r h; do
			[ -f "$a/$h" ] && continue
			for b in $dirs; do [ -f "$b/$h" ] && echo "$b"; done
		done | sort -u | tr '\n' ' ')
	echo "     $a -> ${to:-(nothing)}"
done
