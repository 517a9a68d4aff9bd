# SPDX-License-Identifier: Apache-2.0
# scripts/check-layers.sh (gpushared's layers call one way): on the build's own libraries, and
# failing on planted upward includes and calls.
gs_add_script_test(layers SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/layers.sh" TIMEOUT 60 LABELS style)
