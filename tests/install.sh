#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make install DESTDIR=$tmp PREFIX=/usr from a build of its own, then the installed tree at work:
# every file in its place (gpusim apart under libexec), a client program built against the
# installed header and pkg-config file, the installed gpushared (on the installed gpusim, with
# the installed example config adapted to a temporary directory) and
# `gpushare run --gpu-memory 1G -- <probe>` from the installed tree: exactly 1 GiB, with the
# installed shim preloaded. Skipped under sanitizers (a package is built without them).
set -euo pipefail
: "${GS_BUILD_DIR:?run through ctest (GS_BUILD_DIR is not set)}"
: "${GS_SOURCE_DIR:?run through ctest}"
if [[ -n ${GS_SANITIZE:-} ]]; then
  echo "skipped: the installed tree is built without sanitizers"
  exit 77
fi
work=$(mktemp -d /tmp/gs-install-test.XXXXXX)
chmod 755 "$work"
daemon=
cleanup() {
  local rc=$?
  if [[ -n $daemon ]]; then
    kill -TERM "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  [[ $rc -eq 0 ]] || { tail -30 "$work/build.log" "$work/daemon.log" 2>/dev/null >&2 || true; }
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

root=$work/root
make -C "$GS_SOURCE_DIR" install BUILD="$work/build" PREFIX=/usr DESTDIR="$root" \
  CMAKE_FLAGS="-DGS_TESTS=OFF" JOBS="${GS_INSTALL_JOBS:-2}" >"$work/build.log" 2>&1 ||
  fail "make install failed"

# LIBDIR is lib/<multiarch triplet> for /usr on Debian (GNUInstallDirs).
shim=$(cd "$root" && find usr/lib -path '*/gpushare/libgpushare.so' | head -1)
[[ -n $shim ]] || fail "libgpushare.so not installed under /usr/lib"
libdir=${shim%/gpushare/libgpushare.so}
sim=$root/usr/libexec/gpushare/sim
for f in usr/sbin/gpushared usr/bin/gpushare "$libdir/gpushare/libgpushare.so" \
  "$libdir/libgpushare-client.a" "$libdir/pkgconfig/gpushare.pc" usr/include/gpushare/client.h \
  usr/share/man/man1/gpushare.1 usr/share/man/man8/gpushared.8 usr/share/doc/gpushare/copyright \
  usr/share/doc/gpushare-sim/copyright \
  usr/lib/systemd/system/gpushared.service etc/gpushare/gpushare.conf \
  usr/libexec/gpushare/sim/libcuda.so.1 usr/libexec/gpushare/sim/libnvidia-ml.so.1 \
  usr/libexec/gpushare/sim/nvidia-cuda-mps-control usr/libexec/gpushare/sim/nvidia-smi; do
  [[ -e $root/$f ]] || fail "not installed: /$f"
done
if [[ -e $GS_BUILD_DIR/lib/spank_gpushare.so ]]; then
  [[ -e $root/$libdir/gpushare/spank_gpushare.so ]] || fail "spank_gpushare.so not installed"
fi
# gpusim stays off the library search path; the unit and the programs use the /usr paths.
[[ -z $(find "$root" -name 'libnvidia-ml.so*' -not -path '*/libexec/gpushare/sim/*') ]] ||
  fail "an NVML library outside libexec/gpushare/sim"
grep -qx 'ExecStart=/usr/sbin/gpushared --config /etc/gpushare/gpushare.conf' \
  "$root/usr/lib/systemd/system/gpushared.service" || fail "the unit's ExecStart"
strings "$root/usr/sbin/gpushared" >"$work/strings"
grep -qx /etc/gpushare/gpushare.conf "$work/strings" ||
  fail "gpushared's default config is not /etc/gpushare/gpushare.conf"
echo "ok: files in place"

# A client program from the installed header, library and pkg-config file.
cat >"$work/client.c" <<'EOF'
#include <gpushare/client.h>
#include <stdio.h>
int main(void)
{
    gs_lease_request_t req;
    gs_lease_request_init(&req);
    printf("%s\n", gs_client_socket_path(NULL));
    return 0;
}
EOF
flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$root/$libdir/pkgconfig pkg-config --cflags --libs gpushare) ||
  fail "pkg-config gpushare"
cc -o "$work/client" "$work/client.c" $flags || fail "a client does not build from the installed files"
[[ $(GPUSHARE_SOCKET= "$work/client") == /run/gpushare/gpushared.sock ]] || fail "the client's socket"
echo "ok: a client builds with pkg-config gpushare"

# The installed example config, adapted to this directory, with the installed gpusim.
sed -e "s|^socket = .*|socket = $work/gpushared.sock|" -e "s|^state_dir = .*|state_dir = $work/state|" \
  -e "s|^region_dir = .*|region_dir = $work/regions|" -e "s|^metrics_listen = .*|metrics_listen = 127.0.0.1:0|" \
  -e "s|^nvml_library = .*|nvml_library = $sim/libnvidia-ml.so.1|" \
  "$root/etc/gpushare/gpushare.conf" >"$work/gpushare.conf"
export GPUSIM_STATE=$work/sim GPUSIM_DEVICES=H100-80GB GPUSHARE_SOCKET=$work/gpushared.sock
unset GPUSHARE_SHIM
"$root/usr/sbin/gpushared" --config "$work/gpushare.conf" >"$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $GPUSHARE_SOCKET ]] && break; sleep 0.05; done
[[ -S $GPUSHARE_SOCKET ]] || fail "the installed gpushared did not start"

probe=$GS_BUILD_DIR/tests/cuda_progs/meminfo
[[ -x $probe ]] || fail "$probe is not built"
out=$(LD_LIBRARY_PATH=$sim "$root/usr/bin/gpushare" run --gpu-memory 1G -- \
  sh -c 'echo "$LD_PRELOAD"; exec "$0"' "$probe") || fail "gpushare run: $out"
preload=$(head -1 <<<"$out")
read -r _ total <<<"$(tail -1 <<<"$out")"
[[ $preload == "$root/$libdir/gpushare/libgpushare.so" ]] || fail "preloaded \"$preload\""
[[ $total == 1073741824 ]] || fail "total $total, expected 1073741824 (1 GiB)"
echo "ok: gpushare run --gpu-memory 1G from the installed tree: total $total, shim $preload"
