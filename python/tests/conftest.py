"""Fixtures of the roberta_cpp tests: random-weight models made by tools/make_test_model.py,
PyTorch reference dumps by tools/dump_reference.py, and the `roberta` program for CLI comparisons.

Environment (set by the CTest entry python_package): PYTHONPATH at the build tree's package,
ROBERTA_BINARY (the CLI), ROBERTA_SOURCE_DIR, ROBERTA_SHARED_DIR, ROBERTA_PYTEST_WORK (scratch).
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PY = "/usr/bin/python3"
SOURCE = Path(os.environ.get("ROBERTA_SOURCE_DIR", Path(__file__).resolve().parents[2]))
SHARED = Path(os.environ.get("ROBERTA_SHARED_DIR", SOURCE.parent / "shared"))
TOOLS = SOURCE / "tools"

TEXTS = [
    "The weather is lovely today.",
    "It is sunny outside, and the children are playing in the park.",
    "A",
    "Caf\u00e9 cr\u00e8me \u2014 na\u00efve r\u00e9sum\u00e9, \u65e5\u672c\u8a9e and emoji \U0001F600.",
    "one more clause, and " * 12 + "the end.",
]


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    base = os.environ.get("ROBERTA_PYTEST_WORK")
    if base:
        path = Path(base)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("roberta_cpp")


def make_model(work: Path, name: str, *options: str) -> Path:
    """tools/make_test_model.py --preset tiny OPTIONS into WORK/NAME (reused when the options match)."""
    out = work / "models" / name
    stamp = out / ".options"
    key = json.dumps(options)
    if stamp.exists() and stamp.read_text() == key:
        return out
    if out.exists():
        shutil.rmtree(out)
    subprocess.run([PY, str(TOOLS / "make_test_model.py"), "--out", str(out), "--preset", "tiny", *options],
                   check=True, stdout=subprocess.DEVNULL)
    stamp.write_text(key)
    return out


def dump_reference(model: Path, out: Path, *, texts=None, ids=None, padding="right", mask=None, st_prompt=None,
                   strip=False):
    """tools/dump_reference.py on texts (one per line) or id lists; returns {name: array}. st_prompt
    (texts only): the texts as sentence-transformers' encode(prompt=st_prompt) tokenizes them
    (--prompt; strip: also str.strip()ped, as versions 5.3 and earlier did, --strip)."""
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [PY, str(TOOLS / "dump_reference.py"), "--model", str(model), "--out", str(out)]
    if texts is not None:
        f = out.parent / (out.name + "-texts.txt")
        f.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
        cmd += ["--text-file", str(f)]
        if st_prompt is not None:
            cmd += ["--prompt", st_prompt] + (["--strip"] if strip else [])
    elif mask is not None:
        np.save(out.parent / (out.name + "-ids.npy"), np.asarray(ids, np.int64))
        np.save(out.parent / (out.name + "-mask.npy"), np.asarray(mask, np.int64))
        cmd += ["--ids-npy", str(out.parent / (out.name + "-ids.npy")),
                "--mask-npy", str(out.parent / (out.name + "-mask.npy"))]
    else:
        f = out.parent / (out.name + "-ids.json")
        f.write_text(json.dumps(ids))
        cmd += ["--ids", str(f), "--padding", padding]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return {p.stem: np.load(p) for p in out.glob("*.npy")}


@pytest.fixture(scope="session")
def roberta_binary():
    path = os.environ.get("ROBERTA_BINARY")
    if not path or not os.path.exists(path):
        pytest.fail("ROBERTA_BINARY (the built `roberta` program) is not set; run through CTest")
    return path


@pytest.fixture(scope="session")
def mlm_model(work):
    return make_model(work, "mlm", "--seed", "3")


@pytest.fixture(scope="session")
def st_model(work):
    """mean pooling + Dense(24, tanh), prompts query/document, no Normalize."""
    return make_model(work, "st", "--seed", "4", "--st-pooling", "mean", "--st-dense", "24:tanh",
                      "--st-prompts", json.dumps({"query": "query: ", "document": "passage: "}))


@pytest.fixture(scope="session")
def st_short_model(work, st_model):
    """st_model with max_seq_length 16 in sentence_bert_config.json."""
    out = work / "models" / "st-short"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(st_model, out)
    cfg = json.loads((out / "sentence_bert_config.json").read_text())
    cfg["max_seq_length"] = 16
    (out / "sentence_bert_config.json").write_text(json.dumps(cfg))
    return out


@pytest.fixture(scope="session")
def tokenizer_dir():
    path = SHARED / "assets" / "roberta-base-tokenizer"
    if not (path / "tokenizer.json").exists():
        pytest.fail(f"{path}: the shared roberta-base tokenizer is missing")
    return path


# The commands whose --dtype defaults to auto (bf16 on CPUs with AVX512-BF16); the tests compare them
# with the package's float32 default, so run_cli pins --dtype fp32 unless a test names one.
AUTO_DTYPE_COMMANDS = {"fill-mask", "embed", "classify", "zero-shot", "ner", "qa", "rerank", "serve"}


def run_cli(binary, *args, input_text=None):
    args = list(args)
    if args and args[0] in AUTO_DTYPE_COMMANDS and "--dtype" not in args:
        args[1:1] = ["--dtype", "fp32"]
    r = subprocess.run([binary, *args], input=input_text, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout
