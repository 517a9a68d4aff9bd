# SPDX-License-Identifier: Apache-2.0
# Test registration helpers: every test binary and script is registered with ctest and a timeout.

set(GS_TEST_DIR "${CMAKE_BINARY_DIR}/tests")
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)

# The environment every test runs in: where the build, the sources and the shared data are.
set(GS_TEST_ENV
    "GS_BUILD_DIR=${CMAKE_BINARY_DIR}"
    "GS_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    "GS_DATA_DIR=${GS_DATA_DIR}"
    "CUDA_INCLUDE_DIR=${CUDA_INCLUDE_DIR}"
    "GS_SANITIZE=${GS_SANITIZE}")

# gs_add_unit_test(NAME SOURCES f.c... [LIBS l...] [TIMEOUT s] [LABELS l...])
# Builds build/tests/NAME from the sources linked with cmocka and registers it.
function(gs_add_unit_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE PkgConfig::CMOCKA ${T_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${GS_TEST_ENV}"
                       LABELS "unit;${T_LABELS}")
endfunction()

# gs_add_script_test(NAME SCRIPT path [TIMEOUT s] [LABELS l...] [DEPENDS targets...])
# Registers a shell script run with bash; it finds the build through GS_BUILD_DIR.
function(gs_add_script_test name)
  cmake_parse_arguments(T "" "SCRIPT;TIMEOUT" "LABELS;DEPENDS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${name} COMMAND bash "${T_SCRIPT}")
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${GS_TEST_ENV}"
                       LABELS "integration;${T_LABELS}")
endfunction()

# gs_add_fuzz_target(NAME SOURCES f.c... LIBS l... CORPUS dir)
# The same fuzz entry point is built twice: as a ctest that replays the seed corpus (every build),
# and, with clang, as a libFuzzer binary NAME-libfuzzer (make fuzz).
function(gs_add_fuzz_target name)
  cmake_parse_arguments(T "" "CORPUS" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES} "${CMAKE_SOURCE_DIR}/tests/fuzz/replay_main.c")
  target_link_libraries(${name} PRIVATE ${T_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  add_test(NAME ${name} COMMAND ${name} "${T_CORPUS}")
  set_tests_properties(${name} PROPERTIES TIMEOUT 60 ENVIRONMENT "${GS_TEST_ENV}" LABELS "fuzz")
  if(GS_LIBFUZZER)
    add_executable(${name}-libfuzzer ${T_SOURCES})
    target_compile_options(${name}-libfuzzer PRIVATE -fsanitize=fuzzer)
    target_link_options(${name}-libfuzzer PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name}-libfuzzer PRIVATE ${T_LIBS})
    set_target_properties(${name}-libfuzzer PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  endif()
endfunction()
