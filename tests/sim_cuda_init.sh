#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cuInit and the node configuration: a bad GPUSIM_DEVICES fails cuInit with CUDA_ERROR_NO_DEVICE
# and one line on stderr; CUDA_VISIBLE_DEVICES selects devices (none visible: NO_DEVICE); a child
# forked after cuInit cannot use CUDA (CUDA_ERROR_NOT_INITIALIZED), as with NVIDIA's driver.
# Run by sim_cuda_run.sh (private GPUSIM_STATE, LD_LIBRARY_PATH=build/sim).
set -euo pipefail
prog="${GSIM_CUDA_PROGS:?}/init_result"
fail() { echo "sim_cuda_init: $*" >&2; exit 1; }
err=$(mktemp /tmp/gs-sim_cuda_init.XXXXXX)
trap 'rm -f "$err"' EXIT

expect() { # expect "<stdout>" [env assignments...]
  local want=$1; shift
  local got
  got=$(env "$@" "$prog" 2>"$err")
  [[ "$got" == "$want" ]] || fail "with $*: got \"$got\", expected \"$want\""
}

expect "CUDA_SUCCESS 4" GPUSIM_DEVICES="A100-40GB*2,H100-80GB,L4-24GB"
rm -f "$GPUSIM_STATE/node"
expect "CUDA_ERROR_NO_DEVICE -1" GPUSIM_DEVICES="H100"
[[ $(wc -l < "$err") == 1 ]] || fail "a bad GPUSIM_DEVICES printed $(wc -l < "$err") lines"
grep -q 'unknown GPU model "H100"' "$err" || fail "stderr does not name the bad model: $(cat "$err")"
expect "CUDA_ERROR_NO_DEVICE -1" GPUSIM_DEVICES="H100-80GB*99"
expect "CUDA_SUCCESS 1" GPUSIM_DEVICES="H100-80GB*2" CUDA_VISIBLE_DEVICES=1
expect "CUDA_SUCCESS 2" GPUSIM_DEVICES="H100-80GB*2" CUDA_VISIBLE_DEVICES=1,0,7
expect "CUDA_ERROR_NO_DEVICE -1" GPUSIM_DEVICES="H100-80GB*2" CUDA_VISIBLE_DEVICES=
expect "CUDA_ERROR_NO_DEVICE -1" GPUSIM_DEVICES="H100-80GB*2" CUDA_VISIBLE_DEVICES=5
[[ ! -s "$err" ]] || fail "unexpected stderr: $(cat "$err")"
out=$(GPUSIM_DEVICES="H100-80GB*2" "$prog" fork)
[[ "$out" == $'CUDA_SUCCESS 2\nchild CUDA_ERROR_NOT_INITIALIZED CUDA_ERROR_NOT_INITIALIZED' ]] ||
  fail "fork: got \"$out\""
