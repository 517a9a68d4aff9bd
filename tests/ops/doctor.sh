# SPDX-License-Identifier: Apache-2.0
# Issue 27: gpushare doctor checks what status checks, and reads the configuration whether or
# not gpushared runs (through gpushared --check-config, which reads it beside a running daemon
# too). An MPS GPU whose control daemon is down (status says so) or does not answer fails the mps
# check; with the daemon stopped, GPUs configured mig and mps are judged as mig and mps (not as
# "shared", with a fix to set what is set); a bad configuration fails the config check.
source "$(dirname "$0")/../daemon/lib.sh"
source "$(dirname "$0")/../daemon/modes_lib.sh"
export GPUSIM_DEVICES=A100-40GB,H100-80GB
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null
# The MPS control program, made to fail on demand: to start (mps-broken), to answer (mps-mute).
cat >"$WORK/mps-control" <<EOF2
#!/bin/sh
if [ "\$1" = -d ] && [ -e "$WORK/mps-broken" ]; then
  echo "simulated failure: the MPS control daemon cannot start"
  exit 1
fi
if [ "\$1" != -d ] && [ -e "$WORK/mps-mute" ]; then
  echo "simulated failure: no answer"
  exit 1
fi
exec "$GS_BUILD_DIR/sim/nvidia-cuda-mps-control" "\$@"
EOF2
chmod 755 "$WORK/mps-control"
CONFIG="[daemon]
runtime_dir = $WORK/run
mps_control = $WORK/mps-control
[gpu:0]
mode = mig
[gpu:1]
mode = mps"
start_daemon
wait_eq 5 up gpu_field 1 .mps.state

# line CHECK: doctor's line for CHECK (its arguments after).
line() {
  local check=$1
  shift
  gs doctor "$@" | grep -E "^(ok|WARN|FAIL) +$check " || true
}

out=$(gs doctor) || fail "doctor on a ready node exited $?: $out"
expect_eq "$(grep -c '^ok ' <<<"$out")" 10 "ok lines: $out"
expect_eq "$(line config)" "ok    config   $WORK/gpushare.conf is valid: 2 GPUs, enforce kill" "the config line"
expect_eq "$(line mps)" "ok    mps      $WORK/mps-control serves the mps GPUs: each control daemon answers" "the mps line"
pass "a ready node with a mig and an mps GPU: the configuration read, each MPS control daemon answers"

# The control daemon does not answer: status says up, doctor asks it and fails.
touch "$WORK/mps-mute"
pid=$(gpu_field 1 .mps.pid)
expect_eq "$(line mps)" "FAIL  mps      GPU 1's MPS control daemon (pid $pid) does not answer: $WORK/mps-control get_server_list failed: simulated failure: no answer; fix: gpushared starts it again when it dies; one that hangs must be killed (its pid is in gpushare status)" "the mps line"
rm "$WORK/mps-mute"
pass "an MPS control daemon that does not answer fails the mps check"

# The control daemon is down and cannot start again: status says down, and so does doctor.
touch "$WORK/mps-broken"
kill "$pid"
wait_eq 5 down gpu_field 1 .mps.state
out=$(gs doctor) && fail "doctor exited 0 with an MPS control daemon down: $out"
expect_eq "$(grep -c '^FAIL' <<<"$out")" 1 "FAIL lines: $out"
expect_eq "$(line mps)" "FAIL  mps      GPU 1's MPS control daemon is down: $WORK/mps-control -d exited with status 1: simulated failure: the MPS control daemon cannot start; fix: see gpushared's log (journalctl -u gpushared): it starts the control daemon again by itself, with a longer wait after each failure" "the mps line"
rm "$WORK/mps-broken"
wait_eq 10 up gpu_field 1 .mps.state
pass "an MPS control daemon that is down (as status says) fails the mps check"

# gpushared --check-config beside the running daemon: the same file, read, nothing touched.
out=$("$BIN/gpushared" --check-config --config "$WORK/gpushare.conf" 2>/dev/null)
expect_eq "$(head -1 <<<"$out")" "$WORK/gpushare.conf: the configuration is valid" "check-config's first line"
grep -Eq '^GPU 0: NVIDIA A100-40GB GPU-[0-9a-f-]+, mode mig, overprovision 1, reserve 0 B$' <<<"$out" ||
  fail "check-config's GPU 0: $out"
grep -Eq '^GPU 1: NVIDIA H100-80GB GPU-[0-9a-f-]+, mode mps, overprovision 1, reserve 0 B$' <<<"$out" ||
  fail "check-config's GPU 1: $out"
expect_eq "$("$BIN/gpushared" --check-config --json --config "$WORK/gpushare.conf" 2>/dev/null | jq -c '[.gpus[].mode, .enforce, .metrics_listen]')" \
  '["mig","mps","kill","127.0.0.1:9447"]' "check-config --json"
printf '[gpu:1]\nmode = mpss\n' >"$WORK/bad.conf"
set +e
out=$("$BIN/gpushared" --check-config --config "$WORK/bad.conf" 2>&1)
rc=$?
set -e
expect_eq "$rc" 78 "check-config's exit status on a bad file"
[[ $out == *"error: $WORK/bad.conf:2: mode \"mpss\""* ]] || fail "check-config on a bad file: $out"
# What a start needs: mode = mps with no MPS control program to run is no valid configuration
# (issue 37: it said valid, and only doctor and the daemon's log caught it).
sed 's|^mps_control = .*|mps_control = nvidia-cuda-mps-control-absent|' "$WORK/gpushare.conf" >"$WORK/nompsctl.conf"
set +e
out=$("$BIN/gpushared" --check-config --config "$WORK/nompsctl.conf" 2>&1)
rc=$?
set -e
expect_eq "$rc" 78 "check-config's exit status with mode = mps and no MPS control program"
[[ $out == *"error: GPU 1 is mode = mps, but its MPS control program nvidia-cuda-mps-control-absent is not found on PATH: install NVIDIA's MPS (nvidia-cuda-mps-control) or set mps_control = PATH" ]] ||
  fail "check-config without an MPS control program: $out"
expect_eq "$(gpu_field 1 .mps.state)" up "the running daemon's MPS control daemon"
pass "gpushared --check-config beside a running gpushared: what it sets, or the bad line (exit 78), or what a start would lack"

# The daemon stopped: doctor reads the configuration itself; the GPUs are judged as configured.
stop_daemon
out=$(gs doctor --socket "$WORK/gone.sock" --config "$WORK/gpushare.conf") && fail "doctor exited 0 without a daemon"
expect_eq "$(grep '^FAIL' <<<"$out" | awk '{print $2}' | tr '\n' ' ')" "daemon socket " "the failing checks without a daemon: $out"
grep -Eq '^ok    gpu 0    GPU-[0-9a-f-]+: compute mode Default, MIG on, configured mig$' <<<"$out" || fail "gpu 0 line: $out"
grep -Eq '^ok    gpu 1    GPU-[0-9a-f-]+: compute mode Default, MIG off, configured mps$' <<<"$out" || fail "gpu 1 line: $out"
grep -q "^ok    mps      $WORK/mps-control is there for the mps GPUs (gpushared does not run: their control daemons are not checked)$" <<<"$out" ||
  fail "mps line: $out"
pass "without a daemon, doctor judges the GPUs by the configuration (mig, mps)"
out=$(gs doctor --socket "$WORK/gone.sock" --config "$WORK/bad.conf") && fail "doctor exited 0 on a bad configuration"
grep -q "^FAIL  config   $WORK/bad.conf:2: mode \"mpss\" must be .*; fix: fix it; gpushared --check-config \[--config FILE\] says what it reads$" <<<"$out" ||
  fail "config line: $(grep config <<<"$out")"
pass "a bad configuration fails the config check, daemon or not"
