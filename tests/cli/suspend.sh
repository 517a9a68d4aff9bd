# SPDX-License-Identifier: Apache-2.0
# Issue 40, acceptance 1: a lease whose job holds 20 GiB with data in it is suspended (gpushare
# suspend): its job's CUDA memory goes to host memory, another process's cuMemGetInfo sees it
# free, and a 40 GiB lease that did not fit is granted and its job allocates 40 GiB; gpushare
# resume meanwhile waits, and the first lease resumes by itself once that one ended, its data
# intact (checksums before and after). A restart of gpushared keeps it suspended; a job inside a
# long kernel is not suspended, nor a lease whose second process is (all or none). Another user
# may neither suspend nor resume it.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB # 81079 MiB leasable: 20 + 30 + 40 GiB do not fit together
CONFIG=$'[daemon]\nmetrics_users = all'
start_daemon_metrics
GIB=$((1 << 30))

free_now() { # cuMemGetInfo's free memory of a process outside any lease (its own context aside)
  "$PROGS/meminfo" | cut -d' ' -f1
}
has_sum() { grep -q '^sum ' "$1" 2>/dev/null; }
sums() { grep -c '^sum ' "$1" 2>/dev/null || true; }

# Each lease is 1 GiB more than its job allocates: its context's 518 MiB count in it.
# (env and a long variable: a command wider than status's column, which "suspended" must not push
# past 80 columns; env execs the job.)
bg_gs run --gpu-memory 21G --name sleeper -- env GS_SUSPEND_TEST_PADDING=0123456789 "$PROGS/sumhold" 20 >"$WORK/a.out"
client_a=$!
wait_until 20 has_sum "$WORK/a.out"
job_a=$(job_of "$client_a")
lease_a=$(gs leases --json | jq '.[] | select(.name == "sleeper") | .id')
bg_gs run --gpu-memory 31G -- "$PROGS/sumhold" 30 >"$WORK/c.out"
wait_until 20 has_sum "$WORK/c.out"
expect_fail 75 "gpushare: no room for this lease now: GPU 0 (H100-80GB) has 27.18 GiB free of the 41 GiB it needs; held by leases $lease_a (root, 21 GiB), $((lease_a + 1)) (root, 31 GiB)" \
  gs run --gpu-memory 41G --no-wait -- true
before=$(free_now)
smi_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; }
smi_before=$(smi_used)

# A job inside a kernel longer than the lock timeout (2 s) is not suspended: one line, exit 75,
# the lease still active and its job running.
kill -USR2 "$job_a"
wait_until 5 grep -q '^launched' "$WORK/a.out"
expect_fail 75 "gpushare: process $job_a could not be suspended (CUDA_ERROR_NOT_READY: a kernel ran longer than the lock timeout): nothing was" \
  gs suspend "$lease_a"
expect_eq "$(gs leases --json | jq -r ".[] | select(.id == $lease_a) | .state")" active "its state after a lock timeout"
pass "a lease whose job is inside a long kernel is not suspended and stays active"

sleep 3 # the kernel's 5 s are over
out=$(gs suspend "$lease_a")
expect_eq "$out" "lease $lease_a suspended (1 processes)" "suspend's message"
expect_eq "$(gs leases --json | jq -r ".[] | select(.id == $lease_a) | .state")" suspended "its state"
after=$(free_now)
expect_eq $((after - before)) $((20 * GIB + 543162368)) "memory freed by the suspend (its context too)"
expect_eq $((smi_before - $(smi_used))) $(((20 * GIB + 543162368) >> 20)) "MiB nvidia-smi (NVML) sees freed"
expect_fail 1 "gpushare: lease $lease_a is suspended already" gs suspend "$lease_a"
metrics_suspended() { # the metrics are rendered in the background: wait for the next
  curl -fsS "$url" | grep -q "^gpushare_lease_info{lease=\"$lease_a\",.*state=\"suspended\""
}
wait_until 5 metrics_suspended
row=$(gs status | grep -E "^ +$lease_a ")
grep -q ' suspended ' <<<"$row" || fail "status does not show the lease suspended: $row"
[[ ${#row} -le 80 ]] || fail "status row over 80 columns: $row"
pass "a suspended lease's 20 GiB and context are free on the GPU; it shows suspended"

# A restart of gpushared keeps it suspended, its capacity in the pool.
stop_daemon
start_daemon_metrics
expect_eq "$(gs leases --json | jq -r ".[] | select(.id == $lease_a) | .state")" suspended "its state after a restart"
grep -q "lease $lease_a is suspended: 1 of its processes found" "$WORK/daemon.log" ||
  fail "the restarted daemon did not find the suspended lease's processes: $(grep "lease $lease_a" "$WORK/daemon.log" | tail -3)"
pass "a restart of gpushared keeps the lease suspended"

bg_gs run --gpu-memory 41G --no-wait -- "$PROGS/sumhold" 40 >"$WORK/b.out"
client_b=$!
wait_until 20 has_sum "$WORK/b.out"
pass "a 40 GiB lease that did not fit is granted and allocates 40 GiB"

# A resume that does not fit now waits, and happens by itself once the 40 GiB lease ended.
out=$(gs resume "$lease_a")
expect_eq "$out" "lease $lease_a resumes by itself when it fits: lease $lease_a does not fit on GPU 0 again now: it needs 21504 MiB, 7351 MiB are free" "a waiting resume"
expect_eq "$(gs leases --json | jq -r ".[] | select(.id == $lease_a) | .state")" suspended "its state while it waits"

if have_user2; then
  expect_fail 1 "gpushare: lease $lease_a belongs to another user" as_user2 resume "$lease_a"
  pass "another user may not resume the lease"
else
  echo "skip: not root, no second user to try another's resume"
fi

kill -TERM "$client_b"
wait "$client_b" || true
state_a() { gs leases --json | jq -r ".[] | select(.id == $lease_a) | .state"; }
wait_eq 10 active state_a
expect_eq "$(free_now)" "$before" "free memory once resumed"
kill -USR1 "$job_a"
wait_eq 10 2 sums "$WORK/a.out"
first=$(grep '^sum ' "$WORK/a.out" | sed -n 1p)
again=$(grep '^sum ' "$WORK/a.out" | sed -n 2p)
expect_eq "$again" "$first" "the job's checksum after the resume"
expect_fail 1 "gpushare: lease $lease_a is not suspended" gs resume "$lease_a"
if have_user2; then
  expect_fail 1 "gpushare: lease $lease_a belongs to another user" as_user2 suspend "$lease_a"
fi
pass "resumed: its memory back on the GPU, its data intact ($first)"

# All or none: a lease of two CUDA processes, the second inside a long kernel. The first is
# checkpointed, the second's lock times out: the first is restored again, nothing is suspended.
bg_gs run --gpu-memory 5G --name pair -- bash -c "\"$PROGS/sumhold\" 1 >\"$WORK/p1.out\" & sleep 0.5; \"$PROGS/sumhold\" 2 >\"$WORK/p2.out\" & wait"
wait_until 20 has_sum "$WORK/p1.out"
wait_until 20 has_sum "$WORK/p2.out"
p1=$(pgrep -f "^$PROGS/sumhold 1$")
p2=$(pgrep -f "^$PROGS/sumhold 2$")
lease_p=$(gs leases --json | jq '.[] | select(.name == "pair") | .id')
pair_before=$(free_now)
kill -USR2 "$p2"
wait_until 5 grep -q '^launched' "$WORK/p2.out"
expect_fail 75 "gpushare: process $p2 could not be suspended (CUDA_ERROR_NOT_READY: a kernel ran longer than the lock timeout): nothing was" \
  gs suspend "$lease_p"
expect_eq "$(gs leases --json | jq -r ".[] | select(.id == $lease_p) | .state")" active "the pair's state"
expect_eq "$(free_now)" "$pair_before" "free memory after the failed suspend (the first restored)"
kill -USR1 "$p1"
wait_eq 10 2 sums "$WORK/p1.out"
expect_eq "$(grep '^sum ' "$WORK/p1.out" | sed -n 2p)" "$(grep '^sum ' "$WORK/p1.out" | sed -n 1p)" "the first's checksum"
pass "all or none: a lease whose second process is in a long kernel is not suspended, its first restored"
