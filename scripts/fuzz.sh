#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make fuzz: builds every fuzz target as a libFuzzer binary with clang (ASan+UBSan) in DIR and,
# with FUZZ_SECONDS set, runs each for that long on a copy of its seed corpus.
# usage: scripts/fuzz.sh DIR    e.g. FUZZ_SECONDS=60 scripts/fuzz.sh build-fuzz
set -euo pipefail
dir=${1:-build-fuzz}
cd "$(dirname "$0")/.."
CC=clang cmake -S . -B "$dir" -DGS_LIBFUZZER=ON -DGS_SANITIZE=address,undefined >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
echo "libFuzzer binaries:"
ls "$dir"/tests/*-libfuzzer
if [[ -n ${FUZZ_SECONDS:-} ]]; then
  for bin in "$dir"/tests/*-libfuzzer; do
    name=$(basename "$bin" -libfuzzer)
    corpus=$(mktemp -d)
    cp tests/fuzz/corpus/"${name#fuzz_}"/* "$corpus"/ 2>/dev/null || true
    echo "== $name for ${FUZZ_SECONDS}s"
    "$bin" -max_total_time="$FUZZ_SECONDS" "$corpus" 2>&1 | tail -2
    rm -rf "$corpus"
  done
fi
