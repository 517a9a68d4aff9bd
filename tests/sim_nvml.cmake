# SPDX-License-Identifier: Apache-2.0
# Tests of gpusim's libnvidia-ml, MIG, MPS and nvidia-smi (issue 3).
if(TARGET gsim_nvml)
  add_executable(test_sim_nvml_helper test_sim_nvml_helper.c)
  target_link_libraries(test_sim_nvml_helper PRIVATE gsim_core)
  set_target_properties(test_sim_nvml_helper PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_library(test_sim_nvml_proc STATIC test_sim_nvml_proc.c)

  gs_add_unit_test(test_sim_nvml_errors SOURCES test_sim_nvml_errors.c
                   LIBS gsim_nvml test_sim_nvml_proc ${CMAKE_DL_LIBS} LABELS gpusim)
  gs_add_unit_test(test_sim_nvml SOURCES test_sim_nvml.c
                   LIBS gsim_nvml test_sim_nvml_proc LABELS gpusim)
  add_dependencies(test_sim_nvml test_sim_nvml_helper)
endif()

# NVIDIA's whole R580 entry-point list (sim/nvml/entry_points.tsv) and PID namespaces (issue 20).
if(TARGET gsim_nvml)
  gs_add_unit_test(test_sim_nvml_exports SOURCES test_sim_nvml_exports.c
                   LIBS test_sim_nvml_proc ${CMAKE_DL_LIBS} LABELS gpusim)
  target_include_directories(test_sim_nvml_exports PRIVATE "${CMAKE_SOURCE_DIR}/include")
  target_compile_definitions(test_sim_nvml_exports PRIVATE
    GSIM_NVML_LIST="${CMAKE_SOURCE_DIR}/sim/nvml/entry_points.tsv")
  add_dependencies(test_sim_nvml_exports gsim_nvml test_sim_nvml_helper)
  gs_add_unit_test(test_sim_nvml_pidns SOURCES test_sim_nvml_pidns.c
                   LIBS gsim_nvml test_sim_nvml_proc LABELS gpusim)
  add_dependencies(test_sim_nvml_pidns test_sim_nvml_helper)

  # A third-party tool: loads libnvidia-ml.so.1 by name, like a monitoring tool.
  add_executable(nvml_walk nvml_walk.c)
  target_link_libraries(nvml_walk PRIVATE ${CMAKE_DL_LIBS})
  set_target_properties(nvml_walk PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  if(TARGET cuda_prog_memhold)
    add_test(NAME sim_nvml_walk COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/sim_cuda_run.sh" bash
                                        "${CMAKE_CURRENT_SOURCE_DIR}/sim_nvml_walk.sh")
    set_tests_properties(sim_nvml_walk PROPERTIES TIMEOUT 60 LABELS "integration;gpusim"
      ENVIRONMENT "${GS_TEST_ENV};GSIM_CUDA_PROGS=${GS_TEST_DIR}/cuda_progs")
  endif()
endif()

# The MPS server reset of the H100, without and with gpushare's shim (issue 20).
if(TARGET gsim_mps_control AND TARGET cuda_prog_memhold AND TARGET gpushare_shim)
  add_test(NAME sim_mps_reset COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/sim_cuda_run.sh" bash
                                      "${CMAKE_CURRENT_SOURCE_DIR}/sim_mps_reset.sh")
  set_tests_properties(sim_mps_reset PROPERTIES TIMEOUT 60 LABELS "integration;gpusim"
    ENVIRONMENT "${GS_TEST_ENV};GSIM_CUDA_PROGS=${GS_TEST_DIR}/cuda_progs")
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

# Driver-API versions of the NVML, MIG and MPS tests: the same tests, with a stand-in process that
# uses NVIDIA's driver API (cuda.h) through gpusim's libcuda.so.1 (target gsim_cuda). The client
# links the target itself, which is what -L<stubs> -lcuda plus LD_LIBRARY_PATH=build/sim would do.
if(TARGET gsim_cuda AND TARGET gsim_nvml)
  add_executable(test_sim_nvml_cuda_client cuda_progs_nvml/cuda_client.c)
  target_include_directories(test_sim_nvml_cuda_client PRIVATE "${CUDA_INCLUDE_DIR}")
  target_link_libraries(test_sim_nvml_cuda_client PRIVATE gsim_cuda m)
  set_target_properties(test_sim_nvml_cuda_client PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  set(GSIM_CUDA_VARIANTS test_sim_nvml test_sim_mig)
  if(TARGET gsim_mps_control)
    list(APPEND GSIM_CUDA_VARIANTS test_sim_mps test_sim_mps_overlap)
  endif()
  foreach(t ${GSIM_CUDA_VARIANTS})
    add_dependencies(${t} test_sim_nvml_cuda_client)
    add_test(NAME ${t}_cuda COMMAND ${t})
    set_tests_properties(${t}_cuda PROPERTIES TIMEOUT 60 LABELS "unit;gpusim;cuda"
      ENVIRONMENT "${GS_TEST_ENV};GSIM_TEST_HELPER=${GS_TEST_DIR}/test_sim_nvml_cuda_client;LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/sim")
  endforeach()
  if(TARGET gsim_mps_control)
    set_tests_properties(test_sim_mps_overlap_cuda PROPERTIES RUN_SERIAL TRUE)
  endif()
endif()
