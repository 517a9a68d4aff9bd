# SPDX-License-Identifier: Apache-2.0
# Issue 25, the MIG hole: gpushared restarts while NVML cannot list a MIG GPU's instances. The
# lease whose job still runs on its instance is not ended: it keeps its capacity, waits for
# NVML (status and the log say so), and takes its instance back once NVML answers again.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/modes_lib.sh"
export GPUSIM_DEVICES=A100-40GB
export GPUSIM_NVML_FAULTS=$WORK/nvml-faults
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null
CONFIG=$'[gpu:0]\nmode = mig'
lease_state() {
  gs leases --json | jq -r ".[] | select(.id == $1) | .state" | grep . || echo gone
}
start_daemon
hold --mig-profile 3g.20gb
job=$(job_of "$client")
instance=$(gs leases --json | jq -r ".[] | select(.id == $lease) | .gpus[0].instance")
[[ $instance == MIG-* ]] || fail "no instance: $instance"
kill9_daemon

# NVML fails for every MIG call (and the mode's own query) while gpushared starts again.
echo "nvmlDeviceGetMigMode 999" >"$GPUSIM_NVML_FAULTS"
start_daemon
expect_eq "$(lease_state "$lease")" active "the lease after a restart with NVML failing"
expect_eq "$(gpu_field 0 '.mig.waiting_for_nvml | map(tostring) | join(",")')" "$lease" "leases waiting for NVML"
[[ $(gpu_field 0 .problem) == *"nvmlDeviceGetMigMode: Unknown Error"* ]] || fail "problem: $(gpu_field 0 .problem)"
grep -q "lease $lease: GPU 0 cannot list its MIG instances (.*): the lease keeps its capacity and waits for NVML to look for its instance $instance" "$WORK/daemon.log" ||
  fail "no log line"
kill -0 "$job" || fail "the job died"
expect_eq "$(gpu_field 0 .memory_leased)" "$(gs leases --json | jq ".[] | select(.id == $lease) | .memory_limit")" "memory leased"
pass "a restart while NVML fails keeps the MIG lease, waiting for NVML"

rm -f "$GPUSIM_NVML_FAULTS"
wait_eq 8 "" gpu_field 0 '.mig.waiting_for_nvml | map(tostring) | join(",")'
grep -q "lease $lease: NVML answers again: its MIG instance $instance on GPU 0 is back" "$WORK/daemon.log" ||
  fail "no log line when NVML answered"
expect_eq "$(gpu_field 0 "[.mig.instances[] | select(.uuid == \"$instance\") | .state] | join(\",\")")" leased "its instance"
end_lease "$client"
expect_eq "$(gpu_field 0 "[.mig.instances[] | select(.uuid == \"$instance\") | .state] | join(\",\")")" idle "its instance after the end"
pass "once NVML answers, the lease takes its instance back and ends normally"

# Found by the fault-injection suite (seed 1): a grant whose instance is made halfway while NVML
# fails every GPU-instance call (its compute instance cannot be made, and it can neither be
# destroyed nor listed) leaves an instance gpushared did not know, for as long as it ran. The GPU
# now lists nothing and grants nothing until NVML lists its instances again; then the instance
# is known (idle, reused or destroyed like any other).
echo "nvmlGpuInstance* 999" >"$GPUSIM_NVML_FAULTS"
set +e
out=$(gs run --mig-profile 1g.5gb --no-wait -- true 2>&1)
rc=$?
set -e
[[ $rc != 0 ]] || fail "a MIG lease was granted while NVML fails"
expect_eq "$(gpu_field 0 .mig.enabled)" false "the MIG GPU after a grant that failed halfway"
rm -f "$GPUSIM_NVML_FAULTS"
sim_gis() {
  "$GS_BUILD_DIR/sim/nvidia-smi" mig -lgi | awk '$2 == 0 && $3 == "MIG" {print $6}' | sort -n | xargs
}
our_gis() {
  gpu_field 0 '[.mig.instances[]?.gpu_instance] | sort | map(tostring) | join(" ")'
}
[[ -n $(sim_gis) ]] || fail "no instance was left halfway (gpusim lists none)"
wait_eq 8 true gpu_field 0 .mig.enabled
expect_eq "$(our_gis)" "$(sim_gis)" "gpushared's instances against gpusim's"
gs run --mig-profile 1g.5gb --no-wait -- true || fail "no MIG lease once NVML answers"
expect_eq "$(our_gis)" "$(sim_gis)" "instances after a lease"
pass "an instance left halfway while NVML fails is known once NVML answers; nothing is granted meanwhile"
