#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpushare doctor: on a ready node every check says ok and the exit status is 0; then each check
# is made to fail in turn (socket mode, daemon, driver, GPU compute mode, MIG mode, CUDA version,
# shim missing or not loadable, a GPU configured mig with MIG mode off, an mps GPU without the MPS
# control program) and says so in one line with a fix, exit status 1. (Lease regions are memfds
# of the daemon: nothing to check on disk.)
source "$(dirname "$0")/lib.sh"

SET=$GS_BUILD_DIR/tests/gs-nvml-set
export GPUSIM_DEVICES=A100-40GB,H100-80GB
NVML="nvml_library = $GS_BUILD_DIR/sim/libnvidia-ml.so.1"
CONFIG="[daemon]
$NVML"
start_daemon

# A ready node: ten checks (daemon, socket, config, driver, gpu 0, gpu 1, cuda, shim, regions, mps).
out=$(gs doctor) || fail "doctor on a ready node exited $?: $out"
expect_eq "$(grep -c '^ok ' <<<"$out")" 10 "ok lines on a ready node"
expect_eq "$(tail -1 <<<"$out")" "gpushare doctor: this node is ready" "summary"
grep -q '^ok    driver   gpusim (simulated GPUs' <<<"$out" || fail "driver line: $out"
grep -q '^ok    mps      not needed' <<<"$out" || fail "mps line: $out"
expect_eq "$(gs doctor --json | jq '[.ready, (.checks | length)] | @csv')" '"true,10"' "doctor --json"
pass "a ready node"

# expect_fail CHECK PATTERN CMD...: CMD exits 1 and prints exactly one FAIL line, for CHECK,
# matching PATTERN and with a fix.
expect_fail() {
  local check=$1 pattern=$2 out rc=0 fails
  shift 2
  out=$("$@") || rc=$?
  [[ $rc -eq 1 ]] || fail "$check: doctor exited $rc: $out"
  fails=$(grep '^FAIL' <<<"$out")
  expect_eq "$(wc -l <<<"$fails")" 1 "FAIL lines when $check fails ($out)"
  [[ $fails == "FAIL  $(printf '%-8s' "$check") "* ]] || fail "$check: the failure is elsewhere: $fails"
  grep -q -- "$pattern" <<<"$fails" || fail "$check: \"$pattern\" not in: $fails"
  grep -q '; fix: .' <<<"$fails" || fail "$check: no fix in: $fails"
  pass "$check fails alone: $fails"
}

chmod 0600 "$GPUSHARE_SOCKET"
expect_fail socket "has mode 0600" gs doctor
chmod 0666 "$GPUSHARE_SOCKET"

GPUSHARE_SHIM=$WORK/none.so expect_fail shim "libgpushare.so not found" gs doctor
GPUSHARE_SHIM=$WORK/gpushare.conf expect_fail shim "cannot be loaded" gs doctor

"$SET" compute 1 PROHIBITED
expect_fail "gpu 1" "compute mode Prohibited, MIG off, configured shared: no process" gs doctor
"$SET" compute 1 EXCLUSIVE_PROCESS
expect_fail "gpu 1" "only one process at a time" gs doctor
"$SET" compute 1 DEFAULT

"$SET" mig 0 1
expect_fail "gpu 0" "MIG mode is on but it is not configured mig" gs doctor
"$SET" mig 0 0

GPUSIM_CUDA_VERSION=12080 expect_fail cuda "the driver supports CUDA 12.8; the shim was built against CUDA 13" gs doctor

# The daemon gone: its check fails with how to start it (the socket check fails with it).
out=$(gs doctor --socket "$WORK/nobody.sock") && fail "doctor without a daemon exited 0"
grep -q "^FAIL  daemon   .*nobody.sock.*; fix: start it" <<<"$out" || fail "daemon line: $out"
pass "no daemon"

# No NVIDIA driver and no gpusim on the library path: the driver check fails.
if [[ ! -e /proc/driver/nvidia/version ]]; then
  out=$(env LD_LIBRARY_PATH= "${GS[@]}" doctor --socket "$WORK/nobody.sock") && fail "doctor exited 0"
  grep -q "^FAIL  driver   NVML: cannot load libnvidia-ml.so.1.*; fix: install the NVIDIA driver" <<<"$out" ||
    fail "driver line: $out"
  pass "no driver"
fi

# Lease regions are the daemon's memfds: region_dir (of older versions) changes nothing.
grep -q '^ok    regions  lease regions are sealed memfds of gpushared' <<<"$(gs doctor)" ||
  fail "regions line: $(gs doctor | grep regions)"
pass "regions: sealed memfds"

# GPU 0 (an A100) configured mig while its MIG mode is off: the administrator's step is missing.
stop_daemon
CONFIG="[daemon]
$NVML
[gpu:0]
mode = mig"
start_daemon
expect_fail "gpu 0" "configured mig: it is configured mig but MIG mode is off" gs doctor

# GPU 1 configured mps: ok with gpusim's MPS control program, a failure without one.
stop_daemon
CONFIG="[daemon]
$NVML
runtime_dir = $WORK/run
mps_control = $GS_BUILD_DIR/sim/nvidia-cuda-mps-control
[gpu:1]
mode = mps"
start_daemon
grep -q "^ok    mps      .*nvidia-cuda-mps-control serves the mps GPUs" <<<"$(gs doctor)" ||
  fail "mps line: $(gs doctor | grep mps)"
stop_daemon
CONFIG="[daemon]
$NVML
runtime_dir = $WORK/run
mps_control = $WORK/no-such-mps-control
[gpu:1]
mode = mps"
start_daemon
expect_fail mps "is in mps mode but .* is not found" env PATH=/usr/bin:/bin "${GS[@]}" doctor
