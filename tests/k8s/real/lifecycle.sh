#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck source-path=SCRIPTDIR
# Issue 35, acceptance 3 and the "bad input" item, on the real cluster of the k8s_real fixture
# (tests/k8s/real/lib.sh):
#  1. the kubelet restarted with a pod running: the pod keeps its container, its claim keeps its
#     one lease (no second), and a new pod's claim is prepared afterwards;
#  2. gpushare-k8s killed with SIGKILL and started again: nothing lost (the pod, its lease, the
#     slices' devices), and the next claim is prepared;
#  3. gpushared restarted: every prepared claim keeps its lease (same ids and keys);
#  4. deleting a pod unprepares its claim: the lease ends and its memory is free (timed);
#  5. a GPU that stops serving (gpusim: MIG turned off under a MIG-mode GPU, its idle instances
#     destroyed first) leaves the slices,
#     and comes back when it serves again;
#  6. a claim the node cannot serve (a GpuConfig the driver refuses) fails its pod with an Event
#     that says why in one line; the pod's deletion leaves no lease, record or CDI spec.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
kr_env
cleanup() { kc delete pod,resourceclaimtemplate -l gs-test=lifecycle --wait=true --timeout=60s >/dev/null 2>&1 || true; }
cleanup # (what an earlier run left)
trap cleanup EXIT
records() { find "$K8S_KUBELET_ROOT/plugins/gpu.gpushare.io/claims" -type f 2>/dev/null | wc -l; }
container_of() { kc get pod "$1" -o 'jsonpath={.status.containerStatuses[0].containerID}/{.status.containerStatuses[0].restartCount}'; }
sleeper() { # NAME: a gpu-4gi-30 pod that sleeps
  gpu_pod "$1" gpu-4gi-30 localhost/gpushare/busybox:1 /bin/sleep 3600
  kc label pod "$1" gs-test=lifecycle >/dev/null
}
gpu0_free() { gs status --json | jq -r '.gpus[0].memory_free'; }
free_again() { [[ $(gpu0_free) == "$free0" ]]; }
no_records() { [[ $(records) == 0 ]]; }
free0=$(gpu0_free)

sleeper life-a
wait_phase life-a Running 180
ctr_a=$(container_of life-a)
leases=$(lease_ids)
uid_a=$(claim_uid "$(claim_of life-a)")
expect_eq "$(keyed_leases)" "k8s/$uid_a/gpu:active" "the leases with pod life-a running"

# 1. The kubelet restarted
"$K8S_TOOLS/cluster.sh" restart "$KR_DIR" kubelet >/dev/null
sleep 5 # the kubelet's first sync of the pods it found
expect_eq "$(pod_phase life-a)" Running "pod life-a after the kubelet's restart"
expect_eq "$(container_of life-a)" "$ctr_a" "pod life-a's container (id/restarts) after the kubelet's restart"
expect_eq "$(lease_ids)" "$leases" "the leases (id:key) after the kubelet's restart"
sleeper life-b
wait_phase life-b Running 180
uid_b=$(claim_uid "$(claim_of life-b)")
expect_eq "$(keyed_leases)" "$(printf '%s\n' "k8s/$uid_a/gpu:active" "k8s/$uid_b/gpu:active" | LC_ALL=C sort | paste -sd' ')" \
  "the leases with life-a and life-b"
pass "the kubelet restarted: pod life-a kept its container and its one lease; life-b prepared after it"

# 2. gpushare-k8s killed with SIGKILL, started again
leases=$(lease_ids)
devices=$(slice_devices)
registrations() { grep -c 'registered with the kubelet' "$KR_GS/plugin.log" || true; }
before=$(registrations)
kr_stop plugin KILL
kr_start_plugin
# the kubelet took the new plugin's registration (a pod made before that fails its first
# prepare, "DRA driver gpu.gpushare.io is not registered", and waits out the kubelet's backoff)
registered_again() { (($(registrations) > before)); }
wait_until 30 registered_again || fail "the restarted plugin was not registered by the kubelet in 30 s"
sleeper life-c
wait_phase life-c Running 180 # prepared by the new plugin
expect_eq "$(pod_phase life-a)" Running "pod life-a after the plugin's SIGKILL"
expect_eq "$(container_of life-a)" "$ctr_a" "pod life-a's container after the plugin's SIGKILL"
uid_c=$(claim_uid "$(claim_of life-c)")
for l in $leases; do [[ " $(lease_ids) " == *" $l "* ]] || fail "lease $l lost after the plugin's SIGKILL: $(lease_ids)"; done
expect_eq "$(gs leases --json | jq '[.[] | select(.key != null)] | length')" 3 "keyed leases with 3 pods"
expect_eq "$(slice_devices)" "$devices" "the slices' devices after the plugin's restart"
pass "gpushare-k8s SIGKILLed and started again: leases, pods and slices kept; life-c prepared by the new one"

# 3. gpushared restarted: every prepared claim keeps its lease
leases=$(lease_ids)
kr_stop gpushared
kr_start_gpushared
expect_eq "$(lease_ids)" "$leases" "the leases (id:key) after gpushared's restart"
expect_eq "$(keyed_leases)" "$(printf '%s\n' "k8s/$uid_a/gpu:active" "k8s/$uid_b/gpu:active" "k8s/$uid_c/gpu:active" | LC_ALL=C sort | paste -sd' ')" \
  "the leases' states after gpushared's restart"
pass "gpushared restarted: the 3 prepared claims kept their leases ($(echo "$leases" | wc -w))"

# 4. A deleted pod's claim is unprepared: its lease ends (timed)
gone() { [[ $(keyed_leases) != *"$1"* ]]; }
times=()
for p in "life-b $uid_b" "life-c $uid_c" "life-a $uid_a"; do
  read -r name uid <<<"$p"
  t0=$(now_ms)
  kc delete pod "$name" --wait=false >/dev/null
  wait_until 60 gone "$uid" || fail "pod $name's lease still there 60 s after its deletion: $(keyed_leases)"
  times+=("$(($(now_ms) - t0))")
done
expect_eq "$(keyed_leases)" "" "keyed leases once the pods are deleted"
wait_until 10 free_again || fail "GPU 0's free memory: $(gpu0_free), before $free0"
wait_until 30 no_records || fail "claim records left: $(records)"
echo "pod deleted to lease ended (kubectl delete; kubelet: stop, unprepare): ${times[*]} ms"
pass "a deleted pod's claim is unprepared: lease ended, memory free, record gone (${times[*]} ms)"

# 5. A GPU that stops serving leaves the slices, and comes back
devices=$(slice_devices)
[[ $devices == *gpu-1* ]] || fail "no device of GPU 1 in the slices: $devices"
no_gpu1() { [[ $(slice_devices) != *gpu-1* ]]; }
# (gpushared keeps a MIG instance whose lease ended, idle, for the next claim of its profile:
# nvidia-smi refuses MIG off while one exists, "In use by another client")
"$KR_BUILD/sim/nvidia-smi" mig -i 1 -dci >/dev/null 2>&1 || true
"$KR_BUILD/sim/nvidia-smi" mig -i 1 -dgi >/dev/null 2>&1 || true
"$KR_BUILD/sim/nvidia-smi" -i 1 -mig 0 >/dev/null
wait_until 30 no_gpu1 || fail "GPU 1's devices still in the slices 30 s after it stopped serving: $(slice_devices)"
"$KR_BUILD/sim/nvidia-smi" -i 1 -mig 1 >/dev/null
back() { [[ $(slice_devices) == "$devices" ]]; }
wait_until 30 back || fail "the slices' devices 30 s after GPU 1 serves again: $(slice_devices), before: $devices"
pass "a GPU that stops serving (MIG off) leaves the slices, and comes back (MIG on)"

# 6. A claim the node cannot serve: its pod fails to start with a one-line Event
shared_template gpu-bad-config 1Gi 10 gs-test=lifecycle '{"computeMax": 5}'
gpu_pod life-bad gpu-bad-config localhost/gpushare/busybox:1 /bin/sleep 3600
kc label pod life-bad gs-test=lifecycle >/dev/null
event() {
  kc get events --field-selector involvedObject.name=life-bad -o json |
    jq -r '[.items[] | select(.reason == "FailedPrepareDynamicResources")] | last | .message // empty'
}
has_event() { [[ -n $(event) ]]; }
wait_until 60 has_event || { kc describe pod life-bad >&2; fail "no FailedPrepareDynamicResources event for pod life-bad after 60 s"; }
msg=$(event)
echo "the event: $msg"
expect_eq "$(printf '%s\n' "$msg" | wc -l)" 1 "the event's lines"
[[ $msg == *"computeMax"* ]] || fail "the event does not say why: $msg"
expect_eq "$(pod_phase life-bad)" Pending "pod life-bad's phase"
kc delete pod life-bad --wait=true --timeout=60s >/dev/null
expect_eq "$(keyed_leases)" "" "keyed leases after pod life-bad"
wait_until 30 no_records || fail "claim records left after pod life-bad: $(records)"
left=$(find "$K8S_CDI_DIR" -type f ! -name 'gpusim*')
[[ -z $left ]] || fail "CDI specs left: $left"
pass "a claim the node cannot serve: its pod shows one line ($msg); deleted, it leaves nothing"
