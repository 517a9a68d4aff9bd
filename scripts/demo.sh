#!/usr/bin/env bash
# make run: the gpushare demo on gpusim (filled in as parts land).
set -euo pipefail
build=${1:-build}
echo "gpushare demo: build is in $build (the daemon demo lands with issue 5)."
