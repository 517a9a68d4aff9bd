# SPDX-License-Identifier: Apache-2.0
# A second system user of the ops tests (its own name, so that other areas' tests running at the
# same time, with their own second user, see none of its processes). Needs root; exits 77
# (skipped) otherwise. Source it after tests/daemon/lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh" # gs_skip
[[ $(id -u) -eq 0 ]] || gs_skip "run as root to test with a second system user (useradd, runuser)"
USER2=${OPS_USER2:-gpushare-ops}
id "$USER2" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER2" 2>/dev/null ||
  id "$USER2" >/dev/null # another test created it at the same moment
UID2=$(id -u "$USER2")

# "${AS_USER2[@]}" CMD...: CMD as the second user, with the test's socket and node.
AS_USER2=(runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD"
  ASAN_OPTIONS="${ASAN_OPTIONS:-}" GPUSIM_STATE="$GPUSIM_STATE" LD_LIBRARY_PATH="$LD_LIBRARY_PATH")
gs2() {
  "${AS_USER2[@]}" "$BIN/gpushare" "$@"
}
