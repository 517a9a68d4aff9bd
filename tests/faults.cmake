# SPDX-License-Identifier: Apache-2.0
# Issue 25: faults survived, with nothing lost. The holes' tests (each failed before its fix) and
# the fault-injection suite's short run (tests/faults/run.sh; bench/faults.sh runs it long).
if(TARGET gsim_cuda AND TARGET gpushare_shim AND TARGET gsim_nvml)
  gs_add_script_test(daemon_faults_na_memory
                     SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/faults_na_memory.sh"
                     TIMEOUT 120 LABELS "daemon;faults")
endif()
if(TARGET gsim_nvml AND TARGET gpushare_shim AND TARGET gsim_mps_control)
  gs_add_script_test(daemon_faults_restore SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/faults_restore.sh"
                     TIMEOUT 120 LABELS "daemon;faults")
endif()
# The drain hole: drain.c against a fake driver.
if(TARGET gpushare_shim)
  gs_add_unit_test(test_shim_drain SOURCES test_shim_drain.c "${CMAKE_SOURCE_DIR}/src/shim/drain.c"
                   LIBS gs_common Threads::Threads LABELS faults)
  target_include_directories(test_shim_drain PRIVATE "${CUDA_INCLUDE_DIR}"
                             "${CMAKE_SOURCE_DIR}/src/shim")
  target_compile_definitions(test_shim_drain PRIVATE __CUDA_API_VERSION_INTERNAL)
endif()
