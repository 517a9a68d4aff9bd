# SPDX-License-Identifier: Apache-2.0
# NVIDIA's CUDA 13 headers and the libcuda.so that CUDA programs of the tests link against.
# In:  CUDA_INCLUDE_DIR (cache): a directory with cuda.h; empty, scripts/cuda.sh finds one
#      (CUDA_HOME, /usr/local/cuda, the toolkit's Debian packages) or fetches NVIDIA's headers
#      from the nvidia-cuda-runtime wheel into a cache outside the tree.
# Out: GS_CUDA_INCLUDE_DIR, the directory every target includes (also written back as
#      CUDA_INCLUDE_DIR for the tests' environment); GS_CUDA_STUB_DIR, a directory with a
#      libcuda.so to link with -lcuda: the toolkit's stub when there is a toolkit, else
#      build/cuda-stubs/libcuda.so, a link to gpusim's libcuda.so.1. Either way a program's
#      DT_NEEDED is libcuda.so.1 and it carries no RPATH to it, so the same binary runs on
#      gpusim (LD_LIBRARY_PATH=build/sim) and on a real driver. GS_CUDA_STUB_FROM says which.
if(CUDA_INCLUDE_DIR)
  if(NOT EXISTS "${CUDA_INCLUDE_DIR}/cuda.h")
    message(FATAL_ERROR "cuda.h not found in ${CUDA_INCLUDE_DIR}: set -DCUDA_INCLUDE_DIR to a directory "
                        "with NVIDIA's cuda.h, or leave it empty for scripts/cuda.sh to find or fetch one")
  endif()
  set(GS_CUDA_INCLUDE_DIR "${CUDA_INCLUDE_DIR}")
else()
  execute_process(COMMAND bash "${CMAKE_SOURCE_DIR}/scripts/cuda.sh"
                  OUTPUT_VARIABLE gs_cuda_root RESULT_VARIABLE gs_cuda_rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT gs_cuda_rc EQUAL 0)
    message(FATAL_ERROR "cuda.h not found (scripts/cuda.sh's line above says how to provide it)")
  endif()
  set(GS_CUDA_INCLUDE_DIR "${gs_cuda_root}/include")
endif()
get_filename_component(gs_cuda_root "${GS_CUDA_INCLUDE_DIR}" DIRECTORY)

set(GS_CUDA_STUB_DIR "")
foreach(dir "${gs_cuda_root}/lib64/stubs" "${gs_cuda_root}/lib/x86_64-linux-gnu/stubs"
            "${gs_cuda_root}/targets/x86_64-linux/lib/stubs")
  if(NOT GS_CUDA_STUB_DIR AND EXISTS "${dir}/libcuda.so")
    set(GS_CUDA_STUB_DIR "${dir}")
    set(GS_CUDA_STUB_FROM "nvidia")
  endif()
endforeach()
if(NOT GS_CUDA_STUB_DIR)
  set(GS_CUDA_STUB_DIR "${CMAKE_BINARY_DIR}/cuda-stubs")
  set(GS_CUDA_STUB_FROM "gpusim")
  file(MAKE_DIRECTORY "${GS_CUDA_STUB_DIR}")
  file(CREATE_LINK "../sim/libcuda.so.1" "${GS_CUDA_STUB_DIR}/libcuda.so" SYMBOLIC)
endif()
# The name the rest of the build and the tests' environment use.
set(CUDA_INCLUDE_DIR "${GS_CUDA_INCLUDE_DIR}")

# gs_link_cuda(TARGET): TARGET is a CUDA driver-API program built as a user builds one: NVIDIA's
# cuda.h, -lcuda from GS_CUDA_STUB_DIR (built first when that is gpusim's), no RPATH to it.
function(gs_link_cuda target)
  target_include_directories(${target} PRIVATE "${GS_CUDA_INCLUDE_DIR}")
  target_link_options(${target} PRIVATE "-L${GS_CUDA_STUB_DIR}")
  target_link_libraries(${target} PRIVATE -lcuda)
  if(GS_CUDA_STUB_FROM STREQUAL "gpusim")
    add_dependencies(${target} gsim_cuda)
  endif()
endfunction()
