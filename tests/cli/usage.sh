# SPDX-License-Identifier: Apache-2.0
# Issue 14, the conventions of every command: --version, `gpushare help CMD` = `CMD --help`,
# --json on every command that prints (errors as JSON too), the man pages describe every option
# of every --help and have one table of exit codes, the status wording, the daemon's timestamps.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
start_daemon
MAN1=$GS_SOURCE_DIR/docs/man/gpushare.1
MAN8=$GS_SOURCE_DIR/docs/man/gpushared.8

# --version on every program: tests/version.sh (against the version CMakeLists.txt sets).

# help CMD is CMD --help, for every command gpushare --help lists.
commands=$(gs --help | sed -n 's/^  \([a-z]*\)  .*/\1/p')
expect_eq "$(echo $commands)" "run status top leases release suspend resume history cdi doctor plan mig" "the commands"
for c in $commands; do
  expect_eq "$(gs help "$c")" "$(gs "$c" --help)" "gpushare help $c"
done
expect_fail 2 'gpushare: unknown command "nope" (see gpushare --help)' gs help nope
pass "gpushare help CMD prints CMD --help for every command"

# The man pages describe every option of every --help (troff writes '-' as '\-').
man_options() {
  sed 's/\\-/-/g' "$1" | grep -oE -- '--[a-z][a-z-]*' | sort -u
}
help_options() {
  "$@" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u
}
for c in $commands "plan replay"; do
  missing=$(comm -23 <(help_options gs $c) <(man_options "$MAN1"))
  [[ -z $missing ]] || fail "gpushare.1 lacks the options of gpushare $c: $missing"
  grep -q "^\.SS ${c%% *}$" <<<"$(sed 's/\\-/-/g' "$MAN1")" || fail "gpushare.1 has no section for $c"
done
missing=$(comm -23 <(help_options "$BIN/gpushared") <(man_options "$MAN8"))
[[ -z $missing ]] || fail "gpushared.8 lacks: $missing"
for page in "$MAN1" "$MAN8"; do
  expect_eq "$(sed -n '/^\.SH EXIT STATUS/,/^\.SH/p' "$page" | grep -c '^\.TS$')" 1 "exit code tables in $page"
done
for code in 0 1 2 75 126 127 128+N; do
  grep -q "^$code	" <<<"$(sed -n '/^\.SH EXIT STATUS/,/^\.TE/p' "$MAN1")" || fail "gpushare.1's exit table lacks $code"
done
if command -v man >/dev/null; then
  warnings=$(MANWIDTH=80 man -l "$MAN8" 2>&1 >/dev/null)
  [[ -z $warnings ]] || fail "gpushared.8 does not render cleanly: $warnings"
fi
pass "the man pages describe every option of every command's --help and have one exit code table"

# --json on every command that prints, and errors as JSON.
bg_gs run --gpu-memory 1G --name j -- sleep 30
wait_eq 5 1 lease_count
id=$(gs leases --json | jq '.[0].id')
for cmd in "status" "top --iterations 1" "leases" "history" \
  "plan --job 0.25x4 --node-type a:gpus=1,price=1" "mig plan --model A100-40GB --gpu-memory 4G" \
  "mig profiles --model A100-40GB"; do
  gs $cmd --json | jq -e . >/dev/null || fail "gpushare $cmd --json is not JSON"
done
gs release --json "$id" 999 >"$WORK/release.json" && fail "releasing lease 999 succeeded"
expect_eq "$(jq -c 'map(.ok)' "$WORK/release.json")" "[true,false]" "release --json of two ids"
expect_eq "$(jq -r '.[1].error.message' "$WORK/release.json")" "no lease 999" "release --json's error"
wait_eq 5 0 lease_count
gs run --json --gpu-memory 1G -- sh -c 'exit 3' 2>"$WORK/run.json" && fail "exit 3 was lost"
expect_eq "$(jq -c -s 'map(.event)' "$WORK/run.json")" '["granted","ended"]' "run --json's events"
expect_eq "$(jq -c -s '.[1] | [.exit_status]' "$WORK/run.json")" '[3]' "run --json's end"
expect_eq "$(jq -c -s '.[0].lease.memory_limit' "$WORK/run.json")" $((1 << 30)) "run --json's lease"
out=$(gs status --json --socket "$WORK/none.sock") && fail "status on a missing socket succeeded"
expect_eq "$(jq -r .error.code <<<"$out")" unreachable "status --json's error code"
out=$(gs leases --json --bogus) && fail "leases --bogus succeeded"
expect_eq "$out" '{"ok":false,"error":{"code":"usage","message":"unknown option \"--bogus\""}}' "a usage error as JSON"
for cmd in "plan" "plan replay" "mig plan" "mig profiles"; do
  out=$(gs $cmd --json --bogus) && fail "$cmd --bogus succeeded"
  expect_eq "$(jq -c .error <<<"$out")" '{"code":"usage","message":"unknown option \"--bogus\""}' "$cmd: a usage error as JSON"
done
set +e
gs run --json --gpu-memory 4 -- true 2>"$WORK/err.json" >/dev/null
rc=$?
set -e
expect_eq "$rc" 2 "exit status of run --json with a bad size"
expect_eq "$(cat "$WORK/err.json")" '{"ok":false,"error":{"code":"usage","message":"--gpu-memory: invalid memory size \"4\": add a unit: 4G or 4096M"}}' "run --json's usage error (stderr)"
pass "--json on status, top, leases, release, history, run, plan and mig; errors as JSON objects"

# Status wording: "1 lease", FREE memory instead of LOGICAL slots.
bg_gs run --gpu-memory 30G -- sleep 30
wait_eq 5 1 lease_count
out=$(gs status)
grep -Eq '^1 GPU, 1 lease, 0 waiting ' <<<"$out" || fail "status says: $out"
grep -q 'LOGICAL' <<<"$out" && fail "status still shows LOGICAL: $out"
# An H100-80GB: 79.6G of NVML total, 480M of it the driver's (used with no process), 79.2G
# leasable (what CUDA sees), so 49.2G free beside a 30G lease.
grep -Eq '^  0 H100-80GB +shared +49.2G +480M / +30G / +79.6G +0% +0%$' <<<"$out" || fail "GPU line: $out"
long=$(awk 'length($0) > 80' <<<"$out")
[[ -z $long ]] || fail "status lines over 80 columns: $long"
pass "status: '1 lease', 50G FREE on an 80G GPU with 30G leased, at most 80 columns"

# The daemon stamps its lines (RFC 3339, ms) unless standard error is the journal.
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} gpushared\[[0-9]+\]: ' <<<"$(head -1 "$WORK/daemon.log")" ||
  fail "no timestamp: $(head -1 "$WORK/daemon.log")"
touch "$WORK/journal.log"
GPUSIM_STATE=$WORK/sim-journal JOURNAL_STREAM=$(stat -c '%d:%i' "$WORK/journal.log") "$BIN/gpushared" --config /dev/null \
  --socket "$WORK/other.sock" --state-dir "$WORK/other" --metrics-listen 127.0.0.1:0 2>>"$WORK/journal.log" &
other=$!
wait_until 5 grep -q listening "$WORK/journal.log"
kill -TERM "$other"
wait "$other"
grep -q '^gpushared\[[0-9]*\]: ' "$WORK/journal.log" || fail "stamped under the journal: $(cat "$WORK/journal.log")"
grep -q '^[0-9]' "$WORK/journal.log" && fail "stamped under the journal: $(cat "$WORK/journal.log")"
pass "daemon lines start with an RFC 3339 time with ms, except under systemd's journal"
