#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Another user's `status` latency while one user attacks gpushared (issue 15), on gpusim: p99
# against the 100 ms target, side by side for each attack, with the daemon's memory. Needs root
# (the attacker and the observer are two system users); prints its method and figures.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
[[ $build == /* ]] || build=$PWD/$build
requests=${BENCH_REQUESTS:-1000}
if [[ $(id -u) -ne 0 ]]; then
  echo "bench/hostile.sh: skipped (run as root: it needs two system users)"
  exit 0
fi
for u in gpushare-test gpushare-bench; do
  id "$u" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$u"
done
dir=$(mktemp -d /tmp/gs-bench-hostile.XXXXXX)
chmod 755 "$dir"
export GPUSIM_STATE=$dir/sim GPUSIM_DEVICES=H100-80GB LD_LIBRARY_PATH=$build/sim
sock=$dir/gpushared.sock
: >"$dir/gpushare.conf"
"$build/bin/gpushared" --config "$dir/gpushare.conf" --socket "$sock" --state-dir "$dir/state" \
  --metrics-listen 127.0.0.1:0 --log-level warn 2>"$dir/daemon.log" &
daemon=$!
pids=()
stop_attack() {
  [[ ${#pids[@]} -gt 0 ]] || return 0
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
}
trap 'stop_attack; kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
attacker=(runuser -u gpushare-test -- env GPUSHARE_SOCKET="$sock" GPUSIM_STATE="$GPUSIM_STATE")
attack() {
  setsid "${attacker[@]}" "$@" >/dev/null 2>&1 &
  pids+=($!)
}
leases() {
  "$build/bin/gpushare" --socket "$sock" leases --json 2>/dev/null | jq length
}
rss_mib() {
  awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$daemon/status"
}
measure() {
  local label=$1 line
  line=$(runuser -u gpushare-bench -- "$build/bench/bench_status" "$sock" "$requests" || true)
  printf '%-46s %-40s  target p99 < 100 ms  RSS %s MiB\n' "$label" "$line" "$(rss_mib)"
}

cat <<EOM
bench/hostile.sh: another user's status while one user attacks gpushared (gpusim, 1 H100-80GB)
method: user gpushare-bench sends $requests status requests one after the other, each on a new
  connection (as gpushare status does), while user gpushare-test attacks; latency from connect
  to the reply's last byte (CLOCK_MONOTONIC); median, p99 and maximum of the $requests. Default
  limits (256 connections, 128 queued requests per user). Machine: $(nproc) CPUs, load average
  $(cut -d' ' -f1-3 /proc/loadavg) before the run.
EOM
measure "no attack"

for i in $(seq 100); do
  attack "$build/bin/gpushare" run --gpu-memory 256M -- "$build/tests/gs-hostile" forge 1024 3600
done
for _ in $(seq 200); do [[ $(leases) == 100 ]] && break; sleep 0.1; done
sleep 1
measure "100 leases, 1024 rewritten records each"
stop_attack

attack "$build/tests/gs-hostile" flood "$sock" 10000
attack "$build/tests/gs-hostile" flood "$sock" 10000
measure "20,000 connections opening"
measure "20,000 connections held (256 kept)"
stop_attack

"$build/bin/gpushare" --socket "$sock" run --gpu-memory 80G -- sleep 3600 >/dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do [[ $(leases) == 1 ]] && break; sleep 0.05; done
req='{"op":"acquire","gpu_memory":"40G","command":"flood"}'
attack "$build/tests/gs-hostile" flood "$sock" 10000 "$req"
attack "$build/tests/gs-hostile" flood "$sock" 10000 "$req"
measure "20,000 requests queueing"
measure "20,000 requests queued (128 wait)"
stop_attack
kill "$holder" 2>/dev/null || true

for i in $(seq 20); do
  attack "$build/tests/gs-hostile" pipeline "$sock" 200000
done
sleep 2
measure "20 clients pipelining status, reading nothing"
stop_attack
