#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpusim's time model against the H100 measurements (data/gpu-facts/h100-measurements.md), with
# the facts' method: fixed 4 ms kernels, 4 launches then a synchronization, throughput in
# kernels/s (no shim). On the H100 one process alone kept the device busy (244/s of ~4.1 ms
# kernels), so its figures are relative to the device's capacity; in gpusim a process alone
# loses a few percent to the host (the wake-up after each synchronization), so figures here are
# relative to the capacity, 250 kernels/s, and one process alone must reach at least 94 %.
#   two processes time-sliced: 45 % each, 91 % together        (measured 45 + 45 %)
#   NVML per-process smUtil of a saturating process beside another: 90-100, one sample each
#   MPS, one client: 100 %; at active thread percentage 50: 50 % (measured 51.6 %)
#   MPS, two clients: 107 % together (measured 53.5 + 53.5 %); at 30 and 70: 30 and 70 %
#   (measured 29.7 and 68.1 %)
# Each figure is checked within 3 points. Run by run_sim.sh (a fresh node, no shim).
set -euo pipefail
build=${GS_BUILD_DIR:?}
worker=$build/tests/compute_worker
probe=$build/tests/smutil_probe
mps=$build/sim/nvidia-cuda-mps-control
export CUDA_MPS_PIPE_DIRECTORY=$GS_TEST_TMP/mps-pipe CUDA_MPS_LOG_DIRECTORY=$GS_TEST_TMP/mps-log
unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
failures=0
measure="--measure 0.4,2.5"

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }
rate() { sed -n 's/^rate //p' "$1"; }

# check NAME VALUE TARGET: VALUE within 3 points of TARGET.
check() {
  if awk -v v="$2" -v t="$3" 'BEGIN { exit !(v >= t - 3 && v <= t + 3) }'; then
    printf 'ok:   %-44s %6.1f %%  (target %s +- 3)\n' "$1" "$2" "$3"
  else
    printf 'FAIL: %-44s %6.1f %%  (target %s +- 3)\n' "$1" "$2" "$3"
    failures=$((failures + 1))
  fi
}


alone=250 # kernels/s: the device's capacity for 4 ms kernels
"$worker" $measure > "$GS_TEST_TMP/alone"
one=$(pct "$(rate "$GS_TEST_TMP/alone")" $alone)
if awk -v v="$one" 'BEGIN { exit !(v >= 94) }'; then
  printf 'ok:   %-44s %6.1f %%  (target >= 94)\n' "one process alone" "$one"
else
  printf 'FAIL: %-44s %6.1f %%  (target >= 94)\n' "one process alone" "$one"
  failures=$((failures + 1))
fi

# Two processes, time-sliced; NVML's samples meanwhile.
"$worker" $measure > "$GS_TEST_TMP/a" &
a=$!
"$worker" $measure > "$GS_TEST_TMP/b" &
b=$!
sleep 1.5
"$probe" > "$GS_TEST_TMP/smutil"
wait $a $b
ra=$(rate "$GS_TEST_TMP/a")
rb=$(rate "$GS_TEST_TMP/b")
check "time-sliced, first process" "$(pct "$ra" "$alone")" 45.5
check "time-sliced, second process" "$(pct "$rb" "$alone")" 45.5
check "time-sliced, together" "$(pct "$(awk -v a="$ra" -v b="$rb" 'BEGIN{print a+b}')" "$alone")" 91
# Samples of the two (NVML also still reports processes that ran in the last second).
samples=$(awk -v a=$a -v b=$b '$1 == a || $1 == b' "$GS_TEST_TMP/smutil" | grep -c . || true)
low=$(awk -v a=$a -v b=$b '($1 == a || $1 == b) && $2 < 90' "$GS_TEST_TMP/smutil" | grep -c . || true)
if [[ $samples -eq 2 && $low -eq 0 ]]; then
  echo "ok:   NVML smUtil of two saturating processes: $(tr '\n' ' ' < "$GS_TEST_TMP/smutil")(pid smUtil, each >= 90)"
else
  echo "FAIL: NVML smUtil samples: $(tr '\n' ' ' < "$GS_TEST_TMP/smutil")(want 2, each >= 90)"
  failures=$((failures + 1))
fi

# MPS. An MPS client keeps its SM partition idle while it is between two batches (gpusim's
# host gaps above): its targets are the H100's figures scaled by one process's own efficiency.
scaled() { awk -v t="$1" -v e="$one" 'BEGIN { printf "%.1f", t * e / 100 }'; }
"$mps" -d
trap 'echo quit | "$mps" >/dev/null 2>&1 || true' EXIT
"$worker" $measure > "$GS_TEST_TMP/m1"
check "MPS, one client (as alone)" "$(pct "$(rate "$GS_TEST_TMP/m1")" "$alone")" "$one"
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$worker" $measure > "$GS_TEST_TMP/m50"
check "MPS, one client at 50 %" "$(pct "$(rate "$GS_TEST_TMP/m50")" "$alone")" "$(scaled 50)"
"$worker" $measure > "$GS_TEST_TMP/ma" &
a=$!
"$worker" $measure > "$GS_TEST_TMP/mb" &
b=$!
wait $a $b
sum=$(awk -v a="$(rate "$GS_TEST_TMP/ma")" -v b="$(rate "$GS_TEST_TMP/mb")" 'BEGIN{print a+b}')
check "MPS, two clients together" "$(pct "$sum" "$alone")" "$(scaled 107)"
# The first client after two concurrent clients would meet the H100's MPS server reset
# (sim/mps/server.c; sim_mps_reset tests it): a fresh daemon keeps this case about shares.
echo quit | "$mps" >/dev/null
"$mps" -d
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 "$worker" $measure > "$GS_TEST_TMP/m30" &
a=$!
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70 "$worker" $measure > "$GS_TEST_TMP/m70" &
b=$!
wait $a $b
check "MPS, client at 30 % beside one at 70 %" "$(pct "$(rate "$GS_TEST_TMP/m30")" "$alone")" "$(scaled 30)"
check "MPS, client at 70 % beside one at 30 %" "$(pct "$(rate "$GS_TEST_TMP/m70")" "$alone")" "$(scaled 70)"
exit $failures
