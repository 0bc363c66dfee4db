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

Heads and model kinds, named as transformers stores them:
  --head mlm (default) | sequence | token | qa | none
        RobertaForMaskedLM | ForSequenceClassification (classifier.dense (H,H) + classifier.out_proj
        (labels,H)) | ForTokenClassification (classifier (labels,H)) | ForQuestionAnswering
        (qa_outputs (2,H)) | RobertaModel (no prefix, pooler; same as --no-prefix). The heads have
        no pooler (add_pooling_layer=False) unless --pooler, as some converted checkpoints carry one.
  --labels A,B,C        id2label {"0": "A", ...}, label2id, num_labels (--no-num-labels leaves the
                        last out, as recent save_pretrained does); --num-labels N: LABEL_0..LABEL_N-1.
                        Neither: 2 labels and no id2label (transformers' default, not written)
  --problem-type single_label_classification|multi_label_classification|regression
  --model-type roberta | xlm-roberta | data2vec-text | roberta-prelayernorm   (prefixes roberta.,
                        roberta., data2vec_text., roberta_prelayernorm.; pre-LN layers with
                        attention.LayerNorm, intermediate.LayerNorm and a final roberta_prelayernorm.LayerNorm)
  --type-vocab-size N, --max-position-embeddings N, --vocab-size N (the preset's otherwise),
  --position-embedding-type absolute|relative_key|relative_key_query (adds each layer's
                        attention.self.distance_embedding.weight (2*max_position_embeddings-1, head size))
sentence-transformers layout (modules.json, sentence_bert_config.json, 1_Pooling/config.json,
config_sentence_transformers.json), written when any --st-* option is given:
  --st-pooling MODE[,MODE...] (mean, cls, max, mean_sqrt_len_tokens, weightedmean, lasttoken; default mean),
  --st-dense OUT_DIM[:tanh|identity|relu|gelu|sigmoid]
  (2_Dense/config.json + 2_Dense/model.safetensors with linear.weight/linear.bias; tanh by default),
  --st-normalize (a Normalize module), --st-prompts JSON (e.g. '{"query": "query: "}'),
  --st-default-prompt NAME (default_prompt_name, null by default), --st-exclude-prompt (the Pooling
  module's include_prompt false).
"""
import argparse
import json
import os
import shutil
import sys

import torch

from roberta_ref.bpe import BpeTokenizer
from roberta_ref.checkpoints import WEIGHT_FORMATS, save_weights
from roberta_ref.reference import MODEL_PREFIXES, POSITION_EMBEDDING_TYPES, Weights, forward
from roberta_ref.safetensors_io import write_safetensors

PRESETS = {
    "tiny": dict(vocab=50265, hidden=32, layers=2, heads=4, inter=64, positions=514, std=0.3, tokenizer=True),
    "odd": dict(vocab=50265, hidden=48, layers=3, heads=6, inter=100, positions=514, std=0.3, tokenizer=True),
    "large-weights": dict(vocab=50265, hidden=64, layers=2, heads=4, inter=160, positions=514, std=0.5, tokenizer=True,
                          embed_std=0.2),
    "small-vocab": dict(vocab=300, hidden=32, layers=2, heads=4, inter=64, positions=66, std=0.4, tokenizer=False),
    "base": dict(vocab=50265, hidden=768, layers=12, heads=12, inter=3072, positions=514, std=0.02, tokenizer=True),
    # roberta-large's shapes (24 layers of 1024 x 4096, 16 heads), for its speed figures
    "large": dict(vocab=50265, hidden=1024, layers=24, heads=16, inter=4096, positions=514, std=0.02, tokenizer=True),
    # roberta-base's layer shapes with 2 layers: a model whose matrices are as large as base's, for
    # the server's load test (batching pays as it does on base) at a sixth of base's cost
    "base-2-layers": dict(vocab=50265, hidden=768, layers=2, heads=12, inter=3072, positions=514, std=0.02,
                          tokenizer=True),
}
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
HEADS = ["mlm", "sequence", "token", "qa", "none"]
# Class names per model_type: the base model and its head classes (transformers' names).
CLASS_PREFIX = {"roberta": "Roberta", "xlm-roberta": "XLMRoberta", "data2vec-text": "Data2VecText",
                "roberta-prelayernorm": "RobertaPreLayerNorm"}
HEAD_CLASS = {"mlm": "ForMaskedLM", "sequence": "ForSequenceClassification", "token": "ForTokenClassification",
              "qa": "ForQuestionAnswering", "none": "Model"}
ST_ACTIVATIONS = {"tanh": "torch.nn.modules.activation.Tanh", "identity": "torch.nn.modules.linear.Identity",
                  "relu": "torch.nn.modules.activation.ReLU", "gelu": "torch.nn.modules.activation.GELU",
                  "sigmoid": "torch.nn.modules.activation.Sigmoid"}
DEFAULT_TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "assets",
                                 "roberta-base-tokenizer")


def make_state_dict(p, args, gen):
    H, I, V, P = p["hidden"], p["inter"], p["vocab"], p["positions"]
    std = p["std"]
    pre_ln = args.model_type == "roberta-prelayernorm"
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
    r = "" if args.head == "none" else MODEL_PREFIXES[args.model_type]
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
    relative = args.position_embedding_type != "absolute"
    for i in range(p["layers"]):
        l = f"{r}encoder.layer.{i}."
        if pre_ln:
            norm(l + "attention.LayerNorm", sd)
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            sd[l + name + ".weight"] = w(H, H, scale=fan)
            sd[l + name + ".bias"] = small(H)
        if relative:  # transformers' BertSelfAttention: nn.Embedding(2 * max_position_embeddings - 1, head size)
            sd[l + "attention.self.distance_embedding.weight"] = w(2 * P - 1, H // p["heads"], scale=embed_scale)
        if pre_ln:
            norm(l + "intermediate.LayerNorm", sd)
        else:
            norm(l + "attention.output.LayerNorm", sd)
        sd[l + "intermediate.dense.weight"] = w(I, H, scale=fan)
        sd[l + "intermediate.dense.bias"] = small(I)
        sd[l + "output.dense.weight"] = w(H, I, scale=fan * (H / I) ** 0.5)
        sd[l + "output.dense.bias"] = small(H)
        if not pre_ln:
            norm(l + "output.LayerNorm", sd)
    if pre_ln:
        norm(f"{r}LayerNorm", sd)
    with_pooler = (args.head in ("mlm", "none") and not args.no_pooler) or args.pooler
    if with_pooler:
        sd[f"{r}pooler.dense.weight"] = w(H, H, scale=fan)
        sd[f"{r}pooler.dense.bias"] = small(H)
    if args.head == "mlm" and not args.no_lm_head:
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
    n = num_labels(args)
    # Head outputs of magnitude ~1: a wrong label order, pooling token or missing tanh shows at once.
    if args.head == "sequence":
        sd["classifier.dense.weight"] = w(H, H, scale=fan)
        sd["classifier.dense.bias"] = small(H)
        sd["classifier.out_proj.weight"] = w(n, H, scale=fan)
        sd["classifier.out_proj.bias"] = small(n)
    elif args.head == "token":
        sd["classifier.weight"] = w(n, H, scale=fan)
        sd["classifier.bias"] = small(n)
    elif args.head == "qa":
        sd["qa_outputs.weight"] = w(2, H, scale=fan)
        sd["qa_outputs.bias"] = small(2)
    dtype = DTYPES[args.dtype]
    return {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in sd.items()}


def label_names(args):
    """The labels given (--labels or --num-labels), or None: transformers' default of 2."""
    if args.labels:
        return args.labels.split(",")
    if args.num_labels is not None:
        return [f"LABEL_{i}" for i in range(args.num_labels)]
    return None


def num_labels(args):
    if args.head == "qa":
        return 2
    names = label_names(args)
    return 2 if names is None else len(names)


def config_json(p, args):
    arch = CLASS_PREFIX[args.model_type] + HEAD_CLASS[args.head]
    c = {
        "architectures": [arch],
        "attention_probs_dropout_prob": 0.1, "bos_token_id": 0, "eos_token_id": 2,
        "hidden_act": args.hidden_act, "hidden_dropout_prob": 0.1, "hidden_size": p["hidden"],
        "initializer_range": 0.02, "intermediate_size": p["inter"], "layer_norm_eps": 1e-05,
        "max_position_embeddings": p["positions"], "model_type": args.model_type,
        "num_attention_heads": p["heads"], "num_hidden_layers": p["layers"], "pad_token_id": 1,
        "position_embedding_type": args.position_embedding_type, "type_vocab_size": args.type_vocab,
        "vocab_size": p["vocab"],
    }
    if args.head in ("sequence", "token", "qa"):
        c["classifier_dropout"] = None
    names = label_names(args) if args.head in ("sequence", "token") else None
    if names is not None:
        c["id2label"] = {str(i): name for i, name in enumerate(names)}
        c["label2id"] = {name: i for i, name in enumerate(names)}
        if not args.no_num_labels:
            c["num_labels"] = len(names)
    if args.problem_type:
        c["problem_type"] = args.problem_type
    return dict(sorted(c.items()))


def st_dense_spec(spec):
    """--st-dense OUT_DIM[:ACTIVATION] -> (OUT_DIM, activation name)."""
    dim, _, act = spec.partition(":")
    act = act or "tanh"
    if not dim.isdigit() or int(dim) < 1:
        sys.exit(f"error: --st-dense {spec!r}: OUT_DIM[:ACTIVATION] with a positive OUT_DIM")
    if act not in ST_ACTIVATIONS:
        sys.exit(f"error: --st-dense activation {act!r}: one of {', '.join(ST_ACTIVATIONS)}")
    return int(dim), act


def st_prompts(args):
    try:
        prompts = json.loads(args.st_prompts) if args.st_prompts else {}
    except json.JSONDecodeError as e:
        sys.exit(f"error: --st-prompts is not JSON: {e}")
    if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
        sys.exit("error: --st-prompts takes a JSON object of name -> prompt text")
    if args.st_default_prompt is not None and args.st_default_prompt not in prompts:
        sys.exit(f"error: --st-default-prompt {args.st_default_prompt!r} is not one of the prompts")
    return prompts


def write_sentence_transformers(out, p, args, gen):
    """The files SentenceTransformer.save writes next to the Transformer module's (root folder)."""
    H = p["hidden"]
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": p["positions"] - 2, "do_lower_case": False}, f, indent=4)
    modes = (args.st_pooling or "mean").split(",")
    known = ("mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
    if any(m not in known for m in modes):
        sys.exit(f"error: --st-pooling {args.st_pooling}: modes are {', '.join(known)}")
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    with open(os.path.join(out, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": H, "pooling_mode_cls_token": "cls" in modes,
                   "pooling_mode_mean_tokens": "mean" in modes, "pooling_mode_max_tokens": "max" in modes,
                   "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens" in modes,
                   "pooling_mode_weightedmean_tokens": "weightedmean" in modes,
                   "pooling_mode_lasttoken": "lasttoken" in modes,
                   "include_prompt": not args.st_exclude_prompt}, f, indent=4)
    if args.st_dense:
        dim, act = st_dense_spec(args.st_dense)
        idx = len(modules)
        folder = f"{idx}_Dense"
        os.makedirs(os.path.join(out, folder), exist_ok=True)
        with open(os.path.join(out, folder, "config.json"), "w") as f:
            json.dump({"in_features": H * len(modes), "out_features": dim, "bias": True,
                       "activation_function": ST_ACTIVATIONS[act]}, f, indent=4)
        weights = {"linear.weight": torch.randn(dim, H * len(modes), generator=gen) / (H * len(modes)) ** 0.5,
                   "linear.bias": torch.randn(dim, generator=gen) * 0.1}
        write_safetensors(os.path.join(out, folder, "model.safetensors"), weights, metadata={"format": "pt"},
                          overwrite=True)
        modules.append({"idx": idx, "name": str(idx), "path": folder, "type": "sentence_transformers.models.Dense"})
    if args.st_normalize:
        idx = len(modules)
        os.makedirs(os.path.join(out, f"{idx}_Normalize"), exist_ok=True)
        modules.append({"idx": idx, "name": str(idx), "path": f"{idx}_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump(modules, f, indent=2)
    prompts = st_prompts(args)
    with open(os.path.join(out, "config_sentence_transformers.json"), "w") as f:
        json.dump({"model_type": "SentenceTransformer",
                   "__version__": {"sentence_transformers": "5.1.2", "transformers": "4.57.1", "pytorch": "2.8.0"},
                   "prompts": prompts, "default_prompt_name": args.st_default_prompt,
                   "similarity_fn_name": "cosine"}, f, indent=2)


def write_sparse_encoder(out, p, args):
    """The files SparseEncoder.save writes for MLMTransformer + SpladePooling (sentence-transformers 5)."""
    strategy, _, activation = args.st_splade.partition(":")
    activation = activation or "relu"
    if strategy not in ("max", "sum") or activation not in ("relu", "log1p_relu"):
        sys.exit(f"error: --st-splade {args.st_splade}: STRATEGY max|sum, ACTIVATION relu|log1p_relu")
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.sparse_encoder.models.MLMTransformer"},
               {"idx": 1, "name": "1", "path": "1_SpladePooling",
                "type": "sentence_transformers.sparse_encoder.models.SpladePooling"}]
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump(modules, f, indent=2)
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": p["positions"] - 2, "do_lower_case": False}, f, indent=4)
    os.makedirs(os.path.join(out, "1_SpladePooling"), exist_ok=True)
    with open(os.path.join(out, "1_SpladePooling", "config.json"), "w") as f:
        json.dump({"pooling_strategy": strategy, "activation_function": activation,
                   "word_embedding_dimension": p["vocab"]}, f, indent=4)
    with open(os.path.join(out, "config_sentence_transformers.json"), "w") as f:
        json.dump({"model_type": "SparseEncoder",
                   "__version__": {"sentence_transformers": "5.1.2", "transformers": "4.57.1", "pytorch": "2.8.0"},
                   "prompts": st_prompts(args), "default_prompt_name": args.st_default_prompt,
                   "similarity_fn_name": "dot"}, f, indent=2)


def write_m3_heads(out, p, args, gen, sd):
    """bge-m3's heads as FlagEmbedding saves them: torch.nn.Linear state dicts colbert_linear.pt
    (hidden -> colbert dim) and sparse_linear.pt (hidden -> 1), bias included. A random sparse head
    gives every token of a random model about the same weight (its token states are alike), so its
    bias is minus the median over the tokens of a few English sentences: about half the tokens of
    such text get a weight above 0."""
    H = p["hidden"]
    dim = args.m3_heads or H
    torch.save({"weight": torch.randn(dim, H, generator=gen) / H ** 0.5, "bias": torch.randn(dim, generator=gen) * 0.1},
               os.path.join(out, "colbert_linear.pt"))
    weight = torch.randn(1, H, generator=gen) / H ** 0.5
    text = ("The weather is lovely today. It is sunny outside, and the children are playing in the park. "
            "What is the capital of France? A man plays the guitar while the others sing.")
    ids = torch.tensor([BpeTokenizer.from_dir(args.tokenizer_dir).encode(text)]) if p["tokenizer"] else \
        torch.randint(4, p["vocab"], (1, 48), generator=gen)
    h = forward(config_json(p, args), Weights(sd), ids, torch.ones_like(ids), heads=False)["last_hidden_state"]
    torch.save({"weight": weight, "bias": -(h[0] @ weight[0]).median().reshape(1)}, os.path.join(out, "sparse_linear.pt"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hidden-act", default="gelu")
    ap.add_argument("--type-vocab", "--type-vocab-size", dest="type_vocab", type=int, default=1)
    ap.add_argument("--max-position-embeddings", type=int)
    ap.add_argument("--vocab-size", type=int)
    ap.add_argument("--position-embedding-type", default="absolute", choices=POSITION_EMBEDDING_TYPES)
    ap.add_argument("--model-type", default="roberta", choices=sorted(MODEL_PREFIXES))
    ap.add_argument("--head", default="mlm", choices=HEADS)
    ap.add_argument("--labels", help="comma-separated label names, id order")
    ap.add_argument("--num-labels", type=int)
    ap.add_argument("--problem-type", choices=["single_label_classification", "multi_label_classification",
                                               "regression"])
    ap.add_argument("--st-pooling", help="a mode or several, comma-separated: mean, cls, max, "
                    "mean_sqrt_len_tokens, weightedmean, lasttoken")
    ap.add_argument("--st-dense", metavar="OUT_DIM[:ACTIVATION]")
    ap.add_argument("--m3-heads", metavar="COLBERT_DIM", type=int, nargs="?", const=0,
                    help="bge-m3's colbert_linear.pt (COLBERT_DIM outputs, default the hidden size) and "
                    "sparse_linear.pt beside the model (convert them with tools/convert_checkpoint.py)")
    ap.add_argument("--st-splade", metavar="STRATEGY[:ACTIVATION]",
                    help="a sentence-transformers SparseEncoder folder: MLMTransformer + SpladePooling "
                    "(max|sum, relu|log1p_relu); with --st-prompts and --st-default-prompt")
    ap.add_argument("--st-prompts", metavar="JSON")
    ap.add_argument("--st-default-prompt")
    ap.add_argument("--dtype", default="f32", choices=sorted(DTYPES))
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--format", default="safetensors", choices=WEIGHT_FORMATS)
    for flag in ("no-prefix", "tied", "no-decoder-bias", "gamma-beta", "no-pooler", "no-lm-head", "position-ids",
                 "no-tokenizer", "force", "pooler", "no-num-labels", "st-normalize", "st-exclude-prompt"):
        ap.add_argument("--" + flag, action="store_true")
    ap.add_argument("--tokenizer-dir", default=DEFAULT_TOKENIZER)
    args = ap.parse_args()
    p = dict(PRESETS[args.preset])
    if args.max_position_embeddings is not None:
        p["positions"] = args.max_position_embeddings
    if args.vocab_size is not None:
        p["vocab"] = args.vocab_size
    if args.no_prefix:
        if args.head not in ("mlm", "none"):
            sys.exit("error: --no-prefix is --head none (RobertaModel); it takes no other head")
        args.head = "none"
    if args.labels and args.num_labels is not None:
        sys.exit("error: --labels and --num-labels are exclusive")
    if (args.labels or args.num_labels is not None) and args.head not in ("sequence", "token"):
        sys.exit("error: --labels/--num-labels go with --head sequence or token")
    if p["hidden"] % p["heads"]:
        sys.exit("error: hidden size is not a multiple of the head count")
    if args.st_dense:
        st_dense_spec(args.st_dense)  # checked before anything is written
    st_prompts(args)
    if os.path.exists(args.out) and os.listdir(args.out) and not args.force:
        sys.exit(f"error: {args.out} exists and is not empty (use --force)")
    os.makedirs(args.out, exist_ok=True)
    gen = torch.Generator().manual_seed(args.seed)
    sd = make_state_dict(p, args, gen)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config_json(p, args), f, indent=2)
    save_weights(args.out, sd, args.format, args.shards)
    if args.m3_heads is not None:
        write_m3_heads(args.out, p, args, gen, sd)
    if args.st_splade:
        if args.st_pooling or args.st_dense or args.st_normalize or args.head != "mlm":
            sys.exit("error: --st-splade takes an MLM head and no --st-pooling, --st-dense or --st-normalize")
        write_sparse_encoder(args.out, p, args)
    elif args.st_pooling or args.st_dense or args.st_normalize or args.st_prompts or args.st_default_prompt:
        write_sentence_transformers(args.out, p, args, gen)
    if p["tokenizer"] and not args.no_tokenizer:
        for name in ("vocab.json", "merges.txt", "tokenizer.json"):
            src = os.path.join(args.tokenizer_dir, name)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(args.out, name))
    print(f"wrote {args.out}: preset {args.preset}, {sum(v.numel() for v in sd.values())} values")


if __name__ == "__main__":
    main()
