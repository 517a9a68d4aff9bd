# SPDX-License-Identifier: Apache-2.0
# Acceptance 7: /metrics is valid Prometheus text (promtool check metrics) with per-GPU and
# per-lease series whose values match the leases.
source "$(dirname "$0")/lib.sh"
GPUSIM_DEVICES=H100-80GB,A100-40GB
# Best fit puts both leases on GPU 0, which the expected series below rely on.
CONFIG=$'[daemon]\nmetrics_users = all\n[gpu:all]\nplacement = bestfit'
command -v promtool >/dev/null || fail "promtool is missing (Debian package prometheus; scripts/deps.sh)"

start_daemon_metrics
url=$METRICS_URL
curl -fsS "$url" >/dev/null || fail "no metrics on $url"

bg_gs run --gpu-memory 8G --compute 30 --name train -- "$TOOL" charge 3G
client1=$!
bg_gs run --gpu 0.5 -- "$TOOL" charge 1G
client2=$!
wait_eq 5 $((4 << 30)) memory_used
# The snapshot is rendered once a second.
scrape_leases() {
  curl -fsS "$url" >"$WORK/scrape.txt" || true
  grep '^gpushare_leases ' "$WORK/scrape.txt" || true
}
wait_eq 3 "gpushare_leases 2" scrape_leases
curl -fsS "$url" >"$WORK/metrics.txt"
# promtool reads the text on stdin and prints problems; it exits nonzero on errors.
check_metrics "$WORK/metrics.txt"
pass "promtool check metrics: valid; its lint finds nothing but dcgm-exporter's camelCase modelName"

m=$WORK/metrics.txt
id1=$(gs leases --json | jq '.[] | select(.memory_limit == 8589934592) | .id')
gpu1=$(gs leases --json | jq ".[] | select(.id == $id1) | .gpus[0].index")
uuid1=$(gs leases --json | jq -r ".[] | select(.id == $id1) | .gpus[0].uuid")
leased1=$(gs status --json | jq ".gpus[$gpu1].memory_leased")
user=$(id -un)
expect_eq "$(grep -c '^DCGM_FI_DEV_FB_USED{gpu="[01]",UUID="GPU-' "$m")" 2 "DCGM_FI_DEV_FB_USED series"
# dcgm-exporter's labels, in its order, with its values: device is /dev/nvidiaN, pci_bus_id NVML's.
grep -q "^DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-[0-9a-f-]*\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100-80GB\",Hostname=\"$(hostname)\"} " "$m" ||
  fail "DCGM_FI_DEV_FB_FREE of GPU 0: $(grep '^DCGM_FI_DEV_FB_FREE' "$m")"
grep -q '^DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-[0-9a-f-]*",pci_bus_id="00000000:28:00.0",device="nvidia1",modelName="NVIDIA A100-40GB",' "$m" ||
  fail "DCGM_FI_DEV_FB_FREE of GPU 1"
grep -q '^DCGM_FI_DEV_GPU_UTIL{gpu="1"' "$m" || fail "DCGM_FI_DEV_GPU_UTIL of GPU 1"
grep -q "^gpushare_gpu_memory_leased_bytes{gpu=\"$gpu1\",UUID=\"$uuid1\".*} $leased1$" "$m" ||
  fail "gpushare_gpu_memory_leased_bytes of GPU $gpu1 ($leased1): $(grep gpushare_gpu_memory_leased "$m")"
grep -q '^gpushare_gpu_logical_capacity{gpu="1".*} 1$' "$m" || fail "gpushare_gpu_logical_capacity"
grep -q '^gpushare_gpu_logical_free{gpu="0".*} 1$' "$m" || fail "gpushare_gpu_logical_free"
grep -q "^gpushare_lease_memory_used_bytes{lease=\"$id1\",user=\"$user\",job_name=\"train\",gpu=\"$gpu1\",UUID=\"$uuid1\"} $((3 << 30))$" "$m" ||
  fail "gpushare_lease_memory_used_bytes of lease $id1"
grep -q "^gpushare_lease_memory_limit_bytes{lease=\"$id1\",.*} $((8 << 30))$" "$m" ||
  fail "gpushare_lease_memory_limit_bytes of lease $id1"
grep -q "^gpushare_lease_compute_share{lease=\"$id1\",user=\"$user\",job_name=\"train\"} 30$" "$m" ||
  fail "gpushare_lease_compute_share of lease $id1"
grep -q "^gpushare_oom_events_total{lease=\"$id1\",user=\"$user\",job_name=\"train\"} 0$" "$m" ||
  fail "gpushare_oom_events_total of lease $id1"
grep -q "^gpushare_lease_info{lease=\"$id1\",user=\"$user\",uid=\"$(id -u)\",job_name=\"train\",state=\"active\",kind=\"memory\"} 1$" "$m" ||
  fail "gpushare_lease_info of lease $id1"
grep -q '^gpushare_queue_length 0$' "$m" || fail "gpushare_queue_length"
grep -q '^gpushare_leases_granted_total 2$' "$m" || fail "gpushare_leases_granted_total"
pass "per-GPU (DCGM names) and per-lease series with the leases' values"

# An over-limit allocation counts as an OOM event of the lease.
gs run --gpu-memory 1G -- "$TOOL" charge 2G 0 >/dev/null 2>&1 && fail "a 2G charge fit a 1G lease"
expect_eq "$(curl -fsS -o /dev/null -w '%{http_code}' "http://$METRICS_LISTEN/nothing")" 404 "status of an unknown path"
kill -TERM "$(job_of "$client1")" "$(job_of "$client2")"
wait_eq 5 0 lease_count
