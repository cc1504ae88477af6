#!/bin/sh
# Run a fuzzer: rules (the front end), cg (the code generator, on what
# the front end accepts), guest (a hostile guest: writes into a real
# guest's RAM image, then a tick of the shipped rules; fuzz_guest.c) or
# discover (writes into the same image, then discovery and the host's
# parsers of guest memory; fuzz_discover.c).
# smoke: 20 s (make check; 10 s in make check-quick);  long: 1,000,000 runs
# (discover: its stages one after another, each its share of them, below).  The corpus of rules and
# cg starts from every rule file in the tree; guest's image is booted and
# captured once (build/fuzz-guest.ram, tests/fuzz/guest_image.py).
# Findings are saved as build/fuzz-findings/crash-* and make the run fail.
#   sh tests/fuzz/run.sh [smoke|long|LIBFUZZER-FLAGS] [rules|cg|guest|discover]
set -u
. "$(dirname "$0")/../lib.sh"
mode=${1:-smoke}
what=${2:-rules}
fz=build/fuzz_$what
[ -n "${HAVE_FUZZER:-}" ] || HAVE_FUZZER=$(sed -n 's/^HAVE_FUZZER = //p' config.mk 2>/dev/null)
if [ "${HAVE_FUZZER:-0}" != 1 ]; then
	skip "fuzz/$what" "libFuzzer not available (apt-get install libclang-rt-19-dev, then ./configure)"
	exit 0
fi
# run directly after a plain `make` (which builds no fuzzer), or after a
# change to what it is built from (the catalog: an old binary refuses a new
# bundle), it is built here first
if ! make -s -q "$fz" 2>/dev/null; then
	echo "fuzz/$what: building $fz (missing, or older than its sources)" >&2
	make -s "$fz" >&2 || { fail "fuzz/$what" "make $fz failed (the compiler's errors are above)"; exit 0; }
fi
corpus=build/fuzz-corpus
opts="-max_len=4096 -dict=tests/fuzz/rules.dict"
mkdir -p "$corpus" build/fuzz-findings
if [ "$what" = guest ] || [ "$what" = discover ]; then
	if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
		skip "fuzz/$what" "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
		exit 0
	fi
	corpus=build/fuzz-corpus-$what
	opts="-max_len=1024"
	mkdir -p "$corpus"
	guest_image "fuzz/$what" || exit 0
	export SENTINEL_FUZZ_IMAGE=build/fuzz-guest.ram
fi
if [ "$what" = discover ]; then
	# a single allocation over 1 GiB is a finding: a guest's numbers must
	# not size a buffer past any real guest's (the image is 256 MiB).
	# Inputs of any length from the start: at a few inputs a second,
	# libFuzzer's slow growth of the length would keep them all tiny
	opts="$opts -malloc_limit_mb=1024 -len_control=0"
	# the inputs of past findings (and a few of each stage and kind of op)
	# first: writes at places in this image, so regression cases of its
	# own.  The smoke (every stage, as each input's first byte says) starts
	# from them alone: the corpora a long run grew would outlast its 20 s
	if [ "$mode" = smoke ]; then
		corpus=build/fuzz-corpus-discover-smoke
		rm -rf "$corpus" && mkdir -p "$corpus"
	fi
	cp tests/fuzz/discover/* "$corpus"/
elif [ "$what" = guest ]; then
	build/rulec -o build/fuzz-rules.bundle rules/ >&2 ||
		{ fail "fuzz/guest" "could not compile rules/ (build/rulec -o build/fuzz-rules.bundle rules/)"; exit 0; }
	export SENTINEL_FUZZ_BUNDLE=build/fuzz-rules.bundle
else
	cp rules/*.yaml examples/*.yaml tests/check/*.yaml tests/schema/*.yaml "$corpus"/ 2>/dev/null
fi
case $mode in
smoke) limits="-max_total_time=${SENTINEL_FUZZ_SMOKE_S:-20}" ;;   # make check-quick: 10
long) limits="-runs=1000000" ;;
*) limits="$mode" ;;
esac
# discover's long run: each stage (fuzz_discover.c) on its own
# (SENTINEL_FUZZ_STAGE), its share of the 1,000,000 runs set by its speed
# (a run of the cheap ones is a millisecond or two under ASan, the whole
# discovery's a sixth of a second), each from its own corpus; every input
# runs that stage, whatever its first byte says (an input found here is
# replayed with SENTINEL_FUZZ_STAGE=STAGE, or with its first byte made
# the stage's before it joins tests/fuzz/discover/).
if [ "$what" = discover ] && [ "$mode" = long ]; then
	total=0
	for stage_runs in ${SENTINEL_FUZZ_DISCOVER_LONG:-libvirt:542500 layout:330000 vmcoreinfo:70000 printk:40000 \
		modsyms:6000 modbtf:5000 kallsyms:3000 btf:2500 whole:1000}; do
		stage=${stage_runs%%:*} runs=${stage_runs#*:}
		scorpus=$corpus-$stage log=build/fuzz-$what-$stage.log
		mkdir -p "$scorpus" && cp tests/fuzz/discover/* "$scorpus"/
		start=$(date +%s)
		# shellcheck disable=SC2086
		if SENTINEL_FUZZ_STAGE=$stage "$fz" -runs="$runs" $opts -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
			-artifact_prefix=build/fuzz-findings/ "$scorpus" > "$log" 2>&1; then
			done_runs=$(sed -n "s/^fuzz_discover: stage $stage *\([0-9]*\) runs.*/\1/p" "$log" | tail -1)
			total=$((total + ${done_runs:-0}))
			pass "fuzz/$what ($mode, stage $stage: ${done_runs:-?} runs in $(( $(date +%s) - start ))s, nothing found)"
		else
			fail "fuzz/$what ($mode, stage $stage)" "$(grep -E 'ERROR|SUMMARY|Test unit written|failed on' "$log" | head -10)"
		fi
	done
	echo "fuzz/$what: $total runs of the stages in all" >&2
	exit 0
fi
start=$(date +%s)
# shellcheck disable=SC2086
if "$fz" $limits $opts -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
	-artifact_prefix=build/fuzz-findings/ "$corpus" > build/fuzz-$what.log 2>&1; then
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' build/fuzz-$what.log)
	pass "fuzz/$what ($mode: ${runs:-?} runs in $(( $(date +%s) - start ))s, nothing found)"
else
	fail "fuzz/$what ($mode)" "$(grep -E 'ERROR|SUMMARY|Test unit written|failed on' build/fuzz-$what.log | head -10)"
fi
