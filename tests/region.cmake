# Tests of src/region (the lease accounting region).
gs_add_unit_test(test_region SOURCES test_region.c LIBS gs_region TIMEOUT 120)
