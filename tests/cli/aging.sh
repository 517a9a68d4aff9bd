# SPDX-License-Identifier: Apache-2.0
# Issue 14, aging: a waiting request gains a priority point per queue_aging, so a low-priority
# request is not starved by higher-priority ones that keep arriving. Without aging
# (queue_aging = 0) priority decides; with it, a request that waited long enough goes first.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB

started() {
  cat "$WORK/order" 2>/dev/null | wc -l
}

# order_with AGING: fills the GPU, queues L (priority -3) then, 1.5 s later, H (priority 0),
# frees the GPU and prints the order in which they started.
order_with() {
  CONFIG=$'[daemon]\nqueue_aging = '$1
  start_daemon
  rm -f "$WORK/order" "$WORK/hold"
  touch "$WORK/hold"
  bg_gs run --gpus 1 -- sh -c "while [ -e $WORK/hold ]; do sleep 0.05; done"
  wait_eq 5 1 lease_count
  bg_gs run --gpus 1 --priority -3 -- sh -c "echo L >> $WORK/order"
  wait_eq 5 1 queue_length
  sleep 1.5
  bg_gs run --gpus 1 -- sh -c "echo H >> $WORK/order"
  wait_eq 5 2 queue_length
  gs status --json | jq -c '[.queue.requests[] | [.priority, .effective_priority >= .priority]]' >"$WORK/queue"
  rm "$WORK/hold"
  wait_eq 10 2 started
  tr -d '\n' <"$WORK/order"
  stop_daemon
}

expect_eq "$(order_with 0)" HL "service order without aging"
pass "without aging the higher priority goes first"
# 0.25 s per point: after 1.5 s more of waiting, L (-3 + 6 or more) is ahead of H (0 + 0..1).
expect_eq "$(order_with 0.25)" LH "service order with queue_aging = 0.25"
expect_eq "$(cat "$WORK/queue")" "[[-3,true],[0,true]]" "the queue, by effective priority"
pass "with aging the request that waited longer goes first, though its priority is lower"
