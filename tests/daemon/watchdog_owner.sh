# SPDX-License-Identifier: Apache-2.0
# Issue 37, item 1: a watchdog kill reaches the job's owner. A job of a 4G lease that clears
# LD_PRELOAD and holds 6 GiB is killed under enforce = kill; its owner reads why on the job's
# stderr (gpushare run, told before the signal), in gpushare history (the lease's end reason) and
# in the metrics (gpushare_watchdog_kills_total by reason), not only "Killed" and exit 137.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
HOG=$GS_BUILD_DIR/tests/gs-gpu-hog

metric() { # metric NAME_AND_LABELS: its value in a scrape, empty when absent
  curl -fsS "http://$METRICS_LISTEN/metrics" | awk -v m="$1" 'index($0, m) == 1 { print $NF }'
}

CONFIG=$'[daemon]\nenforce = kill'
start_daemon_metrics
expect_eq "$(metric 'gpushare_watchdog_kills_total{reason="over_limit"}')" 0 "kills over a limit before any"

set +e
gs run --gpu-memory 4G -- env -u LD_PRELOAD "$HOG" hold 6 >"$WORK/job.out" 2>"$WORK/job.err"
rc=$?
set -e
expect_eq "$rc" 137 "the killed job's exit status"
pid=$(awk '/^held / { print $3 }' "$WORK/job.out")
[[ -n $pid ]] || fail "the job never held its memory: $(cat "$WORK/job.out" "$WORK/job.err")"
line="gpushare: gpushared killed pid $pid of lease [0-9]*: over its 4 GiB limit on GPU 0 (enforce = kill)"
grep -q "^$line\$" "$WORK/job.err" || fail "the job's stderr does not say why it died: $(cat "$WORK/job.err")"
pass "the job's stderr: $(grep 'gpushared killed' "$WORK/job.err")"

reason="killed: over its 4 GiB limit on GPU 0 (pid $pid)"
wait_eq 5 "$reason" bash -c "${GS[*]@Q} history --json | jq -r '.[0].end_reason'"
gs history | grep -qF "signal 9, $reason" || fail "gpushare history does not show the kill: $(gs history)"
pass "gpushare history: $(gs history | grep -oF "signal 9, $reason")"

expect_eq "$(metric 'gpushare_watchdog_kills_total{reason="over_limit"}')" 1 "kills over a limit in the metrics"
expect_eq "$(metric 'gpushare_watchdog_kills_total{reason="outside_lease"}')" 0 "kills outside any lease in the metrics"
pass "gpushare_watchdog_kills_total{reason=\"over_limit\"} counts the kill"
