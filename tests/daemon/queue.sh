# SPDX-License-Identifier: Apache-2.0
# Acceptance 2: on a full GPU a request waits (FIFO) and starts when a lease ends; with --no-wait
# or after --timeout it fails with one line and exit 75.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
start_daemon
lines_of() {
  wc -l <"$1"
}

# Fill the GPU with a lease that ends when its file disappears.
touch "$WORK/hold"
bg_gs run --gpu-memory 79G -- sh -c "while [ -e $WORK/hold ]; do sleep 0.05; done"
wait_eq 5 1 lease_count

# --no-wait: one line, exit 75, at once.
set +e
out=$(gs run --gpu-memory 1G --no-wait -- true 2>&1)
rc=$?
set -e
expect_eq "$rc" 75 "--no-wait exit status"
expect_eq "$out" "gpushare: no room for this lease now: GPU 0 (H100-80GB) has 183 MiB free of the 1 GiB it needs; held by lease 1 (root, 79 GiB)" "--no-wait message"
pass "--no-wait on a full GPU: exit 75, one line"

# --timeout: waits, then one line and exit 75.
set +e
start=$(date +%s%N)
out=$(gs run --gpu-memory 1G --timeout 300ms -- true 2>&1)
rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
set -e
expect_eq "$rc" 75 "--timeout exit status"
expect_eq "$(printf '%s\n' "$out" | tail -1)" \
  "gpushare: no room within 0.3 s (--timeout): gave up (GPU 0 (H100-80GB) has 183 MiB free of the 1 GiB it needs; held by lease 1 (root, 79 GiB))" "--timeout message"
[[ $elapsed_ms -ge 300 && $elapsed_ms -lt 3000 ]] || fail "--timeout took $elapsed_ms ms"
pass "--timeout 300ms on a full GPU: exit 75 after $elapsed_ms ms"

# Two waiters, FIFO: A (40G) then B (79G); a later small C waits behind them (no overtaking).
bg_gs run --gpu-memory 40G -- sh -c "echo A >> $WORK/order; sleep 0.3"
wait_eq 5 1 queue_length
bg_gs run --gpu-memory 79G -- sh -c "echo B >> $WORK/order; sleep 0.3"
wait_eq 5 2 queue_length
bg_gs run --gpu-memory 1G -- sh -c "echo C >> $WORK/order"
wait_eq 5 3 queue_length
[[ ! -e $WORK/order ]] || fail "a queued job started while the GPU was full"
expect_eq "$(gs status --json | jq '[.queue.requests[].position] | join(",")' -r)" "1,2,3" "queue positions"
pass "three requests wait on a full GPU"

# End the first lease: A starts (within a second), then B after A, then C after B.
start=$(date +%s%N)
rm "$WORK/hold"
wait_until 2 test -s "$WORK/order"
started_ms=$((($(date +%s%N) - start) / 1000000))
[[ $started_ms -lt 1000 ]] || fail "the waiting job started $started_ms ms after the lease ended"
wait_eq 10 3 lines_of "$WORK/order"
expect_eq "$(tr -d '\n' <"$WORK/order")" "ABC" "service order"
wait_eq 5 0 lease_count
pass "queued requests start in FIFO order when leases end (first after $started_ms ms)"
