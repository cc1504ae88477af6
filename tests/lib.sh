# tests/lib.sh - shared helpers for the shell test suites.
# A suite calls pass/fail/skip once per test; run.sh adds them up.

: "${RESULTS:=/dev/null}"

pass() { printf 'PASS %s\n' "$1"; echo pass >> "$RESULTS"; }
fail() { printf 'FAIL %s\n' "$1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/     /'; echo fail >> "$RESULTS"; }
skip() { printf 'SKIP %s (%s)\n' "$1" "$2"; echo skip >> "$RESULTS"; }
