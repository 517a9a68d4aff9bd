# SPDX-License-Identifier: Apache-2.0
# Tests of src/k8s (issue 23: the scheduler extender; the DRA device model's JSON, shared with
# issue 22) and of online placement in src/placement.
gs_add_unit_test(test_placement_online SOURCES test_placement_online.c LIBS gs_placement)
gs_add_unit_test(test_k8s_json SOURCES test_k8s_json.c LIBS gs_k8s_json)
gs_add_unit_test(test_dra SOURCES test_dra.c LIBS gs_k8s_json)
gs_add_unit_test(test_k8s_model SOURCES test_k8s_model.c LIBS gs_k8s)
