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
