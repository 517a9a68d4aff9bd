#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpusim's nvidia-smi on a simulated A100-40GB + H100-80GB node: -L, the status table with a
# process holding 3 GiB, MIG mode, mig -cgi/-lgi/-lgip/-lci/-dci/-dgi and their exit codes.
set -euo pipefail

build=${GS_BUILD_DIR:?GS_BUILD_DIR is not set}
smi=$build/sim/nvidia-smi
helper=$build/tests/test_sim_nvml_helper
tmp=$(mktemp -d /tmp/gsim-smi-XXXXXX)
helper_pid=

cleanup() {
  if [[ -n $helper_pid ]]; then kill -9 "$helper_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

export GPUSIM_STATE=$tmp GPUSIM_DEVICES="A100-40GB,H100-80GB"
export CUDA_MPS_PIPE_DIRECTORY=$tmp/no-mps # no MPS daemon, whatever runs elsewhere
unset CUDA_VISIBLE_DEVICES

fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_line OUTPUT LINE: OUTPUT has LINE exactly.
expect_line() { grep -Fxq -- "$2" <<<"$1" || { echo "$1" >&2; fail "missing line: $2"; }; }
# expect_status WANT CMD...: CMD exits with WANT; its output is in $out.
expect_status() {
  local want=$1 rc=0; shift
  out=$("$@" 2>&1) || rc=$?
  [[ $rc == "$want" ]] || { echo "$out" >&2; fail "$* exited $rc, expected $want"; }
}

# -L: one line per GPU with a GPU- UUID.
expect_status 0 "$smi" -L
[[ $(wc -l <<<"$out") == 2 ]] || fail "-L: expected 2 lines: $out"
grep -Eq '^GPU 0: NVIDIA A100-40GB \(UUID: GPU-[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}\)$' <<<"$out" ||
  fail "-L: bad GPU 0 line: $out"

# --version, as NVIDIA's (issue 14: every program has --version).
expect_status 0 "$smi" --version
expect_line "$out" "DRIVER version      : 580.65.06"
expect_line "$out" "CUDA Version        : 13.0"
grep -Eq '^NVML version        : 13\.580\.65\.06$' <<<"$out" || fail "--version: $out"

# The table of an idle node: the memory the driver reserves shows as used (an estimate of 240 MiB
# on the A100-40GB; 480 MiB of an NVML total of 81559 MiB are measured on a real H100).
expect_status 0 "$smi"
expect_line "$out" "|   0  NVIDIA A100-40GB               On  | 00000000:18:00.0 Off |                  N/A |"
expect_line "$out" "| N/A   N/A    P0              N/A /  N/A |    240MiB / 40960MiB |      0%      Default |"
expect_line "$out" "|                                         |                      |             Disabled |"
expect_line "$out" "|  No running processes found                                                           |"

# A CUDA process holding 3 GiB on GPU 1.
coproc HELPER { exec "$helper"; }
helper_pid=$HELPER_PID
read -r line <&"${HELPER[0]}"
[[ $line == "ready $helper_pid" ]] || fail "helper: $line"
echo "charge 1 3G" >&"${HELPER[1]}"
read -r line <&"${HELPER[0]}"
[[ $line == ok ]] || fail "helper charge: $line"
expect_status 0 "$smi"
expect_line "$out" "| N/A   N/A    P0              N/A /  N/A |   3552MiB / 81559MiB |      0%      Default |"
expect_line "$out" "$(printf '| %4u %4s %4s %10u %6s   %-37.37s %9uMiB |' 1 N/A N/A "$helper_pid" C test_sim_nvml_h 3072)"
expect_status 0 "$smi" -i 0
expect_line "$out" "|  No running processes found                                                           |"

# MIG: GPU 1 is in use, GPU 0 is idle.
expect_status 19 "$smi" -i 1 -mig 1
expect_line "$out" "Unable to enable MIG Mode for GPU 00000000:28:00.0: In use by another client"
expect_status 0 "$smi" -i 0 -mig 1
expect_line "$out" "Enabled MIG Mode for GPU 00000000:18:00.0"
expect_line "$out" "All done."
expect_status 0 "$smi" mig -cgi 9,14,19,19 -C
expect_line "$out" "Successfully created GPU instance ID  2 on GPU  0 using profile MIG 3g.20gb (ID  9)"
expect_line "$out" "Successfully created compute instance ID  0 on GPU  0 GPU instance ID  2 using profile MIG 3g.20gb (ID  2)"
expect_line "$out" "Successfully created GPU instance ID 10 on GPU  0 using profile MIG 1g.5gb (ID 19)"
expect_status 23 "$smi" mig -cgi 4g.20gb
expect_line "$out" "Unable to create a GPU instance on GPU  0 using profile 5: Insufficient Resources"
expect_status 0 "$smi" mig -lgi
expect_line "$out" "|   0  MIG 3g.20gb          9        2          4:4     |"
expect_line "$out" "|   0  MIG 2g.10gb         14        3          0:2     |"
expect_line "$out" "|   0  MIG 1g.5gb          19        9          2:1     |"
expect_line "$out" "|   0  MIG 1g.5gb          19       10          3:1     |"
expect_status 0 "$smi" mig -lgip
expect_line "$out" "|   0  MIG 3g.20gb        9    0/2         20.00      No     42     2     0   |"
expect_line "$out" "|   0  MIG 1g.5gb        19    0/7          5.00      No     14     0     0   |"
expect_status 0 "$smi" mig -lci
expect_line "$out" "|   0       2       MIG 3g.20gb           2         0        0:3     |"
expect_status 0 "$smi" -L
grep -Eq '^  MIG 3g.20gb      Device  0: \(UUID: MIG-[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}\)$' <<<"$out" ||
  fail "-L: no MIG device line: $out"
expect_status 0 "$smi" -i 0
expect_line "$out" "| N/A   N/A    P0              N/A /  N/A |    240MiB / 40960MiB |     N/A      Default |"
expect_line "$out" "|  0    2   0   0  |               0MiB / 20480MiB  |        42 | MIG 3g.20gb           |"

# The process ends: its memory is reclaimed.
kill -9 "$helper_pid"
wait "$helper_pid" 2>/dev/null || true
helper_pid=
expect_status 0 "$smi" -i 1
expect_line "$out" "| N/A   N/A    P0              N/A /  N/A |    480MiB / 81559MiB |      0%      Default |"

# Tear MIG down again.
expect_status 19 "$smi" mig -dgi
expect_line "$out" "Unable to destroy GPU instance ID  2 from GPU  0: In use by another client"
expect_status 0 "$smi" mig -dci
expect_status 0 "$smi" mig -dgi
expect_line "$out" "Successfully destroyed GPU instance ID 10 from GPU  0"
expect_status 0 "$smi" -mig 0
expect_status 6 "$smi" mig -lgi
expect_line "$out" "No MIG-enabled devices found."
echo "sim_smi: all checks passed"
