# SPDX-License-Identifier: Apache-2.0
# Tests of gpusim's core (models, node state, timelines).
if(TARGET gsim_core)
  gs_add_unit_test(test_gsim_core SOURCES test_gsim_core.c LIBS gsim_core)
endif()
