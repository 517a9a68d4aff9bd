# SPDX-License-Identifier: Apache-2.0
# Issue 15, findings 3 and 9, and issue 28, finding 2: a lease whose records its processes
# rewrote (pid 1, no lock) still ends when its processes are gone; the processes that joined it
# are stopped with its job; one whose region a process outside its job keeps is reported once and
# ends with root's release --force (SIGTERM, SIGKILL after kill_grace); leases full of such records leave
# other users served; a job whose gpushare run is stopped is stopped by the daemon itself when
# root releases its lease.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
CONFIG=$'[daemon]\nkill_grace = 1'
start_daemon

# Finding 3: every record rewritten, then the job exits: the lease ends with it.
out=$(gs2 run --gpu-memory 1G -- "$HOSTILE" forge 1024)
expect_eq "$out" "forged 1024 records" "the job"
wait_eq 3 0 lease_count
pass "a lease whose records were rewritten ends when its processes are gone"

# A process outside the job (started apart by the lease's user, not a descendant of gpushare
# run, which keeps its job's orphans) joins the region through gpushared, rewrites it and ignores
# SIGTERM: having joined, it is one of the lease's processes (issue 28), and the user's release
# stops it (SIGKILL after kill_grace).
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 4G -- sleep 600
wait_eq 5 1 lease_count
id=$(user2_lease)
spec=$(gs leases --json | jq -r ".[] | select(.id == $id) | .region")
bg "${AS_USER2[@]}" env GPUSHARE_REGION="$spec" "$HOSTILE" forge 1024 600
wait_until 5 pgrep -u "$USER2" -f "gs-hostile forge 1024 600" >/dev/null
member=$(pgrep -u "$USER2" -f "gs-hostile forge 1024 600")
gs2 release "$id" >/dev/null
wait_until 5 process_gone "$member"
wait_eq 5 gone lease_state "$id"
pass "the user's release stops a process that joined the lease from outside its job"

# A process that takes the region without asking gpushared (it reopens another process's
# descriptor and takes the membership lock itself) and ignores SIGTERM: not the lease's job,
# never a member. The user's release leaves it (it waits out kill_grace and 7 s more, then says
# what holds the lease); the lease stays ending, is reported once kill_grace after the SIGKILL,
# and is looked at no further than its region's lock; root's release --force stops it.
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 4G -- sleep 600
wait_eq 5 1 lease_count
id=$(user2_lease)
spec=$(gs leases --json | jq -r ".[] | select(.id == $id) | .region")
bg "${AS_USER2[@]}" env GPUSHARE_REGION="$spec" "$HOSTILE" forge 1024 600
wait_until 5 pgrep -u "$USER2" -f "gs-hostile forge 1024 600" >/dev/null
member=$(pgrep -u "$USER2" -f "gs-hostile forge 1024 600")
fd=$(for f in /proc/"$member"/fd/*; do
  [[ $(readlink "$f") == /memfd:gpushare-region* ]] && basename "$f" && break
done)
bg "${AS_USER2[@]}" "$HOSTILE" adopt "$member" "$fd" 600
wait_until 5 pgrep -u "$USER2" -f "gs-hostile adopt" >/dev/null
escaped=$(pgrep -u "$USER2" -f "gs-hostile adopt")
kill -KILL "$member"
set +e
out=$(gs2 release "$id" 2>&1)
rc=$?
set -e
expect_eq "$rc" 1 "exit status of the user's release"
expect_eq "$out" "gpushare: lease $id is still ending 8 s after its release: processes still hold its region (see gpushare status --processes; root may release it --force)" "the user's release"
expect_eq "$(lease_state "$id")" ending "the lease after its user's release"
process_gone "$escaped" && fail "the escaped process was stopped without force"
expect_eq "$(grep -c "lease $id (user $USER2) cannot end: processes still use its region" "$WORK/daemon.log")" 1 \
  "reports of the lease that cannot end"
sleep 1.5
expect_eq "$(grep -c "lease $id (user $USER2) cannot end" "$WORK/daemon.log")" 1 "reports a while later"
out=$(gs release --force "$id")
expect_eq "$out" "lease $id released by force" "release --force"
expect_eq "$(lease_count)" 0 "leases after release --force"
expect_eq "$(gs status --json | jq '.gpus[0].memory_leased')" 0 "memory leased"
process_gone "$escaped" || fail "the process holding the region survived release --force"
grep -q "lease $id released by force by root" "$WORK/daemon.log" || fail "no log line"
set +e
out=$(gs2 release --force 1 2>&1)
rc=$?
set -e
expect_eq "$rc:$out" "1:gpushare: only root may release a lease by force" "release --force by a user"
pass "a lease a foreign process keeps is reported once and left to root; release --force ends it"

# Twenty leases whose processes rewrite their regions and stay: other users are served.
for i in $(seq 20); do
  bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 1G -- "$HOSTILE" forge 1024 600
done
wait_eq 10 20 lease_count
for i in 1 2 3; do
  gs status --json | jq -e '.node.leases == 20' >/dev/null || fail "status"
  gs run --gpu-memory 1G --no-wait -- true || fail "a grant beside rewritten leases"
done
pass "20 leases with rewritten records: other users' requests are served"
for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
wait_eq 10 0 lease_count

# Finding 9: the user's gpushare run is stopped (SIGSTOP); root releases the lease: the daemon
# stops the job itself.
# (sleep 617: a duration of this test's own, since other tests may run sleeps as the same user.)
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 1G -- sleep 617
wait_eq 5 1 lease_count
id=$(user2_lease)
wait_until 5 pgrep -u "$USER2" -fx "sleep 617" >/dev/null
job=$(pgrep -u "$USER2" -fx "sleep 617")
client=$(ps -o ppid= -p "$job" | tr -d ' ')
kill -STOP "$client"
gs release "$id" >/dev/null
wait_until 4 process_gone "$job"
wait_eq 2 0 lease_count
kill -CONT "$client"
pass "root's release stops the job of a stopped gpushare run (SIGTERM, then SIGKILL)"
