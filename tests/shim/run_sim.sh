#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a program on a fresh simulated node (its own GPUSIM_STATE), optionally under the shim.
# usage: run_sim.sh [--shim | --daemon] [VAR=VALUE ...] -- PROGRAM [ARGS ...]
# --shim preloads the shim into PROGRAM; --daemon leaves preloading to gpushare run (PROGRAM
# starts gpushared and jobs itself), with GS_JOB_PRELOAD what jobs need first.
# In sanitizer builds the sanitizer runtime is preloaded ahead of the (instrumented) shim.
set -euo pipefail
build=${GS_BUILD_DIR:?GS_BUILD_DIR must name the build directory}
tmp=$(mktemp -d /tmp/gs-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export GS_TEST_TMP=$tmp
export GPUSIM_STATE=$tmp/node
export GPUSIM_DEVICES=${GPUSIM_DEVICES:-H100-80GB}
shim=""
if [[ ${1:-} == --shim ]]; then
  shim=$build/lib/libgpushare.so
  shift
elif [[ ${1:-} == --daemon ]]; then
  shift
  export GS_JOB_PRELOAD=
  if [[ -n ${GS_SANITIZE:-} ]]; then
    export GS_JOB_PRELOAD=$(gcc -print-file-name=libasan.so)
    export ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0
  fi
fi
while [[ $# -gt 0 && $1 != -- ]]; do
  export "${1?}"
  shift
done
shift
export LD_LIBRARY_PATH=$build/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [[ -n $shim ]]; then
  if [[ -n ${GS_SANITIZE:-} ]]; then
    shim="$(gcc -print-file-name=libasan.so):$shim"
  fi
  export GS_SHIM_PRELOAD=$shim
  export LD_PRELOAD=$shim
fi
"$@"
