#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A probe, not a test (not registered with ctest; issue 35's next steps): gpushare-k8s against
# the real kubelet and API server of scripts/k8s/cluster.sh. Starts the cluster, gpushared on
# gpusim (GPUSIM_DEVICES, default 2 x H100-80GB, the second in MIG mode when GS_PROBE_MIG=1),
# applies deploy/kubernetes (namespace, dra-driver.yaml: DeviceClass, RBAC, admission policy;
# the DaemonSet stays without pods: the node is not labelled), runs build/bin/gpushare-k8s in
# the cluster's namespaces with the admin kubeconfig (or, GS_PROBE_SA=1, the ServiceAccount's
# token; GS_PROBE_SA=pod, its token bound to a pod on the node, as the DaemonSet's pod has it), and reports: did the kubelet register the plugin, which ResourceSlices did the API
# server store (and what it refused), and, with GS_PROBE_POD=1, what a pod with the claim template
# GS_PROBE_TEMPLATE (gpu-4gi-30) gets (scheduled? prepared? started with the CDI device?).
# GS_PROBE_GPUSIM_CDI=NAME adds gpusim's CDI device (its spec must be in the cluster's CDI dir).
# Usage: tests/k8s/real/probe_dra.sh [BUILD_DIR]   (default build); root; the components built.
# Output: what it saw, on stdout; its directory (logs, the slices as YAML) is kept and named.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
k8s=$root/scripts/k8s
dir=$(mktemp -d /tmp/gs-k8s-probe.XXXXXX)
work=$dir/gs
mkdir -p "$work"
echo "probe directory: $dir"
daemon=
cleanup() {
  [[ -n ${plugin_pid:-} ]] && kill "$plugin_pid" 2>/dev/null
  "$k8s/cluster.sh" stop "$dir"
  [[ -n $daemon ]] && kill "$daemon" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT
kc() { "$k8s/cluster.sh" kubectl "$dir" "$@"; }

"$k8s/cluster.sh" start "$dir" || exit 1
# shellcheck disable=SC1091
source "$dir/env"

export GPUSIM_STATE=$work/sim GPUSIM_DEVICES=${GPUSIM_DEVICES:-H100-80GB,H100-80GB}
export GPUSHARE_SOCKET=$work/gpushared.sock LD_LIBRARY_PATH=$build/sim
if [[ ${GS_PROBE_MIG:-0} == 1 ]]; then
  "$build/sim/nvidia-smi" -i 1 -mig 1 >/dev/null
  printf '[gpu:1]\nmode = mig\n' >"$work/gpushare.conf"
else
  : >"$work/gpushare.conf"
fi
"$build/bin/gpushared" --config "$work/gpushare.conf" --state-dir "$work/state" \
  --metrics-listen 127.0.0.1:0 >"$work/gpushared.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do "$build/bin/gpushare" leases >/dev/null 2>&1 && break; sleep 0.1; done
"$build/bin/gpushare" leases >/dev/null 2>&1 || { tail "$work/gpushared.log"; exit 1; }
echo "== gpushared on gpusim ($GPUSIM_DEVICES): up"

echo "== kubectl apply deploy/kubernetes/namespace.yaml dra-driver.yaml claim-templates.yaml"
kc apply -f "$root/deploy/kubernetes/namespace.yaml" -f "$root/deploy/kubernetes/dra-driver.yaml" 2>&1
kc -n default apply -f "$root/deploy/kubernetes/claim-templates.yaml" 2>&1
# GS_PROBE_EXTRA: more objects to apply (a YAML file), e.g. a claim template under trial
[[ -n ${GS_PROBE_EXTRA:-} ]] && kc -n default apply -f "$GS_PROBE_EXTRA" 2>&1

auth=(--kubeconfig "$dir/kubeconfig")
if [[ ${GS_PROBE_SA:-0} == pod ]]; then
  # a token bound to a pod of the ServiceAccount on this node (what the DaemonSet's pod gets:
  # the node's name is in it, which the admission policy reads)
  for _ in $(seq 30); do kc -n gpushare-system get serviceaccount gpushare-k8s >/dev/null 2>&1 && break; sleep 1; done
  kc -n gpushare-system apply -f - <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: token-holder}
spec:
  serviceAccountName: gpushare-k8s
  automountServiceAccountToken: false
  containers: [{name: c, image: localhost/gpushare/pause:1, imagePullPolicy: Never}]
YAML
  kc -n gpushare-system wait --for=condition=Ready pod/token-holder --timeout=60s
  kc -n gpushare-system create token gpushare-k8s --duration 1h --bound-object-kind Pod \
    --bound-object-name token-holder \
    --bound-object-uid "$(kc -n gpushare-system get pod token-holder -o 'jsonpath={.metadata.uid}')" >"$work/token"
  GS_PROBE_SA=1
fi
if [[ ${GS_PROBE_SA:-0} == 1 ]]; then
  [[ -s $work/token ]] || kc -n gpushare-system create token gpushare-k8s --duration 1h >"$work/token"
  auth=(--server "https://127.0.0.1:$K8S_API_PORT" --token-file "$work/token" --ca-file "$dir/certs/ca.crt")
  echo "== gpushare-k8s authenticates as the ServiceAccount gpushare-system/gpushare-k8s"
fi
mkdir -p "$K8S_KUBELET_ROOT/plugins/gpu.gpushare.io"
"$k8s/cluster.sh" exec "$dir" env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
  "$build/bin/gpushare-k8s" --node-name "$K8S_NODE" --registry-dir "$K8S_PLUGINS_REGISTRY" \
  --plugin-dir "$K8S_KUBELET_ROOT/plugins/gpu.gpushare.io" --cdi-dir "$K8S_CDI_DIR" \
  --gpushared-socket "$GPUSHARE_SOCKET" --gpushare "$build/bin/gpushare" \
  --shim "$build/lib/libgpushare.so" ${GS_PROBE_GPUSIM_CDI:+--gpusim-cdi "$GS_PROBE_GPUSIM_CDI"} \
  "${auth[@]}" --log-level debug \
  >"$work/plugin.log" 2>&1 &
plugin_pid=$!
sleep 8
echo "== the plugin's log (first 30 lines)"
head -n 30 "$work/plugin.log"
echo "== the kubelet on the plugin"
grep -iE 'gpu.gpushare.io|plugin_registry|plugins_registry|DRA|dra\.sock' "$dir/logs/kubelet.log" | grep -v '^I.*feature_gate' | tail -n 20
echo "== ResourceSlices stored by the API server"
kc get resourceslices -o wide 2>&1
kc get resourceslices -o yaml >"$dir/slices.yaml" 2>&1
echo "(as YAML: $dir/slices.yaml)"
jq -r '.items[] | "\(.metadata.name): \(.spec.devices // [] | length) devices, \(.spec.sharedCounters // [] | length) counter sets; allowMultipleAllocations on \([.spec.devices[]? | select(.allowMultipleAllocations)] | length)"' \
  <<<"$(kc get resourceslices -o json)"
echo "== the API server's refusals"
grep -E 'resourceslices' "$work/plugin.log" | grep -iE 'HTTP [45]|refus|invalid|forbidden|error' | head -n 10

if [[ ${GS_PROBE_POD:-0} == 1 ]]; then
  "$k8s/cluster.sh" image "$dir" localhost/gpushare/busybox:1 "$dir/images/busybox.tar" \
    "$(command -v busybox)=/bin/busybox" --link bin/sh=busybox --link bin/env=busybox \
    --link bin/cat=busybox >/dev/null
  for _ in $(seq 30); do kc get serviceaccount default >/dev/null 2>&1 && break; sleep 1; done
  kc apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: gpu-pod}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: ${GS_PROBE_TEMPLATE:-gpu-4gi-30}}
  containers:
  - name: c
    image: localhost/gpushare/busybox:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "env | sort"]
    resources: {claims: [{name: gpu}]}
YAML
  for _ in $(seq 60); do
    phase=$(kc get pod gpu-pod -o 'jsonpath={.status.phase}' 2>/dev/null)
    [[ $phase == Succeeded || $phase == Failed ]] && break
    sleep 1
  done
  echo "== the pod: phase '$phase'"
  kc get resourceclaims -o wide 2>&1
  kc get resourceclaims -o yaml >"$dir/claims.yaml" 2>&1
  kc get events --sort-by=.lastTimestamp 2>&1 | tail -n 12
  kc logs gpu-pod 2>&1 | grep -iE 'GPUSHARE|CUDA|LD_PRELOAD|NVIDIA|gpusim' | head -n 12
  echo "== the plugin's log on prepare"
  grep -iE 'prepare|lease|claim' "$work/plugin.log" | tail -n 12
  ls "$K8S_CDI_DIR"
fi
