# SPDX-License-Identifier: Apache-2.0
# Shared setup of the CLI tests (issue 14): the daemon tests' setup (tests/daemon/lib.sh) and a
# second system user. Source it; set GPUSIM_DEVICES / CONFIG first.
source "$(dirname "${BASH_SOURCE[0]}")/../daemon/lib.sh"
PROGS=$GS_BUILD_DIR/tests/cuda_progs
JOB=$GS_BUILD_DIR/tests/gs-demo-job
export PATH=$GS_BUILD_DIR/sim:$PATH # gpusim's nvidia-smi

# have_user2: creates the second system user when root; false when not root (the caller then
# skips what needs it, saying so).
USER2=gpushare-test
have_user2() {
  [[ $(id -u) -eq 0 ]] || return 1
  id "$USER2" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER2"
  chmod 755 "$WORK" "$WORK/sim" 2>/dev/null || true
}

# as_user2 ARGS...: gpushare ARGS as the second user.
as_user2() {
  runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}" GPUSIM_STATE="$GPUSIM_STATE" \
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH" PATH="$PATH" "$BIN/gpushare" "$@"
}

# expect_fail STATUS MESSAGE CMD...: CMD exits with STATUS and prints exactly MESSAGE.
expect_fail() {
  local status=$1 message=$2
  shift 2
  set +e
  local out
  out=$("$@" 2>&1)
  local rc=$?
  set -e
  expect_eq "$rc" "$status" "exit status of: $*"
  expect_eq "$out" "$message" "message of: $*"
}

# uuid_of INDEX: the UUID of the node's GPU INDEX (from the daemon's status).
uuid_of() {
  gs status --json | jq -r ".gpus[$1].uuid"
}

# fit TEXT WIDTH: TEXT as a table column of WIDTH shows it (cut with "~").
fit() {
  if [[ ${#1} -le $2 ]]; then echo "$1"; else echo "${1:0:$(($2 - 1))}~"; fi
}
