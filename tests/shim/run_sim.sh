#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a program on a fresh simulated node (its own GPUSIM_STATE), optionally under the shim.
# usage: run_sim.sh [--shim] [VAR=VALUE ...] -- PROGRAM [ARGS ...]
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
  # The node's GPU schedulers (compute shares) live with the node, never in /dev/shm: gpusim
  # GPUs of different nodes have the same UUIDs.
  mkdir -p "$tmp/sched"
  export GPUSHARE_SCHED_DIR=$tmp/sched
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
