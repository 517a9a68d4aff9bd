#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libcuda.so.1 exports exactly the functions of sim/cuda/exports.h (the table cuGetProcAddress
# serves), every one of them a name NVIDIA's own libcuda exports (the stub lists them), and
# nothing else: the library is built with hidden visibility.
set -euo pipefail
lib="${GS_BUILD_DIR:?}/sim/libcuda.so.1"
stub="$(dirname "${CUDA_INCLUDE_DIR:?}")/lib64/stubs/libcuda.so"
table="${GS_SOURCE_DIR:?}/sim/cuda/exports.h"
fail() { echo "sim_cuda_exports: $*" >&2; exit 1; }

[[ "$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" == libcuda.so.1 ]] ||
  fail "SONAME is not libcuda.so.1"
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWi]$/ {print $3}' | sort)
listed=$(sed -n "s/^GSIM_CU_EXPORT([A-Za-z0-9_]*, \([A-Za-z0-9_]*\),.*/\1/p" "$table" | sort)
nvidia=$(nm -D --defined-only "$stub" | awk '{print $3}' | sort)

extra=$(comm -23 <(echo "$exported") <(echo "$listed"))
[[ -z "$extra" ]] || fail "exported but not in exports.h: $(echo $extra)"
missing=$(comm -13 <(echo "$exported") <(echo "$listed"))
[[ -z "$missing" ]] || fail "in exports.h but not exported: $(echo $missing)"
unknown=$(comm -23 <(echo "$listed") <(echo "$nvidia"))
[[ -z "$unknown" ]] || fail "not a name NVIDIA's libcuda exports: $(echo $unknown)"
[[ $(echo "$listed" | wc -l) -ge 300 ]] || fail "only $(echo "$listed" | wc -l) functions"
