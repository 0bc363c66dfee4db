"""C++ roberta::Error kinds as Python exceptions."""
import json
import shutil

import pytest

import roberta_cpp


def test_exception_hierarchy():
    assert issubclass(roberta_cpp.InvalidInputError, roberta_cpp.Error)
    assert issubclass(roberta_cpp.InvalidInputError, ValueError)
    assert issubclass(roberta_cpp.ModelError, roberta_cpp.Error)
    assert not issubclass(roberta_cpp.ModelError, ValueError)
    assert issubclass(roberta_cpp.IoError, OSError)
    assert issubclass(roberta_cpp.NotFoundError, FileNotFoundError)
    assert issubclass(roberta_cpp.NotFoundError, roberta_cpp.IoError)


def test_missing_folder_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="model folder not found") as e:
        roberta_cpp.Model.from_pretrained(tmp_path / "nope")
    assert isinstance(e.value, roberta_cpp.NotFoundError)
    with pytest.raises(roberta_cpp.NotFoundError, match="tokenizer"):
        roberta_cpp.SentenceTransformer(tmp_path)


def test_missing_weights_is_file_not_found(tmp_path, mlm_model):
    copy = tmp_path / "m"
    shutil.copytree(mlm_model, copy)
    (copy / "model.safetensors").unlink()
    # a missing file of the folder, as a missing config.json or tokenizer is
    with pytest.raises(roberta_cpp.NotFoundError, match="no model.safetensors"):
        roberta_cpp.Model.from_pretrained(copy)
    with pytest.raises(roberta_cpp.IoError, match="is a file, not a model folder") as e:
        roberta_cpp.Model.from_pretrained(mlm_model / "config.json")
    assert not isinstance(e.value, FileNotFoundError)
    # a message holding a path that is not UTF-8 keeps its text, the bad byte replaced
    with pytest.raises(roberta_cpp.NotFoundError, match="\ufffd-nowhere: model folder not found"):
        roberta_cpp.Model.from_pretrained(b"/tmp/\xff-nowhere")


def test_unreadable_file_is_io_error(tmp_path, mlm_model):
    copy = tmp_path / "m"
    shutil.copytree(mlm_model, copy)
    (copy / "config.json").unlink()
    (copy / "config.json").mkdir()
    with pytest.raises(roberta_cpp.IoError, match="is a folder, not a file") as e:
        roberta_cpp.Model.from_pretrained(copy)
    assert not isinstance(e.value, FileNotFoundError)


def test_bad_model_is_model_error(tmp_path, mlm_model):
    copy = tmp_path / "m"
    shutil.copytree(mlm_model, copy)
    cfg = json.loads((copy / "config.json").read_text())
    cfg["hidden_size"] = -4
    (copy / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(roberta_cpp.ModelError, match="hidden_size"):
        roberta_cpp.Model.from_pretrained(copy)


def test_bad_input_is_value_error(mlm_model):
    fill = roberta_cpp.pipeline("fill-mask", model=mlm_model)
    with pytest.raises(ValueError, match="no <mask>") as e:
        fill("no mask here")
    assert isinstance(e.value, roberta_cpp.InvalidInputError)
    with pytest.raises(ValueError, match="dtype"):
        roberta_cpp.Model.from_pretrained(mlm_model, dtype="float8")
