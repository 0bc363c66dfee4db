#!/usr/bin/python3
"""Check the reference's transcriptions of other projects' code against that code itself, run on
the same random tensors: tools/roberta_ref/reference.py's sparse_embedding against
sentence-transformers' SpladePooling.forward, and tools/roberta_ref/m3.py against FlagEmbedding's
M3 functions (the model's _dense/_sparse/_colbert_embedding and inference forward, encode's
_process_token_weights and _process_colbert_vecs, colbert_score, compute_lexical_matching_score).
Their source is read from git checkouts (no install, nothing imported but torch and numpy): each
function is taken out of its file and run with the objects it reads stubbed. CI does not run this
(it has no such checkouts); the tests run the transcriptions.

Usage: /usr/bin/python3 tools/check_reference_transcriptions.py --sentence-transformers GIT_DIR
           --flagembedding GIT_DIR        (e.g. the bare repositories of a `git clone --mirror`)
Exit status 0 when every output is equal, 1 otherwise.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import types
import typing
from collections import defaultdict

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from roberta_ref import m3 as ref_m3  # noqa: E402
from roberta_ref.reference import sparse_embedding  # noqa: E402


def source(git_dir, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], check=True, capture_output=True,
                          text=True).stdout


def function(src, name, cls=None):
    """The function `name` (a method of class `cls`, or a nested function anywhere) of src, defined
    alone in a namespace holding torch, F, np, defaultdict and typing's names."""
    for node in ast.walk(ast.parse(src)):
        scope = node.body if isinstance(node, ast.ClassDef) and node.name == cls else [node] if cls is None else []
        for f in scope:
            if isinstance(f, ast.FunctionDef) and f.name == name:
                ns = {"torch": torch, "F": F, "np": np, "defaultdict": defaultdict, "Tensor": torch.Tensor, "Dict": dict}
                ns.update({k: getattr(typing, k) for k in ("Optional", "Union", "List", "Tuple", "Literal", "Any")})
                exec(textwrap.dedent(ast.get_source_segment(src, f)), ns)
                return ns[name]
    sys.exit(f"error: {name} not found")


def check_splade(git_dir):
    src = source(git_dir, "sentence_transformers/sparse_encoder/models/SpladePooling.py")
    init, forward = function(src, "__init__", "SpladePooling"), function(src, "forward", "SpladePooling")
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 7, 50, generator=g) * 3
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5])
    ok = True
    for strategy in ("max", "sum"):
        for activation in ("relu", "log1p_relu"):
            module = types.SimpleNamespace(training=False, SPLADE_POOLING_MODES=("sum", "max"),
                                           SPLADE_ACTIVATION=["relu", "log1p_relu"])
            init.__globals__["super"] = lambda: types.SimpleNamespace(__init__=lambda: None)
            init(module, strategy, activation)
            want = forward(module, {"token_embeddings": logits.clone(), "attention_mask": mask})["sentence_embedding"]
            with tempfile.TemporaryDirectory() as d:
                os.makedirs(os.path.join(d, "1_S"))
                json.dump([{"type": "x.MLMTransformer", "path": ""}, {"type": "x.SpladePooling", "path": "1_S"}],
                          open(os.path.join(d, "modules.json"), "w"))
                json.dump({"pooling_strategy": strategy, "activation_function": activation},
                          open(os.path.join(d, "1_S", "config.json"), "w"))
                got = sparse_embedding(d, logits.clone(), mask)
            same = torch.equal(got, want)
            ok &= same
            print(f"SpladePooling {strategy} {activation}: {'equal' if same else 'DIFFERENT'}")
    return ok


def check_m3(git_dir):
    model_src = source(git_dir, "FlagEmbedding/finetune/embedder/encoder_only/m3/modeling.py")
    infer_src = source(git_dir, "FlagEmbedding/inference/embedder/encoder_only/m3.py")
    g = torch.Generator().manual_seed(0)
    B, L, H, C, V = 3, 9, 16, 12, 50
    h = torch.randn(B, L, H, generator=g)
    ids = torch.randint(4, V, (B, L), generator=g)
    ids[:, 0] = 0
    mask = torch.tensor([[1] * 9, [1] * 6 + [0] * 3, [1] * 4 + [0] * 5])
    ids[0, 8], ids[1, 5], ids[2, 3] = 2, 2, 2
    ids[1, 6:], ids[2, 4:] = 1, 1
    ids[0, 3], ids[0, 2] = ids[0, 5], 3  # a repeated id, an <unk>
    colbert, sparse = torch.nn.Linear(H, C), torch.nn.Linear(H, 1)
    with torch.no_grad():
        sparse.bias.fill_(float(-(h @ sparse.weight[0]).median()))  # about half the weights above 0
    special = {"<s>": 0, "</s>": 2, "<pad>": 1, "<unk>": 3}
    tokenizer = types.SimpleNamespace(cls_token_id=0, eos_token_id=2, pad_token_id=1, unk_token_id=3,
                                      special_tokens_map={"cls_token": "<s>", "eos_token": "</s>",
                                                          "pad_token": "<pad>", "unk_token": "<unk>"},
                                      convert_tokens_to_ids=special.get)
    m = types.SimpleNamespace(sentence_pooling_method="cls", sparse_linear=sparse, colbert_linear=colbert,
                              training=False, vocab_size=V, tokenizer=tokenizer, normalize_embeddings=True,
                              model=lambda **kw: types.SimpleNamespace(last_hidden_state=h))
    cls = "EncoderOnlyEmbedderM3Model"
    for name in ("_dense_embedding", "_sparse_embedding", "_colbert_embedding"):
        setattr(m, name, types.MethodType(function(model_src, name, cls), m))
    forward = function(model_src, "forward", "EncoderOnlyEmbedderM3ModelForInference")
    with torch.no_grad():
        out = forward(m, {"input_ids": ids, "attention_mask": mask}, True, True, True)
    process_weights = function(infer_src, "_process_token_weights")
    process_weights.__globals__["self"] = m
    lexical = [process_weights(w, i) for w, i in zip(out["sparse_vecs"].squeeze(-1).numpy(), ids.tolist())]
    vecs = [function(infer_src, "_process_colbert_vecs")(v, k) for v, k in zip(out["colbert_vecs"].numpy(), mask.numpy())]
    with tempfile.TemporaryDirectory() as d:
        torch.save(colbert.state_dict(), os.path.join(d, "colbert_linear.pt"))
        torch.save(sparse.state_dict(), os.path.join(d, "sparse_linear.pt"))
        got = ref_m3.m3_outputs(d, h, ids, mask, list(special.values()))
    checks = {
        "dense_vecs": np.array_equal(got["dense_vecs"], out["dense_vecs"].numpy()),
        "lexical_weights": all(list(a.items()) == list(b.items()) for a, b in zip(got["lexical_weights"], lexical))
        and sum(map(len, lexical)) > 0,
        "colbert_vecs": all(np.array_equal(a, b) for a, b in zip(got["colbert_vecs"], vecs)),
        "colbert_score": float(function(infer_src, "colbert_score", "M3Embedder")(None, vecs[0], vecs[1]))
        == float(ref_m3.colbert_score(vecs[0], vecs[1])),
        "compute_lexical_matching_score": function(infer_src, "compute_lexical_matching_score", "M3Embedder")(
            None, lexical[0], lexical[1]) == ref_m3.compute_lexical_matching_score(lexical[0], lexical[1]),
    }
    for name, same in checks.items():
        print(f"FlagEmbedding M3 {name}: {'equal' if same else 'DIFFERENT'}")
    return all(checks.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentence-transformers", required=True)
    ap.add_argument("--flagembedding", required=True)
    args = ap.parse_args()
    ok = check_splade(args.sentence_transformers) & check_m3(args.flagembedding)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
