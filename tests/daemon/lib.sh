# SPDX-License-Identifier: Apache-2.0
# Shared setup of the gpushared integration tests: a private daemon on a fresh gpusim node in a
# temporary directory, stopped by PID on exit. Source it; set GPUSIM_DEVICES / CONFIG first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh" # gs_skip
: "${GS_BUILD_DIR:?run through ctest (GS_BUILD_DIR is not set)}"

BIN=$GS_BUILD_DIR/bin
TOOL=$GS_BUILD_DIR/tests/gs-daemon-tool
WORK=$(mktemp -d /tmp/gs-daemon-test.XXXXXX)
chmod 755 "$WORK"
export GPUSIM_STATE=$WORK/sim
export GPUSIM_DEVICES=${GPUSIM_DEVICES:-H100-80GB}
export GPUSHARE_SOCKET=$WORK/gpushared.sock
export LD_LIBRARY_PATH=$GS_BUILD_DIR/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Under ASan the instrumented shim needs the ASan runtime loaded first in jobs that are not
# instrumented (sleep, sh): gpushare run keeps an existing LD_PRELOAD after the shim.
if [[ -n ${GS_SANITIZE:-} ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0
  JOB_PRELOAD=$(gcc -print-file-name=libasan.so)
else
  JOB_PRELOAD=
fi
DAEMON_PID=
BG_PIDS=()

cleanup() {
  local rc=$?
  for p in "${BG_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  if [[ -n $DAEMON_PID ]]; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 && -f $WORK/daemon.log ]]; then
    echo "--- daemon log (last 40 lines)" >&2
    tail -40 "$WORK/daemon.log" >&2
  fi
  release_claims
  rm -rf "$WORK"
  exit $rc
}

# release_claims: removes the GPU claims (/run/gpushare/gpus/<UUID>.pid, and gpusim.pid of a node
# in $WORK) that daemons of this test killed by SIGKILL left behind, and the directories when nothing else is in them. Only this
# node's UUIDs are touched: gpusim makes them anew for each node, so no other run has them.
release_claims() {
  local uuid
  for uuid in $(cat "$WORK"/*.log 2>/dev/null | grep -o 'GPU-[0-9a-f-]\{36\}' | sort -u); do
    rm -f "/run/gpushare/gpus/$uuid.pid" 2>/dev/null || true
  done
  # The host's simulated node's claim, when its node was this test's (the pid, then the node).
  if [[ $(sed -n 2p /run/gpushare/gpus/gpusim.pid 2>/dev/null) == "$WORK/"* ]]; then
    rm -f /run/gpushare/gpus/gpusim.pid
  fi
  rmdir /run/gpushare/gpus /run/gpushare 2>/dev/null || true
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

pass() {
  echo "ok: $*"
}

# The CLI (jobs get the ASan runtime first under sanitizers). env execs it, so a background
# "${GS[@]}" keeps its pid.
GS=(env "LD_PRELOAD=$JOB_PRELOAD" "$BIN/gpushare")
gs() {
  "${GS[@]}" "$@"
}

# bg CMD...: starts CMD in the background in a process group of its own (killed whole at
# cleanup) and remembers it; its pid is in $! (setsid execs CMD: it is not a group leader).
bg() {
  setsid "$@" &
  BG_PIDS+=($!)
}

# bg_gs ARGS...: gpushare ARGS in the background (pid in $!).
bg_gs() {
  bg "${GS[@]}" "$@"
}

# wait_until LIMIT CMD... and wait_eq LIMIT EXPECTED CMD...: deadlines as stated (tests/wait.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../wait.sh"

# try_start_daemon [ARGS...]: writes $CONFIG (may be empty) to gpushare.conf and starts
# gpushared; status 1 (DAEMON_PID empty) when it exited before listening, e.g. because its
# metrics port was taken between the check and its bind (tests run in parallel).
try_start_daemon() {
  printf '%s\n' "${CONFIG:-}" >"$WORK/gpushare.conf"
  "$BIN/gpushared" --config "$WORK/gpushare.conf" --state-dir "$WORK/state" \
    --metrics-listen "${METRICS_LISTEN:-127.0.0.1:0}" "$@" >>"$WORK/daemon.log" 2>&1 &
  DAEMON_PID=$!
  local deadline=$((SECONDS + 11))
  # (A socket file left by a killed daemon may be there already: wait for an answer.)
  until gs leases >/dev/null 2>&1; do
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
      wait "$DAEMON_PID" 2>/dev/null || true
      DAEMON_PID=
      return 1
    fi
    [[ $SECONDS -lt $deadline ]] || fail "timed out waiting for gpushared to answer on $GPUSHARE_SOCKET"
    sleep 0.05
  done
}

# start_daemon [ARGS...]: try_start_daemon, failing the test when gpushared does not start.
start_daemon() {
  try_start_daemon "$@" || fail "gpushared exited at start: $(tail -1 "$WORK/daemon.log")"
}

# start_daemon_metrics [ARGS...]: start_daemon with metrics on a free port (random ports are
# tried until gpushared can bind one); sets $port, $METRICS_LISTEN, $METRICS_URL and $url.
start_daemon_metrics() {
  local attempt
  # Below the kernel's ephemeral ports (32768 and up by default): a port in that range can be
  # the local end of some test's outgoing connection, which no check here can see.
  local low
  low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  ((low > 12000)) || low=32768
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$((10000 + RANDOM % (low - 10000)))
    METRICS_LISTEN=127.0.0.1:$port
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      try_start_daemon "$@" && break
    fi
  done
  [[ -n $DAEMON_PID ]] || fail "no free port for the metrics"
  METRICS_URL=http://$METRICS_LISTEN/metrics
  url=$METRICS_URL
}

# watchdog_scans: the scans gpushared's watchdog has completed (its metrics: start the daemon
# with start_daemon_metrics).
watchdog_scans() {
  curl -fsS "${METRICS_URL:?start the daemon with start_daemon_metrics}" |
    awk '$1 == "gpushare_watchdog_scans_total" { print $2 }'
}
scans_reach() { [[ $(watchdog_scans) -ge $1 ]]; }

# wait_scans N [SECONDS]: waits (at most SECONDS, 10 by default) for N more scans of the watchdog:
# "nothing happened" is said after it has looked N times, never after a sleep. Scans and the
# metrics are served by the daemon's one event loop, so each scan counted began after the call.
wait_scans() {
  local n=$1 limit=${2:-10} from
  from=$(watchdog_scans)
  wait_until "$limit" scans_reach $((from + n))
}

stop_daemon() {
  kill -TERM "$DAEMON_PID"
  wait "$DAEMON_PID" || fail "gpushared exited with status $? on SIGTERM"
  DAEMON_PID=
}

kill9_daemon() {
  kill -KILL "$DAEMON_PID"
  wait "$DAEMON_PID" 2>/dev/null || true
  DAEMON_PID=
}

# job_of PID: the job process a gpushare run client started (its only child).
job_of() {
  pgrep -P "$1"
}

# lease_count: how many leases the caller sees (leases --json lists waiting requests too).
lease_count() {
  gs leases --json | jq '[.[] | select(.state != "pending")] | length'
}

# memory_used: the bytes the caller's leases use (from their regions).
memory_used() {
  gs leases --json | jq '[.[].memory_used] | add // 0'
}

# queue_length: requests waiting.
queue_length() {
  gs status --json | jq .queue.length
}

# check_metrics FILE: promtool check metrics finds FILE valid, and its lint nothing but what it
# says of dcgm-exporter's own labels (modelName is camelCase), which gpushare's GPU series carry
# so that dcgm-exporter's dashboards and joins work on them.
check_metrics() {
  local rc=0
  promtool check metrics <"$1" >"$WORK/promtool.txt" 2>&1 || rc=$?
  local other
  other=$(grep -v "label names should be written in 'snake_case' not 'camelCase'$" "$WORK/promtool.txt" || true)
  [[ ($rc == 0 || $rc == 3) && -z $other ]] ||
    { cat "$WORK/promtool.txt" >&2; fail "promtool check metrics: status $rc"; }
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
  [[ "$1" == "$2" ]] || fail "$3: expected \"$2\", got \"$1\""
}
