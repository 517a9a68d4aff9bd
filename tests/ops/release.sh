# SPDX-License-Identifier: Apache-2.0
# Issue 27, acceptance 3: release is the same every time. 20 times, root releases a second user's
# running job: root's `gpushare release` prints one line, "lease N released"; the job's terminal
# (its gpushare run's stderr) names root, the job is stopped by SIGTERM (exit 143), and the
# history records "signal 15" with the reason "released by root". Then with --force and with a
# job that ignores SIGTERM (SIGKILL after kill_grace): the same, with "signal 9".
source "$(dirname "$0")/../daemon/lib.sh"
source "$(dirname "$0")/user2.sh"
export GPUSIM_DEVICES=H100-80GB
CONFIG=$'[daemon]\nkill_grace = 1'
start_daemon
RUNS=${RUNS:-20}

# one NAME EXPECTED_SIGNAL RELEASE_ARGS... -- JOB...: a job of the second user, released by root.
one() {
  local name=$1 sig=$2 out rc
  shift 2
  local args=()
  while [[ $1 != -- ]]; do args+=("$1"); shift; done
  shift
  bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 1G --name "$name" -- "$@" 2>"$WORK/$name.err"
  local client=$!
  wait_eq 5 1 lease_count
  local id
  id=$(gs leases --json | jq '.[0].id')
  wait_until 5 sh -c "pgrep -P $client >/dev/null" # the job runs
  out=$(gs release "${args[@]}" "$id")
  local line="lease $id released"
  [[ ${args[*]-} == --force ]] && line="lease $id released by force"
  expect_eq "$out" "$line" "$name: root's gpushare release"
  set +e
  wait "$client"
  rc=$?
  set -e
  expect_eq "$rc" $((128 + sig)) "$name: exit status of the second user's gpushare run"
  expect_eq "$(head -1 "$WORK/$name.err")" \
    "gpushare: lease $id was released by root: stopping the job (SIGTERM, SIGKILL in 1s)" \
    "$name: the job's terminal"
  local why="released by root"
  [[ ${args[*]-} == --force ]] && why="released by force by root"
  expect_eq "$(gs history --json | jq -c ".[] | select(.id == $id) | [.signal, .exit_status, .end_reason]")" \
    "[$sig,null,\"$why\"]" "$name: the history"
  gs history | grep -Eq "^ *$id  [^ ]+ +$name .* signal $sig, $why " ||
    fail "$name: history row: $(gs history | grep -E "^ *$id ")"
  expect_eq "$(lease_count)" 0 "$name: leases after"
}

for i in $(seq "$RUNS"); do
  one "run$i" 15 -- sleep 600
done
pass "$RUNS times root released a running job: one line, the job's terminal named root, the history has signal 15"
one forced 15 --force -- sleep 600
one deaf 9 -- sh -c 'trap "" TERM; sleep 600 & wait; sleep 600'
pass "by force, and a job that ignores SIGTERM (SIGKILL after kill_grace): the same, with signal 9"
