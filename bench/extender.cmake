# SPDX-License-Identifier: Apache-2.0
# Benchmark of the scheduler extender (issue 23): prioritize latency on the 1,523-node cluster.
add_executable(bench_extender "${CMAKE_CURRENT_SOURCE_DIR}/bench_extender.c")
target_link_libraries(bench_extender PRIVATE gs_k8s_server)
set_target_properties(bench_extender PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_BENCH_DIR}")
