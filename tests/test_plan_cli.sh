#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpushare plan` end to end: the issue's cost example (exact figures), help, one-line errors
# with file:line for malformed CSV rows, refused node types and jobs, no plan (exit 1), a small
# replay writing the published CSV format, --policy all in one table and --plot PNG/SVG, and
# --json (the same figures as one object, errors as JSON objects).
set -euo pipefail
gs="${GS_BUILD_DIR:-build}/bin/gpushare"
traces="${GS_DATA_DIR:-data}/traces/alibaba-openb"
tmp=$(mktemp -d /tmp/gs-test_plan_cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/cli_expect.sh"

# 1. The cost example: 4 jobs at 25 % on g4dn.2xlarge at $0.752/hour, 720 hours a month.
out=$("$gs" plan --job 0.25x4 --node-type g4dn.2xlarge:gpus=1,price=0.752)
expect_line "$out" "workload: 4 jobs (4 sharing a GPU, 0 on whole GPUs, 0 CPU only), GPU demand 1.00 GPU"
expect_line "$out" "g4dn.2xlarge (1 GPU per node, \$0.752/hour)"
expect_line "$out" "  gpushare                  1        1           100.0%         \$541.44"
expect_line "$out" "  one job per GPU           4        4            25.0%       \$2,165.76"
expect_line "$out" "  sharing needs 3 fewer nodes: saves \$1,624.32 per month (75.0%)"

# The same from files, with a second node type and a 730-hour month.
printf 'name,gpu,count\ninference,25%%,4\n' >"$tmp/jobs.csv"
printf 'name,gpus,price_per_hour\ng4dn.2xlarge,1,0.752\ng4dn.12xlarge,4,3.912\n' >"$tmp/types.csv"
out=$("$gs" plan --workload "$tmp/jobs.csv" --node-types "$tmp/types.csv" --hours-per-month 730)
expect_line "$out" "  gpushare                  1        1           100.0%         \$548.96"
expect_line "$out" "  one job per GPU           1        4            25.0%       \$2,855.76"
expect_line "$out" "cheapest: g4dn.2xlarge with GPU sharing, \$548.96 per month"

# A job larger than the node type is named, and with no node type that can hold the workload
# there is no plan: one line on stderr and exit status 1 after the table.
status=0
"$gs" plan --job 0.5x2 --job 2 --node-type a:gpus=1,price=1 >"$tmp/out" 2>"$tmp/err" || status=$?
[[ $status -eq 1 ]] || fail "no plan: exit $status (want 1)"
expect_line "$(cat "$tmp/out")" "  gpushare           job job-3 (2 GPU x 1000 milli, 0 milli-CPU, 0 MiB) fits no node of this type"
[[ "$(cat "$tmp/err")" == "gpushare plan: no plan: no node type holds the workload; job job-3 (2 GPU x 1000 milli, 0 milli-CPU, 0 MiB) fits no node of type a" ]] ||
    fail "no plan: stderr [$(cat "$tmp/err")]"
status=0
"$gs" plan --job 1x5 --node-type a:gpus=1,price=1 --max-nodes 2 >/dev/null 2>"$tmp/err" || status=$?
[[ $status -eq 1 && "$(cat "$tmp/err")" == "gpushare plan: no plan: every node type needs more than 2 nodes (--max-nodes)" ]] ||
    fail "max-nodes: exit $status, stderr [$(cat "$tmp/err")]"
# One node type that holds it is a plan.
"$gs" plan --job 2 --node-type a:gpus=1,price=1 --node-type b:gpus=2,price=3 >"$tmp/out" ||
    fail "a plan with one of two node types"
expect_line "$(cat "$tmp/out")" "cheapest: b with GPU sharing, \$2,160.00 per month"
# Percentages are accepted where fractions are.
out=$("$gs" plan --job 25%x4 --node-type g4dn.2xlarge:gpus=1,price=0.752)
expect_line "$out" "  gpushare                  1        1           100.0%         \$541.44"

# 2. Help goes to stdout with status 0.
"$gs" plan --help | grep -q "^usage: gpushare plan" || fail "plan --help"
"$gs" plan replay --help | grep -q "^usage: gpushare plan replay" || fail "plan replay --help"

# 3. Malformed input: one line naming file:line and the reason, non-zero exit.
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,1,500\np1,abc,10,1,500\n' >"$tmp/bad.csv"
expect_error 1 "gpushare plan: $tmp/bad.csv:3: cpu_milli \"abc\" is not a whole number" \
    "$gs" plan --workload "$tmp/bad.csv" --node-type a:gpus=1,price=1
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,2,500\n' >"$tmp/bad2.csv"
expect_error 1 "gpushare plan: $tmp/bad2.csv:2: gpu_milli 500 below 1000 with num_gpu 2 (a share is of one GPU)" \
    "$gs" plan replay --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$tmp/bad2.csv"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,96000,1000,2,T4\nn1,96000,1000\n' >"$tmp/nodes.csv"
expect_error 1 "gpushare plan: $tmp/nodes.csv:3: 3 fields where the header has 5" \
    "$gs" plan replay --nodes "$tmp/nodes.csv" --pods "$tmp/jobs.csv"
expect_error 1 "gpushare plan: $tmp/missing.csv: No such file or directory" \
    "$gs" plan replay --nodes "$tmp/missing.csv" --pods "$tmp/jobs.csv"
expect_error 2 "gpushare plan: --job \"0.3333\": gpu: invalid GPU fraction \"0.3333\": at most 3 decimals (0.001 GPU) (a share of one GPU, or a whole number of GPUs)" \
    "$gs" plan --job 0.3333 --node-type a:gpus=1,price=1
expect_error 2 "gpushare plan: node type a has no price (price=DOLLARS_PER_HOUR)" \
    "$gs" plan --job 0.5 --node-type a:gpus=1
# Node types and jobs that make no sense are refused (issue 14).
expect_error 2 "gpushare plan: node type a has no GPU (gpus=N, 1..16)" \
    "$gs" plan --job 0.5 --node-type a:gpus=0,price=1
expect_error 2 "gpushare plan: --node-type \"a:gpus=17,price=1\": gpu \"17\" is out of range (at most 16)" \
    "$gs" plan --job 0.5 --node-type a:gpus=17,price=1
models="A100-40GB, A100-80GB, H100-80GB, H200-141GB, A30-24GB, L4-24GB, T4-16GB, V100-32GB"
expect_error 2 "gpushare plan: node type a has an unknown GPU model \"H100X\" (known: $models, their families such as A100, and the models the jobs' gpu_spec names)" \
    "$gs" plan --job 0.5 --node-type a:gpus=1,price=1,model=H100X
expect_error 2 "gpushare plan: node type a has cpu_milli 0 (leave it out for no limit)" \
    "$gs" plan --job 0.5 --node-type a:gpus=1,price=1,cpu_milli=0
expect_error 2 "gpushare plan: node type a has memory_mib 0 (leave it out for no limit)" \
    "$gs" plan --job 0.5 --node-type a:gpus=1,price=1,memory_mib=0
expect_error 2 "gpushare plan: --node-type \"a:gpus=1,price=1,price=2\": price given twice" \
    "$gs" plan --job 0.5 --node-type a:gpus=1,price=1,price=2
expect_error 2 "gpushare plan: --node-type \"a:gpus=1,price=-1\": price \"-1\" is not a price per hour (a number like 0.752)" \
    "$gs" plan --job 0.5 --node-type a:gpus=1,price=-1
expect_error 2 "gpushare plan: --node-type \"a:gpus=1,price=nan\": price \"nan\" is not a price per hour (a number like 0.752)" \
    "$gs" plan --job 0.5 --node-type a:gpus=1,price=nan
expect_error 2 "gpushare plan: --job \"0\": a job takes some GPU: a share (0.25 or 25%) or a whole number of GPUs" \
    "$gs" plan --job 0 --node-type a:gpus=1,price=1
expect_error 2 "gpushare plan: --job \"0.5x0\": count must be at least 1" \
    "$gs" plan --job 0.5x0 --node-type a:gpus=1,price=1
expect_error 2 "gpushare plan: --job \"0.5xabc\": count \"abc\" is not a whole number" \
    "$gs" plan --job 0.5xabc --node-type a:gpus=1,price=1
printf 'name,gpus,price_per_hour,model\nbig,8,20,H100\nodd,4,9,X9\n' >"$tmp/badtypes.csv"
expect_error 1 "gpushare plan: $tmp/badtypes.csv: node type odd has an unknown GPU model \"X9\" (known: $models, their families such as A100, and the models the jobs' gpu_spec names)" \
    "$gs" plan --job 0.5 --node-types "$tmp/badtypes.csv"
# A model the jobs name is known (openb's internal codes such as G2), and case does not matter.
printf 'name,gpu,gpu_spec\ntrain,1,G2\n' >"$tmp/g2.csv"
"$gs" plan --workload "$tmp/g2.csv" --node-type a:gpus=8,price=10,model=G2 >/dev/null || fail "model G2"
"$gs" plan --job 0.5 --node-type a:gpus=1,price=1,model=a100-40gb >/dev/null || fail "model case"
# A job that asks for a model no node type has fits nowhere: no plan.
status=0
"$gs" plan --workload "$tmp/g2.csv" --node-type a:gpus=8,price=10,model=T4 >/dev/null 2>&1 || status=$?
[[ $status -eq 1 ]] || fail "job for a missing model: exit $status (want 1)"
expect_error 2 "gpushare plan: --policy \"worstfit\": unknown policy (see --help)" \
    "$gs" plan replay --nodes x --pods y --policy worstfit
expect_error 2 "gpushare plan: unknown option \"--bogus\" (see gpushare plan --help)" \
    "$gs" plan --bogus
expect_error 2 "gpushare plan: replay needs --nodes and --pods (see gpushare plan replay --help)" \
    "$gs" plan replay

expect_error 2 "gpushare plan: --plot \"x.jpg\": the file name must end in .png or .svg" \
    "$gs" plan replay --nodes x --pods y --plot x.jpg
expect_error 2 "gpushare plan: --inflate \"13000%\": expected a ratio between 0 and 100 (1.3 or 130%)" \
    "$gs" plan replay --nodes x --pods y --inflate 13000%

# 4. A small replay: the published CSV format, one row per (policy, seed), and a plot.
"$gs" plan replay --nodes "$traces/openb_node_list_gpu_node.csv" \
    --pods "$traces/openb_pod_list_default.csv" --policy fgd,gpushare --seed 42 --inflate 130% \
    --out "$tmp/res.csv" --plot "$tmp/plot.svg" >"$tmp/summary"
[[ $(wc -l <"$tmp/res.csv") -eq 3 ]] || fail "results: $(wc -l <"$tmp/res.csv") lines"
head -1 "$tmp/res.csv" | grep -q '^workload,sc_policy,tune,seed,total_gpus,0,1,2,.*,129,130$' ||
    fail "results header"
[[ $(sed -n 2p "$tmp/res.csv" | awk -F, '{print NF}') -eq 136 ]] || fail "results columns"
grep -q '^openb_pod_list_default,06-FGD,1.3,42,6212,' "$tmp/res.csv" || fail "FGD row"
grep -q '^openb_pod_list_default,07-gpushare,1.3,42,6212,' "$tmp/res.csv" || fail "gpushare row"
grep -q '^gpushare    07-gpushare' "$tmp/summary" || fail "summary"
grep -q '</svg>' "$tmp/plot.svg" || fail "plot"

# 5. --policy all: every policy in one table, compared with FGD; --plot FILE.png draws them all.
"$gs" plan replay --nodes "$traces/openb_node_list_gpu_node.csv" \
    --pods "$traces/openb_pod_list_default.csv" --policy all --seed 42 \
    --published "$traces/published_allocation_fgd_atc23.csv" --plot "$tmp/all.png" >"$tmp/all"
[[ $(grep -c '^policy ' "$tmp/all") -eq 1 ]] || fail "one table"
for p in random dotprod clustering packing bestfit fgd gpushare spread; do
    grep -q "^$p " "$tmp/all" || fail "policy $p missing from the table"
done
grep -q '^fgd         06-FGD                  4.82%      4.82..4.82       4.86   0.992' "$tmp/all" ||
    fail "FGD row of the table: $(grep '^fgd ' "$tmp/all")"
grep -q '^gpushare    07-gpushare             3.74%      3.74..3.74          -   0.770' "$tmp/all" ||
    fail "gpushare row of the table: $(grep '^gpushare ' "$tmp/all")"
grep -q "^vs FGD: unalloc@100 divided by FGD's mean (published: 4.86%)$" "$tmp/all" || fail "vs FGD"
# A PNG of 1920 x 840 pixels (signature, then the IHDR chunk's width and height).
[[ "$(head -c 8 "$tmp/all.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "PNG signature"
[[ "$(od -An -tu1 -j16 -N8 "$tmp/all.png" | tr -s ' ')" == " 0 0 7 128 0 0 3 72" ]] || fail "PNG size"
[[ $(wc -c <"$tmp/all.png") -gt 20000 ]] || fail "PNG too small to hold the chart"

# 6. --json: the plan of the same run as one object (docs/placement.md), the same figures as the
# table: per node type and placement the nodes, GPUs, utilisation and monthly cost.
args=(--job 0.25x4 --node-type g4dn.2xlarge:gpus=1,price=0.752
    --node-type g4dn.12xlarge:gpus=4,price=3.912,cpu_milli=48000,model=T4)
text=$("$gs" plan "${args[@]}")
json=$("$gs" plan "${args[@]}" --json)
expect_line "$text" "workload: 4 jobs (4 sharing a GPU, 0 on whole GPUs, 0 CPU only), GPU demand 1.00 GPU"
expect_line "$text" "  gpushare                  1        1           100.0%         \$541.44"
expect_line "$text" "  one job per GPU           4        4            25.0%       \$2,165.76"
expect_line "$text" "  sharing needs 3 fewer nodes: saves \$1,624.32 per month (75.0%)"
expect_line "$text" "  gpushare                  1        4            25.0%       \$2,816.64"
expect_line "$text" "  one job per GPU           1        4            25.0%       \$2,816.64"
expect_line "$text" "cheapest: g4dn.2xlarge with GPU sharing, \$541.44 per month"
expect_eq "$(jq -c '[.ok, .policy, .hours_per_month, .max_nodes]' <<<"$json")" \
    '[true,"gpushare",720,100000]' "plan --json: the parameters"
expect_eq "$(jq -c .workload <<<"$json")" \
    '{"jobs":4,"sharing":4,"whole_gpus":0,"cpu_only":0,"gpu_demand":1}' "plan --json: the workload"
expect_eq "$(jq -c '[.jobs[] | [.name, .gpu, .num_gpu, .gpu_milli]]' <<<"$json")" \
    '[["job-1",0.25,1,250],["job-2",0.25,1,250],["job-3",0.25,1,250],["job-4",0.25,1,250]]' \
    "plan --json: the jobs"
expect_eq "$(jq -c '[.node_types[] | [.name, .gpus, .price_per_hour, .cpu_milli, .memory_mib, .model]]' <<<"$json")" \
    '[["g4dn.2xlarge",1,0.752,null,null,null],["g4dn.12xlarge",4,3.912,48000,null,"T4"]]' \
    "plan --json: the node types"
expect_eq "$(jq -c '[.node_types[].placements[] | [.placement, .sharing, .feasible, .nodes, .gpus, .utilization_percent, .monthly_cost]]' <<<"$json")" \
    '[["gpushare",true,true,1,1,100,541.44],["one_job_per_gpu",false,true,4,4,25,2165.76],["gpushare",true,true,1,4,25,2816.64],["one_job_per_gpu",false,true,1,4,25,2816.64]]' \
    "plan --json: nodes, GPUs, utilisation and monthly cost"
expect_eq "$(jq -c '[.node_types[].savings]' <<<"$json")" \
    '[{"nodes":3,"monthly_cost":1624.32,"percent":75},null]' "plan --json: the savings"
expect_eq "$(jq -c .cheapest <<<"$json")" '{"node_type":"g4dn.2xlarge","monthly_cost":541.44}' \
    "plan --json: the cheapest"
# No plan: the object with "ok": false and the error the text prints last, exit status 1.
status=0
"$gs" plan --json --job 0.5x2 --job 2 --node-type a:gpus=1,price=1 >"$tmp/out" 2>"$tmp/err" || status=$?
expect_eq "$status" 1 "plan --json without a plan: exit status"
[[ ! -s "$tmp/err" ]] || fail "plan --json without a plan: stderr [$(cat "$tmp/err")]"
expect_eq "$(jq -c '[.ok, .error.code, .cheapest, [.node_types[0].placements[] | [.feasible, .nodes, .misfit_job]]]' "$tmp/out")" \
    '[false,"no_plan",null,[[false,null,"job-3"],[false,null,"job-3"]]]' "plan --json without a plan"
expect_eq "$(jq -r .error.message "$tmp/out")" \
    "no plan: no node type holds the workload; job job-3 (2 GPU x 1000 milli, 0 milli-CPU, 0 MiB) fits no node of type a" \
    "plan --json without a plan: the message"
status=0
"$gs" plan --json --job 1x5 --node-type a:gpus=1,price=1 --max-nodes 2 >"$tmp/out" || status=$?
expect_eq "$status/$(jq -c '[.error.code, .node_types[0].placements[0].misfit_job]' "$tmp/out")" \
    '1/["no_plan",null]' "plan --json beyond --max-nodes"

# Errors with --json: one object on stdout, nothing on stderr, the exit status of the text form.
# expect_json_error STATUS JSON CMD...
expect_json_error() {
    local want_status=$1 want=$2 status=0
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    expect_eq "$status" "$want_status" "exit status of $*"
    expect_eq "$(cat "$tmp/out")" "$want" "stdout of $*"
    [[ ! -s "$tmp/err" ]] || fail "stderr not empty: $*: $(cat "$tmp/err")"
}
expect_json_error 2 '{"ok":false,"error":{"code":"usage","message":"unknown option \"--bogus\""}}' \
    "$gs" plan --json --bogus
expect_json_error 2 '{"ok":false,"error":{"code":"usage","message":"--job: missing value"}}' \
    "$gs" plan --json --job
expect_json_error 2 '{"ok":false,"error":{"code":"usage","message":"node type a has no GPU (gpus=N, 1..16)"}}' \
    "$gs" plan --job 0.5 --node-type a:gpus=0,price=1 --json
expect_json_error 1 "{\"ok\":false,\"error\":{\"code\":\"bad_input\",\"message\":\"$tmp/bad.csv:3: cpu_milli \\\"abc\\\" is not a whole number\"}}" \
    "$gs" plan --json --workload "$tmp/bad.csv" --node-type a:gpus=1,price=1
expect_json_error 2 '{"ok":false,"error":{"code":"usage","message":"unknown subcommand \"replya\" (see gpushare plan --help)"}}' \
    "$gs" plan replya --json
expect_json_error 2 '{"ok":false,"error":{"code":"usage","message":"--json and --out - both write to standard output: give --out FILE"}}' \
    "$gs" plan replay --nodes x --pods y --out - --json
expect_json_error 1 "{\"ok\":false,\"error\":{\"code\":\"bad_input\",\"message\":\"$tmp/missing.csv: No such file or directory\"}}" \
    "$gs" plan replay --json --nodes "$tmp/missing.csv" --pods "$tmp/jobs.csv"
# A carriage return in a file's value stays out of the message (one line), and a byte that is not
# UTF-8 becomes '?' in a JSON message.
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,a\rb,10,1,500\n' >"$tmp/cr.csv"
expect_error 1 "gpushare plan: $tmp/cr.csv:2: cpu_milli \"a b\" is not a whole number" \
    "$gs" plan --workload "$tmp/cr.csv" --node-type a:gpus=1,price=1
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,\xff,10,1,500\n' >"$tmp/latin.csv"
expect_json_error 1 "{\"ok\":false,\"error\":{\"code\":\"bad_input\",\"message\":\"$tmp/latin.csv:2: cpu_milli \\\"?\\\" is not a whole number\"}}" \
    "$gs" plan --json --workload "$tmp/latin.csv" --node-type a:gpus=1,price=1

# 7. plan replay --json: per policy the unallocated % at every arrived % (the mean over the
# seeds), the mean at 100 % of the table, the published figure and the ratio to FGD's. The
# curve is the --out CSV of the same run: 100 - its allocation % at each arrived %.
replay=("$gs" plan replay --nodes "$traces/openb_node_list_gpu_node.csv"
    --pods "$traces/openb_pod_list_default.csv" --policy fgd,gpushare --seed 42
    --published "$traces/published_allocation_fgd_atc23.csv")
text=$("${replay[@]}")
"${replay[@]}" --json --out "$tmp/json.csv" >"$tmp/replay.json" || fail "plan replay --json"
grep -q '^fgd         06-FGD                  4.82%      4.82..4.82       4.86   0.992 ' <<<"$text" ||
    fail "replay table: $text"
grep -q '^gpushare    07-gpushare             3.74%      3.74..3.74          -   0.770 ' <<<"$text" ||
    fail "replay table: $text"
expect_eq "$(jq -c '[.ok, .workload, .inflate, .seeds, .total_gpus, .fgd_reference]' "$tmp/replay.json")" \
    '[true,"openb_pod_list_default",1.3,[42],6212,{"source":"published","unallocated_at_100":4.86}]' \
    "plan replay --json: the parameters"
expect_eq "$(jq -c '[.policies[] | [.policy, .label, .runs, .unallocated_at_100, (.vs_fgd * 1000 | round)]]' "$tmp/replay.json")" \
    '[["fgd","06-FGD",1,{"mean":4.82,"min":4.82,"max":4.82,"published":4.86},992],["gpushare","07-gpushare",1,{"mean":3.74,"min":3.74,"max":3.74,"published":null},770]]' \
    "plan replay --json: the table"
expect_eq "$(jq -c '[.policies[] | (.unallocated_at | length), .unallocated_at[100]]' "$tmp/replay.json")" \
    '[131,4.82,131,3.74]' "plan replay --json: the curves"
for row in 2 3; do
    want=$(sed -n "${row}p" "$tmp/json.csv" | cut -d, -f6- | tr ',' '\n' |
        awk '{ if ($0 == "") print "null"; else printf "%.2f\n", 100 - $0 }')
    got=$(jq -r ".policies[$((row - 2))].unallocated_at[] | if . == null then \"null\" else (. * 100 | round / 100 | tostring) end" "$tmp/replay.json" |
        awk '$0 == "null" { print; next } { printf "%.2f\n", $0 }')
    expect_eq "$got" "$want" "plan replay --json: curve $row against the CSV"
done

if [[ $failures -gt 0 ]]; then
    echo "$failures failure(s)" >&2
    exit 1
fi
echo "test_plan_cli: all checks passed"
