#!/usr/bin/python3
"""Run RobertaForMaskedLM in PyTorch with Hugging Face's semantics and dump every output as .npy.

Usage:
  /usr/bin/python3 tools/dump_reference.py --model DIR --ids IDS.json --out DUMP [--padding right|left]
  /usr/bin/python3 tools/dump_reference.py --model DIR --ids-npy IDS.npy [--mask-npy MASK.npy] --out DUMP
  /usr/bin/python3 tools/dump_reference.py --model DIR --text-file TEXTS.txt --out DUMP

Writes input_ids.npy and attention_mask.npy (int64 [B,L]), hidden_states_0.npy (embedding output)
... hidden_states_N.npy (float32 [B,L,H]), logits.npy (float32 [B,L,V]) when the model has an LM
head, pooler_output.npy (float32 [B,H]) when it has a pooler, and meta.json.
The forward pass is written here from the math with torch.nn.functional (independent of the C++
engine): word + position + token-type embeddings and LayerNorm, post-LN blocks with scaled
dot-product attention and the extended attention mask (1 - mask) * finfo.min, the activation named
by hidden_act, the MLM head (dense, erf-GELU, LayerNorm, decoder tied to the word embeddings when
lm_head.decoder.weight is absent) and the pooler tanh(dense(h[:, 0])). Computed in float32.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from st_io import load_hf_state_dict  # noqa: E402


def activation(name):
    gelu_tanh = lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    acts = {
        "gelu": F.gelu, "gelu_python": lambda x: x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))),
        "gelu_new": gelu_tanh, "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "gelu_fast": lambda x: 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x))),
        "gelu_accurate": lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3)))),
        "gelu_10": lambda x: torch.clip(F.gelu(x), -10, 10),
        "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
        "laplace": lambda x: 0.5 * (1.0 + torch.erf((x - 0.707107) / (0.282095 * math.sqrt(2.0)))),
        "relu": F.relu, "relu2": lambda x: torch.square(F.relu(x)), "relu6": F.relu6,
        "leaky_relu": F.leaky_relu, "silu": F.silu, "swish": F.silu, "tanh": torch.tanh,
        "sigmoid": torch.sigmoid, "mish": F.mish, "linear": lambda x: x,
    }
    if name not in acts:
        sys.exit(f"error: hidden_act {name!r} is not supported")
    return acts[name]


class Weights:
    """Looks tensors up by HF name, with or without the `roberta.` prefix and legacy gamma/beta."""

    def __init__(self, sd):
        self.sd = {k: (v.float() if v.is_floating_point() else v) for k, v in sd.items()}
        self.prefix = "roberta." if "roberta.embeddings.word_embeddings.weight" in sd else ""

    def get(self, name, required=True):
        for key in (name, name.replace(".weight", ".gamma"), name.replace(".bias", ".beta")):
            if key in self.sd:
                return self.sd[key]
        if required:
            sys.exit(f"error: tensor {name} missing")
        return None

    def body(self, name, required=True):
        return self.get(self.prefix + name, required)


@torch.no_grad()
def forward(cfg, w, ids, mask, heads=True):
    H, nh, eps, pad = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-12), cfg.get("pad_token_id", 1)
    act = activation(cfg.get("hidden_act", "gelu"))
    B, L = ids.shape
    not_pad = (ids != pad).long()
    position_ids = torch.cumsum(not_pad, dim=1) * not_pad + pad
    x = (w.body("embeddings.word_embeddings.weight")[ids] + w.body("embeddings.position_embeddings.weight")[position_ids]
         + w.body("embeddings.token_type_embeddings.weight")[torch.zeros_like(ids)])
    ln = lambda t, name: F.layer_norm(t, (H,), w.body(name + ".weight"), w.body(name + ".bias"), eps)
    lin = lambda t, name: F.linear(t, w.body(name + ".weight"), w.body(name + ".bias"))
    x = ln(x, "embeddings.LayerNorm")
    hidden = [x]
    ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    d = H // nh
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        split = lambda t: t.view(B, L, nh, d).permute(0, 2, 1, 3)
        q, k, v = (split(lin(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + ext
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).reshape(B, L, H)
        x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        x = ln(lin(act(lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
        hidden.append(x)
    out = {"hidden": hidden}
    if heads and w.get("lm_head.dense.weight", required=False) is not None:
        t = F.gelu(F.linear(x, w.get("lm_head.dense.weight"), w.get("lm_head.dense.bias")))
        t = F.layer_norm(t, (H,), w.get("lm_head.layer_norm.weight"), w.get("lm_head.layer_norm.bias"), eps)
        dec = w.get("lm_head.decoder.weight", required=False)
        if dec is None:
            dec = w.body("embeddings.word_embeddings.weight")
        bias = w.get("lm_head.decoder.bias", required=False)
        if bias is None:
            bias = w.get("lm_head.bias", required=False)
        if bias is None:
            bias = torch.zeros(dec.shape[0])
        out["logits"] = F.linear(t, dec, bias)
    if heads and w.body("pooler.dense.weight", required=False) is not None:
        out["pooler"] = torch.tanh(lin(x[:, 0], "pooler.dense"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--ids", help="JSON list of token-id lists")
    src.add_argument("--ids-npy")
    src.add_argument("--text-file", help="one text per line, tokenized with the model's tokenizer")
    ap.add_argument("--mask-npy")
    ap.add_argument("--padding", choices=["right", "left"], default="right")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-logits", action="store_true")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(2)
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    pad = cfg.get("pad_token_id", 1)
    if args.ids_npy:
        ids = torch.from_numpy(np.load(args.ids_npy)).long()
        mask = torch.from_numpy(np.load(args.mask_npy)).long() if args.mask_npy else (ids != pad).long()
    else:
        if args.ids:
            with open(args.ids) as f:
                seqs = json.load(f)
        else:
            from bpe_tokenizer import BpeTokenizer
            tok = BpeTokenizer.from_dir(args.model)
            with open(args.text_file, encoding="utf-8") as f:
                seqs = [tok.encode(line) for line in f.read().split("\n")[:-1]]
        L = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), L), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), L), dtype=torch.long)
        for b, s in enumerate(seqs):
            sl = slice(0, len(s)) if args.padding == "right" else slice(L - len(s), L)
            ids[b, sl] = torch.tensor(s, dtype=torch.long)
            mask[b, sl] = 1
    if os.path.exists(args.out) and os.listdir(args.out) and not args.force:
        sys.exit(f"error: {args.out} exists and is not empty (use --force)")
    os.makedirs(args.out, exist_ok=True)
    out = forward(cfg, Weights(load_hf_state_dict(args.model)), ids, mask)
    np.save(os.path.join(args.out, "input_ids.npy"), ids.numpy().astype(np.int64))
    np.save(os.path.join(args.out, "attention_mask.npy"), mask.numpy().astype(np.int64))
    for i, h in enumerate(out["hidden"]):
        np.save(os.path.join(args.out, f"hidden_states_{i}.npy"), h.numpy().astype(np.float32))
    if "logits" in out and not args.no_logits:
        np.save(os.path.join(args.out, "logits.npy"), out["logits"].numpy().astype(np.float32))
    if "pooler" in out:
        np.save(os.path.join(args.out, "pooler_output.npy"), out["pooler"].numpy().astype(np.float32))
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump({"model": os.path.abspath(args.model), "num_layers": cfg["num_hidden_layers"],
                   "padding": args.padding, "torch": torch.__version__}, f, indent=2)


if __name__ == "__main__":
    main()
