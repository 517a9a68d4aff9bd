# SPDX-License-Identifier: Apache-2.0
# Shared setup of the tests of issue 15 (a hostile local user): lib.sh, a second system user,
# gs-hostile. Needs root (to run as the second user); exits 77 (skipped) otherwise.
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh" # gs_skip
[[ $(id -u) -eq 0 ]] || gs_skip "run as root to test with a second system user (useradd, runuser)"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HOSTILE=$GS_BUILD_DIR/tests/gs-hostile
USER2=gpushare-test
id "$USER2" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER2"
UID2=$(id -u "$USER2")

# "${AS_USER2[@]}" CMD...: CMD as the second user, with the test's socket (and the ASan
# runtime); an array, so that bg (setsid) can run it.
AS_USER2=(runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD"
  ASAN_OPTIONS="${ASAN_OPTIONS:-}" GPUSIM_STATE="$GPUSIM_STATE")
as_user2() {
  "${AS_USER2[@]}" "$@"
}

# gs2 ARGS...: gpushare as the second user.
gs2() {
  as_user2 "$BIN/gpushare" "$@"
}

# The daemon is still the one started (it did not crash).
daemon_alive() {
  [[ -n $DAEMON_PID ]] && kill -0 "$DAEMON_PID" 2>/dev/null
}

# The daemon's resident memory, in KiB.
daemon_rss_kb() {
  awk '/^VmRSS:/ {print $2}' "/proc/$DAEMON_PID/status"
}

# id_of_user2_lease: the id of the second user's only lease.
user2_lease() {
  gs leases --json | jq ".[] | select(.uid == $UID2) | .id"
}

# lease_state ID: its state, or "gone".
lease_state() {
  gs leases --json | jq -r ".[] | select(.id == $1) | .state" | grep . || echo gone
}

# process_gone PID: the process exited (a zombie nobody reaped yet counts as gone).
process_gone() {
  local stat
  stat=$(ps -o stat= -p "$1" 2>/dev/null || true)
  [[ -z $stat || $stat == Z* ]]
}

# stop_bg: kills every background process of the test (bg) and forgets them.
stop_bg() {
  for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  wait "${BG_PIDS[@]}" 2>/dev/null || true
  BG_PIDS=()
}

# zombie_connect SOCKET LINE: the pid-reuse attack of issue 28. The second user's process
# connects to SOCKET and exits at once; its parent sends LINE. The daemon is stopped meanwhile,
# so that it always accepts a zombie's connection (running, it may accept before the child
# exits). Sets ZOMBIE_PID (the child's pid) and ZOMBIE_REPLY ("closed" when refused).
zombie_connect() {
  kill -STOP "$DAEMON_PID"
  bg "${AS_USER2[@]}" "$HOSTILE" zombie "$1" "$2" >"$WORK/zombie.out"
  sleep 0.5
  kill -CONT "$DAEMON_PID"
  wait_until 10 grep -q zombie "$WORK/zombie.out"
  read -r _ ZOMBIE_PID ZOMBIE_REPLY <<<"$(cat "$WORK/zombie.out")"
  ZOMBIE_PID=${ZOMBIE_PID%:}
}
