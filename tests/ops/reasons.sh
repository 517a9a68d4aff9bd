# SPDX-License-Identifier: Apache-2.0
# Issue 27, acceptance 2: every reason of the issue, reproduced with the state that caused it,
# reads true. A table: each row makes a node (gpusim devices, gpushare.conf), puts the state on
# it (leases of a second user or of root, a process of no lease), asks with `gpushare run ARGS
# --no-wait` and expects the exact line; a row that waits (without --no-wait) expects the same
# reason in gpushare status. The unit test test_daemon_reasons covers each reason of the pool.
source "$(dirname "$0")/../daemon/lib.sh"
source "$(dirname "$0")/user2.sh"
source "$(dirname "$0")/../daemon/modes_lib.sh"
HOG=$GS_BUILD_DIR/tests/gs-gpu-hog
N=0

# node DEVICES CONFIG: a fresh gpusim node with DEVICES and a gpushared with CONFIG on it.
node() {
  [[ -z $DAEMON_PID ]] || stop_daemon
  for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  BG_PIDS=()
  N=$((N + 1))
  export GPUSIM_DEVICES=$1 GPUSIM_STATE=$WORK/sim$N
  AS_USER2=(runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" GPUSIM_STATE="$GPUSIM_STATE"
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH" LD_PRELOAD="$JOB_PRELOAD")
  CONFIG="$MPS_DAEMON_CONFIG
$2"
  start_daemon
}

# hold2 ARGS...: a lease of the second user (its job sleeps); sets $lease.
hold2() {
  local before
  before=$(lease_count)
  bg "${AS_USER2[@]}" "$BIN/gpushare" run "$@" -- sleep 600
  wait_eq 5 $((before + 1)) lease_count
  lease=$(newest_lease)
}

# refused LINE ARGS...: gpushare run ARGS --no-wait exits 75 and prints exactly LINE.
refused() {
  local want=$1
  shift
  expect_refused 75 "gpushare: no room for this lease now: $want" "$@" --no-wait
  pass "refused: $want"
}

# 1. An MPS GPU that serves another user's lease: MPS runs one user's clients at a time (it
# said "has 70% compute unpromised of the 0% it needs").
node H100-80GB $'[gpu:0]\nmode = mps'
wait_eq 5 up gpu_field 0 .mps.state
hold2 --gpu-memory 4G --compute 30
refused "GPU 0 (H100-80GB, mps) serves 1 lease of another user now: MPS runs one user's clients at a time" \
  --gpu-memory 4G
# Waiting, the same reason in status.
bg_gs run --gpu-memory 4G -- true
wait_eq 5 1 queue_length
expect_eq "$(gs status --json | jq -r '.queue.requests[0].reason')" \
  "GPU 0 (H100-80GB, mps) serves 1 lease of another user now: MPS runs one user's clients at a time" \
  "the waiting request's reason in status"
pass "waits: the same reason in gpushare status"

# 2. A MIG profile whose slots a leased instance holds (it said "43% compute unpromised of the
# 0% it needs").
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null 2>&1 || true
node A100-40GB $'[gpu:0]\nmode = mig'
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null
stop_daemon
start_daemon
hold2 --mig-profile 3g.20gb
refused "GPU 0 (A100-40GB, mig) has no room for a 7g.40gb instance: its slots are held by the 3g.20gb instance of lease $lease" \
  --mig-profile 7g.40gb

# 3. Whole T4s beside a process of no lease (it said "behind 0 requests ahead of it ... (0
# leases, 0 waiting)"). Root's process: the watchdog never kills root's processes of no lease.
node A100-40GB,T4-16GB $'[gpu:1]\noverprovision = 4'
bg env -u LD_PRELOAD CUDA_VISIBLE_DEVICES="$(gpu_field 1 .uuid)" "$HOG" hold 6 >"$WORK/hog.out"
wait_until 10 grep -qs '^held ' "$WORK/hog.out"
wait_until 5 sh -c "[ \"\$(\"$BIN/gpushare\" status --json | jq '.gpus[1].unmanaged | length')\" = 1 ]"
refused "GPU 1 (T4-16GB) is in use by processes of no lease (6.29 GiB, gpushare status --processes)" \
  --gpus 4 --gpu-type T4
hold2 --gpus 1 --gpu-type T4
refused "GPU 1 (T4-16GB) is in use by lease $lease ($USER2, 3.73 GiB), processes of no lease (6.29 GiB, gpushare status --processes)" \
  --gpus 4 --gpu-type T4
refused "GPU 1 (T4-16GB) has 1 of the 2 logical GPUs it needs free; held by lease $lease ($USER2, 3.73 GiB), processes of no lease (6.29 GiB, gpushare status --processes)" \
  --gpus 2 --gpu-type T4

# 4. A mode that only GPUs of other models have (it said "no GPU on this node is mode shared"
# while the T4 is).
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null 2>&1 || true
node A100-40GB,T4-16GB $'[gpu:0]\nmode = mig'
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null
stop_daemon
start_daemon
expect_refused 1 "gpushare: no GPU of this node that is an A100 is mode shared: GPU 0 (A100-40GB) is mode mig" \
  --gpu-memory 4G --mode shared --gpu-type A100
pass "refused: no GPU of this node that is an A100 is mode shared: GPU 0 (A100-40GB) is mode mig"

# 5. Memory and compute, with what holds them: the caller's own leases by id, another user's as
# a count (root sees every lease with its user).
node H100-80GB ""
hold --gpu-memory 40G --compute 50
mine=$lease
hold2 --gpu-memory 30G --compute 40
refused "GPU 0 (H100-80GB) has 9.18 GiB free of the 20 GiB it needs; held by leases $mine (root, 40 GiB), $lease ($USER2, 30 GiB)" \
  --gpu-memory 20G
refused "GPU 0 (H100-80GB) has 10% compute unpromised of the 20% it needs; promised to leases $mine (root, 50%), $lease ($USER2, 40%)" \
  --gpu-memory 1G --compute 20
expect_eq "$(gs2 run --gpu-memory 20G --no-wait -- true 2>&1)" \
  "gpushare: no room for this lease now: GPU 0 (H100-80GB) has 9.18 GiB free of the 20 GiB it needs; held by your lease $lease (30 GiB), 1 lease of another user (40 GiB)" \
  "the second user's reason"
pass "a user sees their own leases by id and others' as a count; root every lease with its user"
