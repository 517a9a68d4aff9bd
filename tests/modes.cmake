# SPDX-License-Identifier: Apache-2.0
# Tests of GPU modes (issue 11): the MIG planner, gpushared's mps and mig modes, mixed nodes.
gs_add_unit_test(test_mig_plan SOURCES test_mig_plan.c LIBS gs_placement)
gs_add_unit_test(test_daemon_modes SOURCES test_daemon_modes.c LIBS gs_daemon_gpu)
gs_add_script_test(test_mig_cli SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/test_mig_cli.sh" TIMEOUT 60)

# gpushared with mode = mig and mode = mps on gpusim, a mixed node, and NVML/MPS failures.
if(TARGET gsim_nvml AND TARGET gpushare_shim AND TARGET gsim_mps_control)
  foreach(script mig mixed faults mps_users)
    gs_add_script_test(daemon_modes_${script}
                       SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/modes_${script}.sh"
                       TIMEOUT 120 LABELS daemon)
  endforeach()
  set_tests_properties(daemon_modes_mps_users PROPERTIES SKIP_RETURN_CODE 77)
endif()
if(TARGET gsim_cuda AND TARGET gpushare_shim AND TARGET gsim_mps_control)
  # Measures SM shares over seconds: alone on the machine.
  gs_add_script_test(daemon_modes_mps SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/modes_mps.sh"
                     TIMEOUT 120 LABELS daemon)
  set_tests_properties(daemon_modes_mps PROPERTIES RUN_SERIAL TRUE)
endif()
