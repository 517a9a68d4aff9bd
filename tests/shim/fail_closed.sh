#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A bad lease configuration fails closed: cuInit returns CUDA_ERROR_INVALID_VALUE (1) with one
# log line naming the variable and value; the application never runs unlimited by mistake.
# A good one shows the slice, capped at the device's real size. A compute share that cannot be
# enforced fails closed the same way, with CUDA_ERROR_NOT_SUPPORTED (801).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
probe=$GS_BUILD_DIR/tests/init_probe
run() { bash "$here/run_sim.sh" --shim "$@" -- "$probe"; }
failures=0

expect_refusal() { # VAR=VALUE... -- expected text in the one log line (cuInit=$code, default 1)
  local want=${*: -1}
  local out err
  err=$(mktemp /tmp/gs-fail_closed.XXXXXX)
  out=$(run "${@:1:$#-1}" 2>"$err")
  if [[ $out != "cuInit=${code:-1}" ]]; then
    echo "FAIL: ${*:1:$#-1}: got '$out', want cuInit=${code:-1}"; failures=$((failures + 1))
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
expect_refusal GPUSHARE_COMPUTE_MAX=lots 'GPUSHARE_COMPUTE_MAX="lots"'
expect_refusal GPUSHARE_COMPUTE_SHARE=50 GPUSHARE_COMPUTE_MAX=30 'GPUSHARE_COMPUTE_MAX="30" is invalid: below'
# Compute shares are gpushared's: a share or cap without a lease of it cannot be enforced.
code=801 expect_refusal GPUSHARE_COMPUTE_SHARE=30 \
  "cannot be enforced on this node: compute shares are gpushared's: run the job with gpushare run"
code=801 expect_refusal GPUSHARE_COMPUTE_MAX=30 GPUSHARE_MEMORY_LIMIT=1G \
  "cannot be enforced on this node"
code=801 expect_refusal GPUSHARE_COMPUTE_MAX=30 GPUSHARE_GATE=mps \
  'cannot be enforced on an MPS GPU: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is not set'
code=801 expect_refusal GPUSHARE_COMPUTE_SHARE=30 GPUSHARE_GATE=mps CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 \
  'this process is not served by the MPS daemon'
# On an MPS GPU the share is MPS's active thread percentage: a client runs.
shares=$(mktemp -d /tmp/gs-fail_closed.XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=$shares/pipe CUDA_MPS_LOG_DIRECTORY=$shares/log
"$GS_BUILD_DIR/sim/nvidia-cuda-mps-control" -d
out=$(run GPUSHARE_COMPUTE_SHARE=30 GPUSHARE_GATE=mps CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 | head -1)
echo quit | "$GS_BUILD_DIR/sim/nvidia-cuda-mps-control" >/dev/null
if [[ $out == "cuInit=0" ]]; then
  echo "ok: GPUSHARE_GATE=mps with an MPS client at 30 % -> $out"
else
  echo "FAIL: GPUSHARE_GATE=mps client: got '$out'"
  failures=$((failures + 1))
fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
rm -rf "$shares"
expect_refusal GPUSHARE_REGION=/nonexistent/lease.region 'GPUSHARE_REGION="/nonexistent/lease.region"'
junk=$(mktemp /tmp/gs-fail_closed.XXXXXX)
echo "not a region" > "$junk"
expect_refusal GPUSHARE_REGION="$junk" GPUSHARE_MEMORY_LIMIT=1G "GPUSHARE_REGION=\"$junk\""
rm -f "$junk"
# A region recycled for another lease refuses a process of the lease that ended.
regdir=$(mktemp -d /tmp/gs-fail_closed.XXXXXX)
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
err=$(mktemp /tmp/gs-fail_closed.XXXXXX)
out=$(run GPUSHARE_MEMORY_LIMIT=256M 2>"$err" || true)
if [[ $out != "cuInit=0" || $(grep -c . "$err") -ne 1 ]] ||
  ! grep -qF "a CUDA context's own memory of 518 MiB on device 0 refused: out of memory in this lease (limit 256 MiB" "$err"; then
  echo "FAIL: GPUSHARE_MEMORY_LIMIT=256M: got '$out' and:"; cat "$err"; failures=$((failures + 1))
else
  echo "ok: GPUSHARE_MEMORY_LIMIT=256M -> $(cat "$err")"
fi
rm -f "$err"
exit $failures
