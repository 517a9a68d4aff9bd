# SPDX-License-Identifier: Apache-2.0
# Acceptance 3: overprovision = 4 on one GPU runs four --gpus 1 jobs at once, each with that
# GPU's UUID and a quarter of its memory and compute; a fifth waits and starts when one ends.
# An H100-80GB leases what CUDA sees of it: 85017493504 bytes (81079 MiB; NVML's 85520809984 less
# the 480 MiB the driver reserves, as measured on a real one), a quarter is 20756224 KiB.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB,H100-80GB
CONFIG=$'[gpu:0]\noverprovision = 4\n[gpu:1]\nmode = exclusive'
start_daemon
leases_and_waiting() {
  echo $(($(lease_count) + $(queue_length)))
}
jobs_started() {
  ls "$WORK" | grep -c '^job[0-9]$' || true
}
uuid0=$(gs status --json | jq -r '.gpus[0].uuid')
expect_eq "$(gs status --json | jq '.gpus[0].logical_total')" 4 "logical GPUs of GPU 0"

for i in 1 2 3 4 5 6; do
  bg_gs run --gpus 1 -- sh -c "echo \$CUDA_VISIBLE_DEVICES \$GPUSHARE_MEMORY_LIMIT \${GPUSHARE_COMPUTE_SHARE:-none} > $WORK/job$i.tmp; mv $WORK/job$i.tmp $WORK/job$i; while [ ! -e $WORK/stop$i ]; do sleep 0.05; done"
  wait_eq 5 "$i" leases_and_waiting
done
# GPU 1 (exclusive, whole) took one job, GPU 0 four: the sixth waits.
wait_eq 5 5 jobs_started
expect_eq "$(lease_count)" 5 "leases granted"
expect_eq "$(gs status --json | jq .queue.length)" 1 "requests waiting"
expect_eq "$(gs status --json | jq '.gpus[0].leases | length')" 4 "leases on GPU 0"
expect_eq "$(gs status --json | jq '.gpus[0].logical_free')" 0 "free logical GPUs on GPU 0"
on_gpu0=0
for f in "$WORK"/job?; do
  read -r uuid limit share <"$f"
  if [[ $uuid == "$uuid0" ]]; then
    on_gpu0=$((on_gpu0 + 1))
    expect_eq "$limit" 20756224K "memory limit of a quarter of an H100-80GB"
    expect_eq "$share" 25 "compute share of a quarter"
  else
    expect_eq "$limit" 81079M "memory limit of the exclusive GPU"
    expect_eq "$share" none "compute share of a whole GPU"
  fi
done
expect_eq "$on_gpu0" 4 "jobs on GPU 0 with its UUID"
pass "overprovision 4: four --gpus 1 jobs at once on $uuid0 (19.79 GiB, 25% each), a further one waits"

# One of GPU 0's jobs ends: the waiting one starts on GPU 0.
for i in 1 2 3 4 5; do
  if [[ $(cut -d' ' -f1 <"$WORK/job$i") == "$uuid0" ]]; then
    touch "$WORK/stop$i"
    break
  fi
done
wait_until 3 test -e "$WORK/job6"
expect_eq "$(cut -d' ' -f1 <"$WORK/job6")" "$uuid0" "the waiting job's GPU"
pass "the fifth --gpus 1 job on GPU 0 starts when one ends"
for i in 1 2 3 4 5 6; do touch "$WORK/stop$i"; done
wait_eq 5 0 lease_count
