#!/bin/sh
# The source folders' includes (docs/design.md, "Layers").  Each folder is
# reached through the compiler's -I list, never through a path: an include
# that names a folder ("../engine/gpu.h", "engine/gpu.h") ties a file to
# where another lives and hides the dependency from the layering.  Then the
# folder graph must be the layers' and no more: kernel-support/ (the
# runtime and the kernel model) includes no other folder; rulec/ only
# kernel-support/; engine/ and notifier/ kernel-support/ and, of rulec/,
# the bundle library's headers alone (never the compiler's internals or
# LLVM's); the programs, tools/ and the daemon's sentineld/, anything, and
# nothing includes them.  No climb, so no circle.
set -u
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.." || exit 1
dirs="rulec engine kernel-support notifier"
bad=$(grep -rn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' --include='*.c' --include='*.h' --include='*.def' \
	$dirs tools sentineld tests bench 2>/dev/null | grep -v '"module/')
if [ -z "$bad" ]; then
	pass "layers/no-include-by-path"
else
	fail "layers/no-include-by-path" "$bad"
fi
# the programs live in tools/ and sentineld/: no library folder holds a main()
mains=$(for d in $dirs; do grep -ln '^int main(' "$d"/*.c; done 2>/dev/null)
if [ -z "$mains" ]; then
	pass "layers/programs-in-tools"
else
	fail "layers/programs-in-tools" "main() outside tools/ and sentineld/: $mains"
fi
# the folder graph: A -> B when a file in A includes a header that lives in
# B (printed for the record), each edge checked against the layers
BUNDLE_LIB="bundle.h catalog.h relo.h units.h util.h tmpl.h"
climbs=
for a in $dirs tools sentineld; do
	edges=$(grep -Ho '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*"' "$a"/*.c "$a"/*.h 2>/dev/null |
		sed 's/^\([^:]*\):.*"\(.*\)"/\1 \2/' | while read -r f h; do
			[ -f "$a/$h" ] && continue
			for b in $dirs; do [ -f "$b/$h" ] && echo "$f $b $h"; done
		done)
	to=$(echo "$edges" | awk 'NF { print $2 }' | sort -u | tr '\n' ' ')
	echo "     $a -> ${to:-(nothing)}"
	bad_edges=$(echo "$edges" | while read -r f b h; do
		[ -n "$f" ] || continue
		case "$a:$b" in
		tools:*|sentineld:*|rulec:kernel-support|engine:kernel-support|notifier:kernel-support) continue ;;
		engine:rulec|notifier:rulec)
			case " $BUNDLE_LIB " in *" $h "*) continue ;; esac ;;
		esac
		echo "$f includes $b/$h"
	done)
	[ -n "$bad_edges" ] && climbs="$climbs$bad_edges
"
done
if [ -z "$climbs" ]; then
	pass "layers/folder-graph (kernel-support <- rulec <- engine, notifier <- tools, sentineld; engine and notifier see rulec's bundle library alone)"
else
	fail "layers/folder-graph" "includes against the layers (docs/design.md):
$climbs"
fi
