# SPDX-License-Identifier: Apache-2.0
# Compute shares end to end: gpushared runs the GPU's scheduler and jobs take part over their own
# channel (compute_join); --compute 30 beside --gpu 0.7 split the GPU's time 30:70 (compute_worker, 4 ms kernels:
# its throughput, whose host gaps the ground-truth tests compute_* leave out, so here the split
# and a lower bound); a GPU never promises more than 100 % of guarantees; --compute-max caps a
# lease alone; status and metrics show the shares and the device time each lease was granted.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
WORKER=$GS_BUILD_DIR/tests/compute_worker
CONFIG=$'[daemon]\nmetrics_users = all' # the per-lease series
start_daemon_metrics

# percent RATE: the share of the GPU a rate of 4 ms kernels keeps busy (250/s = 100 %).
percent() {
  awk -v r="$1" 'BEGIN { printf "%.1f", r * 0.4 }'
}

# within NAME VALUE TARGET TOLERANCE
within() {
  awk -v v="$2" -v t="$3" -v d="$4" 'BEGIN { exit !(v >= t - d && v <= t + d) }' ||
    fail "$1: $2 %, expected $3 +- $4"
  echo "ok: $1: $2 % (target $3 +- $4)"
}

# The job's environment has its share, and no path to any scheduler: there is none a job can
# open (gpushared holds the schedulers' state in its own memory).
env_out=$(gs run --gpu-memory 1G --compute 20 -- env)
grep -q '^GPUSHARE_COMPUTE_SHARE=20$' <<<"$env_out" || fail "no GPUSHARE_COMPUTE_SHARE=20"
if grep -q '^GPUSHARE_SCHED_DIR=' <<<"$env_out"; then fail "a job was given GPUSHARE_SCHED_DIR"; fi
[[ -z $(find "$WORK/state" /dev/shm -name 'gpushare-sched-*' 2>/dev/null) ]] ||
  fail "a scheduler file exists: $(find "$WORK/state" /dev/shm -name 'gpushare-sched-*')"
pass "jobs get their share; no scheduler file exists anywhere"

# 30 and 70 (--gpu 0.7 is a guarantee of 70 %): both saturating, measured over 3 s.
bg_gs run --gpu-memory 4G --compute 30 -- "$WORKER" --measure 1.5,3 >"$WORK/a" 2>&1
a=$!
bg_gs run --gpu 0.7 -- "$WORKER" --measure 1.5,3 >"$WORK/b" 2>&1
b=$!
wait_eq 10 2 lease_count
# The GPU has promised 100 %: another guarantee waits (here: refused at once, --no-wait).
set +e
gs run --no-wait --gpu-memory 1G --compute 10 -- true 2>/dev/null
rc=$?
set -e
expect_eq "$rc" 75 "exit status of a guarantee beyond 100 %"
sleep 2
json=$(gs status --json)
share=$(jq '[.gpus[0].leases[].compute_share] | sort | join(",")' <<<"$json")
expect_eq "$share" '"30,70"' "compute shares in status"
used=$(jq '[.gpus[0].leases[].compute_used_ms] | min' <<<"$json")
[[ $used -gt 0 ]] || fail "no compute time granted in status: $json"
curl -fsS "http://$METRICS_LISTEN/metrics" >"$WORK/metrics.txt"
grep -q '^gpushare_lease_compute_seconds_total{.*} [0-9.]*$' "$WORK/metrics.txt" ||
  fail "no gpushare_lease_compute_seconds_total"
grep -q '^gpushare_lease_compute_max{' "$WORK/metrics.txt" || fail "no gpushare_lease_compute_max"
wait "$a" || fail "the 30 % job failed: $(cat "$WORK/a")"
wait "$b" || fail "the 70 % job failed: $(cat "$WORK/b")"
ra=$(percent "$(sed -n 's/^rate //p' "$WORK/a")")
rb=$(percent "$(sed -n 's/^rate //p' "$WORK/b")")
within "--compute 30, part of the two" "$(awk -v a="$ra" -v b="$rb" 'BEGIN { printf "%.1f", 100 * a / (a + b) }')" 30 3
within "both, of the GPU" "$(awk -v a="$ra" -v b="$rb" 'BEGIN { print a + b }')" 92 8
pass "guarantees of 30 and 70 % hold; status and metrics show them; a GPU promises at most 100 %"

# A cap alone: never more than 30 %, although the GPU is otherwise idle.
out=$(gs run --gpu-memory 4G --compute-max 30 -- "$WORKER" --measure 1,3)
grep -q '^GPUSHARE_COMPUTE_MAX=30$' < <(gs run --gpu-memory 1G --compute-max 30 -- env) ||
  fail "no GPUSHARE_COMPUTE_MAX"
within "--compute-max 30 alone" "$(percent "$(sed -n 's/^rate //p' <<<"$out")")" 29 4
pass "--compute-max 30 caps a lease alone"
