# SPDX-License-Identifier: Apache-2.0
# Benchmark of gpushared's lease path (bench/leases.sh runs it against a private daemon).
add_executable(bench_leases "${CMAKE_CURRENT_SOURCE_DIR}/bench_leases.c")
target_link_libraries(bench_leases PRIVATE gs_client gs_common Threads::Threads)
set_target_properties(bench_leases PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_BENCH_DIR}")
# Another user's status latency under a hostile user's load (bench/hostile.sh).
add_executable(bench_status "${CMAKE_CURRENT_SOURCE_DIR}/bench_status.c")
set_target_properties(bench_status PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_BENCH_DIR}")
