# SPDX-License-Identifier: Apache-2.0
# Issue 27, acceptance 1: one gpushared per node. A second gpushared, with the first's
# configuration or with another socket, state directory and runtime directory, exits within 1 s
# with "gpushared already running (pid N)" and status 75, and touches nothing of the first: its
# MPS control daemon keeps its pid (the pipe directory's pid file too), its lease stays, it goes
# on answering; when the first has stopped, a new one starts.
source "$(dirname "$0")/../daemon/lib.sh"
source "$(dirname "$0")/../daemon/modes_lib.sh"
export GPUSIM_DEVICES=H100-80GB,A100-40GB
CONFIG="$MPS_DAEMON_CONFIG
[gpu:0]
mode = mps"
start_daemon
uuid=$(gpu_field 0 .uuid)
PIPE=$WORK/run/mps/$uuid/pipe
wait_eq 5 up gpu_field 0 .mps.state
mps_pid=$(gpu_field 0 .mps.pid)
expect_eq "$(cat "$PIPE/nvidia-cuda-mps-control.pid")" "$mps_pid" "the MPS pid file"
hold --gpu-memory 1G --gpu-type A100
first_lease=$lease

# second NAME ARGS...: a second gpushared with ARGS (the first's socket unless they say
# otherwise); checks that it exits within 1 s with status 75 and prints the line expected.
second() {
  local name=$1 expected=$2
  shift 2
  local t0 t1 rc
  t0=$(date +%s%N)
  set +e
  "$BIN/gpushared" --metrics-listen 127.0.0.1:0 "$@" >"$WORK/second.log" 2>&1
  rc=$?
  set -e
  t1=$(date +%s%N)
  local ms=$(((t1 - t0) / 1000000))
  expect_eq "$rc" 75 "exit status of the second gpushared ($name)"
  ((ms < 1000)) || fail "the second gpushared ($name) took $ms ms to refuse"
  expect_eq "$(grep -c . "$WORK/second.log")" 1 "lines the second gpushared ($name) printed: $(cat "$WORK/second.log")"
  expect_eq "$(sed 's/^.*gpushared\[[0-9]*\]: //' "$WORK/second.log")" "$expected" "the second gpushared's line ($name)"
  pass "a second gpushared ($name) refused in $ms ms: $expected"
}

# The same configuration: the same state directory.
second "same configuration" \
  "error: gpushared already running (pid $DAEMON_PID): it holds the state directory $WORK/state" \
  --config "$WORK/gpushare.conf" --state-dir "$WORK/state"
# Another socket and state directory, the same runtime directory (the issue's case).
second "another socket and state directory" \
  "error: gpushared already running (pid $DAEMON_PID): it holds GPU 0 ($uuid)" \
  --config "$WORK/gpushare.conf" --state-dir "$WORK/state2" --socket "$WORK/other.sock"
# Everything else too: the GPUs are the first's.
printf '[daemon]\nruntime_dir = %s\nmps_control = %s\n[gpu:0]\nmode = mps\n' "$WORK/run3" \
  "$GS_BUILD_DIR/sim/nvidia-cuda-mps-control" >"$WORK/other.conf"
second "another configuration" \
  "error: gpushared already running (pid $DAEMON_PID): it holds GPU 0 ($uuid)" \
  --config "$WORK/other.conf" --state-dir "$WORK/state3" --socket "$WORK/third.sock"
[[ ! -e $WORK/run3/mps ]] || fail "the refused gpushared made MPS directories: $(ls -R "$WORK/run3")"
[[ ! -e $WORK/state2/state.db && ! -e $WORK/state3/state.db ]] || fail "a refused gpushared made a ledger"

# Nothing of the first was touched.
sleep 2.5 # the first's MPS check (every 2 s) would have seen a stopped control daemon
expect_eq "$(gpu_field 0 .mps.pid)" "$mps_pid" "the MPS control daemon's pid after"
expect_eq "$(gpu_field 0 .mps.state)" up "the MPS control daemon after"
kill -0 "$mps_pid" || fail "the MPS control daemon $mps_pid is gone"
expect_eq "$(cat "$PIPE/nvidia-cuda-mps-control.pid")" "$mps_pid" "the MPS pid file after"
expect_eq "$(gs leases --json | jq -r '.[].id')" "$first_lease" "the first's leases after"
grep -q "restarted\|MPS control daemon died\|found its MPS control daemon again" "$WORK/daemon.log" &&
  fail "the first gpushared had to act on its MPS control daemon: $(grep MPS "$WORK/daemon.log")"
pass "the first gpushared's MPS control daemon (pid $mps_pid), lease and socket are untouched"

# Once the first has stopped, the node is free again.
end_lease "$client"
stop_daemon
"$BIN/gpushared" --config "$WORK/other.conf" --state-dir "$WORK/state3" --socket "$WORK/third.sock" \
  --metrics-listen 127.0.0.1:0 >>"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
GPUSHARE_SOCKET=$WORK/third.sock wait_until 10 gs leases
pass "after the first stopped, another gpushared took the node"
