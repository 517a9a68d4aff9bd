# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
# Helpers of the k8s-real acceptance tests (issue 35), sourced by up.sh, down.sh and the tests.
# The tests share one cluster (ctest fixture k8s_real: up.sh starts it, down.sh stops it): a
# start costs 10-20 s and its images, gpushared and gpushare-k8s more; one per test would double
# a run. Everything lives in KR_DIR (the build tree's k8s-real/): the cluster of
# scripts/k8s/cluster.sh there, and in KR_DIR/gs gpushared on gpusim (GPU 0 an H100-80GB shared,
# GPU 1 an H100-80GB in MIG mode), its socket, gpushare-k8s's plugin directory and logs.
# The node: gs-node; the plugin registered with its kubelet, authenticated with the admin
# kubeconfig; the claim templates of deploy/kubernetes/claim-templates.yaml in namespace
# default; images localhost/gpushare/busybox:1 (busybox-static) and localhost/gpushare/cuda:1
# (busybox, gs-ct-fill, compute_worker and their libraries at their host paths).
# Inputs: GS_BUILD_DIR (default ROOT/build), K8S_VERSION (scripts/k8s/build.sh).
set -euo pipefail
KR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
KR_BUILD=$(cd "${GS_BUILD_DIR:-$KR_ROOT/build}" && pwd)
KR_DIR=$KR_BUILD/k8s-real
KR_GS=$KR_DIR/gs
K8S_TOOLS=$KR_ROOT/scripts/k8s
# shellcheck disable=SC2034 # (for the tests)
GI=1073741824
# shellcheck disable=SC2034
CONTEXT=543162368 # an H100-80GB context's own memory (gpusim)
export GPUSIM_STATE=$KR_GS/sim GPUSIM_DEVICES=H100-80GB,H100-80GB
export GPUSHARE_SOCKET=$KR_GS/gpushared.sock
export LD_LIBRARY_PATH=$KR_BUILD/sim

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
kc() { "$K8S_TOOLS/cluster.sh" kubectl "$KR_DIR" "$@"; }
gs() { "$KR_BUILD/bin/gpushare" "$@"; }
expect_eq() { # ACTUAL EXPECTED WHAT
  [[ $1 == "$2" ]] || fail "$3: '$1', expected '$2'"
}
wait_until() { # SECONDS CMD...: until CMD succeeds (polled every 0.2 s); 1 when it never does
  local n=0 max=$(($1 * 5))
  shift
  until "$@" >/dev/null 2>&1; do
    n=$((n + 1))
    ((n < max)) || return 1
    sleep 0.2
  done
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# kr_env: the cluster's variables (K8S_*); fails when no cluster runs in KR_DIR, skips (77) when
# the fixture's setup skipped
kr_env() {
  # shellcheck source=../../skip.sh
  [[ -f $KR_DIR/skipped ]] && { source "$KR_ROOT/tests/skip.sh"; gs_skip "$(cat "$KR_DIR/skipped") (the fixture k8s_real_up skipped)"; }
  [[ -f $KR_DIR/env && -f $KR_DIR/ready ]] || fail "no cluster in $KR_DIR: the fixture k8s_real_up did not run or failed"
  # shellcheck disable=SC1091
  source "$KR_DIR/env"
}

# in_cluster CMD...: CMD in the cluster's mount and network namespaces (exec: the same PID)
in_cluster() { nsenter -t "$(cat "$KR_DIR/pids/ns")" -m -n -- "$@"; }

# kr_alive NAME: the process recorded in KR_GS/NAME.pid runs
kr_alive() { [[ -f $KR_GS/$1.pid ]] && kill -0 "$(cat "$KR_GS/$1.pid")" 2>/dev/null; }

# kr_stop NAME [SIGNAL]: stops the process of KR_GS/NAME.pid by its PID (default SIGTERM; SIGKILL
# after 10 s) and waits for it
kr_stop() {
  local p n=0
  kr_alive "$1" || return 0
  p=$(cat "$KR_GS/$1.pid")
  kill "-${2:-TERM}" "$p" 2>/dev/null || true
  while kill -0 "$p" 2>/dev/null; do
    n=$((n + 1))
    ((n == 100)) && kill -KILL "$p" 2>/dev/null
    ((n < 150)) || fail "$1 (pid $p) does not stop"
    sleep 0.1
  done
  rm -f "$KR_GS/$1.pid"
}

# kr_start_gpushared: gpushared on the gpusim node of KR_GS (its ledger in KR_GS/state, kept
# across restarts); returns when it answers
kr_start_gpushared() {
  setsid "$KR_BUILD/bin/gpushared" --config "$KR_GS/gpushare.conf" --state-dir "$KR_GS/state" \
    >>"$KR_GS/gpushared.log" 2>&1 </dev/null &
  echo $! >"$KR_GS/gpushared.pid"
  wait_until 20 gs leases || { tail -n 20 "$KR_GS/gpushared.log" >&2; fail "gpushared does not answer"; }
}

# kr_start_plugin: gpushare-k8s in the cluster's namespaces, registered with the kubelet
kr_start_plugin() {
  mkdir -p "$K8S_KUBELET_ROOT/plugins/gpu.gpushare.io"
  setsid nsenter -t "$(cat "$KR_DIR/pids/ns")" -m -n -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" \
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH" GPUSIM_STATE="$GPUSIM_STATE" \
    "$KR_BUILD/bin/gpushare-k8s" --node-name "$K8S_NODE" --registry-dir "$K8S_PLUGINS_REGISTRY" \
    --plugin-dir "$K8S_KUBELET_ROOT/plugins/gpu.gpushare.io" --cdi-dir "$K8S_CDI_DIR" \
    --gpushared-socket "$GPUSHARE_SOCKET" --gpushare "$KR_BUILD/bin/gpushare" \
    --shim "$KR_BUILD/lib/libgpushare.so" --gpusim-cdi sim --kubeconfig "$KR_DIR/kubeconfig" \
    --resync 0.5 --log-level debug >>"$KR_GS/plugin.log" 2>&1 </dev/null &
  echo $! >"$KR_GS/plugin.pid"
}

# slice_devices: "NAME" of every device in the node's ResourceSlices of gpu.gpushare.io, sorted
slice_devices() {
  kc get resourceslices -o json |
    jq -r '[.items[] | select(.spec.driver == "gpu.gpushare.io") | .spec.devices // [] | .[].name] | sort | join(" ")'
}

# keyed_leases: "KEY:STATE" of gpushared's leases with a key, sorted
keyed_leases() {
  gs leases --json | jq -r '[.[] | select(.key != null) | .key + ":" + .state] | sort | join(" ")'
}
no_leases() { [[ -z $(keyed_leases) ]]; }
# lease_ids: "ID:KEY" of the keyed leases, sorted
lease_ids() {
  gs leases --json | jq -r '[.[] | select(.key != null) | "\(.id):\(.key)"] | sort | join(" ")'
}

# pod_phase NAME: the pod's phase ("" when none)
pod_phase() { kc get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null || true; }
phase_is() { [[ $(pod_phase "$1") == "$2" ]]; }
# wait_phase NAME PHASE SECONDS: fails (with the pod described) when it is not reached. The tests
# give a pod 180 s: on a loaded machine the kubelet can ask for a claim before the API server's
# Node authorizer has linked it to the pod ("no relationship found"), and its retry backs off
# (over a minute seen; docs/kubernetes.md, "On a real cluster")
wait_phase() {
  wait_until "$3" phase_is "$1" "$2" && return 0
  kc describe pod "$1" >&2 || true
  fail "pod $1 is '$(pod_phase "$1")', not $2, after $3 s"
}
# claim_of POD: the name of the ResourceClaim made for the pod's claim "gpu"
claim_of() {
  kc get pod "$1" -o 'jsonpath={.status.resourceClaimStatuses[?(@.name=="gpu")].resourceClaimName}'
}
# claim_uid CLAIM, claim_device CLAIM: its UID; the device the scheduler allocated
claim_uid() { kc get resourceclaim "$1" -o 'jsonpath={.metadata.uid}'; }
claim_device() { kc get resourceclaim "$1" -o 'jsonpath={.status.allocation.devices.results[0].device}'; }

# shared_template NAME MEMORY COMPUTE LABEL=VALUE [GPUCONFIG]: a ResourceClaimTemplate of one
# shared GPU's MEMORY and COMPUTE % (as claim-templates.yaml's shared ones), labelled; GPUCONFIG:
# GpuConfig fields as JSON ({"computeMax": 5})
shared_template() {
  jq -n --arg n "$1" --arg m "$2" --arg c "$3" --arg l "$4" --argjson g "${5:-null}" '{
    apiVersion: "resource.k8s.io/v1", kind: "ResourceClaimTemplate",
    metadata: {name: $n, labels: {($l | split("=")[0]): ($l | split("=")[1])}},
    spec: {spec: {devices: ({requests: [{name: "gpu", exactly: {deviceClassName: "gpu.gpushare.io",
      selectors: [{cel: {expression: "device.attributes[\"gpu.gpushare.io\"].mode == \"shared\""}}],
      capacity: {requests: {memory: $m, compute: $c}}}}]} +
      (if $g == null then {} else {config: [{requests: ["gpu"], opaque: {driver: "gpu.gpushare.io",
        parameters: ({apiVersion: "gpu.gpushare.io/v1", kind: "GpuConfig"} + $g)}}]} end))}}}' |
    kc apply -f - >/dev/null
}

# gpu_pod NAME TEMPLATE IMAGE CMD...: a pod (restartPolicy Never) with the claim template's claim;
# with KR_POD_CPU set, its container requests that much CPU (a BestEffort pod's cgroup has 2 CPU
# shares: on a busy machine it cannot keep a GPU fed); with KR_POD_TOLERATE=1 it tolerates every
# taint (a Node object without a kubelet is NotReady)
gpu_pod() {
  local name=$1 tmpl=$2 image=$3 req="" tol=""
  [[ -n ${KR_POD_CPU:-} ]] && req=", requests: {cpu: \"$KR_POD_CPU\"}"
  [[ ${KR_POD_TOLERATE:-0} == 1 ]] && tol="tolerations: [{operator: Exists}]"
  shift 3
  kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
  $tol
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: $tmpl}
  containers:
  - name: c
    image: $image
    imagePullPolicy: Never
    command: $(printf '%s\n' "$@" | jq -R . | jq -sc .)
    resources: {claims: [{name: gpu}]$req}
EOF
}
