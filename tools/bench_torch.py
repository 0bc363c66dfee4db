#!/usr/bin/python3
"""PyTorch timing of one workload for tools/bench_compare.sh and tools/bench_avx2_proxy.sh.

Usage: OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/bench_torch.py MODEL_DIR THREADS RUNS LENGTHS_JSON [DTYPES]
Pads to the longest sequence, warms up once, times RUNS forward passes. Without DTYPES: fp32 only,
printed as one object {"median_ms", "min_ms", "max_ms", "all_ms"}. DTYPES, a comma-separated list
of fp32, bf16 and int8: one such object per precision, keyed by its name, each timed after the one
before it. What a PyTorch user would run at each precision:
- fp32: roberta_ref.reference's forward (torch.nn.functional; 7-10% faster on the Intel Xeon with
  AMX than the plain torch.nn module of ../shared/bench, so the stronger of the two baselines);
- bf16: that plain module (nn.Linear, nn.LayerNorm, F.gelu, matmul/softmax attention: how
  transformers' RobertaModel is built) cast with `.to(torch.bfloat16)`, the attention mask in bf16
  too; its products go through oneDNN (AMX or AVX512-BF16 where the CPU has them);
- int8: the same module in fp32 through `torch.ao.quantization.quantize_dynamic(module,
  {nn.Linear}, dtype=torch.qint8)` as its documentation has it: weights per tensor (its default;
  per output channel, as ours and ONNX Runtime's are, ran at about the same speed: W3 373-381
  against 357-421 ms on the Intel Xeon with AMX), activations per tensor at run time, on the
  quantized engine the build has (Debian's: oneDNN; builds from pytorch.org: fbgemm).
"""
import json
import os
import statistics
import sys
import time

import torch

from roberta_ref.reference import Weights, forward
from roberta_ref.safetensors_io import load_hf_state_dict


def plain_module(model_dir, cfg):
    """../shared/bench/export_plain_onnx.py's Encoder, loaded from the folder (fp32)."""
    shared = os.environ.get("ROBERTA_SHARED_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
    bench = os.path.join(shared, "bench")
    if not os.path.isfile(os.path.join(bench, "export_plain_onnx.py")):
        sys.exit(f"bench_torch.py: {bench}/export_plain_onnx.py is missing "
                 "(set ROBERTA_SHARED_DIR to the shared folder)")
    if cfg.get("hidden_act", "gelu") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
        sys.exit(f"bench_torch.py: {model_dir}: the plain module has GELU and absolute positions only")
    sys.path.insert(0, bench)
    from export_plain_onnx import Encoder, read_safetensors

    class AnyDtypeEncoder(Encoder):
        # Encoder.forward builds the attention mask in fp32, which a bf16 module's scores cannot take.
        def forward(self, input_ids, attention_mask):
            m = input_ids.ne(self.pad).to(torch.int64)
            x = self.ln(self.word(input_ids) + self.pos(torch.cumsum(m, dim=1) * m + self.pad) + self.type0)
            ext = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
            for layer in self.layers:
                x = layer(x, ext)
            return x

    return AnyDtypeEncoder(cfg, read_safetensors(os.path.join(model_dir, "model.safetensors"))).eval()


def timed(run, runs):
    with torch.inference_mode():
        run()
        ms = []
        for _ in range(runs):
            t0 = time.perf_counter()
            run()
            ms.append((time.perf_counter() - t0) * 1000)
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms), "all_ms": ms}


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    model_dir, threads, runs, lengths = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
    dtypes = list(dict.fromkeys(sys.argv[5].split(","))) if len(sys.argv) > 5 else None
    unknown = set(dtypes or []) - {"fp32", "bf16", "int8"}
    if unknown:
        sys.exit(f"bench_torch.py: unknown precision {sorted(unknown)[0]!r} in DTYPES (fp32, bf16, int8)")
    torch.set_num_threads(threads)
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    B, L = len(lengths), max(lengths)
    ids = torch.ones(B, L, dtype=torch.long)
    mask = torch.zeros(B, L, dtype=torch.long)
    g = torch.Generator().manual_seed(1)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(4, 50000, (n,), generator=g)
        ids[b, 0], ids[b, n - 1] = 0, 2
        mask[b, :n] = 1
    ids = ids.clamp(max=cfg["vocab_size"] - 1)
    out = {}
    for dtype in dtypes or ["fp32"]:
        if dtype == "fp32":
            w = Weights(load_hf_state_dict(model_dir))
            out[dtype] = timed(lambda: forward(cfg, w, ids, mask, heads=False), runs)
            del w
        else:
            module = plain_module(model_dir, cfg)
            if dtype == "bf16":
                module = module.to(torch.bfloat16)
            else:
                module = torch.ao.quantization.quantize_dynamic(module, {torch.nn.Linear}, dtype=torch.qint8)
            out[dtype] = timed(lambda: module(ids, mask), runs)
            del module
    print(json.dumps(out if dtypes else out["fp32"]))


if __name__ == "__main__":
    main()
