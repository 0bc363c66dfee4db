"""roberta_cpp.BGEM3FlagModel against the PyTorch reference (tools/dump_reference.py --m3: the
reference's last hidden state through tools/roberta_ref/m3.py, a transcription of FlagEmbedding's
M3 code) on a random-weight XLM-RoBERTa with random heads, and against `roberta embed --bge-m3`."""
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import roberta_cpp
from conftest import PY, TOOLS, dump_reference, make_model, run_cli

sys.path.insert(0, str(TOOLS))
from roberta_ref import m3 as ref_m3  # noqa: E402  (FlagEmbedding's scores, transcribed)

TEXTS = ["The weather is lovely today.", "It is sunny outside, and the children play in the park, the park.",
         "A", "What is BGE M3?"]
ATOL = 1e-5


@pytest.fixture(scope="module")
def m3_model(work):
    out = make_model(work, "bge-m3", "--seed", "52", "--model-type", "xlm-roberta", "--m3-heads", "20",
                     "--st-pooling", "cls", "--st-normalize")
    if not (out / "colbert_linear.safetensors").exists():
        subprocess.run([PY, str(TOOLS / "convert_checkpoint.py"), str(out)], check=True, stdout=subprocess.DEVNULL)
    return out


@pytest.fixture(scope="module")
def model(m3_model):
    return roberta_cpp.BGEM3FlagModel(m3_model)


def reference(work, m3_model, texts, name, *extra):
    dump_reference(m3_model, work / name, texts=texts)  # (writes the texts file the next call reads)
    subprocess.run([PY, str(TOOLS / "dump_reference.py"), "--model", str(m3_model), "--text-file",
                    str(work / (name + "-texts.txt")), "--out", str(work / name), "--m3", "--force", *extra],
                   check=True, stdout=subprocess.DEVNULL)
    ref = json.loads((work / name / "m3.json").read_text())
    ref["colbert_vecs"] = [np.float32(v) for v in ref["colbert_vecs"]]
    ref["dense_vecs"] = np.float32(ref["dense_vecs"])
    return ref


def assert_outputs(out, ref):
    np.testing.assert_allclose(out["dense_vecs"], ref["dense_vecs"], atol=ATOL)
    for mine, want in zip(out["lexical_weights"], ref["lexical_weights"]):
        assert sorted(mine) == sorted(want)
        assert all(isinstance(w, np.float32) for w in mine.values())  # as FlagEmbedding's
        np.testing.assert_allclose([mine[k] for k in sorted(want)], [want[k] for k in sorted(want)], atol=ATOL)
    for mine, want in zip(out["colbert_vecs"], ref["colbert_vecs"]):
        assert mine.shape == want.shape and mine.dtype == np.float32
        np.testing.assert_allclose(mine, want, atol=ATOL)


def test_encode_matches_pytorch(work, m3_model, model):
    ref = reference(work, m3_model, TEXTS, "m3-ref")
    assert sum(len(w) for w in ref["lexical_weights"]) > 4  # the heads give some weights above 0
    out = model.encode(TEXTS, return_dense=True, return_sparse=True, return_colbert_vecs=True)
    assert set(out) == {"dense_vecs", "lexical_weights", "colbert_vecs"}
    assert out["dense_vecs"].shape == (len(TEXTS), 32)
    assert_outputs(out, ref)
    default = model.encode(TEXTS)  # FlagEmbedding's defaults: dense only
    assert default["lexical_weights"] is None and default["colbert_vecs"] is None
    np.testing.assert_array_equal(default["dense_vecs"], out["dense_vecs"])
    one = model.encode(TEXTS[1], return_sparse=True, return_colbert_vecs=True)
    assert one["dense_vecs"].shape == (32,) and isinstance(one["lexical_weights"], dict)
    np.testing.assert_array_equal(one["colbert_vecs"], out["colbert_vecs"][1])
    small = model.encode(TEXTS, batch_size=1, return_sparse=True, return_colbert_vecs=True)
    np.testing.assert_array_equal(small["dense_vecs"], out["dense_vecs"])


def test_truncate_dim_and_instruction(work, m3_model):
    ref = reference(work, m3_model, TEXTS, "m3-ref-dim", "--m3-truncate-dim", "8")
    model = roberta_cpp.BGEM3FlagModel(m3_model, truncate_dim=8, return_sparse=True, return_colbert_vecs=True)
    assert_outputs(model.encode(TEXTS), ref)
    model = roberta_cpp.BGEM3FlagModel(m3_model, query_instruction_for_retrieval="Represent: ")
    ref = reference(work, m3_model, ["Represent: " + t for t in TEXTS[:2]], "m3-ref-query")
    np.testing.assert_allclose(model.encode_queries(TEXTS[:2])["dense_vecs"], ref["dense_vecs"], atol=ATOL)
    np.testing.assert_allclose(model.encode_corpus(TEXTS[:2])["dense_vecs"],
                               model.encode(TEXTS[:2])["dense_vecs"], atol=0)  # no passage instruction


def test_scores_match_flagembedding(work, m3_model, model):
    queries, passages = TEXTS[:2], TEXTS[2:]
    q = reference(work, m3_model, queries, "m3-ref-q")
    p = reference(work, m3_model, passages, "m3-ref-p")
    pairs = list(zip(queries, passages))
    for weights in (None, [0.4, 0.2, 0.4]):
        want = ref_m3.compute_score(q, p, weights or (1.0, 1.0, 1.0))
        got = model.compute_score(pairs, weights_for_different_modes=weights)
        assert list(got) == ["colbert", "sparse", "dense", "sparse+dense", "colbert+sparse+dense"]
        for key in got:
            np.testing.assert_allclose(got[key], want[key], atol=ATOL, err_msg=key)
    one = model.compute_score(pairs[0])
    assert isinstance(one["dense"], float)
    out_q = model.encode(queries, return_sparse=True, return_colbert_vecs=True)
    out_p = model.encode(passages, return_sparse=True, return_colbert_vecs=True)
    lex = model.compute_lexical_matching_score(out_q["lexical_weights"], out_p["lexical_weights"])
    want = [[ref_m3.compute_lexical_matching_score(a, b) for b in p["lexical_weights"]] for a in q["lexical_weights"]]
    np.testing.assert_allclose(lex, want, atol=ATOL)
    col = model.colbert_score(out_q["colbert_vecs"][0], out_p["colbert_vecs"][1])
    assert isinstance(col, torch.Tensor)
    np.testing.assert_allclose(float(col), float(ref_m3.colbert_score(q["colbert_vecs"][0], p["colbert_vecs"][1])),
                               atol=ATOL)
    tokens = model.convert_id_to_token(out_q["lexical_weights"][1])
    assert len(tokens) == len(out_q["lexical_weights"][1])


def test_matches_cli(m3_model, model, roberta_binary):
    out = run_cli(roberta_binary, "embed", "--bge-m3", "--model", str(m3_model), input_text="\n".join(TEXTS) + "\n")
    rows = [json.loads(line) for line in out.splitlines()]
    mine = model.encode(TEXTS, return_sparse=True, return_colbert_vecs=True)
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(np.float32(row["dense_vecs"]), mine["dense_vecs"][i])
        assert {k: np.float32(v) for k, v in row["lexical_weights"].items()} == mine["lexical_weights"][i]
        np.testing.assert_array_equal(np.float32(row["colbert_vecs"]), mine["colbert_vecs"][i])


def test_errors(work, m3_model, model):
    with pytest.raises(ValueError, match="Must choose one or more"):
        model.encode(TEXTS, return_dense=False)
    with pytest.raises(ValueError, match="pooling_method"):
        roberta_cpp.BGEM3FlagModel(m3_model, pooling_method="mean")
    with pytest.raises(ValueError, match="pair"):
        model.compute_score([("only one",)])
    plain = make_model(work, "no-m3-heads", "--seed", "53")
    with pytest.raises(roberta_cpp.Error, match="colbert_linear"):
        roberta_cpp.BGEM3FlagModel(plain)
    unconverted = make_model(work, "m3-unconverted", "--seed", "54", "--m3-heads")
    with pytest.raises(roberta_cpp.Error, match="convert_checkpoint.py"):
        roberta_cpp.BGEM3FlagModel(unconverted)
