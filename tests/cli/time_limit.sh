# SPDX-License-Identifier: Apache-2.0
# Issue 14, --time: at the time limit the job gets SIGTERM, SIGKILL after the grace period
# (kill_grace), and the lease ends; a job that ignores SIGTERM is gone within grace + 1 s of the
# limit. Time left shows in status and leases; the history says why it ended.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
CONFIG=$'[daemon]\nkill_grace = 1'
start_daemon

# A job that ignores SIGTERM, with a 2 s limit and a 1 s grace period: killed by 4 s.
set +e
start=$(date +%s%N)
out=$(gs run --gpu-memory 1G --time 2s -- sh -c 'trap "" TERM; while :; do sleep 0.1; done' 2>&1)
rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
set -e
expect_eq "$rc" 137 "exit status of a job killed at its time limit"
grep -Eq '^gpushare: lease [0-9]+ reached its time limit \(2s\): stopping the job \(SIGTERM, SIGKILL in 1s\)$' <<<"$out" ||
  fail "no time limit message: $out"
[[ $elapsed_ms -ge 2000 && $elapsed_ms -le 4000 ]] || fail "the job ended after $elapsed_ms ms (limit 2 s + grace 1 s + 1 s)"
expect_eq "$(lease_count)" 0 "leases after the time limit"
expect_eq "$(gs history --json | jq -c '.[0] | [.end_reason, .signal, .exit_status]')" \
  '["time limit",9,null]' "the history of the killed job"
pass "--time 2s: a job ignoring SIGTERM is killed after the 1 s grace, $elapsed_ms ms after its start; the lease ends"

# A job that stops at SIGTERM ends at the limit.
set +e
start=$(date +%s%N)
gs run --gpus 1 --time 1s -- sleep 30 2>/dev/null
rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
set -e
expect_eq "$rc" 143 "exit status of a job stopped by SIGTERM at its limit"
[[ $elapsed_ms -ge 1000 && $elapsed_ms -le 2500 ]] || fail "the job ended after $elapsed_ms ms (limit 1 s)"
pass "--time 1s: SIGTERM at the limit ($elapsed_ms ms)"

# Time left: in the lease object, leases and status.
bg_gs run --gpu-memory 1G --time 1h --name long -- sleep 60
wait_eq 5 1 lease_count
expect_eq "$(gs leases --json | jq '.[0] | .time_limit_ms, .expires_at_ms - .granted_at_ms' | tr '\n' ' ')" \
  "3600000 3600000 " "the time limit in the lease"
grep -Eq '^ +[0-9]+ root +long +0 / 1G +- +59m5[0-9]s  sleep 60$' <<<"$(gs status)" || fail "no time left in status: $(gs status)"
grep -Eq ' long .* active +[0-9]+s +59m5[0-9]s  sleep 60$' <<<"$(gs leases)" || fail "no time left in leases: $(gs leases)"
pass "time left shows in status and leases"
