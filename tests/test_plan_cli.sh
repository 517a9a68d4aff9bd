#!/usr/bin/env bash
# `gpushare plan` end to end: the issue's cost example (exact figures), help, one-line errors
# with file:line for malformed CSV rows, and a small replay writing the published CSV format.
set -euo pipefail
gs="${GS_BUILD_DIR:-build}/bin/gpushare"
traces="${GS_DATA_DIR:-data}/traces/alibaba-openb"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect_line OUTPUT LINE: OUTPUT has exactly this line.
expect_line() {
    grep -qxF -- "$2" <<<"$1" || fail "missing line: [$2] in:"$'\n'"$1"
}

# expect_error STATUS MESSAGE CMD...: CMD exits with STATUS and prints exactly MESSAGE (one line)
# on stderr and nothing on stdout.
expect_error() {
    local want_status=$1 want=$2 status=0
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    [[ $status -eq $want_status ]] || fail "exit $status (want $want_status): $*"
    [[ "$(cat "$tmp/err")" == "$want" ]] || fail "stderr [$(cat "$tmp/err")] want [$want]"
    [[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "stderr is not one line: $*"
    [[ ! -s "$tmp/out" ]] || fail "stdout not empty: $*"
}

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

# A job larger than the node type is named.
out=$("$gs" plan --job 0.5x2 --job 2 --node-type a:gpus=1,price=1)
expect_line "$out" "  gpushare           job job-3 (2 GPU x 1000 milli, 0 milli-CPU, 0 MiB) fits no node of this type"

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
expect_error 2 "gpushare plan: --policy \"worstfit\": unknown policy (see --help)" \
    "$gs" plan replay --nodes x --pods y --policy worstfit
expect_error 2 "gpushare plan: unknown option \"--bogus\" (see gpushare plan --help)" \
    "$gs" plan --bogus
expect_error 2 "gpushare plan: replay needs --nodes and --pods (see gpushare plan replay --help)" \
    "$gs" plan replay

# 4. A small replay: the published CSV format, one row per (policy, seed), and a plot.
"$gs" plan replay --nodes "$traces/openb_node_list_gpu_node.csv" \
    --pods "$traces/openb_pod_list_default.csv" --policy fgd,gpushare --seed 42 \
    --out "$tmp/res.csv" --plot "$tmp/plot.svg" >"$tmp/summary"
[[ $(wc -l <"$tmp/res.csv") -eq 3 ]] || fail "results: $(wc -l <"$tmp/res.csv") lines"
head -1 "$tmp/res.csv" | grep -q '^workload,sc_policy,tune,seed,total_gpus,0,1,2,.*,129,130$' ||
    fail "results header"
[[ $(sed -n 2p "$tmp/res.csv" | awk -F, '{print NF}') -eq 136 ]] || fail "results columns"
grep -q '^openb_pod_list_default,06-FGD,1.3,42,6212,' "$tmp/res.csv" || fail "FGD row"
grep -q '^openb_pod_list_default,07-gpushare,1.3,42,6212,' "$tmp/res.csv" || fail "gpushare row"
grep -q '^gpushare    07-gpushare' "$tmp/summary" || fail "summary"
grep -q '</svg>' "$tmp/plot.svg" || fail "plot"

if [[ $failures -gt 0 ]]; then
    echo "$failures failure(s)" >&2
    exit 1
fi
echo "test_plan_cli: all checks passed"
