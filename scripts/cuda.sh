#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Finds NVIDIA's CUDA 13 headers for the build, or fetches them, and prints the directory that
# holds include/cuda.h on stdout; one line on stderr says where they came from.
#
# Usage: scripts/cuda.sh [--quiet]   (--quiet: no line when nothing was fetched; CMake's configure
#                                    prints the line, deps.sh is quiet)
#
# Where, in order (the first that has include/cuda.h):
#   1. CUDA_HOME, when set (it must hold include/cuda.h: a wrong CUDA_HOME is an error, never
#      passed over);
#   2. /usr/local/cuda (NVIDIA's toolkit), /usr/lib/cuda and /usr (the toolkit's Debian and
#      Ubuntu packages);
#   3. NVIDIA's own wheels from PyPI, pinned below by version and sha256: nvidia-cuda-runtime
#      (cuda.h, cudaTypedefs.h, ...) and nvidia-cuda-profiler-api (cudaProfiler.h), their include/
#      unpacked into the cache GS_CACHE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/gpushare), never
#      into the system's directories or the repository. A second run reuses the cache; the
#      wheels themselves are kept in its wheels/ (an offline index: PIP_FIND_LINKS).
# The headers must be CUDA 13 (CUDA_VERSION 13000 to 13999): the release the shim is written for.
# Exit 0 with the directory; exit 1 with one line on stderr (what is missing, how to provide it),
# leaving nothing half-written (the wheels are unpacked into a temporary directory, then renamed).
set -euo pipefail

# name version sha256: one wheel a line. The runtime's version names the cache.
wheels="nvidia-cuda-runtime 13.0.96 7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548
nvidia-cuda-profiler-api 13.0.85 73d2671deac833db6686d6fbde4753fa3a3a497d87540fc246f081f375243f66"
release=13.0.96
quiet=0
[[ ${1:-} == --quiet ]] && quiet=1
fix="set CUDA_HOME=<a CUDA 13 toolkit>"

say() { ((quiet)) || echo "cuda: $*" >&2; }
die() {
  echo "cuda: $*" >&2
  exit 1
}

# version_of DIR: the CUDA_VERSION of DIR/include/cuda.h, or nothing.
version_of() {
  sed -n 's/^#define CUDA_VERSION \([0-9][0-9]*\).*/\1/p' "$1/include/cuda.h" 2>/dev/null | head -1
}

# accept DIR WHAT: prints DIR and exits when its cuda.h is CUDA 13; dies when it is another.
accept() {
  local dir=$1 what=$2 version
  version=$(version_of "$dir")
  [[ -n $version ]] || die "$dir/include/cuda.h ($what) has no CUDA_VERSION; $fix"
  if ((version < 13000 || version >= 14000)); then
    die "$dir/include/cuda.h ($what) is CUDA $((version / 1000)).$((version % 1000 / 10)); gpushare needs CUDA 13: $fix"
  fi
  say "CUDA $((version / 1000)).$((version % 1000 / 10)) headers from $what ($dir/include)"
  echo "$dir"
  exit 0
}

# unpack WHEEL OUT: the wheel's include/ into OUT/include, its licence into OUT/licenses/.
unpack() {
  "$python" - "$1" "$2" <<'EOF'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
prefix = "nvidia/cu13/include/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if not name.startswith(prefix) or name.endswith("/"):
            continue
        rel = os.path.normpath(name[len(prefix):])
        if rel.startswith("..") or os.path.isabs(rel):
            sys.exit("unsafe path in the wheel: " + name)
        path = os.path.join(out, "include", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(name) as src, open(path, "wb") as dst:
            dst.write(src.read())
    dist, version = os.path.basename(wheel).split("-")[:2]
    licence = dist + "-" + version + ".dist-info/licenses/License.txt"
    if licence in z.namelist():
        os.makedirs(os.path.join(out, "licenses"), exist_ok=True)
        with z.open(licence) as src, open(os.path.join(out, "licenses", dist + ".txt"), "wb") as dst:
            dst.write(src.read())
EOF
}

# fetch NAME VERSION SHA256: the wheel into $tmp/NAME, hash checked, unpacked into $tmp/unpacked.
fetch() {
  local name=$1 version=$2 sha256=$3 reason wheel got
  if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_17_x86_64 \
    --python-version 3 --implementation py --disable-pip-version-check --timeout 30 --retries 2 \
    --dest "$tmp/$name" "$name==$version" >"$tmp/pip.log" 2>&1; then
    reason=$(grep -m1 '^ERROR' "$tmp/pip.log" || tail -1 "$tmp/pip.log")
    die "could not fetch $name==$version with pip (${reason:-no output}); $fix, or make PyPI reachable"
  fi
  wheel=$(find "$tmp/$name" -name "${name//-/_}-*.whl" | head -1)
  [[ -n $wheel ]] || die "pip fetched no $name wheel; $fix"
  got=$(sha256sum "$wheel" | cut -d' ' -f1)
  [[ $got == "$sha256" ]] || die "$(basename "$wheel") has sha256 $got, not the pinned $sha256; $fix"
  unpack "$wheel" "$tmp/unpacked" || die "could not unpack $name's include/; $fix"
  echo "$name $version $sha256" >>"$tmp/unpacked/SOURCE"
}

if [[ -n ${CUDA_HOME:-} ]]; then
  [[ -f $CUDA_HOME/include/cuda.h ]] ||
    die "CUDA_HOME=$CUDA_HOME has no include/cuda.h; point CUDA_HOME at a CUDA 13 toolkit, or unset it to fetch NVIDIA's headers"
  accept "$(cd "$CUDA_HOME" && pwd)" "CUDA_HOME"
fi
for dir in /usr/local/cuda /usr/lib/cuda /usr; do
  [[ -f $dir/include/cuda.h ]] && accept "$dir" "the installed toolkit"
done

cache=${GS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpushare}
dest=$cache/cuda-$release
if [[ -f $dest/include/cuda.h && -f $dest/include/cudaProfiler.h ]]; then
  accept "$dest" "NVIDIA's CUDA $release wheels, cached"
fi

# Fetch: pip downloads each wheel (PyPI, or the index pip is configured with); its hash is checked
# against the pinned one, its include/ is unpacked into a temporary directory beside the
# destination, and that is renamed into place only when complete.
mkdir -p "$cache" 2>/dev/null || die "cannot create the cache $cache; set GS_CACHE_DIR, or $fix"
tmp=$(mktemp -d "$cache/.cuda-fetch.XXXXXX" 2>/dev/null) || die "cannot write to the cache $cache; set GS_CACHE_DIR, or $fix"
trap 'rm -rf "$tmp"' EXIT
python=$(command -v python3) || die "python3 is needed to fetch NVIDIA's headers (apt-get install python3 python3-pip); or $fix"
quiet=0 # what was fetched is always said
say "fetching NVIDIA's CUDA $release headers (their wheels on PyPI) into $dest"
while read -r name version sha256; do
  fetch "$name" "$version" "$sha256"
done <<<"$wheels"
for header in cuda.h cudaTypedefs.h cudaProfiler.h; do
  [[ -f $tmp/unpacked/include/$header ]] || die "NVIDIA's wheels held no include/$header; $fix"
done
version=$(version_of "$tmp/unpacked")
((${version:-0} >= 13000 && ${version:-0} < 14000)) ||
  die "the fetched cuda.h is CUDA_VERSION ${version:-none}, not CUDA 13; $fix"
# Another run may have finished first: its copy is as good as ours.
[[ ! -e $dest ]] || mv -T "$dest" "$tmp/old" # an incomplete cache of an older script
mv -T "$tmp/unpacked" "$dest" 2>/dev/null || [[ -f $dest/include/cudaProfiler.h ]] ||
  die "could not move the headers into $dest; set GS_CACHE_DIR, or $fix"
mkdir -p "$cache/wheels" && find "$tmp" -name '*.whl' -exec mv -f {} "$cache/wheels/" \; || true
accept "$dest" "NVIDIA's CUDA $release wheels, fetched"
