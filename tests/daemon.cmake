# Tests of gpushared, the gpushare CLI and their client API (issue 5).
gs_add_unit_test(test_daemon_config SOURCES test_daemon_config.c LIBS gs_daemon_core)
gs_add_unit_test(test_daemon_model SOURCES test_daemon_model.c LIBS gs_daemon_core)
gs_add_unit_test(test_daemon_ledger SOURCES test_daemon_ledger.c LIBS gs_daemon_core)
gs_add_unit_test(test_proto SOURCES test_proto.c LIBS gs_client)
gs_add_unit_test(test_region_attached SOURCES test_region_attached.c LIBS gs_region)
gs_add_fuzz_target(fuzz_request SOURCES fuzz/fuzz_request.c LIBS gs_client
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/request")

# Integration scripts: each starts its own gpushared on a fresh gpusim node (NVML from
# build/sim) in a temporary directory. Jobs are plain commands; gs-daemon-tool charges memory
# into a lease's region as the shim would.
add_executable(gs-daemon-tool daemon_tool.c)
target_link_libraries(gs-daemon-tool PRIVATE gs_region gs_common)
set_target_properties(gs-daemon-tool PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
if(TARGET gsim_nvml AND TARGET gpushare_shim)
  foreach(script queue overprovision reclaim restart permissions metrics badinput)
    gs_add_script_test(daemon_${script} SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/${script}.sh"
                       TIMEOUT 90 LABELS daemon)
  endforeach()
  set_tests_properties(daemon_permissions PROPERTIES SKIP_RETURN_CODE 77)
endif()
