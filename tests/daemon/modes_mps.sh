# SPDX-License-Identifier: Apache-2.0
# Issue 11, acceptance 1: mode = mps on gpusim. gpushared runs the GPU's MPS control daemon; a
# lease gets CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (its compute share),
# CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (its memory limit) and GPUSHARE_GPU_MODE=mps; two leases at
# 30 % and 70 % run at the same time and get 30 +- 3 and 70 +- 3 % of the GPU's throughput (the
# facts' method: fixed 4 ms kernels per second, against the device's 250/s; never NVML); a process past its pinned limit gets
# CUDA_ERROR_OUT_OF_MEMORY from MPS itself; a killed control daemon is back within 2 s with a log
# line; at shutdown no MPS process is left.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/modes_lib.sh"
export GPUSIM_DEVICES=H100-80GB
JOB=$GS_BUILD_DIR/tests/gs-demo-job
CONFIG="$MPS_DAEMON_CONFIG
[gpu:0]
mode = mps"
start_daemon_metrics
PIPE=$WORK/run/mps/$(gs status --json | jq -r '.gpus[0].uuid')/pipe

mps() {
  gs status --json | jq -r ".gpus[0].mps$1"
}

expect_eq "$(mps .state)" up "the MPS control daemon"
daemon1=$(mps .pid)
expect_eq "$(cat "$PIPE/nvidia-cuda-mps-control.pid")" "$daemon1" "its pid file"
pass "gpushared started the GPU's MPS control daemon (pipe directory $PIPE)"

# The environment of a lease, exactly.
out=$(gs run --gpu-memory 4G --compute 30 -- env | grep -E '^(CUDA_MPS_|CUDA_VISIBLE|GPUSHARE_GPU_MODE|GPUSHARE_COMPUTE)' | sort | tr '\n' ' ')
uuid=$(gs status --json | jq -r '.gpus[0].uuid')
expect_eq "$out" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4G CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_VISIBLE_DEVICES=$uuid GPUSHARE_GPU_MODE=mps " "a 4G lease at 30 %"
out=$(gs run --gpu 0.25 -- env | grep -E '^CUDA_MPS_(ACTIVE|PINNED)' | sort | tr '\n' ' ')
# A quarter of the H100's 81079 MiB leasable (CUDA's total) is 20269.75 MiB: MPS gets whole MiB.
expect_eq "$out" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20269M " "a quarter of the GPU"
out=$(gs run --gpu-memory 1536M -- env | grep -E '^CUDA_MPS_(ACTIVE|PINNED)' | sort | tr '\n' ' ')
expect_eq "$out" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1536M " "memory alone: all SMs, no percentage"
pass "MPS leases get the pipe directory, their share as active thread percentage and their limit pinned"

# Two leases at 30 % and 70 % at the same time, each a saturating fixed-work process: each gets
# its share of the GPU's throughput. Together that is the whole GPU: their kernels overlap (time
# slicing would give each half of its share at most).
WORKER=$GS_BUILD_DIR/tests/compute_worker
bg_gs run --gpu-memory 4G --compute 30 -- "$WORKER" --measure 0.8,4 >"$WORK/r30"
c30=$!
bg_gs run --gpu-memory 4G --compute 70 -- "$WORKER" --measure 0.8,4 >"$WORK/r70"
c70=$!
wait_eq 5 2 lease_count
wait_until 5 job_of "$c30"
wait_until 5 job_of "$c70"
j30=$(job_of "$c30") j70=$(job_of "$c70")
wait_eq 4 2 mps .clients # the daemon asks MPS for its clients every 2 s, in the background
clients=$(mps '.client_pids | sort | map(tostring) | join(" ")')
expect_eq "$clients" "$(printf '%s\n' "$j30" "$j70" | sort -n | tr '\n' ' ' | sed 's/ $//')" "client pids"
servers=$(mps '.servers | map(tostring) | join(" ")')
[[ -n $servers ]] || fail "no MPS server listed"
wait "$c30" || fail "the 30 % job failed"
wait "$c70" || fail "the 70 % job failed"
share() { awk '/^rate / { printf "%d", $2 * 100 / 250 + 0.5 }' "$1"; }
s30=$(share "$WORK/r30") s70=$(share "$WORK/r70")
[[ -n $s30 && -n $s70 ]] || fail "no rates: $(cat "$WORK/r30" "$WORK/r70")"
((s30 >= 27 && s30 <= 33)) || fail "the 30 % lease got $s30 % of the GPU"
((s70 >= 67 && s70 <= 73)) || fail "the 70 % lease got $s70 % of the GPU"
pass "30/70 leases run at the same time with $s30 % and $s70 % of the GPU"

# As on the H100 (data/gpu-facts/h100-gpushare-checks.md): the first MPS client after two
# concurrent clients have exited fails to create its context (the MPS server reset, modelled in
# sim/mps/server.c); without the shim the job sees it, and the next client works.
set +e
out=$(gs run --gpu-memory 4G -- env -u LD_PRELOAD "$JOB" reset 1 0.1 2>&1)
set -e
grep -q 'cuCtxCreate.*CUDA_ERROR_LAUNCH_FAILED' <<<"$out" || fail "no MPS server reset: $out"
pass "the first client after the two concurrent ones meets the MPS server reset, as on the H100"

# The pinned limit is MPS's own: without the shim, a process going past 4 GiB gets an OOM.
set +e
out=$(gs run --gpu-memory 4G -- env -u LD_PRELOAD "$JOB" pinned 3 1 2 0.2 2>&1)
rc=$?
set -e
expect_eq "$rc" 1 "exit status of a process past its pinned limit"
grep -q '^\[pinned\] growing failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out" || fail "no OOM: $out"
pass "a process past its pinned device memory limit gets CUDA_ERROR_OUT_OF_MEMORY from MPS"

# As measured on a real H100 (bench/gpu/node.sh): the client's context counts against its pinned
# limit, cuMemGetInfo's free is what the limit leaves (its total stays the device's), and the
# context stays usable after the refusal.
PROBE=$GS_BUILD_DIR/tests/gs-mps-probe
CONTEXT=543162368
out=$(gs run --gpu-memory 4G -- env -u LD_PRELOAD "$PROBE" 3 2 | awk '{ print $2, $3, $5, $7 }' | tr '\n' ';')
left=$(((4 << 30) - (3 << 30) - CONTEXT))
expect_eq "$out" "first(3221225472) CUDA_SUCCESS $left 85017493504;more(2147483648) CUDA_ERROR_OUT_OF_MEMORY $left 85017493504;small(67108864) CUDA_SUCCESS $((left - (64 << 20))) 85017493504;" \
  "a 4G client without the shim: 3 GiB, 2 GiB more, 64 MiB"
pass "the context counts against the pinned limit; cuMemGetInfo shows what the limit leaves"

# A killed control daemon is started again within 2 s, with a log line.
kill -KILL "$daemon1"
start=$(date +%s%N)
until [[ $(mps .pid) != "$daemon1" && $(mps .state) == up ]]; do
  (($(date +%s%N) - start < 3000000000)) || fail "the MPS control daemon was not restarted"
  sleep 0.02
done
took=$((($(date +%s%N) - start) / 1000000))
((took <= 2000)) || fail "restarted after $took ms"
daemon2=$(mps .pid)
expect_eq "$(mps .restarts)" 1 "restarts"
grep -q "GPU 0: its MPS control daemon (pid $daemon1) died: restarting it" "$WORK/daemon.log" || fail "no log line"
gs run --gpu-memory 4G -- "$JOB" after 1 1 >/dev/null || fail "a job after the restart"
scrape_restarts() {
  curl -fsS "$METRICS_URL" | grep '^gpushare_mps_restarts_total' || true
}
wait_eq 3 "gpushare_mps_restarts_total{gpu=\"0\",UUID=\"$uuid\"} 1" scrape_restarts
pass "SIGKILL of the MPS control daemon: restarted in $took ms, logged, counted in metrics"

# Shutdown: quit, and no MPS process is left.
servers=$(mps '.servers | map(tostring) | join(" ")')
stop_daemon
for p in $daemon2 $servers; do
  gone "$p" || fail "MPS process $p is still running after gpushared stopped"
done
[[ ! -e $PIPE/control ]] || fail "the control socket is still there"
grep -q "GPU 0: MPS control daemon (pid $daemon2) stopped" "$WORK/daemon.log" || fail "no stop line"
pass "at shutdown the MPS control daemon quits and no MPS process is left"
