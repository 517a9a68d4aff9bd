# SPDX-License-Identifier: Apache-2.0
# Issue 27: status and top at most 80 columns on a node with an MPS and a MIG GPU (the MPS
# server's row, the MIG instances' rows, long pipe directories); COMMAND shows the program by
# its name (a path's directories go, the cut is at the right end); leases --json lists the
# waiting requests the text view shows; options only as written in full; 4gb is 4 GiB.
source "$(dirname "$0")/../daemon/lib.sh"
source "$(dirname "$0")/../daemon/modes_lib.sh"
export GPUSIM_DEVICES=A100-40GB,H100-80GB
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null
# A long runtime directory: the MPS pipe directory's path is long too.
mkdir -p "$WORK/runtime-directory"
CONFIG="[daemon]
runtime_dir = $WORK/runtime-directory
mps_control = $GS_BUILD_DIR/sim/nvidia-cuda-mps-control
[gpu:0]
mode = mig
[gpu:1]
mode = mps"
start_daemon
wait_eq 5 up gpu_field 1 .mps.state
mkdir -p "$WORK/some/deep/directory/of/the/user"
cp "$GS_BUILD_DIR/tests/cuda_progs/memhold" "$WORK/some/deep/directory/of/the/user/train_model"
bg_gs run --mig-profile 3g.20gb --name mig-job -- "$WORK/some/deep/directory/of/the/user/train_model" 1
wait_eq 5 1 lease_count
bg_gs run --gpu-memory 4gb --mode mps --name mps-job -- "$WORK/some/deep/directory/of/the/user/train_model" 1
wait_eq 5 2 lease_count
expect_eq "$(gs leases --json | jq '[.[] | select(.name == "mps-job") | .memory_limit] | .[0]')" \
  $((4 << 30)) "the memory of a --gpu-memory 4gb lease"
# One waiting request (MIG: a 7g.40gb needs the slots the 3g.20gb holds).
bg_gs run --mig-profile 7g.40gb --name waiter -- true
wait_eq 5 1 queue_length
wait_until 5 sh -c "\"$BIN/gpushare\" status --json | jq -e '.gpus[1].mps.servers | length > 0' >/dev/null"
for view in "status --processes" "top --processes --iterations 1"; do
  # shellcheck disable=SC2086
  out=$(gs $view)
  widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w }' <<<"$out")
  ((widest <= 80)) || fail "gpushare $view is $widest columns wide: $(awk 'length($0) > 80' <<<"$out")"
  grep -Eq '^ +[0-9]+ root +mig-job +[0-9.]+[MG]? / [0-9.]+G +[0-9]+% +- +train_model 1$' <<<"$out" ||
    fail "gpushare $view: the MIG lease's COMMAND: $(grep mig-job <<<"$out")"
  grep -q "MIG-" <<<"$out" || fail "gpushare $view: no MIG instance row"
  grep -q "MPS control daemon pid" <<<"$out" || fail "gpushare $view: no MPS row"
done
pass "status and top --processes: at most 80 columns with MPS and MIG rows; COMMAND is train_model 1"

# leases --json: the leases, then the waiting request as the text shows it.
expect_eq "$(gs leases --json | jq -c '[.[] | [.name, .state]]')" \
  '[["mig-job","active"],["mps-job","active"],["waiter","pending"]]' "leases --json"
expect_eq "$(gs leases --json | jq -r '.[2].reason')" \
  "$(gs status --json | jq -r '.queue.requests[0].reason')" "the pending row's reason"
grep -q "PENDING #1" <<<"$(gs leases)" || fail "leases: $(gs leases)"
pass "leases --json lists the waiting request (state pending) the text view shows"

# Options only as written in full.
expect_eq "$(gs run --gpu-mem 4G -- true 2>&1; echo "rc=$?")" \
  "gpushare run: unknown option \"--gpu-mem\" (did you mean --gpu-memory?) (see gpushare run --help)
rc=2" "an abbreviated option"
expect_eq "$(gs status --proc 2>&1; echo "rc=$?")" \
  "gpushare status: unknown option \"--proc\" (did you mean --processes?) (see gpushare status --help)
rc=2" "an abbreviated option of status"
expect_eq "$("$BIN/gpushared" --state "$WORK/x" 2>&1; echo "rc=$?")" \
  "gpushared: unknown option \"--state\" (did you mean --state-dir?)
rc=2" "an abbreviated option of gpushared"
pass "options are taken only as written in full"
