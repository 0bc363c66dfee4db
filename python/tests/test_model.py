"""roberta_cpp.Model.forward against the PyTorch reference (tools/dump_reference.py) on right- and
left-padded batches, every head, and its input checks."""
import numpy as np
import pytest

import roberta_cpp
from conftest import TEXTS, dump_reference, make_model

ATOL, RTOL = 1e-4, 1e-3


def close(mine, ref, mask):
    """Within tolerance at the real positions, zero at the padding."""
    m = mask.astype(bool)
    np.testing.assert_allclose(mine[m], ref[m], atol=ATOL, rtol=RTOL)
    assert not mine[~m].any()


@pytest.fixture(scope="module")
def batch_ids(mlm_model):
    tok = roberta_cpp.Tokenizer.from_pretrained(mlm_model)
    return [e.ids for e in tok.encode_batch(TEXTS[:4])]


@pytest.mark.parametrize("padding", ["right", "left"])
def test_forward_matches_pytorch(work, mlm_model, batch_ids, padding):
    ref = dump_reference(mlm_model, work / f"dump-mlm-{padding}", ids=batch_ids, padding=padding)
    model = roberta_cpp.Model.from_pretrained(mlm_model)
    ids, mask = ref["input_ids"], ref["attention_mask"]
    out = model.forward(ids, attention_mask=mask, output_hidden_states=True)
    layers = model.config["num_hidden_layers"]
    assert set(out) == {"last_hidden_state", "hidden_states", "logits", "pooler_output"}
    assert isinstance(out["hidden_states"], tuple) and len(out["hidden_states"]) == layers + 1
    for i, h in enumerate(out["hidden_states"]):
        assert h.dtype == np.float32 and h.shape == ref[f"hidden_states_{i}"].shape
        close(h, ref[f"hidden_states_{i}"], mask)
    close(out["last_hidden_state"], ref[f"hidden_states_{layers}"], mask)
    close(out["logits"], ref["logits"], mask)
    rows = mask[:, 0] == 1  # HF's pooler reads position 0 whatever it holds (padding when left-padded)
    np.testing.assert_allclose(out["pooler_output"][rows], ref["pooler_output"][rows], atol=ATOL, rtol=RTOL)
    # the arrays own their memory (moved from C++, no copy left behind)
    assert out["last_hidden_state"].flags["C_CONTIGUOUS"] and out["last_hidden_state"].base is not None


@pytest.mark.parametrize("head,options,outputs", [
    ("sequence_classification", ["--head", "sequence", "--labels", "NEGATIVE,POSITIVE"], ["sequence_logits"]),
    ("token_classification", ["--head", "token", "--labels", "O,B-PER,I-PER"], ["token_logits"]),
    ("question_answering", ["--head", "qa"], ["start_logits", "end_logits"]),
])
def test_head_outputs_match_pytorch(work, batch_ids, head, options, outputs):
    path = make_model(work, f"head-{head}", "--seed", "11", *options)
    ref = dump_reference(path, work / f"dump-{head}", ids=batch_ids, padding="right")
    model = roberta_cpp.Model.from_pretrained(path)
    assert model.has_head(head) and not model.has_head("masked_lm")
    out = model.forward(ref["input_ids"], ref["attention_mask"])
    for name in outputs:
        if name == "sequence_logits":
            np.testing.assert_allclose(out[name], ref[name], atol=ATOL, rtol=RTOL)
        else:
            close(out[name], ref[name], ref["attention_mask"])


def test_default_mask_and_heads_argument(mlm_model, batch_ids):
    model = roberta_cpp.Model.from_pretrained(mlm_model)
    ids = np.array([batch_ids[0]])
    a = model.forward(ids)                       # no mask: every position is real
    b = model.forward(ids.astype(np.int32), np.ones_like(ids), heads=[])
    assert set(b) == {"last_hidden_state"}
    np.testing.assert_array_equal(a["last_hidden_state"], b["last_hidden_state"])


def test_forward_input_errors(mlm_model):
    model = roberta_cpp.Model.from_pretrained(mlm_model)
    with pytest.raises(ValueError, match="is not pad_token_id"):
        model.forward(np.array([[0, 31414, 2, 7]]), np.array([[1, 1, 1, 0]]))
    with pytest.raises(ValueError, match="vocab_size"):
        model.forward(np.array([[0, 10**6, 2]]))
    with pytest.raises(ValueError, match="2-D"):
        model.forward(np.array([0, 31414, 2]))
    with pytest.raises(TypeError):
        model.forward(np.array([[0.0, 1.5]]))
    with pytest.raises(ValueError, match="no token with attention_mask 1"):
        model.forward(np.array([[1, 1]]), np.array([[0, 0]]))
    with pytest.raises(ValueError, match="no sequence_classification head"):
        model.forward(np.array([[0, 2]]), heads=["sequence_classification"])
    with pytest.raises(roberta_cpp.Error):
        model.forward(np.array([[0, 2]]), np.array([[1, 2]]))


def test_fewer_layers_in_config_than_in_the_checkpoint(work, mlm_model, batch_ids, caplog):
    """config.json's num_hidden_layers below the checkpoint's: the first layers run, as in
    transformers (the reference builds only those), with a warning through Python's logging."""
    import json
    import shutil

    cut = work / "mlm-fewer-layers"
    if cut.exists():
        shutil.rmtree(cut)
    shutil.copytree(mlm_model, cut)
    config = json.loads((cut / "config.json").read_text())
    config["num_hidden_layers"] -= 1
    (cut / "config.json").write_text(json.dumps(config))
    ref = dump_reference(cut, work / "dump-mlm-fewer-layers", ids=batch_ids)
    with caplog.at_level("WARNING", logger="roberta_cpp"):
        model = roberta_cpp.Model.from_pretrained(cut)
    assert any("num_hidden_layers = " + str(config["num_hidden_layers"]) in r.getMessage() for r in caplog.records)
    out = model.forward(ref["input_ids"], attention_mask=ref["attention_mask"])
    close(out["last_hidden_state"], ref[f"hidden_states_{config['num_hidden_layers']}"], ref["attention_mask"])
