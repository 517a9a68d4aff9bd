#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NodePrepareResources and NodeUnprepareResources through the stand-in kubelet (issue 22,
# acceptance 1 without containers, 3 and 5): claims become keyed gpushared leases with their CDI
# specs; a claim that does not fit is refused with one line naming it and what was free; prepare
# twice gives one lease; unprepare ends the lease and frees its memory within 1 s; a plugin killed
# with -9, or a gpushared killed with -9, between prepare and unprepare loses and doubles nothing;
# a MIG placement is made where the scheduler put it; every bad input is one line per claim with
# nothing half-made; the gRPC server answers unknown methods and garbage as gRPC servers do. From
# the plugin's restart on, its leases are on a user's behalf (--lease-user nobody).
export GPUSIM_DEVICES=H100-80GB,H100-80GB
source "$(dirname "$0")/dra_lib.sh"
"$GS_BUILD_DIR/sim/nvidia-smi" -i 1 -mig 1 >/dev/null
CONFIG="[daemon]
shim = $GS_BUILD_DIR/lib/libgpushare.so
[gpu:1]
mode = mig"
start_daemon
start_api
start_plugin --no-publish
start_kubelet
GI=1073741824

gpu0() {
  gs status --json | jq -r ".gpus[0].$1"
}

# 1. Two claims on the shared H100: 4Gi + 30 % and 8Gi + 70 %.
a=$(claim ml a gpu gpu-0 4Gi 30)
b=$(claim ml b gpu gpu-0 8Gi 70)
out=$(kubelet prepare --claim "ml/a/$a" --claim "ml/b/$b") || fail "prepare: $out"
expect_eq "$(jq -cS ".\"$a\"" <<<"$out")" \
  "{\"devices\":[{\"cdi\":[\"gpushare.io/gpu=k8s-$a\"],\"device\":\"gpu-0\",\"pool\":\"node-a\",\"requests\":[\"gpu\"],\"share_id\":\"s-${a:0:8}\"}],\"error\":\"\"}" \
  "claim a's devices"
expect_eq "$(keyed_leases)" "$(sorted "k8s/$a/gpu:active" "k8s/$b/gpu:active")" "keyed leases"
expect_eq "$(gs leases --json | jq -c '[.[] | select(.key != null) | [.gpus[0].memory_limit, .compute_share]] | sort')" \
  "[[$((4 * GI)),30],[$((8 * GI)),70]]" "the leases' memory and compute"
expect_eq "$(leftovers "$a")" 2 "a's record and CDI spec"
# The spec of gpushare cdi (gs_cdi_lease_spec) without its poststop release: the claim's lease
# lives until unprepare, whatever its containers do.
jq -e --arg n "k8s-$a" --arg k "k8s/$a/gpu" '.kind == "gpushare.io/gpu" and
  (.devices | map(.name) == [$n]) and (.devices[0].containerEdits | (.hooks | map(.hookName)) ==
  ["createRuntime"] and (.hooks[0].args | index($k) != null) and
  (.env | index("LD_PRELOAD=/usr/lib/gpushare/libgpushare.so") != null))' \
  "$(grep -l "k8s-$a" "$WORK"/cdi/*)" >/dev/null || fail "a's CDI spec: $(cat "$WORK"/cdi/*k8s-"$a"*)"
# Issue 34: a claim's spec names its lease's socket: its writer's alone (the runtime reads it as
# root).
for spec in "$WORK"/cdi/*k8s-*; do
  expect_eq "$(stat -c %a "$spec")" 600 "mode of the CDI spec $spec"
  if [[ $(id -u) == 0 ]] && setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$spec" >/dev/null 2>&1; then
    fail "another user read the CDI spec $spec"
  fi
done
pass "two claims (4Gi + 30 %, 8Gi + 70 %) prepared as keyed leases with CDI specs (mode 0600)"

# 2. Prepare twice: one lease (the kubelet retries).
out2=$(kubelet prepare --claim "ml/a/$a")
expect_eq "$(jq -cS ".\"$a\"" <<<"$out2")" "$(jq -cS ".\"$a\"" <<<"$out")" "a prepared again"
expect_eq "$(keyed_leases)" "$(sorted "k8s/$a/gpu:active" "k8s/$b/gpu:active")" "still two leases"
pass "prepare twice gives one lease"

# 3. A third claim that does not fit: one line naming it and what was free; nothing made.
c=$(claim ml c gpu gpu-0 4Gi 10)
set +e
out=$(kubelet prepare --claim "ml/c/$c")
rc=$?
set -e
expect_eq "$rc" 1 "exit status of a refused prepare"
free=$(($(gpu0 memory_free) / 1048576)) # MiB, as the line gives it (a whole Gi when it is one)
((free % 1024 == 0)) && free=$((free / 1024))Gi || free=${free}Mi
line=$(jq -r ".\"$c\".error" <<<"$out")
[[ $line == "claim ml/c: does not fit: it needs 4Gi and 10 % of compute; gpu-0 had $free and 0 % of compute free (2 leases) (gpushared refused the lease: "* ]] ||
  fail "the refusal: $line"
expect_eq "$(wc -l <<<"$line")" 1 "one line"
expect_eq "$(leftovers "$c")" 0 "c's leftovers"
expect_eq "$(keyed_leases)" "$(sorted "k8s/$a/gpu:active" "k8s/$b/gpu:active")" "no lease for c"
pass "a claim that does not fit: $line"

# 4. Unprepare: the lease ends and its memory is free within 1 s; unprepare again is fine.
before=$(gpu0 memory_free)
start=$(date +%s%N)
kubelet unprepare --claim "ml/a/$a" >/dev/null || fail "unprepare a"
wait_eq 1 "k8s/$b/gpu:active" keyed_leases
wait_eq 1 $((before + 4 * GI)) gpu0 memory_free
took=$((($(date +%s%N) - start) / 1000000))
((took <= 1000)) || fail "unprepare to memory free took $took ms (the bound: 1 s, from the call)"
echo "unprepare to memory free: $took ms"
expect_eq "$(leftovers "$a")" 0 "a's leftovers"
out=$(kubelet unprepare --claim "ml/a/$a") || fail "unprepare twice: $out"
pass "unprepare ends the lease and frees its memory within 1 s; twice is fine"

# 5. kill -9 of the plugin between prepare and unprepare; restart; unprepare: nothing left.
d=$(claim ml d gpu gpu-0 2Gi 10)
kubelet prepare --claim "ml/d/$d" >/dev/null || fail "prepare d"
kill9_plugin
start_plugin --no-publish --lease-user nobody # (from here on: leases on a user's behalf)
wait_registered
kubelet unprepare --claim "ml/d/$d" --retries 5 --backoff 0.2 >/dev/null || fail "unprepare d"
expect_eq "$(keyed_leases)" "k8s/$b/gpu:active" "leases after d"
expect_eq "$(leftovers "$d")" 0 "d's leftovers"
pass "kill -9 of the plugin between prepare and unprepare loses nothing"

# 6. kill -9 of gpushared between prepare and unprepare: the lease comes back with its key; a
# prepare again gives the same lease; unprepare ends it.
e=$(claim ml e gpu gpu-0 2Gi 10)
id=$(kubelet prepare --claim "ml/e/$e" >/dev/null && gs leases --json | jq ".[] | select(.key == \"k8s/$e/gpu\") | .id")
kill9_daemon
start_daemon
expect_eq "$(keyed_leases)" "$(sorted "k8s/$b/gpu:active" "k8s/$e/gpu:active")" "leases after gpushared's restart"
kubelet prepare --claim "ml/e/$e" >/dev/null || fail "prepare e again"
expect_eq "$(gs leases --json | jq -r ".[] | select(.key == \"k8s/$e/gpu\") | \"\(.id) \(.user)\"")" "$id nobody" "the same lease, on nobody's behalf"
kubelet unprepare --claim "ml/e/$e" >/dev/null || fail "unprepare e"
expect_eq "$(keyed_leases)" "k8s/$b/gpu:active" "leases after e"
pass "kill -9 of gpushared between prepare and unprepare doubles and loses nothing"

# 7. MIG: the scheduler's placement (3g.40gb at slot 4) is where the instance is made.
m=$(claim ml m gpu gpu-1-mig-3g40gb-4)
kubelet prepare --claim "ml/m/$m" >/dev/null || fail "prepare m"
expect_eq "$(gs status --json | jq -r '.gpus[1].mig.instances | map(.profile + "@" + (.start | tostring) + ":" + .state) | join(" ")')" \
  "3g.40gb@4:leased" "MIG instances"
kubelet unprepare --claim "ml/m/$m" >/dev/null || fail "unprepare m"
expect_eq "$(gs status --json | jq -r '.gpus[1].mig.instances | map(.profile + "@" + (.start | tostring) + ":" + .state) | join(" ")')" \
  "3g.40gb@4:idle" "MIG instances after"
pass "a MIG placement allocated by the scheduler is made there on prepare"

# 8. Bad input: one line per claim, nothing half-made.
bad_prepare() { # NAME UID EXPECTED-LINE
  local out got
  out=$(kubelet prepare --claim "ml/$1/$2") && fail "claim $1 was prepared"
  got=$(jq -r ".\"$2\".error" <<<"$out")
  expect_eq "$got" "$3" "claim $1's line"
  expect_eq "$(leftovers "$2")" 0 "claim $1's leftovers"
  expect_eq "$(keyed_leases)" "k8s/$b/gpu:active" "leases after claim $1"
}
u=$(claim ml lacks gpu gpu-7)
bad_prepare lacks "$u" "claim ml/lacks: allocated on gpu-7, which this node (node-a) does not have"
u=$(claim ml big gpu gpu-0 90Gi 10)
leasable=$(gs status --json | jq '.gpus[0].memory_leasable / 1048576 | floor')
bad_prepare big "$u" "claim ml/big: consumes 90Gi of memory of gpu-0, which has ${leasable}Mi"
u=$(claim ml cfg gpu gpu-0 1Gi 5 '{"apiVersion":"gpu.gpushare.io/v1","kind":"GpuConfig","computeMax":"lots"}')
bad_prepare cfg "$u" "claim ml/cfg: its configuration (FromClaim, entry 0): computeMax must be a whole percent, 1 to 100"
u=$(claim ml forbidden gpu gpu-0 1Gi 5)
api_mode forbidden
bad_prepare forbidden "$u" "claim ml/forbidden: the API server ($API) answered HTTP 403: forbidden: the token may not do this"
api_mode ok
u=$(claim ml down gpu gpu-0 1Gi 5)
kill "$API_PID"
wait "$API_PID" 2>/dev/null || true
out=$(kubelet prepare --claim "ml/down/$u") && fail "prepared without an API server"
got=$(jq -r ".\"$u\".error" <<<"$out")
[[ $got == "claim ml/down: cannot read it: API server $API: GET /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/down: "* ]] ||
  fail "the line of a down API server: $got"
expect_eq "$(leftovers "$u")" 0 "leftovers with the API server down"
pass "bad input: a device this node lacks, capacity above the GPU, a malformed GpuConfig, 403, a down API server"

# 9. The gRPC server as gRPC servers answer: an unknown method, a malformed message.
"$PYGRPC" - "$WORK/plugin/dra.sock" <<'EOF' || fail "gRPC status codes"
import sys, grpc
ch = grpc.insecure_channel("unix:" + sys.argv[1])
def code(path, body):
    try:
        ch.unary_unary(path)(body, timeout=5)
        return "OK"
    except grpc.RpcError as e:
        return e.code().name
got = (code("/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeWatch", b""),
       code("/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", b"\x0a\xff\xff"))
print(got)
sys.exit(0 if got == ("UNIMPLEMENTED", "INVALID_ARGUMENT") else 1)
EOF
pass "unknown method: UNIMPLEMENTED; a malformed request: INVALID_ARGUMENT"
