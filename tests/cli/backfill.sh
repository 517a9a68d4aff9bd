# SPDX-License-Identifier: Apache-2.0
# Issue 14, the queue's backfill: with a whole-GPU request (of the second user) waiting on a
# busy A100 and an idle T4, a 1G request starts at once (on the T4), a request that would only
# fit on the A100 held for it is refused saying why, and the whole-GPU request starts first
# when the A100 frees. Waiting requests show as PENDING rows with their position and reason.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=A100-40GB,T4-16GB
start_daemon
t4=$(uuid_of 1)

# The A100 is busy: 30 GiB of it leased (until $WORK/hold goes).
touch "$WORK/hold" "$WORK/holdB" "$WORK/order"
chmod 666 "$WORK/order" # the second user's job writes to it too
bg_gs run --gpu-memory 30G --gpu-type A100 -- sh -c "while [ -e $WORK/hold ]; do sleep 0.05; done"
wait_eq 5 1 lease_count
expect_eq "$(gs leases --json | jq '.[0].gpus[0].index')" 0 "the busy lease's GPU"

# The whole A100 is asked for by the second user (root when there is none): it waits.
if have_user2; then
  waiter=(runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD"
    ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$BIN/gpushare")
  who=$USER2
else
  echo "note: not root: the waiting request is root's own (no second user)"
  waiter=("${GS[@]}")
  who=root
fi
bg "${waiter[@]}" run --gpus 1 --gpu-type A100-40GB --name whole -- sh -c "echo W >> $WORK/order; sleep 2"
wait_eq 5 1 queue_length
# The reason names what holds the GPU: another user's lease, or (root's own request) lease N.
busy=$(gs leases --json | jq '.[0].id')
reason="GPU 0 (A100-40GB) is in use by 1 lease of another user (30 GiB)"
[[ $who == root ]] && reason="GPU 0 (A100-40GB) is in use by lease $busy (root, 30 GiB)"
expect_eq "$(gs status --json | jq -c '.queue.requests[0] | [.position, .user, .name, .reason]')" \
  "[1,\"$who\",\"whole\",\"$reason\"]" "the waiting request in status"
grep -Fxq "        $reason" <<<"$(gs status)" || fail "status does not say why it waits: $(gs status)"
grep -Eq "^ +#1 $(fit "$who" 8) +whole +--gpus 1 --gpu-type A100-40GB +[0-9]+s  sh -c" <<<"$(gs status)" ||
  fail "status has no WAITING row: $(gs status)"
if [[ $who != root ]]; then
  listing=$(as_user2 leases)
  grep -Eq "^ +- +$(fit "$who" 10) +whole +- +- +- +PENDING #1 " <<<"$listing" || fail "no PENDING row: $listing"
  grep -Fxq "       --gpus 1 --gpu-type A100-40GB: $reason" <<<"$listing" || fail "no reason: $listing"
  expect_eq "$(as_user2 leases --json | jq -c '[.[] | [.state, .name]]')" '[["pending","whole"]]' \
    "the user's leases --json: the waiting request only"
fi
pass "a whole-GPU request waits on the busy A100: status and leases show it PENDING #1, and why"

# A 1G request starts at once, on the idle T4 (the A100 is held for the request ahead).
out=$(gs run --gpu-memory 1G --no-wait -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
expect_eq "$out" "$t4" "the GPU of a backfilled 1G request"
bg_gs run --gpu-memory 1G --name small -- sh -c "echo B >> $WORK/order; while [ -e $WORK/holdB ]; do sleep 0.05; done"
wait_eq 5 2 lease_count
expect_eq "$(gs leases --json | jq '[.[] | select(.name == "small") | .gpus[0].index] | .[0]')" 1 "the small job's GPU"
pass "a 1G request starts at once on the T4 while the whole-GPU request waits"

# 5G would fit on the A100 now, but only by delaying the request ahead: refused, saying why.
expect_fail 75 "gpushare: no room for this lease now: it fits now only on GPUs held for 1 request ahead of it" \
  gs run --gpu-memory 5G --gpu-type A100 --no-wait -- true
# A later request for the A100 waits behind it.
bg_gs run --gpu-memory 5G --gpu-type A100 -- sh -c "echo L >> $WORK/order"
wait_eq 5 2 queue_length
expect_eq "$(gs status --json | jq -c '[.queue.requests[] | [.position, .name, .reason]]')" \
  "[[1,\"whole\",\"$reason\"],[2,\"\",\"it fits now only on GPUs held for 1 request ahead of it\"]]" \
  "the queue, in order, with reasons"
pass "a request that would delay the one ahead is refused (75) or waits behind it"

# The A100 frees: the whole-GPU request starts first, while the small job still runs on the T4.
rm "$WORK/hold"
wait_until 5 grep -q W "$WORK/order"
expect_eq "$(tr -d '\n' <"$WORK/order")" BW "jobs started so far"
expect_eq "$(gs leases --json | jq -c '[.[] | select(.state != "pending") | [.name, .gpus[0].index]] | sort')" '[["small",1],["whole",0]]' "leases"
wait_until 10 grep -q L "$WORK/order"
expect_eq "$(tr -d '\n' <"$WORK/order")" BWL "service order"
rm "$WORK/holdB"
wait_eq 10 0 lease_count
pass "the whole-GPU request starts first when the A100 frees; the one behind it after"
