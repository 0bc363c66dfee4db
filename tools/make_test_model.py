#!/usr/bin/python3
"""Write a random-weight RoBERTa checkpoint in Hugging Face layout (config.json + weights).

Usage: /usr/bin/python3 tools/make_test_model.py --out DIR [--preset tiny] [--seed 0] [variants]

Presets (vocab 50265 and max_position_embeddings 514 unless noted):
  tiny           H=32, 2 layers, 4 heads, I=64
  odd            H=48, 3 layers, 6 heads, I=100 (an odd intermediate size)
  large-weights  H=64, 2 layers, 4 heads, I=160, weights with std 0.5-0.8: a wrong attention scale,
                 tanh-GELU for erf-GELU or a wrong LayerNorm eps shows far above 1e-4
  small-vocab    vocab 300, H=32, 2 layers, 4 heads, I=64, max_position 66, no tokenizer files
  base           roberta-base's shape (H=768, 12 layers, 12 heads, I=3072): ~500 MB, never committed
Variants mirror real checkpoints: --no-prefix (RobertaModel export: no `roberta.` prefix and no
LM head), --tied (no lm_head.decoder.weight), --no-decoder-bias, --gamma-beta (legacy LayerNorm
names), --no-pooler, --no-lm-head, --position-ids (extra buffer), --dtype f16|bf16, --shards N,
--format bin-zip|bin-legacy (pytorch_model.bin instead of safetensors).
"""
import argparse
import json
import os
import shutil
import sys

import torch

from roberta_ref.checkpoints import WEIGHT_FORMATS, save_weights

PRESETS = {
    "tiny": dict(vocab=50265, hidden=32, layers=2, heads=4, inter=64, positions=514, std=0.3, tokenizer=True),
    "odd": dict(vocab=50265, hidden=48, layers=3, heads=6, inter=100, positions=514, std=0.3, tokenizer=True),
    "large-weights": dict(vocab=50265, hidden=64, layers=2, heads=4, inter=160, positions=514, std=0.5, tokenizer=True,
                          embed_std=0.2),
    "small-vocab": dict(vocab=300, hidden=32, layers=2, heads=4, inter=64, positions=66, std=0.4, tokenizer=False),
    "base": dict(vocab=50265, hidden=768, layers=12, heads=12, inter=3072, positions=514, std=0.02, tokenizer=True),
}
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DEFAULT_TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "assets",
                                 "roberta-base-tokenizer")


def make_state_dict(p, args, gen):
    H, I, V, P = p["hidden"], p["inter"], p["vocab"], p["positions"]
    std = p["std"]
    # Projections scaled by 1/sqrt(fan_in) * sqrt(H) * std keep activations finite for every shape.
    def w(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen) * std * scale
    def small(n):
        return torch.randn(n, generator=gen) * 0.1
    def norm(prefix, sd):
        g, b = ("gamma", "beta") if args.gamma_beta else ("weight", "bias")
        sd[f"{prefix}.{g}"] = 1.0 + 0.1 * torch.randn(H, generator=gen)
        sd[f"{prefix}.{b}"] = small(H)
    sd = {}
    r = "" if args.no_prefix else "roberta."
    # Embeddings (and so the tied decoder) stay moderate even in large-weights, so that logits
    # keep a magnitude at which fp32 can agree to 1e-4; the encoder layers carry the large weights.
    embed_scale = p.get("embed_std", 2.0 * std) / std
    sd[f"{r}embeddings.word_embeddings.weight"] = w(V, H, scale=embed_scale)
    sd[f"{r}embeddings.position_embeddings.weight"] = w(P, H, scale=embed_scale)
    sd[f"{r}embeddings.token_type_embeddings.weight"] = w(args.type_vocab, H, scale=embed_scale)
    if args.position_ids:
        sd[f"{r}embeddings.position_ids"] = torch.arange(P, dtype=torch.int64).unsqueeze(0)
    norm(f"{r}embeddings.LayerNorm", sd)
    fan = (32.0 / H) ** 0.5  # presets were tuned at H=32; keep the scale of q·k comparable
    for i in range(p["layers"]):
        l = f"{r}encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            sd[l + name + ".weight"] = w(H, H, scale=fan)
            sd[l + name + ".bias"] = small(H)
        norm(l + "attention.output.LayerNorm", sd)
        sd[l + "intermediate.dense.weight"] = w(I, H, scale=fan)
        sd[l + "intermediate.dense.bias"] = small(I)
        sd[l + "output.dense.weight"] = w(H, I, scale=fan * (H / I) ** 0.5)
        sd[l + "output.dense.bias"] = small(H)
        norm(l + "output.LayerNorm", sd)
    if not args.no_pooler:
        sd[f"{r}pooler.dense.weight"] = w(H, H, scale=fan)
        sd[f"{r}pooler.dense.bias"] = small(H)
    if not args.no_lm_head and not args.no_prefix:
        sd["lm_head.dense.weight"] = w(H, H, scale=fan)
        sd["lm_head.dense.bias"] = small(H)
        g, b = ("gamma", "beta") if args.gamma_beta else ("weight", "bias")
        sd[f"lm_head.layer_norm.{g}"] = 1.0 + 0.1 * torch.randn(H, generator=gen)
        sd[f"lm_head.layer_norm.{b}"] = small(H)
        bias = small(V)
        if not args.tied:
            # HF ties the decoder to the word embeddings: the stored values are the same.
            sd["lm_head.decoder.weight"] = sd[f"{r}embeddings.word_embeddings.weight"].clone()
        if not args.no_decoder_bias:
            sd["lm_head.decoder.bias"] = bias.clone()
        sd["lm_head.bias"] = bias
    dtype = DTYPES[args.dtype]
    return {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in sd.items()}


def config_json(p, args):
    return {
        "architectures": ["RobertaModel" if args.no_prefix else "RobertaForMaskedLM"],
        "attention_probs_dropout_prob": 0.1, "bos_token_id": 0, "eos_token_id": 2,
        "hidden_act": args.hidden_act, "hidden_dropout_prob": 0.1, "hidden_size": p["hidden"],
        "initializer_range": 0.02, "intermediate_size": p["inter"], "layer_norm_eps": 1e-05,
        "max_position_embeddings": p["positions"], "model_type": "roberta",
        "num_attention_heads": p["heads"], "num_hidden_layers": p["layers"], "pad_token_id": 1,
        "position_embedding_type": "absolute", "type_vocab_size": args.type_vocab, "vocab_size": p["vocab"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hidden-act", default="gelu")
    ap.add_argument("--type-vocab", type=int, default=1)
    ap.add_argument("--dtype", default="f32", choices=sorted(DTYPES))
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--format", default="safetensors", choices=WEIGHT_FORMATS)
    for flag in ("no-prefix", "tied", "no-decoder-bias", "gamma-beta", "no-pooler", "no-lm-head", "position-ids",
                 "no-tokenizer", "force"):
        ap.add_argument("--" + flag, action="store_true")
    ap.add_argument("--tokenizer-dir", default=DEFAULT_TOKENIZER)
    args = ap.parse_args()
    p = PRESETS[args.preset]
    if os.path.exists(args.out) and os.listdir(args.out) and not args.force:
        sys.exit(f"error: {args.out} exists and is not empty (use --force)")
    os.makedirs(args.out, exist_ok=True)
    gen = torch.Generator().manual_seed(args.seed)
    sd = make_state_dict(p, args, gen)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config_json(p, args), f, indent=2)
    save_weights(args.out, sd, args.format, args.shards)
    if p["tokenizer"] and not args.no_tokenizer:
        for name in ("vocab.json", "merges.txt", "tokenizer.json"):
            src = os.path.join(args.tokenizer_dir, name)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(args.out, name))
    print(f"wrote {args.out}: preset {args.preset}, {sum(v.numel() for v in sd.values())} values")


if __name__ == "__main__":
    main()
