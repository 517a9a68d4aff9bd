# SPDX-License-Identifier: Apache-2.0
# Acceptance 6: a non-root user cannot list the details of, release or join another user's
# lease; SO_PEERCRED on the socket enforces it. Needs root (to run as a second system user).
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh" # gs_skip
[[ $(id -u) -eq 0 ]] || gs_skip "run as root to test with a second system user (useradd, runuser)"
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
USER2=gpushare-test
id "$USER2" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER2"
start_daemon
chmod 755 "$WORK/sim" 2>/dev/null || true

as_user2() {
  runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$BIN/gpushare" "$@"
}

expect_eq "$(stat -c %a "$GPUSHARE_SOCKET")" 666 "socket mode"

# root holds a lease with a recognisable command; the second user holds one too.
secret=root-secret-job-$RANDOM
bg_gs run --gpu-memory 10G -- sh -c 'exec sleep 30' "$secret"
wait_eq 5 1 lease_count
root_id=$(gs leases --json | jq '.[0].id')
touch "$WORK/hold"
bg runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" \
  ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$BIN/gpushare" run --gpu-memory 4G -- sleep 30
wait_eq 5 2 lease_count
user_id=$(gs leases --json | jq ".[] | select(.user == \"$USER2\") | .id")
region=$(gs leases --json | jq -r ".[] | select(.id == $user_id) | .region")
root_region=$(gs leases --json | jq -r ".[] | select(.id == $root_id) | .region")
expect_eq "$region" "gpushared:$user_id:$GPUSHARE_SOCKET" "the user's region"
expect_eq "$(runuser -u "$USER2" -- "$TOOL" join "$region")" "joined lease $user_id" "the user joins their lease"
expect_eq "$(runuser -u "$USER2" -- "$TOOL" join "$root_region" 2>&1)" \
  "gs-daemon-tool join: lease $root_id belongs to another user" "the user joins root's lease"
[[ -z $(find "$WORK/state" -newer "$WORK/gpushare.conf" -not -name 'state.db*' -not -name gpushared.pid -not -path "$WORK/state/sched/*" -not -type d) ]] ||
  fail "files other than the ledger under the state directory: $(ls -R "$WORK/state")"
pass "socket 0666; regions are the daemon's (no file), joined by their user only"

# Listing: the user sees only their lease; status shows root's only as a count.
expect_eq "$(as_user2 leases --json | jq -c '[.[].id]')" "[$user_id]" "the user's leases"
status=$(as_user2 status --json)
expect_eq "$(jq -c '[.gpus[0].leases[].id]' <<<"$status")" "[$user_id]" "leases detailed to the user"
expect_eq "$(jq -c '.gpus[0].others' <<<"$status")" "{\"leases\":1,\"memory_limit\":$((10 << 30))}" "others"
for out in "$status" "$(as_user2 status)" "$(as_user2 leases)" "$(as_user2 top --iterations 1)"; do
  grep -q "$secret" <<<"$out" && fail "root's command leaked to the user: $out"
done
expect_eq "$(gs leases --json | jq length)" 2 "leases root sees"
grep -q "$secret" <<<"$(gs leases)" || fail "root does not see its own lease's command"
grep -q "$secret" <<<"$(gs status --json)" || fail "root's status does not have its own lease's command"
pass "the user sees only their own lease in detail; root sees all"

# Releasing: not another user's lease; root may release any.
set +e
out=$(as_user2 release "$root_id" 2>&1)
rc=$?
set -e
expect_eq "$rc" 1 "exit status of releasing another user's lease"
expect_eq "$out" "gpushare: lease $root_id belongs to another user" "message"
expect_eq "$(lease_count)" 2 "leases after the refused release"
gs release "$user_id" >/dev/null
wait_eq 5 1 lease_count
pass "the user cannot release root's lease; root can release the user's"

# A forged request cannot claim another identity: uid in a request is refused unless the caller
# is root (SO_PEERCRED decides).
for field in '"uid":0' '"user":"root"' '"uid":0,"gid":0'; do
  out=$(printf '{"op":"acquire","gpu_memory":"1G",%s}\n' "$field" | runuser -u "$USER2" -- "$TOOL" send "$GPUSHARE_SOCKET" 500)
  grep -q '"code":"permission_denied"' <<<"$out" || fail "a request with $field was not refused: $out"
done
expect_eq "$(lease_count)" 1 "leases after the refused requests"
pass "requests of a user cannot name a uid, gid or user (SO_PEERCRED decides)"

# Root may ask on behalf of a user (as the Slurm plugin does): the lease, its region and its
# listing are the user's, while root's connection holds it; pinned to GPU 0 by "gpus_at".
uid2=$(id -u "$USER2")
gid2=$(id -g "$USER2")
printf '{"op":"acquire","gpu_memory":"2G","uid":%s,"gpus_at":[0],"command":"for the user"}\n' "$uid2" |
  "$TOOL" send "$GPUSHARE_SOCKET" 30000 >"$WORK/behalf.out" &
holder=$!
user2_leases() {
  as_user2 leases --json | jq -c '[.[] | [.user, .uid, .command, .gpus[0].index, .memory_limit]]'
}
wait_eq 5 "[[\"$USER2\",$uid2,\"for the user\",0,$((2 << 30))]]" user2_leases
behalf_region=$(as_user2 leases --json | jq -r '.[0].region')
expect_eq "$(runuser -u "$USER2" -- "$TOOL" join "$behalf_region" | cut -d' ' -f1)" joined "the user joins the lease root asked for"
expect_eq "$(as_user2 leases --json | jq -c '.[0].request')" '{"gpu_memory":"2G","gpus_at":[0]}' "request view"
kill "$holder"
wait "$holder" 2>/dev/null || true
wait_eq 5 "[]" user2_leases
grep -q '"state":"granted"' "$WORK/behalf.out" || fail "no grant: $(cat "$WORK/behalf.out")"
pass "root acquires on behalf of a user: the lease and its region are the user's; it ends with root's connection"

# A name works as well as a uid; an unknown name is a bad request.
out=$(printf '{"op":"acquire","gpu_memory":"1G","wait":false,"user":"%s"}\n' "$USER2" | "$TOOL" send "$GPUSHARE_SOCKET" 300)
grep -q "\"user\":\"$USER2\",\"uid\":$uid2" <<<"$out" || fail "no lease for the user by name: $out"
out=$(printf '{"op":"acquire","gpu_memory":"1G","user":"no-such-user-%s"}\n' "$RANDOM" | "$TOOL" send "$GPUSHARE_SOCKET" 300)
grep -q '"code":"bad_request","message":"no user \\"no-such-user-' <<<"$out" || fail "an unknown user was not refused: $out"
pass "a lease on behalf of a user named by name; an unknown name is refused"
