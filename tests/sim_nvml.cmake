# Tests of gpusim's libnvidia-ml, MIG, MPS and nvidia-smi (issue 3).
if(TARGET gsim_nvml)
  add_executable(test_sim_nvml_helper test_sim_nvml_helper.c)
  target_link_libraries(test_sim_nvml_helper PRIVATE gsim_core)
  set_target_properties(test_sim_nvml_helper PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_library(test_sim_nvml_proc STATIC test_sim_nvml_proc.c)

  gs_add_unit_test(test_sim_nvml_errors SOURCES test_sim_nvml_errors.c
                   LIBS gsim_nvml test_sim_nvml_proc LABELS gpusim)
  gs_add_unit_test(test_sim_nvml SOURCES test_sim_nvml.c
                   LIBS gsim_nvml test_sim_nvml_proc LABELS gpusim)
  add_dependencies(test_sim_nvml test_sim_nvml_helper)
endif()

if(TARGET gsim_nvml)
  gs_add_unit_test(test_sim_mig SOURCES test_sim_mig.c
                   LIBS gsim_nvml gsim_core test_sim_nvml_proc LABELS gpusim)
  add_dependencies(test_sim_mig test_sim_nvml_helper)
endif()

if(TARGET gsim_mps_control)
  gs_add_unit_test(test_sim_mps SOURCES test_sim_mps.c
                   LIBS gsim_core test_sim_nvml_proc LABELS gpusim)
  add_dependencies(test_sim_mps test_sim_nvml_helper gsim_mps_control)
endif()

if(TARGET gsim_mps_control)
  gs_add_unit_test(test_sim_mps_overlap SOURCES test_sim_mps_overlap.c
                   LIBS test_sim_nvml_proc LABELS gpusim)
  add_dependencies(test_sim_mps_overlap test_sim_nvml_helper gsim_mps_control)
  set_tests_properties(test_sim_mps_overlap PROPERTIES RUN_SERIAL TRUE)
endif()

if(TARGET gsim_smi)
  gs_add_script_test(sim_smi SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/sim_smi.sh" LABELS gpusim
                     TIMEOUT 60)
endif()
