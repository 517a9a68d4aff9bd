#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compute shares on a real NVIDIA GPU: the cases of issue 10's acceptance with the fixed-work
# kernel of data/gpu-facts/h100-measurements.md (bench/gpu/fixed_work.cu), through
# libgpushare.so, without gpushared (each lease: GPUSHARE_LEASE_ID and its share; the GPU's
# scheduler in a private GPUSHARE_SCHED_DIR). Ground truth is the GPU's own: kernels completed
# per second relative to one process alone (= 100 %), over 5 s windows after a 2 s warm-up.
#
# usage: bench/gpu/run.sh [BUILD [CASES]]  (CASES: a regular expression of the cases' titles to
#        run, all by default; on a GPU node; BUILD defaults to build, with
#        build/lib/libgpushare.so; gpu_fixed_work is built with nvcc when missing)
# Prints every case's target next to what it achieved, then the MPS cases when
# nvidia-cuda-mps-control is on the PATH and GS_GPU_MPS=1 (needs root, default compute mode).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
cases=${2:-.}
want() { [[ $1 =~ $cases ]]; } # the case titled $1 was asked for
here=$(cd "$(dirname "$0")" && pwd)
shim=$build/lib/libgpushare.so
prog=$build/bench/gpu_fixed_work
[[ -f $shim ]] || { echo "no $shim: build gpushare first (make build)" >&2; exit 2; }
if [[ ! -x $prog ]]; then
  nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  mkdir -p "$build/bench"
  "$nvcc" -O2 -std=c++17 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    "$here/fixed_work.cu" -o "$prog"
fi
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/sched"
measure=(--measure 2,5)

iters=$("$prog" --calibrate 4)
alone=$("$prog" --iters "$iters" "${measure[@]}" | sed -n 's/^rate //p')
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo unknown)"
echo "kernel: $iters FMA iterations (~4 ms); one process alone, no shim: $alone kernels/s = 100 %"

# lease NAME SHARE CAP [ARGS...]: starts one process of lease NAME (SHARE/CAP in %, 0 = none)
# in the background; its rate goes to $tmp/NAME.N (N counts the lease's processes).
procs=0
fresh() { rm -f "$tmp"/*.[0-9]*; procs=0; } # a new case
lease() {
  local name=$1 share=$2 cap=$3 n
  shift 3
  n=$((procs++))
  env LD_PRELOAD="$shim" GPUSHARE_SCHED_DIR="$tmp/sched" GPUSHARE_LEASE_ID="$name" \
    ${share:+GPUSHARE_COMPUTE_SHARE=$share} ${cap:+GPUSHARE_COMPUTE_MAX=$cap} \
    "$prog" --iters "$iters" "$@" >"$tmp/$name.$n" &
}

# report NAME TARGET: the lease's processes' rates summed, in % of alone, next to TARGET.
report() {
  local sum
  sum=$(cat "$tmp/$1".* | sed -n 's/^rate //p' | awk '{ s += $1 } END { print s + 0 }')
  awk -v n="$1" -v s="$sum" -v a="$alone" -v t="$2" \
    'BEGIN { printf "    %-10s target %-10s achieved %5.1f %%\n", n, t, 100 * s / a }'
}

together() { # the rates of every process of the case, in % of alone
  cat "$tmp"/*.[0-9]* | sed -n 's/^rate //p' |
    awk -v a="$alone" '{ s += $1 } END { printf "    together: %.1f %% of one process alone\n", 100 * s / a }'
}

run() { # TITLE, then leases as NAME:SHARE:CAP:TARGET[:ARGS]
  want "$1" || return 0
  echo "-- $1"
  shift
  fresh
  for spec in "$@"; do
    IFS=: read -r name share cap target args <<<"$spec"
    [[ $share == 0 ]] && share=
    [[ $cap == 0 ]] && cap=
    # shellcheck disable=SC2086 # args: several words
    lease "$name" "$share" "$cap" "${measure[@]}" $args
  done
  wait
  local seen=" "
  for spec in "$@"; do
    IFS=: read -r name share cap target args <<<"$spec"
    [[ $seen == *" $name "* ]] || report "$name" "$target"
    seen+="$name "
  done
  together
}

run "guarantees 30/70" a:30:0:30+-3 b:70:0:70+-3
run "guarantees 10/90" a:10:0:10+-2 b:90:0:90+-3
run "guarantees 10/20/30/40" a:10:0:10+-3 b:20:0:20+-3 c:30:0:30+-3 d:40:0:40+-3
run "guarantee 30 alone" a:30:0:">=90"
run "cap 30 alone" a:0:30:30+-3
run "guarantee 30 beside best effort" a:30:0:">=27" b:0:0:rest
run "two processes per lease" a:30:0:30+-3 a:30:0:30+-3 b:70:0:70+-3 b:70:0:70+-3
run "threads and streams (4 and 3 threads)" "a:30:0:30+-3:--threads 4" "b:70:0:70+-3:--threads 3"
run "synchronize after every kernel" "a:30:0:30+-3:--batch 1" "b:70:0:70+-3:--batch 1"
run "graph launches" "a:30:0:30+-3:--graph" "b:70:0:70+-3:--graph"
long=$((iters * 37))
if want "kernels of ~150 ms beside 4 ms ones"; then
echo "-- kernels of ~150 ms beside 4 ms ones"
fresh
lease a 30 "" --iters "$long" --batch 1 "${measure[@]}"
lease b 70 "" "${measure[@]}"
wait
awk -v s="$(sed -n 's/^rate //p' "$tmp"/a.0)" -v a="$alone" \
  'BEGIN { printf "    %-10s target %-10s achieved %5.1f %%\n", "a", "30+-3", 100 * s * 37 / a }'
report b 70+-3
fi

if want "a co-tenant that stops and returns"; then
echo "-- a co-tenant that stops and returns"
fresh
lease b 70 ""
b=$!
lease a 30 "" --measure 4,2
a=$!
sleep 3
kill -USR1 "$b" # b stops launching from 3 s; a is measured from 4 to 6 s
wait "$a"
report a ">=90 (b stopped)"
rm -f "$tmp"/a.*
kill -USR2 "$b" # b returns; a is measured from 1 to 6 s after
lease a 30 "" --measure 1,5
wait "$!"
report a "30+-3 (b back)"
kill "$b"
wait "$b" 2>/dev/null || true
fi

if want "latency"; then
echo "-- latency of 4 ms kernels of a lightly loaded lease (one every 20 ms), in us"
fresh
lease light 30 "" --light 20 --measure 0,5
wait "$!"
echo "    alone:                     $(cat "$tmp"/light.0)"
fresh
lease sat 70 ""
sat=$!
lease light 30 "" --light 20 --measure 0,5
wait "$!"
kill "$sat"
wait "$sat" 2>/dev/null || true
echo "    beside a saturating lease: $(cat "$tmp"/light.*)"
fi

# The framework-like workload (bench/gpu/framework.cu: cuLaunchKernelEx, 3 streams, kernels of
# 20 us to 10 ms, a synchronization every 8 launches), the same launch sequence gpusim's worker
# runs (compute_check's framework=1, bench/compute.sh); its own rate alone is its 100 %.
if want "framework-like workload"; then
  fw=$build/bench/gpu_framework
  if [[ ! -x $fw ]]; then
    nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    "$nvcc" -O2 -std=c++17 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
      -I"$here" "$here/framework.cu" -o "$fw" -L"$(dirname "$nvcc")/../lib64/stubs" -lcuda
  fi
  per_ms=$("$fw" --calibrate)
  fw_alone=$("$fw" --per-ms "$per_ms" "${measure[@]}" | sed -n 's/^rate //p')
  echo "-- framework-like workload (30/70; $per_ms iterations/ms; alone $fw_alone launches/s)"
  fresh
  for spec in a:30 b:70; do
    env LD_PRELOAD="$shim" GPUSHARE_SCHED_DIR="$tmp/sched" GPUSHARE_LEASE_ID="${spec%%:*}" \
      GPUSHARE_COMPUTE_SHARE="${spec#*:}" "$fw" --per-ms "$per_ms" "${measure[@]}" \
      >"$tmp/${spec%%:*}.0" &
  done
  wait
  saved=$alone
  alone=$fw_alone
  report a 30+-3
  report b 70+-3
  together
  alone=$saved
fi

if [[ ${GS_GPU_MPS:-0} == 1 ]] && command -v nvidia-cuda-mps-control >/dev/null; then
  echo "-- MPS (GPUSHARE_GATE=mps: the share is the active thread percentage)"
  export CUDA_MPS_PIPE_DIRECTORY=$tmp/mps CUDA_MPS_LOG_DIRECTORY=$tmp/mps-log
  nvidia-cuda-mps-control -d
  fresh
  GPUSHARE_GATE=mps CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 lease a 30 "" "${measure[@]}"
  GPUSHARE_GATE=mps CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70 lease b 70 "" "${measure[@]}"
  wait
  report a 30+-3
  report b 70+-3
  echo quit | nvidia-cuda-mps-control
fi
