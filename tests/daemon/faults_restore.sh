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
