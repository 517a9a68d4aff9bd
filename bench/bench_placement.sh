#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Placement benchmark: replay time of the default openb trace per policy (1,213 nodes, about
# 10,800 pods after inflation), and the cost of one decision on a daemon's node.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
data=${GS_DATA_DIR:-$(cd "$(dirname "$0")/.." && pwd)/data}
traces="$data/traces/alibaba-openb"
bin="$build/bench/bench_placement"
if [[ ! -x "$bin" ]]; then
    echo "bench_placement.sh: $bin not built (run make build)" >&2
    exit 1
fi
# One core: the acceptance figure is single-threaded, so pin the process to CPU 0 when possible.
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
"${pin[@]}" "$bin" "$traces/openb_node_list_gpu_node.csv" "$traces/openb_pod_list_default.csv" \
    "${GS_BENCH_RUNS:-5}"
