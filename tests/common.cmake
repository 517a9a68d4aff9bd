# SPDX-License-Identifier: Apache-2.0
# Tests of src/common.
gs_add_unit_test(test_quantity SOURCES test_quantity.c LIBS gs_common)
gs_add_unit_test(test_error SOURCES test_error.c LIBS gs_common)
gs_add_fuzz_target(fuzz_quantity SOURCES fuzz/fuzz_quantity.c LIBS gs_common
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/quantity")
