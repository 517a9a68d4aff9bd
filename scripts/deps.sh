#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks (and, as root, installs) the Debian 12 packages gpushare builds and tests with.
# Usage: scripts/deps.sh          prints what is missing; installs it when run as root
#        scripts/deps.sh --list   prints the package list (for apt-get in .ci/run)
set -euo pipefail

packages=(
  build-essential cmake pkg-config          # compiler and build
  clang                                     # libFuzzer targets (make fuzz)
  clang-format                              # style check
  libcmocka-dev                             # unit tests
  libsqlite3-dev sqlite3                    # the daemon's ledger
  libjansson-dev                            # the JSON-lines API, Kubernetes JSON
  libssl-dev                                # the scheduler extender's HTTPS to the API server
  python3 python3-yaml openssl              # tests/k8s: stand-in API server, manifests, TLS certs
  libinih-dev                               # gpushare.conf
  coinor-libclp-dev                         # LP solver (COIN-OR CLP): placement's packing prices
  libcairo2-dev libfontconfig-dev           # PNG/SVG charts of `gpushare plan replay --plot`
  prometheus                                # promtool, to validate /metrics in tests
  python3-pip                               # scripts/cuda.sh: NVIDIA's CUDA headers from PyPI
  curl jq                                   # tests read /metrics and the JSON API
  procps psmisc                             # ps, pkill, killall in tests
  slurmctld slurmd slurm-client munge       # the Slurm plugin's test cluster (tests/slurm)
  libslurm-dev                              # slurm/spank.h for spank_gpushare.so
  podman crun busybox-static                # the container tests (tests/containers): rootful
                                            # podman + crun, busybox for their image
  libgrpc-dev libprotobuf-c-dev protobuf-c-compiler  # gpushare-k8s: the kubelet's gRPC services
  libcurl4-openssl-dev libyaml-dev          # gpushare-k8s: the API server, kubeconfigs
  python3-grpcio python3-protobuf protobuf-compiler  # tests: the stand-in kubelet
  mmdebstrap                                # make images: the images' Debian 12 base from
                                            # Debian's archive (no registry needed)
  shellcheck                                # the shell scripts' check
  valgrind                                  # bench/first_context_callgrind.sh (callgrind)
  runc                                      # tests/k8s/real: containerd 2.x's OCI runtime (Debian's
                                            # crun 1.8 refuses the spec containerd 2.4 writes)
)

if [[ ${1:-} == --list ]]; then
  echo "${packages[*]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

# NVIDIA's CUDA 13 headers: found (CUDA_HOME, the toolkit) or fetched into a cache (scripts/cuda.sh);
# CMake's configure says which in one line. Checked after the packages: fetching needs python3-pip.
cuda_headers() { "$(dirname "$0")/cuda.sh" --quiet >/dev/null; }

if [[ ${#missing[@]} -eq 0 ]]; then
  cuda_headers
  exit 0
fi
if [[ $(id -u) -eq 0 ]]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
  # Debian's prometheus package enables a service; gpushare only needs its promtool binary.
  cuda_headers
  exit 0
fi
echo "deps: missing packages: ${missing[*]}" >&2
echo "deps: install them with: sudo apt-get install -y ${missing[*]}" >&2
exit 1
