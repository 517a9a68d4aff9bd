# SPDX-License-Identifier: Apache-2.0
# Tests of the everyday CLI (issue 14): quantities, the queue's backfill and aging, names, GPU
# types, time limits, history, processes, NVML inside a lease, --version/--json/help and the man
# page. Each script starts its own gpushared on a fresh gpusim node (tests/daemon/lib.sh).
# gs-demo-job (daemon.cmake) and cuda_progs/ (sim_cuda.cmake) are built with gsim_cuda.
if(TARGET gsim_nvml AND TARGET gsim_cuda AND TARGET gpushare_shim)
  foreach(script quantities backfill aging time_limit history processes nvidia_smi usage
                 leftovers suspend)
    gs_add_script_test(cli_${script} SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/cli/${script}.sh"
                       TIMEOUT 90 LABELS "daemon;cli")
  endforeach()
  gs_add_script_test(cli_make_run SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/cli/make_run.sh"
                     TIMEOUT 120 LABELS "cli")
endif()
