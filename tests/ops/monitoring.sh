# SPDX-License-Identifier: Apache-2.0
# Issue 27, acceptance 4: monitoring that coexists with dcgm-exporter. The default metrics port
# is not dcgm-exporter's 9400; a port that is taken is a configuration error (exit 78, before any
# MPS control daemon starts; the unit does not restart on 78); the shipped alert rules pass
# promtool check rules and promtool test rules; the shipped Grafana dashboard parses, each of its
# queries is PromQL that promtool accepts, and every series it queries is in a scrape of gpushared
# on gpusim with a mig, an mps and a shared GPU, a lease on each.
source "$(dirname "$0")/../daemon/lib.sh"
source "$(dirname "$0")/../daemon/modes_lib.sh"
command -v promtool >/dev/null || fail "promtool is missing (Debian package prometheus; scripts/deps.sh)"
MON=$GS_SOURCE_DIR/packaging/monitoring
export GPUSIM_DEVICES=A100-40GB,H100-80GB,H100-80GB
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null

# The default port, in the daemon and in the shipped configuration.
default=$("$BIN/gpushared" --help | sed -n 's/.*Prometheus endpoint (default \([^;]*\);.*/\1/p')
expect_eq "$default" 127.0.0.1:9447 "gpushared's default metrics_listen"
expect_eq "$(grep '^metrics_listen' "$GS_SOURCE_DIR/packaging/gpushare.conf.example")" \
  "metrics_listen = 127.0.0.1:9447" "the shipped gpushare.conf's metrics_listen"
[[ ${default##*:} != 9400 ]] || fail "the default port is dcgm-exporter's"
grep -qx 'RestartPreventExitStatus=75 78' "$GS_BUILD_DIR/packaging/gpushared.service" ||
  fail "the unit restarts gpushared on 75 or 78: $(grep Restart "$GS_BUILD_DIR/packaging/gpushared.service")"
pass "the default metrics port is 9447 (dcgm-exporter has 9400); the unit does not restart on 75 or 78"

promtool check rules "$MON/gpushare-alerts.yml" >"$WORK/rules.txt" 2>&1 ||
  { cat "$WORK/rules.txt" >&2; fail "promtool check rules"; }
expect_eq "$(grep -c 'SUCCESS: 10 rules found' "$WORK/rules.txt")" 1 "promtool check rules: $(cat "$WORK/rules.txt")"
promtool test rules "$GS_SOURCE_DIR/tests/ops/alerts_test.yml" >"$WORK/rules.txt" 2>&1 ||
  { cat "$WORK/rules.txt" >&2; fail "promtool test rules"; }
pass "promtool check rules and test rules pass on the shipped alert rules"

CONFIG="$MPS_DAEMON_CONFIG
metrics_users = all
[gpu:0]
mode = mig
[gpu:1]
mode = mps
[gpu:2]
mode = shared"
start_daemon_metrics
hold --mig-profile 1g.5gb --name on-mig
hold --gpu-memory 4G --compute 30 --mode mps --name on-mps
hold --gpu-memory 4G --compute 20 --mode shared --name on-shared
wait_until 5 sh -c "curl -fsS '$METRICS_URL' | grep -q '^gpushare_mig_instance_memory_bytes{gpu=\"0\"'"
wait_until 5 sh -c "curl -fsS '$METRICS_URL' | grep -q '^gpushare_leases 3$'"
curl -fsS "$METRICS_URL" >"$WORK/scrape.txt"
check_metrics "$WORK/scrape.txt"

# The dashboard: JSON, its queries, the series they name, the labels its legends use.
jq -e '.title == "gpushare" and (.panels | length) > 10' "$MON/gpushare-dashboard.json" >/dev/null ||
  fail "the dashboard does not parse as a Grafana dashboard"
jq -r '.panels[].targets[]?.expr' "$MON/gpushare-dashboard.json" >"$WORK/exprs.txt"
n_exprs=$(wc -l <"$WORK/exprs.txt")
((n_exprs >= 25)) || fail "the dashboard has $n_exprs queries"
{
  echo "groups:"
  echo "  - name: dashboard"
  echo "    rules:"
  i=0
  while IFS= read -r e; do
    i=$((i + 1))
    e=${e//\$__rate_interval/1m}
    e=${e//\$hostname/.*}
    printf '      - record: dashboard:query%d\n        expr: %s\n' "$i" "$(jq -Rn --arg e "$e" '$e')"
  done <"$WORK/exprs.txt"
} >"$WORK/dashboard-rules.yml"
promtool check rules "$WORK/dashboard-rules.yml" >"$WORK/rules.txt" 2>&1 ||
  { cat "$WORK/rules.txt" >&2; fail "a dashboard query is not PromQL"; }
series=$(grep -oE '\b(gpushare|DCGM)_[A-Za-z0-9_]+' "$WORK/exprs.txt" | sort -u)
for s in $series; do
  grep -qE "^$s[{ ]" "$WORK/scrape.txt" || fail "the dashboard queries $s, which the scrape does not have"
done
for label in $(jq -r '.panels[].targets[]?.legendFormat' "$MON/gpushare-dashboard.json" |
  grep -oE '\{\{[A-Za-z_]+\}\}' | tr -d '{}' | sort -u); do
  [[ $label == instance ]] && continue # Prometheus's own target label
  grep -qE "[{,]$label=\"" "$WORK/scrape.txt" || fail "the dashboard's legends use label $label, which no series has"
done
grep -q 'label_values(gpushare_info, Hostname)' "$MON/gpushare-dashboard.json" || fail "no node variable"
grep -qE "^gpushare_info\{.*Hostname=\"$(hostname)\"" "$WORK/scrape.txt" || fail "gpushare_info has no Hostname"
pass "the dashboard parses; its $n_exprs queries pass promtool and query $(wc -w <<<"$series") series, each in the scrape"

# A port that is taken: another gpushared (on another node, with an mps GPU) exits 78 at once,
# before it starts anything.
cat >"$WORK/taken.conf" <<CONF
[daemon]
runtime_dir = $WORK/run2
mps_control = $GS_BUILD_DIR/sim/nvidia-cuda-mps-control
[gpu:0]
mode = mps
CONF
set +e
GPUSIM_STATE=$WORK/sim2 GPUSIM_DEVICES=H100-80GB "$BIN/gpushared" --config "$WORK/taken.conf" \
  --state-dir "$WORK/state2" --socket "$WORK/taken.sock" --metrics-listen "$METRICS_LISTEN" \
  >"$WORK/taken.log" 2>&1
rc=$?
set -e
expect_eq "$rc" 78 "exit status of a gpushared whose metrics port is taken"
grep -q "error: cannot serve metrics on $METRICS_LISTEN: the port is taken$" "$WORK/taken.log" ||
  fail "its message: $(cat "$WORK/taken.log")"
[[ ! -e $WORK/run2/mps ]] || fail "it started MPS before it found the port taken"
[[ ! -e $WORK/taken.sock ]] || fail "it listened on its socket"
pass "a gpushared whose metrics port is taken exits 78 before it starts anything"
