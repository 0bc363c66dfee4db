"""Latency (p50/p99) and throughput of `roberta serve` at several concurrencies, on loopback.
Run by tools/bench_serve.sh; see there."""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "server"))
from serve_util import Server  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("binary")
p.add_argument("model")
p.add_argument("--seconds", type=float, default=20)
p.add_argument("--concurrency", default="1,8,64")
p.add_argument("--server-args", default="")
a = p.parse_args()

words = ("the a of to and in is was for on that with as by at from his her they this which an be had were not but "
         "garden house river city music window morning winter road letter story friend mother school night table "
         "quietly slowly opened walked found wrote looked remembered carried painted followed answered").split()
rng = random.Random(0)
texts = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 30))).capitalize() + "." for _ in range(500)]

server = Server(a.binary, ["--model", a.model, "--quiet", *a.server_args.split()])
try:
    print(f"model {a.model}, {a.seconds:g} s per concurrency, one sentence per request (6-30 words)")
    print(f"{'clients':>8} {'requests/s':>11} {'tokens/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for n in [int(x) for x in a.concurrency.split(",")]:
        lat, tokens, errors = [], [0], [0]
        lock = threading.Lock()
        deadline = time.time() + a.seconds

        def client(k):
            conn = http.client.HTTPConnection(server.host, server.port, timeout=300)
            j = k * 13
            while time.time() < deadline:
                t0 = time.time()
                conn.request("POST", "/embed", body=json.dumps({"inputs": texts[j % len(texts)]}),
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                j += 1
                with lock:
                    if r.status == 200:
                        lat.append(time.time() - t0)
                        tokens[0] += int(r.getheader("x-compute-tokens", "0"))
                    else:
                        errors[0] += 1
            conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(n)]
        start = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        secs = time.time() - start
        lat.sort()
        pct = lambda q: 1000 * lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
        print(f"{n:>8} {len(lat) / secs:>11.1f} {tokens[0] / secs:>10.0f} {pct(0.5):>8.1f} {pct(0.99):>8.1f} {errors[0]:>7}",
              flush=True)
finally:
    server.stop()
