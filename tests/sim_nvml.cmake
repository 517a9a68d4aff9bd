# SPDX-License-Identifier: Apache-2.0
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
