"""Long documents in reranking (CrossEncoder.rank(long_documents="max" | "mean"), `roberta rerank
--long-documents`, the server's /rerank "long_documents"): against the PyTorch reference's scores of
the windows HF's tokenizer(query, document, truncation="only_second", max_length, stride,
return_overflowing_tokens=True) makes, built here from the reference's own tokenizer."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import roberta_cpp
from conftest import PY, SOURCE, TOOLS, make_model, run_cli

sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(SOURCE / "tests" / "server"))
from roberta_ref.bpe import BpeTokenizer  # noqa: E402
from serve_util import Server, post_json  # noqa: E402

QUERY = "What is the capital of France?"
LONG = ("Paris is the capital and most populous city of France, with an estimated population of two million "
        "residents in an area of more than one hundred square kilometres. ") * 2
DOCS = [LONG, "Berlin is the capital of Germany.", LONG[:-60]]
MAX_LENGTH, STRIDE = 32, 8


@pytest.fixture(scope="module")
def reranker(work):
    # 34 positions: pairs of at most 32 tokens, so that the documents need windows everywhere
    return make_model(work, "reranker-long", "--seed", "60", "--head", "sequence", "--num-labels", "1",
                      "--max-position-embeddings", str(MAX_LENGTH + 2))


@pytest.fixture(scope="module")
def window_scores(work, reranker):
    """Each document's windows' sigmoid scores from the PyTorch reference."""
    tok = BpeTokenizer.from_dir(str(reranker))
    q = tok.encode(QUERY)[1:-1]
    windows, owner = [], []
    for i, doc in enumerate(DOCS):
        d = tok.encode(doc)[1:-1]
        size = MAX_LENGTH - len(q) - 4  # <s> q </s> </s> d </s>
        start = 0
        while True:
            stop = min(start + size, len(d))
            windows.append([0] + q + [2, 2] + d[start:stop] + [2])
            owner.append(i)
            if stop == len(d):
                break
            start += size - STRIDE
    ids = work / "long-windows.json"
    ids.write_text(json.dumps(windows))
    out = work / "long-windows-dump"
    subprocess.run([PY, str(TOOLS / "dump_reference.py"), "--model", str(reranker), "--ids", str(ids), "--out", str(out),
                    "--force", "--no-logits"], check=True, stdout=subprocess.DEVNULL)
    logits = np.load(out / "sequence_logits.npy")[:, 0].astype(np.float64)
    scores = 1 / (1 + np.exp(-logits))
    per_doc = [[s for s, o in zip(scores, owner) if o == i] for i in range(len(DOCS))]
    assert [len(w) for w in per_doc][:2] == [len(per_doc[0]), 1] and len(per_doc[0]) > 2
    return per_doc


def test_rank_max_and_mean_match_the_windows(reranker, window_scores):
    ce = roberta_cpp.CrossEncoder(reranker)
    assert ce.max_seq_length == MAX_LENGTH
    for mode, join in (("max", max), ("mean", lambda w: sum(w) / len(w))):
        ranked = ce.rank(QUERY, DOCS, long_documents=mode, stride=STRIDE)
        got = {r["corpus_id"]: r["score"] for r in ranked}
        for i, w in enumerate(window_scores):
            assert math.isclose(got[i], join(w), abs_tol=1e-5), (mode, i)
        assert [r["score"] for r in ranked] == sorted(got.values(), reverse=True)
    # the default truncates, as sentence-transformers: the first window alone
    truncated = {r["corpus_id"]: r["score"] for r in ce.rank(QUERY, DOCS)}
    assert math.isclose(truncated[0], window_scores[0][0], abs_tol=1e-5)
    with pytest.raises(ValueError, match="long_documents"):
        ce.rank(QUERY, DOCS, long_documents="median")
    with pytest.raises(roberta_cpp.Error, match="stride"):
        ce.rank(QUERY, DOCS, long_documents="max", stride=40)


def test_cli_and_server_match(reranker, window_scores, roberta_binary):
    out = run_cli(roberta_binary, "rerank", "--model", str(reranker), "--query", QUERY, "--long-documents", "max",
                  "--stride", str(STRIDE), "--json", *DOCS)
    got = {r["corpus_id"]: r["score"] for r in json.loads(out)}
    assert all(math.isclose(got[i], max(w), abs_tol=1e-5) for i, w in enumerate(window_scores))
    server = Server(roberta_binary, ["--model", str(reranker), "--quiet"])
    try:
        status, _, out = post_json(server, "/rerank", {"query": QUERY, "texts": DOCS, "long_documents": "mean",
                                                       "stride": STRIDE})
        assert status == 200, out
        got = {r["index"]: r["score"] for r in out}
        assert all(math.isclose(got[i], sum(w) / len(w), abs_tol=1e-5) for i, w in enumerate(window_scores))
        status, _, out = post_json(server, "/rerank", {"query": QUERY, "texts": DOCS, "truncate": False,
                                                       "long_documents": "max", "stride": STRIDE})
        assert status == 200  # windows need no truncation
        status, _, out = post_json(server, "/rerank", {"query": QUERY, "texts": DOCS, "long_documents": "median"})
        assert status == 422 and "long_documents" in out["error"]
        status, _, out = post_json(server, "/rerank", {"query": QUERY, "texts": DOCS, "long_documents": "max",
                                                       "stride": 40})
        assert status == 422 and "stride" in out["error"]
    finally:
        assert server.stop() == 0
