#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libcuda.so.1 exports exactly the functions of sim/cuda/exports.h (the table cuGetProcAddress
# serves), every one of them a name NVIDIA's own libcuda exports, and nothing else: the library is
# built with hidden visibility. NVIDIA's names come from the toolkit's stub libcuda.so where there
# is a toolkit, else from the functions NVIDIA's cuda.h and cudaProfiler.h declare with every version of every name
# visible (__CUDA_API_VERSION_INTERNAL: the legacy, _v2 and per-thread names the driver exports).
set -euo pipefail
lib="${GS_BUILD_DIR:?}/sim/libcuda.so.1"
stub="$(dirname "${CUDA_INCLUDE_DIR:?}")/lib64/stubs/libcuda.so"
table="${GS_SOURCE_DIR:?}/sim/cuda/exports.h"
fail() { echo "sim_cuda_exports: $*" >&2; exit 1; }

[[ "$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" == libcuda.so.1 ]] ||
  fail "SONAME is not libcuda.so.1"
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWi]$/ {print $3}' | sort)
listed=$(sed -n "s/^GSIM_CU_EXPORT([A-Za-z0-9_]*, \([A-Za-z0-9_]*\),.*/\1/p" "$table" | sort)
if [[ -f $stub ]]; then
  nvidia=$(nm -D --defined-only "$stub" | awk '{print $3}' | sort)
else
  nvidia=$(printf '#include <cuda.h>\n#include <cudaProfiler.h>\n' | cc -E -P -D__CUDA_API_VERSION_INTERNAL -I"$CUDA_INCLUDE_DIR" -x c - |
    tr -s ' \n' ' ' | grep -oE '\b(CUresult|void|int|unsigned int|size_t)[ *]+cu[A-Za-z0-9_]+ ?\(' |
    grep -oE 'cu[A-Za-z0-9_]+ ?\($' | tr -d ' (' | sort -u)
  [[ $(echo "$nvidia" | wc -l) -ge 500 ]] || fail "cuda.h declares only $(echo "$nvidia" | wc -l) functions"
fi

extra=$(comm -23 <(echo "$exported") <(echo "$listed"))
[[ -z "$extra" ]] || fail "exported but not in exports.h: $(echo $extra)"
missing=$(comm -13 <(echo "$exported") <(echo "$listed"))
[[ -z "$missing" ]] || fail "in exports.h but not exported: $(echo $missing)"
unknown=$(comm -23 <(echo "$listed") <(echo "$nvidia"))
[[ -z "$unknown" ]] || fail "not a name NVIDIA's libcuda exports: $(echo $unknown)"
[[ $(echo "$listed" | wc -l) -ge 300 ]] || fail "only $(echo "$listed" | wc -l) functions"
