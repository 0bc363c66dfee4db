"""roberta_cpp.pipeline(...) and CrossEncoder: results in transformers' / sentence-transformers'
formats, compared with `roberta fill-mask --json` and with PyTorch reference logits
(tools/dump_reference.py) put through transformers' post-processing rules, written out here."""
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

import roberta_cpp
from conftest import TEXTS, dump_reference, make_model, run_cli

MASKED = [
    "She opened the <mask> and looked out into the garden.",
    "The capital of France is <mask>.",
    "<mask> and <mask> went up the hill.",
]


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def assert_same_candidates(mine, cli):
    assert len(mine) == len(cli)
    for m, c in zip(mine, cli):
        assert list(m) == ["score", "token", "token_str", "sequence"]
        assert type(m["score"]) is float and type(m["token"]) is int and type(m["token_str"]) is str
        assert (m["token"], m["token_str"], m["sequence"]) == (c["token"], c["token_str"], c["sequence"])
        assert m["score"] == pytest.approx(c["score"], rel=1e-6)


@pytest.mark.parametrize("options", [[], ["--top-k", "3"], ["--targets", " door, window,xyzzy"]])
def test_fill_mask_matches_cli(mlm_model, roberta_binary, options):
    kwargs = {}
    if options and options[0] == "--top-k":
        kwargs["top_k"] = 3
    elif options:
        kwargs["targets"] = [" door", " window", "xyzzy"]
    fill = roberta_cpp.pipeline("fill-mask", model=mlm_model)
    cli = [json.loads(line) for line in
           run_cli(roberta_binary, "fill-mask", "--model", str(mlm_model), "--json", *options, *MASKED).splitlines()]
    results = fill(MASKED, **kwargs)
    assert len(results) == len(MASKED)
    for text, mine, theirs in zip(MASKED, results, cli):
        if text.count("<mask>") == 1:
            assert_same_candidates(mine, theirs)
            assert_same_candidates(fill(text, **kwargs), theirs)  # one text: its list
        else:  # one list per mask
            assert len(mine) == 2
            for m, c in zip(mine, theirs):
                assert_same_candidates(m, c)
    # a list of one text gives that text's result, as transformers does
    assert fill([MASKED[0]], **kwargs) == fill(MASKED[0], **kwargs)


def test_fill_mask_defaults_at_construction(mlm_model):
    fill = roberta_cpp.pipeline("fill-mask", model=mlm_model, top_k=2)
    assert len(fill(MASKED[0])) == 2 and len(fill(MASKED[0], top_k=4)) == 4
    with pytest.raises(roberta_cpp.ModelError, match="masked_lm"):
        roberta_cpp.pipeline("fill-mask", model=make_model_no_lm(mlm_model))


def make_model_no_lm(mlm_model):
    from conftest import make_model as mk
    return mk(mlm_model.parent.parent, "no-lm-head", "--seed", "3", "--no-lm-head")


def test_feature_extraction_matches_pytorch(work, mlm_model):
    ref = dump_reference(mlm_model, work / "dump-fe", texts=TEXTS[:3])
    last = ref[f"hidden_states_{2}"]  # tiny: 2 layers
    fe = roberta_cpp.pipeline("feature-extraction", model=mlm_model)
    out = fe(TEXTS[:3])
    assert isinstance(out, list) and len(out) == 3
    for i, r in enumerate(out):
        n = int(ref["attention_mask"][i].sum())
        assert isinstance(r, list) and len(r) == 1 and len(r[0]) == n and type(r[0][0][0]) is float
        np.testing.assert_allclose(np.array(r[0]), last[i, :n], atol=1e-4)
    single = fe(TEXTS[0], return_tensors=True)
    assert single.shape == (1, int(ref["attention_mask"][0].sum()), 32) and single.dtype == np.float32
    assert len(fe([TEXTS[0]])) == 1  # feature-extraction keeps a list of one a list
    long_text = "word " * 600
    with pytest.raises(ValueError, match="truncation=True"):
        fe(long_text)
    assert len(fe(long_text, truncation=True)[0]) == 512
    with pytest.raises(ValueError, match="truncation=True"):  # a strategy that does not cut
        fe(long_text, tokenize_kwargs={"truncation": "do_not_truncate"})
    # tokenize_kwargs' max_length, as transformers' tokenizer cuts: the first 15 tokens, then </s>
    ids = roberta_cpp.Tokenizer.from_pretrained(mlm_model).encode(TEXTS[4]).ids
    cut = dump_reference(mlm_model, work / "dump-fe-cut", ids=[ids[:15] + [2]])
    for kwargs in ({"truncation": True, "max_length": 16}, {"max_length": 16}, {"truncation": "only_first",
                                                                               "max_length": 16, "padding": True}):
        got = fe(TEXTS[4], tokenize_kwargs=kwargs, return_tensors=True)
        assert got.shape == (1, 16, 32), kwargs
        np.testing.assert_allclose(got[0], cut["hidden_states_2"][0], atol=1e-4)


@pytest.fixture(scope="module")
def seq_model(work):
    return make_model(work, "seq", "--seed", "5", "--head", "sequence", "--labels", "NEGATIVE,POSITIVE")


def test_text_classification_matches_pytorch(work, seq_model):
    ref = dump_reference(seq_model, work / "dump-seq", texts=TEXTS)
    probs = softmax(ref["sequence_logits"].astype(np.float64))
    clf = roberta_cpp.pipeline("sentiment-analysis", model=seq_model)
    labels = ["NEGATIVE", "POSITIVE"]
    results = clf(TEXTS)
    for p, r in zip(probs, results):
        assert r == {"label": labels[int(p.argmax())], "score": pytest.approx(p.max(), abs=1e-5)}
    # transformers' shapes: one text without top_k -> a list of one dict; with top_k a list
    one = clf(TEXTS[0])
    assert isinstance(one, list) and len(one) == 1 and one[0]["label"] == results[0]["label"]
    every = clf(TEXTS[0], top_k=None)
    assert [d["label"] for d in every] == sorted(labels, key=lambda l: -probs[0][labels.index(l)])
    assert sum(d["score"] for d in every) == pytest.approx(1, abs=1e-5)
    assert len(clf(TEXTS[:2], top_k=1)[0]) == 1
    with pytest.warns(UserWarning, match="return_all_scores` is now deprecated"):  # (transformers 4.x's warning)
        unsorted = clf(TEXTS[0], return_all_scores=True)[0]
    assert [d["label"] for d in unsorted] == labels
    pair = clf({"text": "A man plays.", "text_pair": "Someone makes music."})
    assert set(pair) == {"label", "score"}
    # transformers' input forms of a pair: [[[a, b]]] is one pair (its legacy form), [[a, b]] is refused
    assert clf([[["A man plays.", "Someone makes music."]]]) == [pair]
    assert clf(t for t in TEXTS[:2]) == results[:2]  # a generator of inputs, as transformers streams them

    class MapStyle:  # a map-style dataset (torch's Dataset, transformers' KeyDataset): indexed, no __iter__
        def __getitem__(self, i):
            return TEXTS[i]

        def __len__(self):
            return 2

    assert clf(MapStyle()) == results[:2]
    from types import MappingProxyType
    assert clf(MappingProxyType({"text": "A man plays.", "text_pair": "Someone makes music."})) == pair
    with pytest.raises(ValueError, match="text_pair"):
        clf([["A man plays.", "Someone makes music."]])
    raw = clf(TEXTS[0], function_to_apply="none", top_k=None)
    assert {d["label"]: d["score"] for d in raw} == pytest.approx(dict(zip(labels, ref["sequence_logits"][0])), abs=1e-4)


def test_zero_shot_matches_pytorch(work):
    path = make_model(work, "nli", "--seed", "6", "--head", "sequence", "--labels", "CONTRADICTION,NEUTRAL,ENTAILMENT")
    zs = roberta_cpp.pipeline("zero-shot-classification", model=path)
    text, labels = "My phone broke and I need help now!", ["urgent", "not urgent", "phone"]
    tok = zs.tokenizer
    ids = [tok.encode(text, f"This example is {l}.").ids for l in labels]
    ref = dump_reference(path, work / "dump-nli", ids=ids)
    entail = ref["sequence_logits"][:, 2].astype(np.float64)
    scores = softmax(entail)
    r = zs(text, candidate_labels=labels)
    assert list(r) == ["sequence", "labels", "scores"] and r["sequence"] == text
    order = list(np.argsort(-scores))
    assert r["labels"] == [labels[i] for i in order]
    np.testing.assert_allclose(r["scores"], scores[order], atol=1e-5)
    multi = zs(text, ",".join(labels), multi_label=True)  # comma-separated labels, positional
    pair = ref["sequence_logits"][:, [0, 2]].astype(np.float64)
    independent = softmax(pair)[:, 1]
    assert dict(zip(multi["labels"], multi["scores"])) == pytest.approx(dict(zip(labels, independent)), abs=1e-5)
    assert isinstance(zs([text, text], labels), list)


def test_token_classification_matches_pytorch(work):
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    path = make_model(work, "ner", "--seed", "7", "--head", "token", "--labels", ",".join(labels))
    text = "Angela Merkel visited New York on Monday."
    ref = dump_reference(path, work / "dump-ner", texts=[text])
    probs = softmax(ref["token_logits"][0].astype(np.float64))
    ner = roberta_cpp.pipeline("ner", model=path)
    enc = ner.tokenizer.encode(text)
    want = []
    for i in range(1, len(enc) - 1):
        label = labels[int(probs[i].argmax())]
        if label != "O":
            want.append((label, probs[i].max(), i, enc.tokens[i], *enc.offsets[i]))
    got = ner(text)
    assert all(list(e) == ["entity", "score", "index", "word", "start", "end"] for e in got)
    assert [(e["entity"], e["index"], e["word"], e["start"], e["end"]) for e in got] == \
        [(w[0], w[2], w[3], w[4], w[5]) for w in want]
    np.testing.assert_allclose([e["score"] for e in got], [w[1] for w in want], atol=1e-5)
    grouped = ner(text, aggregation_strategy="simple")
    assert all(list(e) == ["entity_group", "score", "word", "start", "end"] for e in grouped)
    for e in grouped:
        assert e["entity_group"] in ("PER", "LOC") and text[e["start"]:e["end"]].strip() == e["word"].strip()


def test_token_classification_split_into_words_matches_pytorch(work, caplog):
    """ner(words, is_split_into_words=True) against PyTorch's token logits on the ids HF's tokenizer gives
    the words (tests/data/hf/pretokenized.jsonl, add_prefix_space as the model folder sets it) and
    transformers' rule: each token's offsets in its word, moved by the word's start in " ".join(words)."""
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    path = make_model(work, "ner-words", "--seed", "9", "--head", "token", "--labels", ",".join(labels))
    config = path / "tokenizer_config.json"
    settings = json.loads(config.read_text()) if config.exists() else {}
    config.write_text(json.dumps({**settings, "add_prefix_space": True}))
    words = ["Angela", "Merkel", "visited", "New", "York", "."]
    with open(Path(__file__).parents[2] / "tests" / "data" / "hf" / "pretokenized.jsonl", encoding="utf-8") as f:
        [hf] = [r for r in map(json.loads, f) if r["variant"] == "aps" and r["words"] == words
                and r["pair_words"] is None and r["add_special_tokens"] and r["truncation"] is None]
    ref = dump_reference(path, work / "dump-ner-words", ids=[hf["ids"]])
    probs = softmax(ref["token_logits"][0].astype(np.float64))

    def expected(delimiter):
        starts = [len(delimiter.join(words[:w] + [""])) if w else 0 for w in range(len(words))]
        want = []
        for i, w in enumerate(hf["word_ids"]):
            label = labels[int(probs[i].argmax())]
            if w >= 0 and label != "O":
                s, e = hf["offsets"][i]
                want.append({"entity": label, "score": probs[i].max(), "index": i, "word": hf["tokens"][i],
                             "start": s + starts[w], "end": e + starts[w]})
        return want

    def same(got, want):
        assert [{k: v for k, v in g.items() if k != "score"} for g in got] == \
            [{k: v for k, v in w.items() if k != "score"} for w in want]
        np.testing.assert_allclose([g["score"] for g in got], [w["score"] for w in want], atol=1e-5)

    ner = roberta_cpp.pipeline("ner", model=path)
    assert len(expected(" ")) >= 2
    one = ner(words, is_split_into_words=True)
    assert isinstance(one, list) and len(one) == 1  # one list of words: a list of one result, as transformers
    same(one[0], expected(" "))
    same(ner(words, is_split_into_words=True, delimiter="--")[0], expected("--"))
    batch = ner([words, words[:2], []], is_split_into_words=True)
    assert len(batch) == 3 and batch[0] == one[0] and batch[2] == []
    grouped = ner(words, is_split_into_words=True, aggregation_strategy="simple")[0]
    sentence = " ".join(words)
    for e in grouped:
        assert sentence[e["start"]:e["end"]].strip() == e["word"].strip()
    # windows of words: model_max_length 6 reads the 7 tokens in windows of 4 (stride 2)
    short = work / "models" / "ner-words-short"
    if short.exists():
        shutil.rmtree(short)
    shutil.copytree(path, short)
    (short / "tokenizer_config.json").write_text(json.dumps({**settings, "add_prefix_space": True,
                                                            "model_max_length": 6}))
    windowed = roberta_cpp.pipeline("ner", model=short)(words, is_split_into_words=True, aggregation_strategy="simple",
                                                        stride=2, ignore_labels=[])[0]
    assert windowed and all(sentence[e["start"]:e["end"]].strip() == e["word"].strip() for e in windowed)
    assert {e["start"] for e in windowed} >= {0, sentence.index(".")}  # the first word and the last read
    cut = roberta_cpp.pipeline("ner", model=short)(words, is_split_into_words=True, aggregation_strategy="simple",
                                                   ignore_labels=[])[0]
    assert max(e["end"] for e in cut) < sentence.index(".")  # without a stride: cut at 4 tokens
    # not split: the list is a batch of texts, each word a text (transformers' default)
    assert len(ner(words)) == len(words)
    # transformers' __call__ sets is_split_into_words on every call: given at construction it counts for nothing
    with caplog.at_level(logging.WARNING, logger="roberta_cpp"):
        at_construction = roberta_cpp.pipeline("ner", model=path, is_split_into_words=True, delimiter="-")
    assert "is_split_into_words, delimiter given at construction is ignored" in caplog.text
    assert at_construction(words) == ner(words)
    with pytest.raises(ValueError, match="At least one input is required"):
        ner([], is_split_into_words=True)
    with pytest.raises(ValueError, match="must be a list of tokens"):
        ner("Angela Merkel", is_split_into_words=True)
    with pytest.raises(TypeError, match=r"inputs\[1\]"):
        ner([words, ["ok", 3]], is_split_into_words=True)
    # a stride without an aggregation: every window's tokens, a token read by two windows once (the
    # golden tests check the choice against transformers' code); "none" given with it is refused, as there
    tokens = roberta_cpp.pipeline("ner", model=short)(words, is_split_into_words=True, stride=2, ignore_labels=[])[0]
    assert [(e["start"], e["end"]) for e in tokens] == sorted({(e["start"], e["end"]) for e in tokens})
    assert len(tokens) == len(hf["ids"]) - 2 and tokens[-1]["end"] == len(sentence)
    assert max(e["index"] for e in tokens) <= 4  # counted in windows of 4 text tokens
    with pytest.raises(ValueError, match='stride.*aggregation_strategy="(AggregationStrategy.NONE|none)"'):
        ner(words, is_split_into_words=True, stride=2, aggregation_strategy="none")
    with pytest.raises(ValueError, match='stride.*aggregation_strategy="(AggregationStrategy.NONE|none)"'):
        roberta_cpp.pipeline("ner", model=short, stride=2, aggregation_strategy="NONE")
    # (transformers checks the construction's and each call's arguments on their own, and takes
    # None as not given)
    by_call = roberta_cpp.pipeline("ner", model=short, aggregation_strategy="none", ignore_labels=[])
    assert by_call(words, is_split_into_words=True, stride=2)[0] == tokens
    grouped_short = roberta_cpp.pipeline("ner", model=short, aggregation_strategy="simple", ignore_labels=[])
    assert grouped_short(words, is_split_into_words=True, stride=2, aggregation_strategy=None,
                         ignore_labels=None)[0] == windowed


def test_question_answering_format(work):
    path = make_model(work, "qa", "--seed", "8", "--head", "qa")
    qa = roberta_cpp.pipeline("question-answering", model=path)
    context = "My name is Wolfgang and I live in Berlin."
    a = qa(question="Where do I live?", context=context)
    assert list(a) == ["score", "start", "end", "answer"] and a["answer"] == context[a["start"]:a["end"]]
    assert 0 < a["score"] <= 1
    assert qa({"question": "Where do I live?", "context": context}) == a
    assert qa("Where do I live?", context) == a
    top = qa(question="Where do I live?", context=context, top_k=3)
    assert isinstance(top, list) and len(top) == 3 and top[0] == a
    assert [t["score"] for t in top] == sorted((t["score"] for t in top), reverse=True)
    two = qa(question=["Who am I?", "Where?"], context=context)
    assert isinstance(two, list) and len(two) == 2
    # a generator of examples, as transformers streams them (answered here as a list)
    assert qa({"question": q, "context": context} for q in ["Who am I?", "Where?"]) == two
    assert qa({"question": q, "context": context} for q in ["Where do I live?"]) == [a]  # a stream: a list
    # transformers' QuestionAnsweringPipeline: exactly one example, however given, gives its answer
    assert qa(question=["Where do I live?"], context=[context]) == a
    assert qa(question="Where do I live?", context=context, batch_size=4, num_workers=0) == a
    # transformers' postprocess returns answers[0] whenever one answer is left, whatever top_k: here
    # the only two one-token spans are both "the", merged into one answer.
    one = qa(question="Which?", context="the the", top_k=2, max_answer_len=1, align_to_words=False)
    assert isinstance(one, dict) and one["answer"] == "the"
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        qa(question="Where do I live?", context=context, top_k=0)
    with pytest.raises(TypeError, match="context is NoneType"):
        qa(question="Where do I live?", context=[None])


def test_text_classification_truncation_strategies_match_pytorch(work, seq_model):
    """truncation="only_first" / "only_second" / True and max_length go to the tokenizer, as
    transformers' text-classification passes them: the scores are PyTorch's on the ids the tokenizer
    (HF's results, tests/tokenizer_test.cpp) cuts that way."""
    a, b = "one two three four five " * 60, "six seven eight nine ten " * 60
    tok = roberta_cpp.Tokenizer.from_pretrained(seq_model)
    clf = roberta_cpp.pipeline("text-classification", model=seq_model)
    # (truncation given, max_length given); max_length alone truncates longest_first, as the tokenizer does
    cases = [("only_first", None), ("only_second", None), (True, None), ("only_second", 400), (None, 300)]
    limit = tok.model_max_length
    ids = [tok(a, b, truncation=t if t is not None else True, max_length=m or limit)["input_ids"] for t, m in cases]
    assert len({tuple(i) for i in ids}) == 5  # five different cuts
    ref = dump_reference(seq_model, work / "dump-tc-trunc", ids=ids)
    probs = softmax(ref["sequence_logits"].astype(np.float64))
    for (t, m), p in zip(cases, probs):
        kwargs = {**({"truncation": t, "padding": True} if t is not None else {}), **({"max_length": m} if m else {})}
        got = clf({"text": a, "text_pair": b}, top_k=None, **kwargs)
        assert {d["label"]: d["score"] for d in got} == pytest.approx({"NEGATIVE": p[0], "POSITIVE": p[1]}, abs=1e-5)
    with pytest.raises(ValueError, match="truncation='middle'"):
        clf("x", truncation="middle")


def test_fill_mask_truncation_matches_pytorch(work, mlm_model):
    """tokenizer_kwargs={"truncation": True}, as transformers' fill-mask: the text cut to the
    model's 512 tokens (<s>, the first 510 tokens, </s>) and filled as PyTorch fills those ids."""
    text = "The capital of France is <mask>. " + "It is a city. " * 200
    tok = roberta_cpp.Tokenizer.from_pretrained(mlm_model)
    full = list(tok.encode(text).ids)
    assert len(full) > 600
    ids = full[:511] + [full[-1]]
    mask_at = ids.index(tok.token_to_id("<mask>"))
    ref = dump_reference(mlm_model, work / "dump-fill-trunc", ids=[ids])
    probs = softmax(ref["logits"][0, mask_at].astype(np.float64))
    fill = roberta_cpp.pipeline("fill-mask", model=mlm_model)
    got = fill(text, tokenizer_kwargs={"truncation": True}, top_k=3)
    best = np.argsort(-probs, kind="stable")[:3]
    assert [c["token"] for c in got] == [int(t) for t in best]
    assert [c["score"] for c in got] == pytest.approx([probs[t] for t in best], abs=1e-5)
    filled = list(ids)
    filled[mask_at] = int(best[0])
    assert got[0]["sequence"] == tok.decode(filled, skip_special_tokens=True)
    with pytest.raises(ValueError, match="(?s)tokens.*at most 512"):
        fill(text)  # without truncation: an error, as transformers' model would fail on it
    with pytest.raises(ValueError, match="no <mask>"):  # the <mask> cut away
        fill("It is a city. " * 200 + "<mask>", tokenizer_kwargs={"truncation": True})


def test_pipeline_arguments_as_transformers_takes_them(mlm_model, seq_model):
    """batch_size / num_workers at construction and per call; top_k=None; the results of batches
    equal those of one text at a time; bad values are clear errors naming the argument."""
    fill = roberta_cpp.pipeline("fill-mask", model=mlm_model, batch_size=2, num_workers=0)
    one_by_one = [fill(t) for t in MASKED]
    assert fill(MASKED) == one_by_one and fill(MASKED, batch_size=1) == one_by_one
    assert fill(MASKED[0], top_k=None) == fill(MASKED[0])
    two = roberta_cpp.pipeline("fill-mask", model=mlm_model, top_k=2)
    assert len(two(MASKED[0], top_k=None)) == 2  # None per call keeps the constructor's top_k
    clf = roberta_cpp.pipeline("text-classification", model=seq_model, batch_size=8)
    assert clf(TEXTS[:3], batch_size=2) == clf(TEXTS[:3])  # accepted (the classifier passes 16,384 tokens at a time)
    # top_k=0: transformers' probs.topk(0) and dict_scores[:0], an empty list for each mask / text;
    # the inputs are still checked
    two_masks = "The <mask> sat on the <mask>."
    assert fill(MASKED[0], top_k=0) == [] and fill(two_masks, top_k=0) == [[], []]
    assert fill([MASKED[0], two_masks], top_k=0) == [[], [[], []]]
    with pytest.raises(ValueError, match="no <mask>"):
        fill("no mask", top_k=0)
    assert clf(TEXTS[0], top_k=0) == [] and clf(TEXTS[:2], top_k=0) == [[], []]
    for bad, kind, match in [(dict(top_k=-1), ValueError, "top_k must be at least 0"),
                             (dict(top_k="3"), TypeError, "top_k must be an integer"),
                             (dict(batch_size=0), ValueError, "batch_size must be at least 1"),
                             (dict(targets=[None]), TypeError, r"targets\[0\] is NoneType"),
                             (dict(tokenizer_kwargs={"padding": True}), ValueError, "padding")]:
        with pytest.raises(kind, match=match):
            fill(MASKED[0], **bad)
    with pytest.raises(TypeError, match=r"inputs\[1\] is NoneType, not str"):
        fill([MASKED[0], None])
    with pytest.raises(roberta_cpp.InvalidInputError, match=r"inputs is not valid Unicode: a lone surrogate"):
        fill("a \ud800 <mask>")
    # errors of one of several inputs count from 1, in every pipeline
    with pytest.raises(ValueError, match="input 2: no <mask>"):
        fill([MASKED[0], "no mask"])
    with pytest.raises(ValueError, match="input 2: the text has"):
        clf(["fine", "word " * 600])
    # transformers' loading arguments: torch dtypes pick the weights, the hub ones change nothing
    torch = pytest.importorskip("torch")
    bf16 = roberta_cpp.pipeline("fill-mask", model=mlm_model, dtype="bfloat16")(MASKED[0])
    for kwargs in (dict(torch_dtype=torch.bfloat16), dict(dtype=torch.bfloat16), dict(torch_dtype="bfloat16"),
                   dict(model_kwargs={"torch_dtype": torch.bfloat16})):
        assert roberta_cpp.pipeline("fill-mask", model=mlm_model, **kwargs)(MASKED[0]) == bf16, kwargs
    same = roberta_cpp.pipeline("fill-mask", model=mlm_model, device=torch.device("cpu"), device_map="cpu",
                                trust_remote_code=True, revision="main", use_fast=True, token=None,
                                torch_dtype="auto")
    assert same(MASKED[0]) == fill(MASKED[0])
    assert roberta_cpp.pipeline("fill-mask", model=mlm_model, dtype="bf16")(MASKED[0]) == bf16  # our short names
    for bad, match in [(dict(torch_dtype=torch.float16), "float16"), (dict(device=0), "CPU only"),
                       (dict(torch_dtype=torch.bfloat16, model_kwargs={"torch_dtype": torch.float32}), "both"),
                       (dict(model_kwargs={"output_attentions": True}), "output_attentions"),
                       (dict(config={}), "config")]:
        with pytest.raises(ValueError, match=match):
            roberta_cpp.pipeline("fill-mask", model=mlm_model, **bad)


def test_none_and_deprecated_arguments_per_call_as_transformers(work, mlm_model, seq_model, caplog):
    """transformers' _sanitize_parameters reads the construction's and each call's arguments on
    their own and skips the ones given as None: the construction's value stays. Its deprecated
    names (QA's topk, zero-shot's multi_class) count within the call they are given in."""
    raw = roberta_cpp.pipeline("text-classification", model=seq_model, function_to_apply="none", top_k=None)
    logits = raw(TEXTS[0])
    assert raw(TEXTS[0], function_to_apply=None, return_all_scores=None) == logits
    assert logits != roberta_cpp.pipeline("text-classification", model=seq_model, top_k=None)(TEXTS[0])
    # a call's return_all_scores replaces a top_k given at construction (every label, best first)
    best = roberta_cpp.pipeline("text-classification", model=seq_model, top_k=1)
    assert len(best(TEXTS[0])[0]) == 1
    with pytest.warns(UserWarning, match="return_all_scores` is now deprecated"):
        every = best(TEXTS[0], return_all_scores=True)
    assert len(every) == 1 and len(every[0]) == 2 and every[0][0]["score"] >= every[0][1]["score"]
    qa_path = make_model(work, "qa", "--seed", "8", "--head", "qa")
    example = dict(question="Where do I live?", context="My name is Wolfgang and I live in Berlin, a city of trains.")
    qa = roberta_cpp.pipeline("question-answering", model=qa_path, top_k=2, max_answer_len=3)
    two = qa(**example)
    assert len(two) == 2 and qa(**example, top_k=None, max_answer_len=None, doc_stride=None) == two
    with pytest.warns(UserWarning, match="topk parameter is deprecated"):
        assert len(qa(**example, topk=3)) == 3  # topk replaces the construction's top_k ...
    assert isinstance(qa(**example, topk=3, top_k=1), dict)  # ... but not a top_k given beside it
    assert qa(**example, padding="max_length") == two  # accepted, as transformers (no answer changes)
    nli = make_model(work, "nli", "--seed", "6", "--head", "sequence", "--labels", "CONTRADICTION,NEUTRAL,ENTAILMENT")
    zs = roberta_cpp.pipeline("zero-shot-classification", model=nli, multi_label=True)
    labels = ["politics", "sports", "music"]
    independent = zs(TEXTS[0], labels)["scores"]
    with caplog.at_level(logging.WARNING, logger="roberta_cpp"):
        exclusive = zs(TEXTS[0], labels, multi_class=False)["scores"]  # replaces the construction's multi_label
    assert "multi_class" in caplog.text
    assert sum(exclusive) == pytest.approx(1.0, abs=1e-5) and sum(independent) != pytest.approx(1.0, abs=1e-3)
    fe = roberta_cpp.pipeline("feature-extraction", model=mlm_model, tokenize_kwargs={"truncation": True,
                                                                                     "max_length": 8})
    assert len(fe(TEXTS[4], truncation=None)[0]) == 8  # the construction's tokenize_kwargs stay
    # a call's tokenizer arguments replace the construction's of the same name, one by one
    assert len(fe(TEXTS[4], tokenize_kwargs={"max_length": 10})[0]) == 10
    assert len(fe(TEXTS[4], truncation=False)[0]) > 10
    assert len(fe(TEXTS[4], tokenize_kwargs={"padding": True})[0]) == 8
    with pytest.raises(ValueError, match="truncation parameter defined twice"):
        fe(TEXTS[4], truncation=True, tokenize_kwargs={"truncation": True})
    # the tokenizer's rule: max_length with truncation None (and no padding) truncates
    assert len(fe(TEXTS[4], tokenize_kwargs={"truncation": None})[0]) == 8


def test_question_answering_matches_cli(work, roberta_binary):
    # The same answers as `roberta qa --json` (whose windows and spans equal HF's pipeline code on
    # the same logits: tests/pipelines_test.cpp), on a context long enough for several windows.
    path = make_model(work, "qa-cli", "--seed", "8", "--head", "qa")
    qa = roberta_cpp.pipeline("question-answering", model=path)
    context = " ".join(["My name is Wolfgang and I live in Berlin."] * 40)
    for kwargs, flags in [({}, []), ({"top_k": 3, "max_seq_len": 64, "doc_stride": 16},
                                     ["--top-k", "3", "--max-seq-len", "64", "--doc-stride", "16"])]:
        mine = qa(question="Where do I live?", context=context, **kwargs)
        cli = json.loads(run_cli(roberta_binary, "qa", "--model", path, "--json", "--question", "Where do I live?",
                                 "--context", context, *flags))
        mine, cli = (x if isinstance(x, list) else [x] for x in (mine, cli))
        assert len(mine) == len(cli)
        for m, c in zip(mine, cli):
            assert (m["start"], m["end"], m["answer"]) == (c["start"], c["end"], c["answer"])
            assert m["score"] == pytest.approx(c["score"], rel=1e-6)


def test_cross_encoder_matches_pytorch(work):
    path = make_model(work, "ce", "--seed", "9", "--head", "sequence", "--num-labels", "1")
    ce = roberta_cpp.CrossEncoder(path)
    query, docs = "How many people live in Berlin?", ["Berlin has 3.5 million people.", "Paris.", "Berlin is big."]
    ids = [ce_tok.ids for ce_tok in roberta_cpp.Tokenizer.from_pretrained(path).encode_batch([(query, d) for d in docs])]
    ref = dump_reference(path, work / "dump-ce", ids=ids)
    want = 1 / (1 + np.exp(-ref["sequence_logits"][:, 0].astype(np.float64)))
    scores = ce.predict([(query, d) for d in docs])
    assert scores.shape == (3,) and scores.dtype == np.float32
    np.testing.assert_allclose(scores, want, atol=1e-5)
    assert ce.predict((query, docs[0])) == pytest.approx(want[0], abs=1e-5)
    ranked = ce.rank(query, docs, return_documents=True)
    assert [r["corpus_id"] for r in ranked] == list(np.argsort(-want, kind="stable"))
    assert all(r["text"] == docs[r["corpus_id"]] for r in ranked)
    assert len(ce.rank(query, docs, top_k=2)) == 2 and "text" not in ce.rank(query, docs, top_k=1)[0]
    np.testing.assert_array_equal(ce.predict([(query, d) for d in docs], apply_softmax=True), np.ones(3, np.float32))
    # sentence-transformers' constructor arguments in its order; activation_fn a torch module or
    # any callable on the logits
    torch = pytest.importorskip("torch")
    raw = ref["sequence_logits"][:, 0].astype(np.float64)
    tok = roberta_cpp.Tokenizer.from_pretrained(path)
    assert tok([(query, docs[0])])["input_ids"][0] == ids[0]  # transformers' batch of pairs
    same = roberta_cpp.CrossEncoder(path, 1, 64, torch.nn.Identity())  # (positional: version 5.3's order)
    assert same.max_seq_length == 64 and isinstance(same.activation_fn, torch.nn.Identity)
    np.testing.assert_allclose(same.predict([(query, d) for d in docs]), raw, atol=1e-4)
    np.testing.assert_allclose(ce.predict([(query, d) for d in docs], activation_fn=torch.tanh), np.tanh(raw), atol=1e-5)
    double = lambda x: x * 2  # noqa: E731
    np.testing.assert_allclose(ce.predict([(query, d) for d in docs], activation_fn=double), 2 * raw, atol=1e-4)
    # since sentence-transformers 5.4 a call's activation_fn is for that call only
    assert isinstance(ce.activation_fn, torch.nn.Sigmoid)
    np.testing.assert_allclose(ce.predict([(query, d) for d in docs]), want, atol=1e-5)
    np.testing.assert_allclose(ce.predict([(query, d) for d in docs], activation_fn="torch.nn.modules.activation.Sigmoid"),
                               want, atol=1e-5)  # the full name sentence-transformers writes into config.json
    with pytest.raises(ValueError, match="num_labels=2: the checkpoint's head has 1"):
        roberta_cpp.CrossEncoder(path, num_labels=2)
    with pytest.raises(TypeError, match="num_labels must be an integer"):
        roberta_cpp.CrossEncoder(path, "bfloat16")
    # sentence-transformers' other names: activation_fct (the old activation_fn) and num_workers
    # (no effect) in predict / rank, default_activation_function and the other renamed arguments
    pairs = [(query, d) for d in docs]
    np.testing.assert_allclose(ce.predict(pairs, activation_fct=torch.nn.Sigmoid(), num_workers=2), want, atol=1e-5)
    ranked = ce.rank(query, docs, activation_fct=torch.nn.Identity())
    assert [r["corpus_id"] for r in ranked] == list(np.argsort(-raw, kind="stable"))
    old = roberta_cpp.CrossEncoder(model_name=path, default_activation_function=torch.nn.Identity(),
                                   automodel_args={"torch_dtype": "float32"}, cache_dir="/nonexistent",
                                   classifier_dropout=0.1, device=torch.device("cpu"), backend="onnx")
    np.testing.assert_allclose(old.predict(pairs), raw, atol=1e-4)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        ce.predict(pairs, nonsense=1)
    # the activation as sentence-transformers holds it: a torch module, callable and settable
    fresh = roberta_cpp.CrossEncoder(path)
    assert isinstance(fresh.activation_fn, torch.nn.Sigmoid)
    np.testing.assert_allclose(fresh.activation_fn(torch.tensor(raw)).numpy(), want, atol=1e-6)
    fresh.activation_fn = torch.nn.Identity()
    np.testing.assert_allclose(fresh.predict(pairs), raw, atol=1e-4)
    # rank's scores are Python floats (sentence-transformers 6), convert_to_tensor a no-op
    assert all(type(r["score"]) is float for r in ce.rank(query, docs))
    assert ce.rank(query, docs, convert_to_tensor=True) == ce.rank(query, docs)
    assert json.loads(json.dumps(ce.rank(query, docs))) == ce.rank(query, docs)
    assert fresh.config.num_labels == 1 and fresh.config.id2label == {0: "LABEL_0"}
    assert fresh.tokenizer.encode(query, docs[0]).ids == ids[0]


def test_pipeline_attributes_as_transformers(seq_model, mlm_model):
    """What code around a transformers pipeline reads: the task as given, model.config's fields as
    attributes, the tokenizer's special tokens (those of tokenizer.json), device, predict."""
    clf = roberta_cpp.pipeline("sentiment-analysis", model=seq_model)
    assert clf.task == "sentiment-analysis"  # the name given, as transformers keeps it
    assert clf.model.config.id2label == {0: "NEGATIVE", 1: "POSITIVE"} == clf.model.config["id2label"]
    assert clf.model.config.num_labels == 2
    with pytest.raises(AttributeError, match="no field"):
        clf.model.config.no_such_field
    assert clf.predict(TEXTS[0]) == clf(TEXTS[0]) and str(clf.device) == "cpu" and clf.framework == "pt"
    tok = roberta_cpp.pipeline("fill-mask", model=mlm_model).tokenizer
    with open(Path(mlm_model) / "tokenizer.json", encoding="utf-8") as f:
        added = {t["content"]: t["id"] for t in json.load(f)["added_tokens"]}
    assert (tok.mask_token, tok.cls_token, tok.sep_token, tok.bos_token, tok.eos_token, tok.pad_token,
            tok.unk_token) == ("<mask>", "<s>", "</s>", "<s>", "</s>", "<pad>", "<unk>")
    assert (tok.mask_token_id, tok.cls_token_id, tok.sep_token_id, tok.unk_token_id) == (
        added["<mask>"], added["<s>"], added["</s>"], added["<unk>"])
    assert tok.convert_ids_to_tokens([added["<s>"], added["<mask>"]]) == ["<s>", "<mask>"]
    assert tok.convert_ids_to_tokens(added["<s>"]) == "<s>" and tok.convert_tokens_to_ids("<mask>") == added["<mask>"]
    assert tok.convert_tokens_to_ids(["no such token here"]) == [added["<unk>"]]
    with open(Path(mlm_model) / "tokenizer.json", encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    assert tok.is_fast and tok.name_or_path == str(mlm_model) and tok.vocab_size == len(vocab)


def test_task_registry(mlm_model, monkeypatch):
    assert roberta_cpp.pipeline(model=mlm_model).task == "fill-mask"  # from config.json's architectures
    with pytest.raises(KeyError, match="Unknown task"):
        roberta_cpp.pipeline("summarization", model=mlm_model)
    # a task whose C++ class this build lacks
    monkeypatch.setitem(roberta_cpp.SUPPORTED_TASKS, "fill-mask",
                        roberta_cpp.pipelines.Task(roberta_cpp.FillMaskPipeline, "masked_lm", "NoSuchClass"))
    with pytest.raises(NotImplementedError, match="NoSuchClass"):
        roberta_cpp.pipeline("fill-mask", model=mlm_model)


def expect_fill_mask_as_pytorch(fill, text, ids, ref, top_k=3):
    """fill(text)'s candidates at each mask of `ids` are PyTorch's (`ref`, dump_reference's logits):
    ids, probabilities, and token_str as transformers decodes it (skip_special_tokens=False, so an
    <unk> stays "<unk>"). Returns the candidates per mask."""
    tok = fill.tokenizer
    got = fill(text, top_k=top_k)
    masks = [i for i, t in enumerate(ids) if t == tok.mask_token_id]
    per_mask = [got] if len(masks) == 1 else got
    assert len(per_mask) == len(masks)
    for at, candidates in zip(masks, per_mask):
        probs = softmax(ref["logits"][0, at].astype(np.float64))
        best = np.argsort(-probs, kind="stable")[:top_k]
        assert [c["token"] for c in candidates] == [int(t) for t in best]
        assert [c["score"] for c in candidates] == pytest.approx([probs[t] for t in best], abs=1e-5)
        assert [c["token_str"] for c in candidates] == [tok.decode([int(t)], skip_special_tokens=False) for t in best]
    return per_mask


def test_wordpiece_checkpoint_fill_mask_and_features_match_pytorch(work, mlm_model):
    """A checkpoint with a BERT-style WordPiece tokenizer (as klue/roberta-* ship one):
    tests/data/hf/wordpiece's tokenizer.json beside a random model. The ids are HF's (its
    goldens), [MASK] is the mask, and fill-mask's scores and feature-extraction's vectors are
    PyTorch's for those ids."""
    from conftest import SOURCE
    model = make_model(work, "wordpiece", "--preset", "small-vocab", "--seed", "5")
    shutil.copy(SOURCE / "tests" / "data" / "hf" / "wordpiece" / "tokenizer.json", model / "tokenizer.json")
    goldens = {}
    for line in (SOURCE / "tests" / "data" / "hf" / "wordpiece.jsonl").read_text(encoding="utf-8").split("\n")[:-1]:
        r = json.loads(line)
        if r["variant"] == "base" and "a" in r and r["add_special_tokens"] and r["truncation"] is None:
            goldens[r["a"] if r["b"] is None else f'{r["a"]} / {r["b"]}'] = r
    fill = roberta_cpp.pipeline("fill-mask", model=str(model))
    tok = fill.tokenizer
    assert (tok.mask_token, tok.unk_token, tok.cls_token, tok.sep_token, tok.pad_token) == \
        ("[MASK]", "[UNK]", "[CLS]", "[SEP]", "[PAD]")
    roberta_tok = roberta_cpp.Tokenizer.from_pretrained(mlm_model)
    assert tok.is_wordpiece and not roberta_tok.is_wordpiece
    assert not tok.do_lower_case and not roberta_tok.do_lower_case  # (the test tokenizer is cased)
    assert list(roberta_tok("a", "b").keys()) == ["input_ids", "attention_mask"]  # as RobertaTokenizer
    # as BertTokenizer: token_type_ids among the keys, text B's 1 (HF's goldens)
    pair = goldens.get("hello world / New York")
    enc = tok("hello world", "New York")
    assert list(enc.keys()) == ["input_ids", "token_type_ids", "attention_mask"]
    assert enc["token_type_ids"] == [0, 0, 0, 0, 1, 1, 1] and enc["input_ids"] == pair["ids"]
    # the tokenizers package's enable_padding() pads with the tokenizer's own [PAD]
    padder = roberta_cpp.Tokenizer.from_pretrained(model)
    padder.enable_padding(length=9)
    padded = padder.encode("hello world")
    assert padded.ids[-4:] == [tok.pad_token_id] * 4 and padded.tokens[-1] == "[PAD]"
    for text in ["hello[MASK]world", "[MASK] is [MASK]."]:
        ids = goldens[text]["ids"]
        assert list(tok.encode(text).ids) == ids
        expect_fill_mask_as_pytorch(fill, text, ids, dump_reference(model, work / "dump-wordpiece", ids=[ids]))
    features = roberta_cpp.pipeline("feature-extraction", model=str(model))
    text = "안녕하세요 서울은 한국의 수도입니다."
    ref = dump_reference(model, work / "dump-wordpiece-features", ids=[goldens[text]["ids"]])
    np.testing.assert_allclose(np.asarray(features(text)[0]), ref["hidden_states_2"][0], atol=1e-4)  # 2 layers


def test_xlm_roberta_checkpoint_fill_mask_and_features_match_pytorch(work):
    """An XLM-RoBERTa checkpoint (model_type xlm-roberta) with a SentencePiece Unigram tokenizer
    (tests/data/hf/unigram's tokenizer.json, as transformers' XLMRobertaConverter writes it) beside a
    random model: the ids are HF's (its goldens), <mask> is found after nmt_nfkc too (＜mask＞),
    fill-mask's scores are PyTorch's for those ids and its strings HF's Metaspace decoder's, and
    feature-extraction's vectors are PyTorch's."""
    from conftest import SOURCE
    hf = SOURCE / "tests" / "data" / "hf"
    model = make_model(work, "xlm-roberta", "--model-type", "xlm-roberta", "--vocab-size", "2002", "--seed", "11",
                       "--tokenizer-dir", str(hf / "unigram"))
    goldens = {}
    for line in (hf / "unigram.jsonl").read_text(encoding="utf-8").split("\n")[:-1]:
        r = json.loads(line)
        if r["variant"] == "base" and r["b"] is None and r["add_special_tokens"] and r["truncation"] is None:
            goldens[r["a"]] = r
    fill = roberta_cpp.pipeline("fill-mask", model=str(model))
    tok = fill.tokenizer
    assert (tok.mask_token, tok.unk_token, tok.cls_token, tok.sep_token, tok.pad_token) == \
        ("<mask>", "<unk>", "<s>", "</s>", "<pad>")
    assert tok.is_unigram and not tok.is_wordpiece
    assert not roberta_cpp.Tokenizer.from_pretrained(SOURCE / "tests" / "data" / "hf" / "wordpiece").is_unigram
    assert list(tok("a", "b").keys()) == ["input_ids", "attention_mask"]  # as XLMRobertaTokenizer
    nfkc = "\uff21\uff22\uff43\uff11 \ufb01ne \u2460 \u2122 \u00bd \u216b \u212b \u01c5 \u337f \uff1cmask\uff1e"
    for text in ["Hello <mask>!", "x<mask>y <mask><mask>", nfkc]:
        ids = goldens[text]["ids"]
        assert list(tok.encode(text).ids) == ids
        assert tok.decode(ids) == goldens[text]["decoded_skip_special"]
        assert tok.decode(ids, skip_special_tokens=False) == goldens[text]["decoded"]
        got = expect_fill_mask_as_pytorch(fill, text, ids, dump_reference(model, work / "dump-xlmr", ids=[ids]))
        assert all("\u2581" not in c["token_str"] for candidates in got for c in candidates)
    features = roberta_cpp.pipeline("feature-extraction", model=str(model))
    text = "Don\u2019t stop \u2014 \u201cquoted\u201d and \u2018single\u2019 words\u2026 1234567890 3.14 1,000"
    ref = dump_reference(model, work / "dump-xlmr-features", ids=[goldens[text]["ids"]])
    np.testing.assert_allclose(np.asarray(features(text)[0]), ref["hidden_states_2"][0], atol=1e-4)  # 2 layers
