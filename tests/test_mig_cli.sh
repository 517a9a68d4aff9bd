#!/usr/bin/env bash
# `gpushare mig plan` and `gpushare mig profiles` end to end: the issue's example layout (exact
# lines), H100-80GB's own table, a request that does not fit (exit 1), one-line usage errors.
set -euo pipefail
gs="${GS_BUILD_DIR:-build}/bin/gpushare"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

expect_eq() {
    [[ "$1" == "$2" ]] || fail "$3: expected [$2], got [$1]"
}

# expect_error STATUS MESSAGE CMD...: exit STATUS and exactly MESSAGE on stderr, nothing else.
expect_error() {
    local want_status=$1 want=$2 status=0
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    expect_eq "$status" "$want_status" "exit status of $*"
    expect_eq "$(cat "$tmp/err")" "$want" "stderr of $*"
    [[ ! -s "$tmp/out" ]] || fail "stdout not empty: $*"
}

out=$("$gs" mig plan --model A100-40GB --gpu-memory 4G,4G,12G)
expect_eq "$out" "MIG plan for one idle A100-40GB (7 compute slices, 8 memory slots), requests in order:
  #  REQUEST    PROFILE    SLOTS  MEMORY     COMPUTE
  1  4G         1g.5gb     6      5 GiB      14%
  2  4G         1g.5gb     4      5 GiB      14%
  3  12G        3g.20gb    0-3    20 GiB     43%
layout: [ 0-3: 3g.20gb ][ 4: 1g.5gb ][ 5: free ][ 6: 1g.5gb ][ 7: free ]
left: 2 of 7 compute slices, 2 of 8 memory slots; still fits: 1g.5gb x1" "plan 4G,4G,12G on A100-40GB"

# H100-80GB has its own table: 4G gets 1g.10gb; by name and with a compute share.
out=$("$gs" mig plan --model H100-80GB --gpu-memory 4G --mig-profile 3g.40gb --gpu-memory 8G --compute 50) || true
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

[[ $failures -eq 0 ]] || exit 1
echo "ok: gpushare mig plan and profiles"
