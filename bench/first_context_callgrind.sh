#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions one process spends in its first context (cuInit + cuCtxCreate, bench_shim's
# worker) under callgrind, bare and with libgpushare.so (and GS_BENCH_SHIM_BEFORE, another
# build's, when set), each in a fresh lease region on tmpfs as bench/shim.sh makes it, and with
# libgpushare.so once more in the same region as its first process (a later process of the
# lease); prints the totals and the shim's heaviest inclusive functions. Needs valgrind
# (scripts/deps.sh installs it).
set -euo pipefail
build=${GS_BUILD_DIR:-build}
build=$(cd "$build" && pwd)
command -v valgrind >/dev/null || { echo "first_context_callgrind.sh: needs valgrind" >&2; exit 2; }
tmp=$(mktemp -d /dev/shm/gs-bench-cg-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[[ -z ${GS_CG_KEEP:-} ]] || trap - EXIT
export GPUSIM_STATE=$tmp/node GPUSIM_DEVICES=H100-80GB GPUSIM_TIME_SCALE=1000000
export LD_LIBRARY_PATH=$build/sim
# bench_shim's shared page with its barrier already open (go = 1).
python3 -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("ii",1,0)+bytes(4096))' \
  "$tmp/shared"
run() { # LABEL [SHIM [KEEP]]: KEEP = the region of the run before, else a fresh one
  local label=$1 shim=${2:-} out=$tmp/cg.$1
  [[ -n ${3:-} ]] || { rm -f "$tmp/lease.region" &&
    "$build/tests/make_region" "$tmp/lease.region" 64G cg >/dev/null; }
  if [[ -n $shim ]]; then
    LD_PRELOAD=$shim GPUSHARE_REGION=$tmp/lease.region GPUSHARE_MEMORY_LIMIT=64G \
      valgrind --tool=callgrind --callgrind-out-file="$out" "$build/bench/bench_shim" \
      --worker ctx "$tmp/shared" 0 >/dev/null 2>&1
  else
    valgrind --tool=callgrind --callgrind-out-file="$out" "$build/bench/bench_shim" --worker ctx \
      "$tmp/shared" 0 >/dev/null 2>&1
  fi
  printf '%-7s %12s instructions (whole process)\n' "$label" \
    "$(callgrind_annotate "$out" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p')"
  [[ -z $shim ]] || callgrind_annotate --inclusive=yes "$out" 2>/dev/null |
    grep -E '(cuCtxCreate|cuInit|gs__footprint|gs__nvml|load_nvml).*\[' | sed 's/^/    /' || true
}
run bare
[[ -z ${GS_BENCH_SHIM_BEFORE:-} ]] || run before "$GS_BENCH_SHIM_BEFORE"
run shim "$build/lib/libgpushare.so"
run later "$build/lib/libgpushare.so" keep
