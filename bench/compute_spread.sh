#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The spread of every compute figure: runs the compute ctests (label `compute`, gpusim's device
# time as ground truth) RUNS times in a row and prints, per test and check, the bound, the
# minimum, median and maximum achieved, how close the worst run came to the bound, and how many
# runs failed it. With BESIDE=1 the whole `make test` suite (every label but compute) runs beside
# them in a loop, on the same cores: the busy 2-core host of a CI machine.
# usage: RUNS=20 [BESIDE=1] [FILTER=regex] bench/compute_spread.sh
set -euo pipefail
build=${GS_BUILD_DIR:-build}
build=$(cd "$build" && pwd)
runs=${RUNS:-3}
filter=${FILTER:-.}
log=$(mktemp /tmp/gs-spread-XXXXXX)
loadpid=""
cleanup() {
  if [[ -n $loadpid ]]; then
    kill -- -"$loadpid" 2>/dev/null || true
    wait "$loadpid" 2>/dev/null || true
  fi
  rm -f "$log"
}
trap cleanup EXIT

if [[ ${BESIDE:-0} == 1 ]]; then
  # Its own process group, so that the whole loop (ctest and its tests) stops with it.
  setsid bash -c "while :; do ctest --test-dir '$build' -LE compute -j2 --timeout 600 \
    >/dev/null 2>&1; done" &
  loadpid=$!
fi

start=$(date +%s)
for ((r = 1; r <= runs; r++)); do
  # -V prints every test's output prefixed by its number; the number is mapped to its name.
  ctest --test-dir "$build" -L compute -R "$filter" -V --timeout 120 2>&1 |
    awk -v run="$r" '
      /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
        split($0, p, "#"); split(p[2], q, ":"); name[q[1]] = $4
      }
      /^[0-9]+: \[/ && ($NF == "ok" || $NF == "FAIL") {
        n = $1; sub(":", "", n); num[++k] = n; rows[k] = $0
      }
      END { for (i = 1; i <= k; i++) print run, name[num[i]], rows[i] }
    ' >>"$log" || true # failed checks are counted below
  echo "run $r of $runs done ($(($(date +%s) - start)) s)" >&2
done

# Per test and check: bound, min / median / max, margin of the worst run to its bound, failures.
awk '
  {
    test = $2; check = $4
    # Fields from the end: result, unit, achieved; the target is what lies between.
    result = $NF; value = $(NF - 2) + 0
    target = ""
    for (i = 5; i <= NF - 3; i++) target = target (target == "" ? "" : " ") $i
    key = test " " check
    if (!(key in seen)) { order[++n] = key; tgt[key] = target }
    seen[key]++
    vals[key, seen[key]] = value
    fails[key] += result == "FAIL"
  }
  function sort(key, m,    i, j, t) {
    for (i = 1; i <= m; i++) s[i] = vals[key, i]
    for (i = 2; i <= m; i++) { t = s[i]; for (j = i - 1; j >= 1 && s[j] > t; j--) s[j + 1] = s[j]; s[j + 1] = t }
  }
  function margin(key, lo, hi,    t, x, pm) {
    t = tgt[key]
    if (t ~ /\+-/) { split(t, a, " "); x = a[1] + 0; pm = a[3] + 0
      return (lo - (x - pm) < (x + pm) - hi) ? lo - (x - pm) : (x + pm) - hi }
    if (t ~ /^>=/) { split(t, a, " "); return lo - a[2] }
    if (t ~ /^<=/) { split(t, a, " "); return a[2] - hi }
    return 0
  }
  END {
    printf "%-26s %-22s %-13s %7s %7s %7s %7s %s\n", "test", "check", "target", "min", "median",
      "max", "margin", "failed"
    for (k = 1; k <= n; k++) {
      key = order[k]; m = seen[key]; sort(key, m)
      med = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
      split(key, kk, " ")
      printf "%-26s %-22s %-13s %7.1f %7.1f %7.1f %7.1f %d/%d\n", kk[1], kk[2], tgt[key], s[1],
        med, s[m], margin(key, s[1], s[m]), fails[key], m
    }
  }
' "$log"
echo "($runs runs in $(($(date +%s) - start)) s; margin: the worst run's distance to its bound," \
  "in the figure's unit)"
