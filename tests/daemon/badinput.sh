# SPDX-License-Identifier: Apache-2.0
# Acceptance 8: bad input gets one clear error and leaves the daemon unaffected: CLI values,
# malformed and oversized JSON lines, a client that sends nothing, a bad configuration.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
CONFIG=$'[daemon]\nidle_timeout = 1'
start_daemon

# expect_fail STATUS MESSAGE CMD...: CMD exits with STATUS and prints exactly MESSAGE.
expect_fail() {
  local status=$1 message=$2
  shift 2
  set +e
  local out
  out=$("$@" 2>&1)
  local rc=$?
  set -e
  expect_eq "$rc" "$status" "exit status of: $*"
  expect_eq "$out" "$message" "message of: $*"
}

expect_fail 2 'gpushare run: --gpu-memory: invalid memory size "0": must be above zero (see gpushare run --help)' \
  gs run --gpu-memory 0 -- true
expect_fail 2 'gpushare run: --gpu: invalid GPU fraction "1.5": must be above 0 and at most 1 (see gpushare run --help)' \
  gs run --gpu 1.5 -- true
expect_fail 2 'gpushare run: give only one of --gpus, --gpu, --gpu-memory and --mig-profile (see gpushare run --help)' \
  gs run --gpus 1 --gpu 0.5 -- true
expect_fail 2 'gpushare run: no command to run (see gpushare run --help)' gs run --gpus 1
expect_fail 2 'gpushare run: --timeout: invalid duration "soon": expected e.g. 30s, 500ms, 5m, 2h or 1d (see gpushare run --help)' \
  gs run --gpus 1 --timeout soon -- true
expect_fail 1 'gpushare: 100 GiB of GPU memory can never fit on this node (the largest GPU has 79.18 GiB leasable: its 79.65 GiB less 480 MiB its driver keeps)' \
  gs run --gpu-memory 100G -- true
expect_fail 1 'gpushare: only root may ask for a priority above 0' \
  env -u LD_PRELOAD setpriv --reuid=nobody --regid=nogroup --clear-groups "$BIN/gpushare" run --gpu-memory 1G --priority 5 -- true
expect_fail 2 'gpushare release: "abc" is not a lease ID (see gpushare leases)' gs release abc
expect_fail 1 'gpushare: no lease 999' gs release 999
expect_fail 2 'gpushare: unknown command "frobnicate" (see gpushare --help)' gs frobnicate
expect_fail 1 'gpushare: the shim /nonexistent/libgpushare.so is missing (set GPUSHARE_SHIM or shim = in gpushare.conf): refusing to run without the lease'"'"'s limits' \
  env GPUSHARE_SHIM=/nonexistent/libgpushare.so "${GS[@]}" run --gpu-memory 1G -- true
wait_eq 2 0 lease_count
expect_fail 1 "gpushare: cannot connect to gpushared at $WORK/none.sock: No such file or directory (is gpushared running?)" \
  gs status --socket "$WORK/none.sock"
pass "bad CLI values: one line each, exit 2 (usage) or 1"

# Bad lines on the socket: an error reply each, and the connection stays usable.
out=$(printf '{"op":"acquire","gpu_memory":0}\n{"op":"acquire","gpu":1.5}\nnot json\n{"op":"status"\n[1]\n{"op":"nope"}\n{"op":"hello"}\n' |
  "$TOOL" send "$GPUSHARE_SOCKET" 500)
expect_eq "$(grep -c '"ok":false' <<<"$out")" 6 "error replies"
grep -q '"code":"bad_request","message":"invalid memory size \\"0\\": must be above zero"' <<<"$out" || fail "--gpu-memory 0 on the socket: $out"
grep -q '"message":"invalid GPU fraction \\"1.5\\": must be above 0 and at most 1"' <<<"$out" || fail "gpu 1.5 on the socket"
grep -q '"code":"bad_json","message":"malformed JSON at column' <<<"$out" || fail "malformed JSON"
grep -q '"message":"a request must be a JSON object"' <<<"$out" || fail "a JSON array"
grep -q '"message":"unknown op \\"nope\\"' <<<"$out" || fail "an unknown op"
grep -q '"ok":true,"op":"hello"' <<<"$out" || fail "the connection did not survive bad lines"
pass "malformed and invalid requests: one error each, the connection goes on"

# A 1 MiB line: an error, then the connection is closed.
out=$("$TOOL" bigline "$GPUSHARE_SOCKET" 1048576 2000)
grep -q '"code":"too_long","message":"request line longer than 65536 bytes: closing the connection"' <<<"$out" ||
  fail "no too_long error for a 1 MiB line: $out"
expect_eq "$(tail -1 <<<"$out")" EOF "the connection after a 1 MiB line"
pass "a 1 MiB line: too_long, connection closed"

# A client that connects and sends nothing is closed after idle_timeout (1 s here), while the
# daemon keeps serving others.
start=$(date +%s%N)
bg "$TOOL" idle "$GPUSHARE_SOCKET" 5000 >"$WORK/idle.out"
idle=$!
for i in 1 2 3; do
  gs run --gpu-memory 1G --no-wait -- true || fail "the daemon stopped serving during an idle client"
done
wait "$idle"
took=$((($(date +%s%N) - start) / 1000000))
grep -q '"code":"idle_timeout","message":"no request within 1.0 s: closing the connection"' "$WORK/idle.out" ||
  fail "no idle_timeout error: $(cat "$WORK/idle.out")"
expect_eq "$(tail -1 "$WORK/idle.out")" EOF "the idle connection"
[[ $took -ge 900 && $took -lt 3000 ]] || fail "the idle client was closed after $took ms"
pass "a silent client gets idle_timeout after ${took} ms; others are served meanwhile"

# Still healthy: a lease works and the daemon stops cleanly.
gs run --gpu-memory 79G --no-wait -- true || fail "the daemon is unwell after bad input"
stop_daemon
pass "the daemon is unaffected"

# A bad configuration: one line naming file:line, exit 78 (EX_CONFIG), nothing started.
bad_config() {
  printf '%s\n' "$1" >"$WORK/bad.conf"
  set +e
  out=$("$BIN/gpushared" --config "$WORK/bad.conf" --state-dir "$WORK/state2" --socket "$WORK/bad.sock" \
    --metrics-listen 127.0.0.1:0 2>&1)
  rc=$?
  set -e
  expect_eq "$rc" 78 "gpushared exit status for: $1"
  expect_eq "$(sed -E 's/^[0-9T:.+-]+ //; s/^gpushared\[[0-9]*\]: //' <<<"$out" | grep -v -e '^info: ' -e '^warn: ')" "$2" "gpushared message for: $1"
}
bad_config $'[gpu:all]\noverprovision = 0' "error: $WORK/bad.conf:2: overprovision \"0\" must be a whole number from 1 to 64"
bad_config $'[daemon]\nsockets = /x' "error: $WORK/bad.conf:2: unknown key \"sockets\" in [daemon] (socket, state_dir, runtime_dir, metrics_listen, nvml_library, shim, mps_control, idle_timeout, queue_aging, kill_grace, watch_interval, watch_tolerance, enforce, max_connections_per_user, max_queued_per_user, max_output_per_connection, max_output_per_user, max_leases_per_user, compute_members_per_lease, compute_members_per_user, compute_leases_per_user, history_max_rows, history_max_rows_per_user, history_max_days, metrics_users, lease_admin_group)"
bad_config $'[gpu:all]\nmode = mig\noverprovision = 2' "error: GPU 0: mode mig gives MIG instances: overprovision must be 1, not 2"
GPUSIM_STATE=$WORK/sim-l4 GPUSIM_DEVICES=L4-24GB bad_config $'[gpu:all]\nmode = mig' "error: GPU 0: mode mig, but the GPU (NVIDIA L4-24GB) has no MIG"
pass "bad configurations: one line with file:line, exit 78"
