#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpushare-scheduler-extender end to end: the extender process follows the stand-in API server
# (tests/k8s/apiserver.py, LIST + WATCH with a read-only token) and answers kube-scheduler's
# recorded requests (tests/k8s/requests: ExtenderArgs as k8s.io/kube-scheduler's extender/v1
# defines them and kube-scheduler sends them, with Go's field names "Pod", "Nodes", "NodeNames";
# full Pod and Node objects) sent with curl, exactly as tests/k8s/expected says.
# Then what the watch brings (a claim allocated elsewhere changes the answer), and bad input:
# malformed ExtenderArgs, unknown nodes, another driver's claim, an API server that errs,
# refuses (403), hangs, is down, or refuses the token (401) -> one clear log line and a neutral
# answer, every answer within 5 s, and a clean stop on SIGTERM.
set -euo pipefail
tmp=$(mktemp -d /tmp/gs-test_extender_e2e.XXXXXX)
source "$(dirname "$0")/cli_expect.sh"
source "$(dirname "$0")/k8s/lib.sh"
cleanup() {
    [[ -n "$extender_pid" ]] && kill -KILL "$extender_pid" 2>/dev/null
    [[ -n "$apiserver_pid" ]] && kill -KILL "$apiserver_pid" 2>/dev/null
    [[ -n "${KEEP_TMP:-}" ]] && echo "kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT
requests="$k8s_dir/requests"

start_apiserver --load "$k8s_dir/cluster.json"
start_extender reader
ready_is 200 10 || fail "the extender is not ready within 10 s"

# 1. Recorded requests, in order (prioritize assumes its choice, which the later ones see).
for name in filter-share prioritize-share filter-nodes prioritize-cpu filter-whole \
    prioritize-other-driver filter-other-driver prioritize-unknown; do
    expect_eq "$(verb "${name%%-*}" "$requests/$name.json")" "$(cat "$k8s_dir/expected/$name.json")" "$name"
done
expect_line "$(cat "$tmp/extender.log" | cut -d' ' -f2-)" \
    "gpushare-scheduler-extender[$extender_pid]: warn: filter ml/cuda-0: neutral answer: claim ml/cuda-nv: request gpu is for device class gpu.nvidia.com (another driver)"
grep -q "prioritize ml/train-0: 1 of 2 candidate nodes unknown to the model (passed, scored 0)" \
    "$tmp/extender.log" || fail "no log line for the unknown node"

# 2. Malformed ExtenderArgs: an error the scheduler ignores (filter), no scores (prioritize).
out=$(verb filter "$requests/malformed.json")
expect_eq "$out" '{"error":"gpushare: malformed ExtenderArgs: not JSON: premature end of input near '"'"'\"t'"'"' (line 1)"}' "malformed filter"
expect_eq "$(verb prioritize "$requests/malformed.json")" "[]" "malformed prioritize"
grep -q "warn: prioritize: malformed ExtenderArgs: not JSON" "$tmp/extender.log" ||
    fail "no log line for malformed ExtenderArgs"
printf '{"pod":7,"nodenames":["gpu-a"]}' >"$tmp/badpod.json"
expect_eq "$(verb prioritize "$tmp/badpod.json")" '[{"host":"gpu-a","score":0}]' "no pod object"

# 3. The watch: a claim allocated on three of gpu-b's GPUs (created, then its status written, as
# the scheduler does) leaves gpu-b one free GPU: the 3-GPU pod fits nowhere any more, which
# the model takes as being behind: all pass, neutral.
claim='{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"big","namespace":"ml"},"spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.gpushare.io","count":3}}]}}}'
[[ "$(api POST /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims "$claim" | cut -c1-3)" == 201 ]] ||
    fail "create claim big"
results=""
for g in 1 2 3; do
    results+="${results:+,}{\"request\":\"gpus\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"gpu-b\",\"device\":\"gpu-$g\",\"consumedCapacity\":{\"memory\":\"80Gi\",\"compute\":\"100\"}}"
done
status="{\"status\":{\"allocation\":{\"devices\":{\"results\":[$results]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"gpu-b\"]}]}]}}}}"
[[ "$(api PATCH /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/big/status "$status" \
    application/merge-patch+json | cut -c1-3)" == 200 ]] || fail "allocate claim big"
seen=0
for ((i = 0; i < 50; i++)); do
    if grep -q "filter ml/whole-0: neutral answer: no candidate has room by the model" \
        <(verb filter "$requests/filter-whole.json" >/dev/null; cat "$tmp/extender.log"); then
        seen=1
        break
    fi
    sleep 0.1
done
[[ $seen -eq 1 ]] || fail "the extender did not see claim big allocated within 5 s"
expect_eq "$(verb filter "$requests/filter-whole.json")" '{"nodenames":["gpu-a","gpu-b","cpu-c"]}' \
    "filter after the watch"

# 4. The API server fails: while the watches are broken every answer is neutral, with a line
# saying why; each recovers by relisting.
share=$(cat "$k8s_dir/expected/prioritize-share.json")
neutral='[{"host":"gpu-a","score":0},{"host":"gpu-b","score":0}]'
for mode in forbidden error; do
    api POST /_standin/mode "{\"mode\":\"$mode\"}" >/dev/null
    ready_is 503 15 || fail "$mode: the extender still says ready after 15 s"
    expect_eq "$(verb prioritize "$requests/prioritize-share.json")" "$neutral" "$mode: neutral"
    api POST /_standin/mode '{"mode":"ok"}' >/dev/null
    ready_is 200 15 || fail "$mode: not ready again within 15 s"
done
grep -q "warn: WATCH resourceclaims: HTTP 403 (forbidden: the token may not do this)\|warn: LIST resourceclaims: HTTP 403 (forbidden: the token may not do this)" \
    "$tmp/extender.log" || fail "no log line for HTTP 403"
grep -q "HTTP 500 (stand-in switched to answer errors)" "$tmp/extender.log" ||
    fail "no log line for HTTP 500"
grep -q "resourceclaims: out of sync with the API server: answers are neutral" "$tmp/extender.log" ||
    fail "no log line for being out of sync"
expect_eq "$(verb prioritize "$requests/prioritize-share.json")" "$share" "answers after recovery"

# An API server that accepts and never answers: the verbs do not wait for it.
api POST /_standin/mode '{"mode":"hang"}' >/dev/null
sleep 4 # the watches (3 s) end and reconnect into the hang
start=$(date +%s%N)
out=$(verb prioritize "$requests/prioritize-share.json") || fail "hang: no answer within 5 s"
(($(date +%s%N) - start < 2000000000)) || fail "hang: the answer took over 2 s"

# Down: the watches break at once; neutral answers; back when it is.
stop_apiserver
ready_is 503 15 || fail "down: the extender still says ready after 15 s"
expect_eq "$(verb prioritize "$requests/prioritize-share.json")" "$neutral" "down: neutral"
expect_eq "$(verb filter "$requests/filter-share.json")" '{"nodenames":["gpu-a","gpu-b","cpu-c"]}' \
    "down: every node passes"
grep -q "neutral answer: out of sync with the API server\|neutral answer: not listed from the API server yet" \
    "$tmp/extender.log" || fail "down: no log line for the neutral answer"
grep -q "warn: [a-z]*: http://127.0.0.1:$api_port: " "$tmp/extender.log" ||
    fail "down: no log line naming the API server and the error"
start_apiserver --port "$api_port" --load "$k8s_dir/cluster.json"
ready_is 200 20 || fail "the extender did not recover within 20 s of the API server's return"
stop_extender || fail "the extender did not stop cleanly on SIGTERM"

# 5. A token the API server refuses: never ready, neutral, "HTTP 401" in its log.
ext_log=extender-401.log
start_extender not-a-token
sleep 2
ready_is 503 5 || fail "401: the extender says ready"
expect_eq "$(verb prioritize "$requests/prioritize-share.json")" "$neutral" "401: neutral"
grep -q "warn: LIST [a-z]*: HTTP 401 (Unauthorized)" "$tmp/extender-401.log" || fail "401: no log line"
stop_extender || fail "401: no clean stop"
stop_apiserver

# 6. HTTPS: the API server's certificate verified against --ca-file (its address in the
# certificate); a CA that did not sign it is refused with a line saying why.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/other.key" -out "$tmp/other.pem" -days 1 \
    -subj /CN=other 2>/dev/null
api_scheme=https start_apiserver --load "$k8s_dir/cluster.json" --tls-cert "$tmp/cert.pem" \
    --tls-key "$tmp/key.pem"
ext_log=extender-tls.log
start_extender reader --ca-file "$tmp/cert.pem"
ready_is 200 10 || fail "https: not ready with the right CA"
expect_eq "$(verb prioritize "$requests/prioritize-share.json")" "$share" "https: answers"
stop_extender || fail "https: no clean stop"
ext_log=extender-badca.log
start_extender reader --ca-file "$tmp/other.pem"
sleep 2
ready_is 503 5 || fail "https: ready with a CA that did not sign the server's certificate"
grep -q "warn: [a-z]*: https://127.0.0.1:$api_port: TLS: " "$tmp/extender-badca.log" ||
    fail "https: no log line for the refused certificate"
stop_extender || fail "https (bad CA): no clean stop"
stop_apiserver

# 7. Usage errors are one line and status 2.
expect_error 2 "gpushare-scheduler-extender: --policy is gpushare or fgd (see --help)" \
    "$extender" --policy random --server http://127.0.0.1:1
expect_error 2 "gpushare-scheduler-extender: --listen wants ADDR:PORT (see --help)" \
    "$extender" --listen nowhere --server http://127.0.0.1:1
[[ $failures -eq 0 ]]
