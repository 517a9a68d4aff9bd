#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck source-path=SCRIPTDIR
# The k8s-real fixture's setup (ctest k8s_real_up, FIXTURES_SETUP k8s_real): starts the cluster
# the acceptance tests share (tests/k8s/real/lib.sh says what is in it) and leaves it running;
# down.sh stops it. A cluster left in KR_DIR by an earlier run is stopped first.
# kube-scheduler is configured (GS_K8S_SCHEDULER_CONFIG) with gpushare's extender at
# http://127.0.0.1:18888/ in the cluster's network namespace, ignorable: it runs only while
# extender.sh runs it, and scheduling skips it otherwise.
# Needs root and the components (scripts/k8s/build.sh): otherwise skipped (77, tests/skip.sh);
# with GS_REQUIRE_K8S=1 it builds them instead.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../../skip.sh
source "$KR_ROOT/tests/skip.sh"
# a skip is said to the tests of the fixture too (they skip, not fail: kr_env)
mkdir -p "$KR_DIR"
rm -f "$KR_DIR/skipped"
kr_skip() { echo "$*" >"$KR_DIR/skipped"; gs_skip "$@"; }

[[ $(id -u) -eq 0 ]] || kr_skip "needs root (namespaces, cgroups, the kubelet)"
if ! "$K8S_TOOLS/build.sh" --env --offline >/dev/null 2>&1; then
  if [[ ${GS_REQUIRE_K8S:-0} == 1 ]]; then
    "$K8S_TOOLS/build.sh" || fail "scripts/k8s/build.sh failed"
  else
    kr_skip "the Kubernetes components are not built (scripts/k8s/build.sh, or GS_REQUIRE_K8S=1)"
  fi
fi
bb=$(command -v busybox || true)
[[ -n $bb ]] && file -L "$bb" 2>/dev/null | grep -q 'statically linked' || bb=/bin/busybox
[[ -x $bb ]] || kr_skip "busybox-static is not installed"
T=$KR_BUILD/tests
for f in "$KR_BUILD/bin/gpushared" "$KR_BUILD/bin/gpushare-k8s" "$T/gs-ct-fill" "$T/compute_worker" \
  "$KR_BUILD/bin/gpushare-scheduler-extender"; do
  [[ -x $f ]] || fail "$f is not built"
done

if [[ -f $KR_DIR/env ]]; then
  "$(dirname "$0")/down.sh" >/dev/null 2>&1 || true
fi
rm -rf "$KR_DIR"
mkdir -p "$KR_GS"
cat >"$KR_DIR/scheduler.in.yaml" <<'EOF'
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "__KUBECONFIG__"}
leaderElection: {leaderElect: false}
percentageOfNodesToScore: 100
extenders:
  - urlPrefix: "http://127.0.0.1:18888/"
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: 1000
    enableHTTPS: false
    nodeCacheCapable: true
    ignorable: true
    httpTimeout: 2s
EOF
t0=$(date +%s)
GS_K8S_SCHEDULER_CONFIG=$KR_DIR/scheduler.in.yaml "$K8S_TOOLS/cluster.sh" start "$KR_DIR"
# shellcheck disable=SC1091
source "$KR_DIR/env"

# gpushared on gpusim: GPU 0 shared, GPU 1 in MIG mode
"$KR_BUILD/sim/nvidia-smi" -i 1 -mig 1 >/dev/null
printf '[daemon]\nshim = %s\n[gpu:1]\nmode = mig\n' "$KR_BUILD/lib/libgpushare.so" >"$KR_GS/gpushare.conf"
kr_start_gpushared
# gpusim's node device for the containers (its libraries and state), where containerd reads CDI
gs cdi gpusim sim --sim "$KR_BUILD/sim" --state "$GPUSIM_STATE" --dir "$K8S_CDI_DIR" >/dev/null

kc apply -f "$KR_ROOT/deploy/kubernetes/namespace.yaml" -f "$KR_ROOT/deploy/kubernetes/dra-driver.yaml" >/dev/null
wait_until 60 kc get serviceaccount default || fail "no default ServiceAccount after 60 s"
kc -n default apply -f "$KR_ROOT/deploy/kubernetes/claim-templates.yaml" >/dev/null
kr_start_plugin
has_slices() { [[ -n $(slice_devices) ]]; }
wait_until 30 has_slices || { tail -n 20 "$KR_GS/plugin.log" >&2; fail "no ResourceSlices of gpu.gpushare.io after 30 s"; }

# the images: busybox; the CUDA test programs with their libraries at their host paths
"$K8S_TOOLS/cluster.sh" image "$KR_DIR" localhost/gpushare/busybox:1 "$KR_DIR/images/busybox.tar" \
  "$bb=/bin/busybox" --link bin/sh=busybox --link bin/sleep=busybox --link bin/cat=busybox \
  --link bin/env=busybox >/dev/null
files=()
for f in "$T/gs-ct-fill" "$T/compute_worker"; do
  files+=("$f=$f")
  for lib in $(ldd "$f" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }'); do
    files+=("$(readlink -f "$lib")=$lib")
  done
done
mapfile -t files < <(printf '%s\n' "${files[@]}" | sort -u)
"$K8S_TOOLS/cluster.sh" image "$KR_DIR" localhost/gpushare/cuda:1 "$KR_DIR/images/cuda.tar" \
  "$bb=/bin/busybox" --link bin/sh=busybox --link bin/sleep=busybox "${files[@]}" >/dev/null
touch "$KR_DIR/ready"
echo "k8s-real cluster up in $(($(date +%s) - t0)) s: Kubernetes $K8S_VERSION_FULL; ResourceSlices' devices: $(slice_devices)"
