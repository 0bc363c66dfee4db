"""`roberta serve`'s POST /embed_sparse (TEI's route and answer) against `roberta embed --sparse`
(itself checked against PyTorch by tests/parity/run_sparse_parity.sh): fields, batching across
requests, errors, and a SparseEncoder folder's /info, POST / and /embed. Then a bge-m3 folder's
/embed_sparse and /embed_multivector against `roberta embed --bge-m3` (tests/parity/run_m3_parity.sh).

Usage: sparse_test.py ROBERTA_BINARY FIXTURES_DIR TEXTS_FILE
FIXTURES_DIR: the CLI fixtures (tiny: a plain MLM model; splade: a SparseEncoder folder with a
"query" prompt; no-lm-head; bge-m3 and bge-m3-unconverted).
"""
import json
import os
import struct
import subprocess
import sys
import threading

from serve_util import Checks, Server, post_json, request

binary, fixtures, texts_file = sys.argv[1:4]
texts = [l.rstrip("\n") for l in open(texts_file, encoding="utf-8") if l.strip()][:6]
c = Checks()


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def cli_sparse(model, items, *flags):
    """`roberta embed --sparse` of these texts: [{index: value}] per text, values as float32."""
    out = subprocess.run([binary, "embed", "--sparse", "--dtype", "fp32", "--model", model, *flags],
                         input="".join(t + "\n" for t in items), capture_output=True, text=True, check=True).stdout
    return [{e["index"]: f32(e["value"]) for e in json.loads(l)} for l in out.splitlines()]


def as_dicts(answer):
    return [{e["index"]: f32(e["value"]) for e in row} for row in answer]


def alone_then_together(server, route, bodies):
    """Every body sent alone, then all at once from one client each: (alone, together, passes the
    concurrent round took, for the log)."""
    alone = [request(server, "POST", route, b) for b in bodies]
    def passes():
        m = request(server, "GET", "/metrics")[2].decode()
        return int(next(l.split()[1] for l in m.splitlines() if l.startswith("te_batch_next_size_count")))
    before = passes()
    together = [None] * len(bodies)
    def client(i):
        together[i] = request(server, "POST", route, bodies[i])
    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return alone, together, passes() - before


def shape_ok(answer):
    """TEI's shape: a list per input of {"index", "value"} objects, ids ascending, weights > 0."""
    return isinstance(answer, list) and all(
        isinstance(row, list) and all(set(e) == {"index", "value"} and e["value"] > 0 for e in row)
        and [e["index"] for e in row] == sorted({e["index"] for e in row}) for row in answer)


splade = os.path.join(fixtures, "splade")
tiny = os.path.join(fixtures, "tiny")

server = Server(binary, ["--model", splade, "--threads", "2"])
try:
    want = cli_sparse(splade, texts)
    status, _, out = post_json(server, "/embed_sparse", {"inputs": texts})
    c.check(status == 200 and shape_ok(out) and as_dicts(out) == want,
            f"/embed_sparse batch = roberta embed --sparse, TEI's shape ({status})")
    status, _, out = post_json(server, "/embed_sparse", {"inputs": texts[1]})
    c.check(status == 200 and len(out) == 1 and as_dicts(out) == [want[1]], "/embed_sparse one text: a list of one")
    status, _, out = post_json(server, "/embed_sparse", {"inputs": texts[:3], "max_active_dims": 4})
    top = [dict(sorted(w.items(), key=lambda kv: (-kv[1], kv[0]))[:4]) for w in want[:3]]
    c.check(status == 200 and shape_ok(out) and as_dicts(out) == top, "max_active_dims 4: each text's 4 largest weights")
    want_q = cli_sparse(splade, texts[:2], "--prompt-name", "query")
    status, _, out = post_json(server, "/embed_sparse", {"inputs": texts[:2], "prompt_name": "query"})
    c.check(status == 200 and as_dicts(out) == want_q and want_q != want[:2], "prompt_name query = --prompt-name query")
    for path in ("/", "/invocations"):
        status, _, out = post_json(server, path, {"inputs": texts[:2]})
        c.check(status == 200 and as_dicts(out) == want[:2], f"POST {path} on a SparseEncoder folder = /embed_sparse")
    info = json.loads(request(server, "GET", "/info")[2])
    c.check(info.get("model_type") == {"embedding": {"pooling": "splade"}}, f"/info model_type splade ({info.get('model_type')})")

    # errors: TEI's statuses, the input named
    long_text = " ".join(texts) * 60
    status, _, out = post_json(server, "/embed_sparse", {"inputs": ["fine", long_text], "truncate": False})
    c.check(status == 422 and out["error"].startswith("inputs[1]"), f"too long with truncate false: 422 naming inputs[1] ({out})")
    status, _, out = post_json(server, "/embed_sparse", {"inputs": [long_text], "truncate": True})
    c.check(status == 200 and shape_ok(out), "too long with truncate true: cut, 200")
    for bad, want_status, what in [({"inputs": "a", "max_active_dims": 0}, 422, "max_active_dims 0"),
                                   ({"inputs": "a", "max_active_dims": -3}, 422, "max_active_dims -3"),
                                   ({"inputs": "a", "max_active_dims": "five"}, 400, "max_active_dims a string"),
                                   ({"inputs": "a", "prompt_name": "nope"}, 422, "an unknown prompt_name")]:
        status, _, out = post_json(server, "/embed_sparse", bad)
        c.check(status == want_status and "error" in out, f"{what}: {want_status} ({status} {out})")
    status, _, out = post_json(server, "/embed_sparse", {"texts": ["a"]})
    c.check(status in (400, 422) and "inputs" in out.get("error", ""), f"no inputs: 4xx naming the field ({status} {out})")
    status, _, out = post_json(server, "/embed", {"inputs": "a"})
    c.check(status == 424 and "SparseEncoder" in out["error"], f"/embed on a SparseEncoder folder: 424 ({status} {out})")

    # batched across requests: every request alone, then 12 at once from 12 clients; the same
    # bytes back, in fewer passes than requests
    bodies = [{"inputs": t} for t in texts] + [{"inputs": texts[:3]} for _ in range(6)]
    alone, together, used = alone_then_together(server, "/embed_sparse", bodies)
    # (that requests share passes is checked in-process: server_tasks_test.cpp)
    c.check(all(a[0] == 200 and b[0] == 200 and a[2] == b[2] for a, b in zip(alone, together)),
            f"12 concurrent requests: the bytes each gets alone ({used} passes)")
finally:
    c.check(server.stop() == 0, "exit 0")

# A plain MLM model: /embed_sparse pools as TEI's --pooling splade; /info stays mean.
server = Server(binary, ["--model", tiny, "--quiet"])
try:
    status, _, out = post_json(server, "/embed_sparse", {"inputs": texts[:2]})
    c.check(status == 200 and as_dicts(out) == cli_sparse(tiny, texts[:2]), "plain MLM model: = roberta embed --sparse")
finally:
    c.check(server.stop() == 0, "exit 0")

# No MLM head: 424, as TEI for a model not pooled by SPLADE.
server = Server(binary, ["--model", os.path.join(fixtures, "no-lm-head"), "--quiet"])
try:
    status, _, out = post_json(server, "/embed_sparse", {"inputs": "a"})
    c.check(status == 424 and "MLM head" in out["error"], f"no MLM head: 424 ({status} {out})")
finally:
    c.check(server.stop() == 0, "exit 0")

# bge-m3: /embed_sparse gives the lexical weights, /embed_multivector the ColBERT vectors, /embed
# the dense vector, each = roberta embed --bge-m3.
m3 = os.path.join(fixtures, "bge-m3")
out = subprocess.run([binary, "embed", "--bge-m3", "--dtype", "fp32", "--model", m3], capture_output=True, text=True,
                     input="".join(t + "\n" for t in texts), check=True).stdout
want_m3 = [json.loads(l) for l in out.splitlines()]
server = Server(binary, ["--model", m3, "--quiet"])
try:
    status, _, out = post_json(server, "/embed_sparse", {"inputs": texts})
    c.check(status == 200 and shape_ok(out)
            and as_dicts(out) == [{int(k): f32(v) for k, v in w["lexical_weights"].items()} for w in want_m3],
            f"bge-m3 /embed_sparse = lexical_weights of roberta embed --bge-m3 ({status})")
    status, _, out = post_json(server, "/embed_multivector", {"inputs": texts})
    c.check(status == 200 and [[[f32(x) for x in v] for v in t] for t in out]
            == [[[f32(x) for x in v] for v in w["colbert_vecs"]] for w in want_m3],
            f"bge-m3 /embed_multivector = colbert_vecs ({status})")
    status, _, out = post_json(server, "/embed", {"inputs": texts})
    c.check(status == 200 and max(abs(a - b) for r, w in zip(out, want_m3) for a, b in zip(r, w["dense_vecs"])) < 1e-5,
            "bge-m3 /embed = dense_vecs (the folder's cls pooling and Normalize)")
    alone, together, used = alone_then_together(server, "/embed_multivector", [{"inputs": t} for t in texts] * 2)
    c.check(all(a[0] == 200 and a[2] == b[2] for a, b in zip(alone, together)),
            f"/embed_multivector: concurrent requests get the bytes each gets alone ({used} passes)")
    status, _, out = post_json(server, "/embed_multivector", {"inputs": " ".join(texts) * 60, "truncate": False})
    c.check(status == 422, f"/embed_multivector too long with truncate false: 422 ({status})")
finally:
    c.check(server.stop() == 0, "exit 0")
server = Server(binary, ["--model", os.path.join(fixtures, "bge-m3-unconverted"), "--quiet"])
try:
    status, _, out = post_json(server, "/embed_multivector", {"inputs": "a"})
    c.check(status == 424 and "convert_checkpoint.py" in out["error"], f"heads not converted: 424 saying how ({out})")
    status, _, out = post_json(server, "/embed", {"inputs": "a"})
    c.check(status == 200, "heads not converted: /embed still serves")
finally:
    c.check(server.stop() == 0, "exit 0")
server = Server(binary, ["--model", os.path.join(fixtures, "tiny"), "--quiet"])
try:
    status, _, out = post_json(server, "/embed_multivector", {"inputs": "a"})
    c.check(status == 424 and "bge-m3" in out["error"], f"/embed_multivector without bge-m3 heads: 424 ({out})")
finally:
    c.check(server.stop() == 0, "exit 0")
c.done()
