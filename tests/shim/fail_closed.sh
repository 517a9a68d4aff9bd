#!/usr/bin/env bash
# A bad lease configuration fails closed: cuInit returns CUDA_ERROR_INVALID_VALUE (1) with one
# log line naming the variable and value; the application never runs unlimited by mistake.
# A good one shows the slice, capped at the device's real size.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
probe=$GS_BUILD_DIR/tests/init_probe
run() { bash "$here/run_sim.sh" --shim "$@" -- "$probe"; }
failures=0

expect_refusal() { # VAR=VALUE... -- expected text in the one log line
  local want=${*: -1}
  local out err
  err=$(mktemp)
  out=$(run "${@:1:$#-1}" 2>"$err")
  if [[ $out != "cuInit=1" ]]; then
    echo "FAIL: ${*:1:$#-1}: got '$out', want cuInit=1"; failures=$((failures + 1))
  elif [[ $(grep -c . "$err") -ne 1 ]] || ! grep -qF -- "$want" "$err"; then
    echo "FAIL: ${*:1:$#-1}: want one line with '$want', got:"; cat "$err"; failures=$((failures + 1))
  else
    echo "ok: ${*:1:$#-1} -> $(cat "$err")"
  fi
  rm -f "$err"
}

expect_refusal GPUSHARE_MEMORY_LIMIT=12Q 'GPUSHARE_MEMORY_LIMIT="12Q"'
expect_refusal GPUSHARE_MEMORY_LIMIT=0 'GPUSHARE_MEMORY_LIMIT="0"'
expect_refusal GPUSHARE_MEMORY_LIMIT=-4G 'GPUSHARE_MEMORY_LIMIT="-4G"'
expect_refusal GPUSHARE_MEMORY_LIMIT=0=4G,0=2G 'GPUSHARE_MEMORY_LIMIT="0=4G,0=2G"'
expect_refusal GPUSHARE_MEMORY_LIMIT=1G GPUSHARE_COMPUTE_SHARE=150 'GPUSHARE_COMPUTE_SHARE="150"'
expect_refusal GPUSHARE_MEMORY_LIMIT=1G GPUSHARE_LOG=loud 'GPUSHARE_LOG="loud"'
expect_refusal GPUSHARE_REGION=/nonexistent/lease.region 'GPUSHARE_REGION="/nonexistent/lease.region"'
junk=$(mktemp)
echo "not a region" > "$junk"
expect_refusal GPUSHARE_REGION="$junk" GPUSHARE_MEMORY_LIMIT=1G "GPUSHARE_REGION=\"$junk\""
rm -f "$junk"
# A region recycled for another lease refuses a process of the lease that ended.
regdir=$(mktemp -d)
"$GS_BUILD_DIR/tests/make_region" "$regdir/r" 1G 7
expect_refusal GPUSHARE_REGION="$regdir/r" GPUSHARE_LEASE_ID=6 'GPUSHARE_LEASE_ID="6"'

check_view() { # VAR=VALUE... -- expected output line 2
  local want=${*: -1} out
  out=$(run "${@:1:$#-1}" | sed -n 2p)
  if [[ $out != "$want" ]]; then
    echo "FAIL: ${*:1:$#-1}: got '$out', want '$want'"; failures=$((failures + 1))
  else
    echo "ok: ${*:1:$#-1} -> $out"
  fi
}
# The primary context's own memory (543162368 bytes on an H100-80GB) is the lease's: free is what
# is left of the limit.
check_view GPUSHARE_MEMORY_LIMIT=4G "total=4294967296 free=3751804928"
check_view GPUSHARE_MEMORY_LIMIT=0=1G,1=2G "total=1073741824 free=530579456"
# A limit beyond the device: total never exceeds CUDA's total of an H100-80GB.
check_view GPUSHARE_MEMORY_LIMIT=100G "total=85017493504 free=84474331136"
# The lease's own process joins it.
check_view GPUSHARE_REGION="$regdir/r" GPUSHARE_LEASE_ID=7 "total=1073741824 free=530579456"
rm -rf "$regdir"
# No lease at all: the driver's own figures.
check_view GPUSHARE_LOG=error "total=85017493504 free=84474331136"

# A lease smaller than a context refuses the context: one line, and the program cannot run.
err=$(mktemp)
out=$(run GPUSHARE_MEMORY_LIMIT=256M 2>"$err" || true)
if [[ $out != "cuInit=0" || $(grep -c . "$err") -ne 1 ]] ||
  ! grep -qF "a CUDA context's own memory of 518 MiB on device 0 refused: out of memory in this lease (limit 256 MiB" "$err"; then
  echo "FAIL: GPUSHARE_MEMORY_LIMIT=256M: got '$out' and:"; cat "$err"; failures=$((failures + 1))
else
  echo "ok: GPUSHARE_MEMORY_LIMIT=256M -> $(cat "$err")"
fi
rm -f "$err"
exit $failures
