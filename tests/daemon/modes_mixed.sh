# SPDX-License-Identifier: Apache-2.0
# Issue 11, acceptance 3: a mixed node, GPU 0 mig, GPU 1 mps, GPU 2 shared. Each kind of request
# goes to the GPUs whose mode serves it, with its mode's environment; status and metrics show the
# MIG instances and the MPS server. gpushared survives kill -9: after a restart its leases, MIG
# instances and MPS control daemon are found again and nothing is created twice.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/modes_lib.sh"
export GPUSIM_DEVICES=A100-40GB,H100-80GB,H100-80GB
"$GS_BUILD_DIR/sim/nvidia-smi" -i 0 -mig 1 >/dev/null
CONFIG="$MPS_DAEMON_CONFIG
metrics_users = all
[gpu:0]
mode = mig
[gpu:1]
mode = mps
[gpu:2]
mode = shared"
start_daemon_metrics

# env_of CLIENT: the variables of its job that tell where it runs.
env_of() {
  tr '\0' '\n' <"/proc/$(job_of "$1")/environ" |
    grep -E '^(CUDA_VISIBLE_DEVICES|CUDA_MPS_PIPE_DIRECTORY|GPUSHARE_GPU_MODE)=' | sort |
    sed 's/=.*\/mps\/.*/=MPS/; s/=MIG-.*/=MIG/; s/=GPU-.*/=GPU/' | tr '\n' ' '
}
gpu_of() {
  gs leases --json | jq ".[] | select(.id == $1) | .gpus[0].index"
}

hold --mig-profile 1g.5gb
cmig=$client lmig=$lease
hold --gpu-memory 4G --mode mps
cmps=$client lmps=$lease
hold --gpu-memory 4G --mode shared
cshared=$client lshared=$lease
expect_eq "$(gpu_of "$lmig") $(gpu_of "$lmps") $(gpu_of "$lshared")" "0 1 2" "GPUs of the mig, mps and shared leases"
expect_eq "$(env_of "$cmig")" "CUDA_VISIBLE_DEVICES=MIG GPUSHARE_GPU_MODE=mig " "the MIG lease's environment"
expect_eq "$(env_of "$cmps")" "CUDA_MPS_PIPE_DIRECTORY=MPS CUDA_VISIBLE_DEVICES=GPU GPUSHARE_GPU_MODE=mps " "the MPS lease's environment"
expect_eq "$(env_of "$cshared")" "CUDA_VISIBLE_DEVICES=GPU GPUSHARE_GPU_MODE=shared " "the shared lease's environment"
# Without --mode a fractional request goes to a pool GPU (shared or mps) first.
hold --gpu-memory 8G
cany=$client lany=$lease
g=$(gpu_of "$lany")
[[ $g == 1 || $g == 2 ]] || fail "a plain 8G lease went to GPU $g"
end_lease "$cany"
# Whole GPUs: only GPU 2 can give one, and no lease spans a mig or mps GPU.
expect_refused 1 "gpushare: 2 logical GPUs can never be given on this node (its GPUs offer at most 1 in one lease)" --gpus 2 --no-wait
pass "mig, mps and shared requests each go to their GPU, with their mode's environment"

status=$(gs status)
grep -q "MIG \[ 0-5: free \]\[ 6: 1g.5gb \]\[ 7: free \]: 1 created, 0 reused, 0 destroyed" <<<"$status" || fail "MIG row: $status"
grep -Eq "^ +[0-9]+  1g.5gb +6 +5 GiB +leased +$lmig  MIG-" <<<"$status" || fail "instance row: $status"
grep -Eq "MPS control daemon pid [0-9]+, " <<<"$status" || fail "MPS row: $status"
wait_until 5 sh -c "curl -fsS '$METRICS_URL' | grep -q '^gpushare_mig_instance_memory_bytes{gpu=\"0\"'"
curl -fsS "$METRICS_URL" >"$WORK/metrics.txt"
check_metrics "$WORK/metrics.txt"
grep -q "^gpushare_mig_instance_memory_bytes{gpu=\"0\",.*profile=\"1g.5gb\",state=\"leased\",lease=\"$lmig\"} $((5 << 30))$" "$WORK/metrics.txt" ||
  fail "no MIG instance series"
grep -q '^gpushare_mps_daemon_up{gpu="1",' "$WORK/metrics.txt" || fail "no MPS series"
pass "status shows the MIG instances and the MPS server; metrics per instance and per MPS daemon pass promtool"

# kill -9 of gpushared: the jobs go on; a restart finds everything again.
before_leases=$(gs leases --json | jq -c '[.[] | {id, user, command, memory_limit, gpus: [.gpus[] | {index, instance}]}]')
before_instances=$(gpu_field 0 '[.mig.instances[] | {gpu_instance, uuid, profile, start}]' | jq -c .)
mps_pid=$(gpu_field 1 .mps.pid)
kill9_daemon
for c in $cmig $cmps $cshared; do
  kill -0 "$c" || fail "a job died with gpushared"
done
start_daemon_metrics
expect_eq "$(gs leases --json | jq -c '[.[] | {id, user, command, memory_limit, gpus: [.gpus[] | {index, instance}]}]')" "$before_leases" "leases after the restart"
expect_eq "$(gpu_field 0 '[.mig.instances[] | {gpu_instance, uuid, profile, start}]' | jq -c .)" "$before_instances" "MIG instances after the restart"
expect_eq "$(inst 0 "$lmig" state)" leased "the restored MIG lease's instance"
expect_eq "$(gpu_field 0 .mig.created)" 0 "MIG instances created by the new gpushared"
expect_eq "$(gpu_field 1 .mps.pid)" "$mps_pid" "the MPS control daemon"
expect_eq "$(grep -c 'MPS control daemon running' "$WORK/daemon.log")" 1 "MPS control daemons started"
grep -q "GPU 1: found its MPS control daemon again (pid $mps_pid" "$WORK/daemon.log" || fail "no log line"
expect_eq "$(gpu_field 1 .mps.leases)" 1 "leases on the MPS GPU"
# A new MIG request gets a new instance beside the restored one.
out=$(gs run --mig-profile 1g.5gb -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
[[ $out == MIG-* && $out != "$(inst 0 "$lmig" uuid)" ]] || fail "a new 1g.5gb lease got $out"
pass "after kill -9 and a restart: the leases, the MIG instance and the MPS daemon are found again; nothing created twice"

# The restored leases end normally and their GPUs are free again.
for c in $cmig $cmps $cshared; do
  end_lease "$c"
done
expect_eq "$(gpu_field 0 '[.mig.instances[] | select(.state == "leased")] | length')" 0 "leased MIG instances at the end"
expect_eq "$(gpu_field 1 .mps.leases)" 0 "MPS leases at the end"
stop_daemon
gone "$mps_pid" || fail "the MPS control daemon is still running after gpushared stopped"
pass "restored leases end normally; at shutdown the MPS daemon stops"
