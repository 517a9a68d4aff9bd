# SPDX-License-Identifier: Apache-2.0
# Issue 27: gpushare plan takes jobs by their memory of one GPU (--job 10G): each takes that
# memory's share of each node type's GPU model (what CUDA sees of it), fits no type whose GPU is
# smaller, and needs the type's model.
source "$(dirname "$0")/../daemon/lib.sh"
out=$("$BIN/gpushare" plan --job 10Gx8 --node-type a100:gpus=1,price=3,model=A100-40GB \
  --node-type h100:gpus=1,price=8,model=H100-80GB)
grep -qx "workload: 8 jobs (8 sharing a GPU, 0 on whole GPUs, 0 CPU only), GPU demand 0.00 GPU and 80 GiB of GPU memory (jobs given by their memory)" <<<"$out" ||
  fail "the workload line: $out"
# 10 GiB of an A100-40GB's 40720 MiB is 252 milli: 3 jobs a GPU, 3 GPUs; of an H100's 81079 MiB
# 127 milli: 7 a GPU, 2 GPUs.
expect_eq "$(awk '/^a100/ {t=1} t && /^  gpushare / {print $2; exit}' <<<"$out")" 3 "A100 nodes"
expect_eq "$(awk '/^h100/ {t=1} t && /^  gpushare / {print $2; exit}' <<<"$out")" 2 "H100 nodes"
set +e
out=$("$BIN/gpushare" plan --job 50G --node-type a100:gpus=1,price=3,model=A100-40GB 2>&1)
rc=$?
set -e
expect_eq "$rc" 1 "exit status when no type fits"
grep -q "^  gpushare           job job-1 (50 GiB of one GPU, 0 milli-CPU, 0 MiB) fits no node of this type$" <<<"$out" ||
  fail "a job larger than the GPU: $out"
set +e
out=$("$BIN/gpushare" plan --job 10G --node-type t:gpus=1,price=1 2>&1 >/dev/null)
rc=$?
set -e
expect_eq "$rc:$out" '1:gpushare plan: node type t: the memory of its GPU model "gpu" is not known (give model=A100-40GB, T4, ...): job job-1 is given by its memory' "a type without a model"
pass "plan --job 10G: the share of each type's GPU, a misfit named, a type without a model refused"

# The example workload the package installs (data/traces/example): plan replay reads it.
out=$("$BIN/gpushare" plan replay --nodes "$GS_SOURCE_DIR/data/traces/example/nodes.csv" \
  --pods "$GS_SOURCE_DIR/data/traces/example/pods.csv" --policy gpushare,fgd --json)
expect_eq "$(jq -c '[.total_gpus, [.policies[].policy], ([.policies[].unallocated_at_100.mean] | all(. >= 0 and . < 100))]' <<<"$out")" \
  '[362,["gpushare","fgd"],true]' "the example workload replayed"
pass "plan replay on the example workload the package ships"
