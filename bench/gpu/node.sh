#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpushared on a real NVIDIA GPU: the checks of issues 10–12 that gpusim cannot stand in for,
# run against NVIDIA's driver and NVML with a private gpushared (its own socket, state and
# runtime directories in a temporary folder; the GPU's compute and MIG modes are never changed).
#
#  1. footprint: `gpushare run --gpu-memory 4G -- gs-gpu-hog pair` — two processes, each a
#     context, then what cuMemGetInfo says is free; NVML's per-process memory of the two against
#     4 GiB (the bound of README "The whole footprint").
#  2. watchdog: a process of no lease (no shim) is unmanaged in status and metrics (time to show);
#     a lease's second process without the shim takes the lease over its limit (time to show);
#     enforce = kill ends a bypassing process and leaves the shim's.
#  3. compute shares through gpushared in shared mode: two leases --compute 30 / 70 with the
#     fixed-work kernel (bench/gpu/fixed_work.cu), kernels/s against one process alone.
#  4. mode = mps: gpushared starts the GPU's MPS control daemon; leases 30/70 run at the same
#     time with their active thread percentages; a process past its pinned limit (no shim) gets
#     CUDA_ERROR_OUT_OF_MEMORY from MPS (one within it holds its memory); a killed control daemon is restarted (time, log line);
#     at shutdown no MPS process is left.
#
# usage: bench/gpu/node.sh [BUILD]   (as root on a GPU node with nothing else running on GPU 0;
#        BUILD defaults to build: bin/gpushared, bin/gpushare, lib/libgpushare.so,
#        tests/gs-gpu-hog, tests/gs-nvml-procs; bench/gpu_fixed_work and bench/gs-mps-probe
#        are built with nvcc and cc when missing). Needs jq, and curl or python3. Prints each
#        check's target beside what it measured, "ok" or "MISS"; exit status 1 when any missed.
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
BIN=$build/bin
HOG=$build/tests/gs-gpu-hog
NVML_PROCS=$build/tests/gs-nvml-procs
prog=$build/bench/gpu_fixed_work
PROBE=$build/bench/gs-mps-probe
cuda=${CUDA_HOME:-/usr/local/cuda}
if [[ ! -x $PROBE ]]; then
  mkdir -p "$build/bench"
  cc -O2 -I"$cuda/include" "$here/mps_probe.c" -o "$PROBE" -L"$cuda/lib64/stubs" -lcuda || exit 2
fi
if [[ ! -x $prog ]]; then
  mkdir -p "$build/bench"
  "${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" -O2 -std=c++17 \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    "$here/fixed_work.cu" -o "$prog" || exit 2
fi
WORK=$(mktemp -d /tmp/gs-gpu-node.XXXXXX)
chmod 755 "$WORK"
export GPUSHARE_SOCKET=$WORK/gpushared.sock
DAEMON=
PIDS=()
misses=0
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  [[ -n $DAEMON ]] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
  pkill -KILL -f "$WORK" 2>/dev/null
  pkill -KILL -f "$HOG" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

gs() { "$BIN/gpushare" "$@"; }
bg() { # a command in its own process group, killed at the end
  setsid "$@" &
  PIDS+=($!)
}
check() { # check WHAT TARGET ACHIEVED OK(0/1)
  local verdict=ok
  [[ $4 == 1 ]] || { verdict=MISS; misses=$((misses + 1)); }
  printf '    %-58s target %-16s achieved %-22s %s\n' "$1" "$2" "$3" "$verdict"
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds; status 1 on timeout
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}
start_daemon() { # start_daemon CONFIG
  printf '%s\n' "$1" >"$WORK/gpushare.conf"
  "$BIN/gpushared" --config "$WORK/gpushare.conf" --state-dir "$WORK/state" \
    --metrics-listen 127.0.0.1:19400 >>"$WORK/daemon.log" 2>&1 &
  DAEMON=$!
  wait_for 10 gs leases || { echo "gpushared did not start:"; tail "$WORK/daemon.log"; exit 1; }
}
stop_daemon() {
  kill -TERM "$DAEMON"
  wait "$DAEMON"
  echo "    gpushared exited with status $?"
  DAEMON=
}
status() { gs status --json | jq -c "$1"; }
nvml_used() { "$NVML_PROCS" 0 | awk -v p="$1" '$1 == p { u = $2 } END { printf "%.0f\n", u }'; }
live_mps() { # the MPS processes that run (zombies an init has not reaped yet do not)
  local p
  for p in $(pgrep '^nvidia-cuda-mps'); do
    [[ $(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null) == [RSDT] ]] && printf '%s ' "$(cat "/proc/$p/comm") $p"
  done
}
scrape() {
  if command -v curl >/dev/null; then curl -fsS http://127.0.0.1:19400/metrics; else
    python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:19400/metrics").read().decode())'
  fi
}
metric() { scrape | awk -v m="$1" 'index($0, m) == 1 { print $NF }'; }
held() { # held FILE: waits for gs-gpu-hog's "held BYTES PID"; prints PID
  wait_for 20 grep -qs '^held ' "$1" || return 1
  awk '/^held / { print $3 }' "$1"
}
is() { # is VALUE CMD...: CMD prints VALUE
  [[ $("${@:2}") == "$1" ]]
}
no_leases() { is 0 eval "$BIN/gpushare leases --json | jq length"; }
gib() { awk -v b="$1" 'BEGIN { printf "%.3f GiB", b / 1073741824 }'; }

echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,compute_mode,mig.mode.current --format=csv,noheader 2>/dev/null)"
base="[daemon]
runtime_dir = $WORK/run
metrics_users = all"

echo "-- 1. footprint: a 4G lease, two processes filling what cuMemGetInfo says is free"
start_daemon "$base"
gs status | head -5
bg "$BIN/gpushare" run --gpu-memory 4G -- "$HOG" pair >"$WORK/pair.out"
client=$!
if wait_for 60 grep -qs '^pair ' "$WORK/pair.out"; then
  read -r _ p1 h1 p2 h2 <"$WORK/pair.out"
  sleep 1.5
  u1=$(nvml_used "$p1") u2=$(nvml_used "$p2")
  echo "    process 1: allocated $(gib "$h1"), NVML $(gib "$u1") (context + other: $(gib $((u1 - h1))))"
  echo "    process 2: allocated $(gib "$h2"), NVML $(gib "$u2") (context + other: $(gib $((u2 - h2))))"
  over=$((u1 + u2 - (4 << 30)))
  check "NVML per-process sum of the job's two processes" "<= 4 GiB+2g" "$(gib $((u1 + u2))) ($((over >> 20)) MiB)" \
    $((over <= 2 * (128 << 20)))
  echo "    status (memory_real, over_limit): $(status '[.gpus[0].leases[0].memory_real, .gpus[0].leases[0].over_limit]')"
else
  check "gs-gpu-hog pair under a 4G lease" "runs" "$(tr '\n' ' ' <"$WORK/pair.out")" 0
fi
kill -TERM "$client" 2>/dev/null
wait "$client" 2>/dev/null
wait_for 10 no_leases

echo "-- 2. watchdog (enforce = report)"
bg "$HOG" hold 10 >"$WORK/unmanaged.out"
hog=$!
if pid=$(held "$WORK/unmanaged.out"); then
  t0=$(date +%s%N)
  wait_for 5 is "$pid" status '.gpus[0].unmanaged[0].pid'
  t=$(ms_since "$t0")
  check "an unmanaged process in status" "<= 2000 ms" "$t ms" $((t <= 2000))
  wait_for 5 is 1 metric 'gpushare_unmanaged_processes{gpu="0"'
  t=$(ms_since "$t0")
  check "... in metrics" "<= 2000 ms" "$t ms" $((t <= 2000))
  echo "    its memory in status: $(gib "$(status '.gpus[0].unmanaged[0].memory_used')") (NVML $(gib "$(nvml_used "$pid")"))"
  gs status | grep UNMANAGED
  grep "outside any lease" "$WORK/daemon.log" | tail -1
fi
kill -KILL "$hog" 2>/dev/null
wait "$hog" 2>/dev/null
bypass() { # a 4G lease: 1 GiB through the shim, 6 GiB in a second process without it
  bg "$BIN/gpushare" run --gpu-memory 4G -- bash -c "\"$HOG\" hold 1 >$WORK/shimmed.out & env -u LD_PRELOAD \"$HOG\" hold 6 >$WORK/bypass.out & wait"
  client=$!
  shimmed=$(held "$WORK/shimmed.out") && bypassing=$(held "$WORK/bypass.out")
}
rm -f "$WORK"/*.out
if bypass; then
  t0=$(date +%s%N)
  wait_for 5 is true status '.gpus[0].leases[0].over_limit > 0'
  t=$(ms_since "$t0")
  check "a lease over its limit (bypassing process)" "<= 2000 ms" "$t ms" $((t <= 2000))
  echo "    status (memory_real, over_limit): $(status '[.gpus[0].leases[0].memory_real, .gpus[0].leases[0].over_limit]')"
  grep "over its limit" "$WORK/daemon.log" | tail -1
fi
kill -TERM "$client" 2>/dev/null
kill -KILL "${shimmed:-0}" "${bypassing:-0}" 2>/dev/null
wait "$client" 2>/dev/null
wait_for 10 no_leases
stop_daemon

echo "-- 2b. watchdog (enforce = kill): the bypassing process, not the shim's"
start_daemon "$base
enforce = kill"
rm -f "$WORK"/*.out
if bypass; then
  t0=$(date +%s%N)
  wait_for 5 bash -c "! kill -0 $bypassing 2>/dev/null || grep -q ' Z ' /proc/$bypassing/stat"
  t=$(ms_since "$t0")
  alive=0
  kill -0 "$shimmed" 2>/dev/null && alive=1
  check "bypassing process killed" "<= 2000 ms" "$t ms" $((t <= 2000))
  check "the shim's process of the lease" "runs on" "$( ((alive)) && echo running || echo gone)" $alive
  grep -i "kill" "$WORK/daemon.log" | tail -1
fi
kill -TERM "$client" 2>/dev/null
kill -KILL "${shimmed:-0}" 2>/dev/null
wait "$client" 2>/dev/null
wait_for 10 no_leases
stop_daemon

iters=$("$prog" --calibrate 4)
alone=$("$prog" --iters "$iters" --measure 2,5 | sed -n 's/^rate //p')
echo "-- fixed-work kernel: $iters iterations (~4 ms); one process alone: $alone kernels/s = 100 %"
pct() { awk -v r="$(sed -n 's/^rate //p' "$1")" -v a="$alone" 'BEGIN { printf "%.1f", 100 * r / a }'; }
within() { awk -v v="$1" -v t="$2" -v e="$3" 'BEGIN { print (v >= t - e && v <= t + e) ? 1 : 0 }'; }
pair_30_70() { # pair_30_70 TITLE: leases --compute 30 and 70 at once, each one saturating process
  bg "$BIN/gpushare" run --gpu-memory 4G --compute 30 -- "$prog" --iters "$iters" --measure 2,5 >"$WORK/r30"
  local a=$!
  bg "$BIN/gpushare" run --gpu-memory 4G --compute 70 -- "$prog" --iters "$iters" --measure 2,5 >"$WORK/r70"
  local b=$!
  wait "$a" "$b"
  local s30 s70
  s30=$(pct "$WORK/r30") s70=$(pct "$WORK/r70")
  check "$1: lease --compute 30" "30+-3 %" "$s30 %" "$(within "$s30" 30 3)"
  check "$1: lease --compute 70" "70+-3 %" "$s70 %" "$(within "$s70" 70 3)"
  echo "    together: $(awk -v a="$s30" -v b="$s70" 'BEGIN { print a + b }') % of one process alone"
}

echo "-- 3. compute shares through gpushared (shared mode: the time-slot scheduler)"
start_daemon "$base"
pair_30_70 "shared"
stop_daemon

echo "-- 4. mode = mps"
if ! command -v nvidia-cuda-mps-control >/dev/null; then
  check "nvidia-cuda-mps-control" "on PATH" "missing" 0
else
  start_daemon "$base
[gpu:0]
mode = mps"
  mps() { status ".gpus[0].mps$1" | tr -d '"'; }
  echo "    MPS control daemon: $(mps .state), pid $(mps .pid)"
  echo "    a 4G lease at 30 %: $(gs run --gpu-memory 4G --compute 30 -- env | grep -E '^(CUDA_MPS_|GPUSHARE_GPU_MODE)' | sort | tr '\n' ' ')"
  echo "    a 4G lease's process without the shim: 3 GiB, 2 GiB more, then 64 MiB (gs-mps-probe):"
  out=$(gs run --gpu-memory 4G -- env -u LD_PRELOAD "$PROBE" 3 2 2>&1)
  sed 's/^/      /' <<<"$out"
  verdict=$(awk '$1 == "step" && $2 ~ /^more/ { print $3 }' <<<"$out")
  check "past its pinned limit (no shim)" "OOM from MPS" "${verdict:-none}" \
    $([[ $verdict == CUDA_ERROR_OUT_OF_MEMORY ]] && echo 1 || echo 0)
  echo "    the same with the shim:"
  gs run --gpu-memory 4G -- "$PROBE" 3 2 2>&1 | sed 's/^/      /'
  bg "$BIN/gpushare" run --gpu-memory 4G -- env -u LD_PRELOAD "$HOG" hold 3 >"$WORK/mps3.out" 2>&1
  client=$!
  held=0
  held "$WORK/mps3.out" >/dev/null && held=1
  check "3 GiB in the same lease (no shim)" "held" "$(head -c 40 "$WORK/mps3.out")" $held
  pkill -KILL -f "$HOG"
  wait "$client" 2>/dev/null
  pair_30_70 "mps"
  # Seen on the H100 (data/gpu-facts/h100-gpushare-checks.md): the first client that connects right
  # after two concurrent clients exit may fail to create its context (the MPS server reports a
  # fatal GPU error and destroys its context); shown here, not counted.
  echo "    the first client after the pair: $(gs run --gpu-memory 4G -- env -u LD_PRELOAD "$PROBE" 1 0 2>&1 | head -1)"

  d1=$(mps .pid)
  kill -KILL "$d1"
  t0=$(date +%s%N)
  until [[ $(mps .state) == up && $(mps .pid) != "$d1" ]]; do
    (($(ms_since "$t0") < 5000)) || break
    sleep 0.02
  done
  t=$(ms_since "$t0")
  check "killed MPS control daemon restarted" "<= 2000 ms" "$t ms (pid $(mps .pid))" $((t <= 2000))
  grep -i "mps" "$WORK/daemon.log" | tail -2
  stop_daemon
  wait_for 2 is "" live_mps
  left=$(live_mps)
  check "MPS processes left after gpushared stopped" "none" "${left:-none}" $([[ -z $left ]] && echo 1 || echo 0)
fi
echo "-- daemon log: $(wc -l <"$WORK/daemon.log") lines; misses: $misses"
((misses == 0))
