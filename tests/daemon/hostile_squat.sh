# SPDX-License-Identifier: Apache-2.0
# Issue 34, finding 3: key squatting. A key belongs to the user whose lease it names:
#  - root's `gpushare cdi add web` over a key cdi/web the second user made is refused with one
#    line naming the owner, non-zero, nothing changed (it adopted the user's 1 MiB lease before);
#    root takes it only by saying whose it is (--user), and then it is the user's lease;
#  - the owner's release (or its own lease's time limit) never signals a process of another uid:
#    not root's process in a cgroup root tied to the lease, not a third uid's process of that
#    cgroup holding its region (both got SIGTERM before); the owner's own processes are stopped as ever; root's
#    release, and the time limit of a lease root made for the user, stop them all;
#  - keys under k8s/ are the DRA driver's: the second user's acquire of one is refused with one
#    line (through the API and gpushare cdi), root and lease_admin_group make them.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
ADMINS=gpushare-test-squat
CONFIG=$'[daemon]\nkill_grace = 1\nlease_admin_group = '$ADMINS
start_daemon
T=$GS_BUILD_DIR/tests
THIRD_UID=65534 # a third uid (nobody's on most systems; no passwd entry is needed)
send() { # REQUEST: on one connection as root, the first reply
  printf '%s\n' "$1" | "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 500 | sed -n 1p
}
send2() { # REQUEST: on one connection as the second user, the first reply
  printf '%s\n' "$1" | as_user2 "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 500 | sed -n 1p
}
# run_status CMD...: "STATUS:OUTPUT" of CMD (stdout and stderr).
run_status() {
  local out rc
  set +e
  out=$("$@" 2>&1)
  rc=$?
  set -e
  echo "$rc:$out"
}
# "${AS_UID2[@]}" / "${AS_THIRD[@]}" CMD...: CMD as that uid, execed (its pid is CMD's, unlike
# runuser's child); arrays, so that bg can run them.
JOB_ENV=(env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}")
AS_UID2=(setpriv --reuid="$UID2" --regid="$UID2" --clear-groups "${JOB_ENV[@]}")
AS_THIRD=(setpriv --reuid="$THIRD_UID" --regid="$THIRD_UID" --clear-groups "${JOB_ENV[@]}")
leases_seen() { # what matters of every lease: id, user, key, memory, state
  gs leases --json | jq -c '[.[] | [.id, .user, .key, .gpu_memory, .state]]'
}
attach() { # KEY: root ties the test's cgroup to the lease of KEY
  expect_eq "$(send "{\"op\":\"attach\",\"key\":\"$1\",\"cgroup\":\"$CG\"}" | jq -r .cgroup)" "$CG" "root's attach to $1"
}
install -d -m 700 -o "$USER2" "$WORK/cdi2"
mkdir "$WORK/cdi"

# 1. The squat: the second user takes cdi/web with 1 MiB; root's cdi add web is refused.
gs2 cdi add web --gpu-memory 1M --dir "$WORK/cdi2" >/dev/null
id=$(user2_lease)
before=$(leases_seen)
expect_eq "$(run_status gs cdi add web --gpu-memory 8G --dir "$WORK/cdi")" \
  "1:gpushare: key cdi/web belongs to user $USER2 (uid $UID2); release it as that user or pick another name" \
  "root's cdi add over the second user's key"
expect_eq "$(ls -A "$WORK/cdi")" "" "root's specs after the refusal"
expect_eq "$(leases_seen)" "$before" "the leases after the refusal"
r=$(send '{"op":"acquire","key":"cdi/web","gpu_memory":"8G"}')
expect_eq "$(jq -r .error.code <<<"$r")" permission_denied "root's acquire of the key through the API"
send '{"op":"acquire","key":"cdi/root-web","gpu_memory":"1M"}' >/dev/null
r=$(send2 '{"op":"acquire","key":"cdi/root-web","gpu_memory":"1M"}')
expect_eq "$(jq -c '[.error.code, .error.message]' <<<"$r")" \
  '["permission_denied","key cdi/root-web belongs to another user; pick another name"]' "the second user's acquire of root's key"
send '{"op":"release","key":"cdi/root-web"}' >/dev/null
pass "root's cdi add over another user's key: one line naming the owner, status 1, nothing changed"

# Root adopts only by saying whose the lease is: then it is the user's, as it was.
expect_eq "$(gs cdi add web --gpu-memory 8G --user "$USER2" --dir "$WORK/cdi" --json | jq -c '[.existing, .lease.id, .lease.user]')" \
  "[true,$id,\"$USER2\"]" "root's cdi add web --user $USER2"
rm "$WORK/cdi/"*
expect_eq "$(leases_seen)" "$before" "the leases after the explicit adoption"
pass "root adopts another user's key only with --user, and the lease stays that user's"

# 2. The release: root's process in a cgroup root tied to the lease, a third uid's process in it
# holding its region through the lease's socket (which serves the cgroup's processes only, issue
# 34), and one of the second user's in the cgroup.
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then CG_ROOT=/sys/fs/cgroup; else CG_ROOT=/sys/fs/cgroup/pids; fi
CG=/gs-squat-test-$$
mkdir "$CG_ROOT$CG"
trap 'rc=$?; stop_bg; rmdir "$CG_ROOT$CG" 2>/dev/null || true; (exit $rc); cleanup' EXIT
region=$(send2 '{"op":"acquire","key":"cdi/web","gpu_memory":"1M"}' | jq -r .env.GPUSHARE_REGION)
bg sleep 300
root_proc=$!
bg "${AS_UID2[@]}" sleep 300
user2_proc=$!
echo "$root_proc" >"$CG_ROOT$CG/cgroup.procs"
echo "$user2_proc" >"$CG_ROOT$CG/cgroup.procs"
attach cdi/web
bg bash -c 'echo $$ >"$0" && exec "$@"' "$CG_ROOT$CG/cgroup.procs" \
  "${AS_THIRD[@]}" GPUSHARE_REGION="$region" "$TOOL" charge 1K 300 >"$WORK/third.out"
third_proc=$!
wait_until 10 grep -q "charged 1024" "$WORK/third.out"
# (Through the API: gpushare release waits for the end, which the third uid's process holds.)
expect_eq "$(send2 '{"op":"release","key":"cdi/web"}' | jq -r .state)" ending "the second user's release"
wait_until 5 process_gone "$user2_proc"
sleep 2.5 # past kill_grace (1 s): the SIGKILL went out too
process_gone "$root_proc" && fail "the second user's release stopped root's process $root_proc"
process_gone "$third_proc" && fail "the second user's release stopped uid $THIRD_UID's process $third_proc"
expect_eq "$(lease_state "$id")" ending "the lease while uid $THIRD_UID's process holds its region"
kill -TERM "$third_proc"
wait_eq 5 gone lease_state "$id"
pass "the owner's release stopped its own process, not root's nor a third uid's"

# Root's release stops every process of the lease, whoever's.
send2 '{"op":"acquire","key":"cdi/root-stops","gpu_memory":"1M"}' >/dev/null
attach cdi/root-stops
send '{"op":"release","key":"cdi/root-stops"}' >/dev/null
wait_until 5 process_gone "$root_proc"
pass "root's release of the user's lease stopped root's process in it"

# Time limits: the user's own lease's stops only the user's processes; one root made for the
# user (root's terms) stops every process of it.
bg sleep 300
root_proc=$!
echo "$root_proc" >"$CG_ROOT$CG/cgroup.procs"
id=$(send2 '{"op":"acquire","key":"cdi/timed","gpu_memory":"1M","time_limit_ms":1000}' | jq .lease.id)
attach cdi/timed
wait_eq 8 gone lease_state "$id"
sleep 1.5
process_gone "$root_proc" && fail "the time limit of the second user's lease stopped root's process"
id=$(send "{\"op\":\"acquire\",\"key\":\"cdi/timed-for\",\"gpu_memory\":\"1M\",\"time_limit_ms\":1000,\"user\":\"$USER2\"}" | jq .lease.id)
attach cdi/timed-for
wait_until 8 process_gone "$root_proc"
wait_eq 5 gone lease_state "$id"
pass "time limits: the user's own lease's spared root's process, the lease root made for the user stopped it"

# 3. k8s/ keys: the DRA driver's (root or lease_admin_group) only.
k8s=k8s/8d1f9a52-1c7e-4b0a-9e3e-5d2f6c7a8b90/gpu
msg="keys under k8s/ are the DRA driver's: only root or lease_admin_group may make one"
r=$(send2 "{\"op\":\"acquire\",\"key\":\"$k8s\",\"gpu_memory\":\"1M\"}")
expect_eq "$(jq -c '[.error.code, .error.message]' <<<"$r")" "[\"permission_denied\",\"$msg\"]" "the second user's k8s/ key"
expect_eq "$(run_status gs2 cdi add k8s --key "$k8s" --gpu-memory 1M --dir "$WORK/cdi2")" "1:gpushare: $msg" \
  "the second user's cdi add with a k8s/ key"
expect_eq "$(ls -A "$WORK/cdi2")" "gpushare.io_gpu-web.json" "the second user's specs after the refusal"
wait_eq 5 "[]" leases_seen
expect_eq "$(send "{\"op\":\"acquire\",\"key\":\"$k8s\",\"gpu_memory\":\"1M\"}" | jq -r .state)" granted "root's k8s/ key"
r=$(send2 "{\"op\":\"acquire\",\"key\":\"$k8s\",\"gpu_memory\":\"1M\"}")
expect_eq "$(jq -r .error.code <<<"$r")" permission_denied "the second user's acquire of root's k8s/ key"
getent group "$ADMINS" >/dev/null || groupadd --system "$ADMINS"
usermod -a -G "$ADMINS" "$USER2"
r=$(send2 '{"op":"acquire","key":"k8s/admin-made/gpu","gpu_memory":"1M"}')
gpasswd -d "$USER2" "$ADMINS" >/dev/null
expect_eq "$(jq -r .state <<<"$r")" granted "a lease_admin_group member's k8s/ key"
pass "k8s/ keys: the second user refused with one line, root and lease_admin_group served"
daemon_alive || fail "the daemon died"
