# SPDX-License-Identifier: Apache-2.0
# The real-GPU benchmark's program (bench/gpu/run.sh): built with nvcc when the toolkit has one,
# so that it is known to compile even where no GPU can run it (not in sanitizer builds).
find_program(GS_NVCC nvcc HINTS "${CUDA_INCLUDE_DIR}/../bin" /usr/local/cuda/bin)
if(GS_NVCC AND NOT GS_SANITIZE)
  set(GS_FIXED_WORK "${GS_BENCH_DIR}/gpu_fixed_work")
  add_custom_command(
    OUTPUT "${GS_FIXED_WORK}"
    COMMAND "${GS_NVCC}" -O2 -std=c++17 -gencode arch=compute_80,code=sm_80
            -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Werror
            "${CMAKE_CURRENT_SOURCE_DIR}/gpu/fixed_work.cu" -o "${GS_FIXED_WORK}"
    DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/gpu/fixed_work.cu"
    COMMENT "nvcc bench/gpu/fixed_work.cu")
  add_custom_target(gpu_fixed_work ALL DEPENDS "${GS_FIXED_WORK}")
endif()
