#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when a tracked C file differs from .clang-format's style; lists the files.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "check-format: $f is not formatted (run: make format)" >&2
    bad=1
  fi
done < <(git ls-files '*.c' '*.h')
exit $bad
