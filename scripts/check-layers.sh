#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpushared's layers call one way (docs/daemon.md): core/ includes and calls nothing of gpu/ or
# serve/, and gpu/ nothing of serve/. Fails with one line per upward include or call.
#
#   scripts/check-layers.sh [--src DIR] [--libs DIR]
#     --src DIR   the daemon's sources, with core/ gpu/ serve/ (default: src/daemon here)
#     --libs DIR  where a build put libgs_daemon_core.a, libgs_daemon_gpu.a and
#                 libgs_daemon_serve.a (default: build/archive here, when they are there)
#
# Includes are read from the sources: a quoted or angle include that names a file of an upper
# layer ("serve/server.h", "../gpu/mode.h", or a bare "server.h" that only serve/ has). Calls are
# read with nm from the layers' static libraries: a symbol a lower layer's objects need and do
# not define themselves must not be defined by an upper layer (function pointers set by the upper
# layer, as core's callbacks are, are not calls and are not seen). Without the libraries only
# the includes are checked, and the script says so (ctest runs it with the build's: test
# "layers").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/src/daemon
libs=$here/build/archive
libs_given=0
while [[ $# -gt 0 ]]; do
  case $1 in
  --src)
    src=$2
    shift 2
    ;;
  --libs)
    libs=$2
    libs_given=1
    shift 2
    ;;
  -h | --help)
    sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "check-layers: unknown argument \"$1\" (see --help)" >&2
    exit 2
    ;;
  esac
done
layers=(core gpu serve)
failures=0

# above LAYER: the layers LAYER must not reach.
above() {
  case $1 in
  core) echo gpu serve ;;
  gpu) echo serve ;;
  esac
}

# The layer an include in a file of layer LAYER lands in, or "" when it is none of them.
include_layer() {
  local layer=$1 name=$2 first
  name=${name#./}
  while [[ $name == ../* ]]; do
    name=${name#../}
    layer="" # above its own folder: the first component names the layer
  done
  first=${name%%/*}
  if [[ $name == */* ]]; then
    for l in "${layers[@]}"; do
      [[ $first == "$l" ]] && echo "$l" && return
    done
    echo ""
    return
  fi
  if [[ -n $layer && -e $src/$layer/$name ]]; then
    echo "$layer"
    return
  fi
  for l in "${layers[@]}"; do
    [[ -e $src/$l/$name ]] && echo "$l" && return
  done
  echo ""
}

check_includes() {
  local layer=$1 file line name target
  for file in "$src/$layer"/*.[ch]; do
    [[ -e $file ]] || continue
    while IFS= read -r line; do
      name=$(sed -E 's/^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]+)[">].*/\1/' <<<"$line")
      target=$(include_layer "$layer" "$name")
      for up in $(above "$layer"); do
        if [[ $target == "$up" ]]; then
          echo "check-layers: $layer/${file##*/}:${line%%:*} includes \"$name\" of $up/" >&2
          failures=$((failures + 1))
        fi
      done
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "$file" || true)
  done
}

# Symbols defined (global) by the objects of an archive, one a line.
defined() { nm --defined-only -g "$1" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u; }

# object:symbol for each symbol an archive's objects need (an object is named as CMake names it,
# its source's name with .o: leases.c.o).
needed() { nm -A -u "$1" 2>/dev/null | awk '{sub(/:$/, "", $1); n = split($1, p, ":"); print p[n] ":" $NF}'; }

check_calls() {
  local layer=$1 lib=$libs/libgs_daemon_$1.a up own theirs entry
  own=$(mktemp)
  theirs=$(mktemp)
  defined "$lib" >"$own"
  for up in $(above "$layer"); do
    defined "$libs/libgs_daemon_$up.a" | comm -23 - "$own" >"$theirs"
    while IFS= read -r entry; do
      echo "check-layers: $layer/${entry%%.o:*} calls ${entry#*:} of $up/" >&2
      failures=$((failures + 1))
    done < <(needed "$lib" | awk -F: 'NR == FNR {up[$1] = 1; next} ($2 in up)' "$theirs" -)
  done
  rm -f "$own" "$theirs"
}

for layer in core gpu; do
  check_includes "$layer"
done
calls="not checked (no libgs_daemon_*.a in $libs; ctest's \"layers\" checks them)"
if [[ -e $libs/libgs_daemon_core.a && -e $libs/libgs_daemon_gpu.a && -e $libs/libgs_daemon_serve.a ]]; then
  for layer in core gpu; do
    check_calls "$layer"
  done
  calls="checked in $libs"
elif [[ $libs_given == 1 ]]; then
  echo "check-layers: $libs has no libgs_daemon_core.a, libgs_daemon_gpu.a and libgs_daemon_serve.a" >&2
  exit 2
fi
# src/http, the HTTP server under the extender (and meant for the daemon's metrics), sits below
# both programs: its quoted includes are its own files or gpushare/'s, never src/k8s's or the
# daemon's.
http_src=$here/src/http
for file in "$http_src"/*.[ch]; do
  [[ -e $file ]] || continue
  while IFS= read -r line; do
    name=$(sed -E 's/^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$line")
    [[ -e $http_src/$name || $name == gpushare/* ]] && continue
    echo "check-layers: http/${file##*/}:${line%%:*} includes \"$name\", not src/http's own or gpushare/'s" >&2
    failures=$((failures + 1))
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
done
if [[ $failures -gt 0 ]]; then
  echo "check-layers: $failures upward include(s) or call(s): core/ may use neither gpu/ nor serve/, gpu/ not serve/ (docs/daemon.md)" >&2
  exit 1
fi
echo "check-layers: core/ -> gpu/ -> serve/ run one way: includes checked, calls $calls"
