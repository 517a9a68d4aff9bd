#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The online replay table of docs/kubernetes.md (issue 23's acceptance 1): for each trace, the
# offline policy (`gpushare plan replay`'s figure) and the online replay through the scheduler
# extender and the DRA allocator's model with each device order the plugin may publish, seeds
# 42-46, inflation 1.3, beside FGD's published figure. About 25 s per online replay on one core:
# 7 minutes for the default trace (as `make bench` runs it); the docs' table is
#   GS_TRACES="default cpu050 gpushare40 multigpu20 gpuspec10" bash bench/extender_replay.sh
# (35 minutes). GS_SEEDS for other seeds.
set -euo pipefail
build=${GS_BUILD_DIR:-build}
data=${GS_DATA_DIR:-$(cd "$(dirname "$0")/.." && pwd)/data}
traces="$data/traces/alibaba-openb"
bin="$build/bin/gpushare-scheduler-extender"
for t in ${GS_TRACES:-default}; do
    "$bin" replay --nodes "$traces/openb_node_list_gpu_node.csv" \
        --pods "$traces/openb_pod_list_$t.csv" --seed "${GS_SEEDS:-42-46}" --inflate 1.3 \
        --offline --device-order all --published "$traces/published_allocation_fgd_atc23.csv"
    echo
done
