# SPDX-License-Identifier: Apache-2.0
# Issue 34, acceptance 6: a lease's process that allocates past its limit around the shim —
# (a) RTLD_DEEPBIND and the driver's symbols resolved past the shim, (b) cuGetProcAddress with
# every version and flag, (c) the driver's private export table — is refused by the shim or
# killed by the watchdog within the stated time (README: a scan about every second; 2 s here,
# as daemon_watchdog), and the neighbouring lease whose memory it took gets it back within that
# time. On a simulated H100-80GB (81,079 MiB for leases): the neighbour's lease is 72G, the
# attacker's 2G; each route tries 8 GiB, which leaves the neighbour short while it is held.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB
BYPASS=$GS_BUILD_DIR/tests/gs-bypass
STATED_MS=2000
NEIGHBOUR_MIB=$((72 * 1024 - 518)) # all of its 72G but its context's 518 MiB
CONFIG=$'[daemon]\nenforce = kill'
start_daemon

# gone PID: the process exited (a zombie not yet reaped counts).
gone() {
  [[ $(ps -o stat= -p "$1" 2>/dev/null || true) != [^Z]* ]]
}

# ms_since NS: milliseconds from NS (date +%s%N) to now.
ms_since() {
  echo $((($(date +%s%N) - $1) / 1000000))
}

# attack MODE EXPECTED: the neighbour (72G, waiting to take all of it) and the attacker (2G, MODE, 8 GiB a route);
# EXPECTED is each route's outcome, "ROUTE held|refused ...", one per line, as gs-bypass prints
# them. Then: refused everywhere -> the attacker lives on; anything held -> the attacker is
# killed within STATED_MS and logged. Either way the neighbour fills its lease within STATED_MS
# of the attacker's last allocation. Sets TOOK_MS (the kill's; "-" when refused) and DENIED_MS.
attack() {
  local mode=$1 expected=$2 out=$WORK/$1.out nb=$WORK/$1-neighbour.out go=$WORK/$1.go
  local neighbour attacker pid start rc
  bg_gs run --gpu-memory 72G -- "$BYPASS" neighbour "$go" "$NEIGHBOUR_MIB" >"$nb"
  neighbour=$!
  wait_until 10 grep -qs '^ready ' "$nb"
  bg_gs run --gpu-memory 2G -- "$BYPASS" "$mode" 8192 >"$out"
  attacker=$!
  wait_until 20 grep -qsE '^(held|refused) [0-9]+' "$out"
  start=$(date +%s%N)
  touch "$go"
  expect_eq "$(grep -vE '^(held|refused) [0-9]' "$out")" "$expected" "the routes of $mode"
  pid=$(awk '$1 == "held" || $1 == "refused" { print $NF }' "$out")
  if grep -q '^held ' "$out"; then
    until gone "$pid"; do
      (($(ms_since "$start") <= STATED_MS)) || fail "$mode: the attacker was not killed within $STATED_MS ms"
      sleep 0.02
    done
    TOOK_MS=$(ms_since "$start")
    wait_until 3 grep -q "killed pid $pid (user $(id -un), command \"$BYPASS $mode 8192\"): lease [0-9]* was over its 2 GiB limit on GPU 0 (enforce = kill)" "$WORK/daemon.log"
  else
    TOOK_MS=-
  fi
  wait_until 10 grep -qs '^filled ' "$nb"
  DENIED_MS=$(awk '$1 == "filled" { print $3 }' "$nb")
  expect_eq "$(awk '$1 == "filled" { print $2 }' "$nb")" $((NEIGHBOUR_MIB << 20)) "$mode: the neighbour's memory"
  ((DENIED_MS <= STATED_MS)) || fail "$mode: the neighbour waited $DENIED_MS ms for its memory"
  if [[ $TOOK_MS == - ]]; then
    kill -0 "$pid" || fail "$mode: the attacker, refused by the shim, is gone"
  fi
  kill -TERM "$attacker" "$neighbour" 2>/dev/null || true
  set +e
  wait "$attacker" "$neighbour" 2>/dev/null
  rc=$?
  set -e
  : "$rc"
  wait_eq 10 0 lease_count
}

OOM=2 # CUDA_ERROR_OUT_OF_MEMORY
B=$((8192 << 20))

# (a) dlsym on a DEEPBIND handle gets the shim's hook (refused); libc's own dlsym and a library
# of the process's own loaded with RTLD_DEEPBIND reach the driver (held): killed.
# A sanitizer build cannot dlopen with RTLD_DEEPBIND (the runtime refuses it: google/sanitizers
# issue 611): that route runs in the plain build only, and the other two here.
if [[ -z ${GS_SANITIZE:-} ]]; then
  attack deepbind "deepbind-dlsym refused $OOM
libc-dlsym held $B
deepbind-library held $B"
  pass "RTLD_DEEPBIND: the shim refused dlsym's route; the two that reached the driver were killed in $TOOK_MS ms; the neighbour had its memory after $DENIED_MS ms"
else
  echo "not run under the sanitizers: RTLD_DEEPBIND (the sanitizer runtime refuses it)"
fi

# (b) every cuGetProcAddress lookup of an allocation function is the shim's hook: refused.
routes=""
for name in cuMemAlloc cuMemAllocManaged cuMemAllocPitch; do
  for version in 3020 12000 13000 2147483647; do
    for flags in 0 1 2; do
      for way in v1 v2 self; do
        if [[ $name == cuMemAllocManaged && $version == 3020 ]]; then
          routes+="procaddr-$name-$version-$flags-$way absent 500"$'\n' # (CUDA 6.0's)
        else
          routes+="procaddr-$name-$version-$flags-$way refused $OOM"$'\n'
        fi
      done
    done
  done
done
attack procaddr "${routes%$'\n'}"
pass "cuGetProcAddress (v1, v2 and itself; CUDA 3.2 to INT_MAX; every flag): 99 lookups found, each the shim's hook, each refused; the neighbour had its memory after $DENIED_MS ms"

# (c) the driver's private table: nothing of the shim on the way, killed.
attack exporttable "exporttable held $B"
pass "cuGetExportTable: the private allocation was killed in $TOOK_MS ms; the neighbour had its memory after $DENIED_MS ms"
