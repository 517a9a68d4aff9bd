# SPDX-License-Identifier: Apache-2.0
# Issue 11, acceptance 2: mode = mig on gpusim (A100-40GB, then H100-80GB with its own profile
# table). Requests get the smallest profile that fits; --mig-profile gets exactly its profile; two
# 1g.5gb leases leave room for a 3g.20gb; a released instance is reused as it is; an idle instance
# is destroyed when another profile needs its slots; a request that cannot fit waits and starts
# when space is freed. gpushared never turns MIG mode on: a GPU configured mig with MIG off says so
# and serves nothing until the administrator enables it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/modes_lib.sh"
export GPUSIM_DEVICES=A100-40GB,H100-80GB
SMI=$GS_BUILD_DIR/sim/nvidia-smi
CONFIG=$'[gpu:0]\nmode = mig'
start_daemon

# MIG mode is off: the GPU says so and a request that only it could serve is refused at once.
expect_eq "$(gpu_field 0 .mig.enabled)" false "MIG enabled before the administrator's step"
expect_eq "$(gpu_field 0 .problem)" "mode = mig but MIG mode is off (the administrator enables it on an idle GPU: nvidia-smi -i 0 -mig 1)" "the problem shown"
# gpushare status keeps 80 columns and never loses the fix: the problem is wrapped (issue 37).
table=$(gs status)
expect_eq "$(awk 'length > 80' <<<"$table")" "" "status lines over 80 columns"
expect_eq "$(awk '/^     problem: / { on = 1; sub(/^     problem: /, ""); print; next } on && /^              [^ ]/ { sub(/^ +/, ""); print; next } { on = 0 }' <<<"$table" | tr '\n' ' ' | sed 's/ $//')" \
  "mode = mig but MIG mode is off (the administrator enables it on an idle GPU: nvidia-smi -i 0 -mig 1)" "the problem in gpushare status, wrapped"
expect_refused 78 "gpushare: GPU 0 (mig): mode = mig but MIG mode is off (the administrator enables it on an idle GPU: nvidia-smi -i 0 -mig 1)" --mig-profile 1g.5gb
"$SMI" -i 0 -mig 1 >/dev/null
wait_eq 8 true gpu_field 0 .mig.enabled
expect_eq "$(gpu_field 0 .problem)" null "problem once MIG is on"
pass "MIG off: one clear line and no lease; gpushared sees MIG on once the administrator enables it"

# The smallest profile that fits, placed to keep the large ones possible.
hold --gpu-memory 4G --mode mig
c1=$client l1=$lease
expect_eq "$(inst 0 "$l1" profile)@$(inst 0 "$l1" start)" "1g.5gb@6" "4G on an A100-40GB"
expect_eq "$(gs leases --json | jq ".[] | select(.id == $l1) | .memory_limit")" $((5 << 30)) "the lease holds its instance's memory"
hold --gpu-memory 4G --mode mig
c2=$client l2=$lease
expect_eq "$(inst 0 "$l2" profile)@$(inst 0 "$l2" start)" "1g.5gb@4" "a second 4G"
hold --gpu-memory 12G --mode mig
c3=$client l3=$lease
expect_eq "$(inst 0 "$l3" profile)@$(inst 0 "$l3" start)" "3g.20gb@0" "12G beside two 1g.5gb"
uuid3=$(inst 0 "$l3" uuid)
env_of_job=$(tr '\0' '\n' <"/proc/$(job_of "$c3")/environ" | grep -E '^(CUDA_VISIBLE_DEVICES|GPUSHARE_GPU_MODE|GPUSHARE_MEMORY_LIMIT)=' | sort | tr '\n' ' ')
expect_eq "$env_of_job" "CUDA_VISIBLE_DEVICES=$uuid3 GPUSHARE_GPU_MODE=mig GPUSHARE_MEMORY_LIMIT=20G " "the job's environment"
[[ $uuid3 == MIG-* ]] || fail "instance UUID $uuid3"
expect_eq "$(gpu_field 0 .mig.created)" 3 "instances created"
pass "4G gets 1g.5gb (slots 6, then 4), 12G gets 3g.20gb beside them; the job sees CUDA_VISIBLE_DEVICES=MIG-<uuid>"

# A released instance stays and is reused by the next request of its profile.
end_lease "$c3"
expect_eq "$(gpu_field 0 '.mig.instances[] | select(.uuid == "'"$uuid3"'") | .state')" idle "the released 3g.20gb"
hold --gpu-memory 12G --mode mig
c4=$client l4=$lease
expect_eq "$(inst 0 "$l4" uuid)" "$uuid3" "the next 12G lease's instance"
expect_eq "$(gpu_field 0 .mig.created)/$(gpu_field 0 .mig.destroyed)/$(gpu_field 0 .mig.reused)" 3/0/1 "created/destroyed/reused"
end_lease "$c4"
pass "a released instance is reused by the next request of its profile, not destroyed and created again"

# --mig-profile gets exactly its profile; the idle 3g.20gb is destroyed to make room for it.
out=$(gs run --mig-profile 2g.10gb -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
[[ $out == MIG-* && $out != "$uuid3" ]] || fail "the 2g.10gb job saw $out"
expect_eq "$(gpu_field 0 '.mig.instances[] | select(.uuid == "'"$out"'") | .profile')" 2g.10gb "the profile asked for"
expect_eq "$(gpu_field 0 '[.mig.instances[] | select(.uuid == "'"$uuid3"'")] | length')" 0 "the idle 3g.20gb"
expect_eq "$(gpu_field 0 .mig.created)/$(gpu_field 0 .mig.destroyed)" 4/1 "created/destroyed"
grep -q "destroyed idle MIG 3g.20gb instance" "$WORK/daemon.log" || fail "no log line for the destroyed instance"
pass "--mig-profile 2g.10gb gets exactly that; the idle 3g.20gb was destroyed for its slots"

# 7g.40gb cannot fit beside the two 1g.5gb leases: it waits, and starts once both ended.
bg_gs run --mig-profile 7g.40gb -- sh -c 'echo "$CUDA_VISIBLE_DEVICES" >"$0"' "$WORK/seven"
waiting=$!
wait_eq 5 1 queue_length
end_lease "$c1"
sleep 0.3
expect_eq "$(queue_length)" 1 "still waiting with one 1g.5gb lease left"
# The GPU is held for the 7g.40gb ahead: a 1g.5gb behind it does not take the freed slots.
set +e
out=$(gs run --mig-profile 1g.5gb --no-wait -- true 2>&1)
rc=$?
set -e
expect_eq "$rc" 75 "a 1g.5gb behind the waiting 7g.40gb (output: $out)"
kill -TERM "$(job_of "$c2")"
wait "$waiting" || fail "the 7g.40gb job failed"
seven=$(cat "$WORK/seven")
[[ $seven == MIG-* ]] || fail "the 7g.40gb job saw $seven"
expect_eq "$(gpu_field 0 '.mig.instances[] | select(.uuid == "'"$seven"'") | .profile')" 7g.40gb "the waiting request's instance"
expect_eq "$(gpu_field 0 '.mig.instances | length')" 1 "instances left on GPU 0"
pass "a request that cannot fit waits, and starts when space is freed (idle instances destroyed)"

# H100-80GB has its own profiles: 4G gets 1g.10gb, 12G 1g.20gb, --mig-profile 2g.20gb exactly.
stop_daemon
"$SMI" -i 1 -mig 1 >/dev/null
CONFIG=$'[gpu:1]\nmode = mig'
start_daemon
for want in "4G 1g.10gb" "12G 1g.20gb"; do
  set -- $want
  out=$(gs run --gpu-memory "$1" --mode mig -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
  expect_eq "$(gpu_field 1 '.mig.instances[] | select(.uuid == "'"$out"'") | .profile')" "$2" "$1 on an H100-80GB"
done
out=$(gs run --mig-profile 2g.20gb -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"')
expect_eq "$(gpu_field 1 '.mig.instances[] | select(.uuid == "'"$out"'") | .profile')" 2g.20gb "--mig-profile 2g.20gb"
expect_refused 1 "gpushare: GPU 1 (NVIDIA H100-80GB) has no MIG profile \"3g.20gb\" (it has 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)" --mig-profile 3g.20gb
pass "H100-80GB: 4G gets 1g.10gb, 12G 1g.20gb, --mig-profile 2g.20gb; an unknown profile is one clear line"
stop_daemon

# Issue 37, item 3: a GPU that leaves mode mig is as clean as a fresh one. GPU 0 went from mig to
# shared at the restart above (GPU 1 became the mig one): its idle 7g.40gb was destroyed at the
# start, so the administrator can turn MIG off; likewise GPU 1 once no GPU is mig.
instances() { # instances GPU: the MIG instances nvidia-smi lists on it
  "$SMI" mig -i "$1" -lgi 2>&1 | grep -c '^| *[0-9]\+ \+MIG ' || true
}
expect_eq "$(instances 0)" 0 "MIG instances left on GPU 0, mode shared since the restart"
grep -q "GPU 0 is mode shared: 1 of its 1 MIG instances destroyed; MIG mode stays on" "$WORK/daemon.log" ||
  fail "no log line for GPU 0's instances"
out=$("$SMI" -i 0 -mig 0 2>&1) || fail "MIG cannot be turned off on GPU 0 after it left mode mig: $out"
expect_eq "$(instances 1)" 3 "GPU 1's idle instances while it is mig"
CONFIG=
start_daemon
expect_eq "$(instances 1)" 0 "MIG instances left on GPU 1, mode shared now"
out=$("$SMI" -i 1 -mig 0 2>&1) || fail "MIG cannot be turned off on GPU 1 after it left mode mig: $out"
pass "a GPU leaving mode mig keeps no idle MIG instance: the administrator turns MIG off on GPU 0 and GPU 1"
stop_daemon
