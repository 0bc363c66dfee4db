"""roberta_cpp against sentence-transformers 6: its own code's results (tests/data/sentence_transformers,
made by tools/hf_goldens/gen_st_goldens.py from the library's source) for quantize_embeddings, the
similarity functions, paraphrase mining, community detection and the warnings of renamed arguments;
and the behaviour its migration guide describes (per-call activation, empty prompts, Python floats
from rank, torch devices, multi-process arguments)."""
import json
import logging
import warnings

import numpy as np
import pytest

import roberta_cpp
from conftest import SOURCE, TEXTS, make_model
from roberta_cpp import _compat
from roberta_cpp.cross_encoder import _activation_name

torch = pytest.importorskip("torch")
from roberta_cpp import util  # noqa: E402  (needs torch, as sentence_transformers.util does)
from roberta_cpp.quantization import quantize_embeddings  # noqa: E402

GOLDEN = SOURCE / "tests" / "data" / "sentence_transformers"


def records(name):
    with open(GOLDEN / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def array(rec):
    if "list" in rec:
        return [array(r) for r in rec["list"]]
    return np.asarray(rec["values"], dtype=rec["dtype"]).reshape(rec["shape"])


def expect_array(got, rec, atol=0.0):
    if "list" in rec:
        assert isinstance(got, list) and len(got) == len(rec["list"])
        for g, r in zip(got, rec["list"]):
            expect_array(g, r, atol)
        return
    got = got.numpy() if isinstance(got, torch.Tensor) else got
    want = array(rec)
    assert str(got.dtype) == rec["dtype"] and list(got.shape) == rec["shape"]
    if atol:
        np.testing.assert_allclose(got, want, atol=atol, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture
def log(caplog):
    """The roberta_cpp log, with the once-per-process warnings forgotten (as in a new process)."""
    _compat._warned.clear()
    caplog.set_level(logging.WARNING, logger="roberta_cpp")
    caplog.clear()
    return caplog


def messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "roberta_cpp"]


@pytest.fixture(scope="module")
def st(st_model):
    return roberta_cpp.SentenceTransformer(st_model)


@pytest.fixture(scope="module")
def ce_path(work):
    return make_model(work, "ce", "--seed", "9", "--head", "sequence", "--num-labels", "1")


def test_quantize_embeddings_as_sentence_transformers_6():
    cases = records("quantize.jsonl")
    assert {c["case"] for c in cases} >= {"calibration_clips", "ranges_zero_width", "odd_dim", "list_of_matrices",
                                          "empty", "constant"}
    for c in cases:
        kw = {k: array(c[k]) for k in ("ranges", "calibration_embeddings") if k in c}
        emb = array(c["embeddings"])
        expect_array(quantize_embeddings(emb, c["precision"], **kw), c["expected"])
        if not isinstance(emb, list) and len(emb):  # a torch tensor and a list of rows: the same
            expect_array(quantize_embeddings(torch.from_numpy(emb), c["precision"], **kw), c["expected"])
            expect_array(quantize_embeddings(list(torch.from_numpy(emb)), c["precision"], **kw), c["expected"])
    with pytest.raises(ValueError, match="not supported"):
        quantize_embeddings(np.ones((2, 4), np.float32), "int4")
    assert util.quantize_embeddings is quantize_embeddings is roberta_cpp.quantize_embeddings


def test_similarity_functions_as_sentence_transformers_6(st):
    by_name = {"cos_sim": "cosine", "dot_score": "dot", "euclidean_sim": "euclidean", "manhattan_sim": "manhattan"}
    for c in records("similarity.jsonl"):
        a, b = array(c["a"]), array(c["b"])
        expect_array(getattr(util, c["function"])(a, b), c["expected"], atol=1e-6)
        pairwise = c["function"].startswith("pairwise_")
        name = by_name[c["function"][len("pairwise_"):] if pairwise else c["function"]]
        model = roberta_cpp.SentenceTransformer(st.model_path, similarity_fn_name=name)
        got = (model.similarity_pairwise if pairwise else model.similarity)(a, b)
        assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
        expect_array(got, c["expected"], atol=1e-6)
    half = torch.ones(2, 4, dtype=torch.bfloat16)  # half precision is scored in float32, as in version 6
    assert st.similarity(half, half).dtype == torch.float32


def test_paraphrase_mining_and_communities_as_sentence_transformers_6(st):
    for c in records("retrieval.jsonl"):
        emb = array(c["embeddings"])
        got = getattr(util, c["function"])(emb, **c["kwargs"])
        if c["function"] == "community_detection":
            assert got == c["expected"]
            continue
        assert [p[1:] for p in got] == [p[1:] for p in c["expected"]]
        np.testing.assert_allclose([p[0] for p in got], [p[0] for p in c["expected"]], atol=1e-6)
    texts = TEXTS + [TEXTS[0], TEXTS[1] + " Really."]
    mined = util.paraphrase_mining(st, texts, top_k=2)
    assert mined == util.paraphrase_mining_embeddings(st.encode(texts, convert_to_tensor=True), top_k=2)
    assert mined[0][1:] == [0, 5] and mined[0][0] == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_array_equal(util.truncate_embeddings(st.encode(texts), 5), st.encode(texts)[:, :5])


def st_call(st, rec):
    """The record's call on our SentenceTransformer, and the same call with today's names."""
    if rec["method"] == "SentenceTransformer.encode":
        return st.encode(**rec["kwargs"]), st.encode(rec["received"]["inputs"])
    model = roberta_cpp.SentenceTransformer(st.model_path, **rec["kwargs"])
    return model.encode(TEXTS), st.encode(TEXTS)


def test_renamed_arguments_as_sentence_transformers_6(st, ce_path, log):
    """Each old argument form warns with sentence-transformers 6's message (logged once per process,
    as its warning_once) and acts as the new name does."""
    pairs = [(TEXTS[0], TEXTS[1]), (TEXTS[2], TEXTS[3])]
    ce = roberta_cpp.CrossEncoder(ce_path)
    seen = set()
    for rec in records("deprecations.jsonl"):
        method, kw = rec["method"], dict(rec["kwargs"])
        log.clear()
        _compat._warned.clear()
        if method.startswith("SentenceTransformer."):
            got, want = st_call(st, rec)
            np.testing.assert_array_equal(got, want)
        elif method in ("CrossEncoder.predict", "CrossEncoder.rank"):
            for k in ("sentences", "inputs"):
                if k in kw:
                    kw[k] = pairs
            if method == "CrossEncoder.predict":
                got = ce.predict(**kw)
                act = rec["received"]["activation_fn"]
                np.testing.assert_array_equal(got, ce.predict(pairs, activation_fn=act))
            else:
                got = ce.rank(TEXTS[0], TEXTS[1:], **kw)
                assert got == ce.rank(TEXTS[0], TEXTS[1:], activation_fn=rec["received"]["activation_fn"])
        else:  # CrossEncoder.__init__: the received arguments, as our model's state
            args = [ce_path if a == "m" else a for a in rec["args"]]
            kw = {k: (str(ce_path) if v == "x" else v) for k, v in kw.items()}
            model = roberta_cpp.CrossEncoder(*args, **kw)
            got = rec["received"]
            if "max_length" in got:
                assert model.max_seq_length == got["max_length"]
            if "activation_fn" in got:
                assert _activation_name(model.activation_fn) == got["activation_fn"]
        assert messages(log) == rec["messages"], rec
        seen.add(method)
    assert seen == {"SentenceTransformer.encode", "SentenceTransformer.__init__", "CrossEncoder.predict",
                    "CrossEncoder.rank", "CrossEncoder.__init__"}
    # once per process, as transformers' warning_once
    st.encode(sentences=TEXTS[:1])
    log.clear()
    st.encode(sentences=TEXTS[:1])
    assert messages(log) == []


def test_deprecated_methods_as_sentence_transformers_6(st, ce_path, log):
    want = json.loads((GOLDEN / "deprecated_methods.json").read_text())
    ce = roberta_cpp.CrossEncoder(ce_path)
    checks = {
        "SentenceTransformer.get_sentence_embedding_dimension": lambda: st.get_sentence_embedding_dimension(),
        "SentenceTransformer.encode_multi_process":
            lambda: st.encode_multi_process(TEXTS, st.start_multi_process_pool(["cpu"])),
        "SentenceTransformer.truncate_sentence_embeddings":
            lambda: st.truncate_sentence_embeddings(4).__enter__(),
        "CrossEncoder.max_length": lambda: ce.max_length,
        "CrossEncoder.default_activation_function": lambda: ce.default_activation_function,
    }
    not_kept = {"SentenceTransformer.load", "SentenceTransformer.get_sentence_features"}  # (no torch modules here)
    assert set(want) == set(checks) | not_kept | {"BaseModel.tokenize"}
    for name, call in checks.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert [(str(w.message), w.category.__name__) for w in caught] == [
            (want[name]["message"], want[name]["category"])], name
    st.truncate_dim = None
    st.tokenize(TEXTS[:1])
    assert messages(log) == [want["BaseModel.tokenize"]["message"]]
    np.testing.assert_array_equal(st.tokenize(TEXTS)["input_ids"], st.preprocess(TEXTS)["input_ids"])


def test_prompts_and_activation_as_sentence_transformers_6(st_model, ce_path):
    # an empty prompt given disables the folder's (sentence-transformers 5.4 and later)
    saved = roberta_cpp.SentenceTransformer(st_model)
    off = roberta_cpp.SentenceTransformer(st_model, prompts={"query": ""})
    assert off.prompts == {"query": "", "document": "passage: "}
    np.testing.assert_array_equal(off.encode_query(TEXTS), saved.encode(TEXTS))
    assert not np.array_equal(saved.encode_query(TEXTS), saved.encode(TEXTS))
    # CrossEncoder prompts go before each pair's first text
    ce = roberta_cpp.CrossEncoder(ce_path, prompts={"rerank": "Judge: "})
    pairs = [(TEXTS[0], TEXTS[1]), (TEXTS[3], TEXTS[2])]
    np.testing.assert_array_equal(ce.predict(pairs, prompt_name="rerank"),
                                  ce.predict([("Judge: " + a, b) for a, b in pairs]))
    np.testing.assert_array_equal(ce.predict(pairs, prompt="P "), ce.predict([("P " + a, b) for a, b in pairs]))
    assert [r["corpus_id"] for r in ce.rank(TEXTS[0], TEXTS[1:], prompt="P ")] == list(
        np.argsort(-ce.predict([("P " + TEXTS[0], d) for d in TEXTS[1:]]), kind="stable"))
    with pytest.raises(ValueError, match="Prompt name 'nope' not found"):
        ce.predict(pairs, prompt_name="nope")
    features = ce.preprocess(pairs, prompt="P ")
    enc = ce.tokenizer([("P " + a, b) for a, b in pairs], padding=True, return_tensors="pt")
    assert torch.equal(features["input_ids"], enc["input_ids"])
    # activation_fn for one call only
    logits = ce.predict(pairs, activation_fn=torch.nn.Identity())
    np.testing.assert_allclose(ce.predict(pairs), torch.sigmoid(torch.from_numpy(logits)).numpy(), atol=1e-6)
    assert isinstance(ce.activation_fn, torch.nn.Sigmoid)


def test_devices_pools_and_truncation(st, ce_path):
    assert st.device == torch.device("cpu") and roberta_cpp.CrossEncoder(ce_path).device == torch.device("cpu")
    # CrossEncoder's max_length is the tokenizer's model_max_length there: the same either way
    capped = roberta_cpp.CrossEncoder(ce_path, processor_kwargs={"model_max_length": 8})
    assert capped.max_seq_length == 8 == roberta_cpp.CrossEncoder(ce_path, max_length=8).max_seq_length
    assert st.processor is st.tokenizer
    full = st.encode(TEXTS)
    with st.truncate_embeddings(8):
        assert st.get_embedding_dimension() == 8
        np.testing.assert_array_equal(st.encode(TEXTS), full[:, :8])
    assert st.get_embedding_dimension() == 24
    pool = st.start_multi_process_pool(["cpu", "cpu"])
    np.testing.assert_array_equal(st.encode(TEXTS, pool=pool, chunk_size=2), full)
    np.testing.assert_array_equal(st.encode(TEXTS, device=["cpu", "cpu:0"]), full)
    np.testing.assert_array_equal(st.encode(np.array(TEXTS)), full)  # a numpy array of strings is a batch
    ce = roberta_cpp.CrossEncoder(ce_path)
    pairs = [(TEXTS[0], TEXTS[1])]
    np.testing.assert_array_equal(ce.predict(pairs, pool=pool), ce.predict(pairs))
    st.stop_multi_process_pool(pool)
    with pytest.raises(ValueError, match="CPU only"):
        st.start_multi_process_pool(["cuda:0"])
    with pytest.raises(ValueError, match="CPU only"):
        st.encode(TEXTS, device=["cpu", "cuda:1"])
    with pytest.raises(ValueError, match="start_multi_process_pool"):
        st.encode(TEXTS, pool={"input": None})
