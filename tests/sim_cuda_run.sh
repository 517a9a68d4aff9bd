#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one gpusim driver test program the way a user would: against build/sim/libcuda.so.1 (found
# through LD_LIBRARY_PATH), with a private node state directory that is removed afterwards.
# Usage: sim_cuda_run.sh PROGRAM [ARGS...]   (GPUSIM_DEVICES etc. come from the environment)
set -euo pipefail
: "${GS_BUILD_DIR:?GS_BUILD_DIR must name the build directory}"
state=$(mktemp -d "${TMPDIR:-/tmp}/gpusim-test.XXXXXX")
trap 'rm -rf "$state"' EXIT
export GPUSIM_STATE="$state"
export LD_LIBRARY_PATH="$GS_BUILD_DIR/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$@"
