#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 22, acceptance 1 and 3 in real containers: pods whose claims gpushare-k8s prepared, run by
# the stand-in kubelet (run-pod: the pod's claims from the API server, NodePrepareResources,
# rootful podman + crun with nothing but the CDI devices prepare returned, NodeUnprepareResources
# when the container ends). Two claims on one H100, 4Gi + 30 % and 8Gi + 70 %: each container
# sees exactly its memory (cuMemGetInfo's total; allocations + context fill it, one block more is
# out of memory) and gets 30 +- 3 / 70 +- 3 % of the GPU's device time over 5 s (gpusim's ground
# truth); its processes are under its claim's lease (the spec's createRuntime hook); a
# container's end unprepares its claim: the lease ends, its memory is free, no CDI spec or record
# stays; then a third claim, allocated on the free GPU as a scheduler would, that gpushared cannot
# serve (a lease outside Kubernetes, `gpushare cdi add`, took the memory after the allocation)
# keeps its pod from starting with one line naming the claim and what was free. (The real
# scheduler's side of a claim that does not fit: k8s_real_exact's Pending pod.) podman in a
# private mount namespace: tests/containers/lib.sh.
source "$(dirname "$0")/../containers/lib.sh"
GPUSIM_DEVICES=H100-80GB
source "$(dirname "$0")/dra_lib.sh"
T=$GS_BUILD_DIR/tests
CONTEXT=543162368 # an H100-80GB context's own memory (gpusim, measured on a real one)
GI=1073741824
make_image "$T/gs-ct-fill" "$T/compute_worker"
CONFIG="[daemon]
shim = $GS_BUILD_DIR/lib/libgpushare.so"
start_node
start_api
start_plugin --no-publish --gpusim-cdi sim
start_kubelet

# pod NAME CLAIM: a pod of namespace ml using claim CLAIM (spec.resourceClaims).
pod() {
  api POST /api/v1/namespaces/ml/pods "$(jq -nc --arg n "$1" --arg c "$2" '{apiVersion: "v1",
    kind: "Pod", metadata: {name: $n}, spec: {resourceClaims: [{name: "gpu",
    resourceClaimName: $c}], containers: [{name: "main", image: "scratch"}]}}')" >/dev/null
}
# run_pod NAME PROGRAM: the pod's life through the stand-in kubelet; its container is named NAME.
# bg_pod NAME PROGRAM: the same in the background (pid in $!).
pod_life() {
  echo "$PYGRPC" "$K8S/kubelet.py" --protos "$K8S/proto" run-pod --state "$WORK/kubelet.json" \
    --api "$API" --token writer --pod "ml/$1" --retries 3 --backoff 0.2 \
    --runtime "'${PODMAN[*]} run --rm --name $1'" --podman-arg=--rootfs --podman-arg="$ROOTFS" \
    -- "$2"
}
run_pod() {
  eval "$(pod_life "$@")" 2>>"$WORK/kubelet.log"
}
bg_pod() {
  eval "bg $(pod_life "$@")" >/dev/null 2>>"$WORK/kubelet.log"
}
gpu0() {
  gs status --json | jq -r ".gpus[0].$1"
}
leasable=$(gpu0 memory_leasable)
a=$(claim ml a gpu gpu-0 4Gi 30)
b=$(claim ml b gpu gpu-0 8Gi 70)
pod pa a
pod pb b

# 1. Memory: what CUDA sees in each pod's container; the pod's end unprepares its claim.
check_memory() { # POD UID LIMIT
  local out total free filled oom
  out=$(run_pod "$1" "$T/gs-ct-fill") || fail "pod $1: status $?: $out"
  read -r _ total _ free _ filled _ oom <<<"$out"
  expect_eq "$total" "$3" "pod $1: cuMemGetInfo total"
  expect_eq "$free" $(($3 - CONTEXT)) "pod $1: cuMemGetInfo free"
  expect_eq $((filled + CONTEXT)) "$3" "pod $1: allocations + context"
  expect_eq "$oom" 1 "pod $1: one block past the limit is out of memory"
  expect_eq "$(keyed_leases)" "" "keyed leases after pod $1"
  expect_eq "$(leftovers "$2")" 0 "pod $1's CDI spec and record"
  expect_eq "$(gpu0 memory_free)" "$leasable" "GPU 0's free memory after pod $1"
}
check_memory pa "$a" $((4 * GI))
check_memory pb "$b" $((8 * GI))
pass "each pod's container sees exactly its claim's memory: 4 GiB and 8 GiB, context included, OOM past it; its end unprepares the claim"

# 2. Compute: both pods running saturating kernels.
bg_pod pa "$T/compute_worker"
pod_a=$!
bg_pod pb "$T/compute_worker"
pod_b=$!
running() {
  [[ $(ct inspect --format '{{.State.Running}}' "$1" 2>/dev/null) == true ]]
}
wait_until 30 running pa
wait_until 30 running pb
within() { # VALUE TARGET TOLERANCE
  awk -v v="$1" -v t="$2" -v d="$3" 'BEGIN { exit !(v >= t - d && v <= t + d) }'
}
sleep 2 # the schedulers settle
read -r share_a share_b < <("$T/gs-sim-devtime" 5 "$(ct_pidns pa)" "$(ct_pidns pb)" |
  awk '{ print $2 }' | paste -sd' ')
echo "device time over 5 s: pod pa $share_a % (target 30 +- 3), pod pb $share_b % (70 +- 3)"
within "$share_a" 30 3 || fail "pod pa had $share_a % of the GPU, not 30 +- 3"
within "$share_b" 70 3 || fail "pod pb had $share_b % of the GPU, not 70 +- 3"
pass "compute shares of the two claims' containers: $share_a % and $share_b % of device time over 5 s"

# 3. Each container's process is under its claim's lease (the createRuntime hook's cgroup).
lease_of_pid() {
  gs status --processes --json |
    jq --argjson p "$1" '[.gpus[0].processes[] | select(.pid == $p) | .lease] | first // "none"'
}
for p in "pa $a" "pb $b"; do
  read -r name uid <<<"$p"
  id=$(lease_of_key "k8s/$uid/gpu")
  pid=$(pgrep -f compute_worker --ns "$(ct_pid "$name")" | head -1)
  wait_eq 3 "$id" lease_of_pid "$pid"
done
pass "each container's process is under its claim's lease in status --processes"

# 4. A container's end: the kubelet unprepares its claim; the lease ends and its memory is free.
before=$(gpu0 memory_free)
start=$(date +%s%N)
ct kill pa >/dev/null
wait "$pod_a" || true
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "$(keyed_leases)" "k8s/$b/gpu:active" "leases once pod pa ended"
expect_eq "$(gpu0 memory_free)" $((before + 4 * GI)) "GPU 0's free memory once pod pa ended"
echo "container killed to claim unprepared (podman's cleanup, then the kubelet's call): $ms ms"
((ms <= 1000)) || fail "container killed to claim unprepared took $ms ms (the bound: 1 s)"
ct kill pb >/dev/null
wait "$pod_b" || true
expect_eq "$(keyed_leases)" "" "leases once pod pb ended"
expect_eq "$(gpu0 memory_free)" "$leasable" "GPU 0's free memory at the end"
for u in "$a" "$b"; do expect_eq "$(leftovers "$u")" 0 "claim $u's leftovers"; done
expect_eq "$(ls "$WORK/plugin/claims" | wc -l)" 0 "records"
expect_eq "$(ls "$CDI")" "gpusim.gpushare.io_node-sim.json" "CDI specs"
pass "the containers' end unprepares their claims: no lease, spec or record left, all memory free"

# 5. A third claim the node cannot serve: allocated on the free GPU (claims a and b gone, as a
# scheduler deallocates them with their pods), while a lease outside Kubernetes took 76 GiB.
api DELETE /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/a >/dev/null
api DELETE /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/b >/dev/null
gs cdi add outside --gpu-memory 76G --no-wait --dir "$WORK" >/dev/null
c=$(claim ml c gpu gpu-0 4Gi 10)
pod pc c
set +e
run_pod pc "$T/gs-ct-fill" >/dev/null
rc=$?
set -e
expect_eq "$rc" 125 "run-pod's status for a pod whose claim was refused"
line=$(grep "^kubelet: claim ml/c: " "$WORK/kubelet.log" | tail -1)
line=${line#kubelet: claim ml/c: } # (the stand-in's own prefix)
line=${line% (attempt *)}
[[ $line == "claim ml/c: does not fit: it needs 4Gi and 10 % of compute; gpu-0 had "*" and 100 % of compute free (1 lease) (gpushared refused the lease: "* ]] ||
  fail "the refusal: $line"
running pc && fail "pod pc's container started"
expect_eq "$(leftovers "$c")" 0 "claim c's CDI spec and record"
expect_eq "$(keyed_leases)" "cdi/outside:active" "leases with pc refused"
gs cdi remove outside --dir "$WORK" >/dev/null
expect_eq "$(keyed_leases)" "" "leases at the end"
pass "a third claim the node cannot serve (its memory leased outside Kubernetes): $line"
