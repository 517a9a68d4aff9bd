# SPDX-License-Identifier: Apache-2.0
# make install into a temporary root from a build of its own, and the installed tree at work
# (issue 9). Serial: it builds the whole project once more.
if(TARGET gsim_cuda AND TARGET gpushare_shim)
  gs_add_script_test(install SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/install.sh" TIMEOUT 900
                     LABELS install)
  set_tests_properties(install PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL ON)
endif()
