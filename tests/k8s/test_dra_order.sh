#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device order gpushare-k8s publishes (docs/kubernetes.md, "Device order within a node"):
# with --device-order tightest the GPU with the least room comes first, so that the DRA
# allocator's first fit is a best fit, and the slice is republished (a new generation) when a
# lease changes the order and again when it ends; with --device-order index it never changes.
export GPUSIM_DEVICES=H100-80GB,H100-80GB
source "$(dirname "$0")/dra_lib.sh"
start_daemon
start_api
order() { # the devices' names in slice order, and the pool's generation
  slices | jq -r '.items[0] | ([.spec.devices[].name] | join(",")) + " " + (.spec.pool.generation | tostring)' 2>/dev/null
}
# hold OUT: a lease of 10G and 30 % on GPU 1, held by the connection of a process of its own
# (gpushared's reply in OUT; its pid in $!).
cat >"$WORK/hold.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"op":"acquire","gpu_memory":"10G","compute":30,"gpus_at":[1],"wait":false}\n')
print(s.recv(65536).decode().strip(), flush=True)
time.sleep(3600)
PY
hold() {
  bg python3 "$WORK/hold.py" "$GPUSHARE_SOCKET" >"$1"
}

start_plugin
wait_eq 10 "gpu-0,gpu-1 1" order
hold "$WORK/holder.out"
holder=$!
wait_until 5 grep -q '"state":"granted"' "$WORK/holder.out"
wait_eq 5 "gpu-1,gpu-0 2" order
kill "$holder"
wait "$holder" 2>/dev/null || true
wait_eq 5 "gpu-0,gpu-1 3" order
pass "tightest: the GPU with a lease first while it holds one, republished both ways"

kill -TERM "$PLUGIN_PID"
wait "$PLUGIN_PID" || fail "the plugin exited with $? on SIGTERM"
start_plugin --device-order index
hold "$WORK/holder2.out"
wait_until 5 grep -q '"state":"granted"' "$WORK/holder2.out"
sleep 1
expect_eq "$(order)" "gpu-0,gpu-1 3" "index order with a lease on GPU 1"
pass "index: the order never changes"
