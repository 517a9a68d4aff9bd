#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck source-path=SCRIPTDIR
# The k8s-real fixture's cleanup (ctest k8s_real_down, FIXTURES_CLEANUP k8s_real): stops what
# up.sh and the tests started, each by its PID (the extender, gpushare-k8s, the cluster, then
# gpushared), and checks that nothing is left: no process in the cluster's namespace, no mount of
# its directory, no cgroup of its kubelet. KR_DIR stays (the logs) until the next up.sh.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
[[ -d $KR_DIR ]] || exit 0
mnt=$(cat "$KR_DIR/pids/ns.mnt" 2>/dev/null || true)
cg=$(cat "$KR_DIR/pids/cgroup" 2>/dev/null || true)
kr_stop extender
kr_stop plugin
"$K8S_TOOLS/cluster.sh" stop "$KR_DIR"
kr_stop gpushared
rm -f "$KR_DIR/ready"
left=()
if [[ -n $mnt ]]; then
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/ns/mnt" 2>/dev/null) == "$mnt" ]] && left+=("${p#/proc/}")
  done
fi
[[ ${#left[@]} -eq 0 ]] || fail "processes left in the cluster's namespace: ${left[*]}"
if grep -qF "$KR_DIR/" /proc/self/mountinfo; then fail "mounts left: $(grep -F "$KR_DIR/" /proc/self/mountinfo)"; fi
if [[ -n $cg ]]; then
  for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
    [[ -d $h/$cg ]] && fail "cgroup left: $h/$cg"
  done
fi
echo "k8s-real cluster stopped; no process, mount or cgroup left (logs in $KR_DIR)"
