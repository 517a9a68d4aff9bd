#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The compute scheduler's hand-over, side by side: gpushared's scheduler (the decisions in the
# daemon, members on channels; bench_handover) and gpushare 0.1's shared segment (every member
# wrote the decisions; handover_old, built from that release's src/region/sched*.c in git
# history). Each: two member threads of two leases pass the GPU back and forth 4000 times; the
# time from a yield to the next holder knowing it holds the GPU, median and 99th percentile, three
# runs each, alternating.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
build=$(cd "$build" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

old=""
# The last release of the shared-segment scheduler: the parent of the commit that removed it.
rev=$(git -C "$repo" log --format=%H -S shmget -- src/region/sched.c 2>/dev/null | head -1 || true)
if [[ -n $rev ]]; then
  mkdir -p "$tmp/old/include/gpushare" "$tmp/old/src"
  for f in include/gpushare/sched.h src/region/sched.c src/region/sched_policy.c \
    src/region/sched_internal.h; do
    git -C "$repo" show "$rev^:$f" >"$tmp/old/${f#src/region/}" 2>/dev/null || rev=""
  done
  if [[ -n $rev ]] && gcc -O2 -std=c11 -D_GNU_SOURCE -I"$tmp/old/include" -I"$tmp/old" \
    -I"$repo/include" -o "$tmp/handover_old" "$repo/bench/handover_old.c" "$tmp/old/sched.c" \
    "$tmp/old/sched_policy.c" -lpthread 2>"$tmp/cc.log"; then
    old=$tmp/handover_old
  fi
fi

echo "== compute scheduler hand-over: yield to the next holder's grant"
for run in 1 2 3; do
  echo "-- run $run"
  "$build/bench/bench_handover"
  if [[ -n $old ]]; then
    mkdir -p "$tmp/run$run"
    "$old" "$tmp/run$run"
  else
    echo "  0.1's shared segment: not measured (no git history of it here)"
  fi
done
