# SPDX-License-Identifier: Apache-2.0
# Issue 28, findings 1 and 8: gpushared never signals a process by a pid it did not verify at that
# moment. A client whose connecting process is a zombie when accepted is refused (its pid names
# nothing: another user's process may take it); a ledger row whose holder has no start time
# names no process (after a restart the lease is not kept "active" by whoever has that pid, and a
# release signals nobody); with enforce = kill, another user's job under such a pid is never given
# to the lease and killed.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
HOG=$GS_BUILD_DIR/tests/gs-gpu-hog
USER3=gpushare-bench
id "$USER3" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER3"
AS_USER3=(setpriv --reuid "$(id -u "$USER3")" --regid "$(id -g "$USER3")" --clear-groups
  env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" GPUSIM_STATE="$GPUSIM_STATE")
CONFIG=$'[daemon]\nkill_grace = 1'
start_daemon

# victim_on PID: starts root's process on PID (the kernel's next pid set just below it), which
# notes any SIGTERM in $WORK/victim; status 1 when another process took the pid first.
victim_on() {
  rm -f "$WORK/victim"
  echo $(($1 - 1)) >/proc/sys/kernel/ns_last_pid
  bg bash -c "trap 'echo TERM >>$WORK/victim' TERM; while :; do sleep 0.1; done"
  [[ $! == "$1" ]] && return 0
  kill -KILL -- "-$!" 2>/dev/null || true
  return 1
}

# The attack: the connecting process is a zombie when the daemon accepts (its parent holds the
# connection); the pid is then reused by root's process. With enforce = kill (the default) and
# with enforce = report: the victim gets no signal and lives.
zombie_attack() {
  zombie_connect "$GPUSHARE_SOCKET" '{"op":"acquire","gpu_memory":"1M","time_limit_ms":1000}'
  local pid=$ZOMBIE_PID landed=
  expect_eq "$ZOMBIE_REPLY" closed "the zombie's connection ($1)"
  expect_eq "$(lease_count)" 0 "leases ($1)"
  grep -q "user $USER2: refused a connection from pid $pid: that process is gone" "$WORK/daemon.log" ||
    fail "no log line of the refusal ($1)"
  for _ in $(seq 30); do victim_on "$pid" && landed=1 && break; done
  [[ -n $landed ]] || fail "could not start a process on pid $pid"
  # Had the zombie got a lease, its time limit, SIGTERM and kill_grace would be over before a
  # control's, asked for later: a lease of 1 s whose job ignores SIGTERM, seen to get it and to be
  # killed kill_grace later, its lease ended. (Observed events, never a sleep.)
  rm -f "$WORK/control"
  bg "${GS[@]}" run --gpu-memory 1M --time 1s -- bash -c "trap 'echo TERM >>$WORK/control' TERM; while :; do sleep 0.1; done"
  local control=$!
  wait_until 5 test -s "$WORK/control"
  wait_until 5 process_gone "$control"
  wait_eq 5 0 lease_count
  [[ -e $WORK/victim ]] && fail "root's process on the zombie's pid got SIGTERM ($1)"
  kill -0 "$pid" 2>/dev/null || fail "root's process on the zombie's pid is gone ($1)"
  kill -KILL -- "-$pid" 2>/dev/null || true
  pass "$1: a zombie's connection is refused; root's process that took its pid is never signalled"
}
zombie_attack "enforce = kill"
stop_daemon
CONFIG=$'[daemon]\nkill_grace = 1\nenforce = report'
start_daemon
zombie_attack "enforce = report"
stop_daemon
CONFIG=$'[daemon]\nkill_grace = 1'
start_daemon

# A ledger row whose holder has no start time (an older version's, or edited) names another
# user's pid: after a restart the lease is not kept by that process, and the owner's release
# from another connection signals nobody.
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 1M -- "$HOSTILE" forge 4 600
wait_eq 5 1 lease_count
id=$(user2_lease)
bg bash -c "trap 'echo TERM >>$WORK/victim2' TERM; while :; do sleep 0.1; done"
victim=$!
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" || true
DAEMON_PID=
sqlite3 "$WORK/state/state.db" "UPDATE leases SET client_pid = $victim, client_start = 0 WHERE id = $id"
start_daemon
wait_eq 3 ending lease_state "$id" # its region is in use: not active, not ended
# (Its job's processes, which the row no longer names, keep the lease ending: the release waits
# its 8 s and says so, exit status 1.)
gs2 release "$id" >/dev/null 2>&1 && fail "the release ended a lease its job still holds"
[[ -e $WORK/victim2 ]] && fail "root's process named by the row got SIGTERM"
kill -0 "$victim" || fail "root's process named by the row is gone"
grep "lease $id" "$WORK/daemon.log" | grep -q "SIGTERM to [1-9]" &&
  fail "signals sent: $(grep "lease $id" "$WORK/daemon.log" | grep SIGTERM)"
pass "a row without a start time: the lease is not kept active by root's process, and its release signals nobody"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
wait_eq 10 0 lease_count
stop_daemon

# enforce = kill: another user's CUDA job runs under its own lease; a 1 MiB lease of the
# attacker names that job's gpushare run as holder (no start time). The job is the victim's
# lease's, never the attacker's: it is not killed.
CONFIG=$'[daemon]\nkill_grace = 1\nenforce = kill\nwatch_interval = 0.2'
start_daemon
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 1M -- "$HOSTILE" forge 4 600
wait_eq 5 1 lease_count
attacker=$(user2_lease)
bg "${AS_USER3[@]}" "$BIN/gpushare" run --gpu-memory 8G -- env -u LD_PRELOAD "$HOG" hold 2
client=$!
wait_eq 10 2 lease_count
wait_until 10 pgrep -P "$client" >/dev/null
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" || true
DAEMON_PID=
sqlite3 "$WORK/state/state.db" "UPDATE leases SET client_pid = $client, client_start = 0 WHERE id = $attacker"
start_daemon_metrics
wait_scans 3 # the watchdog has looked at the victim's job three times
hog=$(pgrep -x -P "$client" gs-gpu-hog) # (the victim job's own: other tests may run hogs)
[[ -n $hog ]] || fail "the victim's CUDA job was killed"
grep -q "killed pid" "$WORK/daemon.log" && fail "the watchdog killed: $(grep 'killed pid' "$WORK/daemon.log")"
victim_lease=$(gs leases --json | jq ".[] | select(.uid == $(id -u "$USER3")) | .id")
gs status --json --processes >"$WORK/procs.json"
expect_eq "$(jq ".gpus[0].processes[] | select(.pid == $hog) | .lease" "$WORK/procs.json")" "$victim_lease" \
  "the lease of the victim's job ($(jq -c '.gpus[0].processes' "$WORK/procs.json"))"
pass "enforce = kill: another user's job under a pid a row names is its own lease's, never killed"
