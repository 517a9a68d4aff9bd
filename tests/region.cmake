# Tests of src/region (the lease accounting region).
gs_add_unit_test(test_region SOURCES test_region.c LIBS gs_region TIMEOUT 120)
gs_add_unit_test(test_sched SOURCES test_sched.c LIBS gs_region TIMEOUT 120)
target_include_directories(test_sched PRIVATE "${CMAKE_SOURCE_DIR}/src/region")
