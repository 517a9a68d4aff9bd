# SPDX-License-Identifier: Apache-2.0
# Issue 14: inside a lease, nvidia-smi (gpusim's, through the shim's NVML like NVIDIA's) lists
# only the lease's GPUs, numbered from 0 as CUDA numbers them, with the lease's memory.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=A100-40GB,T4-16GB
start_daemon
t4=$(uuid_of 1)
a100=$(uuid_of 0)

expect_eq "$(nvidia-smi -L | wc -l)" 2 "GPUs nvidia-smi lists outside a lease"
out=$(gs run --gpus 1 --gpu-type T4 -- nvidia-smi -L)
expect_eq "$out" "GPU 0: NVIDIA T4-16GB (UUID: $t4)" "nvidia-smi -L in a one-GPU lease"
out=$(gs run --gpu-memory 1.1G --gpu-type A100 -- nvidia-smi)
expect_eq "$(grep -c '^|   [0-9]  NVIDIA' <<<"$out")" 1 "GPU rows of nvidia-smi in a one-GPU lease"
grep -Fq "|   0  NVIDIA A100-40GB " <<<"$out" || fail "the lease's GPU is not GPU 0: $out"
grep -Fq "|       0MiB / 1126MiB |" <<<"$out" || fail "nvidia-smi does not show the 1.1G slice: $out"
pass "nvidia-smi in a one-GPU lease on a 2-GPU node lists one GPU, as GPU 0, with its slice"

out=$(gs run --gpus 2 -- nvidia-smi -L)
expect_eq "$out" "GPU 0: NVIDIA A100-40GB (UUID: $a100)
GPU 1: NVIDIA T4-16GB (UUID: $t4)" "nvidia-smi -L in a two-GPU lease"
out=$(gs run --gpus 1 --gpu-type T4 -- nvidia-smi -i 1 2>&1) && fail "nvidia-smi -i 1 found a GPU outside the lease: $out"
expect_eq "$out" "No devices were found" "nvidia-smi -i 1 in a one-GPU lease"
pass "a two-GPU lease lists both; -i 1 in a one-GPU lease finds nothing"
