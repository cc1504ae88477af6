#!/bin/sh
# The shipped rules, rulec's command line, exit codes and outputs.
set -u
. "$(dirname "$0")/lib.sh"
rulec=$1
py=${PYTHON:-python3}

# The shipped rule set and the examples: clean, not even a warning.
out=$("$rulec" --check --Werror rules/ examples/ 2>&1)
rc=$?
if [ $rc -eq 0 ] && printf '%s' "$out" | grep -q 'OK$'; then
	pass "cli/shipped-rules-clean"
else
	fail "cli/shipped-rules-clean" "$out"
fi
n=$("$rulec" --check rules/ 2>&1 | sed -n 's/^rulec: \([0-9]*\) rules.*/\1/p')
if [ "${n:-0}" -ge 13 ]; then pass "cli/at-least-13-shipped-rules"; else fail "cli/at-least-13-shipped-rules" "found ${n:-0}"; fi

expect help 0 "$rulec" --help
expect version 0 "$rulec" --version
expect no-args 2 "$rulec"
expect unknown-option 2 "$rulec" --bogus
expect bad-format 2 "$rulec" --format=xml rules/
# a bundle is renamed into place: never over a device (as root that replaced /dev/null)
expect_msg bundle-not-over-a-device 2 "not a regular file" "$rulec" -o /dev/null rules/paper.yaml
if [ -c /dev/null ]; then pass "cli/dev-null-still-a-device"; else fail "cli/dev-null-still-a-device" "$(ls -l /dev/null)"; fi
expect bad-tick 2 "$rulec" --tick=fast rules/
expect_msg missing-value 2 "^rulec: --format takes text or json" "$rulec" rules/ --format
expect_msg o-missing-value 2 "^rulec: -o needs a file name" "$rulec" rules/ -o
expect_msg bad-opt-level 2 "^rulec: -O takes 2" "$rulec" -O3 rules/
expect_msg options-after-files 0 "rules in" "$rulec" rules/ --check --tick 50ms
expect missing-file 2 "$rulec" --check /nonexistent/rules.yaml
expect missing-dir 2 "$rulec" --check /nonexistent-dir/
emptydir=$(mktemp -d "$SENTINEL_TEST_TMP/empty.XXXXXX")
expect_msg empty-dir 2 "no rule files given" "$rulec" --check "$emptydir"
expect errors-exit-1 1 "$rulec" --check tests/check/types.yaml
expect warnings-exit-0 0 "$rulec" --check tests/check/warnings.yaml
expect werror-exit-1 1 "$rulec" --check -W tests/check/warnings.yaml
expect stdin 0 sh -c "\"$rulec\" --check - < rules/paper.yaml"
expect compile-shipped-rules 0 "$rulec" -o "${TMPDIR:-/tmp}/sentinel-cli.bundle" rules/
expect_msg compile-needs-clean-rules 1 "error:" "$rulec" -o "${TMPDIR:-/tmp}/sentinel-cli.bundle" tests/check/types.yaml
expect_msg emit-unknown 2 "emit takes" "$rulec" --emit=bogus rules/paper.yaml
rm -f "${TMPDIR:-/tmp}/sentinel-cli.bundle"
# sentinelctl's command line (getopt_long): options before or after the
# command, and each mistake an exit 2 that says what to do
ctl=$(dirname "$rulec")/sentinelctl
[ -x "$ctl" ] || ctl=$(dirname "$rulec")/../sentinelctl      # (build/san has no sentinelctl: build/'s)
if [ ! -x "$ctl" ]; then
	fail cli/ctl-built "no sentinelctl beside $rulec"
else
	expect_msg ctl-unknown-option 2 "unknown argument '--nope'" "$ctl" --nope status
	expect_msg ctl-socket-needs-value 2 "needs a value" "$ctl" status -s
	expect_msg ctl-extra-argument 2 "unknown argument 'extra'" "$ctl" status extra
	expect_msg ctl-no-command 2 "give a command" "$ctl" --json
	expect_msg ctl-options-after-command 2 "cannot reach sentineld at /nonexistent.sock" "$ctl" status --json -s /nonexistent.sock
	expect_msg ctl-unknown-command 2 "unknown command 'bogus'; the commands are status" "$ctl" bogus
	# -c: the socket sentineld's configuration names
	ctlconf=$(mktemp "$SENTINEL_TEST_TMP/ctl.XXXXXX")
	printf '[engine]\nbackend = cpu\n[control]\nsocket = %s.sock ; its own\n' "$ctlconf" > "$ctlconf"
	expect_msg ctl-config-names-socket 2 "cannot reach sentineld at $ctlconf.sock:" "$ctl" -c "$ctlconf" status
	expect_msg ctl-config-unreadable 2 "cannot read /nonexistent.conf" "$ctl" -c /nonexistent.conf status
fi
d=$(dirname "$rulec")/sentineld
expect_msg sentineld-unknown-option 2 "unknown argument '--nope'" "$d" --nope
expect_msg sentineld-config-needs-value 2 "needs a value" "$d" -c
expect_msg sentineld-extra-argument 2 "unknown argument 'extra'" "$d" --check-config extra
expect_msg sentineld-config-equals 2 "/nonexistent.conf" "$d" --config=/nonexistent.conf --check-config
# a '#' comment after a value (inih takes ';' there, not '#'): said so, at its line
hashconf=$(mktemp "$SENTINEL_TEST_TMP/hash.XXXXXX")
printf '[target]\nsource = kcore # this host\n' > "$hashconf"
expect_msg sentineld-inline-hash 2 "$hashconf:2: error: source = 'kcore # this host': '#' starts a comment only" \
	"$d" -c "$hashconf" --check-config
# A directory checks its *.yaml files: the sum over rules/ equals the files one by one.
all=$("$rulec" --check rules/*.yaml 2>&1 | tail -n 1)
dir=$("$rulec" --check rules/ 2>&1 | tail -n 1)
if [ "$all" = "$dir" ]; then pass "cli/directory-arg"; else fail "cli/directory-arg" "$all vs $dir"; fi

# Every error in every file: two broken files give the sum of their errors.
a=$("$rulec" --check --format=json tests/check/types.yaml | "$py" -c 'import json,sys; print(json.load(sys.stdin)["errors"])')
b=$("$rulec" --check --format=json tests/check/syntax.yaml | "$py" -c 'import json,sys; print(json.load(sys.stdin)["errors"])')
ab=$("$rulec" --check --format=json --max-errors=0 tests/check/types.yaml tests/check/syntax.yaml |
	"$py" -c 'import json,sys; print(json.load(sys.stdin)["errors"])')
if [ -n "$a" ] && [ "$a" -gt 5 ] && [ "$ab" = "$((a + b))" ]; then
	pass "cli/all-errors-in-all-files"
else
	fail "cli/all-errors-in-all-files" "types=$a syntax=$b both=$ab"
fi

# JSON output is JSON, with the fields editors need.
if "$rulec" --check --format=json tests/check/types.yaml | "$py" -c '
import json, sys
d = json.load(sys.stdin)
assert d["errors"] == len([x for x in d["diagnostics"] if x["severity"] == "error"])
for x in d["diagnostics"]:
    assert x["file"] == "tests/check/types.yaml" and x["line"] > 0 and x["column"] > 0, x
    assert x["code"] and x["message"], x
'; then pass "cli/json-output"; else fail "cli/json-output"; fi

# docs/comparison.md's fidelity table is tests/debian/fidelity.py's MAP
# (--table prints it): every row there, as the test compares it
missing_rows=$(${PYTHON:-python3} tests/debian/fidelity.py --table | grep '^| `' | while IFS= read -r row; do
	grep -qxF -- "$row" docs/comparison.md || printf '%s\n' "$row"; done)
if [ -z "$missing_rows" ]; then
	pass "cli/comparison-table-current"
else
	fail "cli/comparison-table-current" "rows of fidelity.py --table not in docs/comparison.md (paste its output):
$missing_rows"
fi
# docs/metrics.md is generated from the catalog: it must be current.
if "$rulec" --list-metrics=markdown | diff -u docs/metrics.md - > "$SENTINEL_TEST_TMP/metrics.diff"; then
	pass "cli/docs-metrics-current"
else
	fail "cli/docs-metrics-current" "docs/metrics.md is stale; run: make docs"
fi
# and the catalog covers what the paper's detectors and the issue need
for m in host.cpu_busy_time cpu.busy_time host.cpu_system_time cpu.system_time host.mem_free \
	 host.mem_available host.swap_free host.ctx_switches task.kernel_time host.forks \
	 host.threads host.procs_running host.cpu_iowait_time host.load1 task.rss task.state \
	 host.oom_kills; do
	"$rulec" --list-metrics | grep -q "^$m " || missing="${missing:-} $m"
done
if [ -z "${missing:-}" ]; then pass "cli/catalog-coverage"; else fail "cli/catalog-coverage" "missing:$missing"; fi

# make install honours DESTDIR and PREFIX, and the installed rulec runs;
# sentineld gets its configuration in SYSCONFDIR/sentinel (kept on a
# second install) and a systemd unit (Type=notify) naming both.
inst=$(mktemp -d "$SENTINEL_TEST_TMP/install.XXXXXX")
iargs="DESTDIR=$inst PREFIX=/usr BINDIR=/usr/bin DATADIR=/usr/share SYSCONFDIR=/etc SYSTEMDUNITDIR=/usr/lib/systemd/system"
unit=$inst/usr/lib/systemd/system/sentineld.service
# shellcheck disable=SC2086
if make -s install $iargs > "$inst.log" 2>&1 &&
   "$inst/usr/bin/rulec" --check -q "$inst"/usr/share/sentinel/rules/*.yaml &&
   [ -f "$inst/usr/share/sentinel/rules/schema.json" ] && [ -f "$inst/usr/share/doc/sentinel/rules.md" ] &&
   [ -f "$inst/usr/share/man/man1/rulec.1" ] && [ -f "$inst/usr/share/man/man5/sentinel-rules.5" ] &&
   [ -f "$inst/usr/share/man/man8/sentineld.8" ] && [ -f "$inst/usr/share/bash-completion/completions/sentinelctl" ] &&
   grep -qx 'directory = /etc/sentinel/rules' "$inst/etc/sentinel/sentinel.conf" &&
   [ -x "$inst/usr/bin/sentineld" ] && [ -x "$inst/usr/bin/sentinelctl" ] && [ -f "$inst/etc/sentinel/rules/paper.yaml" ] &&
   grep -qx 'Type=notify' "$unit" && grep -qx 'ExecStart=/usr/bin/sentineld -c /etc/sentinel/sentinel.conf' "$unit"; then
	pass "cli/make-install-destdir"
else
	fail "cli/make-install-destdir" "$(cat "$inst.log"; find "$inst" | head -30)"
fi
# PREFIX alone moves every directory (config.mk keeps only those configure
# was given), the paths compiled into the programs with them
# (build/paths.stamp), and the installed configuration names the rules
# where they went
dirs=$(make -s --no-print-directory PREFIX=/usr --eval 'print-dirs: ; @echo $(BINDIR) $(DATADIR) $(SYSCONFDIR) $(PKGLIBDIR) $(MANDIR)' print-dirs 2>&1)
if [ "$dirs" = "/usr/bin /usr/share /etc /usr/lib/sentinel /usr/share/man" ]; then
	pass "cli/prefix-moves-every-directory"
else
	fail "cli/prefix-moves-every-directory" "make PREFIX=/usr gives: $dirs (re-run ./configure if config.mk predates this)"
fi
# the installed configuration and rules are good: what stops it is the example's VM
sed -e "s|= /etc/sentinel/rules|= $inst/etc/sentinel/rules|" -e "s|= /var/log/sentinel/|= $inst/|" "$inst/etc/sentinel/sentinel.conf" > "$inst/check.conf"
out=$("$inst/usr/bin/sentineld" -c "$inst/check.conf" --check-config 2>&1); rc=$?
if [ $rc = 2 ] && echo "$out" | grep -q "/dev/shm/vm.ram"; then
	pass "cli/installed-config-parses"
elif [ ! -s "$inst/usr/bin/sentineld" ]; then
	# (an empty file runs as an empty shell script: exit 0, no output)
	fail "cli/installed-config-parses" "the installed sentineld is empty: was build/sentineld being relinked while make install copied it?"
else
	fail "cli/installed-config-parses" "exit $rc: $out"
fi
echo "# edited" >> "$inst/etc/sentinel/sentinel.conf"
# shellcheck disable=SC2086
if make -s install $iargs > "$inst.log" 2>&1 && tail -n 1 "$inst/etc/sentinel/sentinel.conf" | grep -q "# edited"; then
	pass "cli/install-keeps-config"
else
	fail "cli/install-keeps-config" "$(cat "$inst.log")"
fi
rm -rf "$inst" "$inst.log"

# sentinel-inspect: usage and bad inputs, each one clear message and exit 2.
insp=$(dirname "$rulec")/sentinel-inspect
expect inspect-help 0 "$insp" --help
expect inspect-no-command 2 "$insp"
expect inspect-no-source 2 env -u SENTINEL_SOURCE "$insp" info
expect inspect-unknown-command 2 "$insp" -s raw:/dev/null frobnicate
expect_msg inspect-unknown-option 2 "unknown option '--frob'" "$insp" --frob info
expect_msg inspect-missing-value 2 "^sentinel-inspect: --source needs a value" "$insp" info --source
expect_msg inspect-bad-threads 2 "threads takes a thread count" "$insp" --threads=0 -s raw:/dev/null metrics
expect_msg inspect-stray-operand 2 "metrics takes no operand ('x.bundle'); a compiled bundle is --bundle FILE" \
	"$insp" -s raw:/dev/null metrics x.bundle
expect_msg inspect-options-after-command 2 "types.yaml: not a memory image" "$insp" info --source=raw:tests/check/types.yaml
expect inspect-missing-file 2 "$insp" -s ramfile:/nonexistent.ram info
expect inspect-not-an-image 2 "$insp" -s raw:tests/check/types.yaml info
zero=$(mktemp "$SENTINEL_TEST_TMP/zero.XXXXXX")
dd if=/dev/zero of="$zero" bs=1M count=8 2>/dev/null
expect_msg inspect-no-kernel-in-image 2 "no Linux kernel found.*OSRELEASE" "$insp" -s "raw:$zero" info
printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\002\000' > "$zero.elf"
dd if=/dev/zero bs=4096 count=1 >> "$zero.elf" 2>/dev/null
expect_msg inspect-elf-not-a-core 2 "not a core dump" "$insp" -s "$zero.elf" info
rm -f "$zero" "$zero.elf"


# The code a rule over tasks compiles to: its loop over rows unrolled (a
# lane has four rows' loads in flight), the task column inlined, and the
# state machine left a call (inlined into 10,000 rules it made the compile
# ten times slower)
u=$(mktemp -d "$SENTINEL_TEST_TMP/unroll.XXXXXX")
printf 'groups:\n  - name: z\n    rules:\n      - alert: Zombies\n        expr: count(task.state == "Z") > 100\n' > "$u/z.yaml"
"$rulec" -q --emit=llvm "$u/z.yaml" > "$u/z.ll" 2> "$u/err"
"$rulec" -q --emit=llvm-opt "$u/z.yaml" > "$u/z.opt.ll" 2>> "$u/err"
hint=$(grep -c '"llvm.loop.unroll.count", i32 4' "$u/z.ll")
cmps=$(grep -c 'fcmp [a-z]* double %[0-9a-z.]*, 9.000000e+01' "$u/z.opt.ll")
steps=$(grep -c 'call void @sn_step(' "$u/z.opt.ll")
cols=$(grep -c 'call ptr @sn_task_col(' "$u/z.opt.ll")
if [ "$hint" -eq 1 ] && [ "$cmps" -ge 4 ] && [ "$steps" -eq 1 ] && [ "$cols" -eq 0 ]; then
	pass "cli/task-loop-unrolled"
else
	fail "cli/task-loop-unrolled" "unroll hint $hint (want 1), state compares $cmps (want >= 4: unrolled), sn_step calls $steps (want 1), sn_task_col calls $cols (want 0: inlined): $(cat "$u/err")"
fi
rm -rf "$u"
