# SPDX-License-Identifier: Apache-2.0
# Issue 21, acceptance 3, 4 and 5, with real podman containers on gpusim:
#  3. a container's processes show under their lease in status --processes within 1 s; one that
#     bypasses the shim puts the lease over its limit (and is killed under enforce = kill);
#  4. kill -9 of gpushared while two containers run: after the restart both leases are there
#     with their keys, an acquire with the same key returns the same lease; a container's exit
#     ends its lease and frees its memory within 1 s;
#  5. a process of another container, or another user, cannot join, see or release the lease;
#     a forged key or capability is refused.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
T=$GS_BUILD_DIR/tests
HOLD=$T/cuda_progs/memhold
make_image "$HOLD" "$T/gs-daemon-tool"
CONFIG=$'[daemon]\nenforce = report'  # (the default is kill: here the bypass must stay to be seen)
start_node
gs cdi add a --gpu-memory 4G --dir "$CDI" >/dev/null
gs cdi add b --gpu-memory 4G --dir "$CDI" >/dev/null
A=$(lease_of_key cdi/a)
B=$(lease_of_key cdi/b)

# --- 3: the container's process under its lease within 1 s of its start.
# (a: the devices in docs/containers.md's order, gpusim's node first; b: the other order. Both
# work: the lease's spec leaves gpusim's GPUSIM_STATE to gpusim's device, issue 37, item 2.)
ct run -d --name a "${SIM[@]}" --device gpushare.io/gpu=a --rootfs "$ROOTFS" "$HOLD" 1 >/dev/null
started=$(now_ms)
pid_a=$(ct_pid a)
lease_of_pid() {
  gs status --processes --json | jq --argjson p "$1" '[.gpus[0].processes[] | select(.pid == $p) | .lease] | first // "none"'
}
until [[ $(lease_of_pid "$pid_a") == "$A" ]]; do
  (($(now_ms) - started <= 3000)) || fail "container a's process $pid_a is not under lease $A: $(gs status --processes --json | jq -c '.gpus[0].processes')"
  sleep 0.02
done
took=$(($(now_ms) - started))
((took <= 1000)) || fail "container a's process appeared under its lease $took ms after the container started"
pass "container a's process (host pid $pid_a) is under lease $A in status --processes $took ms after it started"

ct run -d --name b --device gpushare.io/gpu=b "${SIM[@]}" --rootfs "$ROOTFS" "$HOLD" 1 >/dev/null
# A process of container a that bypasses the shim and takes 6 GiB. (podman 4.3's exec gives a
# process the container's own environment, not the CDI spec's: no LD_PRELOAD; gpusim's libcuda is
# named here as an image's would be found.)
ct exec -d a env LD_LIBRARY_PATH=/usr/lib/gpusim GPUSIM_STATE=/var/lib/gpusim "$HOLD" 6 >/dev/null
over() {
  gs status --json | jq --argjson id "$A" '.gpus[0].leases[] | select(.id == $id) | .over_limit > 0'
}
wait_eq 3 true over
pass "a process of container a that bypasses the shim puts lease $A over its limit in status"

# --- 4: kill -9 of gpushared with both containers running; restart with enforce = kill.
kill9_daemon
CONFIG=$'[daemon]\nenforce = kill'
start_daemon
keys=$(gs leases --json | jq -c 'map([.id, .key]) | sort')
expect_eq "$keys" "[[$A,\"cdi/a\"],[$B,\"cdi/b\"]]" "leases and keys after the restart"
mkdir "$WORK/cdi2"
again=$(gs cdi add again --key cdi/a --gpu-memory 4G --dir "$WORK/cdi2" --json | jq -c '[.lease.id, .existing]')
expect_eq "$again" "[$A,true]" "a second acquire with key cdi/a"
pass "after kill -9 and a restart, leases $A and $B are there with their keys; key cdi/a gives lease $A again"
bypass_gone() {
  [[ $(ct top a -eo args 2>/dev/null | grep -c "$HOLD 6") == 0 ]]
}
wait_until 3 bypass_gone
grep -q "lease $A was over its 4 GiB limit on GPU 0 (enforce = kill)" "$WORK/daemon.log" ||
  fail "no log line for the kill of the bypassing process"
kill -0 "$pid_a" || fail "container a's shim process was killed too"
pass "enforce = kill: the bypassing process in container a was killed; its shim process runs on"

# --- 5: from container b, through its own lease socket: only lease B, and not all of it.
from_b() {
  printf '%s\n' "$@" | ct exec -i b "$T/gs-daemon-tool" send /run/gpushare/lease.sock 500
}
out=$(from_b '{"op":"list"}')
expect_eq "$(sed -n 1p <<<"$out" | jq -c '[.leases[].id]')" "[$B]" "leases container b sees"
for req in "{\"op\":\"join\",\"lease\":$A}" '{"op":"release","key":"cdi/a"}' "{\"op\":\"release\",\"lease\":$B}" \
  '{"op":"status"}' '{"op":"acquire","gpu_memory":"1G"}' '{"op":"attach","key":"cdi/a","cgroup":"/libpod_parent"}'; do
  reply=$(from_b "$req" | sed -n 1p)
  expect_eq "$(jq -r .error.code <<<"$reply")" permission_denied "container b asking $req"
done
expect_eq "$(ct exec b ls /run/gpushare)" lease.sock "what container b sees of gpushared"
pass "container b sees only its own lease through its socket; join, release, status, acquire and attach are refused"

# Another user on the host, through gpushared's main socket: nothing of root's keyed leases.
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups env GPUSHARE_SOCKET="$GPUSHARE_SOCKET")
as_nobody() {
  printf '%s\n' "$@" | "${NOBODY[@]}" "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 500 | sed -n 1p
}
expect_eq "$("${NOBODY[@]}" "$GS_BUILD_DIR/bin/gpushare" leases --json)" "[]" "leases another user sees"
for req in "{\"op\":\"join\",\"lease\":$A}" "{\"op\":\"release\",\"lease\":$A}" '{"op":"release","key":"cdi/a"}' \
  '{"op":"acquire","key":"cdi/a","gpu_memory":"1G"}'; do
  code=$(as_nobody "$req" | jq -r .error.code)
  [[ $code == permission_denied || $code == not_found ]] || fail "another user asking $req: $code"
done
set +e
msg=$("${NOBODY[@]}" "$GS_BUILD_DIR/bin/gpushare" release "$A" 2>&1)
rc=$?
set -e
[[ $rc != 0 && $(wc -l <<<"$msg") == 1 ]] || fail "another user's gpushare release $A: status $rc, \"$msg\""
pass "another user cannot join, see or release lease $A (\"$msg\")"

# Forged: a key nobody holds, a capability gpushared did not draw, a capability in a request.
expect_eq "$(as_nobody '{"op":"release","key":"cdi/forged"}' | jq -r .error.code)" not_found "release of a forged key"
forged=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
"$T/gs-daemon-tool" send "$WORK/leases/$forged/lease.sock" 200 </dev/null 2>/dev/null &&
  fail "a forged capability's socket answered"
reply=$(printf '%s\n' "{\"op\":\"acquire\",\"key\":\"cdi/x\",\"gpu_memory\":\"1G\",\"capability\":\"$forged\"}" |
  "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 500 | sed -n 1p)
expect_eq "$(jq -r .error.code <<<"$reply")" bad_request "an acquire that names its capability"
pass "a forged key, a forged capability and a capability in a request are refused"

# --- 4: a container's exit ends its lease and frees its memory within 1 s.
free_before=$(gs status --json | jq .gpus[0].memory_free)
freed() {
  [[ -z $(lease_of_key cdi/a) && $(($(gs status --json | jq .gpus[0].memory_free) - free_before)) == $((4 << 30)) ]]
}
ct kill a >/dev/null
stopped=$(now_ms)
until freed; do
  (($(now_ms) - stopped <= 3000)) || fail "lease $A or its memory still there 3 s after container a ended"
  sleep 0.02
done
took=$(($(now_ms) - stopped))
((took <= 1000)) || fail "lease $A ended and its memory was free $took ms after container a ended"
[[ ! -e $CDI/gpushare.io_gpu-a.json ]] || fail "container a's spec is still there"
pass "container a's exit ended lease $A, its 4 GiB free again, $took ms after the kill; its spec is gone"
