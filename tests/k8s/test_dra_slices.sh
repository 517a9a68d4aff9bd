#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpushare-k8s registers with the (stand-in) kubelet through the plugin registry and publishes
# the node's GPUs: for 2 x H100, one shared and one mig, the slices pass the resource.k8s.io/v1
# check (tests/k8s/check_resource_v1.py), the shared GPU's memory is what gpushared leases, the
# MIG GPU is one device per profile and placement on a counter set; a restarted plugin adopts its
# slices (no new generation, nothing doubled); a GPU that stops serving (MIG turned off) leaves
# the slice; an API server that refuses (403) or is down is retried until it answers.
export GPUSIM_DEVICES=H100-80GB,H100-80GB
source "$(dirname "$0")/dra_lib.sh"
CHECK=$K8S/check_resource_v1.py
"$GS_BUILD_DIR/sim/nvidia-smi" -i 1 -mig 1 >/dev/null
CONFIG=$'[gpu:1]\nmode = mig'
start_daemon
start_api
api POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-a"}}' >/dev/null
start_plugin
start_kubelet
pass "registered: $(jq -cS '."gpu.gpushare.io"' "$WORK/kubelet.json")"
grep -q "registered with the kubelet as gpu.gpushare.io (v1.DRAPlugin at $WORK/plugin/dra.sock)" \
  "$WORK/plugin.log" || fail "the plugin did not log the kubelet's verdict"

# 1. Two slices (devices, counters), one generation; the check passes.
wait_until 10 bash -c "[[ \$(curl -s -H 'Authorization: Bearer writer' '$API/apis/resource.k8s.io/v1/resourceslices' | jq '.items | length') == 2 ]]"
slices >"$WORK/slices.json"
python3 "$CHECK" slices "$WORK/slices.json" || fail "the slices do not follow resource.k8s.io/v1"
devs=$WORK/devs.json
jq '[.items[].spec.devices // [] | .[]]' "$WORK/slices.json" >"$devs"
expect_eq "$(jq -r '[.items[].metadata.name] | sort | join(" ")' "$WORK/slices.json")" \
  "node-a-gpu.gpushare.io node-a-gpu.gpushare.io-counters" "slice names"
expect_eq "$(jq -r '[.items[].metadata.ownerReferences[0] | .kind + "/" + .name] | unique | join(" ")' "$WORK/slices.json")" \
  "Node/node-a" "owner"
expect_eq "$(jq -r '[.items[].spec.pool | "\(.name):\(.generation):\(.resourceSliceCount)"] | unique | join(" ")' "$WORK/slices.json")" \
  "node-a:1:2" "pool, generation, count"

# 2. The shared GPU: capacity = what gpushared leases (whole MiB), a share's policy.
leasable=$(gs status --json | jq '.gpus[0].memory_leasable')
mib=$((leasable / 1048576))
expect_eq "$(jq -cS '.[0] | [.name, .attributes.mode.string, .attributes.index.int, .allowMultipleAllocations, .capacity.memory.value, .capacity.memory.requestPolicy, .capacity.compute]' "$devs")" \
  "[\"gpu-0\",\"shared\",0,true,\"${mib}Mi\",{\"default\":\"${mib}Mi\",\"validRange\":{\"min\":\"1Mi\",\"step\":\"1Mi\"}},{\"requestPolicy\":{\"default\":\"100\",\"validRange\":{\"min\":\"1\",\"step\":\"1\"}},\"value\":\"100\"}]" \
  "gpu-0 (shared)"
expect_eq "$(jq -r '.[0].attributes | [.uuid.string, .productName.string, .cudaDriverVersion.version] | join(" ")' "$devs")" \
  "$(gs status --json | jq -r '.gpus[0] | .uuid + " " + .name') 13.0.0" "gpu-0 attributes"

# 3. The MIG GPU: one device per placement (H100: 7 + 7 + 4 + 3 + 2 + 1 + 1), on gpu-1-mig.
expect_eq "$(jq '[.[] | select(.attributes.mode.string == "mig")] | length' "$devs")" 25 "MIG devices"
expect_eq "$(jq -cS '.[] | select(.name == "gpu-1-mig-3g40gb-4") | [.attributes.profile.string, .attributes.placementStart.int, .capacity.memory.value, .capacity.compute.value, .consumesCounters]' "$devs")" \
  '["3g.40gb",4,"40Gi","43",[{"counterSet":"gpu-1-mig","counters":{"compute-slices":{"value":"3"},"memory-slot-4":{"value":"1"},"memory-slot-5":{"value":"1"},"memory-slot-6":{"value":"1"},"memory-slot-7":{"value":"1"}}}]]' \
  "a 3g.40gb placement"
expect_eq "$(jq -cS '.items[] | select(.spec.sharedCounters) | .spec.sharedCounters' "$WORK/slices.json")" \
  '[{"counters":{"compute-slices":{"value":"7"},"media-extensions":{"value":"1"},"memory-slot-0":{"value":"1"},"memory-slot-1":{"value":"1"},"memory-slot-2":{"value":"1"},"memory-slot-3":{"value":"1"},"memory-slot-4":{"value":"1"},"memory-slot-5":{"value":"1"},"memory-slot-6":{"value":"1"},"memory-slot-7":{"value":"1"}},"name":"gpu-1-mig"}]' \
  "counter set"
pass "2 x H100 (shared, mig) published as resource.k8s.io/v1 has it"

# 4. A malformed slice is caught by the check (the check is not a rubber stamp).
jq '.items[0].spec.devices[0].capacity.memory.value = "80 GiB" | .items[0].spec.devices[1].name = "GPU_1" | .items[1].spec.pool.generation = 7' \
  "$WORK/slices.json" >"$WORK/broken.json"
out=$(python3 "$CHECK" slices "$WORK/broken.json") && fail "a broken slice passed"
expect_eq "$(wc -l <<<"$out")" 3 "problems found in the broken slices"
pass "the check fails a malformed quantity, a bad device name and a mixed generation"

# 5. A restarted plugin adopts its slices: same generation, nothing doubled.
kill -TERM "$PLUGIN_PID"
wait "$PLUGIN_PID" || fail "the plugin exited with status $? on SIGTERM"
[[ ! -e $WORK/registry/gpu.gpushare.io-reg.sock ]] || fail "the registration socket stayed"
wait_eq 5 '{}' jq -cS . "$WORK/kubelet.json"
start_plugin
wait_registered
wait_passes 3 # (the first adopts; two more write nothing)
expect_eq "$(slices | jq -r '[.items[] | "\(.metadata.name):\(.spec.pool.generation)"] | sort | join(" ")')" \
  "node-a-gpu.gpushare.io-counters:1 node-a-gpu.gpushare.io:1" "slices after a restart"
pass "a restarted plugin re-registers and adopts its slices"

# 6. A GPU that stops serving leaves the slice (MIG turned off: gpushared says why).
"$GS_BUILD_DIR/sim/nvidia-smi" -i 1 -mig 0 >/dev/null
wait_eq 15 "1 gpu-0" bash -c "curl -s -H 'Authorization: Bearer writer' '$API/apis/resource.k8s.io/v1/resourceslices' | jq -r '[.items | length, ([.[].spec.devices // [] | .[].name] | join(\",\"))] | join(\" \")'"
slices >"$WORK/slices2.json"
python3 "$CHECK" slices "$WORK/slices2.json" || fail "the republished slice"
expect_eq "$(jq '.items[0].spec.pool | [.generation, .resourceSliceCount]' -c "$WORK/slices2.json")" "[2,1]" "generation 2, one slice"
pass "a GPU that stops serving is withdrawn (the counters slice deleted)"

# 7. 403, then down: retried; published once it answers again (a restarted API server that lost
# every object gets the slices again).
api_mode forbidden
"$GS_BUILD_DIR/sim/nvidia-smi" -i 1 -mig 1 >/dev/null
wait_until 15 grep -q 'ResourceSlices: .*HTTP 403' "$WORK/plugin.log"
api_mode ok
wait_eq 15 2 bash -c "curl -s -H 'Authorization: Bearer writer' '$API/apis/resource.k8s.io/v1/resourceslices' | jq '.items | length'"
wait_until 5 grep -q 'ResourceSlices: publishing again' "$WORK/plugin.log" # (said once the pass ends)
port=${API##*:}
kill "$API_PID"
wait "$API_PID" 2>/dev/null || true
"$GS_BUILD_DIR/sim/nvidia-smi" -i 1 -mig 0 >/dev/null
wait_until 15 grep -q "ResourceSlices: API server $API: .*Couldn't connect\|ResourceSlices: API server $API: .*refused" "$WORK/plugin.log"
start_api --port "$port"
wait_eq 15 "1 gpu-0" bash -c "curl -s -H 'Authorization: Bearer writer' '$API/apis/resource.k8s.io/v1/resourceslices' | jq -r '[.items | length, ([.[].spec.devices // [] | .[].name] | join(\",\"))] | join(\" \")'"
expect_eq "$(grep -c 'ResourceSlices: .*HTTP 403' "$WORK/plugin.log")" 1 "403 said once"
pass "403 and a stopped API server are retried, each said once; a new API server gets the slices"

# 8. An API server without DRAPartitionableDevices drops MIG's counters: the plugin withdraws the
# MIG GPU (its placements would be allocated as independent, overlapping devices) and settles.
port=${API##*:}
kill "$API_PID"
wait "$API_PID" 2>/dev/null || true
"$GS_BUILD_DIR/sim/nvidia-smi" -i 1 -mig 1 >/dev/null
start_api --port "$port" --feature-gates DRAPartitionableDevices=false
wait_until 20 grep -q 'the API server dropped MIG.s counters (feature gate DRAPartitionableDevices off): MIG GPUs are withdrawn' "$WORK/plugin.log"
wait_eq 15 "1 gpu-0" bash -c "curl -s -H 'Authorization: Bearer writer' '$API/apis/resource.k8s.io/v1/resourceslices' | jq -r '[.items | length, ([.[].spec.devices // [] | .[].name] | join(\",\"))] | join(\" \")'"
gen=$(slices | jq '.items[0].spec.pool.generation')
wait_passes 4
expect_eq "$(slices | jq '.items[0].spec.pool.generation')" "$gen" "no write after settling"
expect_eq "$(grep -c 'dropped MIG' "$WORK/plugin.log")" 1 "said once"
pass "an API server without partitionable devices: MIG GPUs withdrawn, said once, no write loop"
