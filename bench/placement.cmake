# SPDX-License-Identifier: Apache-2.0
# Benchmarks of src/placement: trace replay time per policy and the cost of one decision.
add_executable(bench_placement "${CMAKE_CURRENT_SOURCE_DIR}/bench_placement.c")
target_link_libraries(bench_placement PRIVATE gs_placement)
set_target_properties(bench_placement PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_BENCH_DIR}")
