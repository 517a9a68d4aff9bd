# SPDX-License-Identifier: Apache-2.0
# The version and the licences (issue 24): every program's --version against the one version in
# CMakeLists.txt; the licence check of the built binaries (scripts/licence-check.sh) and that it
# fails on a GPL-only library; LICENSE, packaging/copyright and THIRD-PARTY.md against the build.
gs_add_script_test(version SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/version.sh" TIMEOUT 60
                   LABELS licence)
gs_add_script_test(licence_check SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/licence_check.sh" TIMEOUT 120
                   LABELS licence)
gs_add_script_test(licence_files SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/licence_files.sh" TIMEOUT 120
                   LABELS licence)
