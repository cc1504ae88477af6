#!/bin/sh
# Run a fuzzer: rules (the front end) or cg (the code generator, on what
# the front end accepts).  smoke: 20 s (make check);  long: 1,000,000 runs.
# The corpus starts from every rule file in the tree; findings are saved as
# build/fuzz-findings/crash-* and make the run fail.
#   sh tests/fuzz/run.sh [smoke|long|LIBFUZZER-FLAGS] [rules|cg]
set -u
. "$(dirname "$0")/../lib.sh"
mode=${1:-smoke}
what=${2:-rules}
fz=build/fuzz_$what
if [ "${HAVE_FUZZER:-1}" != 1 ] || [ ! -x "$fz" ]; then
	skip "fuzz/$what" "libFuzzer not available (apt-get install libclang-rt-19-dev)"
	exit 0
fi
corpus=build/fuzz-corpus
mkdir -p "$corpus" build/fuzz-findings
cp rules/*.yaml examples/*.yaml tests/check/*.yaml tests/schema/*.yaml "$corpus"/ 2>/dev/null
case $mode in
smoke) limits="-max_total_time=20" ;;
long) limits="-runs=1000000" ;;
*) limits="$mode" ;;
esac
start=$(date +%s)
# shellcheck disable=SC2086
if "$fz" $limits -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix=build/fuzz-findings/ -dict=tests/fuzz/rules.dict "$corpus" > build/fuzz-$what.log 2>&1; then
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' build/fuzz-$what.log)
	pass "fuzz/$what ($mode: ${runs:-?} runs in $(( $(date +%s) - start ))s, nothing found)"
else
	fail "fuzz/$what ($mode)" "$(grep -E 'ERROR|SUMMARY|Test unit written|failed on' build/fuzz-$what.log | head -10)"
fi
