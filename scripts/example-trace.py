#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes data/traces/example/: a small synthetic workload in the openb CSV format (a node list
# and a pod list) that gpushare plan replay reads, made here from a fixed seed so that anyone can
# make it again. It is gpushare's own (Apache-2.0), so the package ships it: the Alibaba openb
# traces are not for redistribution in a package (data/traces/alibaba-openb/PROVENANCE.md).
# Shape: 64 GPU nodes (T4, V100M32, A100 in the openb ratios of CPU and memory), 1,200 pods:
# half share a GPU (gpu_milli 100..900), a third take one whole GPU, the rest 2..8 GPUs; a few
# CPU-only; a tenth name GPU models.
import csv
import random
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "data/traces/example"
rng = random.Random(27)
nodes = []
for i in range(64):
    model, gpus = rng.choice([("T4", 2), ("V100M32", 8), ("A100", 8), ("T4", 4)])
    nodes.append((f"example-node-{i:04d}", 96000, 393216, gpus, model))
with open(f"{out}/nodes.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
    w.writerows(nodes)
pods = []
for i in range(1200):
    r = rng.random()
    if r < 0.05:
        num_gpu, milli = 0, 0
    elif r < 0.55:
        num_gpu, milli = 1, rng.choice(range(100, 1000, 50))
    elif r < 0.88:
        num_gpu, milli = 1, 1000
    else:
        num_gpu, milli = rng.choice([2, 4, 8]), 1000
    spec = rng.choice(["T4", "V100M32", "A100", "V100M32|A100"]) if rng.random() < 0.1 else ""
    cpu = rng.choice([2000, 4000, 8000, 16000])
    mem = rng.choice([4096, 8192, 16384, 32768])
    pods.append((f"example-pod-{i:04d}", cpu, mem, num_gpu, milli, spec if num_gpu else ""))
with open(f"{out}/pods.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"])
    w.writerows(pods)
