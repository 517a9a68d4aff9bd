# SPDX-License-Identifier: Apache-2.0
# Issue 14: `make run` shows one line for the build and then the demo; the build's own output
# appears only when it fails.
set -euo pipefail
: "${GS_BUILD_DIR:?run through ctest}"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
tmp=$(mktemp -d /tmp/gs-make-run.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
make_run() {
  make --no-print-directory -C "$GS_SOURCE_DIR" run "$@" 2>&1
}

# A build that is up to date, then the demo: no compiler or CMake lines.
out=$(make_run BUILD="$GS_BUILD_DIR" SANITIZE="${GS_SANITIZE:-}") || fail "make run failed: $out"
[[ $(head -1 <<<"$out") == "building gpushare in $GS_BUILD_DIR/ (its output only if it fails) ..." ]] ||
  fail "first line: $(head -1 <<<"$out")"
noise=$(grep -E 'Built target|Building C|Linking|^-- |\[ *[0-9]+%\]' <<<"$out" || true)
[[ -z $noise ]] || fail "make run shows the build's output: $noise"
grep -q '^== gpushared on gpusim' <<<"$out" || fail "no demo: $out"
grep -q 'Every lease ended with its job' <<<"$out" || fail "the demo did not finish: $out"
echo "ok: make run: one line for the build, then the demo ($(wc -l <<<"$out") lines)"

# A build that fails shows its output and says so.
out=$(make_run BUILD="$tmp/build" CMAKE_FLAGS=-DCUDA_INCLUDE_DIR=/nonexistent) && fail "a broken build succeeded"
grep -q 'cuda.h not found in /nonexistent' <<<"$out" || fail "the failed build's output is not shown: $out"
grep -Fxq "make run: the build failed (its output is above)" <<<"$out" || fail "no failure line: $out"
echo "ok: a failed build shows its output"
