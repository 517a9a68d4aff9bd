#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The mutation check (issue 41): each mutant of tests/mutants/mutants.tsv breaks one promise of the
# README with one small edit; the test it names must then fail. A mutant whose test still passes
# "survived": the suite does not hold that promise, and this script exits 1 naming it.
#
# Usage: tests/mutants/run.sh [--fast] [--in-place BUILD] [NAME...]
#   --fast   only the mutants marked fast (what .ci/run runs); bench/mutants.sh runs them all
#   --in-place BUILD  mutate this checkout itself and rebuild its build directory BUILD (CI's
#            throwaway clone, built already: no second build); the tree must be clean, and each
#            file is put back after its mutant
#   NAME     only these mutants
# Environment: GS_MUTANTS_DIR, a directory to work in (default: a temporary one, removed).
#
# How: the committed tree (git archive HEAD, so a dirty work tree does not leak in) is unpacked
# and built once; each mutant then replaces its one line (the text must occur exactly once in
# the file, else the mutant is stale: an error), rebuilds what changed, runs its tests
# (ctest -R), and is undone. Output: a line a mutant (killed / SURVIVED / STALE / BROKEN: it
# does not build), then a count.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
list=$src/tests/mutants/mutants.tsv
fast=0
inplace=
names=()
while (($# > 0)); do
  case $1 in
  --fast) fast=1 ;;
  --in-place) inplace=${2:?--in-place takes a build directory}; shift ;;
  -*) echo "usage: tests/mutants/run.sh [--fast] [--in-place BUILD] [NAME...]" >&2; exit 2 ;;
  *) names+=("$1") ;;
  esac
  shift
done

work=${GS_MUTANTS_DIR:-}
if [[ -z $work ]]; then
  work=$(mktemp -d /tmp/gs-mutants.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
if [[ -n $inplace ]]; then
  git -C "$src" diff --quiet HEAD || { echo "mutants: --in-place needs a clean tree: $src has changes" >&2; exit 2; }
  tree=$src
  build=$(cd "$inplace" && pwd)
else
  mkdir -p "$work/tree"
  git -C "$src" archive HEAD | tar -x -C "$work/tree"
  tree=$work/tree
  build=$work/build
fi

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

if [[ -z $inplace ]]; then
  echo "mutants: building the committed tree in $work (once) ..."
  cmake -S "$tree" -B "$build" -DGS_WERROR=OFF >"$work/configure.log" 2>&1 ||
    { tail -20 "$work/configure.log" >&2; exit 1; }
fi
cmake --build "$build" -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; exit 1; }

# tidy BEFORE: a killed mutant's test may fail in ways its own cleanup does not cover and leave
# its directory, even its daemon: the directories of the tests' kind that appeared since BEFORE
# and name this build (another clone's suite may run beside: its are left alone) are removed,
# and the processes whose command line names one are stopped (by pid).
tidy() {
  local dir pid
  for dir in $(comm -13 "$1" <(ls -d /tmp/gs-* 2>/dev/null | sort)); do
    grep -rqsF "$build" "$dir" 2>/dev/null || continue
    for pid in $(grep -lsF "$dir" /proc/[0-9]*/cmdline | cut -d/ -f3); do
      [[ $pid == "$$" ]] || kill -KILL "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
  done
  return 0
}

killed=0 survived=() stale=()
while IFS=$'\t' read -r name speed file from to tests promise; do
  [[ -z $name || $name == \#* ]] && continue
  wanted "$name" "$speed" || continue
  cp "$tree/$file" "$work/original"
  ls -d /tmp/gs-* 2>/dev/null | sort >"$work/tmp-before"
  rc=0
  mutate "$tree/$file" "$from" "$to" || rc=$?
  if ((rc != 0)); then
    echo "STALE     $name: \"$from\" is not once in $file"
    stale+=("$name")
    continue
  fi
  result=killed
  if ! cmake --build "$build" -j"$(nproc)" >"$work/$name.build.log" 2>&1; then
    result=BROKEN # a mutant must build (with the build's warnings as errors): else it tests nothing
  elif ctest --test-dir "$build" -R "$tests" --timeout 300 >"$work/$name.test.log" 2>&1; then
    result=SURVIVED
  fi
  cp "$work/original" "$tree/$file"
  touch "$tree/$file"
  tidy "$work/tmp-before"
  if [[ $result == SURVIVED ]]; then
    survived+=("$name")
    echo "SURVIVED  $name ($promise): $tests still passes"
  elif [[ $result == BROKEN ]]; then
    stale+=("$name")
    echo "BROKEN    $name: it does not build ($(grep -m1 'error:' "$work/$name.build.log" || true))"
  else
    killed=$((killed + 1))
    echo "killed    $name ($promise) by $(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*)$/\1/p' "$work/$name.test.log" | tr '\n' ' ')"
  fi
done <"$list"
cmake --build "$build" -j"$(nproc)" >/dev/null 2>&1 || true

echo "mutants: $killed killed, ${#survived[@]} survived, ${#stale[@]} stale or broken"
((${#survived[@]} == 0 && ${#stale[@]} == 0 && killed > 0))
