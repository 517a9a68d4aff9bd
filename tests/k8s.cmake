# SPDX-License-Identifier: Apache-2.0
# Tests of src/k8s (issue 23: the scheduler extender; the DRA device model's JSON, shared with
# issue 22) and of online placement in src/placement.
gs_add_unit_test(test_placement_online SOURCES test_placement_online.c LIBS gs_placement)
gs_add_unit_test(test_k8s_json SOURCES test_k8s_json.c LIBS gs_k8s_json)
gs_add_unit_test(test_dra SOURCES test_dra.c LIBS gs_k8s_json)
gs_add_unit_test(test_k8s_model SOURCES test_k8s_model.c LIBS gs_k8s)
# libFuzzer targets of what the extender reads from outside: kube-scheduler's ExtenderArgs, and
# the API server's objects (and the quantities in them).
gs_add_fuzz_target(fuzz_extender_args SOURCES fuzz/fuzz_extender_args.c LIBS gs_k8s_server
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/extender_args")
target_include_directories(fuzz_extender_args PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/fuzz")
gs_add_fuzz_target(fuzz_k8s_objects SOURCES fuzz/fuzz_k8s_objects.c LIBS gs_k8s_server
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/k8s_objects")
target_include_directories(fuzz_k8s_objects PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/fuzz")
# End to end: the extender process, the stand-in API server and kube-scheduler's recorded
# requests (curl), failures of the API server included.
gs_add_script_test(test_extender_e2e SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/test_extender_e2e.sh"
                   TIMEOUT 180)
# The stand-in API server itself (shared with the DRA plugin's tests, issue 22).
gs_add_script_test(test_k8s_apiserver SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/test_k8s_apiserver.sh"
                   TIMEOUT 60)
# The online replay of the default openb trace, seed 42 (about 25 s).
gs_add_script_test(test_extender_replay SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/test_extender_replay.sh"
                   TIMEOUT 900)
# deploy/kubernetes: parses, read-only RBAC of the extender, the scheduler settings it needs.
add_test(NAME test_k8s_manifests COMMAND python3 "${CMAKE_CURRENT_SOURCE_DIR}/k8s/check_manifests.py"
         "${CMAKE_SOURCE_DIR}/deploy/kubernetes")
set_tests_properties(test_k8s_manifests PROPERTIES TIMEOUT 30 LABELS "integration")
gs_add_unit_test(test_k8s_http SOURCES test_k8s_http.c LIBS gs_k8s_server)
# The extender's server against idle, slow, pipelining and smuggling peers (issue 34, item 5).
gs_add_unit_test(test_extender_server SOURCES test_extender_server.c http_peer.c LIBS gs_k8s_server
                 TIMEOUT 120)
# ... and the HTTP it speaks (requests to the extender, responses from the API server, chunks).
gs_add_fuzz_target(fuzz_khttp SOURCES fuzz/fuzz_khttp.c LIBS gs_k8s_server
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/khttp")

# The DRA kubelet plugin, gpushare-k8s (issue 22): gpushared on gpusim, the stand-in API server,
# the plugin and the stand-in kubelet (tests/k8s/kubelet.py: python3-grpcio with messages that
# protoc generates from its own copy of the kubelet's protocol).
find_program(GS_PYTHON_GRPC python3 PATHS /usr/bin NO_DEFAULT_PATH)
function(gs_add_dra_test name)
  gs_add_script_test(${name} SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/k8s/${name}.sh" ${ARGN})
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT "GS_PYTHON_GRPC=${GS_PYTHON_GRPC}")
endfunction()
gs_add_unit_test(test_dra_plugin SOURCES test_dra_plugin.c LIBS gs_k8s_plugin)
# libFuzzer target of what the plugin reads from outside: claims, gpushared's status, GpuConfig,
# its records, kubeconfigs and the kubelet's messages.
gs_add_fuzz_target(fuzz_dra_plugin SOURCES fuzz/fuzz_dra_plugin.c LIBS gs_k8s_plugin
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/dra_plugin")
gs_add_dra_test(test_dra_slices TIMEOUT 120 LABELS k8s)
gs_add_dra_test(test_dra_prepare TIMEOUT 180 LABELS k8s)
gs_add_dra_test(test_dra_kubeconfig TIMEOUT 60 LABELS k8s)
gs_add_dra_test(test_dra_order TIMEOUT 60 LABELS k8s)
# Hostile claims (issue 34, acceptance 6): path characters, other nodes, huge counts, odd GpuConfig.
gs_add_dra_test(test_dra_hostile TIMEOUT 180 LABELS "k8s;hostile")
# The same with real containers (rootful podman + crun, tests/containers/lib.sh): skipped (77)
# without them unless GS_REQUIRE_ALL=1.
if(TARGET gs-ct-fill)
  gs_add_dra_test(test_dra_containers TIMEOUT 240 LABELS "k8s;containers")
  set_tests_properties(test_dra_containers PROPERTIES SKIP_RETURN_CODE 77)
endif()

# The real Kubernetes (issue 35): components built from their Go modules by scripts/k8s/build.sh
# into a cache outside the tree, a single-node cluster of scripts/k8s/cluster.sh. Label k8s-real:
# `make test` leaves them out, `make test-k8s` builds (or reuses) the components and runs them.
# Skipped (77) when the cache lacks the components, unless GS_REQUIRE_K8S=1 (then built).
gs_add_script_test(k8s_real_smoke SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/k8s/real/smoke.sh"
                   TIMEOUT 900 LABELS k8s-real)
set_tests_properties(k8s_real_smoke PROPERTIES SKIP_RETURN_CODE 77)

# The acceptance tests of issue 35 share one cluster, the fixture k8s_real (up.sh starts it, with
# gpushared on gpusim and gpushare-k8s; down.sh stops it and checks that nothing is left): a
# start and its images cost 15-20 s, and the tests need the same node. RESOURCE_LOCK: one run of
# them at a time in a build tree (the cluster's directory is the build tree's k8s-real/).
gs_add_script_test(k8s_real_up SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/k8s/real/up.sh"
                   TIMEOUT 300 LABELS k8s-real)
gs_add_script_test(k8s_real_down SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/k8s/real/down.sh"
                   TIMEOUT 120 LABELS k8s-real)
set_tests_properties(k8s_real_up PROPERTIES FIXTURES_SETUP k8s_real SKIP_RETURN_CODE 77
                                            RESOURCE_LOCK k8s_real)
set_tests_properties(k8s_real_down PROPERTIES FIXTURES_CLEANUP k8s_real RESOURCE_LOCK k8s_real)
foreach(t exact lifecycle extender)
  gs_add_script_test(k8s_real_${t} SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/k8s/real/${t}.sh"
                     TIMEOUT 300 LABELS k8s-real)
  set_tests_properties(k8s_real_${t} PROPERTIES FIXTURES_REQUIRED k8s_real RESOURCE_LOCK k8s_real
                                               SKIP_RETURN_CODE 77)
endforeach()
