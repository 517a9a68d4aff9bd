# SPDX-License-Identifier: Apache-2.0
# Issue 27: the history has the submit time and the queue wait. A request that waited about 1.5 s
# for a whole GPU shows it (queue_wait_ms, WAITED), one granted at once shows 0; across a
# restart of gpushared the submit time stays with the lease.
source "$(dirname "$0")/../daemon/lib.sh"
export GPUSIM_DEVICES=H100-80GB
start_daemon
bg_gs run --gpus 1 --name first -- sleep 600
first=$!
wait_eq 5 1 lease_count
bg_gs run --gpus 1 --name second -- sleep 2
second=$!
wait_eq 5 1 queue_length
sleep 1.5
kill -TERM "$(job_of "$first")"
wait "$first" || true
wait_eq 5 1 lease_count
# The second is running: gpushared restarts under it, and keeps when it was asked for.
stop_daemon
start_daemon
wait "$second" || fail "the second job failed"
wait_eq 10 0 lease_count
row() {
  gs history --json | jq -c ".[] | select(.name == \"$1\") | [.queue_wait_ms, .granted_at_ms - .submitted_at_ms, (.submitted_at_ms > 0)]"
}
read -r waited rest < <(row second | tr ',[]' '   ')
((waited >= 1400 && waited < 5000)) || fail "the second's queue wait: $(row second)"
expect_eq "$(row second)" "[$waited,$waited,true]" "the second's queue wait and submit time"
w1=$(row first | jq '.[0]')
((w1 < 500)) || fail "the first waited $w1 ms: $(row first)"
grep -Eq '^ +[0-9]+  root +second +[0-9-]+ [0-9:]+ +1s +[0-9-]+ [0-9:]+ ' <<<"$(gs history)" ||
  fail "history row: $(gs history)"
head -1 <<<"$(gs history)" | grep -q '^LEASE  USER       NAME         SUBMITTED         WAITED ENDED ' ||
  fail "history header: $(gs history | head -1)"
pass "history: submit time and queue wait ($waited ms for the second, $w1 ms for the first), kept across a restart"
