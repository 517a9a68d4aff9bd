# SPDX-License-Identifier: Apache-2.0
# Containers (issue 21): keyed leases as CDI devices, run by real podman + crun (rootful) on
# gpusim. The podman tests need root, podman and crun: skipped (77) without them, unless
# GS_REQUIRE_ALL=1 (.ci/run; tests/skip.sh) makes that a failure. Each runs in a private mount namespace
# of its own (tests/containers/lib.sh says why).
if(TARGET gsim_cuda AND TARGET gpushare_shim)
  # Programs of the containers' image: built like a user's driver-API programs.
  foreach(prog fill)
    add_executable(gs-ct-${prog} containers/${prog}.c)
    gs_link_cuda(gs-ct-${prog})
    set_target_properties(gs-ct-${prog} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  endforeach()
  add_executable(gs-sim-devtime containers/devtime.c)
  target_link_libraries(gs-sim-devtime PRIVATE gsim_core)
  set_target_properties(gs-sim-devtime PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${GS_TEST_DIR}")
  gs_add_script_test(daemon_keyed SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/daemon/keyed.sh"
                     TIMEOUT 90 LABELS "daemon;containers")
  set_tests_properties(daemon_keyed PROPERTIES SKIP_RETURN_CODE 77)
  foreach(script shares lifecycle stolen)
    gs_add_script_test(containers_${script}
                       SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/containers/${script}.sh"
                       TIMEOUT 180 LABELS containers)
    set_tests_properties(containers_${script} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endif()
