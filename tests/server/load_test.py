"""Load test of `roberta serve` on loopback: single sentences sent one at a time, then by many
concurrent clients. Checks that nothing fails, that every concurrent answer is byte for byte the
sequential one, and that the concurrent requests were batched (the server's te_batch_next_size
histogram: at least --min-batch requests per forward pass on average).

Throughput is printed but not checked: speed is measured by tools/bench_serve.sh, not by a test
(how much batching gains depends on the CPU and on what else shares it; docs/performance.md).

Usage: load_test.py ROBERTA_BINARY MODEL_DIR [--seconds 30] [--clients 64] [--min-batch 8]
"""
import argparse
import http.client
import json
import random
import threading
import time

from serve_util import Checks, Server, cli_embed, max_diff

p = argparse.ArgumentParser()
p.add_argument("binary")
p.add_argument("model")
p.add_argument("--seconds", type=float, default=30, help="duration of each phase")
p.add_argument("--clients", type=int, default=64)
p.add_argument("--min-batch", type=float, default=8.0,
               help="requests per forward pass, on average over the concurrent phase (default 8)")
p.add_argument("--threads", default=None, help="--threads of the server")
p.add_argument("--words", default="6:30", help="words per sentence, MIN:MAX")
a = p.parse_args()
c = Checks()

words = ("the a of to and in is was for on that with as by at from his her they this which an be had were not but "
         "garden house river city music window morning winter road letter story friend mother school night table "
         "quietly slowly opened walked found wrote looked remembered carried painted followed answered").split()
rng = random.Random(0)
lo, hi = (int(x) for x in a.words.split(":"))
texts = [" ".join(rng.choice(words) for _ in range(rng.randint(lo, hi))).capitalize() + "." for _ in range(200)]

args = ["--model", a.model, "--quiet"] + (["--threads", a.threads] if a.threads else [])
server = Server(a.binary, args)


def post(conn, text):
    conn.request("POST", "/embed", body=json.dumps({"inputs": text}), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    return r.status, data


try:
    # Sequential: one client, one request at a time (also the reference answers).
    reference = {}
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    for t in texts[:5]:
        post(conn, t)  # warm-up
    n_seq, errors, i = 0, 0, 0
    start = time.time()
    while time.time() - start < a.seconds:
        t = texts[i % len(texts)]
        status, data = post(conn, t)
        if status != 200:
            errors += 1
        else:
            reference.setdefault(t, data)
        n_seq += 1
        i += 1
    seq_secs = time.time() - start
    conn.close()
    for t in texts:  # every text has its sequential answer
        if t not in reference:
            conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
            reference[t] = post(conn, t)[1]
            conn.close()
    cli = cli_embed(a.binary, a.model, texts, "--normalize")
    worst_cli = max(max_diff(json.loads(reference[t])[0], v) for t, v in zip(texts, cli))
    c.check(worst_cli <= 1e-5, f"sequential answers = roberta embed --normalize (max |diff| {worst_cli:.2e})")

    # Concurrent: `clients` threads, each on its own keep-alive connection.
    counts = [0] * a.clients
    bad = []
    differ = [0]
    lock = threading.Lock()
    deadline = [0.0]

    def client(k):
        conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
        j = k * 7
        while time.time() < deadline[0]:
            t = texts[j % len(texts)]
            j += 1
            try:
                status, data = post(conn, t)
            except (OSError, http.client.HTTPException) as e:
                with lock:
                    bad.append(repr(e))
                conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
                continue
            if status != 200:
                with lock:
                    bad.append(f"status {status}: {data[:100]!r}")
                continue
            if data != reference[t]:  # byte for byte: batching changes no bit of an answer
                with lock:
                    differ[0] += 1
            counts[k] += 1
        conn.close()

    def batch_sizes():
        """(sum, count) of the server's te_batch_next_size histogram: requests per forward pass."""
        conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        values = dict(line.split()[:2] for line in text.splitlines() if line.startswith("te_batch_next_size_"))
        return float(values["te_batch_next_size_sum"]), float(values["te_batch_next_size_count"])

    before = batch_sizes()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(a.clients)]
    start = time.time()
    deadline[0] = start + a.seconds
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    conc_secs = time.time() - start
    n_conc = sum(counts)
    after = batch_sizes()
    passes = after[1] - before[1]
    per_pass = (after[0] - before[0]) / passes if passes else 0.0

    seq_rate, conc_rate = n_seq / seq_secs, n_conc / conc_secs
    print(f"sequential: {n_seq} requests in {seq_secs:.1f} s = {seq_rate:.1f} requests/s")
    print(f"{a.clients} concurrent clients: {n_conc} requests in {conc_secs:.1f} s = {conc_rate:.1f} requests/s")
    print(f"ratio {conc_rate / seq_rate:.2f}; {per_pass:.1f} requests per forward pass on average ({passes:.0f} passes)")
    c.check(errors == 0 and not bad, f"no errors ({errors} sequential, {len(bad)} concurrent: {bad[:3]})")
    c.check(differ[0] == 0, f"every concurrent answer is byte for byte the sequential one ({differ[0]} differ)")
    c.check(per_pass >= a.min_batch, f"concurrent requests batched: {per_pass:.1f} per pass (>= {a.min_batch})")
finally:
    code = server.stop()
c.check(code == 0, f"exit 0 ({code})")
c.done()
