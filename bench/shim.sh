#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints libgpushare.so's cost on gpusim next to the bare driver (see bench_shim.c for the method).
set -euo pipefail
build=${GS_BUILD_DIR:-build}
build=$(cd "$build" && pwd)
# Regions live on tmpfs, as gpushared keeps them (a region on disk costs page-cache work).
tmp=$(mktemp -d /dev/shm/gs-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export GPUSIM_STATE=$tmp/node GPUSIM_DEVICES=H100-80GB GPUSIM_TIME_SCALE=1000000
export LD_LIBRARY_PATH=$build/sim GS_BENCH_SHIM=$build/lib/libgpushare.so GS_BENCH_DIR=$tmp
# GS_BENCH_SHIM_BEFORE=another build's libgpushare.so: the first context with it too, side by side.
"$build/bench/bench_shim"
