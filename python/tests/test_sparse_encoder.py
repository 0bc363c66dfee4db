"""roberta_cpp.SparseEncoder against the PyTorch reference (tools/dump_reference.py: the MLM
logits pooled by sentence-transformers 5's SpladePooling, transcribed in roberta_ref), `roberta
embed --sparse`, and sentence-transformers' output forms (sparse COO tensor, dense, decode)."""
import json

import numpy as np
import pytest
import torch

import roberta_cpp
from roberta_cpp import sparse_encoder as sparse_module
from conftest import TEXTS, dump_reference, make_model, run_cli


def close(mine, ref):
    """Every weight within 1e-5 of the vector's largest (the logits' fp32 rounding through log1p)."""
    mine, ref = np.atleast_2d(mine), np.atleast_2d(ref)
    tol = 1e-5 * np.maximum(1.0, np.abs(ref).max(1, keepdims=True))
    assert mine.shape == ref.shape
    assert (np.abs(mine - ref) <= tol).all(), float(np.abs(mine - ref).max())


@pytest.fixture(scope="module")
def splade_model(work):
    return make_model(work, "splade-sum", "--seed", "5", "--st-splade", "sum:log1p_relu",
                      "--st-prompts", json.dumps({"query": "query: ", "passage": "passage: "}))


@pytest.fixture(scope="module")
def enc(splade_model):
    return roberta_cpp.SparseEncoder(splade_model)


def test_encode_matches_pytorch(work, splade_model, enc):
    ref = dump_reference(splade_model, work / "dump-splade", texts=TEXTS)["sparse_embedding"]
    emb = enc.encode(TEXTS)
    assert emb.is_sparse and tuple(emb.shape) == (len(TEXTS), enc.get_sentence_embedding_dimension())
    close(emb.to_dense().numpy(), ref)
    dense = enc.encode(TEXTS, convert_to_sparse_tensor=False)
    assert not dense.is_sparse
    close(dense.numpy(), ref)
    one = enc.encode(TEXTS[2])
    assert one.is_sparse and tuple(one.shape) == (enc.get_sentence_embedding_dimension(),)
    close(one.to_dense().numpy(), ref[2])
    listed = enc.encode(TEXTS, convert_to_tensor=False)
    assert isinstance(listed, list) and len(listed) == len(TEXTS) and listed[0].is_sparse
    np.testing.assert_array_equal(enc.encode(TEXTS, batch_size=1).to_dense().numpy(), emb.to_dense().numpy())


def test_max_active_dims_and_decode(work, splade_model, enc):
    ref = dump_reference(splade_model, work / "dump-splade", texts=TEXTS)["sparse_embedding"]
    emb = enc.encode(TEXTS, max_active_dims=6).to_dense().numpy()
    for row, r in zip(emb, ref):
        top = np.argsort(-r, kind="stable")[:6]  # sentence-transformers' select_max_active_dims
        assert sorted(np.flatnonzero(row).tolist()) == sorted(top.tolist())
        close(row[top], r[top])
    decoded = enc.decode(enc.encode(TEXTS[0], max_active_dims=6), top_k=3)
    tokens = enc.tokenizer.convert_ids_to_tokens(np.argsort(-ref[0], kind="stable")[:3].tolist())
    assert [t for t, _ in decoded] == tokens
    assert [w for _, w in decoded] == sorted((w for _, w in decoded), reverse=True)
    default_k = roberta_cpp.SparseEncoder(splade_model, max_active_dims=4)
    assert [int((r != 0).sum()) for r in default_k.encode(TEXTS).to_dense()] == [4] * len(TEXTS)


def test_query_and_document_prompts(work, splade_model, enc):
    ref = dump_reference(splade_model, work / "dump-splade-query", texts=TEXTS[:2], st_prompt="query: ")
    close(enc.encode_query(TEXTS[:2]).to_dense().numpy(), ref["sparse_embedding"])
    ref = dump_reference(splade_model, work / "dump-splade-passage", texts=TEXTS[:2], st_prompt="passage: ")
    close(enc.encode_document(TEXTS[:2]).to_dense().numpy(), ref["sparse_embedding"])


def test_similarity_is_the_dot_product(enc):
    a = enc.encode(TEXTS[:2])
    b = enc.encode(TEXTS[1:4], convert_to_sparse_tensor=False)
    expected = a.to_dense().double() @ b.double().T
    np.testing.assert_allclose(enc.similarity(a, b).numpy(), expected.numpy(), rtol=1e-6)


def test_matches_cli(splade_model, enc, roberta_binary):
    out = run_cli(roberta_binary, "embed", "--sparse", "--model", str(splade_model), input_text="\n".join(TEXTS[:3]) + "\n")
    rows = [json.loads(line) for line in out.splitlines()]
    mine = enc.encode(TEXTS[:3], convert_to_sparse_tensor=False).numpy()
    for row, m in zip(rows, mine):
        assert [e["index"] for e in row] == np.flatnonzero(m).tolist()
        np.testing.assert_array_equal(np.float32([e["value"] for e in row]), m[np.flatnonzero(m)])


def test_without_torch_pairs_and_numpy(enc, monkeypatch):
    monkeypatch.setattr(sparse_module, "_torch", lambda: None)
    pairs = enc.encode(TEXTS[:2], max_active_dims=5)
    assert len(pairs) == 2 and all(ids.dtype == np.int64 and values.dtype == np.float32 for ids, values in pairs)
    assert all(len(ids) == 5 and (np.diff(ids) > 0).all() for ids, _ in pairs)
    dense = enc.encode(TEXTS[:2], max_active_dims=5, convert_to_sparse_tensor=False)
    assert isinstance(dense, np.ndarray) and dense.shape == (2, enc.get_sentence_embedding_dimension())
    np.testing.assert_array_equal(dense[0][pairs[0][0]], pairs[0][1])
    assert isinstance(enc.similarity(pairs, pairs), np.ndarray)


def test_errors(work, enc):
    with pytest.raises(ValueError, match="max_active_dims"):
        enc.encode(TEXTS, max_active_dims=0)
    with pytest.raises(ValueError, match="Prompt name 'nope'"):
        enc.encode(TEXTS, prompt_name="nope")
    with pytest.raises(ValueError, match="additional keyword"):
        enc.encode(TEXTS, normalize_embeddings=True)
    no_head = make_model(work, "no-lm-head", "--seed", "6", "--no-lm-head")
    with pytest.raises(roberta_cpp.Error, match="no MLM head"):
        roberta_cpp.SparseEncoder(no_head)
    dense_folder = make_model(work, "st-for-sparse", "--seed", "7", "--st-pooling", "mean")
    assert roberta_cpp.SparseEncoder(dense_folder).encode("A").is_sparse  # an MLM model pooled as TEI's splade
    with pytest.raises(roberta_cpp.Error, match="SparseEncoder"):
        roberta_cpp.SentenceTransformer(work / "models" / "splade-sum").encode("A")
