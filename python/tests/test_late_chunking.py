"""SentenceTransformer.encode_late_chunks against the PyTorch reference written from the spec
(tools/late_chunking_reference.py: Hugging Face's ids and offsets of the documents of
tests/data/hf/late_chunking.jsonl, each window run alone, max-context stitching, chunk means, the
folder's Normalize): spans, chunk texts, token and window counts equal, every value within 1e-5.
Windows of 40 tokens (max_length=40) unless a test says otherwise, so the long documents take many."""
import json
import subprocess
import sys

import numpy as np
import pytest

import roberta_cpp
from conftest import PY, SOURCE, TOOLS, make_model

sys.path.insert(0, str(TOOLS))
from roberta_ref.late_chunking import cut_at_spaces, joined_spans  # noqa: E402

GOLDENS = SOURCE / "tests" / "data" / "hf" / "late_chunking.jsonl"
DOCS = [r["text"] for r in map(json.loads, GOLDENS.read_text(encoding="utf-8").splitlines()) if "text" in r]
NONFICTION, FICTION, SHORT, UNI, NO_TERMINATOR, EMPTY = DOCS
PROMPT = "search_document: "  # the golden prompt record's
MAX_LENGTH = 40
TOL = 1e-5


@pytest.fixture(scope="module")
def model_dir(work):
    return make_model(work, "late-chunking", "--seed", "61", "--st-pooling", "mean", "--st-normalize",
                      "--st-prompts", json.dumps({"document": PROMPT}))


@pytest.fixture(scope="module")
def st(model_dir):
    return roberta_cpp.SentenceTransformer(str(model_dir))


@pytest.fixture(scope="module")
def reference(work, model_dir):
    """reference(items, *options, max_length=40): the reference's rows for items (str or
    {"text", "spans"}), options as the tool's command line (--prompt takes the golden prompt's ids)."""
    cache, runs = {}, [0]

    def run(items, *options, max_length=MAX_LENGTH):
        key = json.dumps([items, options, max_length])
        if key not in cache:
            runs[0] += 1
            docs, out = work / f"late-ref-{runs[0]}-docs.jsonl", work / f"late-ref-{runs[0]}.jsonl"
            docs.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items), encoding="utf-8")
            extra = ["--prompt-ids-from-golden"] if "--prompt" in options else []
            subprocess.run([PY, str(TOOLS / "late_chunking_reference.py"), "--model", str(model_dir), "--goldens",
                            str(GOLDENS), "--docs", str(docs), "--max-length", str(max_length), "--out", str(out),
                            *options, *extra], check=True)
            cache[key] = [json.loads(l) for l in out.read_text(encoding="utf-8").splitlines()]
        return cache[key]
    return run


def assert_matches(mine, ref, text, dim=32):
    assert isinstance(mine, dict) and sorted(mine) == ["chunks", "embeddings", "spans", "tokens", "windows"]
    assert [list(s) for s in mine["spans"]] == ref["spans"]
    assert mine["chunks"] == [text[s:e] for s, e in ref["spans"]]
    assert (mine["tokens"], mine["windows"]) == (ref["tokens"], ref["windows"])
    emb = mine["embeddings"]
    assert isinstance(emb, np.ndarray) and emb.dtype == np.float32 and emb.shape == (len(ref["spans"]), dim)
    if emb.size:
        diff = float(np.abs(emb - np.float32(ref["embeddings"])).max())
        assert diff <= TOL, f"max |diff| {diff:.2e} over {ref['windows']} windows"



def test_one_document_gives_a_dict(st, reference):
    (ref,) = reference([NONFICTION])
    assert ref["windows"] > 10
    assert_matches(st.encode_late_chunks(NONFICTION, max_length=MAX_LENGTH), ref, NONFICTION)


def test_a_list_gives_a_list(st, reference):
    out = st.encode_late_chunks(DOCS, max_length=MAX_LENGTH)
    assert isinstance(out, list) and len(out) == len(DOCS)
    for mine, ref, text in zip(out, reference(DOCS), DOCS):
        assert_matches(mine, ref, text)
    assert out[-1]["spans"] == [] and out[-1]["embeddings"].shape == (0, 32) and out[-1]["windows"] == 0  # ""
    one_by_one = st.encode_late_chunks(DOCS, max_length=MAX_LENGTH, batch_size=1)
    assert all(np.array_equal(a["embeddings"], b["embeddings"]) for a, b in zip(out, one_by_one))
    assert st.encode_late_chunks([], max_length=MAX_LENGTH) == []


def test_spans(st, reference):
    i = NONFICTION.index("principles")
    j = FICTION.index("Hammer-Heads")
    k = UNI.index("\U0001F469\u200d\U0001F4BB")
    given = [(j + 2, j + 9), [0, 126], (0, 126), (100, 700), (j, j + 3)]  # overlapping, unsorted, cutting a word
    (ref,) = reference([{"text": FICTION, "spans": [list(s) for s in given]}])
    assert_matches(st.encode_late_chunks(FICTION, spans=given, max_length=MAX_LENGTH), ref, FICTION)
    per_doc = [[(i + 3, i + 120), (2308, len(NONFICTION)), (1000, 1003)], None,
               [(k + 1, k + 2), (k, k + 2), (0, 3), (0, len(UNI))]]  # inside an emoji's ZWJ sequence
    refs = reference([{"text": NONFICTION, "spans": [list(s) for s in per_doc[0]]}, SHORT,
                      {"text": UNI, "spans": [list(s) for s in per_doc[2]]}])
    out = st.encode_late_chunks([NONFICTION, SHORT, UNI], spans=per_doc, max_length=MAX_LENGTH)
    for mine, ref, text in zip(out, refs, [NONFICTION, SHORT, UNI]):
        assert_matches(mine, ref, text)
    assert out[1]["chunks"] == [SHORT]  # None: by sentences


def test_list_of_chunks(st, reference):
    """Jina AI's API: a document given as its chunks, joined by single spaces."""
    pieces = cut_at_spaces(NONFICTION, 4)
    (ref,) = reference([{"text": NONFICTION, "spans": joined_spans(pieces)}])
    out = st.encode_late_chunks([pieces, SHORT], max_length=MAX_LENGTH)
    assert_matches(out[0], ref, NONFICTION)
    assert out[0]["chunks"] == pieces
    assert_matches(out[1], reference([SHORT])[0], SHORT)
    same = st.encode_late_chunks(NONFICTION, spans=joined_spans(pieces), max_length=MAX_LENGTH)
    assert np.array_equal(same["embeddings"], out[0]["embeddings"])
    pieces3 = cut_at_spaces(FICTION, 3)
    (ref,) = reference([{"text": FICTION, "spans": joined_spans(pieces3)}])
    assert_matches(st.encode_late_chunks([tuple(pieces3)], max_length=MAX_LENGTH)[0], ref, FICTION)


def test_chunk_by_tokens_and_packed_sentences(st, reference):
    out = st.encode_late_chunks(DOCS, chunk_by="tokens", chunk_tokens=16, max_length=MAX_LENGTH)
    for mine, ref, text in zip(out, reference(DOCS, "--chunk-by", "tokens", "--chunk-tokens", "16"), DOCS):
        assert_matches(mine, ref, text)
    out = st.encode_late_chunks(DOCS, chunk_tokens=60, max_length=MAX_LENGTH)
    for mine, ref, text in zip(out, reference(DOCS, "--chunk-tokens", "60"), DOCS):
        assert_matches(mine, ref, text)


@pytest.mark.parametrize("overlap", [0, 20, 37])
def test_overlap(st, reference, overlap):
    out = st.encode_late_chunks(DOCS[:5], overlap=overlap, max_length=MAX_LENGTH)
    for mine, ref, text in zip(out, reference(DOCS[:5], "--overlap", str(overlap)), DOCS):
        assert_matches(mine, ref, text)


@pytest.mark.parametrize("max_length", [None, 64, 17])
def test_max_length(st, reference, max_length):
    """None: the folder's max_seq_length (512: 595 tokens take two windows)."""
    out = st.encode_late_chunks(DOCS[:5], max_length=max_length)
    refs = reference(DOCS[:5], max_length=max_length or st.max_seq_length)
    assert refs[0]["windows"] >= 2
    for mine, ref, text in zip(out, refs, DOCS):
        assert_matches(mine, ref, text)


def test_normalize_embeddings_false(st, reference):
    out = st.encode_late_chunks(DOCS[:5], normalize_embeddings=False, max_length=MAX_LENGTH)
    refs = reference(DOCS[:5], "--no-normalize")
    for mine, ref, text in zip(out, refs, DOCS):
        assert_matches(mine, ref, text)
    assert abs(np.linalg.norm(out[0]["embeddings"][0]) - 1) > 1e-3


def test_prompt(st, reference, work):
    refs = reference(DOCS[:5], "--prompt", PROMPT)
    for kwargs in ({"prompt": PROMPT}, {"prompt_name": "document"}):
        for mine, ref, text in zip(st.encode_late_chunks(DOCS[:5], max_length=MAX_LENGTH, **kwargs), refs, DOCS):
            assert_matches(mine, ref, text)
    # a folder whose default prompt is "document": the prompt by default, none with prompt=""
    default = roberta_cpp.SentenceTransformer(str(make_model(
        work, "late-chunking-default-prompt", "--seed", "61", "--st-pooling", "mean", "--st-normalize",
        "--st-prompts", json.dumps({"document": PROMPT}), "--st-default-prompt", "document")))
    assert_matches(default.encode_late_chunks(FICTION, max_length=MAX_LENGTH), refs[1], FICTION)
    assert_matches(default.encode_late_chunks(FICTION, prompt="", max_length=MAX_LENGTH), reference([FICTION])[0],
                   FICTION)


def test_errors(st):
    with pytest.raises(ValueError, match=r"spans must hold one list .* per document: 2"):
        st.encode_late_chunks([SHORT, UNI], spans=[[(0, 3)]])
    with pytest.raises(TypeError, match=r"spans\[1\] must be a \(start, end\) pair"):
        st.encode_late_chunks(SHORT, spans=[(0, 3), (0, 3, 5)])
    with pytest.raises(TypeError, match=r"spans\[1\] is int"):
        st.encode_late_chunks([SHORT, UNI], spans=[None, 3])
    with pytest.raises(ValueError, match=r"spans\[0\]\[0\] must be at least 0"):
        st.encode_late_chunks(SHORT, spans=[(-1, 3)])
    with pytest.raises(ValueError, match=r"documents\[0\]\[1\] is empty or white space"):
        st.encode_late_chunks([["The quick brown fox.", ""]])
    with pytest.raises(ValueError, match=r"documents\[1\]\[0\] is empty or white space"):
        st.encode_late_chunks([SHORT, [" \t", "jumps."]])
    with pytest.raises(ValueError, match=r"documents\[0\] is a list of chunks: it takes no spans"):
        st.encode_late_chunks([["a b.", "c d."]], spans=[[(0, 1)]])
    with pytest.raises(TypeError, match=r"documents\[1\] is NoneType"):
        st.encode_late_chunks([SHORT, None])
    with pytest.raises(TypeError, match=r"documents is NoneType"):
        st.encode_late_chunks(None)
    with pytest.raises(ValueError, match=r"chunk_by must be 'sentences' or 'tokens', not 'words'"):
        st.encode_late_chunks(SHORT, chunk_by="words")
    with pytest.raises(ValueError, match=r"chunk_by='tokens' needs chunk_tokens"):
        st.encode_late_chunks(SHORT, chunk_by="tokens")
    with pytest.raises(ValueError, match=r"overlap must be at least 0"):
        st.encode_late_chunks(SHORT, overlap=-1)
    with pytest.raises(ValueError, match=r"max_length must be at least 3"):
        st.encode_late_chunks(SHORT, max_length=2)
    # found by the library: InvalidInputError (a ValueError) naming the span, the overlap, the input
    with pytest.raises(roberta_cpp.InvalidInputError, match=r"^spans\[0\] \[0, 45\) .* 44 characters"):
        st.encode_late_chunks(SHORT, spans=[(0, 45)])
    with pytest.raises(roberta_cpp.InvalidInputError, match=r"^spans\[1\] \[5, 2\)"):
        st.encode_late_chunks(SHORT, spans=[(0, 3), (5, 2)])
    with pytest.raises(roberta_cpp.InvalidInputError, match=r"^input 2: spans\[1\] \[0, 1000\)"):
        st.encode_late_chunks([SHORT, UNI], spans=[None, [(0, 3), (0, 1000)]])
    with pytest.raises(roberta_cpp.InvalidInputError, match=r"spans\[1\] \[3, 4\) holds no token"):
        st.encode_late_chunks(SHORT, spans=[(0, 3), (3, 4)])  # a space alone
    with pytest.raises(roberta_cpp.InvalidInputError, match=r"overlap of 38 tokens"):
        st.encode_late_chunks(SHORT, overlap=38, max_length=MAX_LENGTH)
    with pytest.raises(roberta_cpp.InvalidInputError, match="no room for the document"):
        st.encode_late_chunks(SHORT, prompt=PROMPT, max_length=7)  # <s>, the prompt's 5 tokens, </s>
    assert st.encode_late_chunks(SHORT, max_length=MAX_LENGTH)["chunks"] == [SHORT]  # still answers
