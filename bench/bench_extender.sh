#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Scheduler extender benchmark: prioritize latency (p50, p99) on the 1,523-node openb cluster,
# every node a candidate, over the states of an online replay of the default trace; in process
# and over HTTP. One core (pinned when taskset exists), as kube-scheduler calls it.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
data=${GS_DATA_DIR:-$(cd "$(dirname "$0")/.." && pwd)/data}
traces="$data/traces/alibaba-openb"
bin="$build/bench/bench_extender"
if [[ ! -x "$bin" ]]; then
    echo "bench_extender.sh: $bin not built (run make build)" >&2
    exit 1
fi
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
"${pin[@]}" "$bin" "$traces/openb_node_list_all_node.csv" "$traces/openb_pod_list_default.csv"
