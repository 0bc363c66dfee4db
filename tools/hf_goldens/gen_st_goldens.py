#!/usr/bin/env python3
"""Golden results of sentence-transformers 6's pure-Python parts, for roberta_cpp's drop-ins.

    git -C ST_REPO archive v6.0.0 sentence_transformers | tar -x -C SRC
    /usr/bin/python3 tools/hf_goldens/gen_st_goldens.py --sentence-transformers SRC [--out tests/data/sentence_transformers]

The expected values come from sentence-transformers' own source files, run unchanged on inputs made
here (seeded random embeddings and edge cases):

- quantize.jsonl: util/quantization.py's quantize_embeddings (clipping to the calibration range, a
  zero-width range, bits packed along the last axis, lists of matrices, empty matrices);
- similarity.jsonl: util/similarity.py's cos_sim, dot_score, euclidean_sim, manhattan_sim and their
  pairwise forms (what SentenceTransformer.similarity / similarity_pairwise call);
- retrieval.jsonl: util/retrieval.py's paraphrase_mining_embeddings and community_detection;
- deprecations.jsonl: what util/decorators.py's argument decorators forward and log for old
  argument names, and the messages of the @deprecated methods and of tokenize() (read from
  sentence_transformer/model.py, cross_encoder/model.py and base/model.py with Python's ast).

Only the third-party imports those files make and that have no Debian package here (transformers'
logging helpers, scikit-learn, SciPy, tqdm) are replaced by small stand-ins below; nothing of
sentence-transformers is copied into this repository. See README.md beside this script.
"""
import argparse
import ast
import importlib.util
import json
import logging
import os
import sys
import types

import numpy as np
import torch

VERSION_FILE = "sentence_transformers/__init__.py"


# ------------------------------------------------------------------------------------------------
# Stand-ins for imports the util modules make


class RecordingLogger(logging.Logger):
    """transformers' logger: warning_once logs a message once per process, as its lru_cache does."""

    def __init__(self, name):
        super().__init__(name)
        self.records = []
        self._once = set()

    def warning(self, msg, *args, **kwargs):
        self.records.append(str(msg))

    def warning_once(self, msg, *args, **kwargs):
        if msg not in self._once:
            self._once.add(msg)
            self.records.append(str(msg))


LOGGERS = {}


def get_logger(name=None):
    return LOGGERS.setdefault(name, RecordingLogger(name or "root"))


def stub(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def install_stubs():
    tlog = stub("transformers.utils.logging", get_logger=get_logger)
    stub("transformers.utils", logging=tlog, is_torchdynamo_compiling=lambda: False)
    stub("transformers", utils=sys.modules["transformers.utils"])
    stub("sklearn")
    stub("sklearn.metrics", pairwise_distances=None)
    stub("scipy")
    stub("scipy.sparse", coo_matrix=None)
    stub("tqdm")
    stub("tqdm.autonotebook", tqdm=lambda it, **kw: it)


def load_util(src):
    """sentence_transformers.util's modules, each loaded from its file (the package's __init__,
    which imports training helpers, is not run)."""
    stub("sentence_transformers").__path__ = [os.path.join(src, "sentence_transformers")]
    stub("sentence_transformers.util").__path__ = [os.path.join(src, "sentence_transformers", "util")]
    mods = {}
    for name in ("tensor", "similarity", "quantization", "retrieval", "decorators"):
        full = f"sentence_transformers.util.{name}"
        spec = importlib.util.spec_from_file_location(full, os.path.join(src, "sentence_transformers", "util",
                                                                          name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[full] = mod
        spec.loader.exec_module(mod)
        mods[name] = mod
    return mods


# ------------------------------------------------------------------------------------------------
# Values as JSON


def floats(a):
    return np.asarray(a, dtype=np.float64).tolist()


def array_record(a):
    if isinstance(a, list):
        return {"list": [array_record(x) for x in a]}
    if isinstance(a, torch.Tensor):
        a = a.detach().numpy()
    a = np.asarray(a)
    values = a.tolist() if a.dtype.kind in "iu" else floats(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "values": values}


# ------------------------------------------------------------------------------------------------
# The cases


def quantize_cases(q, rng):
    emb = rng.standard_normal((20, 12)).astype(np.float32)
    calib = (0.5 * rng.standard_normal((50, 12))).astype(np.float32)  # narrower: emb clips
    ranges = np.vstack([emb.min(0), emb.max(0)]).astype(np.float32)
    ranges[:, 3] = 0.25  # a zero-width dimension
    odd = rng.standard_normal((6, 13)).astype(np.float32)  # 13 bits: packs to 2 bytes per row
    ragged = [rng.standard_normal((3, 12)).astype(np.float32), rng.standard_normal((5, 12)).astype(np.float32)]
    constant = np.full((4, 9), 0.5, dtype=np.float32)
    cases = []
    for precision in ("float32", "int8", "uint8", "binary", "ubinary"):
        cases.append(("self", dict(embeddings=emb, precision=precision)))
        cases.append(("odd_dim", dict(embeddings=odd, precision=precision)))
        cases.append(("list_of_matrices", dict(embeddings=ragged, precision=precision)))
        cases.append(("empty", dict(embeddings=np.zeros((0, 12), np.float32), precision=precision)))
    for precision in ("int8", "uint8"):
        cases.append(("calibration_clips", dict(embeddings=emb, precision=precision, calibration_embeddings=calib)))
        cases.append(("ranges_zero_width", dict(embeddings=emb, precision=precision, ranges=ranges)))
        cases.append(("constant", dict(embeddings=constant, precision=precision)))
        cases.append(("list_with_calibration", dict(embeddings=ragged, precision=precision,
                                                    calibration_embeddings=calib)))
    for name, kw in cases:
        out = q.quantize_embeddings(**kw)
        rec = {"case": name, "precision": kw["precision"], "embeddings": array_record(kw["embeddings"])}
        for key in ("ranges", "calibration_embeddings"):
            if key in kw:
                rec[key] = array_record(kw[key])
        rec["expected"] = array_record(out)
        yield rec


def similarity_cases(s, rng):
    a = rng.standard_normal((4, 12)).astype(np.float32)
    b = rng.standard_normal((3, 12)).astype(np.float32)
    b[1] = 0  # a zero vector: cosine 0 against everything
    c = rng.standard_normal((4, 12)).astype(np.float32)
    for fn in ("cos_sim", "dot_score", "euclidean_sim", "manhattan_sim"):
        for x, y, shape in ((a, b, "matrix"), (a[0], b, "vector_left")):
            yield {"function": fn, "shape": shape, "a": array_record(x), "b": array_record(y),
                   "expected": array_record(getattr(s, fn)(x, y))}
    for fn in ("pairwise_cos_sim", "pairwise_dot_score", "pairwise_euclidean_sim", "pairwise_manhattan_sim"):
        for x, y, shape in ((a, c, "rows"), (a, c[:1], "broadcast")):
            yield {"function": fn, "shape": shape, "a": array_record(x), "b": array_record(y),
                   "expected": array_record(getattr(s, fn)(x, y))}


def clustered(rng, n, dim, centres):
    """n vectors around `centres` random directions (and a few loners), float32."""
    c = rng.standard_normal((centres, dim))
    rows = [c[i % centres] + 0.35 * rng.standard_normal(dim) for i in range(n - 4)]
    rows += [rng.standard_normal(dim) for _ in range(4)]
    return np.asarray(rows, dtype=np.float32)[rng.permutation(n)]


def retrieval_cases(r, rng):
    emb = clustered(rng, 40, 16, 3)
    for kw in ({}, {"top_k": 2, "max_pairs": 10}, {"query_chunk_size": 7, "corpus_chunk_size": 11, "top_k": 3},
               {"max_pairs": 25, "query_chunk_size": 9}):
        yield {"function": "paraphrase_mining_embeddings", "kwargs": kw, "embeddings": array_record(emb),
               "expected": r.paraphrase_mining_embeddings(torch.from_numpy(emb), **kw)}
    for kw in ({"threshold": 0.8, "min_community_size": 3}, {"threshold": 0.7, "min_community_size": 5, "batch_size": 6},
               {"threshold": 0.95, "min_community_size": 2}, {}):
        yield {"function": "community_detection", "kwargs": kw, "embeddings": array_record(emb),
               "expected": r.community_detection(emb, **kw)}


def run_decorated(logger, fn, *args, **kwargs):
    """(what fn received, the messages logged) for one call."""
    logger.records.clear()
    logger._once.clear()
    received = fn(*args, **kwargs)
    return received, list(logger.records)


def decorator_cases(d):
    logger = LOGGERS["sentence_transformers.util.decorators"]

    def record(method, call_args, call_kwargs, fn):
        received, messages = run_decorated(logger, fn, *call_args, **call_kwargs)
        return {"method": method, "args": list(call_args), "kwargs": call_kwargs, "received": received,
                "messages": messages}

    @d.deprecated_kwargs(sentences="inputs")
    def encode(inputs=None, **kwargs):
        return {"inputs": inputs, **kwargs}

    @d.deprecated_kwargs(tokenizer_kwargs="processor_kwargs")
    def st_init(model_name_or_path=None, **kwargs):
        return {"model_name_or_path": model_name_or_path, **kwargs}

    class CE:
        @d.cross_encoder_init_args_decorator
        def __init__(self, model_name_or_path=None, **kwargs):
            self.received = {"model_name_or_path": model_name_or_path, **kwargs}

        @d.cross_encoder_predict_rank_args_decorator
        def predict(self, inputs=None, activation_fn=None, convert_to_numpy=True, convert_to_tensor=False, **kwargs):
            return {"inputs": inputs, "activation_fn": activation_fn, "convert_to_numpy": convert_to_numpy,
                    "convert_to_tensor": convert_to_tensor, **kwargs}

        @d.cross_encoder_predict_rank_args_decorator
        def rank(self, query=None, documents=None, activation_fn=None, **kwargs):
            return {"query": query, "documents": documents, "activation_fn": activation_fn, **kwargs}

    ce = CE.__new__(CE)
    yield record("SentenceTransformer.encode", [], {"sentences": ["a", "b"]}, encode)
    yield record("SentenceTransformer.encode", [], {"sentences": ["a"], "inputs": ["b"]}, encode)
    yield record("SentenceTransformer.__init__", ["m"], {"tokenizer_kwargs": {"padding_side": "left"}}, st_init)
    yield record("CrossEncoder.predict", [], {"sentences": [["q", "d"]]}, ce.predict)
    yield record("CrossEncoder.predict", [], {"inputs": [["q", "d"]], "activation_fct": "Sigmoid"}, ce.predict)
    yield record("CrossEncoder.predict", [], {"inputs": [["q", "d"]], "num_workers": 2}, ce.predict)
    yield record("CrossEncoder.rank", ["q", ["d"]], {"convert_to_tensor": True}, ce.rank)
    yield record("CrossEncoder.rank", ["q", ["d"]], {"convert_to_numpy": False, "activation_fct": "Identity"},
                 ce.rank)
    for args, kwargs in ((["m", 1, 128], {}), (["m"], {"tokenizer_kwargs": {"use_fast": True}}),
                         ([], {"model_name": "x", "cache_dir": "/c", "default_activation_function": "Tanh"}),
                         (["m"], {"classifier_dropout": 0.1}), (["m"], {"automodel_args": {}, "config_args": {}})):
        logger.records.clear()
        logger._once.clear()
        obj = CE(*args, **kwargs)
        yield {"method": "CrossEncoder.__init__", "args": args, "kwargs": kwargs, "received": obj.received,
               "messages": list(logger.records)}


def deprecated_messages(src):
    """{Class.method: {"message", "category"}} of the @deprecated methods and the tokenize() warning."""
    out = {}
    for rel, cls_name in (("sentence_transformer/model.py", "SentenceTransformer"),
                          ("cross_encoder/model.py", "CrossEncoder"), ("base/model.py", "BaseModel")):
        tree = ast.parse(open(os.path.join(src, "sentence_transformers", rel), encoding="utf-8").read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "deprecated":
                    category = next((kw.value.id for kw in dec.keywords if kw.arg == "category"),
                                    "DeprecationWarning")
                    out[f"{cls_name}.{node.name}"] = {"message": ast.literal_eval(dec.args[0]),
                                                      "category": category}
            if cls_name == "BaseModel" and node.name == "tokenize":
                for call in ast.walk(node):
                    if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "warning_once":
                        out["BaseModel.tokenize"] = {"message": ast.literal_eval(call.args[0]), "category": "log"}
    return out


# ------------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentence-transformers", required=True,
                    help="a folder holding sentence_transformers/ (the package's source)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data",
                                                  "sentence_transformers"))
    args = ap.parse_args()
    src = os.path.abspath(args.sentence_transformers)
    version = None
    for line in open(os.path.join(src, VERSION_FILE), encoding="utf-8"):
        if line.startswith("__version__"):
            version = ast.literal_eval(line.split("=", 1)[1].strip())
    install_stubs()
    mods = load_util(src)
    os.makedirs(args.out, exist_ok=True)
    counts = {}

    def write(name, records):
        records = list(records)
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, sort_keys=True) + "\n")
        counts[name] = len(records)

    torch.manual_seed(0)
    write("quantize.jsonl", quantize_cases(mods["quantization"], np.random.default_rng(1)))
    write("similarity.jsonl", similarity_cases(mods["similarity"], np.random.default_rng(2)))
    write("retrieval.jsonl", retrieval_cases(mods["retrieval"], np.random.default_rng(3)))
    write("deprecations.jsonl", decorator_cases(mods["decorators"]))
    with open(os.path.join(args.out, "deprecated_methods.json"), "w", encoding="utf-8") as f:
        json.dump(deprecated_messages(src), f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(args.out, "MANIFEST.json"), "w", encoding="utf-8") as f:
        json.dump({"sentence_transformers": version, "torch": torch.__version__, "numpy": np.__version__,
                   "records": counts}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"sentence-transformers {version}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
