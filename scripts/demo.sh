#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make run: gpushare's main job on gpusim. Starts gpushared on a simulated node (two H100-80GB
# unless GPUSIM_DEVICES says otherwise) in a temporary directory, runs four CUDA jobs at once in
# different slices — one of them asks for more than its slice and gets a clean out-of-memory
# error while the others go on — shows `gpushare status` while they run, and stops everything.
set -euo pipefail
build=${1:-${GS_BUILD_DIR:-build}}
cd "$(dirname "$0")/.."
[[ $build == /* ]] || build=$PWD/$build

missing=()
for f in bin/gpushared bin/gpushare sim/libnvidia-ml.so.1 sim/libcuda.so.1 lib/libgpushare.so \
  tests/gs-demo-job; do
  [[ -e $build/$f ]] || missing+=("$build/$f")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "demo: cannot run: missing ${missing[*]} (build with make; libcuda.so.1 comes from gpusim's" \
    "driver, libgpushare.so from the shim)" >&2
  exit 1
fi

work=$(mktemp -d /tmp/gpushare-demo.XXXXXX)
daemon=
jobs=()
cleanup() {
  local rc=$?
  for p in "${jobs[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [[ -n $daemon ]]; then
    kill -TERM "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  [[ $rc -eq 0 ]] || { echo "demo: failed; gpushared's log:" >&2; cat "$work/gpushared.log" >&2; }
  rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS

export GPUSIM_DEVICES=${GPUSIM_DEVICES:-H100-80GB,H100-80GB}
export GPUSIM_STATE=$work/gpusim
export GPUSHARE_SOCKET=$work/gpushared.sock
export LD_LIBRARY_PATH=$build/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$build/bin:$PATH
export PATH=$build/tests:$PATH
job=gs-demo-job
# Under ASan (make asan runs this as a test) the instrumented shim needs the ASan runtime loaded
# first in the jobs; gpushare run keeps an existing LD_PRELOAD after the shim.
job_preload=
if [[ -n ${GS_SANITIZE:-} ]]; then
  job_preload=$(gcc -print-file-name=libasan.so)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0
fi

section() {
  printf '\n== %s\n' "$*"
}

section "gpushared on gpusim ($GPUSIM_DEVICES), in $work"
for attempt in 1 2 3 4 5; do
  metrics=127.0.0.1:$((10000 + RANDOM % 22000)) # below the ephemeral ports
  gpushared --config /dev/null --state-dir "$work/state" --metrics-listen "$metrics" \
    >"$work/gpushared.log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do
    [[ -S $GPUSHARE_SOCKET ]] && break
    kill -0 "$daemon" 2>/dev/null || break
    sleep 0.05
  done
  [[ -S $GPUSHARE_SOCKET ]] && break
  wait "$daemon" 2>/dev/null || true
  daemon=
done
[[ -n $daemon ]] || { echo "demo: gpushared did not start" >&2; exit 1; }
sed -E 's/^[0-9T:.+-]+ //; s/^gpushared\[[0-9]*\]: /  /' "$work/gpushared.log"

section "four jobs at once, each in its own slice (gpushare run --name NAME ... -- gs-demo-job NAME GIB SECONDS)"
cat <<'EOF'
  inference  --gpu-memory 20G              allocates 16 GiB, runs kernels for 6 s
  notebook   --gpu 0.25                    a quarter of a GPU: allocates 12 GiB, 6 s
  batch      --gpu-memory 8G --compute 30  allocates 6 GiB, 6 s
  greedy     --gpu-memory 4G               allocates 3 GiB, after 3 s tries 6 GiB more: over its slice
EOF
run_job() {
  local name=$1
  shift
  LD_PRELOAD=$job_preload gpushare run --name "$name" "$@" >"$work/$name.out" 2>&1 &
  jobs+=($!)
}
run_job inference --gpu-memory 20G -- "$job" inference 16 6
run_job notebook --gpu 0.25 -- "$job" notebook 12 6
run_job batch --gpu-memory 8G --compute 30 -- "$job" batch 6 6
run_job greedy --gpu-memory 4G -- "$job" greedy 3 6 6 3

sleep 2.5
section "gpushare status (while they run)"
gpushare status
section "metrics: http://$metrics/metrics (a few series)"
curl -fsS --max-time 5 "http://$metrics/metrics" | grep -E '^(gpushare_lease_memory_used_bytes|gpushare_gpu_memory_leased_bytes|DCGM_FI_DEV_FB_USED)' | sed 's/^/  /' || true

names=(inference notebook batch greedy)
statuses=()
for i in 0 1 2 3; do
  set +e
  wait "${jobs[$i]}"
  statuses+=($?)
  set -e
done
jobs=()

section "what each job printed"
for n in "${names[@]}"; do
  sed 's/^/  /' "$work/$n.out"
done

section "gpushare history (finished leases, from the ledger: peak memory, OOM events, exit status)"
gpushare history | sed 's/^/  /'

section "summary"
for i in 0 1 2 3; do
  printf '  %-10s exit status %s\n' "${names[$i]}" "${statuses[$i]}"
done
leases=$(gpushare leases)
echo "  leases left: $leases"
expected="0 0 0 1"
if [[ "${statuses[*]}" != "$expected" || $leases != "no leases" ]]; then
  echo "demo: expected exit statuses $expected and no leases left" >&2
  exit 1
fi
grep -q 'CUDA_ERROR_OUT_OF_MEMORY' "$work/greedy.out" || { echo "demo: greedy did not get CUDA_ERROR_OUT_OF_MEMORY" >&2; exit 1; }
echo "  greedy got CUDA_ERROR_OUT_OF_MEMORY from its 4 GiB slice; the three others ran to the end."
echo "  Every lease ended with its job. Demo took $((SECONDS - start)) s."
