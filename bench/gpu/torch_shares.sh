#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compute shares with PyTorch on a real GPU: a bf16 matrix-product loop (8192^3, ~1.4 ms each,
# synchronized every 8 products) per lease, through libgpushare.so without gpushared (as
# bench/gpu/run.sh does with its fixed-work kernel). Ground truth: products completed per second
# from 2 to 7 s, against one process alone without the shim (= 100 %).
#
# usage: bench/gpu/torch_shares.sh [BUILD]   (python3 with torch and a CUDA GPU; BUILD defaults to
#        build, with lib/libgpushare.so)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
shim=$build/lib/libgpushare.so
[[ -f $shim ]] || { echo "no $shim: build gpushare first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir "$tmp/sched"
cat >"$tmp/loop.py" <<'PY'
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
start, done, counted = time.monotonic(), 0, None
while True:
    for _ in range(8):
        c = a @ b
    torch.cuda.synchronize()
    now = time.monotonic() - start
    if now >= 2 and counted is None:
        counted, t0 = done, time.monotonic()
    done += 8
    if now >= 7:
        print("rate", (done - counted) / (time.monotonic() - t0))
        break
PY
alone=$(python3 "$tmp/loop.py" | sed -n 's/^rate //p')
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo unknown)"
echo "PyTorch $(python3 -c 'import torch; print(torch.__version__)'); alone, no shim: $alone products/s = 100 %"
lease() { # lease NAME SHARE CAP: one PyTorch process of lease NAME in the background
  env LD_PRELOAD="$shim" GPUSHARE_SCHED_DIR="$tmp/sched" GPUSHARE_LEASE_ID="$1" \
    ${2:+GPUSHARE_COMPUTE_SHARE=$2} ${3:+GPUSHARE_COMPUTE_MAX=$3} python3 "$tmp/loop.py" >"$tmp/$1" &
}
report() { # report NAME TARGET
  awk -v r="$(sed -n 's/^rate //p' "$tmp/$1")" -v a="$alone" -v n="$1" -v t="$2" \
    'BEGIN { printf "    %-4s target %-8s achieved %5.1f %%\n", n, t, 100 * r / a }'
}
echo "-- guarantees 30/70"
lease a 30 ""
lease b 70 ""
wait
report a 30+-3
report b 70+-3
echo "-- guarantee 30 alone"
lease a 30 ""
wait
report a ">=90"
echo "-- cap 30 alone"
lease a "" 30
wait
report a 30+-3
