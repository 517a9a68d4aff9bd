# SPDX-License-Identifier: Apache-2.0
# Issue 28 (the watchdog's budget over user-written state must not disarm it): a user whose
# leases' regions hold more forged records than one scan reads of one user (16384) leaves the
# watchdog unsure of their processes at every scan. With enforce = kill, an unmanaged CUDA process
# of that user (no shim, no lease) must still be killed: once its user's regions were all read
# over a rotation of scans and none listed it. Before the fix it was left alone forever.
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
HOG=$GS_BUILD_DIR/tests/gs-gpu-hog
# 70 leases x 256 records read per region = 17,920 > 16,384: the user's budget runs out at every
# scan. A rotation is then (80 x 256 / 16384, rounded up) + 1 = 3 scans.
CONFIG=$'[daemon]\nenforce = kill\nwatch_interval = 0.5\nmax_leases_per_user = 80\nkill_grace = 1'
start_daemon
for i in $(seq 70); do
  bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 100M -- "$HOSTILE" forge 1024 600
done
wait_eq 30 70 lease_count
wait_until 20 bash -c "[[ \$(pgrep -u $USER2 -fc 'gs-hostile forge 1024 600') -ge 70 ]]"
sleep 1 # (each has forged its records)
# (Its own output file: the hog prints "held BYTES PID" once it holds the memory.)
bg "${AS_USER2[@]}" env -u LD_PRELOAD "$HOG" hold 1 >"$WORK/hog.out"
wait_until 10 grep -q held "$WORK/hog.out"
hog=$(awk '/held/ {print $3}' "$WORK/hog.out")
start=$(date +%s%N)
deadline=$((SECONDS + 15))
until process_gone "$hog"; do
  ((SECONDS < deadline)) || fail "the unmanaged process of the user with forged regions is alive after 15 s"
  sleep 0.05
done
took=$((($(date +%s%N) - start) / 1000000))
grep -q "killed pid $hog (user $USER2, .*outside any lease (enforce = kill)" "$WORK/daemon.log" ||
  fail "no log line for the kill: $(grep "pid $hog" "$WORK/daemon.log" | tail -2)"
daemon_alive || fail "gpushared died"
pass "forged regions delay the watchdog, never disarm it: the unmanaged process killed in $took ms"
