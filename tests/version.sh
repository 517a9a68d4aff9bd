#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One version everywhere: project(gpushare VERSION X) in CMakeLists.txt is the one source, the
# generated gpushare/version.h carries it, and every program prints it with --version (gpushare,
# gpushared, gpusim's nvidia-smi after NVIDIA's lines, gpusim's nvidia-cuda-mps-control); the
# pkg-config file, the Debian packages (CPack), the man pages and CHANGELOG.md's latest release
# say the same.
set -euo pipefail
build=${GS_BUILD_DIR:?run through ctest (GS_BUILD_DIR is not set)}
src=${GS_SOURCE_DIR:?run through ctest}
source "$(dirname "$0")/cli_expect.sh" # fail, expect_eq; failures counted in $failures

version=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no project(gpushare VERSION X.Y.Z) in CMakeLists.txt"
echo "version: $version"
expect_eq "$(sed -n 's/^#define GS_VERSION "\(.*\)"$/\1/p' "$build/include/gpushare/version.h")" \
  "$version" "GS_VERSION in the generated gpushare/version.h"

expect_eq "$("$build/bin/gpushare" --version)" "gpushare $version" "gpushare --version"
expect_eq "$("$build/bin/gpushare" version)" "gpushare $version" "gpushare version"
expect_eq "$("$build/bin/gpushared" --version)" "gpushared $version" "gpushared --version"
if [[ -x $build/bin/gpushare-scheduler-extender ]]; then
  expect_eq "$("$build/bin/gpushare-scheduler-extender" --version)" \
    "gpushare-scheduler-extender $version" "gpushare-scheduler-extender --version"
fi
tmp=$(mktemp -d /tmp/gs-version.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [[ -x $build/sim/nvidia-smi ]]; then
  out=$(GPUSIM_STATE=$tmp/sim GPUSIM_DEVICES=H100-80GB "$build/sim/nvidia-smi" --version)
  expect_eq "$(head -1 <<<"$out" | cut -c1-22)" "NVIDIA-SMI version  : " "nvidia-smi --version, NVIDIA's first line"
  expect_eq "$(tail -1 <<<"$out")" "gpusim version      : $version" "nvidia-smi --version, gpusim's line"
fi
if [[ -x $build/sim/nvidia-cuda-mps-control ]]; then
  expect_eq "$("$build/sim/nvidia-cuda-mps-control" --version)" \
    "nvidia-cuda-mps-control (gpusim) $version" "nvidia-cuda-mps-control --version"
fi

expect_eq "$(sed -n 's/^Version: //p' "$build/packaging/gpushare.pc")" "$version" "gpushare.pc"
expect_eq "$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")" \
  "$version" "the Debian packages (CPackConfig.cmake)"
for page in gpushare.1 gpushared.8; do
  expect_eq "$(sed -n 's/^\.TH [A-Z]* [0-9] "[^"]*" "gpushare \([^"]*\)".*/\1/p' "$src/docs/man/$page")" \
    "$version" "the version in $page's .TH line"
done
expect_eq "$(grep -m1 -oE '^## \[[0-9]+\.[0-9]+\.[0-9]+\]' "$src/CHANGELOG.md")" "## [$version]" \
  "CHANGELOG.md's latest release"

[[ $failures -eq 0 ]] || exit 1
echo "ok: every program, the packages, the man pages and CHANGELOG.md say $version"
