# SPDX-License-Identifier: Apache-2.0
# Issue 40's holes: a user who suspends their own lease never stalls the daemon for others, and a
# suspended lease's memory is not theirs to take again behind the pool's back.
#  1. The second user's job sits in a kernel longer than the lock timeout (2 s) and they suspend
#     its lease: while that suspend waits in the lock, another user's `gpushare leases` answers
#     within 200 ms and a lease request (gpushare run, its job started and ended) within 500 ms
#     (the checkpoint runs off the event loop); a second suspend of
#     the busy lease is refused with one line; the first gets its answer when the lock times out.
#     Replies stay in order: a list sent behind a suspend on one connection is answered after it.
#  2. While the lease is suspended (its memory back in the pool), a new process of its job is
#     refused its CUDA context (CUDA_ERROR_OUT_OF_MEMORY), and one around the shim is over the
#     lease's limit (none while suspended) and killed by the watchdog; resumed, a new process
#     allocates again.
#  3. A release of the lease while its suspend waits in the lock answers at once; the suspend is
#     answered when its worker is done (it failed: its process died), the lease ends, its memory
#     is back in the pool.
source "$(dirname "$0")/hostile_lib.sh"
PROGS=$GS_BUILD_DIR/tests/cuda_progs
GPUSIM_DEVICES=H100-80GB
start_daemon
chmod 755 "$WORK/sim" 2>/dev/null || true
OUT=$WORK/user2
mkdir -m 0777 "$OUT"
has_sum() { grep -q '^sum ' "$1" 2>/dev/null; }

# The job: a process holding 1 GiB (sumhold), then, at each go file, a new process (memhold 2)
# started while the lease is suspended, and one after its resume.
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 6G --name victim -- bash -c "
  \"$PROGS/sumhold\" 1 >\"$OUT/hold.out\" &
  until [ -e \"$OUT/go1\" ]; do sleep 0.05; done
  \"$PROGS/memhold\" 2 >\"$OUT/new1.out\" 2>&1; echo \"exit \$?\" >>\"$OUT/new1.out\"
  until [ -e \"$OUT/go1b\" ]; do sleep 0.05; done
  env -u LD_PRELOAD \"$PROGS/memhold\" 2 >\"$OUT/bypass.out\" 2>&1 &
  until [ -e \"$OUT/go2\" ]; do sleep 0.05; done
  \"$PROGS/memhold\" 2 >\"$OUT/new2.out\" 2>&1 &
  wait"
wait_until 20 has_sum "$OUT/hold.out"
lease=$(user2_lease)
job=$(pgrep -f "^$PROGS/sumhold 1$")

# Hole 1: the job is inside a 5 s kernel; its user suspends the lease.
kill -USR2 "$job"
wait_until 5 grep -q '^launched' "$OUT/hold.out"
bg "${AS_USER2[@]}" "$BIN/gpushare" suspend "$lease" >"$OUT/suspend1.out" 2>&1
suspender=$!
sleep 0.5 # the daemon has the suspend: its worker waits in the lock (2 s)
gs_now_us
t0=$GS_NOW_US
gs leases >/dev/null || fail "gpushare leases failed during another user's suspend"
gs_now_us
took_ms=$(((GS_NOW_US - t0) / 1000))
[[ $took_ms -lt 200 ]] || fail "gpushare leases took $took_ms ms while another user's suspend waited in a lock"
gs_now_us
t0=$GS_NOW_US
gs run --gpu-memory 1G --no-wait -- true || fail "a lease request failed during another user's suspend"
gs_now_us
took_req_ms=$(((GS_NOW_US - t0) / 1000))
# (500 ms: gpushare run also starts its job.)
[[ $took_req_ms -lt 500 ]] || fail "a lease request took $took_req_ms ms while another user's suspend waited in a lock"
kill -0 "$suspender" 2>/dev/null || fail "the suspend was answered before its lock timed out: $(cat "$OUT/suspend1.out")"
out=$(gs2 suspend "$lease" 2>&1) && fail "a second suspend of a lease being suspended succeeded: $out"
expect_eq "$out" "gpushare: lease $lease is being suspended now: try again when that is done" \
  "a second suspend meanwhile"
rc=0
wait "$suspender" || rc=$?
expect_eq "$rc" 75 "the suspend's exit status"
expect_eq "$(cat "$OUT/suspend1.out")" "gpushare: process $job could not be suspended (CUDA_ERROR_NOT_READY: a kernel ran longer than the lock timeout): nothing was" \
  "the suspend's answer"
expect_eq "$(lease_state "$lease")" active "the lease's state after its lock timed out"
daemon_alive || fail "gpushared died"
pass "a suspend waiting in a lock stalls nobody: leases answered in $took_ms ms, a lease request in $took_req_ms ms"

# Hole 2: suspended, the lease's memory is back in the pool; a new process of its job is refused.
sleep 3 # the kernel's 5 s are over
# (Sent with a list request behind it on one connection: the replies come in order, the
# suspend's first, though it is answered when the worker is done.)
replies=$(/usr/bin/python3 - "$GPUSHARE_SOCKET" "$lease" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(('{"op":"suspend","lease":%s}\n{"op":"list"}\n' % sys.argv[2]).encode())
f = s.makefile()
for _ in range(2):
    r = json.loads(f.readline())
    print(r.get("op"), r.get("ok"), r.get("state", ""))
PY
)
expect_eq "$replies" $'suspend True suspended\nlist True ' "the replies of a suspend and a list sent together"
expect_eq "$(lease_state "$lease")" suspended "its state"
touch "$OUT/go1"
wait_until 20 grep -q '^exit ' "$OUT/new1.out"
grep -q '^exit 1$' "$OUT/new1.out" || fail "a new process of a suspended lease's job ran: $(cat "$OUT/new1.out")"
grep -q 'CUDA_ERROR_OUT_OF_MEMORY' "$OUT/new1.out" ||
  fail "a new process of a suspended lease's job was not refused for memory: $(cat "$OUT/new1.out")"
grep -q 'this lease is suspended' "$OUT/new1.out" ||
  fail "the shim did not say why it refused: $(cat "$OUT/new1.out")"
pass "a new process of a suspended lease's job is refused its context (CUDA_ERROR_OUT_OF_MEMORY)"

# One that goes around the shim (no LD_PRELOAD) gets memory from the driver: the watchdog holds
# a suspended lease to none, so it is over its limit and killed (enforce = kill, the default).
touch "$OUT/go1b"
wait_until 20 grep -q '^held ' "$OUT/bypass.out"
wait_until 5 grep -q "lease $lease (user $USER2) holds .* on GPU 0, over its limit of 0 B" "$WORK/daemon.log"
wait_until 5 grep -q "killed pid .*memhold 2\"): lease $lease was over its 0 B limit on GPU 0" "$WORK/daemon.log"
pass "a process of a suspended lease that goes around the shim is over its limit (0 B) and killed"

expect_eq "$(gs2 resume "$lease")" "lease $lease resumed (1 processes)" "the resume"
expect_eq "$(lease_state "$lease")" active "its state once resumed"
touch "$OUT/go2"
wait_until 20 grep -q "^held " "$OUT/new2.out"
kill -USR1 "$job"
summed_twice() { [[ $(grep -c '^sum ' "$OUT/hold.out") -ge 2 ]]; }
wait_until 10 summed_twice
expect_eq "$(grep '^sum ' "$OUT/hold.out" | sed -n 2p)" "$(grep '^sum ' "$OUT/hold.out" | sed -n 1p)" \
  "the first process's checksum after the resume"
pass "resumed, a new process of the job allocates again; the first one's data are intact"

# A release while the suspend waits in its lock is not held up (the lease ends as it would), and
# the suspend is answered once its worker is done: nothing was suspended, the lease is gone and
# its memory back in the pool.
free_before=$(gs status --json | jq '.gpus[0].memory_free')
kill -USR2 "$job"
launched_twice() { [[ $(grep -c '^launched' "$OUT/hold.out") -ge 2 ]]; }
wait_until 5 launched_twice
bg "${AS_USER2[@]}" "$BIN/gpushare" suspend "$lease" >"$OUT/suspend2.out" 2>&1
suspender=$!
sleep 0.5
gs_now_us
t0=$GS_NOW_US
gs release "$lease" >/dev/null || fail "root's release of a lease being suspended failed"
gs_now_us
took_ms=$(((GS_NOW_US - t0) / 1000))
# (500 ms: a release by another user looks for the job's processes and signals them; held up
# by the lock it would take most of its 2 s.)
[[ $took_ms -lt 500 ]] || fail "the release took $took_ms ms while the lease's suspend waited in a lock"
rc=0
wait "$suspender" || rc=$?
[[ $rc -ne 0 ]] || fail "the suspend of a lease released meanwhile succeeded: $(cat "$OUT/suspend2.out")"
grep -q "^gpushare: process $job could not be suspended (" "$OUT/suspend2.out" ||
  fail "the suspend's answer: $(cat "$OUT/suspend2.out")"
wait_eq 10 gone lease_state "$lease"
daemon_alive || fail "gpushared died"
freed() { [[ $(gs status --json | jq '.gpus[0].memory_free') -gt $free_before ]]; }
wait_until 5 freed
pass "a release during a suspend answers in $took_ms ms; the suspend fails ($(cat "$OUT/suspend2.out")), the lease ends, its memory is back"
