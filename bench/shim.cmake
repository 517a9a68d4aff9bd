# SPDX-License-Identifier: Apache-2.0
# The shim's benchmark (bench/shim.sh runs it): a driver-API program like a user's.
if(TARGET gsim_cuda AND TARGET gpushare_shim)
  add_executable(bench_shim bench_shim.c)
  gs_link_cuda(bench_shim)
  target_link_libraries(bench_shim PRIVATE gs_region)
  set_target_properties(bench_shim PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_BENCH_DIR}")
endif()

# Compute shares' launch-hook cost (bench/compute.sh runs it).
if(TARGET gsim_cuda AND TARGET gpushare_shim)
  add_executable(bench_compute bench_compute.c)
  gs_link_cuda(bench_compute)
  set_target_properties(bench_compute PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_BENCH_DIR}")
endif()

# The compute scheduler's hand-over (bench/handover.sh runs it).
add_executable(bench_handover bench_handover.c)
target_link_libraries(bench_handover PRIVATE gs_region Threads::Threads)
set_target_properties(bench_handover PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_BENCH_DIR}")
