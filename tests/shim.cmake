# SPDX-License-Identifier: Apache-2.0
# Tests of libgpushare.so on gpusim: driver-API programs built like a user's (cuda.h + NVIDIA's
# stub libcuda) and run through tests/shim/run_sim.sh on a fresh simulated node.
if(TARGET gsim_cuda AND TARGET gpushare_shim)
  set(GS_RUN_SIM "${CMAKE_CURRENT_SOURCE_DIR}/shim/run_sim.sh")

  # gs_add_cuda_program(NAME SOURCES... [LIBS ...]): a driver-API program linked with the stub.
  function(gs_add_cuda_program name)
    cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
    add_executable(${name} ${P_SOURCES})
    gs_link_cuda(${name})
    target_link_libraries(${name} PRIVATE ${P_LIBS})
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
  gs_add_sim_test(shim_families test_shim_families ENV GPUSHARE_MEMORY_LIMIT=2G)
  gs_add_cuda_program(test_shim_footprint SOURCES shim/test_shim_footprint.c LIBS PkgConfig::CMOCKA)
  gs_add_sim_test(shim_footprint test_shim_footprint ENV GPUSHARE_MEMORY_LIMIT=4G)

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

  # Compute shares: compute_worker processes in leases, checked by compute_check against gpusim's
  # per-process device time.
  gs_add_cuda_program(compute_worker SOURCES shim/compute_worker.c LIBS Threads::Threads)
  target_include_directories(compute_worker PRIVATE "${CMAKE_SOURCE_DIR}/bench/gpu")
  add_executable(compute_check shim/compute_check.c)
  target_link_libraries(compute_check PRIVATE gsim_core gs_region gs_client)
  set_target_properties(compute_check PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_executable(compute_hostile shim/compute_hostile.c)
  target_link_libraries(compute_hostile PRIVATE gs_region)
  set_target_properties(compute_hostile PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_dependencies(compute_check compute_worker compute_hostile gpushared gpushare)
  add_executable(smutil_probe shim/smutil_probe.c)
  target_link_libraries(smutil_probe PRIVATE gs_common ${CMAKE_DL_LIBS})
  set_target_properties(smutil_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  # gpusim's time model against the H100's figures (time-slicing, MPS, NVML's samples).
  add_test(NAME sim_calibration COMMAND bash "${GS_RUN_SIM}" --
           bash "${CMAKE_CURRENT_SOURCE_DIR}/shim/sim_calibration.sh")
  set_tests_properties(sim_calibration PROPERTIES TIMEOUT 120 ENVIRONMENT "${GS_TEST_ENV}"
                       LABELS "gpusim" RUN_SERIAL TRUE)

  # gs_add_compute_test(NAME ARGS...): compute_check ARGS on a fresh node through its own
  # gpushared (one GPU, 4 ms kernels unless said, 3 s windows after a 1 s warm-up;
  # bench/compute.sh runs the same cases over 5 s windows). Serial: they measure time.
  function(gs_add_compute_test name)
    add_test(NAME ${name} COMMAND bash "${GS_RUN_SIM}" --daemon -- "${GS_TEST_DIR}/compute_check"
             ${ARGN})
    set_tests_properties(${name} PROPERTIES TIMEOUT 60 ENVIRONMENT "${GS_TEST_ENV}"
                         LABELS "shim;compute" RUN_SERIAL TRUE)
  endfunction()
  # Acceptance 1: guarantees.
  # The GPU busy at least 97 % of the time: hand-overs cost what they cost on the H100 (1-2 %;
  # issue 20: gpusim's cost 4-6 % before its calibration). data/gpu-facts/gpusim-vs-h100.md.
  gs_add_compute_test(compute_guarantee_30_70 a:g=30 b:g=70 [1,4]:a=30~3 [1,4]:b=70~3
                      [1,4]:wait:a<=200 [1,4]:wait:b<=200 [1,4]:total>=97)
  gs_add_compute_test(compute_guarantee_10_90 a:g=10 b:g=90 [1,4]:a=10~2 [1,4]:b=90~3
                      [1,4]:wait:a<=200)
  gs_add_compute_test(compute_guarantee_four a:g=10 b:g=20 c:g=30 d:g=40 [1,4]:a=10~3
                      [1,4]:b=20~3 [1,4]:c=30~3 [1,4]:d=40~3 [1,4]:wait:a<=200)
  # Acceptance 2: alone, capped, beside best effort.
  gs_add_compute_test(compute_guarantee_alone a:g=30 [1,4]:a>=90)
  gs_add_compute_test(compute_cap_alone a:c=30 [1,4]:a=30~3)
  gs_add_compute_test(compute_best_effort a:g=30 b [1,4]:a>=27 [1,4]:b=70~3)
  # Acceptance 3: a co-tenant stops and comes back; waits at shares of 5 %.
  gs_add_compute_test(compute_stop_return a:g=30 b:g=70 @2:pause:b @4:resume:b [3,4]:a>=90
                      [5,7]:a=30~3 [5,7]:b=70~3 [1,7]:wait:a<=200 [4.2,7]:wait:b<=200)
  # The 85 % lease pays the round's three extra hand-overs (about 1 % each on gpusim: 81.7-82.2
  # % seen; the pair tests' 3 points do not hold beside three 5 % leases): at least 80.
  gs_add_compute_test(compute_waits_5 a:g=5,kernel=2ms b:g=5,kernel=2ms c:g=5,kernel=2ms
                      d:g=85,kernel=2ms [1,4]:a=5~2 [1,4]:b=5~2 [1,4]:c=5~2 [1,4]:d>=80
                      [1,4]:wait:a<=200 [1,4]:wait:b<=200 [1,4]:wait:c<=200 [1,4]:wait:d<=200)
  # Acceptance 4: processes, threads and streams, synchronization after each kernel, graphs,
  # kernels longer than a slot.
  gs_add_compute_test(compute_processes a:g=30,procs=3 b:g=70,procs=2 [1,4]:a=30~3
                      [1,4]:b=70~3)
  gs_add_compute_test(compute_threads_streams a:g=30,threads=4,streams=2
                      b:g=70,threads=3,streams=3 [1,4]:a=30~3 [1,4]:b=70~3)
  gs_add_compute_test(compute_sync_each a:g=30,batch=1 b:g=70,batch=1 [1,4]:a%=30~3
                      [1,4]:b%=70~3 [1,4]:total>=90)
  gs_add_compute_test(compute_graphs a:g=30,graph=1 b:g=70,graph=1 [1,4]:a=30~3 [1,4]:b=70~3)
  # 150 ms kernels are paid back over the next rounds: a window's end can hold one kernel of a
  # not yet paid back, and b's own hand-overs lose a little more (RUNS=20 alone over 7 s: b
  # 66.3-70.1, a +2.1 and 1.6 points idle in the worst run). Over 12 s one unpaid kernel is 1.25
  # points, so that is this case's window.
  gs_add_compute_test(compute_long_kernels a:g=30,kernel=150ms,batch=1 b:g=70 [1,13]:a=30~3
                      [1,13]:b=70~3)

  # Issue 20: a lease of another user whose process abuses its GPU's scheduler (stalls in its
  # slots, churns, floods, sends garbage, never reads, asks for other leases): with a guarantee
  # of its own (30) the others keep theirs and the GPU is not stalled beyond its share; as best
  # effort beside 30/70, the split holds within 2 points.
  gs_add_compute_test(compute_hostile_guarantee a:g=30 b:g=40 h:g=30,hostile=1 [1,6]:a>=28
                      [1,6]:b>=38 [1,6]:total>=68 [1,6]:wait:a<=300)
  gs_add_compute_test(compute_hostile_best_effort a:g=30 b:g=70 h:hostile=1 [1,6]:a=30~2
                      [1,6]:b=70~2 [1,6]:wait:a<=300)
  # Issue 34: another user's lease (10 % or 50 %) churns on 16 or 256 channels (each grant
  # answered at once with a first launch and a yield still wanting, never a launch): a 50 % lease
  # keeps its share (the churner is charged the shortest slot a grant, and a lease has at most
  # compute_members_per_lease channels). bench/hostile.sh has 1-256 channels and the daemon's CPU.
  gs_add_compute_test(compute_hostile_churn_10_16 v:g=50 h:g=10,hostile=2,chans=16 [1,6]:v>=48)
  gs_add_compute_test(compute_hostile_churn_10_256 v:g=50 h:g=10,hostile=2,chans=256 [1,6]:v>=48)
  gs_add_compute_test(compute_hostile_churn_50_16 v:g=50 h:g=50,hostile=2,chans=16 [1,6]:v>=48)
  gs_add_compute_test(compute_hostile_churn_50_256 v:g=50 h:g=50,hostile=2,chans=256 [1,6]:v>=48)
  # Issue 34: another user holds every channel and lease gpushared lets it hold on the GPU; two
  # --compute 50 jobs still start and get their shares.
  gs_add_compute_test(compute_hostile_hoard h:hostile=3 a:g=50 b:g=50 [1,6]:a=50~3 [1,6]:b=50~3)
  # Issue 20: two leases whose processes live in IPC, PID, mount and user namespaces of their own
  # (unshare): the split holds, and gpushared lists each process under its host pid and lease.
  gs_add_compute_test(compute_namespaces a:g=30,ns=1 b:g=70,ns=1,procs=2 [1,4]:a=30~3
                      [1,4]:b=70~3)
  # The framework-like workload (cuLaunchKernelEx, three streams, 20 us - 10 ms kernels).
  gs_add_compute_test(compute_framework a:g=30,framework=1 b:g=70,framework=1 [1,4]:a%=30~3
                      [1,4]:b%=70~3 [1,4]:a=30~3 [1,4]:b=70~3)

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
