#!/bin/sh
# The GPU tests, on a GPU machine, from what tests/gpu/pack.sh put in
# .device/: the metric library on the GPU against the CPU (a table at the
# end), then sentineld's scenarios on the CUDA backend.
#   sh tests/gpu/run.sh [all|syncprobe [--idle|--destroy]|regprobe|capprobe [MIB]|metrics|engine|demo|bench [N,N SECONDS]|
#                        latency [N ROUNDS SECONDS]|scale [N,N]|hostread|taskbench [BACKENDS N,N SECONDS]|
#                        families [BACKENDS SECONDS]|targets [N,N SECONDS TICK_MS,.. TASKS]|
#                        livetargets [N,N SECONDS TICK_MS,.. TASKS]|fleetvalues [TARGETS]|fuzz [RUNS [SEED]]|
#                        startup [N]|faultrepeat [RUNS]|fleetbench [N,N SECONDS TICK_MS,.. TASKS]|fleetgrow|hostile [ROUNDS]|restart|
#                        pausedtick [N,N SECONDS ROUNDS]]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
d=$top/.device
if [ ! -f "$d/pack.tar.xz" ]; then
	echo "tests/gpu/run.sh: no .device/pack.tar.xz: run 'make gpu-pack' first (and carry .device)" >&2
	exit 2
fi
work=${TMPDIR:-/tmp}/sentinel-gpu
rm -rf "$work"
mkdir -p "$work"
xz -dc "$d/pack.tar.xz" | tar xf - -C "$work"
# binaries rebuilt since the pack (tests/gpu/pack.sh --overlay): over its own
if [ -f "$d/overlay.tar.xz" ]; then
	xz -dc "$d/overlay.tar.xz" | tar xf - -C "$work"
fi
# QEMU's own libraries for QEMU alone: never for programs that load libcuda
export SENTINEL_QEMU="$work/qemu/qemu-system-x86_64"
export SENTINEL_QEMU_LIBS="$work/qemu/lib"
export SENTINEL_QEMU_MODULES="$work/qemu/modules"
export SENTINEL_QEMU_FIRMWARE="$work/qemu/firmware"
export SENTINEL_GUEST_KERNELS="$d/guest"
export SENTINEL_GUEST_HELPERS="$d/guest/guest-helpers.cpio.gz"
export SENTINEL_FS_PACK="$d/images"        # xfs and btrfs images (tests/guest/fsimages.py)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
what=${1:-all}
rc=0
if [ "$what" = all ] || [ "$what" = syncprobe ]; then
	# which driver calls wait for a running kernel (the reload must avoid them)
	"$work/bin/syncprobe" ${2:+"$2"} || rc=1
fi
if [ "$what" = regprobe ]; then
	# does a VM_IO|VM_PFNMAP mapping of RAM register with the GPU (bare metal)
	"$work/bin/regprobe" || rc=1
fi
if [ "$what" = capprobe ]; then
	# libcuda's cap on registered memory and the lift; flags and chunks on a RAM file
	"$work/bin/capprobe" ${2:+"$2"} || rc=1
fi
if [ "$what" = all ] || [ "$what" = metrics ]; then
	PYTHONUNBUFFERED=1 python3 tests/gpu/gpu_test.py "$work/bin/sentinel-inspect" "$work/bin" || rc=1
fi
if [ "$what" = all ] || [ "$what" = engine ]; then
	# sentineld's scenarios (tests/engine) on the CUDA backend
	PYTHONUNBUFFERED=1 python3 tests/engine/test_engine.py "$work/bin" cuda || rc=1
fi
if [ "$what" = faultrepeat ]; then
	# a real GPU fault in a reload, RUNS times: sentineld must exit 3 every time
	PYTHONUNBUFFERED=1 python3 tests/gpu/fault_repeat.py "$work/bin" "${2:-10}" || rc=1
fi
if [ "$what" = scale ]; then
	# the task set at 5,000 and 50,000 tasks under churn, collected on the GPU
	PYTHONUNBUFFERED=1 python3 tests/guest/test_task_scale.py "$work/bin/sentinel-inspect" "$work/bin/metrics.bundle" \
		cuda "${2:-5000,50000}" || rc=1
fi
if [ "$what" = hostread ] || [ "$what" = taskbench ]; then
	# the GPU's read ceiling through mapped host memory (bench/hostread.cu), which the
	# collection's reads a second are measured against: in the same run as taskbench
	if command -v nvcc >/dev/null 2>&1 && nvcc -O2 -o "$work/hostread" bench/hostread.cu; then
		"$work/hostread" ceiling || rc=1
	else
		echo "tests/gpu/run.sh: no nvcc here: the read ceiling is not measured" >&2
		[ "$what" = taskbench ] || rc=1
	fi
fi
if [ "$what" = taskbench ]; then
	# tick time against tasks, GPU and CPU backend in the same run (bench/task_scale.py);
	# BENCH_WITH_BASELINE=1: .device/base.tar.xz's build too, against the same guests
	if [ -n "${BENCH_WITH_BASELINE:-}" ] && [ -f "$d/base.tar.xz" ]; then
		xz -dc "$d/base.tar.xz" | tar xf - -C "$work"
		export BENCH_BASELINE="$work/base"
	fi
	PYTHONUNBUFFERED=1 python3 bench/task_scale.py "$work/bin" "${2:-cuda,cpu}" "${3:-60,5000,50000}" "${4:-10}" || rc=1
fi
if [ "$what" = pausedtick ]; then
	# the CPU backend's tick on a paused guest, rule sets in alternated rounds: a window's
	# cost on this machine's quiet cores (bench/paused_tick.py; BENCH_SETTLE=62: covered)
	PYTHONUNBUFFERED=1 python3 bench/paused_tick.py "$work/bin" "${2:-5000}" "${3:-10}" "${4:-3}" || rc=1
fi
if [ "$what" = fuzz ]; then
	# the hostile guest with every tick on the GPU (tests/fuzz/fuzz_guest.c, no libFuzzer
	# here): a guest booted and captured on this machine, random writes where a tick reads
	img=$work/fuzz-guest.ram
	PYTHONUNBUFFERED=1 python3 tests/fuzz/guest_image.py "$img" &&
		SENTINEL_FUZZ_IMAGE=$img SENTINEL_FUZZ_BUNDLE=$work/bin/rules.bundle SENTINEL_FUZZ_BACKEND=cuda \
		"$work/bin/fuzz_guest_gpu" "${2:-100000}" "${3:-1}" || rc=1
fi
if [ "$what" = families ]; then
	# tick time with every object family: 8 disks, 8 interfaces, 200 cgroups (bench/families.py)
	PYTHONUNBUFFERED=1 python3 bench/families.py "$work/bin" "${2:-cuda,cpu}" "${3:-10}" || rc=1
fi
if [ "$what" = targets ]; then
	# several targets in one sentineld, in the GPU's one kernel for all of them: the
	# scenarios, then what each target costs (bench/targets.py: captured images)
	SENTINEL_TARGETS_BACKEND=cuda PYTHONUNBUFFERED=1 python3 tests/engine/test_targets.py "$work/bin" || rc=1
	for t in $(echo "${4:-100,10}" | tr , ' '); do
		BENCH_BACKEND=cuda PYTHONUNBUFFERED=1 python3 bench/targets.py "$work/bin" "${2:-1,100,500}" "${3:-20}" \
			"$t" "${5:-1024}" || rc=1
	done
fi
if [ "$what" = fleetgrow ]; then
	# a task table that grows in the fleet: the fleet hands over (tests/gpu/fleet_grow.py)
	PYTHONUNBUFFERED=1 python3 tests/gpu/fleet_grow.py "$work/bin" cuda || rc=1
fi
if [ "$what" = fleetbench ]; then
	# what each target costs, without the scenarios first (bench/targets.py: captured images)
	for t in $(echo "${4:-100,10}" | tr , ' '); do
		BENCH_BACKEND=cuda PYTHONUNBUFFERED=1 python3 bench/targets.py "$work/bin" "${2:-500}" "${3:-20}" \
			"$t" "${5:-1024}" || rc=1
	done
fi
if [ "$what" = fleetvalues ]; then
	# the fleet's values against the CPU backend's: three different captured images
	PYTHONUNBUFFERED=1 python3 tests/gpu/fleet_values.py "$work/bin" "${2:-6}" || rc=1
fi
if [ "$what" = livetargets ]; then
	# N live guests in one sentineld on the GPU (bench/targets.py, BENCH_LIVE)
	for t in $(echo "${4:-100,10}" | tr , ' '); do
		BENCH_LIVE=1 BENCH_BACKEND=cuda PYTHONUNBUFFERED=1 python3 bench/targets.py "$work/bin" "${2:-1,8,32}" \
			"${3:-20}" "$t" "${5:-1024}" || rc=1
	done
fi
if [ "$what" = demo ]; then
	# the main job (make demo) on the GPU
	PYTHONUNBUFFERED=1 python3 examples/demo.py "$work/bin" || rc=1
fi
if [ "$what" = startup ]; then
	# start and reload of N rules (bench/startup.py): caches empty, nothing
	# changed, one threshold changed; against the binaries of an earlier
	# commit in .device/base.tar.xz (base/sentineld, base/sentinelctl) when
	# packed, in the same run
	builds="$work/bin:new"
	if [ -f "$d/base.tar.xz" ]; then
		xz -dc "$d/base.tar.xz" | tar xf - -C "$work"
		builds="$work/base:baseline $builds"
	fi
	BENCH_CACHE_KEY_baseline=${BENCH_CACHE_KEY_baseline:-0} PYTHONUNBUFFERED=1 python3 bench/startup.py cuda "${2:-10000}" $builds || rc=1
fi
if [ "$what" = bench ]; then
	# sentineld's tick time, host CPU use and reload time (bench/engine.py)
	PYTHONUNBUFFERED=1 python3 bench/engine.py "$work/bin" cuda "${2:-10,1000,10000}" "${3:-30}" || rc=1
fi
if [ "$what" = latency ] || [ "$what" = hostile ] || [ "$what" = restart ]; then
	mkdir -p /usr/share/prometheus/alertmanager
	for t in "$work"/bin/am-templates/*.tmpl; do   # where Debian's Alertmanager reads them
		[ -e "/usr/share/prometheus/alertmanager/${t##*/}" ] || cp "$t" /usr/share/prometheus/alertmanager/
	done
fi
if [ "$what" = restart ]; then
	# state across a restart on the GPU: kill -9 while an alert fires, a new
	# sentineld restores it (tests/engine/test_notify.py, "restart")
	SENTINEL_NOTIFY_ONLY=restart ALERTMANAGER="$work/bin/alertmanager" PYTHONUNBUFFERED=1 \
		python3 tests/engine/test_notify.py "$work/bin" cuda || rc=1
fi
if [ "$what" = hostile ]; then
	# ten healthy targets and a hostile one on the GPU (bench/hostile.py): the
	# image captured here, as the fuzz run does
	img=$work/fuzz-guest.ram
	PYTHONUNBUFFERED=1 python3 tests/fuzz/guest_image.py "$img" &&
		BENCH_IMAGE=$img BENCH_BACKEND=${BENCH_BACKEND:-cuda} ALERTMANAGER="$work/bin/alertmanager" PYTHONUNBUFFERED=1 \
		python3 bench/hostile.py "$work/bin" "${2:-3}" || rc=1
fi
if [ "$what" = latency ]; then
	# alert delivery: 1,000 rules firing at once to Alertmanager; CPU with every sink on
	ALERTMANAGER="$work/bin/alertmanager" PYTHONUNBUFFERED=1 \
		python3 bench/alert_latency.py "$work/bin" cuda "${2:-1000}" "${3:-3}" "${4:-60}" || rc=1
fi
exit $rc
