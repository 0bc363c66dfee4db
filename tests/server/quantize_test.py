"""Quantized embeddings ("precision" int8 / uint8 / binary / ubinary) from `roberta serve`'s /embed
and /v1/embeddings and from `roberta embed --precision`, against the Python package's
quantize_embeddings (sentence-transformers 6's semantics, numpy) applied to the same server's or
CLI's float32 embeddings: dimensions cut first, ranges from the request's embeddings, from the
request's "ranges" or from --calibration-embeddings, integers or base64, and the errors.

Usage: quantize_test.py ROBERTA_BINARY MODEL_DIR TEXTS_FILE WORK_DIR   (PYTHONPATH: the build's package)
"""
import base64
import json
import os
import subprocess
import sys

import numpy as np

from roberta_cpp.quantization import quantize_embeddings
from serve_util import Checks, Server, post_json

binary, model, texts_file, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
texts = [l.rstrip("\n") for l in open(texts_file, encoding="utf-8") if l.strip()][:8]
c = Checks()
DTYPE = {"int8": np.int8, "binary": np.int8, "uint8": np.uint8, "ubinary": np.uint8}


def quiet_quantize(*args, **kw):
    import logging
    logging.getLogger("roberta_cpp").setLevel(logging.ERROR)  # (its few-embeddings warning)
    return quantize_embeddings(*args, **kw)


calibration = np.float32(np.random.default_rng(0).normal(scale=0.1, size=(50, 16)))
np.save(os.path.join(work, "calibration.npy"), calibration)
server = Server(binary, ["--model", model, "--quiet", "--calibration-embeddings", os.path.join(work, "calibration.npy")])
plain = Server(binary, ["--model", model, "--quiet"])
try:
    _, _, floats = post_json(plain, "/embed", {"inputs": texts})
    floats = np.float32(floats)
    for precision in ("int8", "uint8", "binary", "ubinary"):
        status, _, out = post_json(plain, "/embed", {"inputs": texts, "precision": precision})
        want = quiet_quantize(floats, precision)
        c.check(status == 200 and np.array_equal(np.array(out), want.astype(int)),
                f"/embed precision {precision}: quantize_embeddings of the float rows ({status})")
        status, _, out = post_json(plain, "/embed", {"inputs": texts, "precision": precision,
                                                     "encoding_format": "base64"})
        got = [np.frombuffer(base64.b64decode(b), dtype=DTYPE[precision]) for b in out]
        c.check(status == 200 and np.array_equal(np.array(got), want), f"/embed {precision} base64: its bytes")
    # one text: every dimension's range is a single value (a step of 1)
    status, _, out = post_json(plain, "/embed", {"inputs": texts[0], "precision": "uint8"})
    c.check(status == 200 and np.array_equal(np.array(out), quiet_quantize(floats[:1], "uint8").astype(int)),
            "one text, uint8: ranges of one value")
    # dimensions first (cut, normalised), then the buckets of those
    _, _, cut = post_json(plain, "/embed", {"inputs": texts, "dimensions": 16})
    status, _, out = post_json(plain, "/embed", {"inputs": texts, "dimensions": 16, "precision": "uint8"})
    c.check(status == 200 and np.array_equal(np.array(out), quiet_quantize(np.float32(cut), "uint8").astype(int)),
            "dimensions 16 then uint8")
    ranges = [[-0.2] * 16, [0.3] * 16]
    status, _, out = post_json(plain, "/embed", {"inputs": texts, "dimensions": 16, "precision": "int8",
                                                 "ranges": ranges})
    want = quiet_quantize(np.float32(cut), "int8", ranges=np.float32(ranges))
    c.check(status == 200 and np.array_equal(np.array(out), want.astype(int)), "the request's ranges")
    status, _, out = post_json(server, "/embed", {"inputs": texts, "dimensions": 16, "precision": "int8"})
    want = quiet_quantize(np.float32(cut), "int8", calibration_embeddings=calibration)
    c.check(status == 200 and np.array_equal(np.array(out), want.astype(int)), "--calibration-embeddings' ranges")
    # OpenAI's route: integers, or base64 of the bytes
    status, _, out = post_json(plain, "/v1/embeddings", {"input": texts, "precision": "ubinary",
                                                         "encoding_format": "base64"})
    got = [np.frombuffer(base64.b64decode(d["embedding"]), dtype=np.uint8) for d in out["data"]]
    c.check(status == 200 and np.array_equal(np.array(got), quiet_quantize(floats, "ubinary")),
            "/v1/embeddings ubinary base64")
    status, _, out = post_json(plain, "/v1/embeddings", {"input": texts, "precision": "int8"})
    c.check(status == 200 and np.array_equal(np.array([d["embedding"] for d in out["data"]]),
                                             quiet_quantize(floats, "int8").astype(int)), "/v1/embeddings int8")
    for body, what in [({"inputs": "a", "precision": "int4"}, "an unknown precision"),
                       ({"inputs": "a", "precision": "int8", "ranges": [[0.0], [1.0]]}, "ranges of 1 dimension"),
                       ({"inputs": "a", "precision": "binary", "ranges": ranges}, "ranges with binary"),
                       ({"inputs": "a", "precision": "int8", "ranges": [[0.0] * 16]}, "ranges without highs"),
                       ({"inputs": "a", "precision": "int8", "encoding_format": "hex"}, "encoding_format hex")]:
        status, _, out = post_json(plain, "/embed", body)
        c.check(status == 422 and "error" in out, f"{what}: 422 ({status} {out})")
    status, _, out = post_json(server, "/embed", {"inputs": "a", "precision": "uint8"})
    c.check(status == 422 and "calibration" in out["error"], f"--calibration-embeddings of another dimension: 422 ({out})")
finally:
    c.check(server.stop() == 0 and plain.stop() == 0, "exit 0")

# The CLI: roberta embed --precision against quantize_embeddings of roberta embed's float rows
def cli(*args):
    return subprocess.run([binary, "embed", "--dtype", "fp32", "--model", model, *args], capture_output=True,
                          text=True, input="".join(t + "\n" for t in texts))

floats = np.float32([json.loads(l) for l in cli().stdout.splitlines()])
for precision in ("int8", "uint8", "binary", "ubinary"):
    r = cli("--precision", precision)
    got = np.array([json.loads(l) for l in r.stdout.splitlines()])
    c.check(r.returncode == 0 and np.array_equal(got, quiet_quantize(floats, precision).astype(int)),
            f"roberta embed --precision {precision}")
npy = os.path.join(work, "int8.npy")
r = cli("--precision", "int8", "--format", "npy", "--output", npy, "--force")
c.check(r.returncode == 0 and np.load(npy).dtype == np.int8
        and np.array_equal(np.load(npy), quiet_quantize(floats, "int8")), "--format npy: an int8 matrix")
full_calibration = np.float32(np.random.default_rng(1).normal(scale=0.1, size=(40, floats.shape[1])))
np.save(os.path.join(work, "calibration-full.npy"), full_calibration)
r = cli("--precision", "uint8", "--calibration-embeddings", os.path.join(work, "calibration-full.npy"))
got = np.array([json.loads(l) for l in r.stdout.splitlines()])
c.check(r.returncode == 0 and np.array_equal(
    got, quiet_quantize(floats, "uint8", calibration_embeddings=full_calibration).astype(int)),
    "--calibration-embeddings")
r = cli("--precision", "int4")
c.check(r.returncode == 2 and "--precision" in r.stderr, f"--precision int4: usage error ({r.stderr.strip()})")
r = cli("--precision", "uint8", "--calibration-embeddings", os.path.join(work, "calibration.npy"))
c.check(r.returncode == 1 and "dimensions" in r.stderr, f"calibration of another dimension: error ({r.stderr.strip()})")
c.done()
