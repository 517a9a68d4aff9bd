# SPDX-License-Identifier: Apache-2.0
# Issue 28, findings 4, 5 and 12, and issue 25's history hole: the state directory. The history
# comes in pages (gpushare history unchanged) and is kept within its retention; a full filesystem
# fails only the history, grants go on from the room kept for them, and status and the log say
# so; a ledger emptied or whose leases table was dropped while leases were live stops gpushared
# with one line; a row that cannot be read keeps its capacity, is shown, and only root releases
# it; a row that promises more than the GPU has is held to what is left.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
# The state directory on a filesystem of 64 MiB that the test fills.
mkdir -p "$WORK/state"
mount -t tmpfs -o size=64m gs-test-state "$WORK/state"
trap 'rc=$?; umount -l "$WORK/state" 2>/dev/null; (exit $rc); cleanup' EXIT
CONFIG=$'[daemon]\nhistory_max_rows_per_user = 700'
start_daemon
reserve=$WORK/state/state.db.reserve
expect_eq "$(stat -c %s "$reserve")" $((8 << 20)) "the room kept beside the ledger"

# 800 leases of root end at once: 700 are kept (its retention); gpushare history pages through
# them without being asked to.
bg "$HOSTILE" hold "$GPUSHARE_SOCKET" 800 '{"op":"acquire","gpu_memory":"1M","wait":false}' >"$WORK/hold.out"
wait_until 60 grep -q granted "$WORK/hold.out"
expect_eq "$(cat "$WORK/hold.out")" "granted 800" "leases granted"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
BG_PIDS=()
wait_eq 20 0 lease_count
expect_eq "$(gs history --limit 10000 --json | jq length)" 700 "rows kept of root's 800"
expect_eq "$(gs history --limit 10000 --json | jq '[.[].id] | (. == (sort | reverse))')" true "most recent first"
expect_eq "$(gs history --limit 600 --json | jq length)" 600 "rows of a limit beyond one page"
reply=$(gs history --limit 3 --json | jq length)
expect_eq "$reply" 3 "a small limit"
pass "the history is kept within its retention (700 of 800) and read in pages"

# A full filesystem: the history stops, grants go on, status and the log say so.
dd if=/dev/zero of="$WORK/state/filler" bs=4k 2>/dev/null || true
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 10G -- sleep 600
wait_eq 5 1 lease_count
gs run --gpu-memory 1G --no-wait -- true || fail "a grant and an end on a full filesystem"
expect_eq "$(gs status --json | jq -c '.node.ledger')" '{"disk_full":true,"history_dropped":1}' "status"
gs status | grep -q "the ledger's filesystem is full: the history is not written (1 ended leases so far)" ||
  fail "gpushare status does not say the filesystem is full"
grep -q "the filesystem of the ledger $WORK/state/state.db is full: the history is not written any more, the room kept for the leases' rows goes to them" "$WORK/daemon.log" ||
  fail "no log line"
[[ -e $reserve ]] && fail "the reserve is still there"
rm -f "$WORK/state/filler"
wait_eq 5 false eval "gs status --json | jq '.node.ledger.disk_full'"
[[ -e $reserve ]] || fail "the reserve was not kept again"
grep -q "has room again: the history is written again (1 ended leases were not recorded meanwhile)" "$WORK/daemon.log" ||
  fail "no log line when room came back"
pass "a full filesystem fails only the history; grants go on and status says so"

# A damaged ledger while leases are live: one line, gpushared does not start.
id=$(user2_lease)
stop_daemon_keep() { kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" || true; DAEMON_PID=; }
stop_daemon_keep
cp "$WORK/state/state.db" "$WORK/saved.db"
expect_eq "$(cat "$WORK/state/state.db.live")" "$(printf %020d "$id")" "the marker names the first live lease"
refused() {
  set +e
  out=$(timeout 10 "$BIN/gpushared" --config "$WORK/gpushare.conf" --state-dir "$WORK/state" --metrics-listen 127.0.0.1:0 2>&1)
  rc=$?
  set -e
  expect_eq "$rc" 1 "exit status ($1)"
  lines=$(grep -v -e ': info: ' -e ': warn: ' <<<"$out")
  expect_eq "$(wc -l <<<"$lines")" 1 "error lines ($1): $lines"
  [[ $lines == *"error: the ledger $WORK/state/state.db has no leases (empty or replaced), but $WORK/state/state.db.live says leases were live (from lease $id on): gpushared will not start and forget them; see RECOVERY in gpushared(8)" ]] ||
    fail "message ($1): $lines"
}
: >"$WORK/state/state.db"
refused "a 0-byte ledger"
cp "$WORK/saved.db" "$WORK/state/state.db"
sqlite3 "$WORK/state/state.db" "DROP TABLE leases"
refused "a dropped leases table"
cp "$WORK/saved.db" "$WORK/state/state.db"
pass "an emptied ledger or a dropped table with live leases: one line, no start"

# A row whose request cannot be read: shown, its capacity kept, only root releases it.
sqlite3 "$WORK/state/state.db" "UPDATE leases SET request = '{broken' WHERE id = $id"
start_daemon
expect_eq "$(lease_state "$id")" damaged "the lease of the bad row"
gs leases --json | jq -e ".[] | select(.id == $id) | .damaged | startswith(\"its request cannot be read\")" >/dev/null ||
  fail "no reason shown"
expect_eq "$(gs status --json | jq '.gpus[0].memory_leased')" $((10 << 30)) "memory kept for it"
set +e
out=$(gs2 release "$id" 2>&1)
rc=$?
set -e
[[ $rc == 1 && $out == *"ledger row is damaged ("*"): only root may release it" ]] || fail "user's release: $rc $out"
expect_eq "$(gs release "$id")" "lease $id released" "root's release"
expect_eq "$(gs status --json | jq '.gpus[0].memory_leased')" 0 "memory after root's release"
pass "a bad row keeps its capacity, is shown, and root releases it"

# A row that promises more than the GPU can give beside the others: held to what is left.
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 40G -- sleep 600
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 30G -- sleep 600
wait_eq 5 2 eval "gs leases --json | jq '[.[] | select(.uid == $UID2)] | length'"
last=$(gs leases --json | jq '[.[].id] | max')
stop_daemon_keep
sqlite3 "$WORK/state/state.db" "UPDATE leases SET parts = json_set(parts, '\$[0].memory', 53687091200) WHERE id = $last"
start_daemon
leasable=$(gs status --json | jq '.gpus[0].memory_leasable')
expect_eq "$(gs status --json | jq '.gpus[0].memory_leased')" "$leasable" "memory leased (all that is leasable, no more)"
expect_eq "$(lease_state "$last")" damaged "the lease of the edited row"
grep -q "ledger: lease $last: its row promises more than GPU 0 can give beside the leases restored before it: held to what was left" "$WORK/daemon.log" ||
  fail "no report of the edited row"
pass "a row promising more than the GPU has is reported and never over-promises"
