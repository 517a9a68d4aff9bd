# SPDX-License-Identifier: Apache-2.0
# Issue 34, finding 1, without containers (the mountinfo route: tests/containers/stolen.sh): a
# container lease's capability is never the only thing between a user and that lease.
#  - gpushare cdi add's spec is its writer's alone (0600): the second user cannot read the
#    lease's socket path in it (it was 0644);
#  - a path stolen anyway (read here as root, as a leak would give it) lets the second user join
#    nothing: join, compute_join, list and hello through it are refused with one line each, both
#    before the lease has a cgroup (its socket serves its user and root) and after (it serves the
#    cgroup's processes only, root's outside it included);
#  - a process in the lease's cgroup is served whatever its uid (the second user's, put there by
#    root), and the refused user's attempts are in the log, rate-limited.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
start_daemon
T=$GS_BUILD_DIR/tests
UUID=$(gs status --json | jq -r '.gpus[0].uuid')
mkdir "$WORK/cdi"
gs cdi add a --gpu-memory 1G --dir "$WORK/cdi" >/dev/null
SPEC=$WORK/cdi/gpushare.io_gpu-a.json
A=$(gs leases --json | jq -r '.[] | select(.key == "cdi/a") | .id')
DIR=$(jq -r '.devices[0].containerEdits.mounts[] | select(.containerPath == "/run/gpushare") | .hostPath' "$SPEC")
SOCK=$DIR/lease.sock
[[ -S $SOCK ]] || fail "no lease socket at $SOCK"

# The spec: its writer's alone.
expect_eq "$(stat -c %a "$SPEC")" 600 "mode of the CDI spec"
if as_user2 cat "$SPEC" >/dev/null 2>&1; then
  fail "the second user read the CDI spec $SPEC"
fi
pass "the CDI spec of gpushare cdi add is mode 0600: the second user cannot read it"

# steal_as WHO...: gs-hostile steal through the stolen path, as WHO (a command prefix).
steal_as() {
  "$@" "$HOSTILE" steal "$SOCK" "$A" "$UUID"
}
# on_socket REQUEST WHO...: REQUEST on the stolen path, as WHO; the reply's error code, and
# what came after it (TIMEOUT: nothing).
on_socket() {
  local req=$1 out
  shift
  out=$(printf '%s\n' "$req" | "$@" "$T/gs-daemon-tool" send "$SOCK" 500)
  echo "$(sed -n 1p <<<"$out" | jq -r '.error.code // "ok"') $(sed -n 2p <<<"$out")"
}
refused() { # MESSAGE: what gs-hostile steal prints when both joins are refused
  printf 'join: %s\ncompute_join: %s' "$1" "$1"
}

# No cgroup yet: the socket serves the lease's user (root) only.
NO_CG="lease $A's socket serves only its user's processes (no container is attached to it yet)"
expect_eq "$(steal_as as_user2)" "$(refused "$NO_CG")" "the second user joining lease $A by its path"
for req in '{"op":"hello"}' '{"op":"list"}'; do
  expect_eq "$(on_socket "$req" as_user2)" "permission_denied TIMEOUT" "the second user asking $req by the path"
done
expect_eq "$(steal_as env)" "$(printf 'join: joined lease %s, its region mapped read-write\ncompute_join: joined, a channel of its own' "$A")" \
  "root joining its own lease by the path"
pass "no cgroup yet: the second user's join, compute_join, hello and list by the path are refused; root's are served"

# A cgroup attached (as gpushare cdi hook attach does for a container): only its processes.
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then CG_ROOT=/sys/fs/cgroup; else CG_ROOT=/sys/fs/cgroup/pids; fi
CG=/gs-hostile-cdi-$$
mkdir "$CG_ROOT$CG"
trap 'rc=$?; rmdir "$CG_ROOT$CG" 2>/dev/null || true; (exit $rc); cleanup' EXIT
attached=$(printf '{"op":"attach","key":"cdi/a","cgroup":"%s"}\n' "$CG" |
  "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 500 | sed -n 1p | jq -r .cgroup)
expect_eq "$attached" "$CG" "the cgroup attached to lease $A"
IN_CG="lease $A's socket serves only the processes of its container (the lease's cgroup)"
expect_eq "$(steal_as as_user2)" "$(refused "$IN_CG")" "the second user joining lease $A by its path"
expect_eq "$(steal_as env)" "$(refused "$IN_CG")" "root's process outside the cgroup joining by the path"
for req in '{"op":"hello"}' '{"op":"list"}'; do
  expect_eq "$(on_socket "$req" as_user2)" "permission_denied TIMEOUT" "the second user asking $req by the path"
done
# in_cgroup CMD...: CMD in the lease's cgroup.
in_cgroup() {
  bash -c 'echo $$ >"$0" && exec "$@"' "$CG_ROOT$CG/cgroup.procs" "$@"
}
expect_eq "$(in_cgroup "${AS_USER2[@]}" "$HOSTILE" steal "$SOCK" "$A" "$UUID")" \
  "$(printf 'join: joined lease %s, its region mapped read-write\ncompute_join: joined, a channel of its own' "$A")" \
  "the second user's process in the lease's cgroup"
expect_eq "$(in_cgroup "${AS_USER2[@]}" "$T/gs-daemon-tool" send "$SOCK" 500 <<<'{"op":"list"}' | sed -n 1p | jq -c '[.leases[].id]')" \
  "[$A]" "list from the lease's cgroup"
pass "with a cgroup: only its processes are served (any uid); the second user's and root's outside it are refused"

grep -q "user $USER2 (pid [0-9]*) on lease $A's socket: not its user's and no cgroup attached; its requests are refused" "$WORK/daemon.log" ||
  fail "no log line of the refused connections"
lines=$(grep -c "user $USER2 (pid [0-9]*) on lease $A's socket" "$WORK/daemon.log" || true)
((lines <= 5)) || fail "$lines log lines for the second user's refused connections"
daemon_alive || fail "the daemon died"
pass "the refusals are logged ($lines lines for the second user's connections)"
