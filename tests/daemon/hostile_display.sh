# SPDX-License-Identifier: Apache-2.0
# Issue 15, finding 8: a command shown to root (and in the logs) carries no control character of
# its user: C0 (an OSC title sequence), C1 (U+009B, CSI) and bidirectional overrides (U+202E)
# are shown escaped; so are the names and command lines of processes on the GPUs (status
# --processes, the watchdog's rows and log lines).
source "$(dirname "$0")/hostile_lib.sh"
GPUSIM_DEVICES=H100-80GB
start_daemon
bg "${AS_USER2[@]}" "$BIN/gpushare" run --gpu-memory 1G -- sh -c 'sleep 600' \
  $'\e]0;pwned\a' $'\xc2\x9b31m' $'\xe2\x80\xaegnp.exe' $'\xe2\x81\xa6x\xe2\x81\xa9'
wait_eq 5 1 lease_count
expected='sh -c sleep 600 \x1b]0;pwned\x07 \u009b31m \u202egnp.exe \u2066x\u2069'
expect_eq "$(gs leases --json | jq -r '.[0].command')" "$expected" "the command root sees"
# No raw control byte in what root's terminal gets, nor in the log.
raw=$'[\x01-\x08\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]\|\xe2\x80[\xaa-\xae]\|\xe2\x81[\xa6-\xa9]'
for out in "$(gs leases)" "$(gs status)" "$(gs top --iterations 1)" "$(cat "$WORK/daemon.log")"; do
  LC_ALL=C grep -q "$raw" <<<"$out" && fail "a raw control character reached root: $(LC_ALL=C grep "$raw" <<<"$out" | od -c | head -3)"
done
grep -qF "$expected" <<<"$(gs leases)" || fail "the escaped command in gpushare leases"
pass "C0, C1 and bidirectional controls in a command are shown escaped"

# A CUDA process outside any lease whose program's name carries the same characters.
hog="$WORK/"$'\e]0;x\a\xc2\x9b\xe2\x80\xaehog'
ln -s "$GS_BUILD_DIR/tests/cuda_progs/memhold" "$hog"
bg "${AS_USER2[@]}" LD_LIBRARY_PATH="$GS_BUILD_DIR/sim" "$hog" 1
wait_until 5 sh -c "'$BIN/gpushare' status --processes --json | jq -e '[.gpus[0].processes[]? | select(.lease == 0)] | length > 0' >/dev/null"
wait_until 5 grep -q 'outside any lease' "$WORK/daemon.log"
for out in "$(gs status --processes)" "$(gs status --processes --json)" "$(cat "$WORK/daemon.log")"; do
  LC_ALL=C grep -q "$raw" <<<"$out" && fail "a raw control character of a process name reached root: $(LC_ALL=C grep "$raw" <<<"$out" | od -c | head -3)"
done
pass "process names and command lines are shown escaped"
