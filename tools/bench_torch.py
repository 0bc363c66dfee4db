#!/usr/bin/python3
"""PyTorch timing of one workload for tools/bench_compare.sh (roberta_ref.reference's forward, fp32).

Usage: OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/bench_torch.py MODEL_DIR THREADS RUNS LENGTHS_JSON
Pads to the longest sequence, warms up once, prints {"median_ms", "min_ms", "max_ms", "all_ms"}.
"""
import json
import os
import statistics
import sys
import time

import torch

from roberta_ref.reference import Weights, forward
from roberta_ref.safetensors_io import load_hf_state_dict

model_dir, threads, runs, lengths = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
torch.set_num_threads(threads)
cfg = json.load(open(os.path.join(model_dir, "config.json")))
w = Weights(load_hf_state_dict(model_dir))
B, L = len(lengths), max(lengths)
ids = torch.ones(B, L, dtype=torch.long)
mask = torch.zeros(B, L, dtype=torch.long)
g = torch.Generator().manual_seed(1)
for b, n in enumerate(lengths):
    ids[b, :n] = torch.randint(4, 50000, (n,), generator=g)
    ids[b, 0], ids[b, n - 1] = 0, 2
    mask[b, :n] = 1
with torch.inference_mode():
    forward(cfg, w, ids, mask, heads=False)
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        forward(cfg, w, ids, mask, heads=False)
        ms.append((time.perf_counter() - t0) * 1000)
print(json.dumps({"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms), "all_ms": ms}))
