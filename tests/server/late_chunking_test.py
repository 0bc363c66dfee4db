"""Late chunking on `roberta serve`: POST /embed_late_chunks (ours) and Jina AI's `"late_chunking": true`
on POST /embed and /v1/embeddings (the inputs, joined by single spaces, are one document whose chunks
they are), against the PyTorch reference written from the spec (tools/late_chunking_reference.py, on
Hugging Face's tokenization of the documents of tests/data/hf/late_chunking.jsonl): spans, token and
window counts equal, every value within 1e-5. Also `dimensions`, `normalize`, `precision`,
`encoding_format`, the errors (4xx naming the field or input; the server answers on), and concurrent
requests (the bytes each gets alone). With the OpenAI client installed by serve_openai_client
(NPM_DIR/node_modules/openai), the same Jina-style request through it.

The server has no option or request field for the window length: windows are the folder's
max_seq_length tokens, so the model made here has max_seq_length 40 in sentence_bert_config.json.

Usage: late_chunking_test.py ROBERTA_BINARY WORK_DIR [NPM_DIR]
"""
import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import threading

import numpy as np

from serve_util import Checks, Server, post_json, request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from roberta_ref.late_chunking import cut_at_spaces, joined_spans  # noqa: E402

binary, work = sys.argv[1:3]
npm_dir = sys.argv[3] if len(sys.argv) > 3 else None
here = os.path.dirname(os.path.abspath(__file__))
tools = os.path.normpath(os.path.join(here, "..", "..", "tools"))
goldens = os.path.normpath(os.path.join(here, "..", "data", "hf", "late_chunking.jsonl"))
PY = "/usr/bin/python3"
MAX_LENGTH = 40  # tokens per window (W = 38 document tokens, default overlap 9)
TOL = 1e-5
c = Checks()

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
model = os.path.join(work, "model")
subprocess.run([PY, os.path.join(tools, "make_test_model.py"), "--out", model, "--preset", "tiny", "--seed", "61",
                "--st-pooling", "mean", "--st-normalize", "--st-prompts", json.dumps({"document": "search_document: "})],
               check=True, stdout=subprocess.DEVNULL)
with open(os.path.join(model, "sentence_bert_config.json")) as f:
    st_config = json.load(f)
st_config["max_seq_length"] = MAX_LENGTH
with open(os.path.join(model, "sentence_bert_config.json"), "w") as f:
    json.dump(st_config, f)

docs = [r["text"] for r in map(json.loads, open(goldens, encoding="utf-8")) if "text" in r]
nonfiction, fiction, short, uni, noterm = docs[:5]  # (docs[5] is "", which /embed* refuse)
i_pr = nonfiction.index("principles")
j_hh = fiction.index("Hammer-Heads")
k_wt = uni.index("\U0001F469\u200d\U0001F4BB")

_runs = [0]


def reference(items, *opts):
    """tools/late_chunking_reference.py on items (a list of str or {"text", "spans"}, or one of them)
    with windows of MAX_LENGTH."""
    if not isinstance(items, list):
        items = [items]
    _runs[0] += 1
    path = os.path.join(work, f"ref-{_runs[0]}")
    with open(path + "-docs.jsonl", "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items))
    opts = list(opts)
    if "--prompt" in opts:
        opts.append("--prompt-ids-from-golden")
    subprocess.run([PY, os.path.join(tools, "late_chunking_reference.py"), "--model", model, "--goldens", goldens,
                    "--docs", path + "-docs.jsonl", "--max-length", str(MAX_LENGTH), "--out", path + ".jsonl", *opts],
                   check=True)
    return [json.loads(l) for l in open(path + ".jsonl", encoding="utf-8")]


def compare(mine, ref):
    """(ok, max abs diff, windows): same spans, tokens, windows and keys, embeddings within TOL."""
    ok = isinstance(mine, list) and len(mine) == len(ref)
    diff = 0.0
    for m, r in zip(mine if ok else [], ref):
        ok &= isinstance(m, dict) and sorted(m) == ["embeddings", "spans", "tokens", "windows"]
        if not ok:
            break
        ok &= m["spans"] == r["spans"] and m["tokens"] == r["tokens"] and m["windows"] == r["windows"]
        a, b = np.float32(m["embeddings"]), np.float32(r["embeddings"])
        if a.shape != b.shape:
            ok, diff = False, np.inf
        elif a.size:
            diff = max(diff, float(np.abs(a - b).max()))
    return ok and diff <= TOL, diff, [r["windows"] for r in ref]


def check_route(server, body, ref, what):
    status, _, out = post_json(server, "/embed_late_chunks", body)
    ok, diff, windows = compare(out, ref) if status == 200 else (False, np.inf, None)
    c.check(ok, f"/embed_late_chunks {what}: = reference (windows {windows}, max |diff| {diff:.1e}, {status})")
    return out


def normalized(v):
    v = np.float64(v)
    return v / np.linalg.norm(v)



def b64_floats(s):
    raw = base64.b64decode(s)
    return list(struct.unpack("<%df" % (len(raw) // 4), raw))


def max_abs(rows, want):
    a, b = np.float32(rows), np.float32(want)
    return float(np.abs(a - b).max()) if a.shape == b.shape else np.inf


def openai_client_check(server, pieces, full, cut8):
    """The official OpenAI client (npm `openai`, installed by serve_openai_client) with late_chunking
    in its request body: its default (base64) and dimensions 8."""
    modules = os.path.join(npm_dir, "node_modules") if npm_dir else None
    if not modules or not os.path.exists(os.path.join(modules, "openai", "package.json")) or not shutil.which("node"):
        print("skip  the OpenAI client check: no node or no NPM_DIR/node_modules/openai (serve_openai_client installs it)")
        return
    script = os.path.join(work, "openai_late_chunking.js")
    with open(os.path.join(work, "openai_late_chunking.json"), "w") as f:
        json.dump({"input": pieces, "full": full, "cut8": cut8}, f)
    with open(script, "w") as f:
        f.write(r"""
const fs = require('fs');
const OpenAI = require('openai');
const [baseURL, file] = process.argv.slice(2);
const want = JSON.parse(fs.readFileSync(file, 'utf8'));
const worst = (got, ref) => got.length !== ref.length ? Infinity : Math.max(...got.map((d, i) =>
  d.embedding.length !== ref[i].length ? Infinity : Math.max(...ref[i].map((x, k) => Math.abs(x - d.embedding[k])))));
(async () => {
  const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0 });
  const res = await client.embeddings.create({ model: 'm', input: want.input, late_chunking: true });
  const cut = await client.embeddings.create({ model: 'm', input: want.input, late_chunking: true, dimensions: 8 });
  console.log(JSON.stringify({ full: worst(res.data, want.full), cut8: worst(cut.data, want.cut8),
                               indices: res.data.map((d) => d.index) }));
})().catch((e) => { console.error(e); process.exit(1); });
""")
    r = subprocess.run(["node", script, server.url + "/v1", os.path.join(work, "openai_late_chunking.json")],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "NODE_PATH": modules})
    res = json.loads(r.stdout) if r.returncode == 0 else None
    c.check(res is not None and res["full"] <= TOL and res["cut8"] <= TOL and res["indices"] == list(range(len(pieces))),
            f"OpenAI client, late_chunking in the body, default base64 and dimensions 8: = reference ({res or r.stderr[-300:]})")


server = Server(binary, ["--model", model, "--threads", "2", "--quiet"])
try:
    # ---- POST /embed_late_chunks
    ref_all = reference(docs[:5])
    c.check(ref_all[0]["windows"] > 10 and ref_all[2]["windows"] == 1, f"reference windows {[r['windows'] for r in ref_all]}")
    one = check_route(server, {"inputs": nonfiction}, ref_all[:1], "one string (a list of one)")
    check_route(server, {"inputs": docs[:5]}, ref_all, "a list of 5 documents (sentences, default overlap)")
    given = [[j_hh + 2, j_hh + 9], [0, 126], [0, 126], [100, 700], [j_hh, j_hh + 3]]
    check_route(server, {"inputs": fiction, "spans": given}, reference({"text": fiction, "spans": given}),
                "one string with spans (overlapping, unsorted, a word cut)")
    per_input = [[[i_pr + 3, i_pr + 120], [0, 40], [2308, len(nonfiction)], [1000, 1003]], None,
                 [[k_wt + 1, k_wt + 2], [k_wt, k_wt + 2], [0, 3], [0, len(uni)]]]
    check_route(server, {"inputs": [nonfiction, short, uni], "spans": per_input},
                reference([{"text": nonfiction, "spans": per_input[0]}, short, {"text": uni, "spans": per_input[2]}]),
                "spans per input, null: chunked by sentences")
    check_route(server, {"inputs": docs[:5], "chunk_by": "tokens", "chunk_tokens": 16},
                reference(docs[:5], "--chunk-by", "tokens", "--chunk-tokens", "16"), "chunk_by tokens, chunk_tokens 16")
    check_route(server, {"inputs": docs[:5], "chunk_tokens": 60}, reference(docs[:5], "--chunk-tokens", "60"),
                "sentences packed to chunk_tokens 60")
    check_route(server, {"inputs": docs[:5], "overlap": 0}, reference(docs[:5], "--overlap", "0"), "overlap 0")
    check_route(server, {"inputs": docs[:5], "overlap": 20}, reference(docs[:5], "--overlap", "20"), "overlap 20")
    ref = reference(docs[:5], "--overlap", "30")
    c.check(sum(r["windows"] for r in ref) > 64, f"overlap 30: {sum(r['windows'] for r in ref)} windows, more than "
            "the 64 a request's job takes (late_chunk_routes.cpp's kWindowsPerJob)")
    check_route(server, {"inputs": docs[:5], "overlap": 30}, ref, "overlap 30 (several jobs of windows)")
    check_route(server, {"inputs": docs[:5], "normalize": False}, reference(docs[:5], "--no-normalize"),
                "normalize false")
    check_route(server, {"inputs": docs[:5], "prompt_name": "document"},
                reference(docs[:5], "--prompt", "search_document: "), "prompt_name document (search_document: )")
    # (the window length: the folder's max_seq_length; no request field sets it)

    # ---- Jina AI's late_chunking: true on /embed and /v1/embeddings
    pieces = cut_at_spaces(nonfiction, 4)
    spans = joined_spans(pieces)
    raw = reference({"text": nonfiction, "spans": spans}, "--no-normalize")[0]
    c.check(raw["spans"] == spans and raw["windows"] > 10, f"Jina-style reference: spans {spans}, {raw['windows']} windows")
    full = [normalized(v).tolist() for v in raw["embeddings"]]
    cut8 = [normalized(v[:8]).tolist() for v in raw["embeddings"]]
    status, _, out = post_json(server, "/embed", {"inputs": pieces, "late_chunking": True})
    c.check(status == 200 and max_abs(out, full) <= TOL,
            f"/embed late_chunking: one vector per input = reference ({status}, {max_abs(out, full) if status == 200 else ''})")
    jina_bytes = request(server, "POST", "/embed", {"inputs": pieces, "late_chunking": True})[2]
    status, _, out = post_json(server, "/embed", {"inputs": pieces, "late_chunking": True, "normalize": False})
    c.check(status == 200 and max_abs(out, raw["embeddings"]) <= TOL, f"/embed late_chunking, normalize false ({status})")
    status, _, out = post_json(server, "/embed", {"inputs": pieces, "late_chunking": True, "dimensions": 8})
    c.check(status == 200 and max_abs(out, cut8) <= TOL, f"/embed late_chunking, dimensions 8: cut, then normalised ({status})")
    status, _, out = post_json(server, "/embed", {"inputs": pieces, "late_chunking": True, "overlap": 0})
    want = [normalized(v).tolist() for v in reference({"text": nonfiction, "spans": spans}, "--overlap", "0",
                                                      "--no-normalize")[0]["embeddings"]]
    c.check(status == 200 and max_abs(out, full) > TOL and max_abs(out, want) <= TOL,
            f"/embed late_chunking, overlap 0 = reference --overlap 0 ({status})")
    status, _, out = post_json(server, "/embed", {"inputs": pieces, "late_chunking": True, "prompt_name": "document"})
    want = [normalized(v).tolist() for v in reference({"text": nonfiction, "spans": spans}, "--prompt", "search_document: ",
                                                      "--no-normalize")[0]["embeddings"]]
    c.check(status == 200 and max_abs(out, want) <= TOL, f"/embed late_chunking, prompt_name document ({status})")
    # ubinary: sentence-transformers' packbits(v > 0), no value of the reference near 0
    margin = float(np.abs(np.float32(full)).min())
    status, _, out = post_json(server, "/embed", {"inputs": pieces, "late_chunking": True, "precision": "ubinary"})
    c.check(status == 200 and margin > TOL and out == np.packbits(np.float32(full) > 0, axis=-1).tolist(),
            f"/embed late_chunking, precision ubinary = packbits(reference > 0) (smallest |value| {margin:.1e}, {status})")
    # /v1/embeddings: float, base64, dimensions, usage
    status, _, out = post_json(server, "/v1/embeddings", {"input": pieces, "model": "m", "late_chunking": True})
    rows = [d["embedding"] for d in out["data"]] if status == 200 else None
    c.check(status == 200 and max_abs(rows, full) <= TOL and [d["index"] for d in out["data"]] == [0, 1, 2, 3]
            and out["usage"]["prompt_tokens"] == raw["tokens"],
            f"/v1/embeddings late_chunking = reference, usage the document's {raw['tokens']} tokens ({status})")
    status, _, out = post_json(server, "/v1/embeddings", {"input": pieces, "late_chunking": True,
                                                         "encoding_format": "base64", "dimensions": 8})
    rows = [b64_floats(d["embedding"]) for d in out["data"]] if status == 200 else None
    c.check(status == 200 and max_abs(rows, cut8) <= TOL, f"/v1/embeddings late_chunking, base64, dimensions 8 ({status})")
    # one input: the whole text is the chunk
    status, _, out = post_json(server, "/v1/embeddings", {"input": short, "late_chunking": True})
    want = reference({"text": short, "spans": [[0, len(short)]]})[0]["embeddings"]
    c.check(status == 200 and max_abs([out["data"][0]["embedding"]], want) <= TOL,
            f"/v1/embeddings late_chunking, one string: the document's mean ({status})")
    # a second document: 3 pieces of the fiction text, with its curly quotes
    pieces3 = cut_at_spaces(fiction, 3)
    want = reference({"text": fiction, "spans": joined_spans(pieces3)})[0]["embeddings"]
    status, _, out = post_json(server, "/embed", {"inputs": pieces3, "late_chunking": True})
    c.check(status == 200 and max_abs(out, want) <= TOL, f"/embed late_chunking, 3 inputs of the fiction text ({status})")
    openai_client_check(server, pieces, full, cut8)

    # ---- errors: 4xx, a JSON error naming the field or input
    errors = [
        ("/embed_late_chunks", {"inputs": short, "spans": [[0, 45]]}, 422, ["spans[0]", "44"], "span past the end"),
        ("/embed_late_chunks", {"inputs": [short, uni], "spans": [None, [[0, 3], [0, 1000]]]}, 422,
         ["inputs[1]", "spans[1]"], "span past the end, second input"),
        ("/embed_late_chunks", {"inputs": short, "spans": [[3, 3]]}, 422, ["spans[0]"], "empty span"),
        ("/embed_late_chunks", {"inputs": short, "spans": [[5, 2]]}, 422, ["spans[0]"], "span with start > end"),
        ("/embed_late_chunks", {"inputs": short, "spans": [[-1, 3]]}, 422, ["spans[0]"], "negative start"),
        ("/embed_late_chunks", {"inputs": short, "spans": [[0, 3, 5]]}, 422, ["spans[0]"], "span of 3 numbers"),
        ("/embed_late_chunks", {"inputs": short, "spans": [0, 3]}, 422, ["spans[0]"], "spans a flat pair"),
        ("/embed_late_chunks", {"inputs": short, "spans": "0-3"}, 422, ["spans"], "spans a string"),
        ("/embed_late_chunks", {"inputs": [short, uni], "spans": [[[0, 3]]]}, 422, ["spans"],
         "spans: one list for two inputs"),
        ("/embed_late_chunks", {"inputs": [short, uni], "spans": [[0, 3], [0, 4]]}, 422, ["spans[0][0]"],
         "spans per input given as pairs"),
        ("/embed_late_chunks", {"inputs": short, "spans": [[0, 3], [3, 4]]}, 422, ["spans[1]", "no token"],
         "a span of a space alone: no token"),
        ("/embed_late_chunks", {"inputs": short, "chunk_by": "words"}, 422, ["chunk_by"], "chunk_by unknown"),
        ("/embed_late_chunks", {"inputs": short, "chunk_by": 3}, 400, ["chunk_by"], "chunk_by a number"),
        ("/embed_late_chunks", {"inputs": short, "chunk_by": "tokens"}, 422, ["chunk_tokens"],
         "chunk_by tokens without chunk_tokens"),
        ("/embed_late_chunks", {"inputs": short, "overlap": 38}, 422, ["overlap", "38"], "overlap 38 (W = 38)"),
        ("/embed_late_chunks", {"inputs": short, "overlap": -1}, 422, ["overlap"], "overlap -1"),
        ("/embed_late_chunks", {"inputs": [0, 133, 2]}, 400, ["inputs"], "token ids"),
        ("/embed_late_chunks", {"spans": [[0, 1]]}, 400, ["inputs"], "no inputs"),
        ("/embed", {"inputs": [[0, 133, 2], [0, 812, 2]], "late_chunking": True}, 422, ["inputs[0]", "token ids"],
         "/embed late_chunking with token ids"),
        ("/embed", {"inputs": [0, 133, 2], "late_chunking": True}, 422, ["inputs", "token ids"],
         "/embed late_chunking with one token-id input"),
        ("/v1/embeddings", {"input": [[133, 812]], "late_chunking": True}, 422, ["input[0]", "token ids"],
         "/v1/embeddings late_chunking with token ids"),
        ("/embed", {"inputs": ["Fine.", " \t\n "], "late_chunking": True}, 422, ["inputs[1]", "white space"],
         "/embed late_chunking with a white-space input"),
        ("/v1/embeddings", {"input": ["  ", "Fine."], "late_chunking": True}, 422, ["input[0]", "white space"],
         "/v1/embeddings late_chunking with a white-space input"),
        ("/embed", {"inputs": pieces, "late_chunking": "yes"}, 400, ["late_chunking"], "late_chunking a string"),
        ("/v1/embeddings", {"input": pieces, "late_chunking": 1}, 400, ["late_chunking"], "late_chunking 1"),
        ("/embed", {"inputs": pieces, "late_chunking": True, "overlap": 38}, 422, ["overlap"],
         "/embed late_chunking, overlap 38"),
    ]
    for path, body, want_status, words, what in errors:
        status, _, out = post_json(server, path, body)
        err = out.get("error") if isinstance(out, dict) else None
        message = err.get("message") if isinstance(err, dict) else err  # OpenAI's {"error": {"message"}}
        c.check(status == want_status and isinstance(message, str) and all(w in message for w in words),
                f"{what}: {want_status} naming {words} ({status} {message})")
    status, _, again = request(server, "POST", "/embed", {"inputs": pieces, "late_chunking": True})
    c.check(status == 200 and again == jina_bytes, "after the errors: the server answers, the same bytes")
    status, _, out = post_json(server, "/embed_late_chunks", {"inputs": nonfiction})
    c.check(status == 200 and out == one, "after the errors: /embed_late_chunks the same answer")

    # ---- concurrent requests: the bytes each gets alone (windows of several requests share passes)
    bodies = [("/embed_late_chunks", {"inputs": nonfiction}), ("/embed_late_chunks", {"inputs": docs[1:5], "overlap": 4}),
              ("/embed", {"inputs": pieces, "late_chunking": True}), ("/embed", {"inputs": docs[:4]}),
              ("/v1/embeddings", {"input": pieces3, "late_chunking": True}),
              ("/embed_late_chunks", {"inputs": docs[:5], "chunk_by": "tokens", "chunk_tokens": 7}),
              ("/embed_late_chunks", {"inputs": docs[:2], "overlap": 30})]
    for rnd in range(2):
        alone = [request(server, "POST", p, b) for p, b in bodies]
        together = [None] * len(bodies)

        def client(i):
            together[i] = request(server, "POST", *bodies[i])
        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(bodies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        c.check(all(a[0] == 200 and b[0] == 200 and a[2] == b[2] for a, b in zip(alone, together)),
                f"{len(bodies)} concurrent requests (round {rnd + 1}): the bytes each gets alone")
finally:
    c.check(server.stop() == 0, "exit 0")
c.done()
