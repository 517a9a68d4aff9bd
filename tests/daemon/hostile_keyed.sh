# SPDX-License-Identifier: Apache-2.0
# Issue 28 over issue 21's surface: keyed leases and their own sockets, as a hostile user.
#  - keyed leases count against max_leases_per_user like any other (each has a region and a
#    socket in the daemon); asking again for one's own key costs nothing;
#  - on a keyed lease's socket: a zombie connector is refused, a flood of connections counts
#    against the user's max_connections_per_user, pipelined requests read nothing more than on
#    the main socket: others are served meanwhile;
#  - out of file descriptors, a connection pending on a keyed lease's socket is taken and closed
#    (the loop never spins on it) and the log says so once with a count (it spun at 100 % CPU
#    and wrote a line per wake-up before).
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
CONFIG=$'[daemon]\nmax_leases_per_user = 4\nmax_connections_per_user = 32'
start_daemon
T=$GS_BUILD_DIR/tests
send2() { # REQUEST: on one connection as the second user, the first reply
  printf '%s\n' "$1" | as_user2 "$T/gs-daemon-tool" send "$GPUSHARE_SOCKET" 500 | sed -n 1p
}

# Keyed leases count: four granted, a fifth key and an ordinary lease refused; the first key
# again is the same lease.
for i in 1 2 3 4; do
  r=$(send2 "{\"op\":\"acquire\",\"key\":\"test/k$i\",\"gpu_memory\":\"1M\"}")
  expect_eq "$(jq -r .state <<<"$r")" granted "keyed lease $i"
  [[ $i == 1 ]] && sock=$(jq -r .socket <<<"$r")
done
r=$(send2 '{"op":"acquire","key":"test/k5","gpu_memory":"1M"}')
expect_eq "$(jq -r .error.code <<<"$r")" too_many "a fifth keyed lease"
expect_eq "$(send2 '{"op":"acquire","key":"test/k1","gpu_memory":"1M"}' | jq -c '[.state, .existing]')" \
  '["granted",true]' "the first key again"
set +e
out=$(gs2 run --gpu-memory 1M --no-wait -- true 2>&1)
rc=$?
set -e
expect_eq "$rc:$out" "1:gpushare: user $USER2 already holds 4 leases, the most one user may hold (max_leases_per_user)" \
  "an ordinary lease beside four keyed ones"
pass "keyed leases count against max_leases_per_user"

# A zombie connector on the lease's socket is refused.
zombie_connect "$sock" '{"op":"list"}'
expect_eq "$ZOMBIE_REPLY" closed "the zombie's connection to the lease's socket"
grep -q "user $USER2: refused a connection from pid $ZOMBIE_PID: that process is gone" "$WORK/daemon.log" ||
  fail "no log line of the refusal"
pass "a zombie's connection to a keyed lease's socket is refused"

# A flood on the lease's socket counts against the user's connections (32 here, the zombie's
# holder gone): the rest are turned away busy; pipelined requests without reading stay bounded;
# root is served meanwhile.
stop_bg
rss0=$(daemon_rss_kb)
bg "${AS_USER2[@]}" "$HOSTILE" flood "$sock" 200 >"$WORK/flood.out"
wait_until 15 grep -q connected "$WORK/flood.out"
expect_eq "$(cat "$WORK/flood.out")" "connected 200, kept 32, turned away 168, failed 0" "the flood of the lease's socket"
stop_bg
for i in 1 2 3 4; do
  bg "${AS_USER2[@]}" "$HOSTILE" pipeline "$sock" 200000
done
sleep 3
for i in 1 2 3; do
  gs status --json | jq -e '.node.leases == 4' >/dev/null || fail "root's status beside the floods"
done
rss1=$(daemon_rss_kb)
((rss1 - rss0 < 65536)) || fail "the daemon grew by $((rss1 - rss0)) KiB under pipelined requests"
pass "floods and pipelines on a lease's socket: the user's limits hold, root is served (RSS +$((rss1 - rss0)) KiB)"
stop_bg

# Out of file descriptors: the daemon may open none more than it has; root (no connection limit)
# opens 100 connections to the lease's socket. The loop does not spin, the log has a line or
# two with counts, and once descriptors are free again the daemon serves as before.
sleep 1
# (The limit is on descriptor numbers: the first one not open is where none is left.)
fds=0
while [[ -e /proc/$DAEMON_PID/fd/$fds ]]; do fds=$((fds + 1)); done
soft=$(prlimit --pid "$DAEMON_PID" --nofile --output SOFT --noheadings | tr -d ' ')
prlimit --pid "$DAEMON_PID" --nofile="$fds":
bg "$HOSTILE" flood "$sock" 100 >"$WORK/fdflood.out"
wait_until 15 grep -q connected "$WORK/fdflood.out"
t0=$(awk '{print $14 + $15}' "/proc/$DAEMON_PID/stat")
sleep 2
t1=$(awk '{print $14 + $15}' "/proc/$DAEMON_PID/stat")
ticks=$((t1 - t0))
((ticks < 2 * $(getconf CLK_TCK) / 5)) || fail "the daemon used $ticks ticks in 2 s out of descriptors"
lines=$(grep -c "out of file descriptors" "$WORK/daemon.log" || true)
((lines >= 1 && lines <= 2)) || fail "$lines log lines of refused connections"
stop_bg
prlimit --pid "$DAEMON_PID" --nofile="$soft":
sleep 0.5
expect_eq "$(printf '%s\n' '{"op":"list"}' | as_user2 "$T/gs-daemon-tool" send "$sock" 500 | sed -n 1p | jq -c '[.leases[].key]')" \
  '["test/k1"]' "the lease's socket afterwards"
daemon_alive || fail "the daemon died"
pass "out of descriptors on a lease's socket: no spinning, $lines log line(s), served again after"
