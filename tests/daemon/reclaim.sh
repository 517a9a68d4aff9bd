# SPDX-License-Identifier: Apache-2.0
# Acceptance 4: a lease ends when its client exits or is SIGKILLed, and its memory is reclaimed
# within 1 s; a lease released by someone else stops its job.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB # 81079 MiB leasable (CUDA's total): 79G is nearly all of it
start_daemon

ms_since() {
  echo $((($(date +%s%N) - $1) / 1000000))
}

# The client exits normally: the lease ends at once.
gs run --gpu-memory 79G -- "$TOOL" charge 10G 0.1 >/dev/null
expect_eq "$(lease_count)" 0 "leases after the job exited"
gs run --gpu-memory 79G --no-wait -- true || fail "the memory of an ended lease was not back"
pass "a lease ends when its client exits"

# The client is SIGKILLed while its job holds 50G: the job dies with it, and the memory is back
# within 1 s.
bg_gs run --gpu-memory 60G -- "$TOOL" charge 50G
client=$!
wait_eq 5 $((50 << 30)) memory_used
expect_eq "$(gs leases --json | jq '.[0].processes')" 1 "processes of the lease"
job=$(job_of "$client")
start=$(date +%s%N)
kill -KILL "$client"
wait_eq 2 0 lease_count
took=$(ms_since "$start")
[[ $took -le 1000 ]] || fail "the lease ended $took ms after its client was killed"
gs run --gpu-memory 79G --no-wait -- true || fail "the killed lease's memory was not reclaimed"
wait_until 2 test ! -e "/proc/$job"

pass "a lease ends when its client is SIGKILLed; memory reclaimed after $took ms"

# The job itself is SIGKILLed: the client reports 128+9 and the lease ends.
bg_gs run --gpu-memory 10G -- "$TOOL" charge 5G
client=$!
wait_eq 5 $((5 << 30)) memory_used
kill -KILL "$(job_of "$client")"
set +e
wait "$client"
rc=$?
set -e
expect_eq "$rc" 137 "exit status of a run whose job was SIGKILLed"
expect_eq "$(lease_count)" 0 "leases after the job was killed"
pass "a SIGKILLed job: exit 137, lease ended"

# Released from another process (gpushare release): the job gets SIGTERM and the lease ends.
bg_gs run --gpu-memory 10G -- "$TOOL" charge 1G
client=$!
wait_eq 5 $((1 << 30)) memory_used
id=$(gs leases --json | jq '.[0].id')
out=$(gs release "$id")
# One line, whoever stopped the job first (gpushared or its gpushare run): release waits for the end.
expect_eq "$out" "lease $id released" "release message"
set +e
wait "$client"
rc=$?
set -e
expect_eq "$rc" 0 "exit status of a job that stopped on SIGTERM"
wait_eq 2 0 lease_count
pass "gpushare release stops the job and ends its lease"

# SIGTERM to the client is forwarded to the job: exit 143 when the job dies of it.
bg_gs run --gpu-memory 10G -- sleep 30
client=$!
wait_eq 5 1 lease_count
kill -TERM "$client"
set +e
wait "$client"
rc=$?
set -e
expect_eq "$rc" 143 "exit status after SIGTERM"
wait_eq 2 0 lease_count
pass "SIGTERM is forwarded to the job; exit 143"
