# SPDX-License-Identifier: Apache-2.0
# Issue 27: gpusim as a node daemon's. gpushared, with GPUSIM_STATE unset, keeps its simulated
# node in its runtime directory and passes it to every lease, with gpusim's directory ahead of
# PATH and LD_LIBRARY_PATH: a second user's job, with none of those set, gets its slice on the
# daemon's node, nvidia-smi is on its PATH and answers --query-gpu as NVIDIA's does, and status
# --processes shows the job under its lease. gpusim never rebuilds a node that a process has
# open: another GPUSIM_DEVICES is refused with one line; GPUSIM_DEVICES unset takes the node as
# it is.
source "$(dirname "$0")/../daemon/lib.sh"
source "$(dirname "$0")/user2.sh"
PROGS=$GS_BUILD_DIR/tests/cuda_progs
export GPUSIM_DEVICES=A100-40GB,H100-80GB
unset GPUSIM_STATE
CONFIG="[daemon]
runtime_dir = $WORK/run"
start_daemon
NODE=$WORK/run/gpusim
expect_eq "$(gs status --json | jq -r .node.gpusim_state)" "$NODE" "the daemon's simulated node"
[[ -f $NODE/node ]] || fail "no node file in $NODE"

# Issue 37, item 5: a second gpushared with another runtime_dir (and socket, state directory) would
# simulate a second node of this host: it is refused with one line naming the first, exit 75, and
# makes no node (one that starts is stopped after 5 s: status 124).
printf '[daemon]\nruntime_dir = %s\n' "$WORK/run2" >"$WORK/other.conf"
set +e
timeout 5 "$BIN/gpushared" --config "$WORK/other.conf" --state-dir "$WORK/state2" --socket "$WORK/other.sock" \
  --metrics-listen 127.0.0.1:0 >"$WORK/second.log" 2>&1
rc=$?
set -e
expect_eq "$rc" 75 "exit status of a second gpushared with another runtime_dir"
expect_eq "$(sed 's/^.*gpushared\[[0-9]*\]: //' "$WORK/second.log")" \
  "error: gpushared already running (pid $DAEMON_PID): it simulates this host's GPUs (gpusim node $NODE)" \
  "the second gpushared's one line"
[[ ! -e $WORK/run2/gpusim ]] || fail "the refused gpushared made a second node: $(ls -R "$WORK/run2")"
pass "a second gpushared with another runtime_dir is refused: $(cat "$WORK/second.log")"

# The second user's environment: no GPUSIM_*, no LD_LIBRARY_PATH, a PATH without gpusim.
bare() {
  runuser -u "$USER2" -- env -i PATH=/usr/bin:/bin GPUSHARE_SOCKET="$GPUSHARE_SOCKET" \
    LD_PRELOAD="$JOB_PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$BIN/gpushare" "$@"
}
out=$(bare run --gpu-memory 4G --gpu-type H100 -- nvidia-smi --query-gpu=index,name,memory.total,memory.used --format=csv)
expect_eq "$out" "index, name, memory.total [MiB], memory.used [MiB]
0, NVIDIA H100-80GB, 4096 MiB, 0 MiB" "nvidia-smi --query-gpu in the second user's lease"
out=$(bare run --gpu-memory 4G --gpu-type H100 -- nvidia-smi --query-gpu=memory.total,uuid --format=csv,noheader,nounits)
expect_eq "$out" "4096, $(gs status --json | jq -r '.gpus[1].uuid')" "--format=csv,noheader,nounits"
pass "in a lease, gpusim's nvidia-smi is on PATH and answers --query-gpu with the lease's GPU and slice"

out=$(bare run --gpu-memory 1G -- "$PROGS/meminfo")
read -r _ total <<<"$out"
expect_eq "$total" $((1 << 30)) "the total a 1G job of the second user saw"
bg runuser -u "$USER2" -- env -i PATH=/usr/bin:/bin GPUSHARE_SOCKET="$GPUSHARE_SOCKET" \
  LD_PRELOAD="$JOB_PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$BIN/gpushare" run --gpu-memory 8G \
  --name held -- "$PROGS/memhold" 3
wait_eq 10 1 lease_count
lease=$(gs leases --json | jq '.[0].id')
procs() {
  bare status --processes --json | jq -c "[.gpus[].processes[] | select(.lease == $lease) | .user]"
}
wait_eq 10 "[\"$USER2\"]" procs
grep -Eq "^ +[0-9]+ +[^ ]+ +$lease +[0-9.]+G  memhold$" <<<"$(bare status --processes)" ||
  fail "status --processes does not show the job under lease $lease: $(bare status --processes)"
pass "a second user's job with no gpusim settings ran on the daemon's node: status --processes shows it under lease $lease"

# Another device list for the node the daemon has open: refused with one line, node unchanged.
out=$(GPUSIM_STATE=$NODE GPUSIM_DEVICES=T4-16GB "$GS_BUILD_DIR/sim/nvidia-smi" -L 2>&1)
expect_eq "$(grep -c gpusim: <<<"$out")" 1 "gpusim's lines: $out"
grep -q "^gpusim: node $NODE/node has devices \"A100-40GB,H100-80GB\" and is in use (a running gpushared or job has it open): not rebuilt for GPUSIM_DEVICES=\"T4-16GB\" (unset it to use the node as it is)$" <<<"$out" ||
  fail "gpusim's refusal: $out"
expect_eq "$(grep -c '^GPU ' <<<"$out")" 2 "GPUs listed: $out"
out=$(GPUSIM_STATE=$NODE env -u GPUSIM_DEVICES "$GS_BUILD_DIR/sim/nvidia-smi" -L 2>&1)
expect_eq "$(grep -c '^GPU ' <<<"$out")" 2 "GPUs listed with GPUSIM_DEVICES unset: $out"
grep -q gpusim: <<<"$out" && fail "a line with GPUSIM_DEVICES unset: $out"
expect_eq "$(gs status --json | jq -r '[.gpus[].name] | join(",")')" "NVIDIA A100-40GB,NVIDIA H100-80GB" "the daemon's GPUs after"
pass "gpusim never rebuilds a node a process has open; GPUSIM_DEVICES unset takes it as it is"

# Issue 37, item 3: an mps GPU on gpusim with mps_control left at its default gets gpusim's own
# control program, beside the library loaded (the packaged simulator keeps it off PATH): the
# README's steps need no mps_control line. --check-config says valid, the GPU's MPS control
# daemon comes up, and an MPS job runs. (The second user's held job first: its lease would
# come back after the restart and keep GPU 1 for that user.)
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
wait_eq 10 0 lease_count
stop_daemon
CONFIG="[daemon]
runtime_dir = $WORK/run
[gpu:1]
mode = mps"
printf '%s\n' "$CONFIG" >"$WORK/gpushare.conf"
out=$("$BIN/gpushared" --check-config --config "$WORK/gpushare.conf" 2>&1) ||
  fail "--check-config with mode = mps and mps_control left at its default: $out"
start_daemon
mps_state() { gs status --json | jq -r '.gpus[1].mps.state'; }
wait_eq 10 up mps_state
expect_eq "$(gs status --json | jq -r .node.mps_control)" "$GS_BUILD_DIR/sim/nvidia-cuda-mps-control" "the MPS control program the daemon uses"
out=$(gs run --mode mps --gpu-memory 4G --compute 30 -- "$PROGS/meminfo")
read -r _ total <<<"$out"
expect_eq "$total" $((4 << 30)) "the total an MPS job saw"
pass "mode = mps on gpusim without mps_control: gpusim's control daemon serves GPU 1, an MPS job ran"
