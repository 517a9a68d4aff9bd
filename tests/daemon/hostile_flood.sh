# SPDX-License-Identifier: Apache-2.0
# Issue 15, finding 4: one user's 20,000 connections, 20,000 queued requests or pipelined requests
# it never reads do not keep another user from being served, and what the daemon holds for them
# is bounded: the per-user limits (max_connections_per_user, max_queued_per_user) hold, its
# memory stays within a bound. (The latency others see is measured by bench/hostile.sh.)
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
# Under AddressSanitizer freed memory waits in a quarantine (256 MiB by default) before it is
# reused: a small one keeps the daemon's resident size about what it holds.
[[ -z ${GS_SANITIZE:-} ]] || export ASAN_OPTIONS=${ASAN_OPTIONS:-}:quarantine_size_mb=8
start_daemon
rss0=$(daemon_rss_kb)

# 20,000 connections (two processes of 10,000: a process may hold 20,000 descriptors at most).
bg "${AS_USER2[@]}" "$HOSTILE" flood "$GPUSHARE_SOCKET" 10000 >"$WORK/flood1.out"
bg "${AS_USER2[@]}" "$HOSTILE" flood "$GPUSHARE_SOCKET" 10000 >"$WORK/flood2.out"
wait_until 60 grep -q connected "$WORK/flood1.out"
wait_until 60 grep -q connected "$WORK/flood2.out"
kept_of() { sed -n 's/.* kept \([0-9]*\),.*/\1/p' "$1"; }
kept=$(($(kept_of "$WORK/flood1.out") + $(kept_of "$WORK/flood2.out")))
expect_eq "$kept" 256 "connections of the user kept (max_connections_per_user)"
gs status --json | jq -e '.node.leases == 0' >/dev/null || fail "another user's status"
gs run --gpu-memory 1G --no-wait -- true || fail "another user's grant"
grep -q "user $USER2 has 256 connections (max_connections_per_user): refused another" "$WORK/daemon.log" ||
  fail "no refusal in the log"
[[ $(grep -c "refused another" "$WORK/daemon.log") -le 10 ]] || fail "a log line per refusal"
rss1=$(daemon_rss_kb)
[[ $((rss1 - rss0)) -lt 65536 ]] || fail "the daemon grew by $(((rss1 - rss0) / 1024)) MiB for 20,000 connections"
pass "20,000 connections: 256 kept, the rest refused; others served; +$(((rss1 - rss0) / 1024)) MiB"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()

# 20,000 requests that wait (the GPU is taken), one per connection.
bg_gs run --gpus 1 -- sleep 600 # the whole GPU
wait_eq 5 1 lease_count
req='{"op":"acquire","gpu_memory":"40G","command":"flood"}'
bg "${AS_USER2[@]}" "$HOSTILE" flood "$GPUSHARE_SOCKET" 10000 "$req" >"$WORK/queue1.out"
bg "${AS_USER2[@]}" "$HOSTILE" flood "$GPUSHARE_SOCKET" 10000 "$req" >"$WORK/queue2.out"
wait_until 60 grep -q connected "$WORK/queue1.out"
wait_until 60 grep -q connected "$WORK/queue2.out"
expect_eq "$(queue_length)" 128 "requests of the user waiting (max_queued_per_user)"
gs status --json | jq -e '.node.leases == 1' >/dev/null || fail "another user's status"
out=$(printf '%s\n' "$req" | "${AS_USER2[@]}" "$TOOL" send "$GPUSHARE_SOCKET" 300)
grep -q '"code":"busy"' <<<"$out" || fail "a 257th connection of the user: $out"
rss2=$(daemon_rss_kb)
[[ $((rss2 - rss0)) -lt 65536 ]] || fail "the daemon grew by $(((rss2 - rss0) / 1024)) MiB for 20,000 requests"
pass "20,000 queued requests: 128 wait, the rest refused; others served; +$(((rss2 - rss0) / 1024)) MiB"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
wait_eq 5 0 queue_length

# 20 connections that pipeline status and read nothing: the daemon stops reading them.
for i in $(seq 20); do
  bg "${AS_USER2[@]}" "$HOSTILE" pipeline "$GPUSHARE_SOCKET" 200000 >"$WORK/pipe$i.out"
done
for i in $(seq 20); do
  wait_until 30 grep -q "^sent" "$WORK/pipe$i.out"
done
gs status --json | jq -e '.queue.length == 0' >/dev/null || fail "another user's status"
rss3=$(daemon_rss_kb)
[[ $((rss3 - rss0)) -lt 65536 ]] || fail "the daemon grew by $(((rss3 - rss0) / 1024)) MiB for 20 pipelining clients"
pass "20 clients pipelining status without reading: $(sed -n 's/sent \([0-9]*\).*/\1/p' "$WORK/pipe1.out") requests taken from one before it stopped reading; +$(((rss3 - rss0) / 1024)) MiB"
