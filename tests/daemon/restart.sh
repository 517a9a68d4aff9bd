# SPDX-License-Identifier: Apache-2.0
# Acceptance 5: SIGKILL of gpushared with three live leases, then a restart: the same three
# leases are listed, their jobs continue, new requests respect them, and they end normally.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
start_daemon

for i in 1 2 3; do
  bg_gs run --gpu-memory 20G -- "$TOOL" charge ${i}G
  eval "client$i=\$!"
done
wait_eq 5 $((6 << 30)) memory_used
before=$(gs leases --json | jq -c '[.[] | {id, user, command, memory_limit, memory_used, client_pid}]')

kill9_daemon
sleep 0.3
for i in 1 2 3; do
  eval "kill -0 \$client$i" || fail "job $i died with the daemon"
done
start_daemon
grep -q "lease 3 restored" "$WORK/daemon.log" || fail "no restore line in the log"
after=$(gs leases --json | jq -c '[.[] | {id, user, command, memory_limit, memory_used, client_pid}]')
expect_eq "$after" "$before" "leases after the restart"
expect_eq "$(gs status --json | jq '.gpus[0].memory_leased')" $((60 << 30)) "memory leased"
pass "the three leases survive kill -9 of gpushared"

# New requests respect them: 19G fits beside them, 20G does not (an H100-80GB leases 81079 MiB,
# what CUDA sees of it).
set +e
gs run --gpu-memory 20G --no-wait -- true 2>/dev/null
rc=$?
set -e
expect_eq "$rc" 75 "a request larger than what is left"
gs run --gpu-memory 19G --no-wait -- true || fail "a request that fits was refused"
pass "new requests respect the restored leases"

# The jobs go on after the restart; one ends normally (its client releases through a new
# connection), one client is SIGKILLed (the reaper finds it gone), one is released by id.
sleep 0.3
for i in 1 2 3; do
  eval "kill -0 \$client$i" || fail "job $i did not survive the restart"
done
kill -TERM "$(job_of "$client1")"
wait "$client1" || fail "job 1 failed after the restart"
wait_eq 2 2 lease_count
kill -KILL "$client2"
wait_eq 2 1 lease_count
id=$(gs leases --json | jq '.[0].id')
gs release "$id" >/dev/null
set +e
wait "$client3"
rc=$?
set -e
expect_eq "$rc" 0 "job 3 after its release (SIGTERM forwarded)"
wait_eq 2 0 lease_count
expect_eq "$(gs status --json | jq '.gpus[0].memory_leased')" 0 "memory leased at the end"
pass "restored leases end by exit, by SIGKILL of the client and by release"
stop_daemon
