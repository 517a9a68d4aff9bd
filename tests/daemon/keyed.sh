# SPDX-License-Identifier: Apache-2.0
# Issue 21 without containers: keyed leases in gpushared's API and gpushare cdi.
#  - acquire with a key is idempotent and outlives its connection, across a restart;
#  - release by key; another user cannot use a key of root's; only root or lease_admin_group may
#    name a cgroup or lease for another user;
#  - attach: a cgroup's processes are the lease's, and stop with it;
#  - acceptance 6: a malformed key, a cgroup path that is not a cgroup, a CDI name that exists
#    twice, a spec directory that is not writable: one line each, a non-zero status, nothing
#    half-made (no lease, no spec).
source "$(dirname "$0")/../cli/lib.sh"
GPUSIM_DEVICES=H100-80GB
T=$GS_BUILD_DIR/tests
CONFIG=$'[daemon]\nlease_admin_group = gpushare-test-admins'
start_daemon
send() { # REQUEST...: each on one connection, the first reply
  printf '%s\n' "$@" | "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 500 | sed -n 1p
}
key_lease() {
  gs leases --json | jq -r --arg k "$1" '.[] | select(.key == $k) | .id'
}

# Idempotent, and not the connection's: the connection that acquired it is gone.
r1=$(send '{"op":"acquire","key":"test/one","gpu_memory":"2G"}')
r2=$(send '{"op":"acquire","key":"test/one","gpu_memory":"2G"}')
id=$(jq .lease.id <<<"$r1")
expect_eq "$(jq -c '[.state, .key, .existing]' <<<"$r1")" '["granted","test/one",false]' "first acquire with a key"
expect_eq "$(jq -c '[.state, .lease.id, .existing]' <<<"$r2")" "[\"granted\",$id,true]" "second acquire with the key"
sock=$(jq -r .socket <<<"$r1")
[[ -S $sock ]] || fail "no lease socket at $sock"
expect_eq "$(jq -r .env.GPUSHARE_REGION <<<"$r1")" "gpushared:$id:$sock" "the region a keyed lease's processes join"
expect_eq "$(stat -c %a "$(dirname "$(dirname "$sock")")")" 711 "mode of the lease sockets' directory"
expect_eq "$(key_lease test/one)" "$id" "the lease listed with its key"
gs leases | grep -q "key=test/one" || fail "gpushare leases does not show the key"
pass "acquire with a key: the same lease again, outliving its connection, listed with its key"

# Across a restart (SIGTERM here; kill -9 in tests/containers/lifecycle.sh): the same lease, key
# and socket.
stop_daemon
start_daemon
expect_eq "$(key_lease test/one)" "$id" "the keyed lease after a restart"
[[ -S $sock ]] || fail "no lease socket at $sock after the restart"
expect_eq "$(printf '%s\n' '{"op":"list"}' | "$T/gs-daemon-tool" send "$sock" 500 | sed -n 1p | jq -c '[.leases[].id]')" "[$id]" "list through the lease's socket"
pass "the keyed lease and its socket are back after a restart"

# A lease's socket answers for the lease, not for its uid: root's waiting request is not listed
# there (it is on the main socket).
send '{"op":"acquire","key":"test/two","gpu_memory":"60G"}' >/dev/null
printf '%s\n' '{"op":"acquire","gpu_memory":"30G"}' | "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 5000 >/dev/null &
waiter=$!
pending_main() { send '{"op":"list"}' | jq '.pending | length'; }
wait_eq 3 1 pending_main
expect_eq "$(printf '%s\n' '{"op":"list"}' | "$T/gs-daemon-tool" send "$sock" 500 | sed -n 1p | jq -c .pending)" "[]" "pending requests through the lease's socket"
send '{"op":"release","key":"test/two"}' >/dev/null
kill "$waiter" 2>/dev/null || true
wait "$waiter" 2>/dev/null || true
pass "a lease's socket lists no waiting requests, not even those of its uid"

# Release by key; then the key names nothing ("none" for root, whose hooks repeat themselves).
expect_eq "$(send '{"op":"release","key":"test/one"}' | jq -c '[.lease, .state]')" "[$id,\"ended\"]" "release by key"
expect_eq "$(send '{"op":"release","key":"test/one"}' | jq -r .state)" none "a second release by key"
[[ ! -e $sock ]] || fail "the lease socket is still there after the release"
pass "release by key ends the lease and removes its socket; a repeated release says none"

# Acceptance 6: bad input through gpushare cdi, nothing made.
mkdir "$WORK/cdi"
touch "$WORK/not-a-dir"
expect_fail 2 "gpushare cdi: --key: a lease key is 3 to 127 characters of letters, digits and ._:- in at least two parts separated by '/' (like podman/<container id>) (see gpushare cdi --help)" \
  "$BIN/gpushare" cdi add x --gpu-memory 1G --key 'bad key' --dir "$WORK/cdi"
expect_fail 2 "gpushare cdi: --cgroup: a cgroup path is absolute, at most 255 characters of letters, digits and ._:@- in parts separated by '/' (like /libpod_parent/libpod-<id>) (see gpushare cdi --help)" \
  "$BIN/gpushare" cdi add x --gpu-memory 1G --cgroup 'relative/path' --dir "$WORK/cdi"
expect_fail 1 "gpushare: \"cgroup\": /gs-no-such-cgroup is not a cgroup of this node" \
  "$BIN/gpushare" cdi add x --gpu-memory 1G --cgroup /gs-no-such-cgroup --dir "$WORK/cdi"
expect_fail 1 "gpushare: the CDI spec directory $WORK/not-a-dir is not a writable directory" \
  "$BIN/gpushare" cdi add x --gpu-memory 1G --dir "$WORK/not-a-dir"
expect_fail 1 "gpushare: the CDI spec directory $WORK/no-such-dir is not a writable directory" \
  "$BIN/gpushare" cdi add x --gpu-memory 1G --dir "$WORK/no-such-dir"
expect_fail 2 "gpushare cdi: \"../x\": a CDI device name is 1 to 63 letters, digits and _.- (not starting with . or -) (see gpushare cdi --help)" \
  "$BIN/gpushare" cdi add ../x --gpu-memory 1G --dir "$WORK/cdi"
expect_eq "$(lease_count)" 0 "leases after the refused adds"
expect_eq "$(ls -A "$WORK/cdi")" "" "spec files after the refused adds"
gs cdi add x --gpu-memory 1G --dir "$WORK/cdi" >/dev/null
spec=$(cat "$WORK/cdi/gpushare.io_gpu-x.json")
expect_fail 1 "gpushare: CDI device gpushare.io/gpu=x exists already in $WORK/cdi" \
  "$BIN/gpushare" cdi add x --gpu-memory 1G --key cdi/other --dir "$WORK/cdi"
expect_eq "$(lease_count)" 1 "leases after adding a name twice"
expect_eq "$(cat "$WORK/cdi/gpushare.io_gpu-x.json")" "$spec" "the first spec after adding its name twice"
# Unwritable for a user: as the second user, a root-owned directory.
if have_user2; then
  chmod 755 "$WORK/cdi"
  expect_fail 1 "gpushare: the CDI spec directory $WORK/cdi is not a writable directory" \
    as_user2 cdi add y --gpu-memory 1G --dir "$WORK/cdi"
  expect_eq "$(lease_count)" 1 "leases after a refused add by the second user"
  # A user's --user is what is wrong, not the directory (issue 37).
  expect_fail 1 "gpushare: --user and --cgroup are root's (or lease_admin_group's, with a spec directory it can write: --dir DIR)" \
    as_user2 cdi add y --gpu-memory 1G --user root --dir "$WORK/cdi"
  expect_eq "$(lease_count)" 1 "leases after a user's refused --user"
fi
gs cdi remove x --dir "$WORK/cdi"
expect_eq "$(lease_count)$(ls -A "$WORK/cdi")" 0 "leases and specs after cdi remove"
# gpusim's spec: --devices is optional (the node as it is), as the usage says (issue 37).
env -u GPUSIM_DEVICES "$BIN/gpushare" cdi gpusim sim --sim "$GS_BUILD_DIR/sim" --state "$WORK/sim" --dir "$WORK/cdi" >/dev/null ||
  fail "cdi gpusim without --devices"
expect_eq "$(jq -c '[.devices[0].containerEdits.env[] | select(startswith("GPUSIM_DEVICES"))]' "$WORK/cdi/gpusim.gpushare.io_node-sim.json")" '[]' "gpusim's spec without --devices"
"$BIN/gpushare" cdi gpusim sim2 --sim "$GS_BUILD_DIR/sim" --state "$WORK/sim" --devices H100-80GB --dir "$WORK/cdi" >/dev/null
expect_eq "$(jq -c '[.devices[0].containerEdits.env[] | select(startswith("GPUSIM_DEVICES"))]' "$WORK/cdi/gpusim.gpushare.io_node-sim2.json")" '["GPUSIM_DEVICES=H100-80GB"]' "gpusim's spec with --devices"
rm -f "$WORK"/cdi/gpusim.gpushare.io_node-*.json
pass "bad input: a malformed key, a cgroup that is not one, a taken or unwritable spec place: one line each, nothing made"

have_user2 || gs_skip "the second user's and the cgroup parts need root (the rest passed)"
# Another user: not root's key, no cgroup, nobody else's lease; a forged key is not found.
user2_send() {
  printf '%s\n' "$@" | runuser -u "$USER2" -- "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 500 | sed -n 1p
}
send '{"op":"acquire","key":"test/root","gpu_memory":"1G"}' >/dev/null
for req in '{"op":"acquire","key":"test/root","gpu_memory":"1G"}' '{"op":"release","key":"test/root"}' \
  '{"op":"acquire","key":"test/mine","gpu_memory":"1G","cgroup":"/"}' \
  '{"op":"acquire","key":"test/mine","gpu_memory":"1G","user":"root"}' \
  '{"op":"attach","key":"test/root","pid":1}'; do
  code=$(user2_send "$req" | jq -r .error.code)
  [[ $code == permission_denied || $code == bad_request ]] || fail "the second user asking $req: $code"
done
expect_eq "$(user2_send '{"op":"release","key":"test/forged"}' | jq -r .error.code)" not_found "a forged key"
expect_eq "$(user2_send '{"op":"acquire","key":"test/mine","gpu_memory":"1G"}' | jq -r .state)" granted "the second user's own keyed lease"
pass "another user cannot take, release or attach root's keyed lease, name a cgroup or lease for others"

# lease_admin_group: a member leases for another user and names cgroups.
getent group gpushare-test-admins >/dev/null || groupadd --system gpushare-test-admins
usermod -a -G gpushare-test-admins "$USER2"
reply=$(user2_send '{"op":"acquire","key":"test/for-root","gpu_memory":"1G","user":"root"}')
expect_eq "$(jq -r .lease.user <<<"$reply")" root "a lease_admin_group member's lease for root"
gpasswd -d "$USER2" gpushare-test-admins >/dev/null
pass "a member of lease_admin_group leases on behalf of another user"

# attach: a cgroup's processes are the lease's and stop with it.
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then CG_ROOT=/sys/fs/cgroup; else CG_ROOT=/sys/fs/cgroup/pids; fi
CG=/gs-keyed-test-$$
mkdir "$CG_ROOT$CG"
trap 'rc=$?; rmdir "$CG_ROOT$CG" 2>/dev/null || true; (exit $rc); cleanup' EXIT
bg sleep 300
worker=$!
echo "$worker" >"$CG_ROOT$CG/cgroup.procs"
r=$(send '{"op":"acquire","key":"test/cg","gpu_memory":"1G"}')
expect_eq "$(send "{\"op\":\"attach\",\"key\":\"test/cg\",\"pid\":$worker}" | jq -r .cgroup)" "$CG" "the cgroup attach found"
expect_eq "$(gs leases --json | jq -r '.[] | select(.key == "test/cg") | .cgroup')" "$CG" "the lease's cgroup"
send '{"op":"release","key":"test/cg"}' >/dev/null
wait_until 3 bash -c "! kill -0 $worker 2>/dev/null"
pass "attach: the process in the lease's cgroup was stopped when the lease was released"
