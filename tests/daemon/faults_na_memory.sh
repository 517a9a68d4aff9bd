# SPDX-License-Identifier: Apache-2.0
# Issue 25, the N/A hole: a process of no lease whose memory NVML reports as N/A (the driver cannot
# tell) is counted as unknown, never as 0: what the GPU holds beyond every known figure is taken
# from new leases, status shows its memory as unknown, and the log says so.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
HOG=$GS_BUILD_DIR/tests/gs-gpu-hog
export GPUSIM_NVML_NA_PIDS=$WORK/na-pids
CONFIG=$'[daemon]\nwatch_interval = 0.2'
start_daemon
leasable=$(gs status --json | jq '.gpus[0].memory_leasable')

# An unmanaged process holds 10 GiB; NVML tells its pid but not its memory.
bg env -u LD_PRELOAD bash -c "echo \$\$ >$WORK/na-pids; exec \"$HOG\" hold 10" >"$WORK/hog.out"
wait_until 10 grep -q held "$WORK/hog.out"
hog=$(cat "$WORK/na-pids")
outside() { gs status --json | jq '.gpus[0].memory_outside'; }
wait_until 5 eval '[[ $(outside) -ge $((10 << 30)) ]]'
expect_eq "$(gs status --json | jq -c ".gpus[0].unmanaged[] | select(.pid == $hog) | .memory_used")" null "its memory in status"
gs status | grep -q "! UNMANAGED pid $hog (root) holds memory NVML cannot tell (N/A)" || fail "gpushare status: $(gs status)"
grep -q "GPU 0: pid $hog (user root, command \"$HOG hold 10\") holds memory NVML cannot tell (N/A) outside any lease" "$WORK/daemon.log" ||
  fail "no log line"
free=$(gs status --json | jq '.gpus[0].memory_free')
[[ $free -le $((leasable - (10 << 30))) ]] || fail "admission offers $free of $leasable bytes"
set +e
gs run --gpu-memory $(((leasable >> 20) - 5120))M --no-wait -- true 2>/dev/null
rc=$?
set -e
expect_eq "$rc" 75 "a request for what the process holds unseen"
pass "an unmanaged process with N/A memory is counted as unknown, not 0 ($(outside) bytes outside)"
