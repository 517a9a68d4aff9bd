#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Skips CI can see (issue 41): gs_skip (tests/skip.sh) exits 77 normally and 1 under
# GS_REQUIRE_ALL=1, and no test script skips any other way, except where a sanitizer build cannot
# run a test at all (the ASan stage of .ci/run lists those), and no script passes after a partial
# run (a "SKIP" followed by exit 0).
set -euo pipefail
: "${GS_SOURCE_DIR:?run through ctest}"
tmp=$(mktemp -d /tmp/gs-skips.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
source "$GS_SOURCE_DIR/tests/cli_expect.sh" # fail, expect_eq; failures counted in $failures

skip_with() { # skip_with ENV...: a script that skips, run with ENV; prints its status and stderr
  local rc=0
  env "$@" bash -c "source '$GS_SOURCE_DIR/tests/skip.sh'; gs_skip 'podman is not installed'; exit 0" \
    >"$tmp/out" 2>"$tmp/err" || rc=$?
  echo "$rc"
}
expect_eq "$(skip_with GS_REQUIRE_ALL=)" 77 "gs_skip: exit"
expect_eq "$(cat "$tmp/out")" "skipped: podman is not installed" "gs_skip: its line"
expect_eq "$(skip_with GS_REQUIRE_ALL=1)" 1 "gs_skip under GS_REQUIRE_ALL=1: exit"
expect_eq "$(cat "$tmp/err")" "FAIL: required, but skipped: podman is not installed (GS_REQUIRE_ALL=1)" \
  "gs_skip under GS_REQUIRE_ALL=1: its line"
echo "ok: gs_skip exits 77, and 1 under GS_REQUIRE_ALL=1, with its reason"

# Every other exit 77 in the tests is a sanitizer build's (allowed: listed by .ci/run).
others=$(grep -rn 'exit 77' "$GS_SOURCE_DIR/tests" --include='*.sh' | grep -v '/tests/skip.sh:' |
  grep -v 'GS_SANITIZE\|sanitizer' || true)
# A sanitizer skip stands in a block that tests GS_SANITIZE (at most 8 lines above it).
while IFS=: read -r file line _; do
  [[ -n $file ]] || continue
  sed -n "$((line > 8 ? line - 8 : 1)),${line}p" "$file" | grep -q 'GS_SANITIZE' || fail "$file:$line skips without gs_skip"
done <<<"$others"
partial=$(grep -rn -A2 'SKIP' "$GS_SOURCE_DIR/tests" --include='*.sh' | grep -E -- '-[0-9]+-\s*exit 0' || true)
[[ -z $partial ]] || fail "a partial run that passes: $partial"
echo "ok: every skip of the test scripts goes through gs_skip, but a sanitizer build's"
[[ $failures -eq 0 ]]
