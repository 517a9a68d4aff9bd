#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: runs every benchmark script bench/*.sh against the build and prints their figures.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
for b in bench/*.sh; do
  [[ -e "$b" ]] || continue
  echo "== $b"
  GS_BUILD_DIR="$build" bash "$b"
done
