# SPDX-License-Identifier: Apache-2.0
# Issue 12: a lease covers its processes' whole GPU footprint, and gpushared watches what really
# runs. On a simulated H100-80GB (calibrated on a real one):
#  2. --gpu-memory 4G, a job of two processes that each create a context and allocate what
#     cuMemGetInfo says is free: NVML's per-process memory of the two sums to exactly 4 GiB.
#  3. a CUDA process without a lease (no shim) is unmanaged in status and metrics within 2 s;
#     enforce = report leaves it and admission stops offering its memory; enforce = kill kills it
#     and logs who and why.
#  4. a lease's second process without the shim, allocating past the limit: over the limit within
#     2 s; killed under enforce = kill (the shim's process stays).
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
HOG=$GS_BUILD_DIR/tests/gs-gpu-hog
NVML_PROCS=$GS_BUILD_DIR/tests/gs-nvml-procs
CONTEXT=543162368      # a context's own memory (NVML per-process, measured on a real H100)
LEASABLE_MIB=81079     # what CUDA sees of an H100-80GB: NVML's total less 480 MiB reserved
TOLERANCE=$((128 << 20)) # the watchdog's default tolerance

# nvml_used PID: NVML's per-process memory of PID on GPU 0 (0 when not listed).
nvml_used() {
  "$NVML_PROCS" 0 | awk -v pid="$1" '$1 == pid { used = $2 } END { print (used == "" ? 0 : used) }'
}
status_of() {
  gs status --json | jq -c "$1"
}
# within_2s WHAT EXPECTED CMD...: CMD prints EXPECTED within 2 s of $T0 (when the process held its
# memory; 100 ms steps).
within_2s() {
  local what=$1 expected=$2 start=$T0 got
  shift 2
  until got=$("$@") && [[ $got == "$expected" ]]; do
    (($(date +%s%N) - start < 2000000000)) || fail "$what: not within 2 s (last: \"$got\", expected \"$expected\")"
    sleep 0.1
  done
  pass "$what within $((($(date +%s%N) - start) / 1000000)) ms"
}
metric() { # metric NAME_AND_LABELS_PREFIX: its value in a scrape, empty when absent
  curl -fsS "http://$METRICS_LISTEN/metrics" | awk -v m="$1" 'index($0, m) == 1 { print $NF }'
}
# hold_started FILE: waits for a gs-gpu-hog's "held BYTES PID" line; sets HELD_PID, and T0 (ns)
# to when it was seen.
hold_started() {
  wait_until 10 grep -qs '^held ' "$1"
  T0=$(date +%s%N)
  HELD_PID=$(awk '/^held / { print $3 }' "$1")
}

# bypass_lease NAME: a 4G lease whose job holds 1 GiB through the shim and 6 GiB in a second
# process without it; sets CLIENT, SHIMMED and BYPASS (pids) once both hold their memory.
bypass_lease() {
  bg_gs run --gpu-memory 4G -- bash -c "\"$HOG\" hold 1 >$WORK/$1-shimmed.out & env -u LD_PRELOAD \"$HOG\" hold 6 >$WORK/$1-bypass.out & wait"
  CLIENT=$!
  hold_started "$WORK/$1-shimmed.out"
  SHIMMED=$HELD_PID
  hold_started "$WORK/$1-bypass.out"
  BYPASS=$HELD_PID
}

# Per-lease series (gpushare_lease_over_limit_bytes) name users: on only with metrics_users = all.
CONFIG=$'[daemon]\nenforce = report\nmetrics_users = all'
start_daemon_metrics

# --- 2: a job's processes together never hold more than its lease, contexts included.
bg_gs run --gpu-memory 4G -- "$HOG" pair >"$WORK/pair.out"
pair_client=$!
wait_until 10 grep -qs '^pair ' "$WORK/pair.out"
read -r _ pid1 held1 pid2 held2 <"$WORK/pair.out"
used1=$(nvml_used "$pid1")
used2=$(nvml_used "$pid2")
expect_eq "$used1" $((CONTEXT + held1)) "NVML's memory of the first process: its context and allocations"
expect_eq "$used2" $((CONTEXT + held2)) "NVML's memory of the second process"
expect_eq $((used1 + used2)) $((4 << 30)) "NVML's memory of the job's two processes"
wait_eq 3 "[$((4 << 30)),0]" status_of '[.gpus[0].leases[0].memory_real, .gpus[0].leases[0].over_limit]'
pass "--gpu-memory 4G, two processes filling what cuMemGetInfo says is free: NVML shows $used1 + $used2 = 4 GiB"
kill -TERM "$pair_client"
wait "$pair_client" || true
wait_eq 5 0 lease_count

# --- 3 (report): an unmanaged process shows within 2 s, is left alone, and its memory is not offered.
bg env -u LD_PRELOAD "$HOG" hold 10 >"$WORK/unmanaged.out"
hog=$!
hold_started "$WORK/unmanaged.out"
expect_eq "$HELD_PID" "$hog" "the unmanaged process's pid"
taken=$(((10 << 30) + CONTEXT))
within_2s "an unmanaged process in status" "[$hog,$taken]" status_of '[.gpus[0].unmanaged[0].pid, .gpus[0].unmanaged[0].memory_used]'
within_2s "an unmanaged process in metrics" 1 metric 'gpushare_unmanaged_processes{gpu="0"'
expect_eq "$(metric 'gpushare_unmanaged_memory_bytes{gpu="0"')" "$taken" "unmanaged memory in metrics"
table=$(gs status)
grep -q "^  ! UNMANAGED pid $hog ($(id -un)) holds 10.51 GiB: /" <<<"$table" ||
  fail "no marked row in gpushare status: $table"
grep -q "GPU 0: pid $hog (user $(id -un), command \"$HOG hold 10\") holds 10.51 GiB outside any lease" "$WORK/daemon.log" ||
  fail "no log line naming the unmanaged process"
free_mib=$((LEASABLE_MIB - taken / (1 << 20)))
expect_eq "$(status_of '.gpus[0].memory_free')" $((free_mib << 20)) "memory offered beside the unmanaged process"
set +e
gs run --gpu-memory $((free_mib + 1))M --no-wait -- true 2>/dev/null
rc=$?
set -e
expect_eq "$rc" 75 "a request for more than what is left beside the unmanaged process"
gs run --gpu-memory ${free_mib}M --no-wait -- true || fail "a request for what is left was refused"
wait_scans 2
kill -0 "$hog" || fail "enforce = report killed the unmanaged process"
pass "enforce = report: the unmanaged process is left; admission offers ${free_mib} MiB, not its 10.51 GiB"
kill -KILL "$hog"
wait "$hog" 2>/dev/null || true
wait_eq 3 "$((LEASABLE_MIB << 20))" status_of '.gpus[0].memory_free'
pass "its memory is offered again once it is gone"

# --- 4 (report): a lease's process that bypasses the shim takes the lease over its limit.
bypass_lease report
client=$CLIENT shimmed=$SHIMMED bypass=$BYPASS
real=$(((7 << 30) + 2 * CONTEXT))
within_2s "a lease over its limit in status" "[$real,$((real - (4 << 30)))]" status_of '[.gpus[0].leases[0].memory_real, .gpus[0].leases[0].over_limit]'
id=$(gs leases --json | jq '.[0].id')
within_2s "a lease over its limit in metrics" $((real - (4 << 30))) metric "gpushare_lease_over_limit_bytes{lease=\"$id\""
table=$(gs status)
grep -q "^  ! *$id root " <<<"$table" && grep -q "^ *OVER LIMIT: its processes hold 8.01 GiB (4.01 GiB over)$" <<<"$table" ||
  fail "no marked lease row in gpushare status: $table"
grep -q "lease $id (user $(id -un)) holds 8.01 GiB on GPU 0, over its limit of 4 GiB: .*pid $bypass (user $(id -un), command \"$HOG hold 6\") 6.51 GiB" "$WORK/daemon.log" ||
  fail "no log line naming the lease's processes"
wait_scans 2
kill -0 "$bypass" || fail "enforce = report killed the process"
pass "enforce = report: a bypassing process of lease $id shows it over its limit, and is left"
kill -KILL "$shimmed" "$bypass" # the lease lives while its processes do
kill -TERM "$client"
wait "$client" 2>/dev/null || true
wait_eq 5 0 lease_count

# --- enforce = kill: the unmanaged process, then the bypassing process (not the shim's).
stop_daemon
CONFIG=$'[daemon]\nenforce = kill\nmetrics_users = all'
start_daemon_metrics
# Root's own processes of no lease are never killed: as root, the victim is nobody's.
as_victim=()
victim_user=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
  as_victim=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  victim_user=nobody
fi
bg "${as_victim[@]}" env -u LD_PRELOAD "$HOG" hold 2 >"$WORK/victim.out"
hog=$!
hold_started "$WORK/victim.out"
start=$(date +%s%N)
set +e
wait "$hog"
rc=$?
set -e
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "$rc" 137 "exit status of the unmanaged process (SIGKILL)"
((took <= 2000)) || fail "the unmanaged process was killed after $took ms"
grep -q "killed pid $hog (user $victim_user, command \"$HOG hold 2\"): it held 2.51 GiB on GPU 0 outside any lease (enforce = kill)" "$WORK/daemon.log" ||
  fail "no log line for the kill"
wait_eq 3 1 metric 'gpushare_watchdog_kills_total{reason="outside_lease"}'
pass "enforce = kill: the unmanaged process was killed $took ms after it held memory, and logged"

bypass_lease kill
client=$CLIENT shimmed=$SHIMMED bypass=$BYPASS
start=$(date +%s%N)
while kill -0 "$bypass" 2>/dev/null; do
  (($(date +%s%N) - start < 2000000000)) || fail "the bypassing process was not killed within 2 s"
  sleep 0.05
done
took=$((($(date +%s%N) - start) / 1000000))
id=$(gs leases --json | jq '.[0].id')
grep -q "killed pid $bypass (user $(id -un), command \"$HOG hold 6\"): lease $id was over its 4 GiB limit on GPU 0 (enforce = kill)" "$WORK/daemon.log" ||
  fail "no log line for the kill of the bypassing process"
kill -0 "$shimmed" || fail "the shim's process was killed too"
wait_eq 3 "[$(((1 << 30) + CONTEXT)),0]" status_of '[.gpus[0].leases[0].memory_real, .gpus[0].leases[0].over_limit]'
pass "enforce = kill: the process that bypassed the shim was killed within $took ms; the lease is within its limit and its shim process runs on"
kill -TERM "$client"
wait "$client" 2>/dev/null || true
