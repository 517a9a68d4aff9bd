#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Another user's `status` latency while one user attacks gpushared (issue 15), on gpusim: p99
# against the 100 ms target, side by side for each attack, with the daemon's memory. Needs root
# (the attacker and the observer are two system users); prints its method and figures.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
[[ $build == /* ]] || build=$PWD/$build
requests=${BENCH_REQUESTS:-1000}
if [[ $(id -u) -ne 0 ]]; then
  echo "bench/hostile.sh: skipped (run as root: it needs two system users)"
  exit 0
fi
for u in gpushare-test gpushare-bench; do
  id "$u" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$u"
done
dir=$(mktemp -d /tmp/gs-bench-hostile.XXXXXX)
chmod 755 "$dir"
export GPUSIM_STATE=$dir/sim GPUSIM_DEVICES=H100-80GB LD_LIBRARY_PATH=$build/sim
sock=$dir/gpushared.sock
export GPUSHARE_SOCKET=$sock
mport=$((20000 + RANDOM % 10000)) # the metrics endpoint (a scenario floods it)
# The issue's attacks hold 1,000 leases: the per-user cap (256 by default) is raised for them.
printf '[daemon]\nmax_leases_per_user = 1024\nkill_grace = 1\n' >"$dir/gpushare.conf"
"$build/bin/gpushared" --config "$dir/gpushare.conf" --socket "$sock" --state-dir "$dir/state" \
  --metrics-listen "127.0.0.1:$mport" --log-level warn 2>"$dir/daemon.log" &
daemon=$!
pids=()
stop_attack() {
  [[ ${#pids[@]} -gt 0 ]] || return 0
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  # (runuser may start a session of its own: the attacker's processes of this run, by pid.)
  for p in $(pgrep -u gpushare-test -f "$dir" || true); do kill -KILL "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_attack; kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
attacker=(runuser -u gpushare-test -- env GPUSHARE_SOCKET="$sock" GPUSIM_STATE="$GPUSIM_STATE")
attack() {
  setsid "${attacker[@]}" "$@" >/dev/null 2>&1 &
  pids+=($!)
}
leases() { # granted leases (the listing has the waiting requests too, state pending)
  "$build/bin/gpushare" leases --json 2>/dev/null | jq '[.[] | select(.state != "pending")] | length'
}
rss_mib() {
  awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$daemon/status"
}
# cpu_pct SECONDS: the daemon's CPU use over SECONDS, in percent of one CPU.
cpu_pct() {
  local t0 t1
  t0=$(awk '{print $14 + $15}' "/proc/$daemon/stat")
  sleep "$1"
  t1=$(awk '{print $14 + $15}' "/proc/$daemon/stat")
  awk -v d=$((t1 - t0)) -v s="$1" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", 100 * d / hz / s}'
}
measure() {
  local label=$1 target=${2:-100} line
  line=$(runuser -u gpushare-bench -- "$build/bench/bench_status" "$sock" "$requests" || true)
  printf '%-46s %-40s  target p99 < %s ms  RSS %s MiB\n' "$label" "$line" "$target" "$(rss_mib)"
}

cat <<EOM
bench/hostile.sh: another user's status while one user attacks gpushared (gpusim, 1 H100-80GB)
method: user gpushare-bench sends $requests status requests one after the other, each on a new
  connection (as gpushare status does), while user gpushare-test attacks; latency from connect
  to the reply's last byte (CLOCK_MONOTONIC); median, p99 and maximum of the $requests. Default
  limits (256 connections, 128 queued requests per user). Machine: $(nproc) CPUs, load average
  $(cut -d' ' -f1-3 /proc/loadavg) before the run.
EOM
measure "no attack"

for i in $(seq 100); do
  attack "$build/bin/gpushare" run --gpu-memory 256M -- "$build/tests/gs-hostile" forge 1024 3600
done
for _ in $(seq 200); do [[ $(leases) == 100 ]] && break; sleep 0.1; done
sleep 1
measure "100 leases, 1024 rewritten records each"
stop_attack

attack "$build/tests/gs-hostile" flood "$sock" 10000
attack "$build/tests/gs-hostile" flood "$sock" 10000
measure "20,000 connections opening"
measure "20,000 connections held (256 kept)"
stop_attack

"$build/bin/gpushare" run --gpu-memory 80G -- sleep 3600 >/dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do [[ $(leases) == 1 ]] && break; sleep 0.05; done
req='{"op":"acquire","gpu_memory":"40G","command":"flood"}'
attack "$build/tests/gs-hostile" flood "$sock" 10000 "$req"
attack "$build/tests/gs-hostile" flood "$sock" 10000 "$req"
measure "20,000 requests queueing"
measure "20,000 requests queued (128 wait)"
stop_attack
kill "$holder" 2>/dev/null || true

for i in $(seq 20); do
  attack "$build/tests/gs-hostile" pipeline "$sock" 200000
done
sleep 2
measure "20 clients pipelining status, reading nothing"
stop_attack

# ---- Issue 28: the round-2 attacks (targets: p99 < 50 ms, RSS < 200 MB, CPU < 5 %) ----
as_attacker() {
  "${attacker[@]}" "$@"
}
ids_of_attacker() {
  "$build/bin/gpushare" leases --json | jq -r ".[] | select(.user == \"gpushare-test\" and .id != null) | .id"
}
count() {
  "$build/bin/gpushare" leases --json | jq "[.[] | select($1)] | length"
}

# 1. 1000 leases past their time limit, kept ending by a process that is neither their holder's
# descendant nor one that joined them (a child joined and passed the regions over), and 3000 idle
# processes on the node.
attack "$build/tests/gs-hostile" hold "$sock" 1000 '{"op":"acquire","gpu_memory":"1M","wait":false,"time_limit_ms":2000}'
for _ in $(seq 300); do [[ $(leases) == 1000 ]] && break; sleep 0.1; done
setsid "${attacker[@]}" "$build/tests/gs-hostile" keep "$sock" $(ids_of_attacker) >/dev/null 2>&1 &
pids+=($!)
attack bash -c 'for i in $(seq 3000); do sleep 3600 & done; wait'
sleep 8 # time limits, kill_grace, the report
echo "  ($(count '.state == "expired"') leases expired and kept, $(pgrep -c -u gpushare-test) processes of the attacker)"
printf '%-46s %s %%  target < 5 %%\n' "  the daemon's CPU over 10 s" "$(cpu_pct 10)"
measure "1000 ending leases, 3000 idle processes" 50
stop_attack
for _ in $(seq 300); do [[ $(leases) == 0 ]] && break; sleep 0.1; done

# 2. 250 connections, each with a 1M lease (never idle) and an unread history reply (the
# attacker's history: 5,000 rows); then 250 connections asking for their history in a loop.
for cycle in 1 2 3 4 5; do
  attack "$build/tests/gs-hostile" hold "$sock" 1000 '{"op":"acquire","gpu_memory":"1M","wait":false}'
  for _ in $(seq 300); do [[ $(leases) == 1000 ]] && break; sleep 0.1; done
  stop_attack
  for _ in $(seq 300); do [[ $(leases) == 0 ]] && break; sleep 0.1; done
done
attack "$build/tests/gs-hostile" histhold "$sock" 250 '{"op":"acquire","gpu_memory":"1M","wait":false}'
for _ in $(seq 300); do [[ $(leases) == 250 ]] && break; sleep 0.1; done
sleep 2
measure "250 leases with an unread history reply" 50
stop_attack
for _ in $(seq 300); do [[ $(leases) == 0 ]] && break; sleep 0.1; done
attack "$build/tests/gs-hostile" histloop "$sock" 250
sleep 2
measure "250 connections looping history" 50
stop_attack

# 3. 1024 leases whose regions hold 1024 forged records each (pid 1, attached all ones), and 40
# CUDA processes of the attacker outside any lease.
attack "$build/tests/gs-hostile" hold "$sock" 1024 '{"op":"acquire","gpu_memory":"1M","wait":false}'
for _ in $(seq 300); do [[ $(leases) == 1024 ]] && break; sleep 0.1; done
setsid "${attacker[@]}" "$build/tests/gs-hostile" keep "$sock" $(ids_of_attacker) --forge >/dev/null 2>&1 &
pids+=($!)
for i in $(seq 40); do
  attack env -u LD_PRELOAD "$build/tests/gs-gpu-hog" hold 0
done
sleep 5
printf '%-46s %s %%\n' "  the daemon's CPU over 10 s" "$(cpu_pct 10)"
measure "1024 forged regions, 40 unmanaged processes" 50
stop_attack

# 4. Two users flood the metrics port (1000 connections each kept, the oldest closed, as fast as
# they can): scrapes by a third party that failed.
port=$mport
if curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" >/dev/null 2>&1; then
  attack "$build/tests/gs-hostile" tcpflood "$port" 60
  setsid runuser -u gpushare-bench -- "$build/tests/gs-hostile" tcpflood "$port" 60 >/dev/null 2>&1 &
  pids+=($!)
  sleep 1
  failed=0
  for i in $(seq 200); do
    curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" >/dev/null 2>&1 || failed=$((failed + 1))
  done
  printf '%-46s %s of 200 failed  target 0\n' "scrapes under two users' connection floods" "$failed"
  stop_attack
fi

# 5. Issue 34, key squatting: the attacker takes the key cdi/web (1 MiB) first, then tries a DRA
# driver's key; root's cdi add web; root's process in a cgroup root tied to the attacker's lease,
# when the attacker releases it. (Outcomes, not latencies: each is refused or survives, or not.)
install -d -m 700 -o gpushare-test "$dir/cdi-attacker"
mkdir -p "$dir/cdi-root"
"${attacker[@]}" "$build/bin/gpushare" cdi add web --gpu-memory 1M --dir "$dir/cdi-attacker" >/dev/null
set +e
out=$("$build/bin/gpushare" cdi add web --gpu-memory 8G --dir "$dir/cdi-root" 2>&1)
rc=$?
k8s=$("${attacker[@]}" "$build/bin/gpushare" cdi add k8s --key k8s/0a1b2c3d/gpu --gpu-memory 1M \
  --dir "$dir/cdi-attacker" 2>&1)
krc=$?
set -e
printf '%-46s exit %s, %s  target: refused, naming the owner\n' "root's cdi add over the attacker's cdi/web" "$rc" "$out"
printf '%-46s exit %s, %s  target: refused\n' "the attacker's cdi add with a k8s/ key" "$krc" "$k8s"
cgroot=/sys/fs/cgroup
[[ -e $cgroot/cgroup.controllers ]] || cgroot=/sys/fs/cgroup/pids
cg=/gs-bench-squat-$$
mkdir "$cgroot$cg"
sleep 300 &
victim=$!
echo "$victim" >"$cgroot$cg/cgroup.procs"
printf '{"op":"attach","key":"cdi/web","cgroup":"%s"}\n' "$cg" | "$build/tests/gs-daemon-tool" send "$sock" 500 >/dev/null
printf '{"op":"release","key":"cdi/web"}\n' | "${attacker[@]}" "$build/tests/gs-daemon-tool" send "$sock" 500 >/dev/null
sleep 2.5 # past kill_grace (1 s)
if kill -0 "$victim" 2>/dev/null; then state=alive; else state="stopped by the attacker's release"; fi
printf '%-46s %s  target: alive\n' "root's process in the attacker's lease" "$state"
kill "$victim" 2>/dev/null || true
wait "$victim" 2>/dev/null || true
rmdir "$cgroot$cg"

# 6. Issue 34, shim bypasses: the attacker's 2G lease allocates 8 GiB a route around the shim
# (gs-bypass: RTLD_DEEPBIND and libc's own dlsym, cuGetProcAddress with every version and flag,
# gpusim's private export table) while root's neighbouring lease, sized to what is left, waits
# to take all of it; each route five times. Figures: the attacker's process alive from its last
# allocation until it is gone (the watchdog's kill, enforce = kill, a scan a second), and the
# neighbour's wait for its memory from then (median and maximum, ms), or the shim's refusal.
bypass_round() { # MODE: prints "KILL_MS DENIED_MS" or "refused DENIED_MS"
  local out=$dir/bypass.out nb=$dir/neighbour.out go=$dir/bypass.go free mib start pid
  rm -f "$out" "$nb" "$go"
  # (once the watchdog no longer counts the last round's killed process: the whole GPU free)
  for _ in $(seq 100); do
    "$build/bin/gpushare" status --json | jq -e '.gpus[0] | .memory_free == .memory_leasable' \
      >/dev/null && break
    sleep 0.05
  done
  free=$("$build/bin/gpushare" status --json | jq '.gpus[0].memory_free')
  mib=$((free / 1048576 - 2048 - 1024)) # all but the attacker's 2G and 1G of room
  setsid "$build/bin/gpushare" run --gpu-memory "${mib}M" -- \
    "$build/tests/gs-bypass" neighbour "$go" $((mib - 518)) >"$nb" 2>/dev/null &
  local holder=$!
  until grep -qs '^ready ' "$nb"; do sleep 0.02; done
  setsid "${attacker[@]}" "$build/bin/gpushare" run --gpu-memory 2G -- \
    "$build/tests/gs-bypass" "$1" 8192 >"$out" 2>/dev/null &
  local client=$!
  until grep -qsE '^(held|refused) [0-9]+' "$out"; do sleep 0.005; done
  start=$(date +%s%N)
  touch "$go"
  pid=$(awk '$1 == "held" || $1 == "refused" { print $NF }' "$out")
  if grep -q '^held ' "$out"; then
    while [[ $(ps -o stat= -p "$pid" 2>/dev/null || true) == [^Z]* ]]; do sleep 0.005; done
    printf '%s ' $((($(date +%s%N) - start) / 1000000))
  else
    printf 'refused '
  fi
  until grep -qs '^filled ' "$nb"; do sleep 0.02; done
  awk '$1 == "filled" { print $3 }' "$nb"
  kill -KILL -- "-$client" "-$holder" 2>/dev/null || true
  wait "$client" "$holder" 2>/dev/null || true
  for _ in $(seq 100); do [[ $(leases) == 0 ]] && break; sleep 0.05; done
}
# median_max N...: "median / max" of the numbers.
median_max() {
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%d / %d", v[int((NR + 1) / 2)], v[NR] }'
}
for mode in deepbind procaddr exporttable; do
  kills=() denied=()
  for _ in 1 2 3 4 5; do
    read -r k d <<<"$(bypass_round "$mode")"
    kills+=("$k") denied+=("$d")
  done
  if [[ ${kills[0]} == refused ]]; then
    what="refused by the shim (5 of 5)"
  else
    what="killed after $(median_max "${kills[@]}") ms"
  fi
  printf '%-46s %s; neighbour waited %s ms  target: <= 2000 ms\n' "shim bypass: $mode" "$what" \
    "$(median_max "${denied[@]}")"
done

# 7. Issue 34: another user's lease churns the compute scheduler (every grant answered at once with
# a first launch and a yield still wanting, never a launch), or holds every channel and lease it
# may; a 50 % lease's share of gpusim's device time over 5 s, and gpushared's CPU over the run
# (tests/shim/compute_check.c; the same cases as bench/compute.sh's, here side by side).
compute_case() { # TITLE TARGET ARGS...
  local title=$1 target=$2 out achieved cpu
  shift 2
  out=$(GS_BUILD_DIR=$build bash "$(dirname "$0")/../tests/shim/run_sim.sh" --daemon -- \
    "$build/tests/compute_check" "$@" 2>&1 || true)
  achieved=$(awk '/^\[1,6\]:[ab]?v?[=>]/ { printf "%s%s %s %%", sep, $1, $(NF - 2); sep = ", " }' <<<"$out")
  cpu=$(sed -n 's/^gpushared used \([0-9.]*\) % of a CPU.*/\1/p' <<<"$out")
  printf '%-46s %s; gpushared %s %% CPU  target %s\n' "$title" "${achieved:-no figure}" "${cpu:-?}" "$target"
}
compute_case "compute churn: 10 % lease, 16 channels" "v >= 48 %" v:g=50 h:g=10,hostile=2,chans=16 \
  [1,6]:v\>=48
compute_case "compute churn: 50 % lease, 256 channels" "v >= 48 %" v:g=50 h:g=50,hostile=2,chans=256 \
  [1,6]:v\>=48
compute_case "compute slots held: two --compute 50 jobs" "a, b 50 +- 3 %" h:hostile=3 a:g=50 b:g=50 \
  [1,6]:a=50~3 [1,6]:b=50~3
