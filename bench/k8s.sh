#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck source-path=SCRIPTDIR
# gpushare-k8s on the real Kubernetes (issue 35, acceptance 5): a benchmark, not a timed test.
# Starts the cluster of the k8s-real tests (tests/k8s/real/up.sh: gpushared on gpusim, the
# plugin registered with the real kubelet), then measures and prints:
#  - pod creation to Running, without a claim and with one (gpu-4gi-30), BENCH_PODS pods each
#    (default 10), one at a time: from before `kubectl create` to `kubectl wait` seeing Running
#    (a watch: no polling interval in it); p50 and p99 (p99 = max for so few);
#  - 50 claims on one node (BENCH_CLAIMS): that many pods, each a claim of 1Gi and 1 %, created
#    at once; the time until all Running, then until all their leases ended after their deletion;
#  - prepare and unprepare as the kubelet saw them: its metrics (dra_operations_duration_seconds,
#    and dra_grpc_operations_duration_seconds: the gRPC call to the plugin alone), the histogram
#    of this run's calls (the difference of two scrapes), p50 and p99 interpolated within the
#    buckets as Prometheus' histogram_quantile does;
#  - gpushare-k8s's resident memory and open descriptors before and after.
# Then stops everything (tests/k8s/real/down.sh). Usage: bench/k8s.sh (GS_BUILD_DIR, K8S_VERSION
# as the tests). Root; the components built (scripts/k8s/build.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
real=$here/../tests/k8s/real
# shellcheck source=../tests/k8s/real/lib.sh
source "$real/lib.sh"
pods=${BENCH_PODS:-10}
claims=${BENCH_CLAIMS:-50}
[[ $pods =~ ^[1-9][0-9]*$ && $claims =~ ^[1-9][0-9]*$ && $claims -le 70 ]] ||
  fail "BENCH_PODS and BENCH_CLAIMS: positive integers, BENCH_CLAIMS at most 70 (1Gi each on one GPU)"
"$real/up.sh" >/dev/null || fail "the cluster did not start (tests/k8s/real/up.sh)"
trap '"$real/down.sh" >/dev/null' EXIT
kr_env
plugin=$(cat "$KR_GS/plugin.pid")
rss() { awk '/^VmRSS/ { print $2 " kB" }' "/proc/$plugin/status"; }
fds() { find "/proc/$plugin/fd" -mindepth 1 | wc -l; }
metrics() { kc get --raw "/api/v1/nodes/$K8S_NODE/proxy/metrics" | { grep -E '^dra_(grpc_)?operations_duration_seconds_bucket' || true; }; }
sleep 2 # the plugin settled (its first publication)
rss0=$(rss) fds0=$(fds)
metrics >"$KR_GS/metrics.0"

percentiles() { # VALUE...: "p50 X p99 Y" (nearest rank)
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
    i50 = int((NR * 50 + 99) / 100); i99 = int((NR * 99 + 99) / 100)
    printf "p50 %d p99 %d ms (n %d)", v[i50], v[i99], NR }'
}
pod_yaml() { # NAME [TEMPLATE]
  local claim="" use=""
  if [[ -n ${2:-} ]]; then
    claim="resourceClaims: [{name: gpu, resourceClaimTemplateName: $2}]"
    use="resources: {claims: [{name: gpu}]}"
  fi
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {gs-bench: k8s}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  $claim
  containers:
  - {name: c, image: localhost/gpushare/busybox:1, imagePullPolicy: Never, command: [/bin/sleep, "3600"], $use}
EOF
}
time_to_running() { # NAME [TEMPLATE]: ms from create to Running
  local t0
  t0=$(now_ms)
  pod_yaml "$@" | kc create -f - >/dev/null
  kc wait --for=jsonpath='{.status.phase}'=Running "pod/$1" --timeout=120s >/dev/null
  echo $(($(now_ms) - t0))
}
without=() with=()
for i in $(seq "$pods"); do
  without+=("$(time_to_running "plain-$i")")
  with+=("$(time_to_running "claim-$i" gpu-4gi-30)")
  kc delete pod "plain-$i" "claim-$i" --wait=true >/dev/null
done

# many claims on one node
shared_template bench-1gi 1Gi 1 gs-bench=k8s
t0=$(now_ms)
for i in $(seq "$claims"); do pod_yaml "many-$i" bench-1gi; echo ---; done | kc create -f - >/dev/null
all_running() { [[ $(kc get pods -l gs-bench=k8s -o json | jq '[.items[] | select(.status.phase == "Running")] | length') == "$claims" ]]; }
wait_until 600 all_running || fail "not all $claims pods Running after 600 s"
t_many=$(($(now_ms) - t0))
n_leases=$(gs leases --json | jq '[.[] | select(.key != null and .state == "active")] | length')
rss1=$(rss) fds1=$(fds)
t0=$(now_ms)
kc delete pod -l gs-bench=k8s --wait=false >/dev/null
wait_until 600 no_leases || fail "leases left 600 s after the deletion: $(keyed_leases)"
t_gone=$(($(now_ms) - t0))
no_pods() { [[ -z $(kc get pods -o name) ]]; }
wait_until 60 no_pods || true
metrics >"$KR_GS/metrics.1"
rss2=$(rss) fds2=$(fds)

hist() { # METRIC LABELS-REGEX: the run's p50/p99 of that histogram (the series whose labels match)
  python3 - "$KR_GS/metrics.0" "$KR_GS/metrics.1" "$1" "$2" <<'PY'
import re, sys
def read(path):
    out = {}
    for line in open(path):
        m = re.match(r'(\w+)_bucket\{(.*)\} (\S+)', line)
        if not m or m.group(1) != sys.argv[3] or not re.search(sys.argv[4], m.group(2)):
            continue
        le = re.search(r'le="([^"]+)"', m.group(2)).group(1)
        out[float("inf") if le == "+Inf" else float(le)] = out.get(float("inf") if le == "+Inf" else float(le), 0) + float(m.group(3))
    return out
a, b = read(sys.argv[1]), read(sys.argv[2])
les = sorted(b)
cum = [b[le] - a.get(le, 0) for le in les]
n = cum[-1] if cum else 0
def q(p):
    rank, prev_le, prev_c = p * n, 0.0, 0.0
    for le, c in zip(les, cum):
        if c >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * ((rank - prev_c) / (c - prev_c) if c > prev_c else 0)
        prev_le, prev_c = le, c
    return prev_le
print("p50 %.1f p99 %.1f ms (n %d)" % (q(0.5) * 1000, q(0.99) * 1000, n) if n else "no calls")
PY
}
echo "gpushare-k8s on Kubernetes $K8S_VERSION_FULL (containerd $CONTAINERD_VERSION_FULL), gpushared on gpusim; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pod creation to Running, one at a time ($pods each):"
echo "  without a claim:        $(percentiles "${without[@]}")"
echo "  with gpu-4gi-30:        $(percentiles "${with[@]}")"
echo "$claims pods of a 1Gi + 1 % claim each, created at once: all Running after $t_many ms ($n_leases leases); deleted: all leases ended after $t_gone ms"
echo "the kubelet's view (this run's calls):"
ok='(?=.*is_error="false")'
echo "  PrepareResources:       $(hist dra_operations_duration_seconds "$ok"'(?=.*operation_name="PrepareResources")')"
echo "  UnprepareResources:     $(hist dra_operations_duration_seconds "$ok"'(?=.*operation_name="UnprepareResources")')"
echo "  failed PrepareResources (the kubelet retries them): $(hist dra_operations_duration_seconds '(?=.*is_error="true")(?=.*operation_name="PrepareResources")')"
echo "  NodePrepareResources (gRPC to the plugin):   $(hist dra_grpc_operations_duration_seconds '(?=.*grpc_status_code="OK")(?=.*NodePrepareResources)')"
echo "  NodeUnprepareResources (gRPC to the plugin): $(hist dra_grpc_operations_duration_seconds '(?=.*grpc_status_code="OK")(?=.*NodeUnprepareResources)')"
echo "  (a failed PrepareResources that never reached the plugin: the kubelet's own reasons, in its log)"
echo "gpushare-k8s: RSS $rss0 before, $rss1 with $claims claims, $rss2 after; descriptors $fds0, $fds1, $fds2"
