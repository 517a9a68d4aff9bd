#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# k8s-real helm (issue 36, acceptance 1, 2, 5): gpushare installed the way a Kubernetes admin
# does it, on the real cluster of scripts/k8s/cluster.sh.
#  1. the images of make images (build-pkg/images/*.tar) imported into the cluster's containerd;
#     the node labelled gpushare.io/gpushared=true;
#  2. helm install gpushare deploy/helm/gpushare, gpushared on gpusim (two H100-80GB) in the
#     agent's pod: within 60 s the node's ResourceSlices of driver gpu.gpushare.io are published;
#  3. a pod with a claim of template gpu-4gi-30 runs: its lease is exactly 4 GiB and 30 %, and
#     the container's environment says so; the time from helm install to the pod Running;
#  4. helm upgrade to another image tag (the same image tagged again: the DaemonSets roll their
#     pods) while the claim is prepared: the pod keeps running (no restart), its lease is the same
#     one and the only one;
#  5. health: GPU 1 is configured mig and starts with MIG off: an Event GpuUnavailable on the
#     Node, GPU 1 not published; MIG turned on with gpusim's nvidia-smi: an Event GpuAvailable and
#     its MIG devices published within 10 s; off again (the fault): GpuUnavailable and its devices
#     withdrawn within 10 s;
#  6. the pod deleted; the seeds' EKS example: a Deployment of four gpu-quarter pods all Running,
#     four leases of exactly 19 GiB and 25 %;
#  7. helm uninstall: nothing left on the node: no lease, no CDI spec of
#     gpushare's, no socket, no toolkit directory, no gpushared or gpushare-k8s process.
# The node's host paths (toolkit, run-time and state directories) are under the test's
# directory, so that the host's /usr/local and /run stay untouched.
# Needs root, the components (scripts/k8s/build.sh, with helm) and the image archives (make
# images); otherwise skipped (77), or, with GS_REQUIRE_K8S=1, built. GS_KEEP=1 keeps the
# directory of a passing run.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../skip.sh
source "$root/tests/skip.sh"
k8s=$root/scripts/k8s
tag=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
images=$root/build-pkg/images

[[ $(id -u) -eq 0 ]] || gs_skip "needs root (namespaces, cgroups, the kubelet)"
require() { # require WHAT CMD...: runs CMD when GS_REQUIRE_K8S=1, else skips
  local what=$1
  shift
  [[ ${GS_REQUIRE_K8S:-0} == 1 ]] || gs_skip "$what (or GS_REQUIRE_K8S=1)"
  "$@" || { echo "FAIL: $*" >&2; exit 1; }
}
"$k8s/build.sh" --env --offline kubernetes containerd etcd helm >/dev/null 2>&1 ||
  require "the Kubernetes components or helm are not built (scripts/k8s/build.sh kubernetes containerd etcd helm)" \
    "$k8s/build.sh" kubernetes containerd etcd helm
[[ -s $images/gpushare-node-$tag.tar ]] ||
  require "no image archives: make images" "$root/scripts/images.sh"
helm=$("$k8s/build.sh" --env --offline helm | sed -n 's/^HELM_BIN=//p' | tr -d "'\"")/helm
bb=$(command -v busybox || true)
[[ -n $bb ]] && file -L "$bb" 2>/dev/null | grep -q 'statically linked' || bb=/bin/busybox
[[ -x $bb ]] || gs_skip "busybox-static is not installed"

dir=$(mktemp -d /tmp/gs-k8s-helm.XXXXXX)
node=$dir/node # the node's host paths
fail() { echo "FAIL: $*" >&2; exit 1; }
finish() {
  local rc=$?
  set +e
  if [[ $rc -ne 0 ]]; then
    for p in $(kc -n gpushare-system get pods -o name 2>/dev/null); do
      echo "--- $p" >&2
      kc -n gpushare-system logs --all-containers "$p" 2>&1 | tail -n 20 >&2
    done
    kc get events -A --sort-by=.lastTimestamp 2>&1 | tail -n 15 >&2
  fi
  "$k8s/cluster.sh" stop "$dir"
  if [[ $rc -ne 0 ]]; then
    echo "--- logs in $dir/logs (kept)" >&2
    for f in "$dir"/logs/kubelet.log "$dir"/logs/containerd.log; do
      [[ -f $f ]] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }
    done
  elif [[ ${GS_KEEP:-0} != 1 ]]; then
    rm -rf "$dir"
  fi
}
trap finish EXIT
kc() { "$k8s/cluster.sh" kubectl "$dir" "$@"; }
h() { "$k8s/cluster.sh" exec "$dir" "$helm" "$@" 2> >(grep -v 'found symbolic link' >&2); }
# wait_for SECONDS WHAT CMD...: until CMD succeeds
wait_for() {
  local n=$1 what=$2
  shift 2
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  fail "$what: not after $n s"
}

"$k8s/cluster.sh" start "$dir"
# shellcheck disable=SC1091
source "$dir/env"
echo "== cluster up ($K8S_VERSION_FULL); importing the images"
t0=$(date +%s)
"$k8s/cluster.sh" import "$dir" "$images/gpushare-node-$tag.tar" >/dev/null
"$k8s/cluster.sh" import "$dir" "$images/gpushare-scheduler-extender-$tag.tar" >/dev/null
"$k8s/cluster.sh" exec "$dir" ctr -n k8s.io images tag "localhost/gpushare/node:$tag" \
  "localhost/gpushare/node:$tag-upgrade" >/dev/null
"$k8s/cluster.sh" image "$dir" localhost/gpushare/busybox:1 "$dir/images/busybox.tar" \
  "$bb=/bin/busybox" --link bin/sh=busybox --link bin/env=busybox --link bin/sleep=busybox >/dev/null
echo "imported in $(( $(date +%s) - t0 )) s"
kc label node "$K8S_NODE" gpushare.io/gpushared=true >/dev/null
wait_for 60 "the default ServiceAccount" kc get serviceaccount default

# the extender's image runs, as a user that is not root (runAsNonRoot: the kubelet refuses an
# image whose user is root)
jq -n --arg image "localhost/gpushare/scheduler-extender:$tag" '{apiVersion: "v1", kind: "Pod",
  metadata: {name: "extender-version"}, spec: {restartPolicy: "Never",
    securityContext: {runAsNonRoot: true}, automountServiceAccountToken: false,
    containers: [{name: "e", image: $image, imagePullPolicy: "Never", args: ["--version"]}]}}' |
  kc apply -f - >/dev/null
done_ok() { [[ $(kc get pod extender-version -o 'jsonpath={.status.phase}') == Succeeded ]]; }
wait_for 60 "the extender image's pod Succeeded" done_ok
echo "the extender's image, not root: $(kc logs extender-version)"
kc delete pod extender-version --wait=false >/dev/null

values=$dir/values.yaml
cat >"$values" <<EOF
kubeletDir: $K8S_KUBELET_ROOT
cdiDir: $K8S_CDI_DIR
apiServer: {host: 127.0.0.1, port: $K8S_API_PORT} # no kube-proxy here
agent:
  toolkitDir: $node/usr/local/gpushare/toolkit
  runtimeDir: $node/run/gpushare
  stateDir: $node/var/lib/gpushare
  gpusim: {enabled: true, devices: "H100-80GB,H100-80GB"}
  extraConfig: |
    [gpu:1]
    mode = mig
  logLevel: debug
plugin: {hostNetwork: true, driverCdi: ""}
EOF
echo "== helm install gpushare deploy/helm/gpushare"
t_install=$(date +%s)
h install gpushare "$root/deploy/helm/gpushare" -f "$values" >"$dir/install.log" ||
  { cat "$dir/install.log"; fail "helm install"; }
slices() { [[ $(kc get resourceslices -o json | jq "[.items[] | select(.spec.driver == \"gpu.gpushare.io\" and .spec.nodeName == \"$K8S_NODE\")] | length") -gt 0 ]]; }
wait_for 60 "the node's ResourceSlices" slices
t_slices=$(( $(date +%s) - t_install ))
echo "slices published $t_slices s after helm install: $(kc get resourceslices -o json | jq -c '[.items[] | {devices: (.spec.devices | length)}]')"

# the claim's pod: sleeps, with a claim of template gpu-4gi-30 (4 GiB and 30 %)
jq -n '{apiVersion: "v1", kind: "Pod", metadata: {name: "gpu-pod"},
  spec: {restartPolicy: "Never", automountServiceAccountToken: false, terminationGracePeriodSeconds: 1,
    resourceClaims: [{name: "gpu", resourceClaimTemplateName: "gpu-4gi-30"}],
    containers: [{name: "c", image: "localhost/gpushare/busybox:1", imagePullPolicy: "Never",
      command: ["/bin/sleep", "3600"], resources: {claims: [{name: "gpu"}]}}]}}' |
  kc apply -f - >/dev/null
running() { [[ $(kc get pod gpu-pod -o 'jsonpath={.status.phase}') == Running ]]; }
for _ in $(seq 120); do
  running && break
  ended=$(kc get pod gpu-pod -o 'jsonpath={.status.containerStatuses[0].state.terminated.message}')
  [[ -z $ended ]] || fail "the claim's container did not start: $ended"
  sleep 1
done
running || fail "the pod with the claim is not Running after 120 s"
t_running=$(( $(date +%s) - t_install ))
echo "the claim's pod Running $t_running s after helm install"

agent_pod() { kc -n gpushare-system get pods -l app.kubernetes.io/name=gpushare-agent -o 'jsonpath={.items[0].metadata.name}'; }
leases() {
  kc -n gpushare-system exec "$(agent_pod)" -c gpushared -- \
    gpushare leases --json --socket "$node/run/gpushare/gpushared.sock"
}
leases >"$dir/leases.json"
jq -e 'length == 1' "$dir/leases.json" >/dev/null || fail "not one lease: $(cat "$dir/leases.json")"
lease=$(jq -c '.[0] | {id, state, memory_limit, compute_share}' "$dir/leases.json")
[[ $(jq '.memory_limit' <<<"$lease") == 4294967296 && $(jq '.compute_share' <<<"$lease") == 30 ]] ||
  fail "the lease is not 4 GiB and 30 %: $lease"
env_of=$(kc exec gpu-pod -- env)
grep -q '^GPUSHARE_MEMORY_LIMIT=' <<<"$env_of" || fail "no GPUSHARE_MEMORY_LIMIT in the container: $env_of"
echo "the lease: $lease; in the container: $(grep -E '^GPUSHARE_(MEMORY_LIMIT|COMPUTE_SHARE)=' <<<"$env_of" | tr '\n' ' ')"

echo "== helm upgrade to localhost/gpushare/node:$tag-upgrade, the claim prepared"
restarts0=$(kc get pod gpu-pod -o 'jsonpath={.status.containerStatuses[0].restartCount}')
h upgrade gpushare "$root/deploy/helm/gpushare" -f "$values" --set "image.node.tag=$tag-upgrade" \
  >"$dir/upgrade.log" || { cat "$dir/upgrade.log"; fail "helm upgrade"; }
rolled() {
  local ds
  for ds in gpushare-agent gpushare-k8s; do
    kc -n gpushare-system rollout status "ds/$ds" --timeout=5s >/dev/null 2>&1 || return 1
    [[ $(kc -n gpushare-system get pods -l "app.kubernetes.io/name=$ds" \
      -o 'jsonpath={.items[*].spec.containers[0].image}') == "localhost/gpushare/node:$tag-upgrade" ]] || return 1
    [[ $(kc -n gpushare-system get pods -l "app.kubernetes.io/name=$ds" -o name | wc -l) == 1 ]] || return 1
  done
}
wait_for 120 "the DaemonSets rolled to the new tag" rolled
wait_for 30 "gpushared answering after the upgrade" leases
leases >"$dir/leases-after.json"
after=$(jq -c '.[0] | {id, state, memory_limit, compute_share}' "$dir/leases-after.json")
jq -e 'length == 1' "$dir/leases-after.json" >/dev/null ||
  fail "after the upgrade, not one lease: $(cat "$dir/leases-after.json")"
[[ $after == "$lease" ]] || fail "the lease changed in the upgrade: $lease, then $after"
running || fail "the claim's pod is not Running after the upgrade"
[[ $(kc get pod gpu-pod -o 'jsonpath={.status.containerStatuses[0].restartCount}') == "$restarts0" ]] ||
  fail "the claim's container restarted in the upgrade"
echo "after the upgrade: the same lease $after, the pod Running, no restart"

echo "== GPU health: GPU 1 (mode mig) with MIG off, on, off"
# events NAME: how many Events REASON on the node speak of GPU 1
events() {
  kc get events -n default -o json | jq --arg r "$1" --arg n "$K8S_NODE" '[.items[] |
    select(.involvedObject.kind == "Node" and .involvedObject.name == $n and .reason == $r and
      (.message | startswith("GPU 1 ")))] | length'
}
gpu1_devices() {
  kc get resourceslices -o json | jq '[.items[] | select(.spec.driver == "gpu.gpushare.io") |
    .spec.devices[]? | select(.name | startswith("gpu-1-"))] | length'
}
more_events() { [[ $(events "$1") -gt $2 ]]; }
published() { [[ $(gpu1_devices) -gt 0 ]]; }
withdrawn() { [[ $(gpu1_devices) == 0 ]]; }
smi() {
  kc -n gpushare-system exec "$(agent_pod)" -c gpushared -- env GPUSIM_STATE="$node/run/gpushare/gpusim" \
    /usr/libexec/gpushare/sim/nvidia-smi "$@" >/dev/null
}
wait_for 10 "an Event GpuUnavailable for GPU 1 (MIG off)" more_events GpuUnavailable 0
withdrawn || fail "GPU 1 (MIG off) is published"
echo "MIG off: $(kc get events -n default --field-selector reason=GpuUnavailable -o 'jsonpath={.items[-1:].message}')"
up=$(events GpuAvailable) down=$(events GpuUnavailable)
smi -i 1 -mig 1
t_fix=$(date +%s)
wait_for 10 "an Event GpuAvailable for GPU 1 (MIG on)" more_events GpuAvailable "$up"
wait_for 10 "GPU 1's MIG devices published" published
echo "MIG on: GpuAvailable and $(gpu1_devices) MIG devices of GPU 1 published after $(( $(date +%s) - t_fix )) s"
smi -i 1 -mig 0
t_fault=$(date +%s)
wait_for 10 "an Event GpuUnavailable for GPU 1 (MIG off again)" more_events GpuUnavailable "$down"
wait_for 10 "GPU 1's devices withdrawn" withdrawn
echo "MIG off again: GpuUnavailable, GPU 1's devices withdrawn after $(( $(date +%s) - t_fault )) s"

echo "== the pod deleted, helm uninstall"
kc delete pod gpu-pod --wait=true --timeout=60s >/dev/null
no_lease() { jq -e 'length == 0' <(leases) >/dev/null; }
wait_for 60 "the claim's lease released" no_lease

echo "== the EKS example: a Deployment of 4 pods, each a quarter of GPU 0 (gpu-quarter)"
jq -n '{apiVersion: "apps/v1", kind: "Deployment", metadata: {name: "quarters"},
  spec: {replicas: 4, selector: {matchLabels: {app: "quarters"}},
    template: {metadata: {labels: {app: "quarters"}},
      spec: {automountServiceAccountToken: false, terminationGracePeriodSeconds: 1,
        resourceClaims: [{name: "gpu", resourceClaimTemplateName: "gpu-quarter"}],
        containers: [{name: "c", image: "localhost/gpushare/busybox:1", imagePullPolicy: "Never",
          command: ["/bin/sleep", "3600"], resources: {claims: [{name: "gpu"}]}}]}}}}' |
  kc apply -f - >/dev/null
quarters_running() {
  [[ $(kc get pods -l app=quarters -o json | jq '[.items[] | select(.status.phase == "Running")] | length') == 4 ]]
}
wait_for 180 "the Deployment's 4 pods Running" quarters_running
leases >"$dir/leases-quarters.json"
# each pod a lease of exactly 19 GiB and 25 %, all four on GPU 0
jq -e 'length == 4 and all(.[]; .memory_limit == 20401094656 and .compute_share == 25 and .gpus[0].index == 0)' \
  "$dir/leases-quarters.json" >/dev/null || fail "not 4 leases of 19 GiB and 25 %: $(cat "$dir/leases-quarters.json")"
echo "4 pods Running, 4 leases of 19 GiB and 25 %: $(jq -c '[.[] | .gpus[].index]' "$dir/leases-quarters.json")"
kc delete deployment quarters --wait=true --timeout=60s >/dev/null
wait_for 60 "the Deployment's leases released" no_lease
h uninstall gpushare --wait --timeout 120s >"$dir/uninstall.log" || { cat "$dir/uninstall.log"; fail "helm uninstall"; }
gone() { [[ -z $(kc -n gpushare-system get pods -o name 2>/dev/null) ]]; }
wait_for 120 "the chart's pods gone" gone
left=()
[[ -e $node/usr/local/gpushare/toolkit ]] && left+=("the toolkit directory $node/usr/local/gpushare/toolkit")
[[ -n $(find "$node/run/gpushare" -mindepth 1 2>/dev/null) ]] &&
  left+=("in the run-time directory: $(find "$node/run/gpushare" -mindepth 1 | head -n 5 | tr '\n' ' ')")
grep -lr 'gpushare' "$K8S_CDI_DIR" >/dev/null 2>&1 && left+=("CDI specs: $(ls "$K8S_CDI_DIR")")
[[ -n $(find "$K8S_KUBELET_ROOT/plugins/gpu.gpushare.io" "$K8S_PLUGINS_REGISTRY" -type s 2>/dev/null) ]] &&
  left+=("sockets: $(find "$K8S_KUBELET_ROOT/plugins/gpu.gpushare.io" "$K8S_PLUGINS_REGISTRY" -type s)")
for p in /proc/[0-9]*; do
  cmd=$( { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null) || continue
  [[ $cmd == *"$dir"* && ( $cmd == *gpushared* || $cmd == *gpushare-k8s* ) ]] && left+=("process ${p#/proc/}: $cmd")
done
# the ledger (it stays, as apt-get remove leaves it): its leases table holds the live leases
held=$(sqlite3 "file:$node/var/lib/gpushare/state.db?mode=ro" "SELECT COUNT(*) FROM leases" 2>&1) ||
  left+=("the ledger cannot be read: $held")
[[ $held == 0 ]] || left+=("leases in the ledger: $held")
[[ ${#left[@]} -eq 0 ]] || { printf '  left: %s\n' "${left[@]}" >&2; fail "helm uninstall left things on the node"; }
echo "nothing left on the node: no lease (the ledger's leases: $held), CDI spec, socket, toolkit directory, process"
# the node's slices: the kubelet deletes a driver's slices some time after the driver is gone
no_slices() { [[ $(kc get resourceslices -o json | jq '[.items[] | select(.spec.driver == "gpu.gpushare.io")] | length') == 0 ]]; }
t_un=$(date +%s)
wait_for 120 "the node's ResourceSlices deleted after helm uninstall" no_slices
echo "the node's ResourceSlices gone $(( $(date +%s) - t_un )) s after the chart's pods"
echo "PASS: k8s-real helm ($K8S_VERSION_FULL): slices after $t_slices s, the claim's pod Running after $t_running s"
