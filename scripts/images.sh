#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make images: builds gpushare's two container images with podman from the Containerfiles in
# deploy/images/, and saves each to an archive that `ctr images import` (scripts/k8s/cluster.sh
# import) or `podman load` reads:
#   localhost/gpushare/node:TAG                   gpushared, the shim, gpushare, gpushare-k8s, gpusim
#   localhost/gpushare/scheduler-extender:TAG     gpushare-scheduler-extender (user 65532)
# The programs are built on the host (build-pkg/, as `make package` builds them: /usr, no tests)
# and installed into a staging directory that is the build's context; an image adds to its base
# only the Debian packages its programs load (found with ldd and dpkg -S here, installed with
# apt-get in the build). A build stage compiling inside the image would take minutes more and
# give the same Debian 12 binaries.
#
# Usage: scripts/images.sh [--no-build]     (--no-build: use build-pkg/ as it is)
# Inputs (environment):
#   BASE       the base image: any Debian 12 image (debian:bookworm-slim with a registry); default
#              localhost/gpushare-base:bookworm, made here with mmdebstrap from Debian's archive
#              (minbase, bookworm + updates + security) when podman lacks it, and cached as
#              $GS_CACHE_DIR/images/gpushare-base-bookworm.tar (deleted: made again)
#   TAG        the images' tag (default: the project's version, 0.2.0)
#   JOBS       build jobs (default: nproc)
#   GS_CACHE_DIR   default ${XDG_CACHE_HOME:-$HOME/.cache}/gpushare
#   GS_IMAGE_SOURCE  org.opencontainers.image.source (default https://github.com/gpushare/gpushare)
# Outputs: build-pkg/images/gpushare-node-TAG.tar and gpushare-scheduler-extender-TAG.tar
#   (docker-archive); one line per image: name, size in podman, archive size, build time.
# Exit: 0; 1 a step failed (its output on stderr). Root (rootful podman) or a user podman works for.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build="build-pkg"
cache=${GS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpushare}/images
base=${BASE:-localhost/gpushare-base:bookworm}
version=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
tag=${TAG:-$version}
jobs=${JOBS:-$(nproc)}
source_url=${GS_IMAGE_SOURCE:-https://github.com/gpushare/gpushare}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
out=$build/images
die() { echo "images: $*" >&2; exit 1; }
command -v podman >/dev/null || die "podman is not installed (scripts/deps.sh)"

if [[ ${1:-} != --no-build ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
    -DGS_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$jobs" >/dev/null || cmake --build "$build" -j1
fi

# ---- the base ----
if ! podman image exists "$base"; then
  [[ $base == localhost/gpushare-base:bookworm ]] ||
    die "the base $base is not in podman (podman pull $base, or leave BASE unset)"
  tar=$cache/gpushare-base-bookworm.tar
  if [[ ! -s $tar ]]; then
    command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (scripts/deps.sh)"
    mkdir -p "$cache"
    echo "images: making the base from Debian's archive (mmdebstrap, minbase) ..."
    mirror=http://deb.debian.org/debian
    # as debian:bookworm-slim: no manuals, documents (but the copyright files) or translations,
    # in the base and in what an image installs on it (the options stay in /etc/dpkg/dpkg.cfg.d)
    slim=()
    for o in 'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' \
      'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
      'path-exclude=/usr/share/locale/*' 'path-include=/usr/share/locale/locale.alias' \
      'path-exclude=/usr/share/lintian/*'; do
      slim+=("--dpkgopt=$o")
    done
    # merged /usr made by mmdebstrap's hook (usr-is-merged): not Debian's usrmerge, which pulls
    # in all of perl (60 MB)
    mmdebstrap --quiet --format=tar --variant=minbase "${slim[@]}" \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
      bookworm "$tar.partial" \
      "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main" \
      >"$cache/mmdebstrap.log" 2>&1 || { tail -n 20 "$cache/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
    mv "$tar.partial" "$tar"
  fi
  podman import --quiet --change 'CMD ["/bin/bash"]' \
    --message "Debian 12 minbase (mmdebstrap), gpushare's image base" "$tar" "$base" >/dev/null
fi

# ---- the staging directories: what each image adds to its base ----
stage_node=$out/stage-node
stage_ext=$out/stage-extender
rm -rf "$stage_node" "$stage_ext"
mkdir -p "$stage_node" "$stage_ext/usr/bin" "$stage_ext/usr/share/doc/gpushare"
DESTDIR=$PWD/$stage_node cmake --install "$build" --component runtime >/dev/null
DESTDIR=$PWD/$stage_node cmake --install "$build" --component sim >/dev/null
# what a node's agent does not use: the client API, the Slurm plugin, the unit, man pages
rm -rf "$stage_node"/usr/include "$stage_node"/usr/lib/*/pkgconfig "$stage_node"/usr/lib/*/*.a \
  "$stage_node"/usr/lib/*/gpushare/spank_gpushare.so "${stage_node:?}/lib" "$stage_node"/usr/share/man
install -m 0755 "$build/bin/gpushare-k8s" "$stage_node/usr/bin/gpushare-k8s"
install -D -m 0755 deploy/images/gpushare-agent.sh "$stage_node/usr/libexec/gpushare/gpushare-agent"
install -m 0755 "$build/bin/gpushare-scheduler-extender" "$stage_ext/usr/bin/"
install -m 0644 packaging/copyright LICENSE "$stage_ext/usr/share/doc/gpushare/"
install -m 0644 LICENSE "$stage_node/usr/share/doc/gpushare/"

# packages: the Debian packages that own the libraries the ELF files of a stage load
packages_of() {
  local f libs
  libs=$(find "$1" -type f -perm -u+x -o -type f -name '*.so*' | while read -r f; do
    file -b "$f" | grep -q '^ELF' || continue
    ldd "$f" 2>/dev/null | grep -oE '=> /[^ ]+' | cut -c4-
  done | sort -u)
  [[ -n $libs ]] || return 0
  local real=()
  for f in $libs; do
    f=$(realpath "$f")
    [[ $f == "$PWD/"* ]] || real+=("$f") # the stage's own (gpusim's) are no package's
  done
  { dpkg -S "${real[@]}" || true; } 2>/dev/null | cut -d: -f1 | tr ',' '\n' |
    tr -d ' ' | grep -v '^libc6$' | sort -u | tr '\n' ' '
}
pk_node="$(packages_of "$stage_node") jq"
pk_ext=$(packages_of "$stage_ext")

build_image() { # build_image NAME CONTAINERFILE CONTEXT PACKAGES
  local name=$1 file=$2 ctx=$3 pk=$4 t0 archive
  t0=$(date +%s)
  podman build --quiet --isolation chroot --network host --layers=false -f "$file" --build-arg BASE="$base" \
    --build-arg PACKAGES="$pk" --build-arg VERSION="$version" --build-arg REVISION="$revision" \
    --build-arg SOURCE="$source_url" -t "$name:$tag" "$ctx" >"$out/build-${name##*/}.log" 2>&1 ||
    { cat "$out/build-${name##*/}.log" >&2; die "podman build of $name failed"; }
  archive=$out/gpushare-${name##*/}-$tag.tar
  rm -f "$archive"
  podman save --quiet --format docker-archive -o "$archive" "$name:$tag"
  printf '%s:%s  %s MB (podman), archive %s MB, built in %s s\n' "$name" "$tag" \
    "$(( $(podman image inspect --format '{{.Size}}' "$name:$tag") / 1000000 ))" \
    "$(( $(stat -c %s "$archive") / 1000000 ))" "$(( $(date +%s) - t0 ))"
}
build_image localhost/gpushare/node deploy/images/node.Containerfile "$stage_node" "$pk_node"
build_image localhost/gpushare/scheduler-extender deploy/images/extender.Containerfile "$stage_ext" "$pk_ext"
echo "archives: $out/gpushare-node-$tag.tar $out/gpushare-scheduler-extender-$tag.tar (base $base)"
