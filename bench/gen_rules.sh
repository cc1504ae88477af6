#!/bin/sh
# Generate N equivalent rules in Sentinel and Prometheus form.
#   sh bench/gen_rules.sh N OUTDIR  ->  OUTDIR/sentinel.yaml OUTDIR/prometheus.yaml
# Five rule shapes rotate (aggregation over CPUs, memory ratio, counter rate,
# task filter, hysteresis); each Prometheus rule asks the same question of
# node_exporter metrics, with the same labels and annotations.
set -eu
n=${1:-10000}
out=${2:-bench/out}
mkdir -p "$out"
awk -v n="$n" -v out="$out" '
function grp(f, g) { printf "  - name: group%d\n    rules:\n", g > f }
BEGIN {
	s = out "/sentinel.yaml"; p = out "/prometheus.yaml"
	print "groups:" > s; print "groups:" > p
	per = 1000
	for (i = 0; i < n; i++) {
		if (i % per == 0) { grp(s, i / per); grp(p, i / per) }
		k = i % 5; thr = 50 + i % 50
		if (k == 0) {
			se = sprintf("all(rate(cpu.busy_time[1s]) > %d%%)", thr)
			pe = sprintf("min by (instance) (1 - rate(node_cpu_seconds_total{mode=\"idle\"}[1m])) > %.2f", thr / 100)
		} else if (k == 1) {
			se = sprintf("host.mem_free / host.mem_total < %d%% and host.swap_free / host.swap_total < %d%%", thr, thr)
			pe = sprintf("node_memory_MemFree_bytes / node_memory_MemTotal_bytes < %.2f and node_memory_SwapFree_bytes / node_memory_SwapTotal_bytes < %.2f", thr / 100, thr / 100)
		} else if (k == 2) {
			se = sprintf("rate(host.forks[1s]) > %d", thr * 10)
			pe = sprintf("rate(node_forks_total[1m]) > %d", thr * 10)
		} else if (k == 3) {
			se = sprintf("count(task.state == \"D\" where not task.kthread) > %d", thr)
			pe = sprintf("node_procs_blocked > %d", thr)
		} else {
			se = sprintf("host.load5 > %d * host.cpus", thr % 8 + 1)
			pe = sprintf("node_load5 > %d * count without (cpu, mode) (node_cpu_seconds_total{mode=\"idle\"})", thr % 8 + 1)
		}
		printf "      - alert: Rule%d\n        expr: %s\n        for: %ds\n", i, se, 1 + i % 30 > s
		if (k == 0) printf "        clear: avg(rate(cpu.busy_time[1s])) < %d%%\n", thr - 10 > s
		printf "        severity: %s\n        labels:\n          team: team%d\n        annotations:\n          summary: \"rule %d fired: {{ $value }}\"\n", (i % 2 ? "warning" : "critical"), i % 10, i > s
		printf "      - alert: Rule%d\n        expr: %s\n        for: %ds\n", i, pe, 1 + i % 30 > p
		if (k == 0) printf "        keep_firing_for: 5s\n" > p
		printf "        labels:\n          severity: %s\n          team: team%d\n        annotations:\n          summary: \"rule %d fired: {{ $value }}\"\n", (i % 2 ? "warning" : "critical"), i % 10, i > p
	}
}'
