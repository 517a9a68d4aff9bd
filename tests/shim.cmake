# Tests of libgpushare.so on gpusim: driver-API programs built like a user's (cuda.h + NVIDIA's
# stub libcuda) and run through tests/shim/run_sim.sh on a fresh simulated node.
if(TARGET gsim_cuda AND TARGET gpushare_shim)
  set(GS_CUDA_STUBS "${CUDA_INCLUDE_DIR}/../lib64/stubs")
  set(GS_RUN_SIM "${CMAKE_CURRENT_SOURCE_DIR}/shim/run_sim.sh")

  # gs_add_cuda_program(NAME SOURCES... [LIBS ...]): a driver-API program linked with the stub.
  function(gs_add_cuda_program name)
    cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
    add_executable(${name} ${P_SOURCES})
    target_include_directories(${name} PRIVATE "${CUDA_INCLUDE_DIR}")
    target_link_directories(${name} PRIVATE "${GS_CUDA_STUBS}")
    target_link_libraries(${name} PRIVATE cuda ${P_LIBS})
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
    add_dependencies(${name} gsim_cuda gpushare_shim)
  endfunction()

  # gs_add_sim_test(NAME PROGRAM [TIMEOUT s] [SERIAL] ENV VAR=VALUE...)
  function(gs_add_sim_test name program)
    cmake_parse_arguments(T "SERIAL" "TIMEOUT" "ENV" ${ARGN})
    if(NOT T_TIMEOUT)
      set(T_TIMEOUT 60)
    endif()
    add_test(NAME ${name} COMMAND bash "${GS_RUN_SIM}" --shim ${T_ENV} -- "${GS_TEST_DIR}/${program}")
    set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${GS_TEST_ENV}"
                         LABELS "shim")
    if(T_SERIAL)
      set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
    endif()
  endfunction()

  gs_add_cuda_program(test_shim_families SOURCES shim/test_shim_families.c LIBS PkgConfig::CMOCKA)
  gs_add_sim_test(shim_families test_shim_families ENV GPUSHARE_MEMORY_LIMIT=1G)

  add_library(gs_next_probe SHARED shim/next_probe.c)
  set_target_properties(gs_next_probe PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${GS_TEST_DIR}"
                        C_VISIBILITY_PRESET default)
  target_link_libraries(gs_next_probe PRIVATE ${CMAKE_DL_LIBS})
  gs_add_cuda_program(test_shim_lookup SOURCES shim/test_shim_lookup.c
                      LIBS PkgConfig::CMOCKA ${CMAKE_DL_LIBS} gs_next_probe)
  # The executable's own gs_next_probe must be visible to dlsym like a library's.
  set_target_properties(test_shim_lookup PROPERTIES ENABLE_EXPORTS ON)
  gs_add_sim_test(shim_lookup test_shim_lookup
                  ENV GPUSHARE_MEMORY_LIMIT=1G LD_LIBRARY_PATH=${GS_TEST_DIR})

  gs_add_cuda_program(test_shim_race SOURCES shim/test_shim_race.c LIBS gs_region)
  gs_add_sim_test(shim_race test_shim_race TIMEOUT 120 SERIAL)

  gs_add_cuda_program(test_shim_compute SOURCES shim/test_shim_compute.c)
  add_test(NAME shim_compute_share COMMAND bash "${GS_RUN_SIM}" --shim GPUSHARE_MEMORY_LIMIT=1G
           GPUSHARE_COMPUTE_SHARE=30 -- "${GS_TEST_DIR}/test_shim_compute" 20 40)
  add_test(NAME shim_compute_unlimited COMMAND bash "${GS_RUN_SIM}" --shim
           GPUSHARE_MEMORY_LIMIT=1G -- "${GS_TEST_DIR}/test_shim_compute" 60 100)
  set_tests_properties(shim_compute_share shim_compute_unlimited PROPERTIES TIMEOUT 60
                       ENVIRONMENT "${GS_TEST_ENV}" LABELS "shim" RUN_SERIAL TRUE)

  # Compute shares: compute_worker processes in leases, checked by compute_check against gpusim's
  # per-process device time (tests/shim/compute.cmake registers the cases).
  gs_add_cuda_program(compute_worker SOURCES shim/compute_worker.c LIBS Threads::Threads)
  add_executable(compute_check shim/compute_check.c)
  target_link_libraries(compute_check PRIVATE gsim_core gs_region)
  set_target_properties(compute_check PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_dependencies(compute_check compute_worker)
  add_executable(smutil_probe shim/smutil_probe.c)
  target_link_libraries(smutil_probe PRIVATE gs_common ${CMAKE_DL_LIBS})
  set_target_properties(smutil_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  # gpusim's time model against the H100's figures (time-slicing, MPS, NVML's samples).
  add_test(NAME sim_calibration COMMAND bash "${GS_RUN_SIM}" --
           bash "${CMAKE_CURRENT_SOURCE_DIR}/shim/sim_calibration.sh")
  set_tests_properties(sim_calibration PROPERTIES TIMEOUT 120 ENVIRONMENT "${GS_TEST_ENV}"
                       LABELS "gpusim" RUN_SERIAL TRUE)

  gs_add_cuda_program(test_shim_kill SOURCES shim/test_shim_kill.c LIBS gs_region)
  gs_add_sim_test(shim_kill test_shim_kill TIMEOUT 120 SERIAL)

  add_executable(make_region shim/make_region.c)
  target_link_libraries(make_region PRIVATE gs_region)
  set_target_properties(make_region PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  gs_add_script_test(shim_fail_closed SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/shim/fail_closed.sh"
                     TIMEOUT 60)
endif()
if(TARGET gsim_cuda AND TARGET gpushare_shim)
  gs_add_cuda_program(init_probe SOURCES shim/init_probe.c)
endif()
if(TARGET gsim_cuda AND TARGET gpushare_shim AND TARGET gsim_nvml)
  gs_add_cuda_program(test_shim_nvml SOURCES shim/test_shim_nvml.c LIBS PkgConfig::CMOCKA)
  target_link_libraries(test_shim_nvml PRIVATE gsim_nvml)
  gs_add_sim_test(shim_nvml test_shim_nvml
                  ENV GPUSHARE_MEMORY_LIMIT=1G GPUSIM_DEVICES=H100-80GB,H100-80GB)
endif()
