"""The PyTorch reference forward pass of RoBERTa checkpoints, with Hugging Face's semantics.

Written here from the math with torch.nn.functional, independent of the C++ engine: word +
position + token-type embeddings and LayerNorm, post-LN blocks with scaled dot-product attention
and the extended attention mask (1 - mask) * finfo.min, the activation named by hidden_act, the
MLM head (dense, erf-GELU, LayerNorm, decoder tied to the word embeddings when
lm_head.decoder.weight is absent) and the pooler tanh(dense(h[:, 0])). Computed in float32.

Also, as transformers 4.x computes them (modeling_roberta.py, modeling_data2vec_text.py,
modeling_roberta_prelayernorm.py):
- model_type "xlm-roberta" (prefix `roberta.`) and "data2vec-text" (prefix `data2vec_text.`): the
  same network as RoBERTa;
- model_type "roberta-prelayernorm" (prefix `roberta_prelayernorm.`): embeddings with their
  LayerNorm as RoBERTa; each layer x += attention.output.dense(attn(attention.LayerNorm(x))),
  x += output.dense(act(intermediate.dense(intermediate.LayerNorm(x)))); the model's final
  `LayerNorm` gives last_hidden_state (heads and pooler read it); hidden_states are the
  un-normalized layer outputs;
- position_embedding_type relative_key / relative_key_query: no absolute position vectors in the
  embeddings; scores = (q.k + q.E[l-r+P-1] (+ k.E[l-r+P-1])) / sqrt(d) with E each layer's
  attention.self.distance_embedding (2P-1, d), P = max_position_embeddings (removed in v5);
- token type ids (type_vocab_size 2);
- heads: RobertaForSequenceClassification out_proj(tanh(dense(h[:, 0]))), ForTokenClassification
  classifier(h), ForQuestionAnswering qa_outputs(h) split into start and end logits;
- sentence-transformers modules after the Transformer (Pooling, Dense, Normalize): sentence_embedding.

    from roberta_ref.reference import Weights, forward
    from roberta_ref.safetensors_io import load_hf_state_dict
    out = forward(cfg, Weights(load_hf_state_dict(model_dir)), ids, mask)
    # out["hidden"]: embedding output and every layer's; out["last_hidden_state"]; out["logits"],
    # out["pooler"], out["sequence_logits"], out["token_logits"], out["start_logits"] and
    # out["end_logits"] when the checkpoint has those heads

A missing tensor, an unsupported hidden_act, model_type or position_embedding_type ends the
program with an error message.
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


# The base model's name in checkpoints of each config.json model_type (transformers' base_model_prefix).
MODEL_PREFIXES = {"roberta": "roberta.", "xlm-roberta": "roberta.", "data2vec-text": "data2vec_text.",
                  "roberta-prelayernorm": "roberta_prelayernorm."}
POSITION_EMBEDDING_TYPES = ("absolute", "relative_key", "relative_key_query")


class Weights:
    """Looks tensors up by HF name, with or without the base model's prefix (`roberta.`,
    `data2vec_text.`, `roberta_prelayernorm.`) and legacy gamma/beta."""

    def __init__(self, sd):
        self.sd = {k: (v.float() if v.is_floating_point() else v) for k, v in sd.items()}
        self.prefix = next((p for p in MODEL_PREFIXES.values() if p + "embeddings.word_embeddings.weight" in sd), "")

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
def mlm_logits(cfg, w, x):
    """The masked-LM head (lm_head.*, the decoder tied to the word embeddings where it is missing) on
    a last hidden state x [..., H]."""
    H, eps = cfg["hidden_size"], cfg.get("layer_norm_eps", 1e-12)
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
    return F.linear(t, dec, bias)


@torch.no_grad()
def forward(cfg, w, ids, mask, heads=True, token_type_ids=None):
    """cfg: config.json's dict; w: Weights; ids, mask (and token_type_ids, zeros when None): int64
    [B, L]. Returns {"hidden": [B, L, H] x (layers + 1) as transformers' output_hidden_states,
    "last_hidden_state": [B, L, H] (the last of "hidden", but for roberta-prelayernorm the final
    LayerNorm of it), and with heads=True those of the heads the checkpoint holds: "logits" [B, L, V]
    (LM head), "pooler" [B, H], "sequence_logits" [B, labels] (classifier.dense/out_proj),
    "token_logits" [B, L, labels] (classifier), "start_logits"/"end_logits" [B, L] (qa_outputs)."""
    H, nh, eps, pad = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-12), cfg.get("pad_token_id", 1)
    act = activation(cfg.get("hidden_act", "gelu"))
    model_type = cfg.get("model_type", "roberta")
    if model_type not in MODEL_PREFIXES:
        sys.exit(f"error: model_type {model_type!r} is not supported")
    pre_ln = model_type == "roberta-prelayernorm"
    pos_type = cfg.get("position_embedding_type") or "absolute"
    if pos_type not in POSITION_EMBEDDING_TYPES:
        sys.exit(f"error: position_embedding_type {pos_type!r} is not supported")
    B, L = ids.shape
    tt = torch.zeros_like(ids) if token_type_ids is None else token_type_ids
    not_pad = (ids != pad).long()
    position_ids = torch.cumsum(not_pad, dim=1) * not_pad + pad
    if pos_type == "absolute":
        x = (w.body("embeddings.word_embeddings.weight")[ids] + w.body("embeddings.position_embeddings.weight")[position_ids]
             + w.body("embeddings.token_type_embeddings.weight")[tt])
    else:  # relative: the embeddings add no position vectors (transformers' RobertaEmbeddings)
        x = w.body("embeddings.word_embeddings.weight")[ids] + w.body("embeddings.token_type_embeddings.weight")[tt]
    ln = lambda t, name: F.layer_norm(t, (H,), w.body(name + ".weight"), w.body(name + ".bias"), eps)
    lin = lambda t, name: F.linear(t, w.body(name + ".weight"), w.body(name + ".bias"))
    x = ln(x, "embeddings.LayerNorm")
    hidden = [x]
    ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    d = H // nh
    if pos_type != "absolute":
        P = cfg["max_position_embeddings"]
        distance = torch.arange(L).view(-1, 1) - torch.arange(L).view(1, -1)  # l - r
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        split = lambda t: t.view(B, L, nh, d).permute(0, 2, 1, 3)
        a = ln(x, p + "attention.LayerNorm") if pre_ln else x
        q, k, v = (split(lin(a, p + "attention.self." + n)) for n in ("query", "key", "value"))
        if pos_type == "absolute":
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + ext
        else:
            # transformers adds the relative terms to q.k before dividing by sqrt(head size)
            dist = w.body(p + "attention.self.distance_embedding.weight")[distance + P - 1]  # [L, L, d]
            scores = torch.matmul(q, k.transpose(-1, -2)) + torch.einsum("bhld,lrd->bhlr", q, dist)
            if pos_type == "relative_key_query":
                scores = scores + torch.einsum("bhrd,lrd->bhlr", k, dist)
            scores = scores / math.sqrt(d) + ext
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).reshape(B, L, H)
        if pre_ln:  # RobertaPreLayerNorm: LayerNorm before attention and before the FFN, plain residual adds
            x = lin(ctx, p + "attention.output.dense") + x
            x = lin(act(lin(ln(x, p + "intermediate.LayerNorm"), p + "intermediate.dense")), p + "output.dense") + x
        else:
            x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            x = ln(lin(act(lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
        hidden.append(x)
    if pre_ln:  # the model's final LayerNorm: last_hidden_state, not part of the hidden_states tuple
        x = ln(x, "LayerNorm")
    out = {"hidden": hidden, "last_hidden_state": x}
    if not heads:
        return out
    if w.get("lm_head.dense.weight", required=False) is not None:
        out["logits"] = mlm_logits(cfg, w, x)
    if w.body("pooler.dense.weight", required=False) is not None:
        out["pooler"] = torch.tanh(lin(x[:, 0], "pooler.dense"))
    top = lambda t, name: F.linear(t, w.get(name + ".weight"), w.get(name + ".bias"))
    if w.get("classifier.dense.weight", required=False) is not None:  # RobertaClassificationHead on <s>
        out["sequence_logits"] = top(torch.tanh(top(x[:, 0, :], "classifier.dense")), "classifier.out_proj")
    elif w.get("classifier.weight", required=False) is not None:  # ForTokenClassification
        out["token_logits"] = top(x, "classifier")
    if w.get("qa_outputs.weight", required=False) is not None:
        logits = top(x, "qa_outputs")
        start, end = logits.split(1, dim=-1)
        out["start_logits"], out["end_logits"] = start.squeeze(-1).contiguous(), end.squeeze(-1).contiguous()
    return out


ST_ACTIVATIONS = {"torch.nn.modules.activation.Tanh": torch.tanh, "torch.nn.modules.linear.Identity": lambda t: t,
                  "torch.nn.modules.activation.ReLU": F.relu, "torch.nn.modules.activation.GELU": F.gelu,
                  "torch.nn.modules.activation.Sigmoid": torch.sigmoid}


@torch.no_grad()
def sentence_embedding(model_dir, last_hidden_state, mask, prompt_length=None):
    """The sentence-transformers pipeline of a folder with modules.json, after its Transformer module:
    Pooling (every mode, concatenated as models/Pooling.py does; with include_prompt false and a
    prompt_length, the first prompt_length tokens are masked out of every mode but cls), Dense layers
    (activation(linear(x))) and Normalize. Returns [B, D] or None without modules.json."""
    import json
    import os
    from roberta_ref.safetensors_io import read_safetensors
    path = os.path.join(model_dir, "modules.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        modules = json.load(f)
    emb = None
    for m in modules:
        kind, folder = m["type"].rsplit(".", 1)[-1], os.path.join(model_dir, m["path"])
        if kind == "Transformer":
            continue
        if kind in ("MLMTransformer", "SpladePooling"):
            return None  # a sparse encoder: sparse_embedding below
        if kind == "Pooling":
            with open(os.path.join(folder, "config.json")) as f:
                c = json.load(f)
            if prompt_length is not None and not c.get("include_prompt", True):
                mask = mask.clone()
                mask[:, :prompt_length] = 0
            te, mk = last_hidden_state, mask.unsqueeze(-1).expand(last_hidden_state.size()).float()
            parts = []
            if c.get("pooling_mode_cls_token"):
                parts.append(te[:, 0])
            if c.get("pooling_mode_max_tokens"):
                parts.append(torch.max(te.masked_fill(mk == 0, -1e9), 1)[0])
            if c.get("pooling_mode_mean_tokens") or c.get("pooling_mode_mean_sqrt_len_tokens"):
                s, n = torch.sum(te * mk, 1), torch.clamp(mk.sum(1), min=1e-9)
                if c.get("pooling_mode_mean_tokens"):
                    parts.append(s / n)
                if c.get("pooling_mode_mean_sqrt_len_tokens"):
                    parts.append(s / torch.sqrt(n))
            if c.get("pooling_mode_weightedmean_tokens"):  # token t weighs t + 1
                w = mk * torch.arange(1, te.shape[1] + 1, dtype=te.dtype).view(1, -1, 1)
                parts.append(torch.sum(te * w, 1) / torch.clamp(w.sum(1), min=1e-9))
            if c.get("pooling_mode_lasttoken"):  # the last token the mask keeps
                last = mask.shape[1] - 1 - mask.flip(1).float().argmax(1)
                parts.append(te[torch.arange(te.shape[0]), last] * 1.0)
            if not parts:
                sys.exit(f"error: {folder}: no pooling mode set")
            emb = torch.cat(parts, 1)
        elif kind == "Dense":
            with open(os.path.join(folder, "config.json")) as f:
                c = json.load(f)
            sd = {k: v.float() for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
            if c["activation_function"] not in ST_ACTIVATIONS:
                sys.exit(f"error: {folder}: activation {c['activation_function']} not supported by the reference")
            emb = ST_ACTIVATIONS[c["activation_function"]](F.linear(emb, sd["linear.weight"], sd.get("linear.bias")))
        elif kind == "Normalize":
            emb = F.normalize(emb, p=2, dim=1)
        else:
            sys.exit(f"error: {model_dir}: sentence-transformers module {m['type']} not supported by the reference")
    return emb


@torch.no_grad()
def sparse_embedding(model_dir, logits, mask, default_splade=False):
    """A SparseEncoder folder's (modules.json: MLMTransformer + SpladePooling) sparse embedding [B, V],
    transcribed from sentence-transformers 5's SpladePooling.forward in eval mode (the whole sequence
    as one chunk): logits * mask, relu, log1p (twice for log1p_relu), then max or sum over the tokens.
    default_splade: a folder without SpladePooling pooled as TEI's --pooling splade does (relu, log(1 + x),
    times the mask, max). None otherwise."""
    import json
    import os
    path = os.path.join(model_dir, "modules.json")
    config = None
    if os.path.exists(path):
        with open(path) as f:
            for m in json.load(f):
                if m["type"].rsplit(".", 1)[-1] == "SpladePooling":
                    with open(os.path.join(model_dir, m["path"], "config.json")) as f:
                        config = json.load(f)
    if config is None:
        if not default_splade:
            return None
        relu_log = torch.log(1.0 + torch.relu(logits))
        return (relu_log * mask.unsqueeze(-1).to(logits.dtype)).max(1)[0]
    x = (logits * mask.unsqueeze(-1).to(logits.dtype)).relu_().log1p_()
    if config.get("activation_function", "relu") == "log1p_relu":
        x = x.log1p_()
    return torch.max(x, dim=1)[0] if config.get("pooling_strategy", "max") == "max" else torch.sum(x, dim=1)
