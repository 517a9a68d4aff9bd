#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The stand-in API server (tests/k8s/apiserver.py) behaves as kube-apiserver does where
# gpushare's Kubernetes parts depend on it: bearer tokens (401, 403 for a read-only token),
# create (201 with uid, resourceVersion, creationTimestamp, generation; 409 for a name taken;
# status dropped), replace with optimistic concurrency (409), the status subresource, merge
# patch, LIST with limit/continue and field selectors, WATCH from a resourceVersion (ADDED,
# MODIFIED, DELETED in order; 410 Gone when too old), v1 Status errors, the failure switch.
set -euo pipefail
tmp=$(mktemp -d /tmp/gs-test_k8s_apiserver.XXXXXX)
source "$(dirname "$0")/cli_expect.sh"
source "$(dirname "$0")/k8s/lib.sh"
trap 'stop_apiserver; rm -rf "$tmp"' EXIT
start_apiserver --history 3
claims=/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims
slices=/apis/resource.k8s.io/v1/resourceslices

# 1. Tokens.
expect_eq "$(curl -s -o /dev/null -w '%{http_code}' "$api/api/v1/nodes")" 401 "no token"
expect_eq "$(curl -s -H 'Authorization: Bearer nope' "$api/api/v1/nodes" | jq -c '[.kind,.code,.reason]')" \
    '["Status",401,"Unauthorized"]' "wrong token"
expect_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer reader' "$api/api/v1/nodes")" \
    200 "read token reads"
expect_eq "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer reader' \
    -d '{"metadata":{"name":"x"}}' "$api/api/v1/nodes")" 403 "read token writes"

# 2. Create.
slice='{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"n1-gpu"},"spec":{"driver":"gpu.gpushare.io","nodeName":"n1","pool":{"name":"n1","generation":1,"resourceSliceCount":1},"devices":[]}}'
out=$(api POST $slices "$slice")
expect_eq "${out%% *}" 201 "create slice"
expect_eq "$(jq -c '[.metadata.resourceVersion, .metadata.generation, (.metadata.uid|length),
    (.metadata.creationTimestamp|test("^[0-9-]{10}T[0-9:]{8}Z$"))]' <<<"${out#* }")" '["1",1,36,true]' \
    "server-set metadata"
out=$(api POST $slices "$slice")
expect_eq "$(jq -c '[.code,.reason]' <<<"${out#* }")" '[409,"AlreadyExists"]' "name taken"
out=$(api POST $slices '{"apiVersion":"v1","kind":"Node","metadata":{"name":"x"}}')
expect_eq "${out%% *}" 400 "kind of another resource"
out=$(api POST $claims '{"metadata":{"generateName":"c-"},"spec":{"devices":{"requests":[]}},"status":{"allocation":{}}}')
expect_eq "$(jq -c '[.kind, .metadata.namespace, (.metadata.name|test("^c-[a-z0-9]{5}$")), .status]' \
    <<<"${out#* }")" '["ResourceClaim","ml",true,null]' "generateName, namespace, status dropped"
name=$(jq -r .metadata.name <<<"${out#* }")

# 3. Replace, status, patch.
out=$(api PUT "$claims/$name/status" '{"metadata":{},"status":{"allocation":{"devices":{"results":[]}}}}')
expect_eq "$(jq -c '[.metadata.resourceVersion,.status]' <<<"${out#* }")" \
    '["3",{"allocation":{"devices":{"results":[]}}}]' "status written"
out=$(api PUT "$claims/$name" '{"metadata":{"resourceVersion":"2"},"spec":{"devices":{"requests":[{"name":"r"}]}}}')
expect_eq "$(jq -c '[.code,.reason]' <<<"${out#* }")" '[409,"Conflict"]' "stale resourceVersion"
out=$(api PUT "$claims/$name" '{"metadata":{"resourceVersion":"3"},"spec":{"devices":{"requests":[{"name":"r"}]}}}')
expect_eq "$(jq -c '[.metadata.generation,.status.allocation!=null,.spec.devices.requests[0].name]' \
    <<<"${out#* }")" '[2,true,"r"]' "replace keeps status, bumps generation"
out=$(api PATCH "$claims/$name" '{"metadata":{"labels":{"a":"b"}}}' application/merge-patch+json)
expect_eq "$(jq -c '[.metadata.labels,.metadata.resourceVersion]' <<<"${out#* }")" '[{"a":"b"},"5"]' \
    "merge patch"

# 4. LIST: pages and field selectors.
api POST $slices "$(jq -c '.metadata.name="n2-gpu" | .spec.nodeName="n2" | .spec.pool.name="n2" |
    .spec.driver="gpu.other.com"' <<<"$slice")" >/dev/null
out=$(api GET "$slices?limit=1")
expect_eq "$(jq -c '[.kind,.metadata.resourceVersion,[.items[].metadata.name],(.metadata.continue!=null)]' \
    <<<"${out#* }")" '["ResourceSliceList","6",["n1-gpu"],true]' "first page"
cont=$(jq -r .metadata.continue <<<"${out#* }")
out=$(api GET "$slices?limit=1&continue=$(jq -rn --arg c "$cont" '$c|@uri')")
expect_eq "$(jq -c '[[.items[].metadata.name],.metadata.continue]' <<<"${out#* }")" '[["n2-gpu"],null]' \
    "last page"
out=$(api GET "$slices?fieldSelector=spec.driver%3Dgpu.gpushare.io")
expect_eq "$(jq -c '[.items[].metadata.name]' <<<"${out#* }")" '["n1-gpu"]' "field selector"
expect_eq "$(api GET /api/v1/nodes/nowhere | cut -c1-3)" 404 "not found"

# 5. WATCH from a resourceVersion: the changes after it, in order; too old: 410 Gone.
curl -s --max-time 10 -H 'Authorization: Bearer reader' \
    "$api$slices?watch=true&resourceVersion=6&timeoutSeconds=2" >"$tmp/watch" &
watcher=$!
sleep 0.5
api PUT $slices/n1-gpu "$(jq -c '.spec.pool.generation=2' <<<"$slice")" >/dev/null
api DELETE $slices/n2-gpu >/dev/null
wait "$watcher"
expect_eq "$(jq -c '[.type,.object.metadata.name,.object.metadata.resourceVersion]' "$tmp/watch" | tr '\n' ' ')" \
    '["MODIFIED","n1-gpu","7"] ["DELETED","n2-gpu","8"] ' "watch events"
# A watch with a field selector sees an object leave it as DELETED (the pods the extender follows
# are the unfinished ones: a pod that finishes leaves).
pods=/api/v1/namespaces/ml/pods
api POST $pods '{"metadata":{"name":"p1"},"spec":{},"status":{}}' >/dev/null
rv=$(api GET $pods/p1 | cut -d' ' -f2- | jq -r .metadata.resourceVersion)
curl -s --max-time 10 -H 'Authorization: Bearer reader' \
    "$api/api/v1/pods?watch=true&resourceVersion=$rv&timeoutSeconds=2&fieldSelector=status.phase%21%3DSucceeded" \
    >"$tmp/watch2" &
watcher=$!
sleep 0.5
api PUT $pods/p1/status '{"metadata":{},"status":{"phase":"Running"}}' >/dev/null
api PUT $pods/p1/status '{"metadata":{},"status":{"phase":"Succeeded"}}' >/dev/null
api DELETE $pods/p1 >/dev/null
wait "$watcher"
expect_eq "$(jq -c '[.type,.object.status.phase]' "$tmp/watch2" | tr '\n' ' ')" \
    '["MODIFIED","Running"] ["DELETED","Succeeded"] ' "an object leaving the selector"
out=$(curl -s --max-time 5 -H 'Authorization: Bearer reader' "$api$slices?watch=true&resourceVersion=1&timeoutSeconds=1")
expect_eq "$(jq -c '[.type,.object.code,.object.reason]' <<<"$out")" '["ERROR",410,"Expired"]' "too old"

# 6. The failure switch.
api POST /_standin/mode '{"mode":"error"}' >/dev/null
expect_eq "$(api GET /api/v1/nodes | jq -Rc 'split(" ")[0]')" '"500"' "error mode"
api POST /_standin/mode '{"mode":"ok"}' >/dev/null
expect_eq "$(api GET /api/v1/nodes | cut -c1-3)" 200 "back to ok"
[[ $failures -eq 0 ]]
