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
# A module of the shim built with its unit test against a fake driver:
# gs_add_shim_unit_test(NAME MODULE LABEL).
function(gs_add_shim_unit_test name module label)
  gs_add_unit_test(${name} SOURCES ${name}.c "${CMAKE_SOURCE_DIR}/src/shim/${module}"
                   LIBS gs_common Threads::Threads LABELS ${label})
  target_include_directories(${name} PRIVATE "${CUDA_INCLUDE_DIR}" "${CMAKE_SOURCE_DIR}/src/shim")
  target_compile_definitions(${name} PRIVATE __CUDA_API_VERSION_INTERNAL)
endfunction()
if(TARGET gpushare_shim)
  gs_add_shim_unit_test(test_shim_drain drain.c faults) # the drain hole
  gs_add_shim_unit_test(test_shim_gate compute.c compute) # the launch gate, the test its agent
endif()
# The suite: the interposer of the ledger's writes and the wall clock, and its short run.
if(TARGET gsim_cuda AND TARGET gpushare_shim AND TARGET gsim_nvml AND TARGET gsim_mps_control)
  add_library(gs_fault_io SHARED faults/fault_io.c)
  set_target_properties(gs_fault_io PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${GS_TEST_DIR}"
                        C_VISIBILITY_PRESET hidden)
  target_link_libraries(gs_fault_io PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
  gs_add_script_test(faults_short SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/faults/run.sh"
                     TIMEOUT 240 LABELS "daemon;faults")
  set_tests_properties(faults_short PROPERTIES SKIP_RETURN_CODE 77)
endif()
