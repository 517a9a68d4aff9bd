# SPDX-License-Identifier: Apache-2.0
# Issue 15, findings 1 and 6: a user who shrinks, grows or fills the region of their own lease
# never stops the daemon nor keeps other users' grants from working (regions are the daemon's
# sealed memfds); removing the state directory under a running daemon is noticed and repaired,
# and no lease's accounting is lost, through a restart too.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
# Earlier versions kept regions as files here, on a small filesystem a user could fill.
mkdir -p "$WORK/regions"
mount -t tmpfs -o size=16m,mode=0711 gs-test-regions "$WORK/regions"
trap 'rc=$?; umount -l "$WORK/regions" 2>/dev/null; (exit $rc); cleanup' EXIT
CONFIG=$'[daemon]\nregion_dir = '"$WORK/regions"
start_daemon

# Finding 1: the second user's job shrinks, grows and fills its region.
out=$(gs2 run --gpu-memory 1G -- "$HOSTILE" resize 2>&1)
expect_eq "$out" $'shrink: Operation not permitted\ngrow: Operation not permitted\nfill: Operation not permitted' \
  "what the job could do to its region"
daemon_alive || fail "gpushared died"
gs run --gpu-memory 2G --no-wait -- "$TOOL" charge 1G 0 >/dev/null || fail "another user's grant after the resize"
gs2 run --gpu-memory 2G --no-wait -- true || fail "the user's own next grant"
expect_eq "$(lease_count)" 0 "leases left"
pass "shrinking, growing or filling one's region is refused; the daemon lives and grants go on"

# Finding 6: a 10G lease whose process holds 4G; the state directory is removed.
bg_gs run --gpu-memory 10G -- "$TOOL" charge 4G
wait_eq 5 $((4 << 30)) memory_used
id=$(gs leases --json | jq '.[0].id')
region=$(gs leases --json | jq -r '.[0].region')
rm -rf "$WORK/state"
wait_until 5 test -s "$WORK/state/state.db"
grep -q "the ledger $WORK/state/state.db was removed: writing it again from the 1 live leases" "$WORK/daemon.log" ||
  fail "no repair line in the log"
gs run --gpu-memory 1G --no-wait -- true || fail "a grant after the state directory was removed"
# Another process of the lease gets only what is left of its 10G.
expect_eq "$(GPUSHARE_REGION=$region "$TOOL" charge 7G 0 2>&1)" refused "7G beside the lease's 4G"
expect_eq "$(GPUSHARE_REGION=$region "$TOOL" charge 6G 0 2>&1)" "charged $((6 << 30))" "6G beside its 4G"
pass "the removed state directory is written again; the lease's 4G of 10G is still counted"

# Through a restart (kill -9): the ledger has the lease, its region is found in its process.
kill9_daemon
start_daemon
expect_eq "$(gs leases --json | jq -c '[.[] | [.id, .memory_used]]')" "[[$id,$((4 << 30))]]" "the lease after a restart"
expect_eq "$(GPUSHARE_REGION=$region "$TOOL" charge 7G 0 2>&1)" refused "7G beside its 4G after the restart"
new=$(gs run --gpu-memory 1G --no-wait -v -- true 2>&1 | sed -n 's/^gpushare: lease \([0-9]*\):.*/\1/p')
[[ $new -gt $id ]] || fail "a new lease got id $new, not above $id"
pass "after a restart the lease, its 4G and the id sequence are intact"
