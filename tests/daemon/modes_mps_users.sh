# SPDX-License-Identifier: Apache-2.0
# Issue 11: an mps GPU serves one user at a time (NVIDIA's control daemon runs one user's MPS
# server at a time and makes other users' clients wait). Placement packs (bestfit), so without the
# rule a second user's lease would go beside the first's. Needs root (a second system user).
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh" # gs_skip
[[ $(id -u) -eq 0 ]] || gs_skip "run as root to test with a second system user (useradd, runuser)"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/modes_lib.sh"
export GPUSIM_DEVICES=H100-80GB,H100-80GB
USER2=gpushare-test
id "$USER2" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER2"
CONFIG="$MPS_DAEMON_CONFIG
[gpu:all]
mode = mps
placement = bestfit"
start_daemon

as_user2() {
  runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$BIN/gpushare" "$@"
}
gpu_of_newest() {
  gs leases --json | jq 'max_by(.id) | .gpus[0].index'
}

hold --gpu-memory 4G
expect_eq "$(gpu_of_newest)" 0 "root's first lease"
bg runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" \
  ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$BIN/gpushare" run --gpu-memory 40G -- sleep 120
wait_eq 5 2 lease_count
expect_eq "$(gpu_of_newest)" 1 "the second user's lease (GPU 0 serves root)"
expect_eq "$(gpu_field 0 .mps.user)/$(gpu_field 1 .mps.user)" "0/$(id -u "$USER2")" "users of the MPS GPUs"
expect_eq "$(as_user2 status --json | jq -r '[.gpus[0].mps.user, .gpus[1].mps.user] | join("/")')" \
  "another user/$(id -u "$USER2")" "the MPS GPUs' users as the second user sees them"
hold --gpu-memory 4G
expect_eq "$(gpu_of_newest)" 0 "root's second lease"
set +e
out=$(as_user2 run --gpu-memory 50G --no-wait -- true 2>&1)
rc=$?
set -e
expect_eq "$rc" 75 "the second user's 50G, which only root's GPU has room for"
pass "an MPS GPU serves one user at a time; other users' leases go to other GPUs or wait"
