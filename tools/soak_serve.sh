#!/usr/bin/env bash
# Soak of `roberta serve` (not a test): 16 clients send a mix of requests (single sentences, batches
# of 32, OpenAI base64, /embed_all, /fill_mask single and batched, tokenize, bad JSON) for SECONDS
# (default 600), and the server's resident memory (VmRSS) is printed at the start, every minute and
# at the end (after 3 s without requests). /fill_mask answers 424 on a model without an MLM head:
# still a request of the mix.
#   bash tools/soak_serve.sh [BUILD_DIR] [MODEL_DIR] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} model=${2:-models/demo} seconds=${3:-600}
exec /usr/bin/python3 - "$build/roberta" "$model" "$seconds" <<'PY'
import http.client, json, os, random, sys, threading, time
sys.path.insert(0, "tests/server")
from serve_util import Server
binary, model, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
server = Server(binary, ["--model", model, "--quiet"])
rss = lambda: next(int(l.split()[1]) for l in open(f"/proc/{server.proc.pid}/status") if l.startswith("VmRSS")) // 1024
rng = random.Random(1)
words = "the garden house river city music window morning winter road letter story friend quietly opened".split()
text = lambda: " ".join(rng.choice(words) for _ in range(rng.randint(3, 60)))
masked = lambda: " ".join(rng.choice(words + ["<mask>"]) for _ in range(rng.randint(3, 60))) + " <mask>"
bodies = [("/embed", lambda: {"inputs": text()}), ("/embed", lambda: {"inputs": [text() for _ in range(32)]}),
          ("/v1/embeddings", lambda: {"input": [text(), text()], "encoding_format": "base64"}),
          ("/embed_all", lambda: {"inputs": text()}),
          ("/fill_mask", lambda: {"inputs": masked()}), ("/fill_mask", lambda: {"inputs": [masked() for _ in range(8)]}),
          ("/tokenize", lambda: {"inputs": text()}), ("/embed", lambda: '{"inputs": [')]
counts, lock, deadline = {}, threading.Lock(), time.time() + seconds
def client():
    conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
    while time.time() < deadline:
        path, make = rng.choice(bodies)
        b = make()
        conn.request("POST", path, body=b if isinstance(b, str) else json.dumps(b), headers={"Content-Type": "application/json"})
        r = conn.getresponse(); r.read()
        with lock: counts[r.status] = counts.get(r.status, 0) + 1
start_rss = rss()
print(f"start: RSS {start_rss} MB", flush=True)
threads = [threading.Thread(target=client) for _ in range(16)]
for t in threads: t.start()
while any(t.is_alive() for t in threads):
    time.sleep(min(60, max(1, deadline - time.time())))
    print(f"{time.time() - deadline + seconds:5.0f} s: RSS {rss()} MB, answers by status {dict(sorted(counts.items()))}", flush=True)
for t in threads: t.join()
time.sleep(3)  # the server gives free memory back after a second without work
end_rss = rss()
print(f"end (3 s idle): RSS {end_rss} MB (start {start_rss} MB); server exit status {server.stop()}")
PY
