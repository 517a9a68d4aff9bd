#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check-layers.sh: it passes on gpushared as built (its includes and, through the build's
# static libraries, its calls), and it fails on an upward include or call planted in a small tree
# of three layers built here: core/ -> serve/ and core/ -> gpu/ by include and by call, gpu/ ->
# serve/ by call, while calls downward pass.
set -euo pipefail
script=$GS_SOURCE_DIR/scripts/check-layers.sh
cc=${CC:-cc}
work=$(mktemp -d /tmp/gs-layers.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

out=$("$script" --libs "$GS_BUILD_DIR/archive" 2>&1) || fail "gpushared's layers: $out"
grep -q "calls checked in" <<<"$out" || fail "gpushared's calls were not checked: $out"
echo "ok: gpushared: $out"

# tree NAME CORE GPU SERVE: a tree of three one-file layers, each file's body given, its libraries
# in $work/NAME/archive/libgs_daemon_LAYER.a. A layer whose body is the one of tree "down" reuses
# its object (each compile costs; only the planted file is built again).
tree() {
  local name=$1 dir=$work/$1 layer body
  mkdir -p "$dir/src/core" "$dir/src/gpu" "$dir/src/serve" "$dir/archive"
  shift
  for layer in core gpu serve; do
    printf 'int gs__%s_thing(void);\n' "$layer" >"$dir/src/$layer/$layer.h"
  done
  for layer in core gpu serve; do
    body=$1
    shift
    printf '/* %s */\n%s\n' "$layer" "$body" >"$dir/src/$layer/$layer.c"
    if [[ $name != down ]] && cmp -s "$dir/src/$layer/$layer.c" "$work/down/src/$layer/$layer.c"; then
      cp "$work/down/$layer.c.o" "$dir/$layer.c.o"
    else
      "$cc" -c -w -I "$dir/src" -I "$dir/src/gpu" -I "$dir/src/serve" -o "$dir/$layer.c.o" \
        "$dir/src/$layer/$layer.c"
    fi
    ar rcs "$dir/archive/libgs_daemon_$layer.a" "$dir/$layer.c.o"
  done
}

# includes NAME CORE GPU: a tree "down" whose core/ and gpu/ sources are these (the includes are
# read from the sources: its libraries are down's, built from the good ones).
includes() {
  local dir=$work/$1
  mkdir -p "$dir/src"
  cp -r "$work/down/src/core" "$work/down/src/gpu" "$work/down/src/serve" "$dir/src/"
  ln -s "$work/down/archive" "$dir/archive"
  printf '/* core */\n%s\n' "$2" >"$dir/src/core/core.c"
  printf '/* gpu */\n%s\n' "$3" >"$dir/src/gpu/gpu.c"
}

# expect NAME STATUS MESSAGE: the check of tree NAME exits STATUS and says MESSAGE (a fixed
# string; "" for none).
expect() {
  local name=$1 status=$2 message=$3 got=0 out
  out=$("$script" --src "$work/$name/src" --libs "$work/$name/archive" 2>&1) || got=$?
  if [[ $got != "$status" ]]; then
    fail "$name: exit status $got, not $status: $out"
  elif [[ -n $message ]] && ! grep -qF -- "$message" <<<"$out"; then
    fail "$name: no \"$message\" in: $out"
  else
    echo "ok: $name -> $status ${message:+($message)}"
  fi
}

core_ok='#include "core.h"
int gs__core_thing(void) { return 1; }'
gpu_ok='#include "core/core.h"
#include "gpu.h"
int gs__gpu_thing(void) { return gs__core_thing() + 1; }'
serve_ok='#include "core/core.h"
#include "gpu/gpu.h"
#include "serve.h"
int gs__serve_thing(void) { return gs__core_thing() + gs__gpu_thing(); }'

tree down "$core_ok" "$gpu_ok" "$serve_ok"
expect down 0 "calls checked in"

includes include_serve '#include "serve/serve.h"
int gs__core_thing(void) { return 1; }' "$gpu_ok"
expect include_serve 1 'core/core.c:2 includes "serve/serve.h" of serve/'

includes include_bare '#include "gpu.h"
int gs__core_thing(void) { return 1; }' "$gpu_ok"
expect include_bare 1 'core/core.c:2 includes "gpu.h" of gpu/'

includes include_up '#include "../serve/serve.h"
int gs__core_thing(void) { return 1; }' "$gpu_ok"
expect include_up 1 'core/core.c:2 includes "../serve/serve.h" of serve/'

includes gpu_include_serve "$core_ok" '#include "serve/serve.h"
int gs__gpu_thing(void) { return 2; }'
expect gpu_include_serve 1 'gpu/gpu.c:2 includes "serve/serve.h" of serve/'

# Calls without an include: a prototype of its own is all a planted call needs.
tree call_serve 'int gs__serve_thing(void);
int gs__core_thing(void) { return gs__serve_thing(); }' "$gpu_ok" "$serve_ok"
expect call_serve 1 "core/core.c calls gs__serve_thing of serve/"

tree call_gpu 'int gs__gpu_thing(void);
int gs__core_thing(void) { return gs__gpu_thing(); }' "$gpu_ok" "$serve_ok"
expect call_gpu 1 "core/core.c calls gs__gpu_thing of gpu/"

tree gpu_call_serve "$core_ok" 'int gs__serve_thing(void);
int gs__gpu_thing(void) { return gs__serve_thing(); }' "$serve_ok"
expect gpu_call_serve 1 "gpu/gpu.c calls gs__serve_thing of serve/"

[[ $failures -eq 0 ]] || exit 1
echo "PASS: check-layers.sh passes gpushared and fails every planted upward include and call"
