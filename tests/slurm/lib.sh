# SPDX-License-Identifier: Apache-2.0
# A throwaway one-node Slurm cluster around gpushared on gpusim, for the plugin's tests: a private
# munged, slurmctld and slurmd as root without systemd (the usual single-node recipe),
# everything in one temporary directory and stopped by
# PID on exit. Source it, then call start_gpushared and start_slurm.
set -euo pipefail
: "${GS_BUILD_DIR:?run through ctest (GS_BUILD_DIR is not set)}"

source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh" # gs_skip
[[ $(id -u) -eq 0 ]] || gs_skip "run as root to start munged, slurmctld and slurmd"
for tool in munged mungekey slurmctld slurmd srun sbatch scontrol squeue scancel sinfo; do
  command -v "$tool" >/dev/null || gs_skip "$tool is missing (scripts/deps.sh installs Slurm)"
done
[[ -f $GS_BUILD_DIR/lib/spank_gpushare.so ]] || gs_skip "spank_gpushare.so was not built"

BIN=$GS_BUILD_DIR/bin
PLUGIN=$GS_BUILD_DIR/lib/spank_gpushare.so
SHIM=$GS_BUILD_DIR/lib/libgpushare.so
WORK=$(mktemp -d /tmp/gs-slurm-test.XXXXXX)
chmod 755 "$WORK"
HOST=$(hostname -s)
JOB_USER=gpushare-test # jobs run as this user: the plugin asks on their behalf
id "$JOB_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$JOB_USER"

export GPUSIM_STATE=$WORK/sim
export GPUSIM_DEVICES=H100-80GB,H100-80GB
export GPUSHARE_SOCKET=$WORK/gpushared.sock
export LD_LIBRARY_PATH=$GS_BUILD_DIR/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SLURM_CONF=$WORK/slurm/slurm.conf # gres.conf is read beside it
# Under ASan the instrumented plugin and shim need the ASan runtime loaded first in the programs
# that load them (srun, sbatch, slurmstepd through slurmd, the jobs).
if [[ -n ${GS_SANITIZE:-} ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0
  ASAN_PRELOAD=$(gcc -print-file-name=libasan.so)
else
  ASAN_PRELOAD=
fi
DAEMON_PID=
MUNGE_PID=
SLURM_PIDS=()

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

pass() {
  echo "ok: $*"
}

expect_eq() {
  [[ "$1" == "$2" ]] || fail "$3: expected \"$2\", got \"$1\""
}

# wait_until LIMIT CMD... and wait_eq LIMIT EXPECTED CMD...: deadlines as stated (tests/wait.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../wait.sh"

# gs ARGS...: the gpushare CLI as root.
gs() {
  env "LD_PRELOAD=$ASAN_PRELOAD" "$BIN/gpushare" "$@"
}

# as_user CMD...: CMD as the jobs' user, in its directory $JOBS, with the test's environment.
JOBS=$WORK/jobs
install -d -o "$JOB_USER" -m 755 "$JOBS"
as_user() {
  (cd "$JOBS" && setpriv --reuid="$JOB_USER" --regid="$JOB_USER" --init-groups \
    env "LD_PRELOAD=$ASAN_PRELOAD" "$@")
}

start_gpushared() {
  # Best fit: the tests fill GPU 0 first, the GPU Slurm gives a one-GPU step.
  printf '[gpu:all]\nreserve = 0\nplacement = bestfit\n' >"$WORK/gpushare.conf"
  "$BIN/gpushared" --config "$WORK/gpushare.conf" --state-dir "$WORK/state" \
    --metrics-listen 127.0.0.1:0 >>"$WORK/daemon.log" 2>&1 &
  DAEMON_PID=$!
  local i
  for i in $(seq 100); do gs leases >/dev/null 2>&1 && break; sleep 0.05; done
  gs leases >/dev/null || fail "gpushared did not start: $(tail -5 "$WORK/daemon.log")"
  chmod 755 "$WORK/sim" # the jobs' user shares the simulated node
}

stop_gpushared() {
  kill -TERM "$DAEMON_PID"
  wait "$DAEMON_PID" || fail "gpushared exited with status $? on SIGTERM"
  DAEMON_PID=
}

# A private munged (own key and socket), so that the system's is neither needed nor touched.
start_munge() {
  install -d -o munge -g munge -m 711 "$WORK/munge"
  mungekey -c -k "$WORK/munge/munge.key" 2>/dev/null
  chown munge:munge "$WORK/munge/munge.key"
  setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F \
    --socket="$WORK/munge/munge.sock" --key-file="$WORK/munge/munge.key" \
    --log-file="$WORK/munge/munged.log" --pid-file="$WORK/munge/munged.pid" \
    --seed-file="$WORK/munge/munged.seed" >"$WORK/munge.out" 2>&1 &
  MUNGE_PID=$!
  local i
  for i in $(seq 100); do [[ -S $WORK/munge/munge.sock ]] && break; sleep 0.05; done
  [[ -S $WORK/munge/munge.sock ]] || fail "munged did not start: $(cat "$WORK/munge.out")"
}

# A TCP port nobody listens on, for slurmctld and slurmd.
free_port() {
  local port
  for port in $(shuf -i 20000-40000 -n 50); do
    ss -Htln "sport = :$port" | grep -q . || { echo "$port"; return; }
  done
  fail "no free TCP port"
}

write_slurm_conf() {
  local memory
  memory=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  memory=$((memory < 1000 ? memory : 1000))
  cat >"$SLURM_CONF" <<EOF
ClusterName=gstest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$WORK/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$WORK/slurm/state
SlurmdSpoolDir=$WORK/slurm/spool
SlurmctldLogFile=$WORK/slurm/slurmctld.log
SlurmdLogFile=$WORK/slurm/slurmd.log
SlurmctldPidFile=$WORK/slurm/slurmctld.pid
SlurmdPidFile=$WORK/slurm/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
PlugStackConfig=$WORK/slurm/plugstack.conf
GresTypes=gpu,shard
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$memory Gres=gpu:2,shard:8 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  # Two fake GPUs (character devices, or jobs get no CUDA_VISIBLE_DEVICES); in gres.conf's File
  # order, which is NVML's: gpusim's GPUs 0 and 1. Four shards per GPU.
  local i
  for i in 0 1; do mknod "$WORK/slurm/gpu$i" c 195 "$i"; done
  printf 'AutoDetect=off\nName=gpu File=%s/gpu[0-1]\nName=shard Count=8 File=%s/gpu[0-1]\n' \
    "$WORK/slurm" "$WORK/slurm" >"$WORK/slurm/gres.conf"
  echo "required $PLUGIN socket=$GPUSHARE_SOCKET shim=$SHIM shards=4" >"$WORK/slurm/plugstack.conf"
}

start_slurm() {
  mkdir -p "$WORK/slurm/state" "$WORK/slurm/spool"
  start_munge
  write_slurm_conf
  slurmctld -D -c >"$WORK/slurm/slurmctld.out" 2>&1 &
  SLURM_PIDS+=($!)
  local i
  for i in $(seq 200); do scontrol ping >/dev/null 2>&1 && break; sleep 0.05; done
  env "LD_PRELOAD=$ASAN_PRELOAD" slurmd -D >"$WORK/slurm/slurmd.out" 2>&1 &
  SLURM_PIDS+=($!)
  for i in $(seq 300); do [[ $(sinfo -h -o %t 2>/dev/null) == idle ]] && break; sleep 0.05; done
  [[ $(sinfo -h -o %t) == idle ]] || fail "the Slurm node is not idle: $(tail -n 5 "$WORK"/slurm/*.log)"
}

# Teardown: jobs first (and their step sockets, or an orphaned slurmstepd keeps running), then
# slurmd, slurmctld, munged and gpushared, each by PID; then the directory.
stop_all() {
  local rc=$? i p
  set +e
  if [[ ${#SLURM_PIDS[@]} -gt 0 ]]; then
    scancel --quiet --full "--user=$JOB_USER" 2>/dev/null
    scancel --quiet --full --user=root 2>/dev/null
    for i in $(seq 200); do
      [[ -z $(squeue -h 2>/dev/null) ]] && ! compgen -G "$WORK/slurm/spool/${HOST}_*" >/dev/null && break
      sleep 0.05
    done
  fi
  # A step daemon that did not end (a hung task) is this cluster's if it has this SLURM_CONF.
  for p in $(pgrep -x slurmstepd); do
    grep -qzx "SLURM_CONF=$SLURM_CONF" "/proc/$p/environ" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  for p in "${SLURM_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${SLURM_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  if [[ -n $MUNGE_PID ]]; then kill -TERM "$MUNGE_PID" 2>/dev/null; wait "$MUNGE_PID" 2>/dev/null; fi
  if [[ -n $DAEMON_PID ]]; then kill -TERM "$DAEMON_PID" 2>/dev/null; wait "$DAEMON_PID" 2>/dev/null; fi
  if [[ $rc -ne 0 ]]; then
    for f in "$WORK/daemon.log" "$WORK/slurm/slurmd.log" "$WORK/slurm/slurmctld.log"; do
      [[ -f $f ]] && { echo "--- $f (last 25 lines)" >&2; tail -25 "$f" >&2; }
    done
  fi
  rm -rf "$WORK"
  exit $rc
}
trap stop_all EXIT
