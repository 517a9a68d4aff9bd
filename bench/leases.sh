#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lease grant+release throughput and latency of gpushared with 8 concurrent clients, on gpusim,
# with the ledger on disk (/var/tmp) or tmpfs (/dev/shm) (lease regions are memfds of the
# daemon). Prints its method and figures.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
[[ $build == /* ]] || build=$PWD/$build
clients=${BENCH_CLIENTS:-8}
pairs=${BENCH_PAIRS:-5000}

# run_on LABEL STATE_PARENT: one measurement with the ledger under STATE_PARENT.
run_on() {
  local label=$1 dir
  dir=$(mktemp -d "$2/gs-bench-leases.XXXXXX")
  : >"$dir/gpushare.conf"
  export GPUSIM_STATE=$dir/sim GPUSIM_DEVICES=H100-80GB,H100-80GB
  export LD_LIBRARY_PATH=$build/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  "$build/bin/gpushared" --config "$dir/gpushare.conf" --socket "$dir/gpushared.sock" \
    --state-dir "$dir/state" --metrics-listen 127.0.0.1:0 --log-level warn 2>"$dir/daemon.log" &
  local pid=$!
  for _ in $(seq 100); do [[ -S $dir/gpushared.sock ]] && break; sleep 0.05; done
  echo "$label (ledger: $(df -T "$dir" | awk 'NR == 2 {print $2}')):"
  "$build/bench/bench_leases" --socket "$dir/gpushared.sock" --daemon-pid "$pid" --clients "$clients" --pairs "$pairs" --runs 3 ||
    { cat "$dir/daemon.log" >&2; kill "$pid"; rm -rf "$dir"; return 1; }
  kill -TERM "$pid"
  wait "$pid" || true
  rm -rf "$dir"
}

cat <<EOM
bench/leases.sh: gpushared lease grant+release on gpusim (2 simulated H100-80GB)
method: $clients client threads in one process, each with one connection, loop {acquire a 1 MiB
  --gpu-memory lease with wait=false; release it} $pairs times, all starting together; 3 runs,
  median run by throughput. A pair is one grant and one release (2 operations). Latency is a
  pair's round trips measured in the client. Each grant writes and commits a ledger row before
  its reply and gives the lease a region (a recycled one of the same user, or a new sealed
  memfd), each release deletes the row (committed); the daemon's log level is warn (info logs 2 lines per
  pair). "daemon CPU" is the daemon's user+system time per pair (/proc/PID/stat): what the
  daemon costs independently of other load. Machine: $(nproc) CPUs, load average
  $(cut -d' ' -f1-3 /proc/loadavg) before the run (the figures depend on other work on it).
EOM
run_on "ledger on disk" /var/tmp
run_on "ledger on tmpfs" /dev/shm
