# SPDX-License-Identifier: Apache-2.0
# Issue 21, acceptance 1 and 2: two podman containers, each in namespaces of its own (IPC, PID,
# mount: podman's defaults) and with no option but CDI devices, hold leases 4G + --compute 30
# and 8G + --compute 70 of one GPU. Each sees exactly its memory (cuMemGetInfo's total; its
# allocations and its context fill the limit, one block more is out of memory), and gpusim's
# ground truth gives each container's processes 30 +- 3 and 70 +- 3 % of the GPU's time over 5 s
# while a third container, root in its own IPC namespace with a best-effort lease of its own,
# runs the same saturating work beside them.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
T=$GS_BUILD_DIR/tests
CONTEXT=543162368 # an H100-80GB context's own memory (gpusim, measured on a real one)
make_image "$T/gs-ct-fill" "$T/compute_worker"
start_node
gs cdi add a --gpu-memory 4G --compute 30 --dir "$CDI" >/dev/null
gs cdi add b --gpu-memory 8G --compute 70 --dir "$CDI" >/dev/null
gs cdi add c --gpu-memory 1G --dir "$CDI" >/dev/null

# Memory: what CUDA sees in each container, and where it is refused.
check_memory() { # NAME LIMIT
  local out total free filled oom
  out=$(ct run --rm "${SIM[@]}" --device "gpushare.io/gpu=$1" --rootfs "$ROOTFS" "$T/gs-ct-fill")
  read -r _ total _ free _ filled _ oom <<<"$out"
  expect_eq "$total" "$2" "container $1: cuMemGetInfo total"
  expect_eq "$free" $(($2 - CONTEXT)) "container $1: cuMemGetInfo free"
  expect_eq $((filled + CONTEXT)) "$2" "container $1: allocations + context"
  expect_eq "$oom" 1 "container $1: one block past the limit is out of memory"
}
# (Each run's poststop hook ends its lease: a fresh lease per run.)
check_memory a $((4 << 30))
check_memory b $((8 << 30))
expect_eq "$(lease_count)" 1 "leases after the two runs (c's stays)"
pass "each container sees exactly its memory: 4 GiB and 8 GiB, context included, OOM past it"

# Compute: a and b running saturating kernels, then c beside them.
gs cdi add a --gpu-memory 4G --compute 30 --dir "$CDI" >/dev/null
gs cdi add b --gpu-memory 8G --compute 70 --dir "$CDI" >/dev/null
run_worker() {
  ct run -d --name "$1" "${SIM[@]}" --device "gpushare.io/gpu=$1" --rootfs "$ROOTFS" \
    "$T/compute_worker" >/dev/null
}
within() { # VALUE TARGET TOLERANCE
  awk -v v="$1" -v t="$2" -v d="$3" 'BEGIN { exit !(v >= t - d && v <= t + d) }'
}
# measure WHAT NAME...: the containers' shares of the GPU's time over 5 s (gpusim's ground truth).
measure() {
  local what=$1 ns=()
  shift
  for name in "$@"; do ns+=("$(ct_pidns "$name")"); done
  "$T/gs-sim-devtime" 5 "${ns[@]}" | awk '{ print $2 }' | paste -sd' '
}
run_worker a
run_worker b
sleep 2 # the schedulers settle
read -r alone_a alone_b < <(measure alone a b)
echo "device time over 5 s, a and b: a $alone_a % (target 30 +- 3), b $alone_b % (70 +- 3)"
within "$alone_a" 30 3 || fail "container a had $alone_a % of the GPU, not 30 +- 3"
within "$alone_b" 70 3 || fail "container b had $alone_b % of the GPU, not 70 +- 3"
run_worker c
sleep 1
read -r share_a share_b share_c < <(measure beside a b c)
echo "device time over 5 s, c beside: a $share_a %, b $share_b %, c $share_c %"
within "$share_a" 30 3 || fail "with c, container a had $share_a % of the GPU, not 30 +- 3"
within "$share_b" 70 3 || fail "with c, container b had $share_b % of the GPU, not 70 +- 3"
within "$share_a" "$alone_a" 3 || fail "c moved a's share from $alone_a to $share_a %"
within "$share_b" "$alone_b" 3 || fail "c moved b's share from $alone_b to $share_b %"
pass "compute shares between containers: a $alone_a %, b $alone_b %; with c beside: $share_a %, $share_b % (c $share_c %)"

# No host namespace, no privilege, no capability added: podman's defaults, as inspected.
for name in a b c; do
  pid=$(ct_pid $name)
  for ns in ipc pid mnt; do
    [[ $(stat -L -c %i "/proc/$pid/ns/$ns") != $(stat -L -c %i "/proc/self/ns/$ns") ]] ||
      fail "container $name shares the host's $ns namespace"
  done
  [[ $(ct inspect --format '{{.HostConfig.Privileged}} {{.HostConfig.CapAdd}}' $name) == "false []" ]] ||
    fail "container $name is privileged or has capabilities added"
done
pass "the containers have IPC, PID and mount namespaces of their own, no privilege, no capability added"
