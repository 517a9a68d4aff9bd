# SPDX-License-Identifier: Apache-2.0
# Issue 28, findings 3, 6, 9, 11 and 12: what one user can make gpushared hold or do for others.
# Per-user budgets (unread output, leases); a waiting request holds no GPU against others while it
# waits on its own user's leases; invisible characters are refused in names; a flood of denied
# requests writes a few log lines with counts, not one each; requests that waited out a stall of
# the daemon are answered, not closed as idle.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB,H100-80GB
CONFIG=$'[daemon]\nmax_output_per_user = 1M\nmax_leases_per_user = 40\nidle_timeout = 1'
start_daemon
USER3=gpushare-bench
id "$USER3" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER3"

# Finding 6: two 1-byte leases of one user, one on each GPU, and its queued request for both
# whole GPUs: another user's 1G --no-wait is granted at once.
bg "${AS_USER2[@]}" "$HOSTILE" hold "$GPUSHARE_SOCKET" 1 '{"op":"acquire","gpu_memory":"1","gpus_at":[0],"wait":false}'
bg "${AS_USER2[@]}" "$HOSTILE" hold "$GPUSHARE_SOCKET" 1 '{"op":"acquire","gpu_memory":"1","gpus_at":[1],"wait":false}'
wait_eq 5 2 lease_count
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpus 2 -- true
wait_eq 5 1 queue_length
runuser -u "$USER3" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" \
  "$BIN/gpushare" run --gpu-memory 1G --no-wait -- true || fail "another user's 1G --no-wait was refused"
reason=$(gs status --json | jq -r '.queue.requests[0].reason')
[[ $reason =~ ^"GPU 0 (H100-80GB) is in use by your lease "[12]" (1 B)"$ ]] ||
  fail "the waiting request's reason (its own lease): $reason"
pass "a request waiting on its own user's leases holds nothing: another user's 1G is granted at once"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
wait_eq 5 0 lease_count

# Leases per user: the 41st is refused with one line.
bg "${AS_USER2[@]}" "$HOSTILE" hold "$GPUSHARE_SOCKET" 41 '{"op":"acquire","gpu_memory":"1M","wait":false}' >"$WORK/hold.out"
wait_until 10 grep -q granted "$WORK/hold.out"
expect_eq "$(cat "$WORK/hold.out")" "granted 40" "leases granted of 41"
set +e
out=$(gs2 run --gpu-memory 1M -- true 2>&1)
rc=$?
set -e
expect_eq "$rc:$out" "1:gpushare: user $USER2 already holds 40 leases, the most one user may hold (max_leases_per_user)" "the 41st"
pass "max_leases_per_user: the 41st lease is refused with one line"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
wait_eq 10 0 lease_count

# Finding 3: the user's history replies, unread on many connections, stay within its budget of
# unread output (1 MiB here); a reply beyond it is refused with one line, the connection stays.
# (2,000 rows of the user with long commands: each reply is a full page, 512 KiB.)
stop_daemon
now=$(date +%s%3N)
sqlite3 "$WORK/state/state.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
  INSERT INTO history (id, uid, user, name, command, request, gpus, granted_at, ended_at, memory_limit,
  peak_memory, oom_events, end_reason) SELECT 100000 + i, $UID2, '$USER2', '', printf('%.1000c', 'x'),
  '{}', '[]', $now - 1000 - i, $now - i, 0, 0, 0, 'released' FROM n"
start_daemon
bg "${AS_USER2[@]}" "$HOSTILE" flood "$GPUSHARE_SOCKET" 200 '{"op":"history","limit":10000}'
sleep 3
set +e
out=$(gs2 history --limit 10000 2>&1)
rc=$?
set -e
[[ $rc == 0 || ($rc == 1 && $out == "gpushare: user $USER2 has "*" bytes of replies unread, the most one user may have with this reply of "*" bytes is 1048576 (max_output_per_user): read them first") ]] ||
  fail "history beside 200 unread replies: $rc $out"
gs status >/dev/null || fail "root's status"
rss=$(daemon_rss_kb)
# (The plain build checks the daemon's memory; under the sanitizers shadow memory and the
# quarantine of freed memory make its RSS no measure of what it keeps.)
[[ -n ${GS_SANITIZE:-} || $rss -lt 102400 ]] || fail "the daemon holds $rss KiB"
grep -q "user $USER2 does not read its replies (.* bytes waiting): a reply of .* bytes to pid .* refused" "$WORK/daemon.log" ||
  fail "no log line of a refused reply"
pass "200 unread history replies: the user's budget holds ($rss KiB resident); one more is refused with one line"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()

# Finding 4: 250 connections of the user ask for their history in a loop, reading every page:
# its share of the daemon's time for history is spent and its requests wait their turn; another
# user's status stays fast (a status took 2.4 s each before).
bg "${AS_USER2[@]}" "$HOSTILE" histloop "$GPUSHARE_SOCKET" 250
sleep 2
line=$(runuser -u "$USER3" -- "$GS_BUILD_DIR/bench/bench_status" "$GPUSHARE_SOCKET" 200)
p99=$(sed -n 's/.* p99=\([0-9.]*\) .*/\1/p' <<<"$line")
[[ -n $p99 ]] && awk -v p="$p99" 'BEGIN {exit !(p < 50)}' || fail "another user's status beside 250 history loops: $line"
pass "250 connections looping history: another user's status $line (ms)"
stop_bg

# Finding 11: 50,000 denied joins: a few lines, with the count of those left out.
bg "$BIN/gpushare" run --gpu-memory 1G -- sleep 600
wait_eq 5 1 lease_count
rid=$(gs leases --json | jq '.[0].id')
before=$(wc -l <"$WORK/daemon.log")
bg "${AS_USER2[@]}" "$HOSTILE" hold "$GPUSHARE_SOCKET" 50000 "{\"op\":\"join\",\"lease\":$rid}" >"$WORK/joins.out"
wait_until 60 grep -q granted "$WORK/joins.out" # all 50,000 answered
lines=$(tail -n +$((before + 1)) "$WORK/daemon.log" | grep -c "tried to join lease $rid" || true)
[[ $lines -le 10 ]] || fail "$lines lines for 50,000 denied joins"
pass "50,000 denied joins: $lines log lines"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
wait_eq 10 0 lease_count

# Finding 12: 200 connections send a request while the daemon is stopped for longer than
# idle_timeout: every one is answered.
bg "${AS_USER2[@]}" "$HOSTILE" stall "$GPUSHARE_SOCKET" 200 >"$WORK/stall.out"
stall=$!
wait_until 5 grep -q opened "$WORK/stall.out"
sleep 0.3
kill -STOP "$DAEMON_PID"
kill -USR1 "$(pgrep -u "$USER2" -f 'gs-hostile stall')"
sleep 1.5
kill -CONT "$DAEMON_PID"
wait_until 15 grep -q replies "$WORK/stall.out"
expect_eq "$(tail -1 "$WORK/stall.out")" "replies 200, idle_timeout 0" "requests sent during a stall"
pass "requests that waited out a stall longer than idle_timeout are answered"

# Finding 9: invisible characters in a name are refused by the CLI and by the daemon.
for c in $'\u200b' $'\ufeff' $'\u00ad' $'\u2060' $'\u180e' $'\ufff9' $'\U000e0041'; do
  set +e
  out=$(gs run --name "al${c}ice" -- true 2>&1)
  rc=$?
  set -e
  [[ $rc == 2 && $out == "gpushare run: --name: a name must be printable text (letters, marks, digits, punctuation, symbols and spaces): U+"*" is not (see gpushare run --help)" ]] ||
    fail "name with $(printf %s "$c" | od -An -tx1): $rc $out"
done
# The daemon refuses each of them too, sent as UTF-8 and as a JSON escape (a surrogate pair for the
# tag character), whoever wrote the request.
i=0
for name in $'al\u200bice' $'al\ufeffice' $'al\u00adice' $'al\u2060ice' $'al\u180eice' $'al\ufff9ice' \
  $'al\U000e0041ice' 'al\u200bice' 'al\ufeffice' 'al\u00adice' 'al\u2060ice' 'al\u180eice' \
  'al\ufff9ice' 'al\udb40\udc41ice'; do
  i=$((i + 1))
  bg "$HOSTILE" hold "$GPUSHARE_SOCKET" 1 \
    "{\"op\":\"acquire\",\"gpu_memory\":\"1M\",\"wait\":false,\"name\":\"$name\"}" >"$WORK/name.$i.out"
  wait_until 5 grep -q granted "$WORK/name.$i.out"
  expect_eq "$(cat "$WORK/name.$i.out")" "granted 0" "a request naming $(printf %s "$name" | od -An -c | tr -s ' ')"
done
expect_eq "$(gs leases --json | jq length)" 0 "leases with an invisible name"
# The control: the same request with a plain name is granted.
bg "$HOSTILE" hold "$GPUSHARE_SOCKET" 1 '{"op":"acquire","gpu_memory":"1M","wait":false,"name":"al ice"}' >"$WORK/name.ok.out"
wait_until 5 grep -q granted "$WORK/name.ok.out"
expect_eq "$(cat "$WORK/name.ok.out")" "granted 1" "a request naming 'al ice'"
first_name() { gs leases --json | jq -c '[.[].name] | .[0]'; }
wait_eq 5 '"al ice"' first_name
pass "invisible characters are refused in names"
