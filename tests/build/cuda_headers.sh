#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/cuda.sh, where the build's CUDA headers come from (issue 33):
#   - a toolkit at CUDA_HOME is used and nothing is fetched (pip is never run), by the script and
#     by CMake's configure;
#   - without one, NVIDIA's wheels are fetched into the cache (here from a local pip index made of
#     the wheels a fetch keeps, or PyPI where this machine has none), then reused;
#   - a wrong or unreachable source (CUDA_HOME without cuda.h, CUDA 12 headers, no index, a wheel
#     whose hash is not the pinned one) gives one line naming CUDA_HOME, exit 1, and leaves
#     nothing in the cache.
set -euo pipefail
: "${GS_SOURCE_DIR:?run through ctest}" "${GS_BUILD_DIR:?run through ctest}"
source "$(dirname "$0")/../cli_expect.sh" # fail, expect_eq; failures counted in $failures
cuda=$GS_SOURCE_DIR/scripts/cuda.sh
tmp=$(mktemp -d /tmp/gs-cuda-headers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

headers=$(CUDA_HOME='' "$cuda" --quiet) || { echo "FAIL: scripts/cuda.sh finds no headers" >&2; exit 1; }
# A python3 that records that it ran and fails: pip must not run when a toolkit is there.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\ntouch %s/pip-ran\nexit 1\n' "$tmp" >"$tmp/bin/python3"
chmod +x "$tmp/bin/python3"

# run OUT ERR [ENV...]: scripts/cuda.sh with the environment given; its exit status in $rc.
run() {
  local out=$1 err=$2
  shift 2
  rc=0
  env "$@" bash "$cuda" >"$out" 2>"$err" || rc=$?
}
# one_line FILE WHAT: FILE holds exactly one line, and it names CUDA_HOME.
one_line() {
  expect_eq "$(wc -l <"$1")" 1 "$2: lines on stderr"
  grep -q 'CUDA_HOME' "$1" || fail "$2: the line does not say how to provide the headers: $(cat "$1")"
}
# nothing_cached DIR WHAT: the cache holds no headers and no half-written fetch.
nothing_cached() {
  local left
  left=$(find "$1" -mindepth 1 -maxdepth 1 \( -name 'cuda-*' -o -name '.cuda-fetch.*' \) 2>/dev/null)
  [[ -z $left ]] || fail "$2: left in the cache: $left"
}

# 1. A toolkit at CUDA_HOME: used as it is, nothing fetched.
mkdir -p "$tmp/toolkit/include" "$tmp/cache1"
cp -r "$headers/include/." "$tmp/toolkit/include/"
run "$tmp/out" "$tmp/err" CUDA_HOME="$tmp/toolkit" GS_CACHE_DIR="$tmp/cache1" PATH="$tmp/bin:$PATH"
expect_eq "$rc" 0 "CUDA_HOME: exit"
expect_eq "$(cat "$tmp/out")" "$tmp/toolkit" "CUDA_HOME: the directory"
grep -q 'from CUDA_HOME' "$tmp/err" || fail "CUDA_HOME: the line does not say so: $(cat "$tmp/err")"
[[ ! -e $tmp/pip-ran ]] || fail "CUDA_HOME: pip ran although a toolkit was given"
nothing_cached "$tmp/cache1" "CUDA_HOME"
# CMake's configure takes the same (the sources' configure, stopped before any build).
CUDA_HOME="$tmp/toolkit" GS_CACHE_DIR="$tmp/cache1" PATH="$tmp/bin:$PATH" \
  cmake -S "$GS_SOURCE_DIR" -B "$tmp/configure" -DGS_TESTS=OFF >"$tmp/cmake.out" 2>&1 ||
  fail "configure with CUDA_HOME failed: $(tail -5 "$tmp/cmake.out")"
grep -q "CUDA 13.0 headers from CUDA_HOME ($tmp/toolkit/include)" "$tmp/cmake.out" ||
  fail "configure does not say it took CUDA_HOME: $(grep cuda: "$tmp/cmake.out")"
grep -q "^CUDA_INCLUDE_DIR" "$tmp/configure/CMakeCache.txt" || fail "no CUDA_INCLUDE_DIR in the cache"
[[ ! -e $tmp/pip-ran ]] || fail "configure with CUDA_HOME ran pip"
nothing_cached "$tmp/cache1" "configure with CUDA_HOME"
echo "ok: CUDA_HOME is used as it is; nothing fetched, by the script and by CMake"

# 2. Wrong sources: one line, exit 1, nothing cached.
run "$tmp/out" "$tmp/err" CUDA_HOME="$tmp/nonexistent" GS_CACHE_DIR="$tmp/cache1"
expect_eq "$rc" 1 "CUDA_HOME without cuda.h: exit"
one_line "$tmp/err" "CUDA_HOME without cuda.h"
mkdir -p "$tmp/cuda12/include"
sed 's/^#define CUDA_VERSION [0-9]*/#define CUDA_VERSION 12080/' "$headers/include/cuda.h" >"$tmp/cuda12/include/cuda.h"
run "$tmp/out" "$tmp/err" CUDA_HOME="$tmp/cuda12" GS_CACHE_DIR="$tmp/cache1"
expect_eq "$rc" 1 "CUDA 12 headers: exit"
one_line "$tmp/err" "CUDA 12 headers"
grep -q 'is CUDA 12.8; gpushare needs CUDA 13' "$tmp/err" || fail "CUDA 12: $(cat "$tmp/err")"
echo "ok: CUDA_HOME without cuda.h, and CUDA 12 headers: one line, exit 1"

# 3. The build's CUDA programs need libcuda.so.1 and carry no path to it (gpusim's or NVIDIA's
#    is the one LD_LIBRARY_PATH or the system gives them).
for prog in tests/gs-gpu-hog tests/gs-demo-job tests/cuda_progs/meminfo bench/bench_shim; do
  dyn=$(readelf -d "$GS_BUILD_DIR/$prog" 2>/dev/null) || { fail "$prog was not built"; continue; }
  grep -q 'NEEDED.*\[libcuda.so.1\]' <<<"$dyn" || fail "$prog does not need libcuda.so.1"
  ! grep -qE 'RPATH|RUNPATH' <<<"$dyn" || fail "$prog carries a library path: $(grep -E 'RPATH|RUNPATH' <<<"$dyn")"
done
echo "ok: the CUDA programs need libcuda.so.1 and carry no path to one"

# The fetch paths run where no toolkit is installed (else the installed one is taken first).
for dir in /usr/local/cuda /usr/lib/cuda /usr; do
  if [[ -f $dir/include/cuda.h ]]; then
    echo "ok: fetching not tried: $dir holds a toolkit, which is taken before any fetch"
    exit $((failures > 0))
  fi
done
wheels=${GS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpushare}/wheels
offline=()
if compgen -G "$wheels/nvidia_cuda_runtime-*.whl" >/dev/null &&
  compgen -G "$wheels/nvidia_cuda_profiler_api-*.whl" >/dev/null; then
  offline=(PIP_NO_INDEX=1 PIP_FIND_LINKS="$wheels")
fi

# 4. Unreachable: an index with nothing in it.
mkdir -p "$tmp/empty" "$tmp/cache2"
run "$tmp/out" "$tmp/err" CUDA_HOME= GS_CACHE_DIR="$tmp/cache2" PIP_NO_INDEX=1 PIP_FIND_LINKS="$tmp/empty"
expect_eq "$rc" 1 "no index: exit"
grep -v '^cuda: fetching' "$tmp/err" >"$tmp/err1" || true
one_line "$tmp/err1" "no index"
grep -q 'could not fetch nvidia-cuda-runtime==13.0.96' "$tmp/err1" || fail "no index: $(cat "$tmp/err1")"
nothing_cached "$tmp/cache2" "no index"

# 5. A wheel that is not NVIDIA's (the right name and version, another hash): refused.
mkdir -p "$tmp/forged"
python3 - "$tmp/forged" <<'EOF'
import sys, zipfile
name = "nvidia_cuda_runtime-13.0.96"
path = sys.argv[1] + "/" + name + "-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
with zipfile.ZipFile(path, "w") as z:
    z.writestr("nvidia/cu13/include/cuda.h", "#define CUDA_VERSION 13000\n")
    z.writestr(name + ".dist-info/METADATA", "Metadata-Version: 2.1\nName: nvidia-cuda-runtime\nVersion: 13.0.96\n")
    z.writestr(name + ".dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-manylinux2014_x86_64\n")
    z.writestr(name + ".dist-info/RECORD", "")
EOF
run "$tmp/out" "$tmp/err" CUDA_HOME= GS_CACHE_DIR="$tmp/cache2" PIP_NO_INDEX=1 PIP_FIND_LINKS="$tmp/forged"
expect_eq "$rc" 1 "a forged wheel: exit"
grep -v '^cuda: fetching' "$tmp/err" >"$tmp/err1" || true
one_line "$tmp/err1" "a forged wheel"
grep -q 'not the pinned' "$tmp/err1" || fail "a forged wheel: $(cat "$tmp/err1")"
nothing_cached "$tmp/cache2" "a forged wheel"
echo "ok: no index, and a wheel whose hash is not NVIDIA's: one line, exit 1, nothing cached"

# 6. NVIDIA's wheels: fetched into the cache (one line each way), then reused without pip.
run "$tmp/out" "$tmp/err" CUDA_HOME= GS_CACHE_DIR="$tmp/cache3" "${offline[@]}"
expect_eq "$rc" 0 "fetch: exit"
expect_eq "$(cat "$tmp/out")" "$tmp/cache3/cuda-13.0.96" "fetch: the directory"
grep -q "wheels, fetched" "$tmp/err" || fail "fetch: $(cat "$tmp/err")"
for header in cuda.h cudaTypedefs.h cudaProfiler.h; do
  [[ -f $tmp/cache3/cuda-13.0.96/include/$header ]] || fail "fetch: no $header"
done
expect_eq "$(wc -l <"$tmp/cache3/cuda-13.0.96/SOURCE")" 2 "fetch: the wheels it came from"
nothing_left=$(find "$tmp/cache3" -maxdepth 1 -name '.cuda-fetch.*')
[[ -z $nothing_left ]] || fail "fetch: left $nothing_left"
run "$tmp/out" "$tmp/err" CUDA_HOME= GS_CACHE_DIR="$tmp/cache3" PATH="$tmp/bin:$PATH"
expect_eq "$rc" 0 "cached: exit"
grep -q "wheels, cached" "$tmp/err" || fail "cached: $(cat "$tmp/err")"
[[ ! -e $tmp/pip-ran ]] || fail "cached: pip ran again"
echo "ok: NVIDIA's wheels fetched into the cache ($([[ ${#offline[@]} -gt 0 ]] && echo "from the wheels kept in $wheels" || echo "from PyPI")), then reused without pip"
[[ $failures -eq 0 ]]
