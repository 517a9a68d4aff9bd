#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hostile ResourceClaims against the DRA driver (issue 34, acceptance 6): whoever writes claims
# writes their names, requests, allocation results and GpuConfig, and the stand-in API server
# (like a cluster's admission, were it missing or wrong) lets them write anything. Names with
# path characters ('../', '/', NUL, control characters, thousands of characters) from the kubelet
# and in the claim, allocations on another node's or a nonexistent device, capacity beyond the
# device, huge counts and result lists, odd GpuConfig (wrong types, unknown fields, negative and
# huge values, deep nesting): each refused for its claim with exactly one line, no lease, no
# record, no CDI spec, nothing written outside the CDI and record directories, and the plugin
# still serving an honest claim afterwards.
export GPUSIM_DEVICES=H100-80GB
source "$(dirname "$0")/dra_lib.sh"
CONFIG="[daemon]
shim = $GS_BUILD_DIR/lib/libgpushare.so"
start_daemon
start_api
start_plugin --no-publish
start_kubelet
CLAIMS=/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims
# The line of a claim the plugin's JSON parser refuses whole (a NUL in a string, an integer beyond
# 64 bits, more than 2,048 levels).
NOJSON="the API server ($API) answered HTTP 200 without a JSON object (malformed, or a string with NUL)"

# json_file NAME JSON|@FILE: the JSON in a file of its own (big claims exceed what one argument
# may hold); prints its path.
json_file() {
  if [[ $2 == @* ]]; then
    echo "${2#@}"
  else
    printf '%s' "$2" >"$WORK/tmp/$1.json"
    echo "$WORK/tmp/$1.json"
  fi
}

# api_file METHOD PATH FILE: api with the body in FILE.
api_file() {
  local code
  code=$(curl -sS --max-time 30 -X "$1" -H 'Authorization: Bearer writer' \
    -H 'Content-Type: application/json' -o "$WORK/api.out" -w '%{http_code}' \
    --data-binary "@$3" "$API$2")
  [[ $code -lt 300 ]] || fail "API $1 $2: HTTP $code: $(head -c 300 "$WORK/api.out")"
  cat "$WORK/api.out"
}

# raw_claim NAME SPEC RESULTS [CONFIG]: claim ml/NAME with spec.devices.requests SPEC and
# allocation results RESULTS on this node ("@UID" in a string is the claim's UID), config entries
# CONFIG (default none); each JSON or @FILE. Prints its UID.
raw_claim() {
  local obj uid spec results config
  spec=$(json_file spec "$2")
  results=$(json_file results "$3")
  config=$(json_file config "${4:-[]}")
  jq -nc --arg n "$1" --slurpfile r "$spec" '{apiVersion: "resource.k8s.io/v1",
    kind: "ResourceClaim", metadata: {name: $n}, spec: {devices: {requests: $r[0]}}}' \
    >"$WORK/tmp/body.json"
  obj=$(api_file POST "$CLAIMS" "$WORK/tmp/body.json")
  uid=$(jq -r .metadata.uid <<<"$obj")
  # (Python, not jq: jq parses no more than 256 levels)
  printf '%s' "$obj" >"$WORK/tmp/obj.json"
  python3 - "$results" "$config" "$uid" "$NODE" "$WORK/tmp/obj.json" >"$WORK/tmp/body.json" <<'PY'
import json, sys
sys.setrecursionlimit(40000)  # (deep claims)
obj = json.load(open(sys.argv[5]))
results = open(sys.argv[1]).read().replace("@UID", sys.argv[3])
obj["status"] = {"allocation": {"devices": {"results": json.loads(results),
                                            "config": json.load(open(sys.argv[2]))},
    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name",
                     "operator": "In", "values": [sys.argv[4]]}]}]}}}
print(json.dumps(obj))
PY
  api_file PUT "$CLAIMS/$1/status" "$WORK/tmp/body.json" >/dev/null
  echo "$uid"
}

# share REQUEST DEVICE MEMORY COMPUTE [POOL]: one allocation result (JSON) of a share.
share() {
  jq -nc --arg r "$1" --arg d "$2" --arg m "$3" --arg c "$4" --arg p "${5:-$NODE}" '{request: $r,
    driver: "gpu.gpushare.io", pool: $p, device: $d, shareID: "s-1",
    consumedCapacity: {memory: $m, compute: $c}}'
}

# request NAME [EXACTLY]: one request of the claim's spec (JSON).
request() {
  jq -nc --arg r "$1" --argjson e "${2:-{\}}" '{name: $r, exactly: ({deviceClassName:
    "gpu.gpushare.io"} + $e)}'
}

# gpuconfig PARAMETERS [REQUEST]: one FromClaim opaque entry of driver gpu.gpushare.io.
gpuconfig() {
  jq -nc --argjson p "$1" --arg r "${2:-gpu}" '[{source: "FromClaim", requests: [$r],
    opaque: {driver: "gpu.gpushare.io", parameters: $p}}]'
}

# What exists besides the logs, the stand-ins' files and gpusim's state: the plugin's records,
# the CDI specs and anything a hostile name made elsewhere in the test's directory.
files() {
  (cd "$WORK" && find . \( -path ./sim -o -path ./state \) -prune -o -print |
    grep -Ev '\.(log|out|port)$|^\./(kubelet\.json|token|[^/]*\.sock|daemon\.conf|cdi|plugin|registry|plugin/dra\.sock)$|_pb2|^\./tmp|^\./leases' |
    LC_ALL=C sort)
}
mkdir -p "$WORK/escape" "$WORK/tmp"
BEFORE=$(files)

# refused CLAIM-ARG UID LINE: prepare refused for that one claim (UID: its key in the answer, a
# JSON string) with exactly LINE (LINE* : a line that starts so); nothing made for it.
refused() {
  local out got
  out=$(kubelet prepare --claim "$1") && fail "prepared: $1"
  got=$(jq -r --argjson u "$2" '.[$u].error // ("no answer: " + tostring)' <<<"$out")
  [[ $(printf '%s' "$got" | wc -l) -eq 0 ]] || fail "not one line for $1: $got"
  if [[ $3 == *'*' ]]; then
    [[ $got == "${3%'*'}"* ]] || fail "the line for $1: \"$got\", expected \"$3\""
  else
    [[ $got == "$3" ]] || fail "the line for $1: \"$got\", expected \"$3\""
  fi
  expect_eq "$(keyed_leases)" "" "leases after $1"
  expect_eq "$(files)" "$BEFORE" "files after $1"
  echo "refused: $got"
}

# claim_refused NAME SPEC RESULTS LINE [CONFIG]: a claim so made (raw_claim), refused with
# "claim ml/NAME: LINE".
claim_refused() {
  local uid
  uid=$(raw_claim "$1" "$2" "$3" "${5:-[]}")
  refused "ml/$1/$uid" "\"$uid\"" "claim ml/$1: $4"
}
ONE=$(jq -nc --argjson r "$(request gpu)" '[$r]')
SHARE=$(jq -nc --argjson s "$(share gpu gpu-0 1Gi 10)" '[$s]')

# --- 1. Names from the kubelet with path characters, NUL, or thousands of characters.
long=$(printf 'a%.0s' {1..5000})
bad_name() { # TRIPLE LINE
  refused "$1" "$(jq -c '.[2]' <<<"$1")" "$2"
}
bad_name '["../../escape", "c", "u-1"]' "claim ../../escape/c: not a namespace and name"
bad_name '["ml", "../../escape/x", "u-1"]' "claim ml/../../escape/x: not a namespace and name"
bad_name '["ml/..", "c", "u-1"]' "claim ml/../c: not a namespace and name"
bad_name '["ml", "c/../../x", "u-1"]' "claim ml/c/../../x: not a namespace and name"
bad_name '["ml", "c", "../../escape/x"]' 'claim ml/c: malformed UID "../../escape/x"'
bad_name '["ml", "c", "u/../../../escape/x"]' 'claim ml/c: malformed UID "u/../../../escape/x"'
bad_name "[\"ml\", \"$long\", \"u-1\"]" "claim ml/${long:0:253}: not a namespace and name"
bad_name "[\"ml\", \"c\", \"$long\"]" "claim ml/c: malformed UID \"${long:0:64}\""
bad_name '["ml", "c\nd", "u-1"]' 'claim ml/c\x0ad: not a namespace and name'
# A NUL ends the UID for the plugin (protobuf-c's strings): it answers for "u-1", and the kubelet
# has no answer for the claim it asked about, which it treats as a failure.
refused '["ml", "c", "u-1\u0000/../../escape"]' '"u-1\u0000/../../escape"' \
  'no answer for claim u-1*'
pass "names from the kubelet with '../', '/', NUL, a newline or 5,000 characters: one line each"

# --- 2. Names in the claim: requests, devices, pools and share IDs with path characters,
# control characters, NUL or too many characters.
bad_request() { # NAME REQUEST-NAME LINE (after "claim ml/NAME: ")
  claim_refused "$1" "$(jq -nc --argjson r "$(request "$2")" '[$r]')" \
    "$(jq -nc --argjson s "$(share "$2" gpu-0 1Gi 10)" '[$s]')" "$3"
}
bad_request req-dotdot "../../escape/x" 'its allocation names request "../../escape/x", not a DNS label'
bad_request req-slash "a/b" 'its allocation names request "a/b", not a DNS label'
bad_request req-newline $'gpu\nclaim ml/other: prepared' 'its allocation names request "gpu\x0aclaim ml/other: prepared", not a DNS label'
bad_request req-long "$long" 'claim req-long: malformed request 0'
bad_result() { # NAME RESULT LINE
  claim_refused "$1" "$ONE" "[$2]" "$3"
}
bad_result dev-dotdot "$(share gpu ../../escape/gpu-0 1Gi 10)" 'its allocation names device "../../escape/gpu-0", not a DNS label'
bad_result dev-newline "$(share gpu $'gpu-0\nx' 1Gi 10)" 'its allocation names device "gpu-0\x0ax", not a DNS label'
bad_result pool-other "$(share gpu gpu-0 1Gi 10 node-b)" 'allocated on gpu-0 of pool node-b, not on this node (node-a)'
bad_result pool-dotdot "$(share gpu gpu-0 1Gi 10 node-a/../node-b)" 'allocated on gpu-0 of pool node-a/../node-b, not on this node (node-a)'
bad_result pool-newline "$(share gpu gpu-0 1Gi 10 $'node-b\nx')" 'allocated on gpu-0 of pool node-b\x0ax, not on this node (node-a)'
bad_result share-newline "$(share gpu gpu-0 1Gi 10 | jq -c '.shareID = "s\n../x"')" 'its allocation has share ID "s\x0a../x", not of [a-z0-9-]'
bad_result dev-nul "$(share gpu gpu-0 1Gi 10 | jq -c '.device = "gpu-0\u0000../x"')" "$NOJSON"
bad_result driver-nul "$(share gpu gpu-0 1Gi 10 | jq -c '.driver = "gpu.gpushare.io\u0000x"')" "$NOJSON"
pass "names in the claim with path or control characters, NUL or 5,000 characters: one line each"

# --- 3. Allocations on another node's or a nonexistent device, capacity beyond the device, huge
# counts and result lists.
bad_result dev-none "$(share gpu gpu-9 1Gi 10)" 'allocated on gpu-9, which this node (node-a) does not have'
bad_result dev-mig "$(share gpu gpu-0-mig-1g10gb-0 1Gi 10)" 'allocated on gpu-0-mig-1g10gb-0, which this node (node-a) does not have'
bad_result mem-over "$(share gpu gpu-0 81080Mi 10)" 'consumes 81080Mi of memory of gpu-0, which has 81079Mi'
bad_result mem-huge "$(share gpu gpu-0 16Ei 10)" 'claim mem-huge: malformed allocation result 0'
bad_result mem-overflow "$(share gpu gpu-0 99999999999999999999Ei 10)" 'claim mem-overflow: malformed allocation result 0'
bad_result mem-negative "$(share gpu gpu-0 -1Gi 10)" 'claim mem-negative: malformed allocation result 0'
bad_result mem-zero "$(share gpu gpu-0 0 10)" 'GPU memory must be above zero'
bad_result mem-exp "$(share gpu gpu-0 1e300 10)" 'claim mem-exp: malformed allocation result 0'
bad_result compute-over "$(share gpu gpu-0 1Gi 101)" 'consumes 101 % of compute of gpu-0, which has 100 %'
bad_result compute-negative "$(share gpu gpu-0 1Gi -5)" 'claim compute-negative: malformed allocation result 0'
bad_result mem-number "$(share gpu gpu-0 1Gi 10 | jq -c '.consumedCapacity.memory = 1073741824')" 'claim mem-number: malformed allocation result 0'
claim_refused count-huge "$(jq -nc --argjson r "$(request gpu '{"count": 1000000}')" '[$r]')" "$SHARE" 'claim count-huge: malformed request 0'
claim_refused count-negative "$(jq -nc --argjson r "$(request gpu '{"count": -1}')" '[$r]')" "$SHARE" 'claim count-negative: malformed request 0'
claim_refused count-2e63 "$(jq -nc --argjson r "$(request gpu '{"count": 9223372036854775807}')" '[$r]')" "$SHARE" "$NOJSON"
jq -nc --argjson s "$(share gpu gpu-0 1Gi 10)" '[range(100000) | $s]' >"$WORK/tmp/many.json"
claim_refused results-many "$ONE" "@$WORK/tmp/many.json" 'claim results-many: 100000 results'
twice=$(jq -nc --argjson s "$(share gpu gpu-0 1Gi 10)" '[$s, $s]')
claim_refused results-twice "$ONE" "$twice" '2 devices of request gpu, not all whole GPUs: gpushare gives a container one share, one MIG instance, or whole GPUs'
whole=$(jq -nc '{request: "gpu", driver: "gpu.gpushare.io", pool: "node-a", device: "gpu-0"}')
claim_refused whole-twice "$ONE" "[$whole, $whole]" '"gpus_at" names GPU 0 twice'
reqs=$(jq -nc --argjson r "$(request gpu)" '[range(1000) | $r | .name = "r\(.)"]')
claim_refused requests-many "$reqs" "$SHARE" 'claim requests-many: more than 32 requests'
pass "other nodes' and nonexistent devices, capacity beyond the device, huge counts: one line each"

# --- 4. GpuConfig: wrong types, unknown fields, negative and huge values, deep nesting.
GC='{"apiVersion": "gpu.gpushare.io/v1", "kind": "GpuConfig"}'
CFG0='its configuration (FromClaim, entry 0)'
PCT='computeMax must be a whole percent, 1 to 100'
TIME='timeLimit must be a duration of 1s to a year, e.g. "2h" or "1h30m"'
no_field() {
  echo "GpuConfig has no field \"$1\" (it has computeMax, timeLimit, enforce)"
}
bad_config() { # NAME PARAMETERS LINE
  claim_refused "$1" "$ONE" "$SHARE" "$3" "$(gpuconfig "$2")"
}
bad_config cfg-string "$(jq -c '.computeMax = "50"' <<<"$GC")" "$CFG0: $PCT"
bad_config cfg-real "$(jq -c '.computeMax = 50.5' <<<"$GC")" "$CFG0: $PCT"
bad_config cfg-bool "$(jq -c '.computeMax = true' <<<"$GC")" "$CFG0: $PCT"
bad_config cfg-null "$(jq -c '.computeMax = null' <<<"$GC")" "$CFG0: $PCT"
bad_config cfg-negative "$(jq -c '.computeMax = -1' <<<"$GC")" "$CFG0: $PCT"
bad_config cfg-huge "$(jq -c '.computeMax = 9223372036854775807' <<<"$GC")" "$NOJSON"
bad_config cfg-huger "$(jq -c '.computeMax = 1e400' <<<"$GC")" "$CFG0: $PCT"
bad_config cfg-below "$(jq -c '.computeMax = 5' <<<"$GC")" 'its computeMax 5 is below the 10 % of compute it consumes'
bad_config cfg-time-negative "$(jq -c '.timeLimit = "-1h"' <<<"$GC")" "$CFG0: $TIME"
bad_config cfg-time-huge "$(jq -c '.timeLimit = "99999999999999999999h"' <<<"$GC")" "$CFG0: $TIME"
bad_config cfg-time-zero "$(jq -c '.timeLimit = "0s"' <<<"$GC")" "$CFG0: $TIME"
bad_config cfg-time-number "$(jq -c '.timeLimit = 3600' <<<"$GC")" "$CFG0: $TIME"
bad_config cfg-enforce "$(jq -c '.enforce = ["all"]' <<<"$GC")" "$CFG0: enforce must be \"all\" or \"memory\""
bad_config cfg-unknown "$(jq -c '.memoryLimit = "80Gi"' <<<"$GC")" "$CFG0: $(no_field "memoryLimit")"
bad_config cfg-unknown-newline "$(jq -c '.["a\nclaim ml/other: prepared"] = 1' <<<"$GC")" "$CFG0: $(no_field "a\\x0aclaim ml/other: prepared")"
bad_config cfg-unknown-long "$(jq -c --arg k "$long" '.[$k] = 1' <<<"$GC")" "$CFG0: $(no_field "${long:0:64}")"
bad_config cfg-kind "$(jq -c '.kind = "NotGpuConfig"' <<<"$GC")" "$CFG0: the opaque parameters must be apiVersion gpu.gpushare.io/v1, kind GpuConfig"
bad_config cfg-api "$(jq -c '.apiVersion = "gpu.gpushare.io/v2"' <<<"$GC")" "$CFG0: the opaque parameters must be apiVersion gpu.gpushare.io/v1, kind GpuConfig"
bad_config cfg-array '[1, 2]' "$CFG0: the opaque parameters are not a JSON object"
bad_config cfg-scalar '"computeMax=50"' "$CFG0: the opaque parameters are not a JSON object"
bad_config cfg-nullp 'null' "$CFG0: the opaque parameters are not a JSON object"
# Deep JSON (Python writes it: jq parses no more than 256 levels): 1,500 levels as the value of a
# field and of an unknown field, and 3,000, beyond the 2,048 levels the plugin's parser takes.
deep_config() { # FIELD LEVELS
  python3 -c 'import json, sys
deep = "[" * int(sys.argv[2]) + "]" * int(sys.argv[2])
g = {"apiVersion": "gpu.gpushare.io/v1", "kind": "GpuConfig", sys.argv[1]: 0}
text = json.dumps([{"source": "FromClaim", "requests": ["gpu"],
                    "opaque": {"driver": "gpu.gpushare.io", "parameters": g}}])
print(text.replace("\"%s\": 0" % sys.argv[1], "\"%s\": %s" % (sys.argv[1], deep)))' "$1" "$2" \
    >"$WORK/tmp/deep.json"
  echo "@$WORK/tmp/deep.json"
}
claim_refused cfg-deep "$ONE" "$SHARE" "$CFG0: $PCT" "$(deep_config computeMax 1500)"
claim_refused cfg-deep-unknown "$ONE" "$SHARE" "$CFG0: $(no_field x)" "$(deep_config x 1500)"
claim_refused cfg-deeper "$ONE" "$SHARE" "$NOJSON" "$(deep_config x 3000)"
jq -nc --argjson g "$GC" '[range(20000) | {source: "FromClaim", requests: ["gpu"],
  opaque: {driver: "gpu.gpushare.io", parameters: ($g + {computeMax: 50})}}] +
  [{source: "FromClaim", opaque: {driver: "gpu.gpushare.io", parameters: ($g + {bad: 1})}}]' \
  >"$WORK/tmp/entries.json"
claim_refused cfg-entries "$ONE" "$SHARE" "its configuration (FromClaim, entry 20000): $(no_field bad)" "@$WORK/tmp/entries.json"
# (a "requests" that is no list applies to every request, as none does)
claim_refused cfg-requests-odd "$ONE" "$SHARE" "$CFG0: $PCT" "$(jq -nc --argjson g "$GC" '[{source:
  "FromClaim", requests: {gpu: 1}, opaque: {driver: "gpu.gpushare.io", parameters: ($g +
  {computeMax: 200})}}]')"
pass "GpuConfig with wrong types, unknown fields, negative and huge values, deep nesting: one line each"

# --- 5. After all that, an honest claim is prepared; nothing anywhere else.
uid=$(raw_claim honest "$ONE" "$SHARE" "$(gpuconfig "$(jq -c '.computeMax = 50' <<<"$GC")")")
kubelet prepare --claim "ml/honest/$uid" >/dev/null || fail "the honest claim was refused"
expect_eq "$(keyed_leases)" "k8s/$uid/gpu:active" "the honest claim's lease"
expect_eq "$(leftovers "$uid")" 2 "its record and CDI spec"
expect_eq "$(ls -A "$WORK/escape")" "" "files in the directory the names aimed at"
kubelet unprepare --claim "ml/honest/$uid" >/dev/null || fail "unprepare"
expect_eq "$(files)" "$BEFORE" "files at the end"
kill -0 "$PLUGIN_PID" || fail "the plugin died"
pass "the plugin still serves an honest claim; nothing was written outside its directories"
