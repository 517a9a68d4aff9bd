# SPDX-License-Identifier: Apache-2.0
# gpushare run stops what a job leaves running, as a Slurm step's processes are stopped: once the
# job's main process has ended, its remaining descendants (adopted by gpushare run, a child
# subreaper) get SIGTERM and, after the grace period, SIGKILL; the lease ends with them and the
# job's exit status is kept. At a time limit, what is left after the job's SIGKILL is killed at
# once.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
HOG=$GS_BUILD_DIR/tests/gs-gpu-hog
CONFIG=$'[daemon]\nkill_grace = 1'
start_daemon

alive() { # alive PIDFILE: the process whose pid is in PIDFILE still runs (zombies do not)
  local p
  p=$(cat "$1")
  [[ -e /proc/$p && $(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null) != Z ]]
}

# 1. The main process exits 3, leaving a process that holds GPU memory through the shim and a
# plain sleep: both are stopped with SIGTERM before gpushare run returns; the lease ends at once.
set +e
out=$(gs run --gpu-memory 4G -- bash -c "\"$HOG\" hold 1 >$WORK/hog.out & echo \$! >$WORK/hog.pid
  sleep 300 & echo \$! >$WORK/sleep.pid
  until grep -qs '^held ' $WORK/hog.out; do sleep 0.05; done; exit 3" 2>&1)
rc=$?
set -e
expect_eq "$rc" 3 "the job's exit status"
expect_eq "$out" "gpushare: the job left 2 processes running: stopping them (SIGTERM, SIGKILL in 10s)" "the message"
! alive "$WORK/hog.pid" || fail "the GPU process outlived its job"
! alive "$WORK/sleep.pid" || fail "the sleep outlived its job"
expect_eq "$(lease_count)" 0 "leases after the job"
expect_eq "$(gs status --json | jq '.gpus[0].memory_used')" 503316480 "device memory used (the driver's 480 MiB)"
pass "a job's leftovers get SIGTERM when it ends; the lease ends at once, exit status 3 kept"

# 2. SIGTERM to gpushare run: the job gets it, then what the job left; the lease ends.
bg_gs run --gpu-memory 4G -- bash -c "\"$HOG\" hold 1 >$WORK/hog2.out & echo \$! >$WORK/hog2.pid; wait"
client=$!
wait_until 10 grep -qs '^held ' "$WORK/hog2.out"
start=$(date +%s%N)
kill -TERM "$client"
wait "$client" || true
took=$((($(date +%s%N) - start) / 1000000))
! alive "$WORK/hog2.pid" || fail "the GPU process outlived gpushare run"
wait_eq 2 0 lease_count
pass "SIGTERM to gpushare run stops the job and what it left in $took ms; the lease ends"

# 3. A leftover that ignores SIGTERM is killed after the grace period (10 s for a job that ended
# by itself).
start=$(date +%s%N)
gs run --gpu-memory 1G -- bash -c "(trap '' TERM; exec sleep 300) & echo \$! >$WORK/stubborn.pid
  until [ \"\$(cat /proc/\$!/comm)\" = sleep ]; do sleep 0.02; done" 2>/dev/null
took=$((($(date +%s%N) - start) / 1000000))
! alive "$WORK/stubborn.pid" || fail "the process ignoring SIGTERM outlived its job"
((took >= 10000 && took < 12000)) || fail "it was killed after $took ms (grace 10 s)"
pass "a leftover ignoring SIGTERM is killed after the 10 s grace ($took ms)"

# 4. At a time limit (kill_grace = 1): the job ignores SIGTERM and is killed after 1 s; what it
# left is killed at once.
start=$(date +%s%N)
set +e
out=$(gs run --gpu-memory 1G --time 1s -- bash -c "trap '' TERM; (trap '' TERM; exec sleep 300) & echo \$! >$WORK/late.pid; while :; do sleep 0.1; done" 2>&1)
rc=$?
set -e
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "$rc" 137 "exit status of the killed job"
# (gpushared kills the lease's processes at the same moment, so they may be gone before gpushare
# run looks: "the job left N processes running: stopping them (SIGKILL)", or nothing.)
grep -Ev -e 'reached its time limit' -e '^gpushare: the job left [0-9]+ process(es)? running: stopping (it|them) \(SIGKILL\)$' <<<"$out" &&
  fail "unexpected output: $out"
! alive "$WORK/late.pid" || fail "the leftover outlived the time limit"
((took < 3500)) || fail "the job and its leftover ended after $took ms (limit 1 s + grace 1 s)"
expect_eq "$(lease_count)" 0 "leases after the time limit"
pass "at the time limit the job's leftovers are killed with it ($took ms)"
