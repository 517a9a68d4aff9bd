# SPDX-License-Identifier: Apache-2.0
# Issue 14, quantities: decimal sizes round down to whole MiB everywhere (1.1G is 1126 MiB from
# the CLI through the lease and the shim to cuMemGetInfo, and in GPUSHARE_MEMORY_LIMIT); a bare
# number is refused with a hint; percentages wherever fractions are; "missing value".
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
CONFIG=$'[gpu:all]\nreserve = 0.5G'
start_daemon
MIB=$((1 << 20))
CONTEXT_MIB=518 # a context's own memory on an H100-80GB, charged to the lease (issue 12)

# 1.1G end to end: the lease's limit, the job's environment, what CUDA reports.
out=$(gs run --gpu-memory 1.1G -- sh -c 'echo "$GPUSHARE_MEMORY_LIMIT"; exec "$0"' "$PROGS/meminfo")
expect_eq "$(sed -n 1p <<<"$out")" 1126M "GPUSHARE_MEMORY_LIMIT of --gpu-memory 1.1G"
expect_eq "$(sed -n 2p <<<"$out")" "$(((1126 - CONTEXT_MIB) * MIB)) $((1126 * MIB))" "cuMemGetInfo (free total) in a 1.1G lease"
bg_gs run --gpu-memory 1.1G -- sleep 30
wait_eq 5 1 lease_count
expect_eq "$(gs leases --json | jq '.[0].memory_limit')" $((1126 * MIB)) "the lease's limit"
expect_eq "$(gs leases --json | jq -r '.[0].request.gpu_memory')" 1126M "the request as recorded"
kill -TERM "$!"
wait_eq 5 0 lease_count
for pair in 2.3G:2355 0.1G:102 1.2M:1; do
  out=$(gs run --gpu-memory "${pair%%:*}" -- sh -c 'echo "$GPUSHARE_MEMORY_LIMIT"')
  expect_eq "$out" "${pair##*:}M" "GPUSHARE_MEMORY_LIMIT of a ${pair%%:*} lease"
done
# CUDA runs only where a context fits (518 MiB on an H100): 2.3G.
out=$(gs run --gpu-memory 2.3G -- "$PROGS/meminfo")
expect_eq "${out#* }" $((2355 * MIB)) "cuMemGetInfo total in a 2.3G lease"
pass "--gpu-memory 1.1G is 1126 MiB in the lease, the environment and cuMemGetInfo; 2.3G, 0.1G, 1.2M too"

# The environment takes the same sizes: GPUSHARE_MEMORY_LIMIT=1.1G (no daemon).
out=$(env LD_PRELOAD="${JOB_PRELOAD:+$JOB_PRELOAD:}$GS_BUILD_DIR/lib/libgpushare.so" \
  GPUSHARE_MEMORY_LIMIT=1.1G "$PROGS/meminfo")
expect_eq "$out" "$(((1126 - CONTEXT_MIB) * MIB)) $((1126 * MIB))" "cuMemGetInfo with GPUSHARE_MEMORY_LIMIT=1.1G"
# The configuration too: reserve = 0.5G leaves 81079M - 512M leasable (81079 MiB: what CUDA sees
# of an H100-80GB).
expect_eq "$(gs status --json | jq '.gpus[0].memory_reserved')" $((512 * MIB)) "reserve = 0.5G"
pass "GPUSHARE_MEMORY_LIMIT=1.1G is 1126 MiB at cuInit; reserve = 0.5G in gpushare.conf"

# A bare number is refused with a hint; a missing value says so; nothing runs.
expect_fail 2 'gpushare run: --gpu-memory: invalid memory size "4": add a unit: 4G or 4096M (see gpushare run --help)' \
  gs run --gpu-memory 4 -- touch "$WORK/ran"
expect_fail 2 'gpushare run: --gpu-memory: missing value (see gpushare run --help)' \
  gs run --gpu-memory -- touch "$WORK/ran"
expect_fail 2 'gpushare run: --gpu-memory: missing value (see gpushare run --help)' gs run --gpu-memory
expect_fail 2 'gpushare run: --gpu-memory: missing value (see gpushare run --help)' \
  gs run --gpu-memory= -- touch "$WORK/ran"
expect_fail 2 'gpushare run: --name: missing value (see gpushare run --help)' gs run --gpus 1 --name -- true
expect_fail 2 'gpushare history: --since: missing value (see gpushare history --help)' gs history --since
expect_fail 2 'gpushare run: --time: invalid duration "2": add a unit: 2s, 2m or 2h (see gpushare run --help)' \
  gs run --gpus 1 --time 2 -- true
[[ ! -e $WORK/ran ]] || fail "a job ran after a bad value"
pass "a bare number is refused with 'add a unit: 4G or 4096M'; a missing value says 'missing value'"

# Percentages wherever fractions are: --gpu 50% is half the GPU's leasable memory and compute.
bg_gs run --gpu 50% -- sleep 30
wait_eq 5 1 lease_count
expect_eq "$(gs leases --json | jq -c '.[0] | [.request.gpu, .memory_limit, .compute_share]')" \
  "[\"0.500\",$(((81079 - 512) * MIB / 2)),50]" "--gpu 50%"
kill -TERM "$!"
wait_eq 5 0 lease_count
expect_fail 2 'gpushare run: --gpu: invalid GPU fraction "150%": must be above 0% and at most 100% (see gpushare run --help)' \
  gs run --gpu 150% -- true
pass "--gpu 50% is half a GPU; 150% is refused"
