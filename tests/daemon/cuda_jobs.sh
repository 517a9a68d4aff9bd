# gpushared with real CUDA jobs on gpusim (libcuda.so.1) through the shim: the job sees its
# slice, its allocations are charged to the lease, going over it is a clean
# CUDA_ERROR_OUT_OF_MEMORY, and a killed job's device memory comes back.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
JOB=$GS_BUILD_DIR/tests/gs-demo-job
start_daemon

# A job that grows past its 4G slice: clean OOM, exit status 1 passed through.
set +e
out=$(gs run --gpu-memory 4G -- "$JOB" grow 3 5 6 0.3 2>&1)
rc=$?
set -e
expect_eq "$rc" 1 "exit status of a job refused memory"
grep -q '^\[grow\] NVIDIA H100-80GB: CUDA sees 4.0 GiB total, 4.0 GiB free$' <<<"$out" ||
  fail "the job did not see its 4 GiB slice: $out"
grep -q '^\[grow\] growing failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out" || fail "no clean OOM: $out"
grep -q 'cuMemAlloc of 6 GiB on device 0 refused: out of memory in this lease (limit 4 GiB, 3 GiB in use' <<<"$out" ||
  fail "no shim message: $out"
expect_eq "$(lease_count)" 0 "leases after the job"
pass "a CUDA job sees its slice; growing past it is CUDA_ERROR_OUT_OF_MEMORY, exit 1"

# Allocations are charged to the lease while the job runs; the GPU's own use shows them too.
bg_gs run --gpu-memory 40G -- "$JOB" a 30 30
client=$!
wait_eq 10 $((30 << 30)) memory_used
gpu_used() {
  gs status --json | jq '.gpus[0].memory_used'
}
wait_eq 3 $((30 << 30)) gpu_used
pass "the lease and NVML both show the job's 30 GiB"

# Two 40G leases fill the GPU: a third waits; SIGKILL of a client frees its memory (lease and
# device) within a second, and the waiting job starts.
bg_gs run --gpu-memory 40G -- "$JOB" b 10 30
wait_eq 10 $((40 << 30)) memory_used
bg_gs run --gpu-memory 40G -- "$JOB" c 5 1
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
wait_eq 3 $((10 << 30)) gpu_used
pass "SIGKILL of a CUDA job's client: lease and device memory back, the waiting job ran ($took ms)"
