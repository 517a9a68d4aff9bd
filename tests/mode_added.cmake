# SPDX-License-Identifier: Apache-2.0
# A new GPU mode is one new file and one line of the table of modes (docs/modes.md, "A new
# mode"): the client and gpushared's core and gpu layers are built again from their own source
# lists with the line of tests/modes/demo.def appended to a copy of include/gpushare/gpu_modes.def
# (found first on the include path) and the one file tests/modes/mode_demo.c; test_mode_added
# runs on them.
set(GS_DEMO_INCLUDE "${CMAKE_CURRENT_BINARY_DIR}/mode_demo/include")
set(GS_MODES_TABLE "${CMAKE_SOURCE_DIR}/include/gpushare/gpu_modes.def")
set(GS_DEMO_LINE "${CMAKE_CURRENT_SOURCE_DIR}/modes/demo.def")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${GS_MODES_TABLE}" "${GS_DEMO_LINE}")
file(READ "${GS_MODES_TABLE}" gs_modes_table)
file(READ "${GS_DEMO_LINE}" gs_demo_line)
file(CONFIGURE OUTPUT "${GS_DEMO_INCLUDE}/gpushare/gpu_modes.def" CONTENT "${gs_modes_table}${gs_demo_line}")

# The sources of a target, as absolute paths.
function(gs_sources_of target out)
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(paths "")
  foreach(source IN LISTS sources)
    if(IS_ABSOLUTE "${source}")
      list(APPEND paths "${source}")
    else()
      list(APPEND paths "${dir}/${source}")
    endif()
  endforeach()
  set(${out} "${paths}" PARENT_SCOPE)
endfunction()

# The imported targets of pkg-config are their directory's: found again here.
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
pkg_check_modules(INIH REQUIRED IMPORTED_TARGET inih)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
gs_sources_of(gs_client client_sources)
gs_sources_of(gs_daemon_core core_sources)
gs_sources_of(gs_daemon_gpu gpu_sources)
add_library(gs_client_demo STATIC ${client_sources})
target_include_directories(gs_client_demo BEFORE PUBLIC "${GS_DEMO_INCLUDE}")
target_link_libraries(gs_client_demo PUBLIC gs_common PkgConfig::JANSSON)
add_library(gs_daemon_core_demo STATIC ${core_sources})
target_include_directories(gs_daemon_core_demo BEFORE PUBLIC "${GS_DEMO_INCLUDE}"
                           PUBLIC "${CMAKE_SOURCE_DIR}/src/daemon")
target_compile_definitions(gs_daemon_core_demo PUBLIC GS_VERSION="${PROJECT_VERSION}"
                           GS_CONFIG_PATH="${GS_CONFIG_PATH}" GS_STATE_DIR="${GS_STATE_DIR}")
target_link_libraries(gs_daemon_core_demo PUBLIC gs_client_demo gs_region gs_placement gs_common
                      PkgConfig::INIH PkgConfig::SQLITE3 Threads::Threads)
add_library(gs_daemon_gpu_demo STATIC ${gpu_sources} "${CMAKE_CURRENT_SOURCE_DIR}/modes/mode_demo.c")
target_include_directories(gs_daemon_gpu_demo BEFORE PUBLIC "${GS_DEMO_INCLUDE}")
target_link_libraries(gs_daemon_gpu_demo PUBLIC gs_daemon_core_demo gs_nvml ${CMAKE_DL_LIBS})
target_include_directories(gs_daemon_gpu_demo PRIVATE "${CUDA_INCLUDE_DIR}") # gpu/checkpoint.c
gs_add_unit_test(test_mode_added SOURCES test_mode_added.c LIBS gs_daemon_gpu_demo)
target_include_directories(test_mode_added BEFORE PRIVATE "${GS_DEMO_INCLUDE}")
