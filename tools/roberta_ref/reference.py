"""The PyTorch reference forward pass of RobertaForMaskedLM, with Hugging Face's semantics.

Written here from the math with torch.nn.functional, independent of the C++ engine: word +
position + token-type embeddings and LayerNorm, post-LN blocks with scaled dot-product attention
and the extended attention mask (1 - mask) * finfo.min, the activation named by hidden_act, the
MLM head (dense, erf-GELU, LayerNorm, decoder tied to the word embeddings when
lm_head.decoder.weight is absent) and the pooler tanh(dense(h[:, 0])). Computed in float32.

    from roberta_ref.reference import Weights, forward
    from roberta_ref.safetensors_io import load_hf_state_dict
    out = forward(cfg, Weights(load_hf_state_dict(model_dir)), ids, mask)
    # out["hidden"]: embedding output and every layer's; out["logits"], out["pooler"] when present

A missing tensor or an unsupported hidden_act ends the program with an error message.
"""
import math
import sys

import torch
import torch.nn.functional as F

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
    """cfg: config.json's dict; w: Weights; ids, mask: int64 [B, L]. Returns {"hidden": [B, L, H] x
    (layers + 1), "logits": [B, L, V] with an LM head, "pooler": [B, H] with a pooler}; heads=False
    skips both heads."""
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
