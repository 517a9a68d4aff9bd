# SPDX-License-Identifier: Apache-2.0
# Issue 15, finding 5: the metrics endpoint. By default (metrics_users = none) it names no user
# and no lease; another user's idle connections, thousands of them, never keep a scrape out; a
# scrape succeeds with 2,000 leases (and as many descriptors: no select() limit).
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB

# start_with_metrics CONFIG: starts gpushared with CONFIG on a free metrics port.
start_with_metrics() {
  CONFIG=$1
  start_daemon_metrics
}

scrape() {
  curl -fsS --max-time 5 "$url"
}

start_with_metrics ""
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 4G -- sleep 600
wait_eq 5 1 lease_count
scraped() { grep -q "^gpushare_leases $1\$" <<<"$(curl -fsS "$url" 2>/dev/null)"; }
wait_until 3 scraped 1
scrape >"$WORK/none.txt"
named='[{,]uid=\|[{,]user=\|[{,]lease=\|^gpushare_lease_'
grep -q "$USER2\|$named" "$WORK/none.txt" && fail "users or leases in the default metrics: $(grep "$USER2\|$named" "$WORK/none.txt" | head -3)"
grep -q '^gpushare_gpu_memory_leased_bytes{gpu="0".*} 4294967296$' "$WORK/none.txt" || fail "per-GPU series"
pass "metrics_users = none (the default): no user, uid or lease in the metrics"

# Another user holds 2,000 idle connections to the endpoint: scrapes go on.
bg "${AS_USER2[@]}" "$HOSTILE" tcpidle "$port" 2000 >"$WORK/idle.out"
wait_until 30 grep -q opened "$WORK/idle.out"
for i in 1 2 3; do
  grep -q '^gpushare_leases 1$' <<<"$(scrape)" || fail "scrape $i beside 2,000 idle connections"
done
pass "2,000 idle connections of another user: every scrape is answered ($(cat "$WORK/idle.out"))"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
stop_daemon

# 2,000 leases (held by one connection of root), with per-lease series.
start_with_metrics $'[daemon]\nmetrics_users = all'
bg "$HOSTILE" hold "$GPUSHARE_SOCKET" 2000 '{"op":"acquire","gpu_memory":"1M","wait":false}' >"$WORK/hold.out"
wait_until 60 grep -q granted "$WORK/hold.out"
expect_eq "$(cat "$WORK/hold.out")" "granted 2000" "leases granted"
[[ $(ls "/proc/$DAEMON_PID/fd" | wc -l) -gt 2000 ]] || fail "the daemon holds fewer than 2,000 descriptors"
wait_until 3 scraped 2000
scrape >"$WORK/all.txt"
expect_eq "$(grep -c '^gpushare_lease_info{' "$WORK/all.txt")" 2000 "gpushare_lease_info series"
expect_eq "$(grep -c "^gpushare_lease_memory_limit_bytes{lease=\"[0-9]*\",user=\"root\",job_name=\"[^\"]*\",gpu=\"0\"" "$WORK/all.txt")" 2000 "limit series"
pass "a scrape with 2,000 leases ($(ls "/proc/$DAEMON_PID/fd" | wc -l) descriptors): $(wc -c <"$WORK/all.txt") bytes"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
stop_daemon

# Issue 28, finding 11: two users flood the endpoint with connections (1,000 each kept open, the
# oldest closed and another opened, as fast as they can): each evicts only its own, and every
# scrape of a third party is answered.
start_with_metrics ""
USER3=gpushare-bench
id "$USER3" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER3"
bg "${AS_USER2[@]}" "$HOSTILE" tcpflood "$port" 30
bg runuser -u "$USER3" -- "$HOSTILE" tcpflood "$port" 30
sleep 1
failed=0
for i in $(seq 100); do
  grep -q '^gpushare_leases 0$' <<<"$(curl -fsS --max-time 5 "$url" 2>/dev/null)" || failed=$((failed + 1))
done
expect_eq "$failed" 0 "scrapes that failed of 100 under two users' connection floods"
pass "two users' connection floods: 100 of 100 scrapes answered"
