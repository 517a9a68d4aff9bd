# SPDX-License-Identifier: Apache-2.0
# Issue 14, gpushare status --processes (and top): each GPU's processes with pid, user, lease and
# memory from NVML; a user sees their own in detail and the others' as a count, root all. top
# fits 80 columns and shows the time.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
start_daemon
GIB=$((1 << 30))

# A CUDA process in a lease holding 1 GiB, and one outside any lease holding 2 GiB.
bg_gs run --gpu-memory 4G --name holder -- "$PROGS/memhold" 1
client=$!
has_job() {
  [[ -n $(job_of "$client") ]]
}
wait_until 10 has_job
pid=$(job_of "$client")
lease=$(gs leases --json | jq '.[0].id')
bg "$PROGS/memhold" 2
loose=$!
procs() {
  gs status --processes --json | jq -c '.gpus[0].processes | sort_by(.pid) | map([.pid, .user, .lease, .memory_used, .name])'
}
# NVML's memory of a process is its allocations and its context's own (543162368 bytes on an
# H100-80GB, issue 12).
CONTEXT=543162368
expected=$(jq -c -n "[[$pid,\"root\",$lease,$((GIB + CONTEXT)),\"memhold\"],[$loose,\"root\",0,$((2 * GIB + CONTEXT)),\"memhold\"]] | sort_by(.[0])")
wait_eq 10 "$expected" procs
table=$(gs status --processes)
grep -Eq "^ +$pid root +$lease +1.5G  memhold$" <<<"$table" || fail "no process row: $table"
grep -Eq "^ +$loose root +- +2.5G  memhold$" <<<"$table" || fail "no row for the process outside leases: $table"
expect_eq "$(gs status --json | jq '.gpus[0] | has("processes")')" false "processes without --processes"
pass "status --processes: pid, user, lease and NVML's memory of each process"

# top: the same, at most 80 columns, with the time.
out=$(gs top --processes --iterations 1)
grep -Eq "^ +$pid root +$lease +1.5G  memhold$" <<<"$out" || fail "top --processes: $out"
long=$(awk 'length($0) > 80' <<<"$out")
[[ -z $long ]] || fail "top lines over 80 columns: $long"
grep -Eq '^1 GPU, 1 lease, 0 waiting +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$' <<<"$(sed -n 2p <<<"$out")" ||
  fail "top's second line has no time: $out"
grep -q LOGICAL <<<"$out" && fail "top still says LOGICAL: $out"
pass "top --processes: at most 80 columns, the time on its second line, '1 lease'"

have_user2 || gs_skip "the second user's part needs root (the rest passed)"
chmod -R a+rwX "$WORK/sim"
bg runuser -u "$USER2" -- env GPUSHARE_SOCKET="$GPUSHARE_SOCKET" LD_PRELOAD="$JOB_PRELOAD" \
  ASAN_OPTIONS="${ASAN_OPTIONS:-}" GPUSIM_STATE="$GPUSIM_STATE" LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
  "$BIN/gpushare" run --gpu-memory 8G -- "$PROGS/memhold" 3
user2_procs() {
  as_user2 status --processes --json | jq -c '.gpus[0] | [(.processes | map([.user, .memory_used])), .others.processes, .others.process_memory]'
}
wait_eq 10 "[[[\"$USER2\",$((3 * GIB + CONTEXT))]],2,$((3 * GIB + 2 * CONTEXT))]" user2_procs
out=$(as_user2 status --processes)
grep -q "2 processes of other users, 4.0G" <<<"$out" || fail "others not counted: $out"
grep -q "holder" <<<"$out" && fail "root's lease name leaked: $out"
expect_eq "$(gs status --processes --json | jq '.gpus[0].processes | length')" 3 "processes root sees"
pass "the second user sees their process in detail and root's as a count; root sees all three"
