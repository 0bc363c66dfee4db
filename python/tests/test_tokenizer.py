"""roberta_cpp.Tokenizer against Hugging Face's tokenizer: the golden files of tests/data/hf
(made with HF's Rust tokenizer) and the shared 351 cases, and transformers' call format."""
import json

import numpy as np
import pytest

import roberta_cpp
from conftest import SHARED, SOURCE

HF = SOURCE / "tests" / "data" / "hf"


def records(name):
    with open(HF / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def none_for_minus_one(v):
    return [None if x < 0 else x for x in v]


@pytest.fixture(scope="module")
def tok(tokenizer_dir):
    return roberta_cpp.Tokenizer.from_pretrained(tokenizer_dir)


def test_single_texts_match_hf_cases(tok):
    cases = [json.loads(line) for line in open(SHARED / "assets" / "tokenizer-cases.expected.jsonl", encoding="utf-8")]
    assert len(cases) == 351
    texts = [c["text"] for c in cases]
    batch = tok.encode_batch(texts)
    for c, e in zip(cases, batch):
        one = tok.encode(c["text"])
        assert (one.ids, one.tokens) == (e.ids, e.tokens)
        assert e.ids == c["ids"], c["text"]
        assert e.tokens == c["tokens"], c["text"]
        assert [list(o) for o in e.offsets] == c["offsets"], c["text"]
        assert e.attention_mask == [1] * len(e)


def test_pairs_match_hf(tok):
    for r in records("pairs.jsonl"):
        e = tok.encode(r["a"], r["b"])
        assert e.ids == r["ids"] and e.tokens == r["tokens"], r
        assert [list(o) for o in e.offsets] == r["offsets"]
        assert e.type_ids == r["type_ids"]
        assert e.special_tokens_mask == r["special_tokens_mask"]
        assert e.attention_mask == r["attention_mask"]
        assert e.sequence_ids == none_for_minus_one(r["sequence_ids"])
    # encode_batch takes (a, b) tuples too
    rs = records("pairs.jsonl")[:10]
    assert [e.ids for e in tok.encode_batch([(r["a"], r["b"]) for r in rs])] == [r["ids"] for r in rs]
    # ... and [a, b] lists and the rows of a numpy array of pairs
    assert [e.ids for e in tok.encode_batch([[r["a"], r["b"]] for r in rs])] == [r["ids"] for r in rs]
    assert [e.ids for e in tok.encode_batch(np.array([[r["a"], r["b"]] for r in rs]))] == [r["ids"] for r in rs]


def test_truncation_matches_hf(tok):
    checked = 0
    for r in records("truncation.jsonl"):
        if r["error"] is not None or r["max_length"] == 0:
            continue
        if r["below_special_count"] and r["add_special_tokens"]:
            # HF returns the special tokens alone; roberta.cpp refuses a length they do not fit in
            with pytest.raises(ValueError, match="special tokens"):
                tok.encode(r["a"], r["b"], max_length=r["max_length"], truncation_strategy=r["strategy"])
            continue
        e = tok.encode(r["a"], r["b"], add_special_tokens=r["add_special_tokens"], max_length=r["max_length"],
                       truncation_strategy=r["strategy"], truncation_side=r["direction"])
        assert e.ids == r["ids"], r
        assert [list(o) for o in e.offsets] == r["offsets"], r
        checked += 1
    assert checked > 1000


def test_padding_matches_hf(tok):
    checked = 0
    for r in records("padding.jsonl"):
        if r["truncation"] is not None:
            continue
        inputs = r["texts"] if r["texts"] is not None else [tuple(p) for p in r["pairs"]]
        encs = tok.encode_batch(inputs)
        length = r["max_length"] if r["padding"] == "fixed" else None
        padded = tok.pad(encs, length=length, pad_to_multiple_of=r["pad_to_multiple_of"], direction=r["direction"])
        assert [e.ids for e in padded] == r["ids"], r
        assert [e.attention_mask for e in padded] == r["attention_mask"]
        assert [e.special_tokens_mask for e in padded] == r["special_tokens_mask"]
        checked += 1
    assert checked >= 50


def test_decode_matches_hf(tok):
    for r in records("decode.jsonl"):
        if any(i >= tok.get_vocab_size() for i in r["ids"]):
            continue
        assert tok.decode(r["ids"], skip_special_tokens=r["skip_special_tokens"]) == r["text"], r
    # tokenizers' default skips special tokens
    assert tok.decode([0, 31414, 232, 328, 2]) == "Hello world!"
    assert tok.decode_batch([[0, 31414, 2]], skip_special_tokens=False) == ["<s>Hello</s>"]


def test_call_returns_transformers_format(tok):
    out = tok("Hello world!")
    assert isinstance(out, dict) and list(out) == ["input_ids", "attention_mask"]
    assert out["input_ids"] == [0, 31414, 232, 328, 2] and out["attention_mask"] == [1] * 5
    assert out.tokens() == ["<s>", "Hello", "Ġworld", "!", "</s>"]
    assert out.word_ids() == [None, 0, 1, 2, None]
    batch = tok(["Hello world!", "The capital of France is <mask>."], padding=True, return_tensors="np",
                return_offsets_mapping=True)
    assert batch["input_ids"].dtype == np.int64 and batch["input_ids"].shape == (2, 9)
    assert batch["input_ids"][1].tolist() == [0, 133, 812, 9, 1470, 16, 50264, 4, 2]
    assert batch["attention_mask"][0].tolist() == [1] * 5 + [0] * 4
    assert batch["offset_mapping"].shape == (2, 9, 2)
    with pytest.raises(ValueError, match="padding=True"):
        tok(["a", "a b c"], return_tensors="np")
    pair = tok("How are you?", "Fine, thanks.", truncation=True, max_length=8)
    assert pair["input_ids"] == [0, 6179, 32, 2, 2, 45089, 6, 2]
    # transformers' batch of (text, pair) tuples is the pairs' encodings
    assert tok([("How are you?", "Fine, thanks.")], truncation=True, max_length=8)["input_ids"] == [pair["input_ids"]]


def test_vocab_and_special_ids(tok):
    assert tok.token_to_id("<mask>") == tok.mask_token_id == 50264
    assert (tok.bos_token_id, tok.pad_token_id, tok.eos_token_id) == (0, 1, 2)
    assert tok.id_to_token(31414) == "Hello" and tok.id_to_token(10**7) is None
    assert tok.get_vocab()["Hello"] == 31414


def test_bad_arguments_name_themselves(tok):
    """Not pybind11's "incompatible function arguments": the argument and what is wrong with it;
    ids as tokenizers' u32 takes them (OverflowError below 0 or from 2^32, unknown ids skipped)."""
    for call, kind, match in [
            (lambda: tok.encode(None), TypeError, "sequence is NoneType"),
            (lambda: tok.encode("a", pair="b\ud800"), roberta_cpp.InvalidInputError, "pair is not valid Unicode"),
            (lambda: tok.encode_batch(["a", None]), TypeError, r"inputs\[1\] is NoneType"),
            (lambda: tok(["a", ("b", 3)]), TypeError, r"text\[1\]\[1\] is int"),
            (lambda: tok.decode([5, None]), TypeError, r"ids\[1\] is NoneType, not int"),
            (lambda: tok.decode([-5, 100]), OverflowError, r"ids\[0\] = -5"),
            (lambda: tok.decode_batch([[100], [2**40]]), OverflowError, r"sequences\[1\]\[0\]")]:
        with pytest.raises(kind, match=match):
            call()
    assert tok.decode([31414, 2**31, 2**32 - 1]) == tok.decode([31414]) == "Hello"
    assert tok.decode(np.array([31414, 232])) == "Hello world"


def test_invalid_input_is_value_error(tok):
    with pytest.raises(ValueError):
        tok.encode("x", truncation_strategy="sideways")
    with pytest.raises(roberta_cpp.NotFoundError):
        roberta_cpp.Tokenizer.from_pretrained("/nonexistent/folder")


def test_from_file_applies_the_files_truncation_and_padding(tmp_path, tokenizer_dir):
    """tokenizer.json's "truncation" and "padding" sections, as HF's Tokenizer.from_file applies them
    to encode and encode_batch (gen_variant_goldens.js: HF's own encodings); transformers-style calls
    ignore them, as transformers does; enable_/no_truncation and _padding change them."""
    spec = json.loads((tokenizer_dir / "tokenizer.json").read_text(encoding="utf-8"))
    cases = [r for r in records("variants.jsonl") if "file_settings" in r]
    assert {r["variant"] for r in cases} == {"file_fixed", "file_batch"}
    for r in cases:
        doc = json.loads(json.dumps(spec))
        for pointer, value in r["patch"]:
            doc[pointer.strip("/")] = value
        path = tmp_path / f"{r['variant']}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        tok = roberta_cpp.Tokenizer.from_file(path)
        texts = [a for a, _ in r["file_settings"]]
        for got, want in zip([tok.encode(t) for t in texts], r["encode"]):
            assert (got.ids, got.attention_mask, [list(o) for o in got.offsets]) == \
                (want["ids"], want["attention_mask"], want["offsets"]), r["variant"]
        for got, want in zip(tok.encode_batch(texts), r["encode_batch"]):
            assert (got.ids, got.attention_mask) == (want["ids"], want["attention_mask"]), r["variant"]
        assert tok.truncation["max_length"] == doc["truncation"]["max_length"]
        plain = roberta_cpp.Tokenizer.from_file(tokenizer_dir / "tokenizer.json")
        assert plain.truncation is None and plain.padding is None
        assert tok("a b c d e f g h")["input_ids"] == plain("a b c d e f g h")["input_ids"]
        tok.no_truncation()
        tok.no_padding()
        assert tok.encode(texts[4]).ids == plain.encode(texts[4]).ids
    with pytest.raises(ValueError, match="strategy 'middle'"):
        tok.enable_truncation(4, strategy="middle")
    bad = dict(spec, truncation={"max_length": "x"})
    (tmp_path / "bad.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(roberta_cpp.ModelError, match="bad.json: truncation"):
        roberta_cpp.Tokenizer.from_file(tmp_path / "bad.json")


def patched_tokenizer(tmp_path, tokenizer_dir, patch):
    """roberta-base's tokenizer.json edited as a golden record's `patch` says (JSON pointer, value)."""
    spec = json.loads((tokenizer_dir / "tokenizer.json").read_text(encoding="utf-8"))
    for pointer, value in patch:
        node = spec
        keys = pointer.split("/")[1:]
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    path = tmp_path / f"tokenizer-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return roberta_cpp.Tokenizer.from_file(path)


def test_pretokenized_words_match_hf(tmp_path, tokenizer_dir):
    """encode(words, is_pretokenized=True), encode_batch and transformers' is_split_into_words against
    HF's encodings of word lists (tests/data/hf/pretokenized.jsonl)."""
    tokenizers, checked = {}, 0
    for r in records("pretokenized.jsonl"):
        if r["variant"] not in tokenizers:
            tokenizers[r["variant"]] = patched_tokenizer(tmp_path, tokenizer_dir, r["patch"])
        t = tokenizers[r["variant"]]
        kwargs = {}
        if r["truncation"]:
            kwargs = {"max_length": r["truncation"]["max_length"], "truncation_strategy": r["truncation"]["strategy"],
                      "truncation_side": r["truncation"]["direction"]}
        if r["error"]:
            with pytest.raises(ValueError):
                t.encode(r["words"], r["pair_words"], True, r["add_special_tokens"], **kwargs)
            continue
        e = t.encode(r["words"], r["pair_words"], True, r["add_special_tokens"], **kwargs)
        what = (r["variant"], r["words"], r["pair_words"], r["truncation"])
        assert e.ids == r["ids"] and e.tokens == r["tokens"], what
        assert [list(o) for o in e.offsets] == r["offsets"], what
        assert e.word_ids == none_for_minus_one(r["word_ids"]), what
        assert e.sequence_ids == none_for_minus_one(r["sequence_ids"]), what
        assert e.special_tokens_mask == r["special_tokens_mask"], what
        item = r["words"] if r["pair_words"] is None else (r["words"], r["pair_words"])
        [b] = t.encode_batch([item], is_pretokenized=True, add_special_tokens=r["add_special_tokens"], **kwargs)
        assert b.ids == r["ids"], what
        if not r["truncation"]:  # transformers' call
            call = t(r["words"], r["pair_words"], add_special_tokens=r["add_special_tokens"], is_split_into_words=True,
                     return_offsets_mapping=True)
            assert call["input_ids"] == r["ids"] and [list(o) for o in call["offset_mapping"]] == r["offsets"], what
            assert call.word_ids() == none_for_minus_one(r["word_ids"]), what
        checked += 1
    assert checked >= 120


def test_pretokenized_batches_and_errors(tok):
    words = [["Hello", "world"], ["a"]]
    batch = tok(words, is_split_into_words=True, padding=True, return_tensors="np")
    assert batch["input_ids"].shape == (2, 4)
    assert batch["input_ids"][0].tolist() == tok(words[0], is_split_into_words=True)["input_ids"]
    assert tok.encode_batch(words, is_pretokenized=True)[1].ids == tok.encode(["a"], is_pretokenized=True).ids
    with pytest.raises(TypeError, match="sequence is str"):
        tok.encode("Hello world", is_pretokenized=True)
    with pytest.raises(TypeError, match=r"inputs\[1\]\[0\]"):
        tok.encode_batch([["ok"], [3]], is_pretokenized=True)
    with pytest.raises(TypeError, match="is_split_into_words"):
        tok("Hello world", is_split_into_words=True)
    with pytest.raises(roberta_cpp.InvalidInputError, match="lone surrogate"):
        tok.encode(["fine", "\ud800"], is_pretokenized=True)
    with pytest.raises(TypeError, match="is_pretokenized must be a bool"):
        tok.encode("Hello", None, "yes")
    with pytest.raises(TypeError, match="text_pair"):
        tok(words, "a pair", is_split_into_words=True)
    assert tok.encode(np.array(["Hello", "world"]), is_pretokenized=True).ids == \
        tok.encode(["Hello", "world"], is_pretokenized=True).ids


def test_alignment_queries_match_hf(tok):
    """Encoding's token_to_* / word_to_* / char_to_* against HF's answers (tests/data/hf/alignment.jsonl),
    and transformers' BatchEncoding forms of them (batch index first, CharSpan / TokenSpan)."""
    checked = 0
    for r in records("alignment.jsonl"):
        kwargs = {"add_special_tokens": r["add_special_tokens"]}
        if r["truncation"]:
            kwargs.update(max_length=r["truncation"]["max_length"], truncation_side=r["truncation"]["direction"])
        e = tok.encode(r["a"], r["b"], **kwargs)
        if r["padding"]:
            [e] = tok.pad([e], length=r["padding"]["length"], direction=r["padding"]["direction"])
        what = (r["a"], r["b"], r["padding"], r["truncation"], r["add_special_tokens"])
        assert e.ids == r["ids"] and e.n_sequences == r["n_sequences"], what

        def tuples(xs):
            return [None if x is None else tuple(x) for x in xs]

        assert [e.token_to_sequence(t) for t in range(len(r["token_to_sequence"]))] == r["token_to_sequence"], what
        assert [e.token_to_word(t) for t in range(len(r["token_to_word"]))] == r["token_to_word"], what
        assert [e.token_to_chars(t) for t in range(len(r["token_to_chars"]))] == tuples(r["token_to_chars"]), what
        for s in ("0", "1", "2"):
            seq = int(s)
            assert [e.char_to_token(p, seq) for p in range(len(r["char_to_token"][s]))] == r["char_to_token"][s], what
            assert [e.char_to_word(p, seq) for p in range(len(r["char_to_word"][s]))] == r["char_to_word"][s], what
            assert [e.word_to_tokens(w, seq) for w in range(len(r["word_to_tokens"][s]))] == \
                tuples(r["word_to_tokens"][s]), what
            assert [e.word_to_chars(w, seq) for w in range(len(r["word_to_chars"][s]))] == \
                tuples(r["word_to_chars"][s]), what
        checked += 1
    assert checked >= 40
    # transformers' BatchEncoding: (index) for input 0, (batch, index), spans as named tuples
    batch = tok(["Hello world", "Where do I live?"], ["Hi", "In Berlin."], padding=True)
    assert batch.char_to_token(1, 3, sequence_index=1) == batch.encodings[1].char_to_token(3, 1)
    assert batch.char_to_token(0) == 1 and batch.token_to_word(2) == 1
    span = batch.word_to_tokens(1, 1, sequence_index=1)
    assert span == batch.encodings[1].word_to_tokens(1, 1) and (span.start, span.end) == span
    chars = batch.token_to_chars(1, span.start)
    assert "In Berlin."[chars.start:chars.end] == "Berlin"
    assert batch.word_to_chars(0, 0).end == 5 and batch.char_to_word(1, 0) == 0 and batch.n_sequences == 2
    # indices are unsigned in tokenizers: a negative one is an OverflowError there too
    for call in (lambda: batch.token_to_sequence(0, -1), lambda: batch.encodings[0].char_to_token(-2),
                 lambda: batch.encodings[0].word_to_tokens(-1), lambda: batch.encodings[0].char_to_word(0, -1)):
        with pytest.raises(OverflowError, match="must not be negative"):
            call()
    assert batch.encodings[0].token_to_chars(10**6) is None and batch.encodings[0].word_to_tokens(2**31) is None


def test_uncased_wordpiece_matches_hf(tmp_path):
    """An uncased WordPiece tokenizer.json (BertNormalizer lowercase, so strip_accents too): ids and
    offsets of HF's goldens (wordpiece.jsonl, variant "lowercase"), do_lower_case as BertTokenizer's."""
    spec = json.loads((HF / "wordpiece" / "tokenizer.json").read_text(encoding="utf-8"))
    spec["normalizer"]["lowercase"] = True
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    tok = roberta_cpp.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert tok.is_wordpiece and tok.do_lower_case
    checked = 0
    for line in (HF / "wordpiece.jsonl").read_text(encoding="utf-8").split("\n")[:-1]:
        r = json.loads(line)
        if r["variant"] != "lowercase" or "a" not in r or r["b"] is not None or r["truncation"] is not None \
                or not r["add_special_tokens"]:
            continue
        enc = tok.encode(r["a"])
        assert enc.ids == r["ids"] and [list(o) for o in enc.offsets] == r["offsets"], r["a"]
        checked += 1
    assert checked >= 40
