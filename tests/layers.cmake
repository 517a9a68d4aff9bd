# SPDX-License-Identifier: Apache-2.0
# scripts/check-layers.sh (gpushared's layers call one way): on the build's own libraries, and
# failing on planted upward includes and calls.
gs_add_script_test(layers SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/layers.sh" TIMEOUT 60 LABELS style)
# .ci/leftovers (issue 37, acceptance 3) names what gpushare may leave in /tmp, /run, /etc, /var.
gs_add_script_test(ci_leftovers SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/ci_leftovers.sh" TIMEOUT 30
                   LABELS style)
