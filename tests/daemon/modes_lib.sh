# SPDX-License-Identifier: Apache-2.0
# Helpers of the GPU mode tests (modes_*.sh), on top of lib.sh (source lib.sh first).

# The mps settings of gpushare.conf for gpusim's nvidia-cuda-mps-control.
MPS_DAEMON_CONFIG="[daemon]
runtime_dir = $WORK/run
mps_control = $GS_BUILD_DIR/sim/nvidia-cuda-mps-control"

# gpu_field GPU JQ: a value of GPU's status object (JQ applied to it).
gpu_field() {
  gs status --json | jq -r ".gpus[$1] | $2"
}

# gone PID: the process exited (a zombie left under an init that does not reap counts as gone).
gone() {
  [[ ! -e /proc/$1 ]] || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]
}

# newest_lease: the id of the most recent lease the caller sees.
newest_lease() {
  gs leases --json | jq '[.[].id] | max'
}

# hold ARGS...: a lease (gpushare run ARGS -- sleep) that holds until its job is killed; sets
# $client and $lease.
hold() {
  local before
  before=$(lease_count)
  bg_gs run "$@" -- sleep 120
  client=$!
  wait_eq 5 $((before + 1)) lease_count
  lease=$(newest_lease)
}

# end_lease CLIENT: its job exits; the lease ends with it.
end_lease() {
  local before
  before=$(lease_count)
  kill -TERM "$(job_of "$1")"
  wait "$1" || true
  wait_eq 5 $((before - 1)) lease_count
}

# inst GPU LEASE FIELD: a field of the MIG instance that LEASE holds on GPU.
inst() {
  gs status --json | jq -r --argjson id "$2" ".gpus[$1].mig.instances[] | select(.lease == \$id) | .$3"
}

# expect_refused STATUS LINE ARGS...: gpushare run ARGS exits with STATUS and prints exactly LINE.
expect_refused() {
  local want_rc=$1 want=$2 rc out
  shift 2
  set +e
  out=$(gs run "$@" -- true 2>&1)
  rc=$?
  set -e
  expect_eq "$rc" "$want_rc" "exit status of gpushare run $*"
  expect_eq "$out" "$want" "message of gpushare run $*"
}
