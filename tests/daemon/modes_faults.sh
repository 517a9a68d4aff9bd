# SPDX-License-Identifier: Apache-2.0
# Issue 11, acceptance 4: every failure of an NVML MIG call or of the MPS control daemon reaches
# the user as one clear line and leaves the ledger and the GPU's instances consistent. NVML
# failures come from gpusim's documented test hook (GPUSIM_NVML_FAULTS: "FUNCTION CODE" lines);
# the MPS control daemon's from a wrapper that refuses to start while a flag file exists.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/modes_lib.sh"
export GPUSIM_DEVICES=A100-40GB,H100-80GB
export GPUSIM_NVML_FAULTS=$WORK/nvml-faults
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null
cat >"$WORK/mps-control" <<EOF
#!/bin/sh
if [ "\$1" = -d ] && [ -e "$WORK/mps-broken" ]; then
  echo "simulated failure: the MPS control daemon cannot start"
  exit 1
fi
exec "$GS_BUILD_DIR/sim/nvidia-cuda-mps-control" "\$@"
EOF
chmod 755 "$WORK/mps-control"
touch "$WORK/mps-broken"
CONFIG="[daemon]
runtime_dir = $WORK/run
mps_control = $WORK/mps-control
[gpu:0]
mode = mig
[gpu:1]
mode = mps"
start_daemon

instances() {
  gpu_field 0 '[.mig.instances[] | .profile + "@" + (.start | tostring) + ":" + .state] | join(" ")'
}
# The ledger holds no lease (read after gpushared stopped: it is the ledger's only user).
ledger_rows() {
  sqlite3 "$WORK/state/state.db" 'SELECT count(*) FROM leases'
}

# NVML: the instance cannot be created.
echo "nvmlDeviceCreateGpuInstanceWithPlacement 999" >"$GPUSIM_NVML_FAULTS"
expect_refused 1 "gpushare: GPU 0: cannot set up a MIG 1g.5gb instance: nvmlDeviceCreateGpuInstanceWithPlacement: Unknown Error" --mig-profile 1g.5gb
expect_eq "$(lease_count)/$(instances)" "0/" "leases/instances after the failure"
# Its compute instance cannot be created: the GPU instance made for it is destroyed again.
echo "nvmlGpuInstanceCreateComputeInstance 23" >"$GPUSIM_NVML_FAULTS"
expect_refused 1 "gpushare: GPU 0: cannot set up a MIG 3g.20gb instance: nvmlGpuInstanceCreateComputeInstance: Insufficient Resources" --gpu-memory 12G --mode mig
expect_eq "$(lease_count)/$(instances)" "0/" "leases/instances after a half-made instance"
"$GS_BUILD_DIR/sim/nvidia-smi" mig -i 0 -lgi >"$WORK/lgi" 2>&1 || true
grep -q "No GPU instances found" "$WORK/lgi" || fail "a GPU instance was left on the GPU: $(cat "$WORK/lgi")"
rm -f "$GPUSIM_NVML_FAULTS"
gs run --gpu-memory 12G --mode mig -- true || fail "a MIG lease once NVML works again"
expect_eq "$(instances)" "3g.20gb@4:idle" "instances after a lease that worked"
# The idle instance cannot be destroyed for another profile's slots: it stays, idle.
echo "nvmlGpuInstanceDestroy 19" >"$GPUSIM_NVML_FAULTS"
expect_refused 1 "gpushare: GPU 0: cannot set up a MIG 7g.40gb instance: nvmlGpuInstanceDestroy: In use by another client" --mig-profile 7g.40gb
expect_eq "$(lease_count)/$(instances)" "0/3g.20gb@4:idle" "leases/instances after a failed destroy"
rm -f "$GPUSIM_NVML_FAULTS"
gs run --mig-profile 7g.40gb -- true || fail "7g.40gb once NVML works again"
expect_eq "$(instances)" "7g.40gb@0:idle" "instances at the end"
pass "NVML MIG failures: one line naming the call; no lease, no instance left half made"

# MPS: the control daemon cannot start. The GPU says why; a request only it serves is refused.
expect_eq "$(gpu_field 1 .mps.state)" down "the MPS control daemon"
expect_eq "$(gpu_field 1 .problem)" "its MPS control daemon is not running: $WORK/mps-control -d exited with status 1: simulated failure: the MPS control daemon cannot start" "the GPU's problem"
expect_refused 75 "gpushare: GPU 1 (mps): its MPS control daemon is not running: $WORK/mps-control -d exited with status 1: simulated failure: the MPS control daemon cannot start" --gpu-memory 4G --mode mps
expect_eq "$(lease_count)" 0 "leases after the refusal"
rm "$WORK/mps-broken"
wait_eq 5 up gpu_field 1 .mps.state
gs run --gpu-memory 4G --mode mps -- true || fail "an MPS lease once its daemon runs"
# It dies and cannot be started again: requests wait no longer than their --timeout.
touch "$WORK/mps-broken"
kill -KILL "$(gpu_field 1 .mps.pid)"
wait_eq 3 down gpu_field 1 .mps.state
expect_refused 75 "gpushare: GPU 1 (mps): its MPS control daemon is not running: $WORK/mps-control -d exited with status 1: simulated failure: the MPS control daemon cannot start" --gpu-memory 4G --mode mps
grep -q "GPU 1: cannot start its MPS control daemon: $WORK/mps-control -d exited with status 1" "$WORK/daemon.log" || fail "no log line"
rm "$WORK/mps-broken"
wait_eq 10 up gpu_field 1 .mps.state
gs run --gpu-memory 4G --mode mps -- true || fail "an MPS lease after the daemon came back"
pass "MPS control daemon failures: one line with the program's own message; it comes back when it can"

stop_daemon
expect_eq "$(ledger_rows)" 0 "leases in the ledger"
pass "the ledger holds no lease of a failed request"
