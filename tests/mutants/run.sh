#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The mutation check (issue 41): each mutant of tests/mutants/mutants.tsv breaks one promise of the
# README with one small edit; the test it names must then fail. A mutant whose test still passes
# "survived": the suite does not hold that promise, and this script exits 1 naming it.
#
# Usage: tests/mutants/run.sh [--fast] [NAME...]
#   --fast   only the mutants marked fast (what .ci/run runs); bench/mutants.sh runs them all
#   NAME     only these mutants
# Environment: GS_MUTANTS_DIR, a directory to work in (default: a temporary one, removed).
#
# How: the committed tree (git archive HEAD, so a dirty work tree does not leak in) is unpacked
# and built once; each mutant then replaces its one line (the text must occur exactly once in
# the file, else the mutant is stale: an error), rebuilds what changed, runs its tests
# (ctest -R), and is undone. Output: a line a mutant (killed / SURVIVED / STALE), then a count.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
list=$src/tests/mutants/mutants.tsv
fast=0
names=()
for arg in "$@"; do
  case $arg in
  --fast) fast=1 ;;
  -*) echo "usage: tests/mutants/run.sh [--fast] [NAME...]" >&2; exit 2 ;;
  *) names+=("$arg") ;;
  esac
done

work=${GS_MUTANTS_DIR:-}
if [[ -z $work ]]; then
  work=$(mktemp -d /tmp/gs-mutants.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/tree"
git -C "$src" archive HEAD | tar -x -C "$work/tree"
tree=$work/tree

# wanted NAME FAST: whether this run takes the mutant.
wanted() {
  local name=$1 is_fast=$2 n
  if ((${#names[@]} > 0)); then
    for n in "${names[@]}"; do [[ $n == "$name" ]] && return 0; done
    return 1
  fi
  ((fast == 0)) || [[ $is_fast == fast ]]
}

# mutate FILE FROM TO: replaces the one line containing FROM by TO's text in its place. Status 3
# when FROM is not there exactly once.
mutate() {
  python3 - "$@" <<'EOF'
import sys
path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
if text.count(old) != 1:
    sys.exit(3)
open(path, "w").write(text.replace(old, new))
EOF
}

echo "mutants: building the committed tree in $work (once) ..."
cmake -S "$tree" -B "$work/build" -DGS_WERROR=OFF >"$work/configure.log" 2>&1 ||
  { tail -20 "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; exit 1; }

killed=0 survived=() stale=()
while IFS=$'\t' read -r name speed file from to tests promise; do
  [[ -z $name || $name == \#* ]] && continue
  wanted "$name" "$speed" || continue
  cp "$tree/$file" "$work/original"
  rc=0
  mutate "$tree/$file" "$from" "$to" || rc=$?
  if ((rc != 0)); then
    echo "STALE     $name: \"$from\" is not once in $file"
    stale+=("$name")
    continue
  fi
  result=killed
  if ! cmake --build "$work/build" -j"$(nproc)" >"$work/$name.build.log" 2>&1; then
    result="killed (it does not build)"
  elif ctest --test-dir "$work/build" -R "$tests" --timeout 300 >"$work/$name.test.log" 2>&1; then
    result=SURVIVED
  fi
  cp "$work/original" "$tree/$file"
  touch "$tree/$file"
  if [[ $result == SURVIVED ]]; then
    survived+=("$name")
    echo "SURVIVED  $name ($promise): $tests still passes"
  else
    killed=$((killed + 1))
    echo "killed    $name ($promise) by $(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*)$/\1/p' "$work/$name.test.log" | tr '\n' ' ')"
  fi
done <"$list"
cmake --build "$work/build" -j"$(nproc)" >/dev/null 2>&1 || true

echo "mutants: $killed killed, ${#survived[@]} survived, ${#stale[@]} stale"
((${#survived[@]} == 0 && ${#stale[@]} == 0 && killed > 0))
