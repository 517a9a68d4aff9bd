# SPDX-License-Identifier: Apache-2.0
# gpushared with real CUDA jobs on gpusim (libcuda.so.1) through the shim: the job sees its
# slice (less its context's own memory, which the lease pays for), its allocations are charged to
# the lease, going over it is a clean CUDA_ERROR_OUT_OF_MEMORY, and a killed job's device memory
# comes back.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
JOB=$GS_BUILD_DIR/tests/gs-demo-job
# An H100-80GB as measured on a real one (gpusim models it): a context's own memory and what the
# driver reserves (NVML shows it as used).
CONTEXT=543162368
RESERVED=503316480
start_daemon

# A job that grows past its 4G slice: clean OOM, exit status 1 passed through.
set +e
out=$(gs run --gpu-memory 4G -- "$JOB" grow 3 5 6 0.3 2>&1)
rc=$?
set -e
expect_eq "$rc" 1 "exit status of a job refused memory"
grep -q '^\[grow\] NVIDIA H100-80GB: CUDA sees 4.0 GiB total, 3.5 GiB free$' <<<"$out" ||
  fail "the job did not see its 4 GiB slice: $out"
grep -q '^\[grow\] growing failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out" || fail "no clean OOM: $out"
grep -q 'cuMemAlloc of 6 GiB on device 0 refused: out of memory in this lease (limit 4 GiB, 3.51 GiB in use' <<<"$out" ||
  fail "no shim message: $out"
expect_eq "$(lease_count)" 0 "leases after the job"
pass "a CUDA job sees its slice; growing past it is CUDA_ERROR_OUT_OF_MEMORY, exit 1"

# Allocations are charged to the lease while the job runs; the GPU's own use shows them too.
bg_gs run --gpu-memory 39G -- "$JOB" a 30 30
client=$!
wait_eq 10 $(((30 << 30) + CONTEXT)) memory_used
gpu_used() {
  gs status --json | jq '.gpus[0].memory_used'
}
wait_eq 3 $((RESERVED + (30 << 30) + CONTEXT)) gpu_used
pass "the lease and NVML both show the job's 30 GiB and its context"

# Two 39G leases fill the GPU (79.18 GiB leasable): a third waits; SIGKILL of a client frees its
# memory (lease and device) within a second, and the waiting job starts.
bg_gs run --gpu-memory 39G -- "$JOB" b 10 30
wait_eq 10 $(((40 << 30) + 2 * CONTEXT)) memory_used
bg_gs run --gpu-memory 39G -- "$JOB" c 5 1
waiting=$!
wait_eq 5 1 queue_length
start=$(date +%s%N)
kill -KILL "$client"
until [[ $(queue_length) == 0 ]]; do
  took=$((($(date +%s%N) - start) / 1000000))
  [[ $took -lt 3000 ]] || fail "the killed job's lease did not end"
  sleep 0.02
done
took=$((($(date +%s%N) - start) / 1000000))
[[ $took -le 1000 ]] || fail "the waiting job got the memory $took ms after the kill"
wait "$waiting" || fail "the job that waited failed"
wait_eq 3 $((RESERVED + (10 << 30) + CONTEXT)) gpu_used
pass "SIGKILL of a CUDA job's client: lease and device memory back, the waiting job ran ($took ms)"
