# SPDX-License-Identifier: Apache-2.0
# Issue 27: gpushare_lease_compute_seconds_total (and status's compute_used_ms) count an mps
# lease's device time too: NVML's per-process utilization of its processes (gpusim: the part of
# each second they had work) at its share of the SMs. A 30 % lease whose process keeps the GPU
# busy counts about 0.3 s a second; before, it stayed 0 on mps GPUs.
source "$(dirname "$0")/../daemon/lib.sh"
source "$(dirname "$0")/../daemon/modes_lib.sh"
export GPUSIM_DEVICES=H100-80GB
CONFIG="$MPS_DAEMON_CONFIG
metrics_users = all
[gpu:0]
mode = mps"
start_daemon_metrics
wait_eq 5 up gpu_field 0 .mps.state
bg_gs run --gpu-memory 4G --compute 30 --mode mps --name busy -- "$GS_BUILD_DIR/tests/compute_worker"
client=$!
wait_eq 5 1 lease_count
lease=$(newest_lease)
seconds() {
  curl -fsS "$METRICS_URL" | awk -v l="lease=\"$lease\"" '/^gpushare_lease_compute_seconds_total\{/ && index($0, l) { print $NF }'
}
t0=$(date +%s%N)
wait_until 10 sh -c "[ \"\$(curl -fsS '$METRICS_URL' | awk '/^gpushare_lease_compute_seconds_total\\{/ && index(\$0, \"lease=\\\"$lease\\\"\") { print (\$NF >= 1.2) }')\" = 1 ]"
elapsed=$((($(date +%s%N) - t0) / 1000000))
s=$(seconds)
used=$(gs status --json | jq ".gpus[0].leases[] | select(.id == $lease) | .compute_used_ms")
# At most its share of the time it ran (30 % of the seconds since it started, and a second more
# for the sample that was being taken), and as much in status as in the metrics.
awk -v s="$s" -v e="$elapsed" 'BEGIN { exit !(s > 0 && s <= 0.3 * (e / 1000.0 + 3) + 0.01) }' ||
  fail "compute seconds $s after $elapsed ms"
((used >= 1200)) || fail "status compute_used_ms $used"
pass "an mps lease at 30 % counts device time: ${s} s in the metrics, ${used} ms in status (about 0.3 s a second)"
kill -TERM "$(job_of "$client")"
wait "$client" || true
