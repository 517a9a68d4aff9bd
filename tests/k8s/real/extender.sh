#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck source-path=SCRIPTDIR
# Issue 35, acceptance 4, on the real cluster of the k8s_real fixture (tests/k8s/real/lib.sh):
# the real kube-scheduler, configured by a KubeSchedulerConfiguration with gpushare's extender
# (up.sh: http://127.0.0.1:18888/, weight 1000, nodeCacheCapable, ignorable), calls
# gpushare-scheduler-extender, and the node the extender put first is the node the pod is
# bound to. Three nodes: the real gs-node (an H100-80GB) and two Node objects with no kubelet,
# gs-fake-big (an H100-80GB) and gs-fake-small (a 24 GB GPU), each with a ResourceSlice of
# driver gpu.gpushare.io written here. Simulated nodes, not a second kubelet: the question is
# whose node choice kube-scheduler takes, which needs nodes and their slices, not containers; a
# second kubelet would need its own containerd and cgroup root on the 2 shared cores. The pods
# tolerate every taint (the fake nodes are NotReady) and are never started; only their binding
# (spec.nodeName) is looked at.
#  1. Without the extender (not running: ignorable, skipped) kube-scheduler binds a gpu-quarter
#     pod to a node of its own choice.
#  2. With it, for each of 3 pods in turn: the extender's log says which node it put first for
#     the pod when kube-scheduler asked (prioritize), and the pod is bound to that node; the
#     first goes to the small GPU (best fit), where the second no longer fits.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
kr_env
EXT_LOG=$KR_GS/extender.log
cleanup() {
  kr_stop extender
  kc delete pod -l gs-test=extender --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
  kc delete resourceslice -l gs-test=extender --wait=false >/dev/null 2>&1 || true
  kc delete node -l gs-test=extender --wait=false >/dev/null 2>&1 || true
}
cleanup # (what an earlier run left)
trap cleanup EXIT

# the fake nodes: Ready in their status (then NotReady: no kubelet renews it), a GPU each
gpu0=$(kc get resourceslices -o json | jq -c '[.items[].spec.devices // [] | .[] | select(.name == "gpu-0")] | first')
[[ $gpu0 != null ]] || fail "no device gpu-0 in gs-node's slices"
fake_node() { # NAME MEMORY_MIB PRODUCT
  kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata: {name: $1, labels: {gs-test: extender, kubernetes.io/hostname: $1}}
EOF
  kc patch node "$1" --subresource=status --type=merge -p "$(jq -nc '{status: {
    capacity: {cpu: "16", memory: "64Gi", pods: "110"}, allocatable: {cpu: "16", memory: "64Gi", pods: "110"},
    conditions: [{type: "Ready", status: "True", reason: "KubeletReady", message: "fake",
      lastHeartbeatTime: (now | todate), lastTransitionTime: (now | todate)}]}}')" >/dev/null
  local dev
  dev=$(jq -c --arg m "${2}Mi" --arg p "$3" '.attributes.productName.string = $p |
    .attributes.uuid.string = "GPU-fake-\($p)" | .capacity.memory.value = $m |
    .capacity.memory.requestPolicy.default = $m' <<<"$gpu0")
  kc apply -f - >/dev/null <<EOF
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
 "metadata": {"name": "$1-gpu.gpushare.io", "labels": {"gs-test": "extender"}},
 "spec": {"driver": "gpu.gpushare.io", "nodeName": "$1",
          "pool": {"name": "$1", "generation": 1, "resourceSliceCount": 1}, "devices": [$dev]}}
EOF
}
fake_node gs-fake-big 81079 "NVIDIA H100-80GB"
fake_node gs-fake-small 22528 "NVIDIA L4"
nodes="gs-node gs-fake-big gs-fake-small"

bound() { [[ -n $(kc get pod "$1" -o 'jsonpath={.spec.nodeName}') ]]; }
# ext_pod NAME: a gpu-quarter pod that tolerates every taint; prints the node it was bound to
ext_pod() {
  KR_POD_TOLERATE=1 gpu_pod "$1" gpu-quarter localhost/gpushare/busybox:1 /bin/sleep 3600
  kc label pod "$1" gs-test=extender >/dev/null
  wait_until 60 bound "$1" || { kc describe pod "$1" >&2; fail "pod $1 not bound after 60 s"; }
  kc get pod "$1" -o 'jsonpath={.spec.nodeName}'
}

# 1. Without the extender
n0=$(ext_pod ext-0)
[[ " $nodes " == *" $n0 "* ]] || fail "pod ext-0 bound to $n0"
kc delete pod ext-0 --force --grace-period=0 >/dev/null 2>&1
gone() { ! kc get resourceclaims -o name | grep -q ext-0; }
wait_until 60 gone || fail "pod ext-0's claim is still there"
echo "without the extender kube-scheduler bound pod ext-0 to $n0"

# 2. With it: the extender's own ServiceAccount and RBAC (scheduler-extender.yaml, without its
# Deployment and Service: the image is not published), a token of it
python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] not in ("Deployment", "Service")]
yaml.safe_dump_all(docs, sys.stdout)' "$KR_ROOT/deploy/kubernetes/scheduler-extender.yaml" >"$KR_GS/extender-rbac.yaml"
kc apply -f "$KR_GS/extender-rbac.yaml" >/dev/null
kc -n gpushare-system create token gpushare-scheduler-extender --duration 1h >"$KR_GS/extender.token"
: >"$EXT_LOG"
setsid nsenter -t "$(cat "$KR_DIR/pids/ns")" -m -n -- "$KR_BUILD/bin/gpushare-scheduler-extender" serve \
  --listen 127.0.0.1:18888 --server "https://127.0.0.1:$K8S_API_PORT" --token-file "$KR_GS/extender.token" \
  --ca-file "$KR_DIR/certs/ca.crt" --log-level debug >>"$EXT_LOG" 2>&1 </dev/null &
echo $! >"$KR_GS/extender.pid"
ready() { in_cluster curl -sf --max-time 2 http://127.0.0.1:18888/readyz; }
wait_until 30 ready || { tail "$EXT_LOG" >&2; fail "the extender is not ready after 30 s"; }
# its view has the three nodes and their GPUs (its WATCHes have seen the fake ones)
sleep 1
taken=()
for i in 1 2 3; do
  n=$(ext_pod "ext-$i")
  best=$(grep -E "prioritize default/ext-$i: best node " "$EXT_LOG" | tail -1 | sed 's/.*best node \([^ ]*\) of .*/\1/')
  [[ -n $best ]] || { tail -n 20 "$EXT_LOG" >&2; fail "the extender was not asked to prioritize pod ext-$i (kube-scheduler did not call it)"; }
  expect_eq "$n" "$best" "pod ext-$i's node (the extender put $best first)"
  taken+=("ext-$i:$n")
done
expect_eq "${taken[0]#*:}" gs-fake-small "pod ext-1's node: the small GPU fits a quarter best"
[[ ${taken[1]#*:} != gs-fake-small ]] || fail "pod ext-2 on gs-fake-small, where it does not fit"
calls=$(grep -cE "prioritize default/ext-[123]: best node" "$EXT_LOG")
pass "kube-scheduler called the extender ($calls prioritize answers) and bound each pod to its first node: ${taken[*]} (without it: ext-0 on $n0)"
