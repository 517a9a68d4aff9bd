# SPDX-License-Identifier: Apache-2.0
# Tests of gpushared, the gpushare CLI and their client API (issue 5).
gs_add_unit_test(test_daemon_config SOURCES test_daemon_config.c LIBS gs_daemon_core)
gs_add_unit_test(test_daemon_model SOURCES test_daemon_model.c LIBS gs_daemon_gpu)
gs_add_unit_test(test_daemon_ledger SOURCES test_daemon_ledger.c LIBS gs_daemon_core)
gs_add_unit_test(test_daemon_regions SOURCES test_daemon_regions.c LIBS gs_daemon_core)
gs_add_unit_test(test_daemon_gpuprocs SOURCES test_daemon_gpuprocs.c LIBS gs_daemon_gpu)
gs_add_unit_test(test_daemon_queue SOURCES test_daemon_queue.c LIBS gs_daemon_gpu)
gs_add_unit_test(test_proto SOURCES test_proto.c LIBS gs_client)
gs_add_unit_test(test_wire_errors SOURCES test_wire_errors.c LIBS gs_client)
gs_add_unit_test(test_region_attached SOURCES test_region_attached.c LIBS gs_region)
gs_add_fuzz_target(fuzz_request SOURCES fuzz/fuzz_request.c LIBS gs_client
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/request")

# Integration scripts: each starts its own gpushared on a fresh gpusim node (NVML from
# build/sim) in a temporary directory. Jobs are plain commands; gs-daemon-tool charges memory
# into a lease's region as the shim would.
add_executable(gs-daemon-tool daemon_tool.c)
target_link_libraries(gs-daemon-tool PRIVATE gs_region gs_common)
set_target_properties(gs-daemon-tool PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
# gs-hostile: a hostile local user (issue 15): resizes or rewrites its region, floods the daemon.
add_executable(gs-hostile hostile_tool.c)
target_link_libraries(gs-hostile PRIVATE gs_region gs_common)
target_include_directories(gs-hostile PRIVATE "${CMAKE_SOURCE_DIR}/src/region")
target_compile_options(gs-hostile PRIVATE -mcx16)
set_target_properties(gs-hostile PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
if(TARGET gsim_nvml AND TARGET gpushare_shim)
  foreach(script queue overprovision reclaim restart permissions metrics badinput)
    gs_add_script_test(daemon_${script} SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/${script}.sh"
                       TIMEOUT 90 LABELS daemon)
  endforeach()
  set_tests_properties(daemon_permissions PROPERTIES SKIP_RETURN_CODE 77)
  # Issue 15: a hostile local user (a second system user; root needed, skipped otherwise).
  foreach(script hostile_region hostile_ledger hostile_records hostile_flood hostile_metrics
          hostile_display hostile_state hostile_pids hostile_budget hostile_keyed
          hostile_unsure hostile_squat hostile_cdi)
    gs_add_script_test(daemon_${script} SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/${script}.sh"
                       TIMEOUT 120 LABELS "daemon;hostile")
    set_tests_properties(daemon_${script} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
  # Issue 40's holes: suspend off the event loop, a suspended lease's region (cuda_progs/).
  if(TARGET gsim_cuda)
    gs_add_script_test(daemon_hostile_suspend
                       SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/hostile_suspend.sh"
                       TIMEOUT 120 LABELS "daemon;hostile")
    set_tests_properties(daemon_hostile_suspend PROPERTIES SKIP_RETURN_CODE 77)
  endif()
  # gpushare doctor: a ready node, then each check failing in turn.
  add_executable(gs-nvml-set nvml_set.c)
  target_link_libraries(gs-nvml-set PRIVATE gsim_nvml)
  set_target_properties(gs-nvml-set PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  gs_add_script_test(daemon_doctor SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/doctor.sh"
                     TIMEOUT 90 LABELS daemon)
  set_tests_properties(daemon_doctor PROPERTIES SKIP_RETURN_CODE 77)
endif()

# The demo's CUDA job (scripts/demo.sh, make run) and the daemon tests with real CUDA jobs: a
# driver-API program built like a user's (NVIDIA's cuda.h and stub libcuda), run on gpusim's
# libcuda.so.1 through the shim.
if(TARGET gsim_cuda AND TARGET gpushare_shim)
  add_executable(gs-demo-job demo_job.c)
  gs_link_cuda(gs-demo-job)
  set_target_properties(gs-demo-job PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_dependencies(gs-demo-job gsim_cuda gpushare_shim)
  gs_add_script_test(daemon_cuda_jobs SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/cuda_jobs.sh"
                     TIMEOUT 90 LABELS daemon)
  gs_add_script_test(daemon_compute SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/compute.sh"
                     TIMEOUT 90 LABELS daemon)
  set_tests_properties(daemon_compute PROPERTIES RUN_SERIAL TRUE)
  add_dependencies(gs-demo-job compute_worker)
  gs_add_script_test(demo SCRIPT "${CMAKE_SOURCE_DIR}/scripts/demo.sh" TIMEOUT 60 LABELS daemon)
endif()

# Issue 12: contexts inside the lease, and the watchdog (unmanaged processes, leases over their
# limits, enforce = report | kill). gs-gpu-hog holds GPU memory with or without the shim;
# gs-nvml-procs prints NVML's per-process memory.
if(TARGET gsim_cuda AND TARGET gpushare_shim AND TARGET gsim_nvml)
  add_executable(gs-gpu-hog gpu_hog.c)
  gs_link_cuda(gs-gpu-hog)
  add_executable(gs-nvml-procs nvml_procs.c)
  target_link_libraries(gs-nvml-procs PRIVATE gs_common ${CMAKE_DL_LIBS})
  # What an MPS client sees at its pinned limit (daemon_modes_mps; bench/gpu/node.sh on a GPU).
  add_executable(gs-mps-probe "${CMAKE_SOURCE_DIR}/bench/gpu/mps_probe.c")
  gs_link_cuda(gs-mps-probe)
  set_target_properties(gs-gpu-hog gs-nvml-procs gs-mps-probe PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_dependencies(gs-gpu-hog gsim_cuda gsim_nvml gpushare_shim)
  add_dependencies(gs-mps-probe gsim_cuda)
  gs_add_script_test(daemon_watchdog SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/watchdog.sh"
                     TIMEOUT 120 LABELS daemon)
  # Issue 37, item 1: the kill reaches the job's owner (stderr, history, metrics).
  gs_add_script_test(daemon_watchdog_owner
                     SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/watchdog_owner.sh" TIMEOUT 60
                     LABELS daemon)
  # Issue 34: processes that bypass the shim by RTLD_DEEPBIND, cuGetProcAddress or a private
  # export table, and the neighbours whose memory they take. gs-bypass loads libgs-bypass-deep.so
  # (beside it) with RTLD_DEEPBIND.
  add_executable(gs-bypass bypass.c)
  gs_link_cuda(gs-bypass)
  target_link_libraries(gs-bypass PRIVATE ${CMAKE_DL_LIBS})
  add_library(gs-bypass-deep SHARED bypass_deep.c)
  gs_link_cuda(gs-bypass-deep)
  set_target_properties(gs-bypass PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  set_target_properties(gs-bypass-deep PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_dependencies(gs-bypass gs-bypass-deep gsim_cuda gsim_nvml gpushare_shim)
  gs_add_script_test(daemon_hostile_bypass
                     SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/hostile_bypass.sh" TIMEOUT 120
                     LABELS "daemon;hostile")
endif()
