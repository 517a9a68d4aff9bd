#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpushare mig plan` and `gpushare mig profiles` end to end: the issue's example layout (exact
# lines), H100-80GB's own table, a request that does not fit (exit 1), one-line usage errors, and
# --json: the plan and the table of the same run as one object, errors as JSON objects.
set -euo pipefail
gs="${GS_BUILD_DIR:-build}/bin/gpushare"
tmp=$(mktemp -d /tmp/gs-test_mig_cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/cli_expect.sh"

out=$("$gs" mig plan --model A100-40GB --gpu-memory 4G,4G,12G)
expect_eq "$out" "MIG plan for one idle A100-40GB (7 compute slices, 8 memory slots), requests in order:
  #  REQUEST    PROFILE    SLOTS  MEMORY     COMPUTE
  1  4G         1g.5gb     6      5 GiB      14%
  2  4G         1g.5gb     4      5 GiB      14%
  3  12G        3g.20gb    0-3    20 GiB     43%
layout: [ 0-3: 3g.20gb ][ 4: 1g.5gb ][ 5: free ][ 6: 1g.5gb ][ 7: free ]
left: 2 of 7 compute slices, 2 of 8 memory slots; still fits: 1g.5gb x1" "plan 4G,4G,12G on A100-40GB"

# H100-80GB has its own table: 4G gets 1g.10gb; by name and with a compute share.
# A plan in which a request does not fit exits 1 (the layout still printed).
status=0
out=$("$gs" mig plan --model H100-80GB --gpu-memory 4G --mig-profile 3g.40gb --gpu-memory 8G --compute 50) || status=$?
[[ $status -eq 1 ]] || fail "a plan with a request that does not fit: exit $status, want 1"
grep -qx '  1  4G         4g.40gb    0-3    40 GiB     57%' <<<"$out" || fail "4G with 50 % compute on H100: $out"
grep -qx '  2  3g.40gb    3g.40gb    4-7    40 GiB     43%' <<<"$out" || fail "3g.40gb by name: $out"
grep -qx '  3  8G         4g.40gb    does not fit next to the requests above' <<<"$out" || fail "no room: $out"
status=0
"$gs" mig plan --model H100-80GB --gpu-memory 4G >"$tmp/out" || status=$?
expect_eq "$status" 0 "exit status of a plan that fits"
grep -qx '  1  4G         1g.10gb    6      10 GiB     14%' "$tmp/out" || fail "4G on H100: $(cat "$tmp/out")"
status=0
"$gs" mig plan --model A100-40GB --gpu-memory 4G,41G >"$tmp/out" || status=$?
expect_eq "$status" 1 "exit status of a plan with a request too large"
grep -qx '  2  41G        -          larger than any profile' "$tmp/out" || fail "41G: $(cat "$tmp/out")"

out=$("$gs" mig profiles --model A100-40GB)
grep -qx '3g.20gb         9        3      4     20 GiB         2  0,4' <<<"$out" || fail "profiles: $out"

models="A100-40GB, A100-80GB, H100-80GB, H200-141GB, A30-24GB"
expect_error 2 "gpushare mig: unknown model \"A100\" (models with MIG: $models)" \
    "$gs" mig plan --model A100 --gpu-memory 4G
expect_error 2 "gpushare mig: L4-24GB has no MIG (models with MIG: $models)" \
    "$gs" mig profiles --model L4-24GB
expect_error 2 'gpushare mig: --gpu-memory: not a size "4Q" (see gpushare mig --help)' \
    "$gs" mig plan --model A100-40GB --gpu-memory 4G,4Q
expect_error 2 'gpushare mig: unknown subcommand "apply" (see gpushare mig --help)' \
    "$gs" mig apply
expect_error 2 'gpushare mig: --model is required (see gpushare mig --help)' \
    "$gs" mig plan --gpu-memory 4G

# --json: the plan of the same run as one object (docs/modes.md): each instance with its profile,
# first slot, memory and the request it serves, the layout and what is left.
args=(mig plan --model A100-40GB --gpu-memory 4G,4G,12G)
text=$("$gs" "${args[@]}")
json=$("$gs" "${args[@]}" --json)
expect_eq "$(jq -c '[.ok, .model, .compute_slices, .memory_slots, .compute]' <<<"$json")" \
    '[true,"A100-40GB",7,8,null]' "mig plan --json: the GPU"
expect_eq "$(jq -c '[.requests[] | [.request, .asked, .memory_bytes, .profile, .placed]]' <<<"$json")" \
    '[[1,"4G",4294967296,"1g.5gb",true],[2,"4G",4294967296,"1g.5gb",true],[3,"12G",12884901888,"3g.20gb",true]]' \
    "mig plan --json: the requests"
grep -qx '  1  4G         1g.5gb     6      5 GiB      14%' <<<"$text" || fail "mig plan: $text"
grep -qx '  3  12G        3g.20gb    0-3    20 GiB     43%' <<<"$text" || fail "mig plan: $text"
expect_eq "$(jq -c '[.instances[] | [.request, .profile, .profile_id, .start, .memory_slots, .memory_bytes, .compute_slices, .compute_percent]]' <<<"$json")" \
    '[[1,"1g.5gb",19,6,1,5368709120,1,14],[2,"1g.5gb",19,4,1,5368709120,1,14],[3,"3g.20gb",9,0,4,21474836480,3,43]]' \
    "mig plan --json: the instances"
expect_eq "layout: $(jq -r .layout <<<"$json")" "$(grep '^layout: ' <<<"$text")" "mig plan --json: the layout"
grep -qx 'left: 2 of 7 compute slices, 2 of 8 memory slots; still fits: 1g.5gb x1' <<<"$text" ||
    fail "mig plan: $text"
expect_eq "$(jq -c .left <<<"$json")" '{"compute_slices":2,"memory_slots":2,"fits":{"1g.5gb":1}}' \
    "mig plan --json: what is left"
# A request that does not fit: the object with "ok": false and why, exit status 1 as the text.
status=0
"$gs" mig plan --json --model H100-80GB --gpu-memory 4G --mig-profile 3g.40gb,9g.1gb \
    --gpu-memory 8G --compute 50 >"$tmp/out" 2>"$tmp/err" || status=$?
expect_eq "$status" 1 "exit status of mig plan --json with requests that do not fit"
[[ ! -s "$tmp/err" ]] || fail "mig plan --json: stderr [$(cat "$tmp/err")]"
expect_eq "$(jq -c '[.ok, .compute, .error, [.requests[] | [.asked, .profile, .placed, .why]], [.instances[] | [.request, .profile, .start]]]' "$tmp/out")" \
    '[false,50,{"code":"no_plan","message":"request 3 (9g.1gb): no such profile"},[["4G","4g.40gb",true,null],["3g.40gb","3g.40gb",true,null],["9g.1gb",null,false,"no such profile"],["8G","4g.40gb",false,"does not fit next to the requests above"]],[[1,"4g.40gb",0],[2,"3g.40gb",4]]]' \
    "mig plan --json with requests that do not fit"
expect_eq "$(jq -c .left "$tmp/out")" '{"compute_slices":0,"memory_slots":0,"fits":{}}' \
    "mig plan --json: nothing left"

# mig profiles --json: the table of the same run.
text=$("$gs" mig profiles --model A100-40GB)
json=$("$gs" mig profiles --model A100-40GB --json)
expect_eq "$(jq '.profiles | length' <<<"$json")" "$(($(wc -l <<<"$text") - 2))" "mig profiles --json: one profile a row"
expect_eq "$(jq -c '[.ok, .model, .compute_slices, .memory_slots]' <<<"$json")" '[true,"A100-40GB",7,8]' \
    "mig profiles --json: the GPU"
grep -qx '3g.20gb         9        3      4     20 GiB         2  0,4' <<<"$text" || fail "profiles: $text"
expect_eq "$(jq -c '.profiles[] | select(.name == "3g.20gb")' <<<"$json")" \
    '{"name":"3g.20gb","id":9,"compute_slices":3,"memory_slots":4,"memory_bytes":21474836480,"max_instances":2,"starts":[0,4],"media":false}' \
    "mig profiles --json: 3g.20gb"
expect_eq "$(jq -c '[.profiles[] | [.name, (.starts | map(tostring) | join(","))]]' <<<"$json")" \
    "$(awk 'NR > 2 { printf "%s[\"%s\",\"%s\"]", (NR > 3 ? "," : "["), $1, $NF } END { print "]" }' <<<"$text")" \
    "mig profiles --json: names and starts as in the table"

# Errors with --json: one object on stdout, the exit status of the text form.
# expect_json_error STATUS JSON CMD...
expect_json_error() {
    local want_status=$1 want=$2 status=0
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    expect_eq "$status" "$want_status" "exit status of $*"
    expect_eq "$(cat "$tmp/out")" "$want" "stdout of $*"
    [[ ! -s "$tmp/err" ]] || fail "stderr not empty: $*: $(cat "$tmp/err")"
}
expect_json_error 2 "{\"ok\":false,\"error\":{\"code\":\"usage\",\"message\":\"unknown model \\\"A100\\\" (models with MIG: $models)\"}}" \
    "$gs" mig plan --json --model A100 --gpu-memory 4G
expect_json_error 2 '{"ok":false,"error":{"code":"usage","message":"--gpu-memory: not a size \"4Q\""}}' \
    "$gs" mig plan --model A100-40GB --gpu-memory 4G,4Q --json
expect_json_error 2 '{"ok":false,"error":{"code":"usage","message":"unknown subcommand \"apply\""}}' \
    "$gs" mig apply --json
expect_json_error 2 '{"ok":false,"error":{"code":"usage","message":"--model: missing value"}}' \
    "$gs" mig profiles --json --model

[[ $failures -eq 0 ]] || exit 1
echo "ok: gpushare mig plan and profiles"
