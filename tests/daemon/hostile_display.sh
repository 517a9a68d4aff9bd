# Issue 15, finding 8: a command shown to root (and in the logs) carries no control character of
# its user: C0 (an OSC title sequence), C1 (U+009B, CSI) and bidirectional overrides (U+202E)
# are shown escaped.
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
