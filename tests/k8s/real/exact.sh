#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck source-path=SCRIPTDIR
# Issue 35, acceptance 2, on the real cluster of the k8s_real fixture (tests/k8s/real/lib.sh):
# claims allocated by kube-scheduler from deploy/kubernetes/claim-templates.yaml, prepared by
# the kubelet through gpushare-k8s, containers started by containerd with the CDI devices.
#  1. Memory: gpu-4gi-30 and gpu-quarter pods see exactly their claim in cuMemGetInfo (total =
#     4 GiB, 19 GiB; the context's memory included) and the first allocation past it is out of
#     memory.
#  2. Compute: a gpu-4gi-30 pod and a 70 % pod, both saturating, get 30 +- 3 and 70 +- 3 % of
#     gpusim's device time over 5 s.
#  3. The EKS time-slicing example: a Deployment of 5 gpu-quarter pods on a node with one shared
#     80 GB GPU: 4 Running, all allocated gpu-0, each under a lease of its claim; the fifth
#     Pending, with the scheduler's reason.
#  4. MIG: a gpu-mig-1g10gb pod gets a 1g.10gb instance at the placement of the device the
#     scheduler allocated.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
kr_env
cleanup() { kc delete pod,deployment,resourceclaimtemplate -l gs-test=exact --wait=true --timeout=60s >/dev/null 2>&1 || true; }
cleanup # (what an earlier run left)
trap cleanup EXIT

# 1. Memory
gpu_pod fill-4gi gpu-4gi-30 localhost/gpushare/cuda:1 "$KR_BUILD/tests/gs-ct-fill"
gpu_pod fill-quarter gpu-quarter localhost/gpushare/cuda:1 "$KR_BUILD/tests/gs-ct-fill"
kc label pod fill-4gi fill-quarter gs-test=exact >/dev/null
check_fill() { # POD LIMIT
  local out total free filled oom
  wait_phase "$1" Succeeded 180
  out=$(kc logs "$1" | grep "^total ") # (the shim says why it refused on stderr)
  read -r _ total _ free _ filled _ oom <<<"$out"
  expect_eq "$total" "$2" "pod $1: cuMemGetInfo total"
  expect_eq "$free" $(($2 - CONTEXT)) "pod $1: cuMemGetInfo free"
  expect_eq $((filled + CONTEXT)) "$2" "pod $1: allocations + context"
  expect_eq "$oom" 1 "pod $1: one block past the limit is out of memory"
}
check_fill fill-4gi $((4 * GI))
check_fill fill-quarter $((19 * GI))
kc delete pod fill-4gi fill-quarter --wait=true --timeout=60s >/dev/null
wait_until 30 no_leases || fail "leases left after the fill pods: $(keyed_leases)"
pass "memory: gpu-4gi-30's container sees 4 GiB, gpu-quarter's 19 GiB (cuMemGetInfo total), out of memory past it"

# 2. Compute: 30 % (gpu-4gi-30) and 70 % (a template of the test's own) side by side
shared_template gpu-8gi-70 8Gi 70 gs-test=exact
# (each requests CPU: BestEffort pods' 2 CPU shares starve on the shared cores, the GPU idles)
KR_POD_CPU=500m gpu_pod work-30 gpu-4gi-30 localhost/gpushare/cuda:1 "$KR_BUILD/tests/compute_worker" --batch 16 --threads 2
KR_POD_CPU=500m gpu_pod work-70 gpu-8gi-70 localhost/gpushare/cuda:1 "$KR_BUILD/tests/compute_worker" --batch 16 --threads 2
kc label pod work-30 work-70 gs-test=exact >/dev/null
wait_phase work-30 Running 180
wait_phase work-70 Running 180
pidns_of() { kc logs "$1" 2>/dev/null | awk '$1 == "pid" && $3 == "ns" { print $4; exit }'; }
has_pidns() { [[ -n $(pidns_of "$1") ]]; }
wait_until 30 has_pidns work-30 || fail "pod work-30 did not print its PID namespace"
wait_until 30 has_pidns work-70 || fail "pod work-70 did not print its PID namespace"
sleep 4 # the schedulers settle (two threads of batches of 16: the GPU stays fed while the shared cores are busy)
read -r share_30 share_70 < <("$KR_BUILD/tests/gs-sim-devtime" 5 "$(pidns_of work-30)" "$(pidns_of work-70)" |
  awk '{ print $2 }' | paste -sd' ')
echo "device time over 5 s: pod work-30 $share_30 % (target 30 +- 3), pod work-70 $share_70 % (70 +- 3)"
within() { awk -v v="$1" -v t="$2" -v d="$3" 'BEGIN { exit !(v >= t - d && v <= t + d) }'; }
within "$share_30" 30 3 || fail "pod work-30 had $share_30 % of the GPU, not 30 +- 3"
within "$share_70" 70 3 || fail "pod work-70 had $share_70 % of the GPU, not 70 +- 3"
kc delete pod work-30 work-70 --wait=true --timeout=60s >/dev/null
wait_until 30 no_leases || fail "leases left after the compute pods: $(keyed_leases)"
pass "compute: $share_30 % and $share_70 % of gpusim's device time over 5 s for claims of 30 and 70 %"

# 3. Five gpu-quarter pods of a Deployment: four fit one 80 GB GPU
kc apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: quarter, labels: {gs-test: exact}}
spec:
  replicas: 5
  selector: {matchLabels: {app: quarter}}
  template:
    metadata: {labels: {app: quarter, gs-test: exact}}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: gpu-quarter}
      containers:
      - name: app
        image: localhost/gpushare/busybox:1
        imagePullPolicy: Never
        command: ["/bin/sleep", "3600"]
        resources: {claims: [{name: gpu}]}
EOF
count_phase() { kc get pods -l app=quarter -o json | jq --arg p "$1" '[.items[] | select(.status.phase == $p)] | length'; }
four_running() { [[ $(count_phase Running) == 4 && $(count_phase Pending) == 1 ]]; }
wait_until 240 four_running || { kc get pods -l app=quarter -o wide >&2; fail "not 4 Running and 1 Pending after 240 s"; }
sleep 3 # a fifth that would start gets its chance
four_running || { kc get pods -l app=quarter -o wide >&2; fail "not 4 Running and 1 Pending once settled"; }
pending=$(kc get pods -l app=quarter -o json | jq -r '.items[] | select(.status.phase == "Pending") | .metadata.name')
reason=$(kc get pod "$pending" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}')
message=$(kc get pod "$pending" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}')
expect_eq "$reason" Unschedulable "the fifth pod's PodScheduled reason"
[[ $message == *"cannot allocate all claims"* ]] || fail "the fifth pod's scheduling message: $message"
devices=$(for p in $(kc get pods -l app=quarter -o json | jq -r '.items[] | select(.status.phase == "Running") | .metadata.name'); do
  claim_device "$(claim_of "$p")"
  echo
done | sort | uniq -c | awk '{ print $1 "x" $2 }')
expect_eq "$devices" "4xgpu-0" "the Running pods' allocated devices"
expect_eq "$(gs leases --json | jq '[.[] | select(.key != null and .state == "active" and .gpus[0].index == 0)] | length')" 4 "active keyed leases on GPU 0"
echo "the fifth pod: $reason: $message"
kc delete deployment quarter --wait=true --timeout=60s >/dev/null
wait_until 60 no_leases || fail "leases left after the Deployment: $(keyed_leases)"
pass "a Deployment of 5 gpu-quarter pods: 4 Running on gpu-0, each under its lease; the fifth Pending ($reason)"

# 4. MIG: each gpu-mig-1g10gb pod gets a 1g.10gb instance where the allocated device lies
for p in mig-a mig-b; do
  gpu_pod "$p" gpu-mig-1g10gb localhost/gpushare/busybox:1 /bin/sleep 3600
  kc label pod "$p" gs-test=exact >/dev/null
  wait_phase "$p" Running 180 # (one after the other: the second's placement is another)
done
starts=()
for p in mig-a mig-b; do
  claim=$(claim_of "$p")
  dev=$(claim_device "$claim")
  start=$(kc get resourceslices -o json | jq --arg d "$dev" \
    '[.items[].spec.devices // [] | .[] | select(.name == $d) | .attributes.placementStart.int] | first')
  id=$(gs leases --json | jq --arg k "k8s/$(claim_uid "$claim")/gpu" '.[] | select(.key == $k) | .id')
  [[ -n $id ]] || fail "no lease for pod $p's claim"
  inst=$(gs status --json | jq -c --argjson l "$id" '.gpus[1].mig.instances[] | select(.lease == $l) | [.profile, .start]')
  expect_eq "$inst" "[\"1g.10gb\",$start]" "pod $p's MIG instance (profile, start) for the allocated $dev"
  expect_eq "$(gs leases --json | jq --argjson l "$id" '.[] | select(.id == $l) | .time_limit_ms')" 28800000 "pod $p's lease's time limit (8 h)"
  starts+=("$dev@$start")
done
[[ ${starts[0]#*@} != "${starts[1]#*@}" ]] || fail "both MIG pods at one placement: ${starts[*]}"
kc delete pod mig-a mig-b --wait=true --timeout=60s >/dev/null
# (the instances stay, idle, for the next claims of their profile: none leased)
none_leased() { [[ $(gs status --json | jq '[.gpus[1].mig.instances[] | select(.state != "idle")] | length') == 0 ]]; }
wait_until 30 none_leased || fail "MIG instances still leased: $(gs status --json | jq -c '.gpus[1].mig.instances')"
wait_until 30 no_leases || fail "leases left after the MIG pods: $(keyed_leases)"
pass "MIG: each gpu-mig-1g10gb pod got a 1g.10gb instance at its allocated device's placement (${starts[*]}), 8 h limit; idle once the pods are gone"
