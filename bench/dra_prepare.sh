#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpushare-k8s: time per NodePrepareResources and NodeUnprepareResources (issue 22, acceptance 4),
# and what 50 claims prepared and unprepared one after another leave behind (file descriptors of
# the plugin, leases, CDI specs, records). On gpusim, with the stand-in API server and kubelet.
# Prints its method and figures.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
[[ $build == /* ]] || build=$PWD/$build
src=$(cd "$(dirname "$0")/.." && pwd)
claims=${BENCH_CLAIMS:-50}
py=${GS_PYTHON_GRPC:-/usr/bin/python3}
dir=$(mktemp -d /tmp/gs-bench-dra.XXXXXX)
pids=()
keep=0
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ $keep == 1 ]] || rm -rf "$dir"
}
trap cleanup EXIT
export GPUSIM_STATE=$dir/sim GPUSIM_DEVICES=H100-80GB GPUSHARE_SOCKET=$dir/gpushared.sock
export LD_LIBRARY_PATH=$build/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$dir/registry" "$dir/plugin" "$dir/cdi"
printf '[daemon]\nshim = %s\n' "$build/lib/libgpushare.so" >"$dir/gpushare.conf"
"$build/bin/gpushared" --config "$dir/gpushare.conf" --state-dir "$dir/state" \
  --metrics-listen 127.0.0.1:0 --log-level warn 2>"$dir/daemon.log" &
pids+=($!)
python3 "$src/tests/k8s/apiserver.py" --port-file "$dir/api.port" --token t 2>"$dir/api.log" &
pids+=($!)
for _ in $(seq 100); do [[ -S $dir/gpushared.sock && -s $dir/api.port ]] && break; sleep 0.05; done
api=http://127.0.0.1:$(cat "$dir/api.port")
echo t >"$dir/token"
"$build/bin/gpushare-k8s" --node-name n1 --registry-dir "$dir/registry" --plugin-dir "$dir/plugin" \
  --cdi-dir "$dir/cdi" --server "$api" --token-file "$dir/token" --shim "$build/lib/libgpushare.so" \
  --gpushare "$build/bin/gpushare" --no-publish --log-level warn 2>"$dir/plugin.log" &
plugin=$!
pids+=($plugin)
"$py" "$src/tests/k8s/kubelet.py" --protos "$src/tests/k8s/proto" watch --registry "$dir/registry" \
  --state "$dir/kubelet.json" 2>"$dir/kubelet.log" &
pids+=($!)
for _ in $(seq 200); do jq -e '."gpu.gpushare.io"' "$dir/kubelet.json" >/dev/null 2>&1 && break; sleep 0.05; done

# The claims, allocated on gpu-0 as the scheduler leaves them: 1 GiB and 2 % each.
args=()
for i in $(seq "$claims"); do
  obj=$(curl -sf -X POST -H 'Authorization: Bearer t' -H 'Content-Type: application/json' \
    "$api/apis/resource.k8s.io/v1/namespaces/bench/resourceclaims" \
    -d "{\"metadata\":{\"name\":\"c$i\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\",\"capacity\":{\"requests\":{\"memory\":\"1Gi\",\"compute\":\"2\"}}}}]}}}")
  uid=$(jq -r .metadata.uid <<<"$obj")
  jq -c '.status = {allocation: {devices: {results: [{request: "gpu", driver: "gpu.gpushare.io",
      pool: "n1", device: "gpu-0", shareID: "s", consumedCapacity: {memory: "1Gi", compute: "2"}}]}}}' \
    <<<"$obj" | curl -sf -X PUT -H 'Authorization: Bearer t' -H 'Content-Type: application/json' \
    "$api/apis/resource.k8s.io/v1/namespaces/bench/resourceclaims/c$i/status" -d @- >/dev/null
  args+=(--claim "bench/c$i/$uid")
done

# The first claim also opens what the plugin keeps (its connection to the API server): its file
# descriptors are counted after it, and again after the last.
cycle() {
  "$py" "$src/tests/k8s/kubelet.py" --protos "$src/tests/k8s/proto" cycle --state "$dir/kubelet.json" \
    "$@" >>"$dir/times.jsonl" 2>>"$dir/kubelet.log"
}
cycle "${args[@]:0:2}"
fds_before=$(ls /proc/$plugin/fd | wc -l)
cycle "${args[@]:2}"
fds_after=$(ls /proc/$plugin/fd | wc -l)
errors=$(jq -s '[.[] | select(.error != "")] | length' "$dir/times.jsonl")
leases=$(GPUSHARE_SOCKET=$dir/gpushared.sock "$build/bin/gpushare" leases --json | jq length)
specs=$(find "$dir/cdi" -type f | wc -l)
records=$(find "$dir/plugin/claims" -type f | wc -l)

pct() { # FIELD P: the P-th percentile (nearest rank) of FIELD over the claims, in ms
  jq -s --arg f "$1" --argjson p "$2" '[.[][$f]] | sort | .[((length * $p / 100 | ceil) - 1)] * 100 | round / 100' \
    "$dir/times.jsonl"
}
cat <<EOM
bench/dra_prepare.sh: gpushare-k8s, NodePrepareResources and NodeUnprepareResources on gpusim
method: $claims ResourceClaims (1 GiB and 2 % of one simulated H100 each, allocated as the
  scheduler leaves them) in the stand-in API server (tests/k8s/apiserver.py, Python, loopback
  HTTP); the stand-in kubelet (tests/k8s/kubelet.py, python3-grpcio) prepares one claim, then
  unprepares it, then the next, one call per claim, each timed around the gRPC call on the
  kubelet's side (a new channel per call, as after a kubelet restart: connection setup included).
  A prepare reads the claim from the API server, gpushared's status, acquires the keyed lease,
  writes the claim's record (twice, each fsync'ed) and its CDI spec; an unprepare releases the
  lease and removes the spec and the record. The plugin's open file descriptors are counted
  after the first claim (which opens the connection to the API server that the plugin keeps)
  and after the last; gpushared's leases, CDI specs and records after the last.
  Machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(df -T "$dir" | awk 'NR == 2 {print $2}') at $dir.
prepare:   p50 $(pct prepare_ms 50) ms, p99 $(pct prepare_ms 99) ms, max $(pct prepare_ms 100) ms
unprepare: p50 $(pct unprepare_ms 50) ms, p99 $(pct unprepare_ms 99) ms, max $(pct unprepare_ms 100) ms
errors: $errors of $claims
left behind: plugin fds $fds_before after the first claim, $fds_after after the last; leases $leases; CDI specs $specs; records $records
EOM
[[ $errors -eq 0 && $fds_after -le $fds_before && $leases -eq 0 && $specs -eq 0 && $records -eq 0 ]] ||
  { echo "bench/dra_prepare.sh: something failed or was left behind (logs in $dir)" >&2; keep=1; exit 1; }
