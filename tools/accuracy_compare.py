#!/usr/bin/python3
"""Lower precisions of roberta.cpp, ONNX Runtime and PyTorch against PyTorch fp32 on the same masked
inputs, for tools/accuracy_compare.sh (which makes the ONNX Runtime hidden states this reads).

Usage: PYTHONPATH=BUILD/python /usr/bin/python3 tools/accuracy_compare.py MODEL_DIR MASKS.jsonl THREADS \
           [NAME=HIDDEN.f32 ...]
       /usr/bin/python3 tools/accuracy_compare.py --check MODEL_DIR   (exits 0 where it has what this needs)
MASKS.jsonl: tools/train_demo.py eval --masks-out's lines, {"ids", "positions", "labels"}; each
NAME=HIDDEN.f32 another engine's last hidden states of those lines (each sequence's length x hidden
float32 values, one after the other, as tools/ort_hidden.js writes them).

The reference is roberta_ref.reference's forward (PyTorch fp32, Hugging Face's semantics). Every
engine's masked-LM logits come from its own last hidden state through the same fp32 head
(roberta_ref.reference.mlm_logits; roberta.cpp's int8 models keep their heads in fp32 too, its
bf16 models round them to bf16 as their encoders): what is compared is the encoder's precision.
Engines: roberta.cpp fp32 / bf16 / int8 (the Python package), the NAME=HIDDEN.f32 ones, PyTorch
bf16 (../shared/bench's plain torch.nn module cast with .to(torch.bfloat16)) and PyTorch int8
(that module's nn.Linear layers through quantize_dynamic, per tensor as its default, and per
output channel). Per engine: top-1 the same
as the reference's at the masked positions, the reference's top-1 among the engine's top 5, the
last hidden state's cosine to the reference's per token (mean, min), the mean-pooled cosine per
sequence (min), and top-1 accuracy against the labels. Prints a Markdown table.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

from roberta_ref.reference import Weights, forward, mlm_logits
from roberta_ref.safetensors_io import load_hf_state_dict


def load_model(model_dir):
    """config.json and the weights; exits with a message where there is no masked-LM head."""
    if not os.path.isfile(os.path.join(model_dir, "config.json")):
        sys.exit(f"accuracy_compare.py: {model_dir}: no config.json")
    w = Weights(load_hf_state_dict(model_dir))
    if w.get("lm_head.dense.weight", required=False) is None:
        sys.exit(f"accuracy_compare.py: {model_dir}: the checkpoint has no masked-LM head (lm_head.*)")
    return json.load(open(os.path.join(model_dir, "config.json"))), w


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        load_model(sys.argv[2])
        return
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    model_dir, masks_path, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    extra = []
    for arg in sys.argv[4:]:
        name, sep, path = arg.partition("=")
        if not sep or not name or not path:
            sys.exit(f"accuracy_compare.py: {arg!r} is not NAME=HIDDEN.f32")
        if not os.path.isfile(path):
            sys.exit(f"accuracy_compare.py: {path}: no such file")
        extra.append((name, path))
    torch.set_num_threads(threads)
    cfg, w = load_model(model_dir)
    H = cfg["hidden_size"]
    records = []
    for n, line in enumerate(open(masks_path), 1):
        if line.strip():
            r = json.loads(line)
            if not r.get("ids") or len(r.get("positions", ())) != len(r.get("labels", ())):
                sys.exit(f"{masks_path}:{n}: needs non-empty \"ids\" and as many \"positions\" as \"labels\"")
            records.append(r)

    masked = sum(len(r["positions"]) for r in records)
    positions = [torch.tensor(r["positions"], dtype=torch.long) for r in records]

    def hidden_states(fn):
        """fn(i, ids [1, L]) -> line i's last hidden state (any float dtype); yields them as [L, H] fp32."""
        with torch.inference_mode():
            for i, r in enumerate(records):
                ids = torch.tensor([r["ids"]], dtype=torch.long)
                yield torch.as_tensor(fn(i, ids)).float().reshape(len(r["ids"]), H)

    ones = lambda ids: torch.ones_like(ids)
    # the reference's hidden states and top-1 at the masks (logits only where masked: the memory of
    # every position's logits of a few thousand lines would not fit)
    reference = [(h, mlm_logits(cfg, w, h[pos]).argmax(-1)) for h, pos in
                 zip(hidden_states(lambda i, ids: forward(cfg, w, ids, ones(ids), heads=False)["last_hidden_state"][0]),
                     positions)]
    print(f"{len(records)} sequences, {masked} masks of {masks_path}; against PyTorch fp32 (the same fp32 "
          "masked-LM head on every engine's last hidden state)")
    print("| engine | top-1 = PyTorch fp32's (masks that differ) | PyTorch fp32's top-1 in its top 5 | "
          "last hidden cosine mean / min | mean-pooled cosine min | top-1 accuracy |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")

    def score(name, fn):
        same = in5 = correct = 0
        token_cos, pooled_cos = [], []
        for r, pos, (h_ref, top_ref), h in zip(records, positions, reference, hidden_states(fn)):
            top5 = mlm_logits(cfg, w, h[pos]).topk(5, dim=-1).indices
            same += int((top5[:, 0] == top_ref).sum())
            in5 += int((top5 == top_ref[:, None]).any(-1).sum())
            correct += int((top5[:, 0] == torch.tensor(r["labels"])).sum())
            token_cos.append(F.cosine_similarity(h.double(), h_ref.double(), dim=-1))
            pooled_cos.append(float(F.cosine_similarity(h.double().mean(0), h_ref.double().mean(0), dim=0)))
        cos = torch.cat(token_cos)
        print(f"| {name} | {100 * same / masked:.2f}% ({masked - same}) | {100 * in5 / masked:.2f}% | "
              f"{float(cos.mean()):.6f} / {float(cos.min()):.4f} | {min(pooled_cos):.6f} | "
              f"{100 * correct / masked:.2f}% |", flush=True)

    score("PyTorch fp32", lambda i, ids: reference[i][0])
    try:
        import roberta_cpp
    except ImportError as e:
        sys.exit(f"accuracy_compare.py: {e}: put the build's python folder on PYTHONPATH (BUILD/python)")
    for dtype, label in (("float32", "fp32"), ("bfloat16", "bf16"), ("int8", "int8")):
        model = roberta_cpp.Model.from_pretrained(model_dir, dtype=dtype, threads=threads)
        score(f"roberta.cpp {label}", lambda i, ids: model.forward(ids.numpy(), heads=[])["last_hidden_state"][0])
    offsets = np.cumsum([0] + [len(r["ids"]) * H for r in records])
    for name, path in extra:
        flat = np.memmap(path, dtype="<f4", mode="r")
        if flat.size != offsets[-1]:
            sys.exit(f"{path}: {flat.size} float32 values, {offsets[-1]} expected for {masks_path}'s sequences")
        score(name, lambda i, ids: np.array(flat[offsets[i]:offsets[i + 1]]))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
    from bench_torch import plain_module
    bf16 = plain_module(model_dir, cfg).to(torch.bfloat16)
    score("PyTorch bf16", lambda i, ids: bf16(ids, ones(ids))[0])
    del bf16
    module = plain_module(model_dir, cfg)
    for name, spec in (("per tensor", {torch.nn.Linear}),
                       ("per channel", {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig})):
        int8 = torch.ao.quantization.quantize_dynamic(module, spec, dtype=torch.qint8)
        score(f"PyTorch int8 ({name})", lambda i, ids: int8(ids, ones(ids))[0])


if __name__ == "__main__":
    main()
