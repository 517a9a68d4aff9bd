# SPDX-License-Identifier: Apache-2.0
# Operations a team can trust (issue 27): one daemon per node, true reasons, release the same
# every time, monitoring that coexists with dcgm-exporter, gpusim as the packages give it. Each
# script starts its own gpushared on a fresh gpusim node (tests/daemon/lib.sh).
if(TARGET gsim_nvml AND TARGET gsim_cuda AND TARGET gpushare_shim)
  foreach(script single_daemon monitoring release reasons doctor gpusim history display plan mps_seconds)
    gs_add_script_test(ops_${script} SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/ops/${script}.sh"
                       TIMEOUT 120 LABELS "daemon;ops")
    set_tests_properties(ops_${script} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endif()
# The reasons, each with the state that causes it (a table; core/reasons.c).
gs_add_unit_test(test_daemon_reasons SOURCES test_daemon_reasons.c LIBS gs_daemon_gpu)
