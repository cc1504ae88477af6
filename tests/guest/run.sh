#!/bin/sh
# Guest tests: boot real Debian kernels under QEMU and compare what
# sentinel-inspect reads from their RAM with their own /proc.
set -u
. "$(dirname "$0")/../lib.sh"
inspect=$1
py=${PYTHON:-python3}
guests_can_run guest || exit 0
py_suite guest/kernel-model tests/guest/test_kernel_model.py "$inspect"
# bare metal from inside: the sentinel_pmem module, the static tools on pmem and kcore
py_suite guest/baremetal tests/guest/test_baremetal.py build
# the task set at real-host scale (5,000 and 50,000 tasks) under churn
py_suite guest/task-scale tests/guest/test_task_scale.py "$inspect" build/metrics.bundle cpu
