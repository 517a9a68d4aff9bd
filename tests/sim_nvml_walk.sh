#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A third-party NVML tool (nvml_walk.c: dlopen("libnvidia-ml.so.1"), the common calls by their
# exported names, v1 process list included) runs on gpusim without crashing while a CUDA process
# holds 3 GiB: its v1 and v2 lists show that process with exactly 3 GiB and its context
# (543162368 bytes on an H100-80GB), under its pid and name. Before issue 20 the v1 call was not
# exported and such a tool died at its first lookup.
# Run by sim_cuda_run.sh (private GPUSIM_STATE, LD_LIBRARY_PATH=build/sim).
set -euo pipefail
progs="${GSIM_CUDA_PROGS:?}"
walk="${GS_BUILD_DIR:?}/tests/nvml_walk"
fail() { echo "sim_nvml_walk: $*" >&2; exit 1; }

fifo=$(mktemp -u "${TMPDIR:-/tmp}/gpusim-walk.XXXXXX")
mkfifo "$fifo"
"$progs/memhold" 3 > "$fifo" &
holder=$!
trap 'kill -9 $holder 2>/dev/null || true; rm -f "$fifo"' EXIT
read -r word _ < "$fifo" || fail "the holder did not report"
[[ "$word" == held ]] || fail "holder said: $word"

out=$("$walk") || fail "the tool failed (status $?): $out"
bytes=$(((3 << 30) + 543162368))
grep -qx "v1 $holder $bytes memhold" <<<"$out" || fail "no v1 record 'v1 $holder $bytes memhold' in: $(grep '^v' <<<"$out")"
grep -qx "v2 $holder $bytes ffffffff ffffffff" <<<"$out" || fail "no v2 record for $holder in: $(grep '^v' <<<"$out")"
[[ $(grep -c '^v1 ' <<<"$out") == 1 ]] || fail "v1 list: $(grep '^v1' <<<"$out")"
grep -q '^missing' <<<"$out" && fail "$(grep '^missing' <<<"$out")"
grep -qx "call nvmlDeviceGetPowerUsage 3" <<<"$out" || fail "power usage is not NOT_SUPPORTED (3)"
grep -qx "call nvmlUnitGetCount 0" <<<"$out" || fail "nvmlUnitGetCount did not succeed"
grep -qx "call nvmlDeviceGetCudaComputeCapability 0" <<<"$out" || fail "no compute capability"
calls=$(sed -n 's/^walked \([0-9]*\) calls$/\1/p' <<<"$out")
[[ "$calls" == 43 ]] || fail "walked $calls calls, expected 43"
echo "sim_nvml_walk: ok ($calls calls, v1 record $holder $bytes)"
