# SPDX-License-Identifier: Apache-2.0
# Tests of gpusim's CUDA driver (build/sim/libcuda.so.1). The driver-API programs in cuda_progs/
# are built exactly as a user builds them (cuda.h, linked against the stub libcuda.so of cmake/gs_cuda.cmake) and run
# with LD_LIBRARY_PATH=build/sim, each with a private GPUSIM_STATE (sim_cuda_run.sh).
if(NOT TARGET gsim_cuda)
  return()
endif()

set(GSIM_CUDA_PROGS "${GS_TEST_DIR}/cuda_progs")
set(GSIM_CUDA_RUN "${CMAKE_CURRENT_SOURCE_DIR}/sim_cuda_run.sh")

# gsim_cuda_prog(NAME [SOURCES extra.c...]): builds cuda_progs/NAME.c like a user program.
function(gsim_cuda_prog name)
  cmake_parse_arguments(P "" "" "SOURCES" ${ARGN})
  add_executable(cuda_prog_${name} "${CMAKE_CURRENT_SOURCE_DIR}/cuda_progs/${name}.c" ${P_SOURCES})
  gs_link_cuda(cuda_prog_${name})
  target_link_libraries(cuda_prog_${name} PRIVATE Threads::Threads m)
  set_target_properties(cuda_prog_${name} PROPERTIES OUTPUT_NAME ${name}
                        RUNTIME_OUTPUT_DIRECTORY "${GSIM_CUDA_PROGS}" SKIP_BUILD_RPATH ON)
  add_dependencies(cuda_prog_${name} gsim_cuda)
endfunction()

# gsim_cuda_test(NAME COMMAND prog args... [DEVICES spec] [ENV VAR=value...] [TIMEOUT s] [SERIAL])
# Runs a command (a cuda_progs program by name, or a script) under sim_cuda_run.sh.
function(gsim_cuda_test name)
  cmake_parse_arguments(T "SERIAL" "DEVICES;TIMEOUT" "COMMAND;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  list(GET T_COMMAND 0 first)
  list(REMOVE_AT T_COMMAND 0)
  if(TARGET cuda_prog_${first})
    set(first "$<TARGET_FILE:cuda_prog_${first}>")
  endif()
  add_test(NAME ${name} COMMAND bash "${GSIM_CUDA_RUN}" ${first} ${T_COMMAND})
  set(env ${GS_TEST_ENV} "GSIM_CUDA_PROGS=${GSIM_CUDA_PROGS}")
  if(T_DEVICES)
    list(APPEND env "GPUSIM_DEVICES=${T_DEVICES}")
  endif()
  list(APPEND env ${T_ENV})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${env}"
                       LABELS "integration;gpusim")
  if(T_SERIAL)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL ON)
  endif()
endfunction()

gsim_cuda_prog(basic)
gsim_cuda_test(sim_cuda_basic COMMAND basic DEVICES H100-80GB)

# Acceptance 3: a second process sees the first's memory; SIGKILL returns it.
gsim_cuda_prog(memhold)
gsim_cuda_prog(meminfo)
gsim_cuda_test(sim_cuda_two_procs COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/sim_cuda_two_procs.sh"
               DEVICES H100-80GB)

# CUDA's checkpoint API across processes (issue 40): states, blocking, lock timeout, restore onto
# another GPU of the model and refusal of another model, a restore that does not fit, a fault.
gsim_cuda_prog(checkpoint)
gsim_cuda_prog(sumhold) # a job with data in its memory (tests/cli/suspend.sh)
foreach(scenario states blocking timeout oom fault)
  gsim_cuda_test(sim_cuda_checkpoint_${scenario} COMMAND checkpoint ${scenario} DEVICES H100-80GB)
endforeach()
gsim_cuda_test(sim_cuda_checkpoint_move COMMAND checkpoint move DEVICES H100-80GB*2)
gsim_cuda_test(sim_cuda_checkpoint_model COMMAND checkpoint model DEVICES H100-80GB,A100-40GB)

# Acceptance 5: time-slicing on one device, parallel devices (timed: run alone).
gsim_cuda_prog(timing_worker)
gs_add_unit_test(test_sim_cuda_timing SOURCES test_sim_cuda_timing.c LIBS gsim_core TIMEOUT 60)
add_dependencies(test_sim_cuda_timing cuda_prog_timing_worker)
set_tests_properties(test_sim_cuda_timing PROPERTIES RUN_SERIAL ON)

# Acceptance 4: replay of the CUDA runtime's cuGetProcAddress lookups against an oracle built from
# cuda.h (the macro expansion of each name, legacy and per-thread) and cudaTypedefs.h.
set(GSIM_TSV "${GS_DATA_DIR}/cuda/cudart13-getprocaddress-lookups.tsv")
set(GSIM_TSV_NAMES "${CMAKE_CURRENT_BINARY_DIR}/sim_cuda_tsv_names.h")
add_custom_command(
  OUTPUT "${GSIM_TSV_NAMES}"
  COMMAND ${CMAKE_COMMAND} -DTSV=${GSIM_TSV} -DOUT=${GSIM_TSV_NAMES}
          -P "${CMAKE_CURRENT_SOURCE_DIR}/data/sim_cuda_tsv_names.cmake"
  DEPENDS "${GSIM_TSV}" "${CMAKE_CURRENT_SOURCE_DIR}/data/sim_cuda_tsv_names.cmake"
  COMMENT "Listing the functions of the cudart lookup table")
foreach(flavour legacy ptds)
  add_library(sim_cuda_oracle_${flavour} OBJECT sim_cuda_oracle.c "${GSIM_TSV_NAMES}")
  target_include_directories(sim_cuda_oracle_${flavour} PRIVATE "${CUDA_INCLUDE_DIR}"
                             "${CMAKE_CURRENT_BINARY_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  target_compile_definitions(sim_cuda_oracle_${flavour} PRIVATE ORACLE_TABLE=oracle_${flavour})
endforeach()
target_compile_definitions(sim_cuda_oracle_ptds PRIVATE CUDA_API_PER_THREAD_DEFAULT_STREAM)
gs_add_unit_test(test_sim_cuda_procaddr
                 SOURCES test_sim_cuda_procaddr.c $<TARGET_OBJECTS:sim_cuda_oracle_legacy>
                         $<TARGET_OBJECTS:sim_cuda_oracle_ptds>
                 LIBS ${CMAKE_DL_LIBS})
target_include_directories(test_sim_cuda_procaddr PRIVATE "${CUDA_INCLUDE_DIR}")
add_dependencies(test_sim_cuda_procaddr gsim_cuda)
gs_add_script_test(sim_cuda_exports SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/sim_cuda_exports.sh"
                   TIMEOUT 30)

# Every allocation family: exact charges, data round trips, frees.
gsim_cuda_prog(alloc_families)
gsim_cuda_test(sim_cuda_alloc_families COMMAND alloc_families DEVICES H100-80GB)

# Bad input: documented errors, no crash.
gsim_cuda_prog(errors)
gsim_cuda_test(sim_cuda_errors COMMAND errors DEVICES H100-80GB)

# Exhaustion of physical memory, exactly at the model's size (less the context's own memory).
gsim_cuda_prog(oom)
gsim_cuda_test(sim_cuda_oom_h100 COMMAND oom h100 DEVICES H100-80GB)
gsim_cuda_test(sim_cuda_oom_a100 COMMAND oom a100 DEVICES A100-40GB)

# Streams, events and callbacks in simulated time (timed: run alone).
gsim_cuda_prog(streams)
gsim_cuda_test(sim_cuda_streams COMMAND streams DEVICES H100-80GB ENV GPUSIM_TIME_SCALE=10 SERIAL)

# Contexts and devices of a two-GPU node; CUDA_VISIBLE_DEVICES.
gsim_cuda_prog(contexts)
gsim_cuda_test(sim_cuda_contexts COMMAND contexts DEVICES H100-80GB,A100-40GB)
gsim_cuda_test(sim_cuda_visible_devices COMMAND contexts visible DEVICES H100-80GB,A100-40GB
               ENV CUDA_VISIBLE_DEVICES=1)

# Modules, libraries, kernels, globals and kernel durations.
gsim_cuda_prog(modules)
gsim_cuda_test(sim_cuda_modules COMMAND modules DEVICES H100-80GB ENV GPUSIM_TIME_SCALE=10 SERIAL)

# Graphs: every node kind gpusim runs, instantiation entry points, launch in simulated time.
gsim_cuda_prog(graphs)
gsim_cuda_test(sim_cuda_graphs COMMAND graphs DEVICES H100-80GB ENV GPUSIM_TIME_SCALE=10)

# Thread safety: many threads on one context.
gsim_cuda_prog(threads)
gsim_cuda_test(sim_cuda_threads COMMAND threads DEVICES H100-80GB ENV GPUSIM_TIME_SCALE=100)

# The module image parser: unit test and fuzz target (it reads application-supplied images).
gs_add_unit_test(test_sim_cuda_image SOURCES test_sim_cuda_image.c LIBS gsim_cuda_image)
target_compile_definitions(test_sim_cuda_image PRIVATE __CUDA_API_VERSION_INTERNAL)
gs_add_fuzz_target(fuzz_sim_image SOURCES fuzz/fuzz_sim_image.c LIBS gsim_cuda_image
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/sim_image")
target_compile_definitions(fuzz_sim_image PRIVATE __CUDA_API_VERSION_INTERNAL)

# cuInit: GPUSIM_DEVICES, CUDA_VISIBLE_DEVICES, fork.
gsim_cuda_prog(init_result)
gsim_cuda_test(sim_cuda_init COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/sim_cuda_init.sh")

# Charging with the MPS pinned device memory limit (charge.c against a mock node).
gs_add_unit_test(test_sim_cuda_charge SOURCES test_sim_cuda_charge.c
                 "${CMAKE_SOURCE_DIR}/sim/cuda/charge.c" LIBS Threads::Threads)
target_compile_definitions(test_sim_cuda_charge PRIVATE __CUDA_API_VERSION_INTERNAL)
target_include_directories(test_sim_cuda_charge PRIVATE "${CMAKE_SOURCE_DIR}/sim/cuda"
                           "${CMAKE_SOURCE_DIR}/sim" "${CUDA_INCLUDE_DIR}")
