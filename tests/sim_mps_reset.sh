#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The MPS server reset seen on the H100 (data/gpu-facts/h100-gpushare-checks.md): the first client
# that connects right after two concurrent clients have exited fails to create its context with
# CUDA_ERROR_LAUNCH_FAILED; the server log says the client encountered a fatal GPU error and the
# device will be reset, the server destroys its context, and the next client works. Clients that
# ran one at a time do not cause it. Without the shim the failure is real; under gpushare's shim
# the same job runs, with one log line (the shim retried once).
# Run by sim_cuda_run.sh (private GPUSIM_STATE, LD_LIBRARY_PATH=build/sim).
set -euo pipefail
progs="${GSIM_CUDA_PROGS:?}"
mps="${GS_BUILD_DIR:?}/sim/nvidia-cuda-mps-control"
shim="$GS_BUILD_DIR/lib/libgpushare.so"
# In sanitizer builds the sanitizer runtime is preloaded ahead of the (instrumented) shim.
[[ -n ${GS_SANITIZE:-} ]] && shim="$(gcc -print-file-name=libasan.so):$shim"
fail() { echo "sim_mps_reset: $*" >&2; exit 1; }
export CUDA_MPS_PIPE_DIRECTORY=$GPUSIM_STATE/mps-pipe CUDA_MPS_LOG_DIRECTORY=$GPUSIM_STATE/mps-log
log=$CUDA_MPS_LOG_DIRECTORY/server.log
"$mps" -d
trap 'echo quit | "$mps" >/dev/null 2>&1 || true' EXIT

# Two clients that ran at the same time (each holding 1 GiB through its primary context), gone.
two_concurrent_clients() {
  local a b
  "$progs/memhold" 1 > "$GPUSIM_STATE/a" &
  a=$!
  "$progs/memhold" 1 > "$GPUSIM_STATE/b" &
  b=$!
  for f in a b; do
    for _ in $(seq 100); do grep -q held "$GPUSIM_STATE/$f" 2>/dev/null && break; sleep 0.05; done
    grep -q held "$GPUSIM_STATE/$f" || fail "client $f did not start"
  done
  kill -9 $a $b
  wait $a $b 2>/dev/null || true
}

# One client at a time never meets it.
"$progs/meminfo" > /dev/null || fail "first client failed"
"$progs/meminfo" > /dev/null || fail "second client, after one client, failed"

two_concurrent_clients
if out=$("$progs/meminfo" 2>&1); then
  fail "the first client after two concurrent clients created its context: $out"
fi
grep -q "returned 719 (CUDA_ERROR_LAUNCH_FAILED)" <<<"$out" ||
  fail "unexpected failure: $out"
grep -Eq "Server [0-9]+\] Client [0-9]+ encountered a fatal GPU error\.$" "$log" ||
  fail "server.log has no fatal error line: $(cat "$log")"
grep -q "The following devices will be reset: 0$" "$log" || fail "server.log: no reset line"
grep -q "Destroy server context on device 0$" "$log" || fail "server.log: no destroy line"
"$progs/meminfo" > /dev/null || fail "the next client failed too"

# Under the shim: the job runs; its stderr is the shim's one line.
two_concurrent_clients
LD_PRELOAD=$shim "$progs/meminfo" > "$GPUSIM_STATE/out" 2> "$GPUSIM_STATE/err" ||
  fail "under the shim the job failed: $(cat "$GPUSIM_STATE/err")"
[[ $(wc -l < "$GPUSIM_STATE/err") == 1 ]] || fail "stderr: $(cat "$GPUSIM_STATE/err")"
grep -q "MPS server reset after its clients exited; retrying once in 500 ms" "$GPUSIM_STATE/err" ||
  fail "log line: $(cat "$GPUSIM_STATE/err")"
[[ $(grep -c "encountered a fatal GPU error" "$log") == 2 ]] || fail "server.log: $(cat "$log")"
echo "sim_mps_reset: ok ($(grep -c . "$log") server.log lines; shim: $(cat "$GPUSIM_STATE/err"))"
