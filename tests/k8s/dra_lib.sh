# SPDX-License-Identifier: Apache-2.0
# Helpers of the DRA plugin's tests (source after setting GPUSIM_DEVICES): gpushared on a fresh
# gpusim node (tests/daemon/lib.sh), the stand-in API server (apiserver.py), gpushare-k8s and the
# stand-in kubelet (kubelet.py), all in $WORK and stopped at exit. The container test sources
# tests/containers/lib.sh first (podman in a private mount namespace; it has sourced
# tests/daemon/lib.sh), whose cleanup then runs at exit.
# What these stand-in tests are for: fault injection and edge cases a real component cannot be
# made to produce on purpose (an API server that errs or refuses, a kubelet that calls twice, a
# plugin killed mid-call, hostile claims). Their allocations are written by hand (claim()) and
# prove nothing about kube-scheduler's: that the real scheduler allocates what the driver
# publishes, and the real kubelet prepares it, is tests/k8s/real/'s (ctest -L k8s-real). A claim
# made here must be one a scheduler could allocate from what the slices show.
[[ -n ${WORK:-} ]] || source "$GS_SOURCE_DIR/tests/daemon/lib.sh"
K8S=$GS_SOURCE_DIR/tests/k8s
# The kubelet stand-in needs python3-grpcio and python3-protobuf: Debian's Python.
PYGRPC=${GS_PYTHON_GRPC:-/usr/bin/python3}
export GS_KUBELET_PB_DIR=$WORK # its generated messages go with the test's directory
PLUGIN=$BIN/gpushare-k8s
NODE=node-a
API=
PLUGIN_PID=
KUBELET_PID=
# Where the plugin writes CDI specs: tests/containers/lib.sh's $CDI (podman reads it), else the
# test's own directory.
DRA_CDI=${CDI:-$WORK/cdi}
mkdir -p "$WORK/registry" "$WORK/plugin" "$DRA_CDI"

# On failure, the plugin's and the stand-ins' logs too, then the cleanup of tests/daemon/lib.sh
# (or of tests/containers/lib.sh, which calls it), which takes $? as the test's status.
dra_cleanup() {
  local rc=$? f next=cleanup
  set +e # (exit $rc) below must hand the status on, not end the script under errexit
  if [[ $rc -ne 0 ]]; then
    for f in plugin.log kubelet.log apiserver.log; do
      if [[ -s $WORK/$f ]]; then
        echo "--- $f (last 30 lines)" >&2
        tail -30 "$WORK/$f" >&2
      fi
    done
  fi
  declare -F ct_cleanup >/dev/null && next=ct_cleanup
  (exit $rc)
  "$next"
}
trap dra_cleanup EXIT
printf 'writer\n' >"$WORK/token"

# start_api [ARGS...]: the stand-in API server (tokens writer and reader); sets $API.
start_api() {
  rm -f "$WORK/api.port"
  bg python3 "$K8S/apiserver.py" --port-file "$WORK/api.port" --token writer --read-token reader \
    "$@" 2>>"$WORK/apiserver.log"
  API_PID=$!
  wait_until 10 test -s "$WORK/api.port"
  API=http://127.0.0.1:$(cat "$WORK/api.port")
}

# api METHOD PATH [BODY]: a request as the writer; prints the body, fails on a status >= 300.
api() {
  local args=(-sS --max-time 5 -X "$1" -H 'Authorization: Bearer writer'
    -H 'Content-Type: application/json' -o "$WORK/api.out" -w '%{http_code}')
  [[ -n ${3:-} ]] && args+=(--data-binary "$3")
  local code
  code=$(curl "${args[@]}" "$API$2")
  [[ $code -lt 300 ]] || fail "API $1 $2: HTTP $code: $(cat "$WORK/api.out")"
  cat "$WORK/api.out"
}

# api_mode MODE: the stand-in's failure switch (ok, error, forbidden, hang, close).
api_mode() {
  curl -sS --max-time 5 -X POST -d "{\"mode\":\"$1\"}" "$API/_standin/mode" >/dev/null
}

# start_plugin [ARGS...]: gpushare-k8s for node $NODE against the stand-in; sets $PLUGIN_PID.
start_plugin() {
  bg env "LD_PRELOAD=$JOB_PRELOAD" "$PLUGIN" --node-name "$NODE" --registry-dir "$WORK/registry" \
    --plugin-dir "$WORK/plugin" --cdi-dir "$DRA_CDI" --server "$API" \
    --token-file "$WORK/token" --gpushare "$BIN/gpushare" --shim "$GS_BUILD_DIR/lib/libgpushare.so" \
    --resync 0.3 --log-level debug "$@" >>"$WORK/plugin.log" 2>&1
  PLUGIN_PID=$!
}

# publisher_passes: the passes of the plugin's publisher its log counted (debug level), since
# the log began; wait_passes N waits for N more (at most 10 s): "nothing was written" is said
# after passes the publisher made, never after a sleep.
publisher_passes() {
  grep -c 'ResourceSlices: pass [0-9]* done' "$WORK/plugin.log" || true
}
passes_reach() { (($(publisher_passes) >= $1)); }
wait_passes() {
  local from
  from=$(publisher_passes)
  wait_until 10 passes_reach $((from + $1))
}

# kill9_plugin: the plugin dies without cleaning up.
kill9_plugin() {
  kill -KILL "$PLUGIN_PID"
  wait "$PLUGIN_PID" 2>/dev/null || true
  PLUGIN_PID=
}

# start_kubelet: the stand-in kubelet's plugin watcher; waits until the plugin is registered.
start_kubelet() {
  bg "$PYGRPC" "$K8S/kubelet.py" --protos "$K8S/proto" watch --registry "$WORK/registry" \
    --state "$WORK/kubelet.json" 2>>"$WORK/kubelet.log"
  KUBELET_PID=$!
  wait_registered
}

wait_registered() {
  wait_until 15 jq -e '."gpu.gpushare.io".endpoint' "$WORK/kubelet.json" >/dev/null 2>&1
}

# kubelet VERB ARGS...: the stand-in kubelet's prepare, unprepare or run-pod.
kubelet() {
  local verb=$1
  shift
  "$PYGRPC" "$K8S/kubelet.py" --protos "$K8S/proto" "$verb" --state "$WORK/kubelet.json" "$@" \
    2>>"$WORK/kubelet.log"
}

# claim NS NAME REQUEST DEVICE [MEMORY COMPUTE] [CONFIG_JSON]: a ResourceClaim allocated on
# DEVICE of this node, as the scheduler leaves it (a share with consumedCapacity when MEMORY and
# COMPUTE are given; CONFIG_JSON: GpuConfig parameters, FromClaim). Prints its UID.
claim() {
  local ns=$1 name=$2 req=$3 dev=$4 mem=${5:-} compute=${6:-} config=${7:-}
  local spec result obj uid
  spec=$(jq -nc --arg r "$req" --arg m "$mem" --arg c "$compute" '{devices: {requests: [{name: $r,
      exactly: ({deviceClassName: "gpu.gpushare.io"} + (if $m == "" then {} else
      {capacity: {requests: {memory: $m, compute: $c}}} end))}]}}')
  obj=$(api POST "/apis/resource.k8s.io/v1/namespaces/$ns/resourceclaims" \
    "$(jq -nc --arg n "$name" --argjson s "$spec" '{apiVersion: "resource.k8s.io/v1",
      kind: "ResourceClaim", metadata: {name: $n}, spec: $s}')")
  uid=$(jq -r .metadata.uid <<<"$obj")
  result=$(jq -nc --arg r "$req" --arg d "$dev" --arg p "$NODE" --arg m "$mem" --arg c "$compute" \
    --arg u "$uid" '{request: $r, driver: "gpu.gpushare.io", pool: $p, device: $d} +
      (if $m == "" then {} else {shareID: ("s-" + $u[0:8]),
       consumedCapacity: {memory: $m, compute: $c}} end)')
  local cfg='[]'
  [[ -n $config ]] && cfg=$(jq -nc --arg r "$req" --argjson p "$config" '[{source: "FromClaim",
      requests: [$r], opaque: {driver: "gpu.gpushare.io", parameters: $p}}]')
  api PUT "/apis/resource.k8s.io/v1/namespaces/$ns/resourceclaims/$name/status" \
    "$(jq -c --argjson r "$result" --argjson cfg "$cfg" --arg node "$NODE" '.status = {allocation:
      {devices: {results: [$r], config: $cfg}, nodeSelector: {nodeSelectorTerms: [{matchFields:
      [{key: "metadata.name", operator: "In", values: [$node]}]}]}}}' <<<"$obj")" >/dev/null
  echo "$uid"
}

# leftovers UID: what exists of a claim besides its lease: its CDI spec and its record.
leftovers() {
  local n=0
  [[ -e $WORK/plugin/claims/$1.json ]] && n=$((n + 1))
  n=$((n + $(grep -l "k8s-$1" "$DRA_CDI"/* 2>/dev/null | wc -l)))
  echo "$n"
}

# slices: the node's ResourceSlices as the stand-in stores them (a List).
slices() {
  api GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D$NODE"
}

# sorted WORD...: the words sorted as keyed_leases sorts them (bytes), on one line.
sorted() {
  printf '%s\n' "$@" | LC_ALL=C sort | paste -sd' '
}

# keyed_leases: "KEY:STATE" of gpushared's leases with a key, sorted.
keyed_leases() {
  gs leases --json | jq -r '[.[] | select(.key != null) | .key + ":" + .state] | sort | join(" ")'
}
