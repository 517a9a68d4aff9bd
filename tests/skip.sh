# SPDX-License-Identifier: Apache-2.0
# The one way a test script says it cannot run here. Source it; call gs_skip REASON.
#   - normally: prints "skipped: REASON" and exits 77 (ctest's SKIP_RETURN_CODE: skipped);
#   - under GS_REQUIRE_ALL=1 (.ci/run's main stage): prints "FAIL: required, but skipped: REASON"
#     and exits 1, so that a missing package or step is a failure CI sees, not a quiet skip.
#     GS_REQUIRE_CONTAINERS=1 (older name) does the same.
# A script that has run part of its checks and must skip the rest calls gs_skip too: a partial
# run is a skip, never a pass.
gs_skip() {
  if [[ ${GS_REQUIRE_ALL:-0} == 1 || ${GS_REQUIRE_CONTAINERS:-0} == 1 ]]; then
    echo "FAIL: required, but skipped: $* (GS_REQUIRE_ALL=1)" >&2
    exit 1
  fi
  echo "skipped: $*"
  exit 77
}
