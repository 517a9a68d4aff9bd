#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compute shares on gpusim, target next to achieved for every case of issue 10's acceptance, over
# 5 s windows (after a 1 s warm-up), ground truth gpusim's per-process device time
# (tests/shim/compute_check.c); the launch hook's cost with control active
# (bench/bench_compute.c); and the latency a lightly loaded lease's short kernels get beside a
# saturating lease. Each case runs on a fresh simulated node; 4 ms kernels, 4 launches then a
# synchronization, unless the case says otherwise. GS_BENCH_SHIM_BEFORE=another build's
# libgpushare.so adds its launch-hook figures beside this build's, in the same rounds.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
export GS_BUILD_DIR=$build
check=$build/tests/compute_check
out=$(mktemp /tmp/gs-bench-compute.XXXXXX)
trap 'rm -f "$out"' EXIT
sim() { bash "$here/../tests/shim/run_sim.sh" --daemon -- "$@"; }

missed=() # the cases that missed a target: the bench exits 1 naming them
case_() { # TITLE ARGS...
  local title=$1 rc=0
  echo "-- $title"
  shift
  sim "$check" "$@" >"$out" 2>&1 || rc=$?
  grep -v '^[a-z]*: kernels' "$out" || true
  ((rc == 0)) || missed+=("$title")
}

echo "== shares (5 s windows; target vs achieved; wait = longest time a lease with work got no"
echo "   device time)"
case_ "guarantees 30/70" a:g=30 b:g=70 [1,6]:a=30~3 [1,6]:b=70~3 [1,6]:wait:a\<=200 \
  [1,6]:wait:b\<=200
case_ "guarantees 10/90" a:g=10 b:g=90 [1,6]:a=10~2 [1,6]:b=90~3 [1,6]:wait:a\<=200
case_ "guarantees 10/20/30/40" a:g=10 b:g=20 c:g=30 d:g=40 [1,6]:a=10~3 [1,6]:b=20~3 \
  [1,6]:c=30~3 [1,6]:d=40~3 [1,6]:wait:a\<=200
case_ "guarantee 30 alone" a:g=30 [1,6]:a\>=90
case_ "cap 30 alone" a:c=30 [1,6]:a=30~3
case_ "guarantee 30 beside best effort" a:g=30 b [1,6]:a\>=27 [1,6]:b=70~3
case_ "co-tenant stops at 2 s, returns at 4 s" a:g=30 b:g=70 @2:pause:b @4:resume:b \
  [3,4]:a\>=90 [5,10]:a=30~3 [5,10]:b=70~3 [1,10]:wait:a\<=200 [4.2,10]:wait:b\<=200
case_ "shares of 5 % (2 ms kernels)" a:g=5,kernel=2ms b:g=5,kernel=2ms c:g=5,kernel=2ms \
  d:g=85,kernel=2ms [1,6]:a=5~2 [1,6]:d=85~3 [1,6]:wait:a\<=200 [1,6]:wait:b\<=200 \
  [1,6]:wait:c\<=200
case_ "several processes per lease (3 and 2)" a:g=30,procs=3 b:g=70,procs=2 [1,6]:a=30~3 \
  [1,6]:b=70~3
case_ "threads and streams (4x2, 3x3)" a:g=30,threads=4,streams=2 b:g=70,threads=3,streams=3 \
  [1,6]:a=30~3 [1,6]:b=70~3
case_ "synchronize after every kernel (part of the device time used)" a:g=30,batch=1 \
  b:g=70,batch=1 [1,6]:a%=30~3 [1,6]:b%=70~3 [1,6]:a=30~3 [1,6]:b=70~3 [1,6]:total\>=90
case_ "graph launches (4 kernels a graph)" a:g=30,graph=1 b:g=70,graph=1 [1,6]:a=30~3 \
  [1,6]:b=70~3
case_ "kernels of 150 ms (longer than the 30 % lease's 30 ms slot)" \
  a:g=30,kernel=150ms,batch=1 b:g=70 [1,6]:a=30~3 [1,6]:b=70~3
case_ "framework-like (cuLaunchKernelEx, 3 streams, 20 us-10 ms kernels, sync every 8)" \
  a:g=30,framework=1 b:g=70,framework=1 [1,6]:a%=30~3 [1,6]:b%=70~3 [1,6]:a=30~3 [1,6]:b=70~3 \
  [1,6]:wait:a\<=200

echo
echo "== another user's lease churns (issue 34: every grant answered at once with a first launch"
echo "   and a yield still wanting, never a launch) beside a 50 % lease; gpushared's CPU over the"
echo "   run; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for h in 10 50; do
  for n in 1 16 64 256; do
    case_ "churn from a $h % lease on $n channels" v:g=50 h:g=$h,hostile=2,chans=$n [1,6]:v\>=48
  done
done
case_ "another user holds every channel and lease it may; two --compute 50 jobs" h:hostile=3 \
  a:g=50 b:g=50 [1,6]:a=50~3 [1,6]:b=50~3

echo
echo "== launch hook"
tmp=$(mktemp -d /dev/shm/gs-bench-compute-XXXXXX)
daemon=
trap '[[ -n $daemon ]] && kill "$daemon" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp" "$out"' EXIT
export GPUSIM_STATE=$tmp/node GPUSIM_DEVICES=H100-80GB GPUSIM_TIME_SCALE=1000000
export LD_LIBRARY_PATH=$build/sim GPUSHARE_SOCKET=$tmp/gpushared.sock
: >"$tmp/gpushare.conf"
"$build/bin/gpushared" --config "$tmp/gpushare.conf" --state-dir "$tmp/state" \
  --metrics-listen 127.0.0.1:0 >"$tmp/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 200); do "$build/bin/gpushare" leases >/dev/null 2>&1 && break; sleep 0.05; done
GS_BENCH_SHIM=$build/lib/libgpushare.so GS_BENCH_GPUSHARE=$build/bin/gpushare \
  "$build/bench/bench_compute"
kill "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=
unset GPUSIM_STATE GPUSIM_TIME_SCALE GPUSHARE_SOCKET

echo
echo "== latency of a lightly loaded lease's 1 ms kernels (one every 20 ms, launch to end of"
echo "   synchronization; medians and 99th percentiles over 5 s)"
light() { # TITLE ARGS...
  local out
  out=$(sim "$check" "$@" [1,6]:light\>=0 | sed -n 's/^light: latency_us //p')
  printf '  %-52s %s\n' "$1" "$out"
}
light "alone (guarantee 30)" light:g=30,kernel=1ms,light=20
light "beside a saturating lease (guarantees 30 and 70)" light:g=30,kernel=1ms,light=20 sat:g=70
light "best effort beside a saturating guarantee of 70" light:kernel=1ms,light=20 sat:g=70

echo
if ((${#missed[@]} > 0)); then
  echo "bench/compute.sh: ${#missed[@]} case(s) missed a target:$(printf ' "%s"' "${missed[@]}")"
  exit 1
fi
echo "bench/compute.sh: every case met its targets"
