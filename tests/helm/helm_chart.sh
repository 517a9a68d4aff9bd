#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# helm_chart (issue 36): the chart deploy/helm/gpushare, without a cluster.
#  1. helm lint --strict is clean;
#  2. helm template renders, with its defaults and with every optional part on (gpusim, a
#     per-node configuration, the extender, ServiceMonitor, dashboard), objects of known kinds,
#     the agent's gpushare.conf is what gpushared --check-config accepts (when a build is given);
#  3. bad values are refused, each with one line naming it: an unknown mode, a negative and a
#     zero over-provisioning factor, a port out of range, an unknown key, an unknown enforce;
#  4. deploy/kubernetes/*.yaml is the chart's rendering with ci/manifests-values.yaml
#     (tests/helm/check_manifests.py), object by object.
# helm: HELM, else the one scripts/k8s/build.sh built (helm.sh/helm/v4 from its Go module); not
# there: skipped (77), or built (about 7 min, then cached) with GS_REQUIRE_K8S=1 or GS_REQUIRE_ALL=1.
# Usage: tests/helm/helm_chart.sh [BUILD_DIR]   (BUILD_DIR/bin/gpushared checks the config)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../skip.sh
source "$root/tests/skip.sh"
chart=$root/deploy/helm/gpushare
build=${1:-${GS_HELM_BUILD:-}}
build=${build:+$(cd "$build" && pwd)}

helm=${HELM:-}
if [[ -z $helm ]]; then
  if ! env=$("$root/scripts/k8s/build.sh" --env --offline helm 2>/dev/null); then
    if [[ ${GS_REQUIRE_K8S:-0} == 1 || ${GS_REQUIRE_ALL:-0} == 1 ]]; then
      "$root/scripts/k8s/build.sh" helm >&2 || { echo "FAIL: scripts/k8s/build.sh helm" >&2; exit 1; }
      env=$("$root/scripts/k8s/build.sh" --env --offline helm)
    else
      gs_skip "helm is not built (scripts/k8s/build.sh helm, or GS_REQUIRE_K8S=1, or HELM=)"
    fi
  fi
  helm=$(sed -n 's/^HELM_BIN=//p' <<<"$env" | tr -d "'\"")/helm
fi
[[ -x $helm ]] || { echo "FAIL: no helm at $helm" >&2; exit 1; }
tmp=$(mktemp -d /tmp/gs-helm-chart.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# helm says, for each linked file of the chart's directory, that it followed the link
quiet() { grep -v 'found symbolic link in path' || true; }

echo "== 1. helm lint --strict; the chart's version is the project's (the images' default tag)"
project=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
for field in version appVersion; do
  v=$(sed -n "s/^$field: *\"\{0,1\}\([^\"]*\)\"\{0,1\}$/\1/p" "$chart/Chart.yaml")
  [[ $v == "$project" ]] || fail "Chart.yaml's $field is '$v', the project's version $project"
done
"$helm" lint --strict "$chart" >"$tmp/lint" 2>&1 || { quiet <"$tmp/lint"; fail "helm lint"; }
grep -qE '\[(WARNING|ERROR)\]' "$tmp/lint" && { quiet <"$tmp/lint"; fail "helm lint warns"; }
grep -q '1 chart(s) linted, 0 chart(s) failed' "$tmp/lint" || fail "helm lint: $(tail -n 1 "$tmp/lint")"

echo "== 2. helm template"
render() { # render OUT ARGS...: helm template into OUT; fails the test when helm refuses
  local out=$1
  shift
  "$helm" template gpushare "$chart" "$@" >"$out" 2>"$tmp/err" || { quiet <"$tmp/err"; fail "helm template $*"; }
}
kinds() { python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d: print(d["kind"], d["metadata"]["name"])' "$1" | sort; }
render "$tmp/default.yaml"
kinds "$tmp/default.yaml" >"$tmp/default.kinds"
for want in "DaemonSet gpushare-agent" "DaemonSet gpushare-k8s" "DeviceClass gpu.gpushare.io" \
  "ValidatingAdmissionPolicy gpushare-k8s-own-slices" "ResourceClaimTemplate gpu-4gi-30" \
  "ConfigMap gpushare-agent" "Service gpushare-agent-metrics" "ClusterRole gpushare-k8s"; do
  grep -qx "$want" "$tmp/default.kinds" || fail "the default rendering has no $want"
done
grep -q 'Deployment' "$tmp/default.kinds" && fail "the extender is rendered by default"
cat >"$tmp/all.yaml" <<'EOF'
agent:
  mode: mps
  overprovision: 4
  enforce: report
  gpusim: {enabled: true, devices: "A100-40GB,H100-80GB"}
  configs:
    mig-nodes: |
      [gpu:all]
      mode = mig
hostInstall: {enabled: true}
metrics: {serviceMonitor: {enabled: true}, dashboard: {enabled: true}}
extender: {enabled: true, policy: fgd}
claimTemplates: {namespaces: [default, team-a]}
EOF
render "$tmp/all.out" -f "$tmp/all.yaml"
kinds "$tmp/all.out" >"$tmp/all.kinds"
for want in "DaemonSet gpushare-agent-mig-nodes" "ConfigMap gpushare-agent-mig-nodes" \
  "DaemonSet gpushare-k8s-host" "ServiceMonitor gpushare-agent" "ConfigMap gpushare-dashboard" \
  "Deployment gpushare-scheduler-extender" "Deployment gpushare-scheduler"; do
  grep -qx "$want" "$tmp/all.kinds" || fail "the rendering with every part has no $want"
done
[[ $(grep -c '^ResourceClaimTemplate gpu-4gi-30$' "$tmp/all.kinds") == 2 ]] ||
  fail "claimTemplates.namespaces: not one gpu-4gi-30 per namespace"
python3 - "$tmp/all.out" "$tmp" <<'EOF'
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
conf = by[("ConfigMap", "gpushare-agent")]["data"]["gpushare.conf"]
for line in ("mode = mps", "overprovision = 4", "enforce = report",
             "nvml_library = /usr/libexec/gpushare/sim/libnvidia-ml.so.1"):
    assert line in conf.splitlines(), "gpushare.conf lacks %r:\n%s" % (line, conf)
open(sys.argv[2] + "/agent.conf", "w").write(conf)
dash = by[("ConfigMap", "gpushare-dashboard")]["data"]["gpushare-dashboard.json"]
assert json.loads(dash)["uid"] == "gpushare-node", "the dashboard is not packaging/monitoring's"
ds = by[("DaemonSet", "gpushare-agent")]["spec"]["template"]["spec"]
assert ds["hostPID"] is True, "the agent is not in the host's PID namespace"
env = {e["name"]: e.get("value") for e in ds["containers"][0]["env"]}
assert env.get("GPUSIM_DEVICES") == "A100-40GB,H100-80GB", env
host = by[("DaemonSet", "gpushare-k8s-host")]["spec"]["template"]["spec"]
args = host["containers"][0]["args"]
assert "--shim=/usr/lib/x86_64-linux-gnu/gpushare/libgpushare.so" in args, args
aff = json.dumps(host["affinity"])
assert '"operator": "In"' in aff and "gpushare.io/host-install" in aff, aff
print("rendered: %d objects, the agent's gpushare.conf, the host-install plugin, the dashboard"
      % len(docs))
EOF
if [[ -n $build && -x $build/bin/gpushared ]]; then
  # the agent's configuration as gpushared reads it (paths of the node aside)
  sed -e "s|^nvml_library = .*|nvml_library = $build/sim/libnvidia-ml.so.1|" \
    -e "s|^mps_control = .*|mps_control = $build/sim/nvidia-cuda-mps-control|" \
    -e '/^shim = /d' -e '/^socket = /d' -e '/^runtime_dir = /d' -e '/^state_dir = /d' \
    "$tmp/agent.conf" >"$tmp/check.conf"
  "$build/bin/gpushared" --check-config --config "$tmp/check.conf" >"$tmp/check.out" 2>&1 ||
    { cat "$tmp/check.out" "$tmp/check.conf" >&2; fail "gpushared --check-config refuses the agent's gpushare.conf"; }
  echo "gpushared --check-config accepts the agent's gpushare.conf"
fi

echo "== 3. bad values, one line each"
refused() { # refused WHERE HELM-SET...: helm template refuses, with one line naming WHERE
  local where=$1 lines
  shift
  if "$helm" template gpushare "$chart" "$@" >/dev/null 2>"$tmp/err"; then
    fail "helm template $* was accepted"
  fi
  lines=$(quiet <"$tmp/err" | grep -c "^- at '$where'" || true)
  [[ $lines == 1 ]] || { quiet <"$tmp/err" >&2; fail "$*: not one line about $where ($lines)"; }
  echo "refused: $* -> $(quiet <"$tmp/err" | grep "^- at '$where'")"
}
refused /agent/mode --set agent.mode=bogus
refused /agent/overprovision --set agent.overprovision=-1
refused /agent/overprovision --set agent.overprovision=0
refused /metrics/port --set metrics.port=70000
refused /extender/port --set extender.port=0
refused /agent/enforce --set agent.enforce=warn
refused /agent --set agent.overprovison=2

echo "== 4. deploy/kubernetes agrees with the chart"
render "$tmp/manifests.yaml" -f "$chart/ci/manifests-values.yaml"
python3 "$root/tests/helm/check_manifests.py" "$tmp/manifests.yaml" "$root/deploy/kubernetes" ||
  fail "deploy/kubernetes and the chart's rendering (ci/manifests-values.yaml) disagree"
echo "PASS: helm_chart ($("$helm" version --short 2>/dev/null))"
