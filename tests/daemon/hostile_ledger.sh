# SPDX-License-Identifier: Apache-2.0
# Issue 15, findings 2 and 7: the ledger. A write that fails (a full filesystem) fails its
# operation with one line and grants nothing, and after a restart no lease id is given twice
# while its job runs; a damaged ledger stops the daemon with one line (no lease is forgotten,
# no region touched); a row naming a path outside the daemon's own is refused.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
# The state directory on a filesystem of 1 MiB that the test fills.
mkdir -p "$WORK/state"
mount -t tmpfs -o size=1m gs-test-state "$WORK/state"
trap 'rc=$?; umount -l "$WORK/state" 2>/dev/null; (exit $rc); cleanup' EXIT
start_daemon

bg_gs run --gpu-memory 10G -- "$TOOL" charge 1G
first=$!
wait_eq 5 $((1 << 30)) memory_used
id1=$(gs leases --json | jq '.[0].id')
sleep 0.5 # idle: the write-ahead log is checkpointed (and emptied)
dd if=/dev/zero of="$WORK/state/filler" bs=4k 2>/dev/null || true
set +e
out=$(gs2 run --gpu-memory 10G -- sleep 30 2>&1)
rc=$?
set -e
expect_eq "$rc" 1 "exit status of a run while the ledger's filesystem is full"
expect_eq "$out" "gpushare: cannot record the lease in the ledger: database or disk is full" "its message"
expect_eq "$(lease_count)" 1 "leases"
expect_eq "$(gs status --json | jq '.gpus[0].memory_leased')" $((10 << 30)) "memory leased"
daemon_alive || fail "gpushared died"
pass "a full ledger filesystem: run fails with one line, nothing is granted"

rm -f "$WORK/state/filler"
kill9_daemon
start_daemon
expect_eq "$(gs leases --json | jq -c '[.[].id]')" "[$id1]" "leases after the restart"
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 10G -- sleep 30
wait_eq 5 2 lease_count
id2=$(user2_lease)
[[ $id2 -gt $id1 ]] || fail "the new lease got id $id2, not above $id1"
kill -0 "$first" || fail "the first job died"
pass "after a restart no id is given twice (lease $id1 runs on, the next is $id2)"

# A ledger row that names a path outside the daemon's regions: refused, the path untouched.
stop_daemon_keep() { kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" || true; DAEMON_PID=; }
stop_daemon_keep
echo "precious" >"$WORK/outside"
sqlite3 "$WORK/state/state.db" "UPDATE leases SET region = '$WORK/outside' WHERE id = $id2"
start_daemon
expect_eq "$(cat "$WORK/outside")" precious "the file the row named"
grep -q "ledger: lease $id2: region \"$WORK/outside\" is not this lease's (refused: nothing there is touched)" "$WORK/daemon.log" ||
  fail "no refusal in the log"
expect_eq "$(gs leases --json | jq -c '[.[].id]')" "[$id1,$id2]" "leases (the refused row keeps its capacity)"
pass "a row naming $WORK/outside is refused and the file is untouched"

# A damaged ledger: one line, exit 1, and the daemon acts on nothing (the lease's job and its
# region go on untouched).
stop_daemon_keep
python3 - "$WORK/state/state.db" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(4096)
    f.write(bytes((i * 7919 + 13) % 256 for i in range(4096)))
PY
set +e
out=$(timeout 10 "$BIN/gpushared" --config "$WORK/gpushare.conf" --state-dir "$WORK/state" --metrics-listen 127.0.0.1:0 2>&1)
rc=$?
set -e
expect_eq "$rc" 1 "exit status on a damaged ledger"
lines=$(grep -v -e ': info: ' -e ': warn: ' <<<"$out")
expect_eq "$(wc -l <<<"$lines")" 1 "error lines: $lines"
[[ $lines == *"error: the ledger $WORK/state/state.db is damaged (SQLite integrity_check: "*"see RECOVERY in gpushared(8)" ]] ||
  fail "message: $lines"
kill -0 "$first" || fail "the first lease's job died"
pass "a damaged ledger stops gpushared with one line"
