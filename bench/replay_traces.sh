#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpushare's policy on the nine openb traces through `gpushare plan replay`, the way docs/placement.md
# runs it (--inflate 1.3): per trace the mean unallocated GPU % at arrived 100 % over seeds 42-51
# and the median time of one replay (seed 42, RUNS runs, one core). Given two gpushare binaries
# (e.g. before and after a change of the LP solver) it prints them side by side, runs them in
# turn so that both see the same load, and says whether every seed's whole curve (--out CSV) is
# the same.
# Usage: bench/replay_traces.sh [GPUSHARE [GPUSHARE2]]   (default: $GS_BUILD_DIR/bin/gpushare)
#        GS_BENCH_RUNS=5 (runs per timing), GS_TRACES="default cpu050 ..." (a subset)
set -euo pipefail
build=${GS_BUILD_DIR:-build}
data=${GS_DATA_DIR:-$(cd "$(dirname "$0")/.." && pwd)/data}
dir=$data/traces/alibaba-openb
runs=${GS_BENCH_RUNS:-5}
traces=${GS_TRACES:-default cpu050 cpu100 gpushare40 gpushare100 gpuspec10 gpuspec33 multigpu20 multigpu30}
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=("$build/bin/gpushare")
[[ ${#bins[@]} -le 2 ]] || { echo "replay_traces.sh: at most two binaries" >&2; exit 2; }
for b in "${bins[@]}"; do
  [[ -x $b ]] || { echo "replay_traces.sh: $b is not built (run make build)" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "replay_traces.sh: needs jq" >&2; exit 1; }
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
tmp=$(mktemp -d /tmp/gs-replay-traces.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# replay BIN TRACE SEEDS [ARGS...]: plan replay of gpushare's policy, its --json object on stdout.
replay() {
  local bin=$1 trace=$2 seeds=$3
  shift 3
  "${pin[@]}" "$bin" plan replay --nodes "$dir/openb_node_list_gpu_node.csv" \
    --pods "$dir/openb_pod_list_$trace.csv" --policy gpushare --seed "$seeds" --inflate 1.3 \
    --json "$@"
}

# median: the middle of the numbers on stdin (the lower middle for an even count).
median() {
  sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

echo "method: gpushare plan replay --policy gpushare --inflate 1.3 on $dir;"
echo "  unalloc@100: mean over seeds 42-51 (3 decimals); time: median of $runs replays of seed 42"
echo "  (replay_seconds_median of --json: the replay alone, not reading the CSV), taskset -c 0;"
for i in "${!bins[@]}"; do echo "  binary $((i + 1)): ${bins[$i]}"; done
if [[ ${#bins[@]} -eq 1 ]]; then
  echo "| trace | unalloc@100 % | replay s |"
  echo "|---|---:|---:|"
else
  echo "| trace | unalloc@100 % (1) | unalloc@100 % (2) | replay s (1) | replay s (2) | curves |"
  echo "|---|---:|---:|---:|---:|---|"
fi
for trace in $traces; do
  means=() times=()
  for i in "${!bins[@]}"; do
    replay "${bins[$i]}" "$trace" 42-51 --out "$tmp/curves$i.csv" >"$tmp/full$i.json"
    means+=("$(jq -r '.policies[0].unallocated_at_100.mean | . * 1000 | round / 1000' "$tmp/full$i.json")")
    : >"$tmp/times$i"
  done
  for _ in $(seq "$runs"); do
    for i in "${!bins[@]}"; do
      replay "${bins[$i]}" "$trace" 42 | jq -r '.policies[0].replay_seconds_median' >>"$tmp/times$i"
    done
  done
  for i in "${!bins[@]}"; do
    times+=("$(median <"$tmp/times$i" | awk '{printf "%.3f", $1}')")
  done
  if [[ ${#bins[@]} -eq 1 ]]; then
    echo "| $trace | ${means[0]} | ${times[0]} |"
  else
    same=different
    cmp -s "$tmp/curves0.csv" "$tmp/curves1.csv" && same=identical
    echo "| $trace | ${means[0]} | ${means[1]} | ${times[0]} | ${times[1]} | $same |"
  fi
done
