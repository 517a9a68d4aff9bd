# SPDX-License-Identifier: Apache-2.0
# The Helm chart deploy/helm/gpushare (issue 36): lint, rendering, the values schema's refusals,
# deploy/kubernetes against the chart (helm built by scripts/k8s/build.sh helm; skipped, 77,
# without it unless GS_REQUIRE_K8S=1 or GS_REQUIRE_ALL=1, which build it: hence the timeout);
# and, with label k8s-real, the chart installed with the images of make images on the real
# cluster of scripts/k8s/cluster.sh.
gs_add_script_test(helm_chart SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/helm/helm_chart.sh" TIMEOUT 900)
set_property(TEST helm_chart APPEND PROPERTY ENVIRONMENT "GS_HELM_BUILD=${CMAKE_BINARY_DIR}")
set_tests_properties(helm_chart PROPERTIES SKIP_RETURN_CODE 77)
gs_add_script_test(k8s_real_helm SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/k8s/real/helm.sh"
                   TIMEOUT 1200 LABELS k8s-real)
set_tests_properties(k8s_real_helm PROPERTIES SKIP_RETURN_CODE 77)
