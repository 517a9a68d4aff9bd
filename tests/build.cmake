# SPDX-License-Identifier: Apache-2.0
# Tests of the build itself: where NVIDIA's CUDA headers come from (scripts/cuda.sh, issue 33);
# the test scripts' own skips and waits (issue 41).
gs_add_script_test(build_cuda_headers SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/build/cuda_headers.sh"
                   TIMEOUT 120 LABELS "build")
gs_add_script_test(build_skips SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/build/skips.sh"
                   TIMEOUT 30 LABELS "build")
gs_add_script_test(build_waits SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/build/waits.sh"
                   TIMEOUT 30 LABELS "build")
