# SPDX-License-Identifier: Apache-2.0
# Issue 34, acceptance 1 with a real podman container: a container lease's capability is never
# the only thing between a user and that lease.
#  - the spec gpushare cdi add writes for the container runtime is root's alone (0600: podman,
#    running as root, still reads it);
#  - another user reads the lease's socket path where the kernel shows it to everyone, the root
#    of the bind mount at /run/gpushare in /proc/PID/mountinfo of the container's process, and
#    joins nothing through it: the region join, compute_join, hello and list are refused with one
#    line each; so is root's own process outside the container;
#  - the container's processes are served as before (its CUDA process joined; list from a
#    `podman exec` process, in the container's cgroup too).
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
T=$GS_BUILD_DIR/tests
HOLD=$T/cuda_progs/memhold
make_image "$HOLD" "$T/gs-daemon-tool"
start_node
gs cdi add a --gpu-memory 4G --dir "$CDI" >/dev/null
A=$(lease_of_key cdi/a)
UUID=$(gs status --json | jq -r '.gpus[0].uuid')
SPEC=$CDI/gpushare.io_gpu-a.json
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

expect_eq "$(stat -c %a "$SPEC")" 600 "mode of the CDI spec"
if "${NOBODY[@]}" cat "$SPEC" >/dev/null 2>&1; then
  fail "another user read the CDI spec $SPEC"
fi
pass "the CDI spec is mode 0600: another user cannot read it"

ct run -d --name a "${SIM[@]}" --device gpushare.io/gpu=a --rootfs "$ROOTFS" "$HOLD" 1 >/dev/null
pid_a=$(ct_pid a)
joined() {
  gs status --processes --json | jq --argjson p "$pid_a" '[.gpus[0].processes[] | select(.pid == $p) | .lease] | first // "none"'
}
wait_eq 5 "$A" joined
expect_eq "$(printf '%s\n' '{"op":"list"}' | ct exec -i a "$T/gs-daemon-tool" send /run/gpushare/lease.sock 500 |
  sed -n 1p | jq -c '[.leases[].id]')" "[$A]" "list from a podman exec process of container a"
pass "container a's processes are served through its socket (host pid $pid_a joined lease $A)"

# The attack: the bind mount's root in the container process's mountinfo names the lease's
# directory; gpushared's main socket names the directory it is under.
root=$("${NOBODY[@]}" cat "/proc/$pid_a/mountinfo" | awk '$5 == "/run/gpushare" { print $4 }')
[[ $root == */leases/* ]] || fail "no lease directory in container a's mountinfo as another user: \"$root\""
STOLEN=$(dirname "$GPUSHARE_SOCKET")/leases/${root##*/}/lease.sock
[[ -S $STOLEN ]] || fail "no socket at $STOLEN"
MSG="lease $A's socket serves only the processes of its container (the lease's cgroup)"
refused=$(printf 'join: %s\ncompute_join: %s' "$MSG" "$MSG")
expect_eq "$("${NOBODY[@]}" "$T/gs-hostile" steal "$STOLEN" "$A" "$UUID")" "$refused" \
  "another user joining lease $A by the path in container a's mountinfo"
for req in '{"op":"hello"}' '{"op":"list"}'; do
  reply=$(printf '%s\n' "$req" | "${NOBODY[@]}" "$T/gs-daemon-tool" send "$STOLEN" 500)
  expect_eq "$(sed -n 1p <<<"$reply" | jq -r .error.code) $(sed -n 2p <<<"$reply")" "permission_denied TIMEOUT" \
    "another user asking $req by the stolen path"
done
expect_eq "$("$T/gs-hostile" steal "$STOLEN" "$A" "$UUID")" "$refused" \
  "root's process outside the container joining by the stolen path"
pass "the path in container a's mountinfo ($root) joins nothing: another user's and root's joins refused with one line"

expect_eq "$(joined)" "$A" "container a's process after the attempts"
grep -q "(pid [0-9]*) on lease $A's socket: not a process of its cgroup" "$WORK/daemon.log" ||
  fail "no log line of the refused connections"
pass "container a's process is still under lease $A; the refusals are logged"
