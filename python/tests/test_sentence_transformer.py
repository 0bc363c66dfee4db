"""roberta_cpp.SentenceTransformer against the PyTorch reference of sentence-transformers folders
(tools/dump_reference.py: Transformer -> Pooling -> Dense -> Normalize), `roberta embed`, and
encode(precision=...) as quantize_embeddings."""
import json
import shutil
import sys

import numpy as np
import pytest

import roberta_cpp
from conftest import SOURCE, TEXTS, TOOLS, dump_reference, make_model, run_cli

sys.path.insert(0, str(TOOLS))
from roberta_ref.bpe import BpeTokenizer  # noqa: E402  (the reference's own tokenizer)

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
    assert st.get_embedding_dimension() == 24
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
    assert small.get_embedding_dimension() == 10 and small.encode("x").shape == (10,)


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
    # (quantize_embeddings itself is checked against sentence-transformers' own in test_st6.py)
    want = roberta_cpp.quantize_embeddings(emb, precision)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="not supported"):
        st.encode(texts, precision="float16")


def test_token_embeddings_match_pytorch(st, reference):
    tokens = st.encode(TEXTS, output_value="token_embeddings")
    assert isinstance(tokens, list) and len(tokens) == len(TEXTS)
    last = reference[f"hidden_states_{max(int(k.split('_')[-1]) for k in reference if k.startswith('hidden_states_'))}"]
    mask = reference["attention_mask"]
    torch = pytest.importorskip("torch")  # sentence-transformers gives torch tensors here
    for i, t in enumerate(tokens):
        n = int(mask[i].sum())
        assert isinstance(t, torch.Tensor) and tuple(t.shape) == (n, 32) and t.dtype == torch.float32
        np.testing.assert_allclose(t.numpy(), last[i, :n], atol=1e-4)
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
    # broadcast as torch broadcasts sentence-transformers' (a * b).sum(-1): every row with the one
    np.testing.assert_allclose(st.similarity_pairwise(emb[:3], emb[:1]), (n[:3] * n[:1]).sum(-1), atol=1e-6)
    with pytest.raises((ValueError, RuntimeError)):  # torch's shape error, as sentence-transformers'
        st.similarity_pairwise(emb[:3], emb[:2])
    with pytest.raises(TypeError, match=r"inputs\[1\] is NoneType"):
        st.encode([TEXTS[0], None])
    with pytest.raises(TypeError, match=r"inputs\[1\] is tuple"):
        st.encode([TEXTS[0], ("a", "b")])
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


def test_texts_as_given_and_prompt_left_out(work):
    """Each prompt + text tokenized as given (sentence-transformers 5.4 and later no longer strip
    whitespace), and include_prompt false leaving out the tokens of the prompt tokenized alone,
    minus its </s>: against the PyTorch reference run on the texts as sentence-transformers 6
    tokenizes them (dump_reference --prompt)."""
    path = make_model(work, "st-exclude-prompt", "--seed", "5", "--st-pooling", "mean", "--st-exclude-prompt",
                      "--st-prompts", json.dumps({"query": "query: "}))
    spaced = ["  " + TEXTS[0] + " \t", "\u3000" + TEXTS[1] + "\u00a0\u2009", "\x1f\x85A\x0b\x0c", TEXTS[3]]
    model = roberta_cpp.SentenceTransformer(path)
    ref = dump_reference(path, work / "dump-st-spaced", texts=spaced, st_prompt="")
    np.testing.assert_allclose(model.encode(spaced), ref["sentence_embedding"], atol=ATOL)
    stripped = dump_reference(path, work / "dump-st-spaced-stripped", texts=spaced, st_prompt="", strip=True)
    assert np.abs(ref["sentence_embedding"] - stripped["sentence_embedding"]).max() > 1e-3  # the test can fail
    ref = dump_reference(path, work / "dump-st-query-left-out", texts=spaced, st_prompt="query: ")
    np.testing.assert_allclose(model.encode(spaced, prompt_name="query"), ref["sentence_embedding"], atol=ATOL)
    # every output at once: the tokens run, the prompt's length (its tokens as given, minus </s>),
    # and an attention mask of ones (sentence-transformers 6 no longer zeroes the prompt's part)
    out = model.encode(spaced, prompt_name="query", output_value=None)
    ids = ref["input_ids"]
    for i, d in enumerate(out):
        n = int(ref["attention_mask"][i].sum())
        assert np.asarray(d["input_ids"]).tolist() == ids[i, :n].tolist()
        k = len(BpeTokenizer.from_dir(path).encode("query: ")) - 1  # <s> and the prompt's tokens (the reference's BPE)
        assert d["prompt_length"] == k > 1
        np.testing.assert_array_equal(np.asarray(d["attention_mask"]), [1] * n)
        np.testing.assert_allclose(np.asarray(d["sentence_embedding"]), ref["sentence_embedding"][i], atol=ATOL)
        last = ref[f"hidden_states_{max(int(k.split('_')[-1]) for k in ref if k.startswith('hidden_states_'))}"]
        np.testing.assert_allclose(np.asarray(d["token_embeddings"]), last[i, :n], atol=1e-4)
    # preprocess(): padded ids and mask as the Transformer module makes them (no prompt)
    plain = dump_reference(path, work / "dump-st-spaced-plain", texts=spaced, st_prompt="")
    features = model.preprocess(spaced)
    np.testing.assert_array_equal(np.asarray(features["attention_mask"]), plain["attention_mask"])
    np.testing.assert_array_equal(np.asarray(features["input_ids"]), plain["input_ids"])


def test_sentence_transformers_5_defaults(work, st_model):
    """Prompts "query" / "document" always exist; a folder without modules.json reads none of the
    sentence-transformers files (mean pooling, no prompts); an empty input gives shape (0,)."""
    demo = roberta_cpp.SentenceTransformer(SOURCE / "models" / "demo")
    assert demo.prompts == {"query": "", "document": ""}
    np.testing.assert_array_equal(demo.encode("a b", prompt_name="query"), demo.encode("a b"))
    assert roberta_cpp.SentenceTransformer(SOURCE / "models" / "demo", default_prompt_name="document").encode(
        "x").shape == (256,)
    st = roberta_cpp.SentenceTransformer(st_model, prompts={"query": "q: ", "other": "o: "})
    assert st.prompts == {"query": "q: ", "document": "passage: ", "other": "o: "}  # given ones win
    # without modules.json: a cls 1_Pooling and prompts beside the model are not read
    bare = work / "demo-with-loose-st-files"
    if bare.exists():
        shutil.rmtree(bare)
    shutil.copytree(SOURCE / "models" / "demo", bare)
    (bare / "1_Pooling").mkdir()
    (bare / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 256,
                                                                 "pooling_mode_cls_token": True}))
    (bare / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "Q: "},
                                                                        "similarity_fn_name": "dot"}))
    loose = roberta_cpp.SentenceTransformer(bare)
    np.testing.assert_array_equal(loose.encode(TEXTS), demo.encode(TEXTS))
    assert loose.prompts == {"query": "", "document": ""} and loose.similarity_fn_name == "cosine"
    empty = demo.encode([])
    assert isinstance(empty, np.ndarray) and empty.shape == (0,)
    torch = pytest.importorskip("torch")
    assert tuple(demo.encode([], convert_to_tensor=True).shape) == (0,)
    assert isinstance(demo.encode([], convert_to_tensor=True), torch.Tensor)
    demo.similarity_fn_name = None  # unset reads as cosine
    assert demo.similarity_fn_name == "cosine"


def test_loading_and_encode_arguments(st_model):
    """sentence-transformers' loading arguments: the hub ones change nothing, model_kwargs'
    torch_dtype picks bfloat16 weights, what would change results and cannot be honoured is refused."""
    torch = pytest.importorskip("torch")
    st = roberta_cpp.SentenceTransformer(st_model)
    same = roberta_cpp.SentenceTransformer(st_model, None, torch.device("cpu"), cache_folder="/nonexistent",
                                           trust_remote_code=True, revision="main", local_files_only=True,
                                           token=False, backend="onnx", config_kwargs={"classifier_dropout": 0.1})
    np.testing.assert_array_equal(same.encode(TEXTS), st.encode(TEXTS))
    bf16 = roberta_cpp.SentenceTransformer(st_model, model_kwargs={"torch_dtype": torch.bfloat16})
    np.testing.assert_array_equal(bf16.encode(TEXTS),
                                  roberta_cpp.SentenceTransformer(st_model, dtype="bfloat16").encode(TEXTS))
    assert not np.array_equal(bf16.encode(TEXTS), st.encode(TEXTS))
    with pytest.raises(ValueError, match="model_max_length"):
        roberta_cpp.SentenceTransformer(st_model, tokenizer_kwargs={"model_max_length": 8})
    with pytest.raises(ValueError, match="float16"):
        roberta_cpp.SentenceTransformer(st_model, model_kwargs={"torch_dtype": torch.float16})
    with pytest.raises(ValueError, match="Unsupported backend"):
        roberta_cpp.SentenceTransformer(st_model, backend="tensorflow")
    with pytest.raises(ValueError, match="modules"):
        roberta_cpp.SentenceTransformer(st_model, [object()])
    with pytest.raises(ValueError, match=r"dtype is a keyword argument here: SentenceTransformer\(path, "
                                         r"dtype='bfloat16'\)"):
        roberta_cpp.SentenceTransformer(st_model, "bfloat16")  # the old positional dtype
    np.testing.assert_array_equal(roberta_cpp.SentenceTransformer(st_model, dtype=torch.bfloat16).encode(TEXTS),
                                  bf16.encode(TEXTS))
    with pytest.raises(ValueError, match="CPU only"):
        roberta_cpp.SentenceTransformer(st_model, device="cuda")
    np.testing.assert_array_equal(st.encode(TEXTS, pool=None, chunk_size=None, device="cpu:0"), st.encode(TEXTS))
    with pytest.raises(ValueError, match="pool"):
        st.encode(TEXTS, pool={"processes": []})


def test_util_and_quantization_modules():
    """roberta_cpp.util and roberta_cpp.quantization under sentence-transformers' import names,
    against the formulas (numpy) and a brute-force search."""
    torch = pytest.importorskip("torch")
    from roberta_cpp import util
    from roberta_cpp.quantization import quantize_embeddings

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal((7, 8)).astype(np.float32)
    na, nb = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
    assert isinstance(util.cos_sim(a, b), torch.Tensor)
    np.testing.assert_allclose(util.cos_sim(a, b).numpy(), na @ nb.T, atol=1e-6)
    np.testing.assert_allclose(util.cos_sim(a[0], b).numpy(), (na[:1] @ nb.T), atol=1e-6)
    np.testing.assert_allclose(util.dot_score(torch.from_numpy(a), list(torch.from_numpy(b))).numpy(), a @ b.T,
                               atol=1e-5)
    dist = np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1))
    np.testing.assert_allclose(util.euclidean_sim(a, b).numpy(), -dist, atol=1e-5)
    np.testing.assert_allclose(util.manhattan_sim(a, b).numpy(), -np.abs(a[:, None] - b[None]).sum(-1), atol=1e-5)
    np.testing.assert_allclose(util.pairwise_cos_sim(a, b[:5]).numpy(), (na * nb[:5]).sum(-1), atol=1e-6)
    np.testing.assert_allclose(util.pairwise_dot_score(a, b[:5]).numpy(), (a * b[:5]).sum(-1), atol=1e-5)
    np.testing.assert_allclose(util.pairwise_euclidean_sim(a, b[:5]).numpy(),
                               -np.sqrt(((a - b[:5]) ** 2).sum(-1)), atol=1e-5)
    np.testing.assert_allclose(util.pairwise_manhattan_sim(a, b[:5]).numpy(), -np.abs(a - b[:5]).sum(-1), atol=1e-5)
    corpus = rng.standard_normal((50, 8)).astype(np.float32)
    nc = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    for chunk in (500000, 7):  # one corpus chunk, and several merged
        hits = util.semantic_search(a, corpus, top_k=6, corpus_chunk_size=chunk, query_chunk_size=2)
        assert len(hits) == 5
        for q, h in enumerate(hits):
            want = np.argsort(-(na[q] @ nc.T), kind="stable")[:6]
            assert [x["corpus_id"] for x in h] == want.tolist()
            np.testing.assert_allclose([x["score"] for x in h], (na[q] @ nc.T)[want], atol=1e-6)
    dot_hits = util.semantic_search(a[:1], corpus, top_k=3, score_function=util.dot_score)[0]
    assert [x["corpus_id"] for x in dot_hits] == np.argsort(-(a[0] @ corpus.T))[:3].tolist()
    np.testing.assert_array_equal(quantize_embeddings(a, "ubinary"), np.packbits(a > 0).reshape(5, -1))
    # sentence-transformers also takes a list of tensors (encode(convert_to_numpy=False)'s form)
    np.testing.assert_array_equal(quantize_embeddings(list(torch.from_numpy(a)), "ubinary"),
                                  np.packbits(a > 0).reshape(5, -1))
