# SPDX-License-Identifier: Apache-2.0
# Tests of src/region (the lease accounting region).
gs_add_unit_test(test_region SOURCES test_region.c LIBS gs_region TIMEOUT 120)
# The region's bytes as a lease's processes may write them: the daemon's and a shim's use of it.
gs_add_fuzz_target(fuzz_region SOURCES fuzz/fuzz_region.c LIBS gs_region
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/region")
foreach(target fuzz_region fuzz_region-libfuzzer)
  if(TARGET ${target})
    target_include_directories(${target} PRIVATE "${CMAKE_SOURCE_DIR}/src/region")
    target_compile_options(${target} PRIVATE -mcx16)
  endif()
endforeach()
gs_add_unit_test(test_region_sealed SOURCES test_region_sealed.c LIBS gs_region)
target_include_directories(test_region_sealed PRIVATE "${CMAKE_SOURCE_DIR}/src/region")
target_compile_options(test_region_sealed PRIVATE -mcx16)
gs_add_unit_test(test_sched SOURCES test_sched.c LIBS gs_region TIMEOUT 120)
target_include_directories(test_sched PRIVATE "${CMAKE_SOURCE_DIR}/src/region")
# gpushared's scheduler server and the member side of its channel, in one process.
gs_add_unit_test(test_sched_server SOURCES test_sched_server.c LIBS gs_region TIMEOUT 120)
