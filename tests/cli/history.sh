# SPDX-License-Identifier: Apache-2.0
# Issue 14, gpushare history: finished leases from the ledger (who, what, when, how long, peak
# memory, OOM events, exit status), after a restart of the daemon; --since, --user, --json; a
# user sees only their own.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
start_daemon
GIB=$((1 << 30))
CONTEXT=543162368 # a context's own memory on an H100-80GB, charged to the lease (issue 12)

# A CUDA job that holds 1.5 GiB beside its context, is refused 1 GiB more (over its 3G) and exits
# 1; a plain one.
set +e
gs run --gpu-memory 3G --name hist -- "$JOB" hist 1.5 0.3 1 0.1 >/dev/null 2>&1
rc=$?
set -e
expect_eq "$rc" 1 "exit status of the job refused memory"
gs run --gpus 1 --name plain -- true
stop_daemon
start_daemon

rows=$(gs history --json)
expect_eq "$(jq length <<<"$rows")" 2 "finished leases after the restart"
expect_eq "$(jq -c '.[1] | [.name, .user, .command, .peak_memory, .memory_limit, .oom_events, .exit_status, .signal, .end_reason]' <<<"$rows")" \
  "[\"hist\",\"root\",\"$JOB hist 1.5 0.3 1 0.1\",$((3 * GIB / 2 + CONTEXT)),$((3 * GIB)),1,1,null,\"released\"]" "the CUDA job's history"
expect_eq "$(jq -c '.[1].gpus | map([.index, .peak_memory])' <<<"$rows")" "[[0,$((3 * GIB / 2 + CONTEXT))]]" "its GPU and peak"
expect_eq "$(jq -c '.[0] | [.name, .exit_status, .request]' <<<"$rows")" '["plain",0,{"gpus":1}]' "the plain job"
jq -e '.[1] | .duration_ms >= 100 and .ended_at_ms - .granted_at_ms == .duration_ms' <<<"$rows" >/dev/null ||
  fail "durations: $rows"
grep -Eq '^ +[0-9]+  root +hist +[0-9-]+ [0-9:]+ +0s +[0-9-]+ [0-9:]+ +[0-9.]+m?s +0 +2.0G / +3G +1  exit 1 +'"$JOB" <<<"$(gs history)" ||
  fail "no history row: $(gs history)"
pass "history after a restart: the job's peak 1.5 GiB and its context, 1 OOM event, exit 1; the plain job's exit 0"

expect_eq "$(gs history --since 1h --json | jq length)" 2 "history --since 1h"
expect_eq "$(gs history --since 2999-01-01)" "no finished leases" "history --since a future date"
expect_eq "$(gs history --limit 1 --json | jq -r '.[0].name')" plain "history --limit 1"
expect_fail 2 'gpushare history: --since "junk": expected a duration ago (2h, 1d) or a date (2025-06-01, 2025-06-01T12:00) (see gpushare history --help)' \
  gs history --since junk
out=$(gs history --json --since junk 2>/dev/null) && fail "a bad --since succeeded with --json"
expect_eq "$(jq -c . <<<"$out")" '{"ok":false,"error":{"code":"usage","message":"--since \"junk\": expected a duration ago (2h, 1d) or a date (2025-06-01, 2025-06-01T12:00)"}}' "a usage error as JSON"
pass "--since (a duration or a date), --limit; errors as JSON with --json"

have_user2 || gs_skip "the second user's part needs root (the rest passed)"
as_user2 run --gpus 1 --name theirs -- true
expect_eq "$(as_user2 history --json | jq -c 'map(.name)')" '["theirs"]' "the user's history"
expect_eq "$(gs history --json | jq -c 'map(.name)')" '["theirs","plain","hist"]' "root's history"
expect_eq "$(gs history --user "$USER2" --json | jq -c 'map(.name)')" '["theirs"]' "root's history --user"
expect_fail 1 "gpushare: only root may see the history of other users" as_user2 history --user root
pass "a user sees only their own history; root sees all, or one user's with --user"
