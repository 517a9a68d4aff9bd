# SPDX-License-Identifier: Apache-2.0
# Tests of the Slurm plugin: its core without Slurm (unit), and spank_gpushare.so in a one-node
# Slurm cluster on gpusim (root only: it starts munged, slurmctld and slurmd; exit 77 = skipped).
gs_add_unit_test(test_slurm_plan SOURCES test_slurm_plan.c LIBS gs_slurm_core)

if(TARGET spank_gpushare AND TARGET gs-demo-job)
  gs_add_script_test(slurm_spank SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/slurm/spank.sh"
                     TIMEOUT 180 LABELS slurm)
  # One Slurm cluster at a time: the test uses the node's hostname and real GPU-like devices.
  set_tests_properties(slurm_spank PROPERTIES RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()
