"""`roberta serve`: every route field by field, with curl and Python's http.client, against the CLI.

Usage: api_test.py ROBERTA_BINARY MODEL_DIR TEXTS_FILE
MODEL_DIR needs a tokenizer and an MLM head (the CLI fixtures' `tiny`).
"""
import base64
import json
import struct
import subprocess
import sys
import threading

from serve_util import Checks, Server, cli_embed, max_diff, post_json, request

binary, model, texts_file = sys.argv[1:4]


def concurrent_equals_sequential(server, route, bodies, threads=16):
    """Every body sent once alone, then all at once from `threads` clients: the same bytes back.
    Returns (ok, passes the concurrent round took, requests)."""
    alone = [request(server, "POST", route, b) for b in bodies]
    def passes():
        m = request(server, "GET", "/metrics")[2].decode()
        return int(next(l.split()[1] for l in m.splitlines() if l.startswith("te_batch_next_size_count")))
    before = passes()
    out = [None] * len(bodies)
    def client(k):
        for i in range(k, len(bodies), threads):
            out[i] = request(server, "POST", route, bodies[i])
    ts = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ok = all(a[0] == 200 and o is not None and o[0] == 200 and o[2] == a[2] for a, o in zip(alone, out))
    return ok, passes() - before, len(bodies)
texts = [l.rstrip("\n") for l in open(texts_file, encoding="utf-8") if l.strip()]
c = Checks()

ref = cli_embed(binary, model, texts, "--normalize")
ref_raw = cli_embed(binary, model, texts, "--no-normalize")

server = Server(binary, ["--model", model, "--served-model-name", "tiny-test", "--threads", "2"])
try:
    c.check(len(server.listening_lines) == 1, "exactly one `listening on` line: " + server.listening_lines[0].strip())

    # ---- /health, /info, /v1/models
    status, headers, body = request(server, "GET", "/health")
    c.check(status == 200 and body == b"", "GET /health: 200, empty body")
    status, _, data = request(server, "GET", "/info")
    info = json.loads(data)
    c.check(status == 200, "GET /info: 200")
    for field, value in [("model_id", model), ("served_model_name", "tiny-test"), ("model_dtype", "float32"),
                         ("max_concurrent_requests", 512), ("max_batch_tokens", 16384), ("max_client_batch_size", 32),
                         ("max_batch_requests", None), ("auto_truncate", True), ("model_type", {"embedding": {"pooling": "mean"}})]:
        c.check(info.get(field) == value, f"/info {field} = {value!r} (got {info.get(field)!r})")
    c.check(isinstance(info.get("max_input_length"), int) and info["max_input_length"] > 0, "/info max_input_length")
    c.check(isinstance(info.get("version"), str), "/info version")
    # ours: what runs here, as `roberta info` prints it
    cli_info = subprocess.run([binary, "info", "--model", model], capture_output=True, text=True, check=True).stdout
    runtime = info.get("runtime") or {}
    for field, label in [("cpu", "cpu"), ("isa", "instruction set"), ("matrix_products", "matrix products")]:
        line = next((l for l in cli_info.splitlines() if l.startswith(label + " ")), None)
        c.check(line is not None and runtime.get(field) == line[len(label):].strip(),
                f"/info runtime.{field} = roberta info's {label!r} line (got {runtime.get(field)!r}, {line!r})")
    c.check(set(runtime) == {"cpu", "isa", "matrix_products", "attention", "default_dtype"},
            f"/info runtime fields (got {sorted(runtime)})")
    status, _, data = request(server, "GET", "/v1/models")
    models = json.loads(data)
    c.check(status == 200 and models["object"] == "list" and models["data"][0]["id"] == "tiny-test"
            and models["data"][0]["object"] == "model", "GET /v1/models lists the served model")

    # ---- /embed: equal to `roberta embed --normalize`, single and batch, with TEI's headers
    status, headers, out = post_json(server, "/embed", {"inputs": texts[0]})
    c.check(status == 200 and len(out) == 1 and max_diff(out[0], ref[0]) <= 1e-5, "/embed one text = roberta embed --normalize")
    for h in ["x-compute-tokens", "x-compute-characters", "x-total-time", "x-tokenization-time", "x-queue-time",
              "x-inference-time"]:
        c.check(h in headers, f"/embed header {h}: {headers.get(h)}")
    status, headers, out = post_json(server, "/embed", {"inputs": texts})
    c.check(status == 200 and len(out) == len(texts) and all(max_diff(o, r) <= 1e-5 for o, r in zip(out, ref)),
            f"/embed {len(texts)} texts = roberta embed --normalize, in order")
    status, _, out = post_json(server, "/embed", {"inputs": texts, "normalize": False})
    c.check(status == 200 and all(max_diff(o, r) <= 1e-5 for o, r in zip(out, ref_raw)),
            "/embed normalize false = roberta embed --no-normalize")
    status, _, out = post_json(server, "/embed", {"inputs": [texts[1]], "dimensions": 8})
    cut = ref_raw[1][:8]
    norm = sum(x * x for x in cut) ** 0.5
    c.check(status == 200 and len(out[0]) == 8 and max_diff(out[0], [x / norm for x in cut]) <= 1e-5,
            "/embed dimensions 8: the first 8 values, normalised again")
    status, _, out = post_json(server, "/embed", {"inputs": "x", "dimensions": 100000})
    c.check(status == 422, f"/embed dimensions > size: 422 ({status})")

    # ---- /similarity (TEI's sentence-similarity): the cosine of `roberta embed --no-normalize` rows
    def cosine(a, b):
        return sum(x * y for x, y in zip(a, b)) / (sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5
    status, headers, out = post_json(server, "/similarity", {"inputs": {"source_sentence": texts[0], "sentences": texts[1:]}})
    want = [cosine(ref_raw[0], r) for r in ref_raw[1:]]
    c.check(status == 200 and len(out) == len(want) and max_diff(out, want) <= 1e-5 and "x-compute-tokens" in headers,
            f"/similarity = cosines of roberta embed rows, in order ({out[:3]} / {want[:3]})")
    status, _, out = post_json(server, "/similarity", {"inputs": {"source_sentence": texts[1], "sentences": [texts[1]]}})
    c.check(status == 200 and abs(out[0] - 1) <= 1e-6, f"/similarity of a text with itself: 1 ({out})")
    status, _, out = post_json(server, "/similarity", {"inputs": {"source_sentence": "a", "sentences": ["b"]},
                                                       "parameters": {"truncation_direction": "Sideways"}})
    c.check(status == 400 and "truncation_direction" in out["error"], f"/similarity reads its parameters ({out})")
    for body, want_status, want_text in [
            ({"inputs": {"source_sentence": "a", "sentences": []}}, 400, "`inputs.sentences` cannot be empty"),
            ({"inputs": {"source_sentence": "a", "sentences": ["b"] * 32}}, 413, "batch size 33 > maximum allowed batch size 32"),
            ({"inputs": {"source_sentence": "a", "sentences": ["b", ""]}}, 400, "`inputs.sentences[1]` cannot be empty"),
            ({"inputs": {"source_sentence": "a", "sentences": ["b", 3]}}, 400, "`inputs.sentences` must be a list of strings"),
            ({"inputs": {"sentences": ["b"]}}, 400, "missing field `inputs.source_sentence`"),
            ({"inputs": ["a", "b"]}, 400, "`inputs` must be an object"),
            ({"inputs": {"source_sentence": "a", "sentences": ["b"]}, "parameters": {"prompt_name": "nope"}}, 422,
             "prompt name \"nope\" is not one of the model's prompts"),
            ({"inputs": {"source_sentence": "a", "sentences": ["b", "x" * 5000]}, "parameters": {"truncate": False}}, 422,
             "inputs.sentences[1]")]:
        status, _, out = post_json(server, "/similarity", body)
        c.check(status == want_status and out["error"].startswith(want_text), f"/similarity {want_status}: {out}")

    # ---- TEI's other routes: GET / and /ping are /health, POST / and /invocations /embed (an embedding model)
    for path in ("/", "/ping"):
        status, _, body = request(server, "GET", path)
        c.check(status == 200 and body == b"", f"GET {path}: 200, empty body, as /health")
    for path in ("/", "/invocations"):
        status, _, out = post_json(server, path, {"inputs": texts[:2], "normalize": False})
        c.check(status == 200 and len(out) == 2 and all(max_diff(o, r) <= 1e-5 for o, r in zip(out, ref_raw)),
                f"POST {path} = /embed on an embedding model")

    # ---- TEI's /vertex: {"instances": [...]} -> {"predictions": [...]}, each as its route answers it
    bodies = [{"inputs": texts[0]}, {"inputs": texts[1:3], "normalize": False}, {"inputs": texts[3], "dimensions": 4}]
    status, _, out = post_json(server, "/vertex", {"instances": bodies})
    want = [post_json(server, "/embed", b)[2] for b in bodies]
    c.check(status == 200 and list(out) == ["predictions"] and out["predictions"] == want,
            "/vertex on an embedding model: each instance answered as /embed, in order")
    for body, want_status, want_text in [({"instances": [{"inputs": "a"}, {"inputs": ""}]}, 400, "instances[1]: "),
                                         ({"instances": [{"inputs": "a"}, 3]}, 400, "`instances[1]` must be an object"),
                                         ({"instances": {"inputs": "a"}}, 400, "`instances` must be a list")]:
        status, _, out = post_json(server, "/vertex", body)
        c.check(status == want_status and out["error"].startswith(want_text), f"/vertex {want_status}: {out}")
    c.check(post_json(server, "/vertex", {"instances": []})[2] == {"predictions": []}, "/vertex of no instances")
    # every instance is checked before any runs (as TEI parses them all first); a rerank instance on
    # an embedding model is a 424; more instances than --max-concurrent-requests a 429, as in TEI
    def embeds_run():
        m = request(server, "GET", "/metrics")[2].decode()
        return int(next(l.split()[1] for l in m.splitlines() if l.startswith("te_embed_count ")))
    before = embeds_run()
    status, _, out = post_json(server, "/vertex", {"instances": [{"inputs": "a"}, {"inputs": 3}]})
    c.check(status == 400 and out["error"].startswith("instances[1]: `inputs` must be") and embeds_run() == before,
            f"/vertex with a bad instance: 400 naming it, before any instance ran ({out})")
    status, _, out = post_json(server, "/vertex", {"instances": [{"query": "q", "texts": ["a"]}]})
    c.check(status == 424 and out["error"].startswith("instances[0]: "),
            f"/vertex rerank instance, embedding model: {out}")
    status, _, out = post_json(server, "/vertex", {"instances": [{"inputs": "a"}] * 513})
    c.check(status == 413 and "513 instances" in out["error"], f"/vertex of 513 instances: 413 ({status})")

    # ---- tokenize / decode
    status, _, toks = post_json(server, "/tokenize", {"inputs": "Hello world"})
    t = toks[0] if status == 200 else []
    c.check(status == 200 and len(toks) == 1 and len(t) == 4
            and t[0] == {"id": 0, "text": "<s>", "special": True, "start": None, "stop": None}
            and t[1] == {"id": t[1]["id"], "text": "Hello", "special": False, "start": 0, "stop": 5}
            and t[2] == {"id": t[2]["id"], "text": "world", "special": False, "start": 6, "stop": 11}
            and t[3]["special"] and t[3]["text"] == "</s>", f"/tokenize fields: {t}")
    status, _, toks2 = post_json(server, "/tokenize", {"inputs": ["Hello world", "a"], "add_special_tokens": False})
    c.check(status == 200 and len(toks2) == 2 and not any(x["special"] for x in toks2[0]), "/tokenize batch without specials")
    ids = [x["id"] for x in t]
    status, _, dec = post_json(server, "/decode", {"ids": ids})
    c.check(status == 200 and dec == ["Hello world"], f"/decode skips specials by default: {dec}")
    status, _, dec = post_json(server, "/decode", {"ids": [ids, ids], "skip_special_tokens": False})
    c.check(status == 200 and dec == ["<s>Hello world</s>"] * 2, f"/decode batch with specials: {dec}")

    # ---- /embed_all: one row per token; their mean is the (mean-pooled) embedding
    status, _, out = post_json(server, "/embed_all", {"inputs": ["Hello world"]})
    rows = out[0] if status == 200 else []
    c.check(status == 200 and len(rows) == len(ids), f"/embed_all: {len(rows)} token rows for {len(ids)} tokens")
    mean = [sum(col) / len(rows) for col in zip(*rows)] if rows else []
    _, _, raw = post_json(server, "/embed", {"inputs": "Hello world", "normalize": False})
    c.check(bool(mean) and max_diff(mean, raw[0]) <= 1e-5, "/embed_all rows average to /embed normalize=false")
    # inputs are tokenized as given, as TEI does (sentence-transformers, and `roberta embed`, strip them)
    spaced = "  Hello world \t"
    _, _, spaced_tokens = post_json(server, "/tokenize", {"inputs": spaced})
    status, _, out = post_json(server, "/embed_all", {"inputs": [spaced]})
    c.check(status == 200 and len(out[0]) == len(spaced_tokens[0]) > len(ids),
            f"/embed_all of a text with spaces at its ends: one row per token of /tokenize ({len(out[0])})")
    _, _, spaced_raw = post_json(server, "/embed", {"inputs": spaced, "normalize": False})
    _, _, openai_spaced = post_json(server, "/v1/embeddings", {"input": spaced})
    _, _, openai_plain = post_json(server, "/v1/embeddings", {"input": "Hello world"})
    c.check(max_diff(spaced_raw[0], raw[0]) > 1e-3
            and max_diff(openai_spaced["data"][0]["embedding"], openai_plain["data"][0]["embedding"]) > 1e-3,
            "/embed and /v1/embeddings keep the spaces at a text's ends")

    # ---- OpenAI: float and base64 (little-endian float32), usage, ids input
    status, headers, out = post_json(server, "/v1/embeddings", {"input": texts, "model": "tiny-test"})
    c.check(status == 200 and out["object"] == "list" and out["model"] == "tiny-test"
            and [d["index"] for d in out["data"]] == list(range(len(texts)))
            and all(d["object"] == "embedding" for d in out["data"])
            and all(max_diff(d["embedding"], r) <= 1e-5 for d, r in zip(out["data"], ref)),
            "/v1/embeddings float = roberta embed --normalize")
    data = request(server, "POST", "/v1/embeddings", {"input": "x", "dimensions": 2})[2]
    c.check(data.startswith(b'{"object":"list","data":[{"object":"embedding","embedding":[')
            and b'],"index":0}],"model":' in data, f"/v1/embeddings: OpenAI's and TEI's field order ({data[:90]!r})")
    n_tokens = sum(len(x) for x in post_json(server, "/tokenize", {"inputs": texts})[2])
    c.check(out["usage"] == {"prompt_tokens": n_tokens, "total_tokens": n_tokens}, f"usage counts {n_tokens} tokens: {out['usage']}")
    status, _, b64 = post_json(server, "/v1/embeddings", {"input": texts[:2], "encoding_format": "base64"})
    decoded = [list(struct.unpack("<%df" % (len(base64.b64decode(d["embedding"])) // 4), base64.b64decode(d["embedding"])))
               for d in b64["data"]]
    floats = [d["embedding"] for d in out["data"][:2]]
    c.check(status == 200 and len(decoded) == 2 and all(max_diff(d, f) <= 1e-6 for d, f in zip(decoded, floats)),
            "/v1/embeddings base64 decodes to the float answer")
    # Token ids as TEI takes them: decoded with their special tokens and encoded again without
    # adding any. So /tokenize's ids (<s> ... </s>) embed as their text; ids without <s> </s> get none.
    status, _, by_ids = post_json(server, "/v1/embeddings", {"input": ids})
    _, _, by_text = post_json(server, "/v1/embeddings", {"input": "Hello world"})
    c.check(status == 200 and max_diff(by_ids["data"][0]["embedding"], by_text["data"][0]["embedding"]) <= 1e-6,
            "/v1/embeddings: /tokenize's ids [int] = the text they tokenize")
    status, _, out = post_json(server, "/embed", {"inputs": [ids, "Hello world"]})
    c.check(status == 200 and max_diff(out[0], out[1]) <= 1e-6, "/embed: [[int], str], /tokenize's ids = their text")
    inner = ids[1:-1]
    status, _, rows = post_json(server, "/embed_all", {"inputs": [inner, ids]})
    c.check(status == 200 and [len(r) for r in rows] == [len(inner), len(ids)],
            f"/embed_all of ids without <s> </s>: no special tokens added, as TEI ({[len(r) for r in rows]})")
    _, _, bare = post_json(server, "/embed", {"inputs": [inner]})
    c.check(max_diff(bare[0], out[1]) > 1e-3, "/embed of ids without <s> </s> is not the text's embedding")
    # over-long ids: refused without truncation, else cut to max_input_length on the chosen side (no
    # <s> </s> kept, there are none); Left keeps the end
    limit = info["max_input_length"]
    long_ids = post_json(server, "/tokenize", {"inputs": " ".join(texts) * 40, "add_special_tokens": False})[2][0]
    long_ids = [t["id"] for t in long_ids]
    status, _, out = post_json(server, "/embed", {"inputs": [long_ids], "truncate": False})
    c.check(status == 422 and "more than the" in out["error"], f"/embed of over-long ids, truncate false: 422 ({out})")
    status, _, rows = post_json(server, "/embed_all", {"inputs": [long_ids], "truncate": True})
    _, _, left = post_json(server, "/embed_all", {"inputs": [long_ids], "truncate": True, "truncation_direction": "Left"})
    _, _, tail = post_json(server, "/embed_all", {"inputs": [long_ids[-limit:]]})
    c.check(status == 200 and len(rows[0]) == len(left[0]) == limit and max_diff(left[0][-1], tail[0][-1]) <= 1e-6
            and max_diff(rows[0][-1], tail[0][-1]) > 1e-3,
            f"/embed_all of over-long ids, truncated: {limit} rows, Left = the last {limit} ids")
    status, _, both = post_json(server, "/embeddings", {"input": [inner, "Hello world"], "dimensions": 4})
    c.check(status == 200 and len(both["data"]) == 2 and len(both["data"][0]["embedding"]) == 4,
            "/embeddings alias, [[int], str], dimensions 4")

    # ---- /fill_mask = roberta fill-mask --json
    text = "The capital of France is <mask>."
    cli = subprocess.run([binary, "fill-mask", "--dtype", "fp32", "--model", model, "--json", "--top-k", "3", text], capture_output=True,
                         text=True, check=True).stdout
    status, _, out = post_json(server, "/fill_mask", {"inputs": text, "top_k": 3})
    c.check(status == 200 and out == json.loads(cli), "/fill_mask = roberta fill-mask --json")
    status, _, out = post_json(server, "/fill_mask", {"inputs": [text, text], "top_k": 2})
    c.check(status == 200 and len(out) == 2 and len(out[0]) == 2, "/fill_mask batch: one answer per input")
    bodies = [{"inputs": t.replace(" ", " <mask> ", 1) if "<mask>" not in t else t, "top_k": 3} for t in texts] * 4
    ok, n_passes, n = concurrent_equals_sequential(server, "/fill_mask", bodies)
    c.check(ok, f"/fill_mask: {n} concurrent requests = each alone, byte for byte ({n_passes} passes)")
    status, _, out = post_json(server, "/fill_mask", {"inputs": "no mask here"})
    c.check(status == 422 and out["error_type"] == "Validation", f"/fill_mask without <mask>: 422 {out}")

    # ---- classification routes on a model without the head
    for route, body in [("/predict", {"inputs": "x"}), ("/rerank", {"query": "q", "texts": ["a"]})]:
        status, _, out = post_json(server, route, body)
        c.check(status == 424 and "sequence classification head" in out["error"], f"{route}: 424 {out}")

    # ---- curl, a real client: headers and body
    r = subprocess.run(["curl", "-sS", "-D", "-", "-H", "Content-Type: application/json", "-d",
                        json.dumps({"inputs": texts[2]}), server.url + "/embed"], capture_output=True, text=True, check=True)
    head, _, body = r.stdout.replace("\r\n", "\n").partition("\n\n")
    c.check(head.startswith("HTTP/1.1 200") and "x-compute-tokens:" in head.lower()
            and max_diff(json.loads(body)[0], ref[2]) <= 1e-5, "curl POST /embed: 200, TEI headers, = roberta embed")
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", server.url + "/nope"], capture_output=True, text=True)
    c.check(r.stdout == "404", f"curl unknown route: 404 ({r.stdout})")
    r = subprocess.run(["curl", "-sS", "-X", "DELETE", "-o", "/dev/null", "-w", "%{http_code}", server.url + "/embed"],
                       capture_output=True, text=True)
    c.check(r.stdout == "405", f"curl DELETE /embed: 405 ({r.stdout})")

    # ---- /metrics: TEI's names
    status, _, data = request(server, "GET", "/metrics")
    m = data.decode()
    for name in ["te_request_count", "te_request_success", "te_request_failure", "te_queue_size", "te_request_duration_bucket",
                 "te_request_tokenization_duration", "te_request_queue_duration", "te_request_inference_duration",
                 "te_request_input_length", "te_batch_next_size", "te_batch_next_tokens", "te_embed_count",
                 "te_embed_success", "te_embed_duration_bucket", "te_embed_tokenization_duration_count",
                 "te_embed_queue_duration_sum", "te_embed_inference_duration_bucket"]:
        c.check(name in m, f"/metrics has {name}")
    def counter(name):
        return int(next(l.split()[1] for l in request(server, "GET", "/metrics")[2].decode().splitlines()
                        if l.startswith(name + " ")))
    for name in ["te_embed_duration_count", "te_embed_tokenization_duration_count", "te_embed_queue_duration_count",
                 "te_embed_inference_duration_count"]:
        c.check(counter(name) > 0, f"/metrics {name} > 0: observed")
    before = counter("te_embed_count"), counter("te_embed_success")
    post_json(server, "/embed", {"inputs": texts[:3]})
    post_json(server, "/embed", {"inputs": ["fine", "x" * 20000], "truncate": False})  # 422: counted, not a success
    c.check((counter("te_embed_count") - before[0], counter("te_embed_success") - before[1]) == (5, 3),
            "te_embed_count / te_embed_success count inputs, as TEI (5 and 3: 3 good texts, a failed request of 2)")
    c.check('te_request_success{method="batch"}' in m, "/metrics counts batch successes")

    # ---- one log line per request: method, route, status, tokens, ms
    log = "".join(server.lines)
    c.check("POST /embed 200 " in log and " tokens " in log and " ms" in log, "log line per request")
finally:
    code = server.stop()
c.check(code == 0, f"SIGTERM: exit 0 ({code})")

# ---- /predict and /rerank on the CLI fixtures' classifier and cross-encoder, against the CLI
import os
fixtures = os.path.dirname(os.path.abspath(model))
def cli_json(args, stdin=""):
    r = subprocess.run([binary] + args + ["--json", "--dtype", "fp32"], input=stdin, capture_output=True, text=True, check=True)
    return [json.loads(l) for l in r.stdout.splitlines()]
def close(a, b):
    return len(a) == len(b) and all(x.get("label") == y.get("label") and x.get("index") == y.get("index")
                                    and abs(x["score"] - y["score"]) <= 1e-5 for x, y in zip(a, b))
def tokens_of(server, text):
    status, _, out = post_json(server, "/tokenize", {"inputs": text, "add_special_tokens": False})
    return len(out[0])
def tail_of(server, n):
    """A text of exactly n tokens that tokenizes the same at the end of a longer text: words with a
    space before each (byte-level BPE never merges across that boundary)."""
    words, count = [], 0
    while count < n:
        w = " " + texts[len(words) % len(texts)].split()[0]
        k = tokens_of(server, w)
        if count + k > n:
            w, k = " a", tokens_of(server, " a")
            assert k == 1
        words.append(w)
        count += k
    tail = "".join(words)
    assert tokens_of(server, tail) == n
    return tail
head = "".join(" " + t for t in texts) * 20  # what Left truncation must cut away
def max_input(server):
    return json.loads(request(server, "GET", "/info")[2])["max_input_length"]
sentiment = os.path.join(fixtures, "sentiment")
server = Server(binary, ["--model", sentiment, "--quiet"])
try:
    info = json.loads(request(server, "GET", "/info")[2])
    c.check(info.get("model_type") == {"classifier": {"id2label": {"0": "NEGATIVE", "1": "NEUTRAL", "2": "POSITIVE"},
                                                      "label2id": {"NEGATIVE": 0, "NEUTRAL": 1, "POSITIVE": 2}}},
            f"/info of a 3-label classifier: TEI's classifier model_type ({info.get('model_type')})")
    # truncation_direction: Left keeps the end, which scores as the end alone (exactly the model's
    # length); Right the start; anything else is 400.
    tail = tail_of(server, max_input(server) - 2)
    _, _, alone = post_json(server, "/predict", {"inputs": tail, "truncate": False})
    status, _, left = post_json(server, "/predict", {"inputs": head + tail, "truncate": True, "truncation_direction": "Left"})
    c.check(status == 200 and left == alone, f"/predict truncation_direction Left = the text's end alone ({left})")
    status, _, right = post_json(server, "/predict", {"inputs": head + tail, "truncate": True, "truncation_direction": "Right"})
    _, _, start = post_json(server, "/predict", {"inputs": head, "truncate": True})
    c.check(status == 200 and right == start and right != left, f"/predict truncation_direction Right keeps the start")
    status, _, out = post_json(server, "/predict", {"inputs": [["ok"], [head + tail]], "truncate": False})
    c.check(status == 422 and out["error"].startswith("inputs[1]: the text has "), f"/predict names the bad input inputs[1] ({out})")
    status, _, _ = post_json(server, "/predict", {"inputs": "a", "truncation_direction": "Sideways"})
    c.check(status == 400, f"/predict truncation_direction Sideways: 400 ({status})")
    want = cli_json(["classify", "--model", sentiment, "--all"] + texts[:3])
    status, _, out = post_json(server, "/predict", {"inputs": texts[0]})
    c.check(status == 200 and close(out, want[0]), f"/predict one text = roberta classify --all ({out})")
    status, _, out = post_json(server, "/predict", {"inputs": texts[:3]})  # (two strings would be one pair)
    c.check(status == 200 and len(out) == 3 and all(close(o, w) for o, w in zip(out, want)), "/predict batch = classify")
    pair = cli_json(["classify", "--model", sentiment, "--all", "--input-format", "jsonl"], json.dumps(texts[:2]) + "\n")
    status, _, out = post_json(server, "/predict", {"inputs": [texts[0], texts[1]]})
    c.check(status == 200 and close(out, pair[0]), "/predict [a, b] is one pair, = classify on the pair")
    status, _, out = post_json(server, "/predict", {"inputs": [[texts[0], texts[1]], [texts[0]]]})
    c.check(status == 200 and len(out) == 2 and close(out[0], pair[0]) and close(out[1], want[0]), "/predict list of pairs and texts")
    bodies = [{"inputs": t} for t in texts] + [{"inputs": [[a, b]]} for a, b in zip(texts, texts[1:])]
    ok, n_passes, n = concurrent_equals_sequential(server, "/predict", bodies * 3)
    c.check(ok, f"/predict: {n} concurrent requests = each alone, byte for byte ({n_passes} passes)")
    status, _, out = post_json(server, "/predict", {"inputs": [1, 2, 3]})
    c.check(status == 400, f"/predict wrong types: 400 ({status})")
    for path in ("/", "/invocations"):
        status, _, out = post_json(server, path, {"inputs": texts[:3]})
        c.check(status == 200 and len(out) == 3 and all(close(o, w) for o, w in zip(out, want)),
                f"POST {path} = /predict on a classifier")
    # POST / in the shape of HF's text-classification task (its clients read answer[0] as the list):
    # one list also for one text, and the task's parameters top_k and function_to_apply.
    status, _, out = post_json(server, "/invocations", {"inputs": texts[0]})
    c.check(status == 200 and close(out, want[0]), f"POST /invocations one text = /predict's shape ({out})")
    status, _, out = post_json(server, "/", {"inputs": texts[0]})
    c.check(status == 200 and len(out) == 1 and close(out[0], want[0]), f"POST / one text: [[labels]] ({out})")
    status, _, out = post_json(server, "/", {"inputs": texts[0], "parameters": {"top_k": 2}})
    c.check(status == 200 and len(out) == 1 and close(out[0], want[0][:2]), f"POST / parameters.top_k 2 ({out})")
    _, _, raw = post_json(server, "/predict", {"inputs": [[t] for t in texts[:2]], "raw_scores": True})
    status, _, out = post_json(server, "/", {"inputs": [[t] for t in texts[:2]], "parameters": {"function_to_apply": "none"}})
    c.check(status == 200 and len(out) == 2 and all(close(o, r) for o, r in zip(out, raw)),
            f"POST / parameters.function_to_apply none = /predict raw_scores ({out})")
    for params, want_status in [({"top_k": 0}, 422), ({"top_k": "2"}, 400), ({"function_to_apply": "tanh"}, 422), ([1], 400)]:
        status, _, out = post_json(server, "/", {"inputs": texts[0], "parameters": params})
        c.check(status == want_status and "parameters" in out.get("error", ""), f"POST / parameters {params}: {want_status} ({status} {out})")
    status, _, out = post_json(server, "/rerank", {"query": "q", "texts": ["a"]})
    m = request(server, "GET", "/metrics")[2].decode()
    c.check(status == 424 and "not a reranker" in out["error"] and 'te_request_failure{err="model_type"} 1' in m,
            f"/rerank on a 3-label classifier: 424, counted as model_type ({out})")
    counts = {l.split()[0]: float(l.split()[1]) for l in m.splitlines() if l.startswith("te_predict_")}
    c.check(all(counts.get(n, 0) > 0 for n in ["te_predict_count", "te_predict_success", "te_predict_duration_count",
                                                 "te_predict_inference_duration_count"]),
            f"/metrics te_predict_count, te_predict_success, te_predict_*duration observed ({counts.get('te_predict_count')})")
    # TEI's tokenizer refuses an empty input (400 Empty); a pair only when both texts are empty
    for body, want_status in [({"inputs": ""}, 400), ({"inputs": [["ok"], [""]]}, 400), ({"inputs": [["", ""]]}, 400),
                              ({"inputs": ["", "a pair with an empty first text"]}, 200)]:
        status, _, out = post_json(server, "/predict", body)
        c.check(status == want_status and (status == 200 or out["error_type"] == "Empty"),
                f"/predict {body}: {want_status} ({status} {out})")
finally:
    c.check(server.stop() == 0, "exit 0")
reranker = os.path.join(fixtures, "reranker")
server = Server(binary, ["--model", reranker, "--quiet"])
try:
    info = json.loads(request(server, "GET", "/info")[2])
    c.check(info.get("model_type") == {"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}},
            f"/info of a one-label cross-encoder: TEI's reranker model_type ({info.get('model_type')})")
    # A pair <s> q </s></s> d </s> over the model's length loses d's start with Left (longest first).
    query = texts[0]
    tail = tail_of(server, max_input(server) - 4 - tokens_of(server, query))
    _, _, alone = post_json(server, "/rerank", {"query": query, "texts": [tail], "truncate": False})
    status, _, left = post_json(server, "/rerank", {"query": query, "texts": [head + tail], "truncation_direction": "Left"})
    c.check(status == 200 and left == alone, f"/rerank truncation_direction Left = the text's end alone ({left}, {alone})")
    status, _, right = post_json(server, "/rerank", {"query": query, "texts": [head + tail]})
    c.check(status == 200 and right != left, f"/rerank without truncation_direction keeps the start ({right})")
    want = cli_json(["rerank", "--model", reranker, "--query", texts[0], "--return-documents"] + texts[1:])[0]
    status, _, out = post_json(server, "/rerank", {"query": texts[0], "texts": texts[1:], "return_text": True})
    c.check(status == 200 and [o["index"] for o in out] == [w["corpus_id"] for w in want]
            and all(abs(o["score"] - w["score"]) <= 1e-5 and o["text"] == w["text"] for o, w in zip(out, want)),
            f"/rerank = roberta rerank (best first, with texts)")
    bodies = [{"query": q, "texts": texts, "return_text": True} for q in texts] * 3
    ok, n_passes, n = concurrent_equals_sequential(server, "/rerank", bodies)
    c.check(ok, f"/rerank: {n} concurrent requests = each alone, byte for byte ({n_passes} passes)")
    status, _, out = post_json(server, "/rerank", {"query": texts[0], "texts": []})
    c.check(status == 400, f"/rerank no texts: 400 ({status})")
    status, _, out = post_json(server, "/rerank", {"query": "", "texts": ["a", ""]})
    c.check(status == 400 and out["error_type"] == "Empty" and "texts[1]" in out["error"],
            f"/rerank of an empty query and an empty text: 400 Empty ({out})")
    status, _, data = request(server, "POST", "/rerank", {"query": "", "texts": ["a"], "return_text": True})
    c.check(status == 200 and data.startswith(b'[{"index":0,"text":"a","score":'),
            f"/rerank: TEI's field order index, text, score; an empty query with a text is a pair ({data[:60]!r})")
    for path in ("/", "/invocations"):
        status, _, out = post_json(server, path, {"query": texts[0], "texts": texts[1:], "return_text": True})
        c.check(status == 200 and [o["index"] for o in out] == [w["corpus_id"] for w in want],
                f"POST {path} = /rerank on a reranker")
    # /vertex on a reranker: an instance with query and texts is a /rerank request, others /predict's
    bodies = [{"query": texts[0], "texts": texts[1:]}, {"inputs": [texts[0], texts[1]]}]
    status, _, out = post_json(server, "/vertex", {"instances": bodies})
    c.check(status == 200 and out["predictions"] == [post_json(server, "/rerank", bodies[0])[2],
                                                     post_json(server, "/predict", bodies[1])[2]],
            "/vertex on a reranker: /rerank and /predict instances")
finally:
    c.check(server.stop() == 0, "exit 0")

# ---- tokenizer_config.json's model_max_length is /info's max_input_length; with "truncate": false
# /predict and /rerank refuse longer inputs (as /embed does), with truncation they cut there
import shutil
import tempfile
short = tempfile.mkdtemp()
try:
    for name in ("reranker", "sentiment"):
        shutil.copytree(os.path.join(fixtures, name), os.path.join(short, name))
        with open(os.path.join(short, name, "tokenizer_config.json"), "w") as f:
            json.dump({"model_max_length": 8}, f)
    long_text = "one two three four five six seven eight nine ten"
    for name, route, body in (("reranker", "/rerank", {"query": "q", "texts": [long_text]}),
                              ("sentiment", "/predict", {"inputs": long_text})):
        server = Server(binary, ["--model", os.path.join(short, name), "--quiet"])
        try:
            info = json.loads(request(server, "GET", "/info")[2])
            c.check(info["max_input_length"] == 8, f"{name}: /info max_input_length 8 ({info['max_input_length']})")
            status, _, out = post_json(server, route, {**body, "truncate": False})
            c.check(status == 422 and ("more than the 8 allowed" in json.dumps(out) or "at most 8" in json.dumps(out)),
                    f"{route} truncate false over model_max_length: 422 ({status} {out})")
            status, _, out = post_json(server, route, {**body, "truncate": True})
            c.check(status == 200, f"{route} truncate true: 200 ({status} {out})")
        finally:
            c.check(server.stop() == 0, "exit 0")
finally:
    shutil.rmtree(short)

# ---- prompts as TEI applies them: a request's prompt_name, else --default-prompt-name / --default-prompt,
# never the folder's own default_prompt_name (sentence-transformers and `roberta embed` apply it)
st = tempfile.mkdtemp()
try:
    folder = os.path.join(st, "tiny-st")
    shutil.copytree(model, folder)
    os.makedirs(os.path.join(folder, "1_Pooling"))
    with open(os.path.join(folder, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}], f)
    with open(os.path.join(folder, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": info["embedding_dimension"], "pooling_mode_mean_tokens": True}, f)
    with open(os.path.join(folder, "config_sentence_transformers.json"), "w") as f:
        json.dump({"prompts": {"query": "query: ", "doc": "passage: "}, "default_prompt_name": "query"}, f)
    text = "Hello world"
    no_prompt = cli_embed(binary, folder, [text], "--normalize", "--prompt", "")[0]
    folder_default = cli_embed(binary, folder, [text], "--normalize")[0]
    doc = cli_embed(binary, folder, [text], "--normalize", "--prompt-name", "doc")[0]
    custom = cli_embed(binary, folder, [text], "--normalize", "--prompt", "custom: ")[0]
    c.check(max_diff(no_prompt, folder_default) > 1e-3, "the folder's default prompt changes `roberta embed`")
    for flags, want, what in [([], no_prompt, "no flag: no prompt"),
                              (["--default-prompt-name", "query"], folder_default, "--default-prompt-name query"),
                              (["--default-prompt", "custom: "], custom, "--default-prompt")]:
        server = Server(binary, ["--model", folder, "--quiet", *flags])
        try:
            _, _, toks = post_json(server, "/tokenize", {"inputs": text})
            if not flags:
                plain_ids = [t["id"] for t in toks[0]]  # <s> Hello world </s>
            else:
                c.check(len(toks[0]) > len(plain_ids), f"{what}: /tokenize puts the prompt's tokens first")
            status, _, out = post_json(server, "/embed", {"inputs": [text, plain_ids]})
            c.check(status == 200 and max_diff(out[0], want) <= 1e-5,
                    f"{what}: /embed = roberta embed with that prompt")
            # TEI: with a prompt, ids are decoded without their special tokens and embedded as prompt + text
            c.check(max_diff(out[1], want) <= 1e-5, f"{what}: /embed of the text's ids = the same")
            _, _, named = post_json(server, "/embed", {"inputs": text, "prompt_name": "doc"})
            c.check(max_diff(named[0], doc) <= 1e-5, f"{what}: a request's prompt_name wins")
        finally:
            c.check(server.stop() == 0, "exit 0")
    # An empty default prompt is still a prompt (TEI: set, not empty, decides): ids without <s> </s>
    # are decoded and embedded as "" + text, with <s> </s>
    server = Server(binary, ["--model", folder, "--quiet", "--default-prompt", ""])
    try:
        status, _, out = post_json(server, "/embed", {"inputs": [plain_ids[1:-1], text]})
        c.check(status == 200 and max_diff(out[0], out[1]) <= 1e-6 and max_diff(out[1], no_prompt) <= 1e-5,
                "--default-prompt '': ids without <s> </s> embed as their text")
    finally:
        c.check(server.stop() == 0, "exit 0")
    try:
        Server(binary, ["--model", folder, "--quiet", "--default-prompt-name", "nope"]).stop()
        c.check(False, "--default-prompt-name nope must stop the server")
    except RuntimeError as e:
        c.check("--default-prompt-name nope is not one of the model's prompts (doc, query)" in str(e),
                f"--default-prompt-name nope: refused at startup ({str(e)[-160:]!r})")
finally:
    shutil.rmtree(st)

# ---- --cors-allow-origin: only the origins listed are named back
server = Server(binary, ["--model", model, "--quiet", "--cors-allow-origin", "http://a.example, http://b.example",
                         "--cors-allow-origin", "http://d.example"])
try:
    for origin, want in [("http://b.example", "http://b.example"), ("http://d.example", "http://d.example"),
                         ("http://c.example", None)]:
        _, headers, _ = post_json(server, "/embed", {"inputs": "x"}, headers={"Origin": origin})
        status, pre, _ = request(server, "OPTIONS", "/embed", headers={"Origin": origin})
        c.check(headers.get("access-control-allow-origin") == want and pre.get("access-control-allow-origin") == want
                and status == 200, f"--cors-allow-origin: {origin} gets {want}")
finally:
    c.check(server.stop() == 0, "exit 0")

server = Server(binary, ["--model", model, "--quiet", "--cors-allow-origin", "http://a.example,*"])
try:
    _, headers, _ = post_json(server, "/embed", {"inputs": "x"}, headers={"Origin": "http://c.example"})
    c.check(headers.get("access-control-allow-origin") == "*", "--cors-allow-origin with * among them: any origin")
finally:
    c.check(server.stop() == 0, "exit 0")

# ---- TEI's TASK=sentence-similarity: POST / and /invocations answer as /similarity (on an embedding
# model; a classifier's stays /predict, in the shape of HF's text-classification task)
server = Server(binary, ["--model", sentiment, "--quiet"], env={"TASK": "sentence-similarity"})
try:
    _, _, want = post_json(server, "/predict", {"inputs": texts[0]})
    status, _, out = post_json(server, "/", {"inputs": texts[0]})
    c.check(status == 200 and out == [want], f"TASK=sentence-similarity on a classifier: POST / = /predict ({out})")
finally:
    c.check(server.stop() == 0, "exit 0")
server = Server(binary, ["--model", model, "--quiet"], env={"TASK": "sentence-similarity"})
try:
    body = {"inputs": {"source_sentence": texts[0], "sentences": texts[1:3]}}
    _, _, want = post_json(server, "/similarity", body)
    for path in ("/", "/invocations"):
        status, _, out = post_json(server, path, body)
        c.check(status == 200 and out == want, f"TASK=sentence-similarity: POST {path} = /similarity ({out})")
finally:
    c.check(server.stop() == 0, "exit 0")

# ---- --api-key: 401 without or with a wrong token; /health stays public
server = Server(binary, ["--model", model, "--api-key", "s3cret", "--quiet"])
try:
    status, headers, out = post_json(server, "/embed", {"inputs": "x"})
    c.check(status == 401 and out["error_type"] == "Unauthorized", f"no token: 401 {out}")
    status, _, out = post_json(server, "/v1/embeddings", {"input": "x"}, headers={"Authorization": "Bearer nope"})
    c.check(status == 401 and out["error"]["type"] == "authentication_error", f"wrong token (OpenAI route): 401 {out}")
    status, _, out = post_json(server, "/embed", {"inputs": "x"}, headers={"Authorization": "Bearer s3cret"})
    c.check(status == 200, "right token: 200")
    for path in ("/health", "/", "/ping", "/metrics"):
        c.check(request(server, "GET", path)[0] == 200, f"GET {path} needs no token")
    # CORS as TEI's layer (tower-http's CorsLayer, any origin by default): a preflight OPTIONS, on
    # any path and without the token, is 200 with the allowed methods and headers; answers name "*"
    status, headers, body = request(server, "OPTIONS", "/embed", headers={"Origin": "http://page.example",
                                                                          "Access-Control-Request-Method": "POST"})
    c.check(status == 200 and body == b"" and headers.get("access-control-allow-origin") == "*"
            and headers.get("access-control-allow-methods") == "GET,POST"
            and headers.get("access-control-allow-headers") == "content-type,authorization",
            f"CORS preflight: 200, any origin, GET and POST ({status} {headers})")
    status, headers, _ = post_json(server, "/embed", {"inputs": "x"}, headers={"Authorization": "Bearer s3cret",
                                                                              "Origin": "http://page.example"})
    c.check(status == 200 and headers.get("access-control-allow-origin") == "*", "CORS: an answer allows any origin")
    status, headers, _ = request(server, "OPTIONS", "/no/such/route", headers={
        "Origin": "http://page.example", "Access-Control-Request-Headers": "content-type,x-stainless-os"})
    c.check(status == 200 and headers.get("access-control-allow-headers") == "content-type,x-stainless-os",
            f"CORS preflight on any path, the headers asked for allowed ({status} {headers})")
    status, headers, _ = request(server, "OPTIONS", "/embed", body=b"{}")
    c.check(status == 200 and headers.get("connection") == "close", "OPTIONS with a body: 200, connection closed")
    status, headers, _ = request(server, "PUT", "/embed", body=b"{}", headers={"Authorization": "Bearer s3cret"})
    c.check(status == 405 and headers.get("allow") == "POST", f"PUT /embed: 405 Allow POST ({status})")
    c.check(post_json(server, "/", {"inputs": "x"})[0] == 401 and post_json(server, "/similarity", {})[0] == 401,
            "POST / and /similarity need the token")
    c.check(not any(" POST " in l for l in server.lines), "--quiet: no request lines")
finally:
    c.check(server.stop() == 0, "exit 0")
c.done()
