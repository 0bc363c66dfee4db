#!/usr/bin/python3
"""Check the reference's transcriptions of other projects' code against that code itself, run on
the same random tensors: tools/roberta_ref/reference.py's sparse_embedding against
sentence-transformers' SpladePooling.forward, and tools/roberta_ref/m3.py against FlagEmbedding's
M3 functions (the model's _dense/_sparse/_colbert_embedding and inference forward, encode's
_process_token_weights and _process_colbert_vecs, colbert_score, compute_lexical_matching_score), and
tools/roberta_ref/late_chunking.py (written from our spec, not transcribed) against Jina AI's
late-chunking code (chunked_pooling; AbsTaskChunkedRetrieval._embed_with_overlap, its "long late
chunking") on a random tiny model (tools/make_test_model.py) and the documents of
tests/data/hf/late_chunking.jsonl.
Their source is read from git checkouts (no install, nothing imported but torch and numpy): each
function is taken out of its file and run with the objects it reads stubbed. CI does not run this
(it has no such checkouts); the tests run the transcriptions.

Usage: /usr/bin/python3 tools/check_reference_transcriptions.py [--sentence-transformers GIT_DIR]
           [--flagembedding GIT_DIR] [--late-chunking GIT_DIR]
       (e.g. the bare repositories of a `git clone --mirror`; jina-ai/late-chunking for --late-chunking;
       the checks of the repositories given are run, at least one)
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


def check_late_chunking(git_dir):
    """Jina AI's late chunking (github.com/jina-ai/late-chunking) against roberta_ref/late_chunking.py.

    1. One window: chunked_pooling (chunked_pooling/__init__.py) on the model output of <s> doc </s>,
       each chunk given as Jina's (start, end) token annotation (indices of the model output, <s> at
       0), against our chunk_means of the same tokens (rule 5 of the spec; a sentence's tokens are
       contiguous here, which the check asserts). Our mean sums in double, theirs in float32, so the
       check allows 1e-6 and prints how many chunks are equal bit for bit.
    2. Several windows: _embed_with_overlap (chunked_pooling/mteb_chunked_eval.py) slices the
       tokenized sequence itself, <s> and </s> included, into windows of embed_size tokens every
       embed_size - overlap, runs each slice as it is (no <s> or </s> added: a middle window has
       neither, the last one has no <s>) and keeps window 0 whole and every later window without its
       first `overlap` outputs. (a) Run with the document tokens as input ids and a model that adds
       <s> and </s> around each slice (our window layout P + d[s:e] + </s>), it must give exactly
       our stitch(..., "drop-overlap") states (its extra trailing windows contribute nothing), and
       chunked_pooling of them our means. (b) Run as Jina runs it (the <s> doc </s> ids, no specials
       added), it differs: the difference to both our rules is printed, not checked.
    """
    from roberta_ref import late_chunking as lc
    from roberta_ref.reference import Weights, forward
    from roberta_ref.safetensors_io import load_hf_state_dict
    pool_src = source(git_dir, "chunked_pooling/__init__.py")
    eval_src = source(git_dir, "chunked_pooling/mteb_chunked_eval.py")
    chunked_pooling = function(pool_src, "chunked_pooling")
    embed_with_overlap = function(eval_src, "_embed_with_overlap", "AbsTaskChunkedRetrieval")
    here = os.path.dirname(os.path.abspath(__file__))
    goldens = [json.loads(l) for l in open(os.path.join(here, "..", "tests", "data", "hf", "late_chunking.jsonl"),
                                            encoding="utf-8")]
    doc = next(g for g in goldens if g.get("name") == "fiction")
    ids, offsets = doc["ids"][1:-1], [tuple(o) for o in doc["offsets"][1:-1]]
    bos, eos, T = doc["ids"][0], doc["ids"][-1], len(doc["ids"]) - 2
    token_lists = [lc.chunk_tokens(offsets, s, e) for s, e in lc.sentence_spans(doc["text"])]
    assert all(t == list(range(t[0], t[-1] + 1)) for t in token_lists), "a sentence's tokens are not contiguous"
    ok = True
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, os.path.join(here, "make_test_model.py"), "--out", d, "--preset", "tiny",
                        "--seed", "7", "--st-pooling", "mean"], check=True, capture_output=True)
        cfg = json.load(open(os.path.join(d, "config.json")))
        w = Weights(load_hf_state_dict(d))
    torch.set_num_threads(1)
    run = lambda x: forward(cfg, w, x, torch.ones_like(x), heads=False)["last_hidden_state"]

    # 1. one window
    states, wins = lc.stitched_states(cfg, w, ids, [bos], eos, 512)
    assert len(wins) == 1
    ours = lc.chunk_means(states, token_lists).numpy()
    full = run(torch.tensor([doc["ids"]]))
    annotations = [(t[0] + 1, t[-1] + 2) for t in token_lists]
    f32 = np.stack([(states[t].sum(0) / len(t)).numpy() for t in token_lists])  # our states, float32 sums
    for max_length in (None, 512):
        theirs = np.stack(chunked_pooling((full,), [annotations], max_length=max_length)[0])
        diff, bits = float(np.abs(theirs - ours).max()), int((theirs == ours).all(1).sum())
        same32 = np.array_equal(theirs, f32)
        ok &= theirs.shape == ours.shape and diff <= 1e-6 and same32
        print(f"Jina chunked_pooling (max_length={max_length}), one window of {T} tokens, {len(ours)} sentences: "
              f"max abs diff {diff:.2e} to our means (sums in double), {bits}/{len(ours)} equal bit for bit; "
              f"summed in float32 as Jina does: {'equal' if same32 else 'DIFFERENT'}")

    # 2. several windows: 40-token windows of our layout (38 document tokens), overlaps 0, 9 and 20
    L = 40
    W = lc.window_size(L, 1)
    for O in (0, 9, 20):
        wins = lc.windows(T, W, O)
        outs = lc.run_windows(cfg, w, ids, [bos], eos, wins)
        drop = lc.stitch(outs, wins, 1, T, cfg["hidden_size"], "drop-overlap", O)
        calls = []

        class WithSpecials:  # our window layout: <s> + slice + </s>, the slice's states returned
            device = torch.device("cpu")

            def __call__(self, input_ids):
                calls.append(input_ids.shape[1])
                x = torch.cat([torch.tensor([[bos]]), input_ids, torch.tensor([[eos]])], 1)
                return (run(x)[:, 1:-1],)

        task = types.SimpleNamespace(long_late_chunking_embed_size=W, long_late_chunking_overlap_size=O)
        theirs = embed_with_overlap(task, WithSpecials(), {"input_ids": torch.tensor([ids])})[0]
        same = torch.equal(theirs, drop)
        means_theirs = np.stack(chunked_pooling([theirs[None]], [[(t[0], t[-1] + 1) for t in token_lists]])[0])
        means_ours = lc.chunk_means(drop, token_lists).numpy()
        diff = float(np.abs(means_theirs - means_ours).max())
        ok &= same and diff <= 1e-6
        print(f"Jina _embed_with_overlap, overlap {O}: {len(wins)} windows of our layout, {len(calls)} model calls "
              f"(the extra ones add no token): states {'equal' if same else 'DIFFERENT'} to our drop-overlap "
              f"stitching; chunked_pooling of them: max abs diff {diff:.2e} to our means")
    O = 9
    wins = lc.windows(T, W, O)
    outs = lc.run_windows(cfg, w, ids, [bos], eos, wins)
    drop = lc.stitch(outs, wins, 1, T, cfg["hidden_size"], "drop-overlap", O)
    maxctx = lc.stitch(outs, wins, 1, T, cfg["hidden_size"], "max-context", O)

    class AsIs:  # Jina's own use: the slice of <s> doc </s> runs as it is
        device = torch.device("cpu")

        def __call__(self, input_ids, attention_mask):
            return (forward(cfg, w, input_ids, attention_mask, heads=False)["last_hidden_state"],)

    task = types.SimpleNamespace(long_late_chunking_embed_size=L, long_late_chunking_overlap_size=O)
    full_ids = torch.tensor([doc["ids"]])
    jina = embed_with_overlap(task, AsIs(), {"input_ids": full_ids, "attention_mask": torch.ones_like(full_ids)})[0]
    print(f"Jina _embed_with_overlap as Jina runs it (windows of {L} tokens of <s> doc </s>, no specials added): "
          f"max abs diff of the document tokens' states {float((jina[1:-1] - drop).abs().max()):.2e} to our "
          f"drop-overlap, {float((jina[1:-1] - maxctx).abs().max()):.2e} to our max-context stitching")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentence-transformers")
    ap.add_argument("--flagembedding")
    ap.add_argument("--late-chunking", help="a checkout of jina-ai/late-chunking")
    args = ap.parse_args()
    if not (args.sentence_transformers or args.flagembedding or args.late_chunking):
        ap.error("give at least one repository")
    ok = True
    if args.sentence_transformers:
        ok &= check_splade(args.sentence_transformers)
    if args.flagembedding:
        ok &= check_m3(args.flagembedding)
    if args.late_chunking:
        ok &= check_late_chunking(args.late_chunking)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
