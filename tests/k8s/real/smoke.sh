#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck source-path=SCRIPTDIR
# k8s-real smoke test (issue 35): the real Kubernetes of scripts/k8s/cluster.sh starts in a
# temporary directory, its node gets Ready, a pod of a locally built busybox-static image
# (imported, no registry) runs to completion and its log is what it printed; then everything
# stops and nothing is left: no process in the cluster's namespace, no mount of its directory,
# no cgroup of its kubelet.
# Needs root and the components in the cache (scripts/k8s/build.sh): otherwise skipped (77,
# tests/skip.sh); with GS_REQUIRE_K8S=1 it builds them instead. K8S_VERSION selects the release
# (1.37 default, 1.36). GS_KEEP=1 keeps the directory (the logs) of a passing run too.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../skip.sh
source "$root/tests/skip.sh"
k8s=$root/scripts/k8s

[[ $(id -u) -eq 0 ]] || gs_skip "needs root (namespaces, cgroups, the kubelet)"
if ! "$k8s/build.sh" --env --offline >/dev/null 2>&1; then
  if [[ ${GS_REQUIRE_K8S:-0} == 1 ]]; then
    "$k8s/build.sh" || { echo "FAIL: scripts/k8s/build.sh failed" >&2; exit 1; }
  else
    gs_skip "the Kubernetes components are not built (scripts/k8s/build.sh, or GS_REQUIRE_K8S=1)"
  fi
fi
bb=$(command -v busybox || true)
[[ -n $bb ]] && file -L "$bb" 2>/dev/null | grep -q 'statically linked' || bb=/bin/busybox
[[ -x $bb ]] || gs_skip "busybox-static is not installed"

dir=$(mktemp -d /tmp/gs-k8s-smoke.XXXXXX)
fail() { echo "FAIL: $*" >&2; exit 1; }
mnt='' cg=''
finish() {
  local rc=$?
  "$k8s/cluster.sh" stop "$dir" || true
  if [[ $rc -ne 0 ]]; then
    echo "--- logs in $dir/logs (kept)" >&2
    for f in "$dir"/logs/*.log; do [[ -f $f ]] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }; done
  elif [[ ${GS_KEEP:-0} != 1 ]]; then
    rm -rf "$dir"
  fi
}
trap finish EXIT

t0=$(date +%s)
"$k8s/cluster.sh" start "$dir"
t_ready=$(( $(date +%s) - t0 ))
mnt=$(cat "$dir/pids/ns.mnt")
cg=$(cat "$dir/pids/cgroup")
kc() { "$k8s/cluster.sh" kubectl "$dir" "$@"; }
echo "node Ready after $t_ready s"

# the image: busybox-static as /bin/busybox and a few of its applets
"$k8s/cluster.sh" image "$dir" localhost/gpushare/busybox:1 "$dir/images/busybox.tar" \
  "$bb=/bin/busybox" --link bin/sh=busybox --link bin/echo=busybox --link bin/cat=busybox \
  --link bin/hostname=busybox --link bin/sleep=busybox >/dev/null

# pods need the namespace's default ServiceAccount (the controller-manager makes it)
for _ in $(seq 60); do kc get serviceaccount default >/dev/null 2>&1 && break; sleep 1; done
kc get serviceaccount default >/dev/null || fail "no default ServiceAccount after 60 s"

kc apply -f - <<'YAML' >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: smoke}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - name: c
    image: localhost/gpushare/busybox:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo gpushare-k8s-real smoke: hello from $(hostname)"]
YAML
t1=$(date +%s)
phase=
for _ in $(seq 120); do
  phase=$(kc get pod smoke -o 'jsonpath={.status.phase}' 2>/dev/null || true)
  [[ $phase == Succeeded || $phase == Failed ]] && break
  sleep 1
done
if [[ $phase != Succeeded ]]; then
  kc describe pod smoke >&2 || true
  fail "the pod's phase is '$phase', not Succeeded, after 120 s"
fi
echo "pod Succeeded $(( $(date +%s) - t1 )) s after its creation"
log=$(kc logs smoke)
[[ $log == "gpushare-k8s-real smoke: hello from smoke" ]] || fail "the pod's log: '$log'"
echo "pod log: $log"
kc delete pod smoke --wait=true --timeout=60s >/dev/null

"$k8s/cluster.sh" stop "$dir"
# nothing left: processes of the namespace, mounts of the directory, cgroups
left=()
for p in /proc/[0-9]*; do
  [[ $(readlink "$p/ns/mnt" 2>/dev/null) == "$mnt" ]] && left+=("${p#/proc/}")
done
[[ ${#left[@]} -eq 0 ]] || fail "processes left in the cluster's namespace: ${left[*]}"
if grep -qF "$dir" /proc/self/mountinfo; then fail "mounts left: $(grep -F "$dir" /proc/self/mountinfo)"; fi
for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
  [[ -d $h/$cg ]] && fail "cgroup left: $h/$cg"
done
echo "stopped; no process, mount or cgroup left"
echo "PASS: k8s-real smoke ($(grep -h '^K8S_VERSION_FULL' "$dir/env" | cut -d= -f2))"
