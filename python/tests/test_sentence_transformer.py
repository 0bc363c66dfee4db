"""roberta_cpp.SentenceTransformer against the PyTorch reference of sentence-transformers folders
(tools/dump_reference.py: Transformer -> Pooling -> Dense -> Normalize), `roberta embed`, and
sentence-transformers' quantize_embeddings rules (computed here with numpy)."""
import json

import numpy as np
import pytest

import roberta_cpp
from conftest import TEXTS, dump_reference, make_model, run_cli

ATOL = 1e-5


@pytest.fixture(scope="module")
def st(st_model):
    return roberta_cpp.SentenceTransformer(st_model)


@pytest.fixture(scope="module")
def reference(work, st_model):
    return dump_reference(st_model, work / "dump-st", texts=TEXTS)


def test_encode_matches_pytorch_and_defaults(st, reference):
    emb = st.encode(TEXTS)
    assert emb.dtype == np.float32 and emb.shape == (len(TEXTS), 24)
    np.testing.assert_allclose(emb, reference["sentence_embedding"], atol=ATOL)
    # defaults: no normalisation (this folder has no Normalize module)
    assert np.abs(np.linalg.norm(emb, axis=1) - 1).max() > 1e-2
    one = st.encode(TEXTS[1])
    assert one.shape == (24,) and one.dtype == np.float32
    np.testing.assert_allclose(one, emb[1], atol=1e-6)
    assert st.get_sentence_embedding_dimension() == 24
    assert st.max_seq_length == 512  # sentence_bert_config.json's, capped at the model's maximum
    # batch size does not change results
    np.testing.assert_allclose(st.encode(TEXTS, batch_size=2), emb, atol=1e-6)


def test_encode_matches_cli(st_model, st, roberta_binary):
    out = run_cli(roberta_binary, "embed", "--model", str(st_model), input_text="".join(t + "\n" for t in TEXTS))
    cli = np.array([json.loads(line) for line in out.splitlines()], dtype=np.float32)
    np.testing.assert_allclose(st.encode(TEXTS), cli, atol=1e-6)


def test_normalize_and_truncate_dim(st):
    emb = st.encode(TEXTS)
    unit = st.encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(unit, emb / np.linalg.norm(emb, axis=1, keepdims=True), atol=1e-6)
    cut = st.encode(TEXTS, truncate_dim=8)
    np.testing.assert_array_equal(cut, emb[:, :8])
    cut_unit = st.encode(TEXTS, truncate_dim=8, normalize_embeddings=True)
    np.testing.assert_allclose(cut_unit, emb[:, :8] / np.linalg.norm(emb[:, :8], axis=1, keepdims=True), atol=1e-6)
    small = roberta_cpp.SentenceTransformer(st.model_path, truncate_dim=10)
    assert small.get_sentence_embedding_dimension() == 10 and small.encode("x").shape == (10,)


def test_truncation_at_max_seq_length(work, st_short_model):
    model = roberta_cpp.SentenceTransformer(st_short_model)
    assert model.max_seq_length == 16
    tok = model.tokenizer
    ids = [e.ids for e in tok.encode_batch(TEXTS)]
    cut = [i[:15] + [2] if len(i) > 16 else i for i in ids]
    assert cut != ids  # some text is longer than 16 tokens
    ref = dump_reference(st_short_model, work / "dump-st-short", ids=cut)
    np.testing.assert_allclose(model.encode(TEXTS), ref["sentence_embedding"], atol=ATOL)
    model.max_seq_length = 512
    assert not np.allclose(model.encode(TEXTS[4]), ref["sentence_embedding"][4], atol=1e-3)


def test_prompts(work, st_model, st):
    ref = dump_reference(st_model, work / "dump-st-query", texts=["query: " + t for t in TEXTS])
    np.testing.assert_allclose(st.encode(TEXTS, prompt_name="query"), ref["sentence_embedding"], atol=ATOL)
    np.testing.assert_allclose(st.encode_query(TEXTS), ref["sentence_embedding"], atol=ATOL)
    np.testing.assert_allclose(st.encode(TEXTS, prompt="query: "), ref["sentence_embedding"], atol=ATOL)
    np.testing.assert_allclose(st.encode_document(TEXTS), st.encode(["passage: " + t for t in TEXTS]), atol=1e-6)
    assert st.prompts == {"query": "query: ", "document": "passage: "} and st.default_prompt_name is None
    with pytest.raises(ValueError, match="Prompt name 'nope' not found"):
        st.encode("x", prompt_name="nope")


@pytest.mark.parametrize("precision", ["int8", "uint8", "binary", "ubinary"])
def test_precision_as_quantize_embeddings(st, precision):
    texts = TEXTS * 2 + ["another text", "and one more, to have eleven"]
    emb = st.encode(texts)  # float32 (11, 24): 24 bits pack into 3 bytes per row
    got = st.encode(texts, precision=precision)
    # sentence_transformers.quantization.quantize_embeddings, step by step
    if precision.endswith("int8"):
        ranges = np.vstack((np.min(emb, axis=0), np.max(emb, axis=0)))
        starts = ranges[0, :]
        steps = (ranges[1, :] - ranges[0, :]) / 255
        if precision == "uint8":
            want = ((emb - starts) / steps).astype(np.uint8)
        else:
            want = ((emb - starts) / steps - 128).astype(np.int8)
    elif precision == "binary":
        want = (np.packbits(emb > 0).reshape(emb.shape[0], -1) - 128).astype(np.int8)
    else:
        want = np.packbits(emb > 0).reshape(emb.shape[0], -1)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="not supported"):
        st.encode(texts, precision="float16")


def test_token_embeddings_match_pytorch(st, reference):
    tokens = st.encode(TEXTS, output_value="token_embeddings")
    assert isinstance(tokens, list) and len(tokens) == len(TEXTS)
    last = reference[f"hidden_states_{max(int(k.split('_')[-1]) for k in reference if k.startswith('hidden_states_'))}"]
    mask = reference["attention_mask"]
    for i, t in enumerate(tokens):
        n = int(mask[i].sum())
        assert t.shape == (n, 32) and t.dtype == np.float32
        np.testing.assert_allclose(t, last[i, :n], atol=1e-4)
    assert st.encode(TEXTS[0], output_value="token_embeddings").shape == tokens[0].shape


def test_similarity_and_tensors(st):
    emb = st.encode(TEXTS)
    sim = st.similarity(emb, emb[:2])
    n = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    np.testing.assert_allclose(sim, n @ n[:2].T, atol=1e-6)
    assert sim.shape == (len(TEXTS), 2) and st.similarity_fn_name == "cosine"
    # sentence-transformers' similarity_pairwise: row i with row i (util.pairwise_cos_sim)
    pair = st.similarity_pairwise(emb[:3], emb[1:4])
    np.testing.assert_allclose(pair, (n[:3] * n[1:4]).sum(-1), atol=1e-6)
    assert pair.shape == (3,)
    with pytest.raises(ValueError, match="same shape"):
        st.similarity_pairwise(emb[:3], emb[:2])
    with pytest.raises(TypeError, match=r"sentences\[1\] is NoneType"):
        st.encode([TEXTS[0], None])
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        st.encode(TEXTS, batch_size=0)
    torch = pytest.importorskip("torch")
    t = st.encode(TEXTS, convert_to_tensor=True)
    assert isinstance(t, torch.Tensor) and tuple(t.shape) == emb.shape
    assert isinstance(st.encode(TEXTS, convert_to_numpy=False), list)


def test_normalize_module_of_the_folder(work):
    path = make_model(work, "st-normalize", "--seed", "12", "--st-pooling", "cls", "--st-normalize")
    ref = dump_reference(path, work / "dump-st-normalize", texts=TEXTS)
    emb = roberta_cpp.SentenceTransformer(path).encode(TEXTS)
    np.testing.assert_allclose(emb, ref["sentence_embedding"], atol=ATOL)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-6)
