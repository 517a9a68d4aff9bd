# SPDX-License-Identifier: Apache-2.0
# Tests of src/placement and `gpushare plan` (issue 6).
gs_add_unit_test(test_placement SOURCES test_placement.c LIBS gs_placement)
target_include_directories(test_placement PRIVATE "${CMAKE_SOURCE_DIR}/src/placement")
gs_add_unit_test(test_placement_csv SOURCES test_placement_csv.c LIBS gs_placement)
# Replays the nine openb traces (about 250 replays, 40 s of CPU). Under sanitizers (GS_SANITIZE in
# the environment, as `make asan` sets it) it checks three traces on seeds 42-46 only (about 60
# replays); GS_REPLAY=full or GS_REPLAY=quick chooses explicitly (tests/test_placement_replay.c).
gs_add_unit_test(test_placement_replay SOURCES test_placement_replay.c LIBS gs_placement
                 TIMEOUT 900 LABELS integration)
gs_add_script_test(test_plan_cli SCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/test_plan_cli.sh" TIMEOUT 120)
gs_add_fuzz_target(fuzz_trace SOURCES fuzz/fuzz_trace.c LIBS gs_placement
                   CORPUS "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/trace")
