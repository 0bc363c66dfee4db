#!/usr/bin/env python3
"""Late chunking against naive chunking on a retrieval toy set built from the shared corpus.

Usage: /usr/bin/python3 tools/late_chunking_eval.py --roberta build/roberta [--model DIR] [--docs 120]
         [--paragraphs 6] [--seed 0] [--max-length N] [--runs 3]

Documents: --docs blocks of --paragraphs consecutive paragraphs, spread over nonfiction.txt and
fiction.txt (half each), paragraphs joined by a blank line. Chunks: the sentences `roberta embed
--late-chunking` cuts (the same spans for every method). One query per document, a sentence of at
least 12 words (not its first), drawn with --seed:

- context (the inverse cloze task): the sentence is taken out of its document before indexing; the
  query is that sentence, and every chunk of its document is relevant. This asks whether a chunk's
  vector knows its surroundings.
- passage: the documents are indexed whole; the query is the sentence with half of its words
  dropped at random, and only the chunk that holds it is relevant. This asks whether a chunk's
  vector still says what the chunk itself says.

Methods: naive (each chunk embedded alone: `roberta embed`), late chunking with the default overlap,
and late chunking with --overlap 0. Every vector L2-normalised, ranked by cosine over all chunks of
all documents. Metrics: accuracy at 1 and MRR at 10. The wall time of each method's `roberta`
call (model load included; a call on one short line is timed too) is the median of --runs runs,
interleaved.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from roberta_ref.corpus import paragraphs

CORPUS = os.environ.get("ROBERTA_ASSETS", os.path.join(os.path.dirname(__file__), "../../shared/assets")) + "/corpus"


def documents(n, per_doc):
    """n blocks of per_doc consecutive long paragraphs, evenly spread over two corpus files."""
    out = []
    for name in ("nonfiction.txt", "fiction.txt"):
        paras = [p for p in paragraphs(os.path.join(CORPUS, name)) if len(p) >= 200]
        want = n // 2 if name == "nonfiction.txt" else n - n // 2
        step = len(paras) // want
        out += ["\n\n".join(paras[i * step:i * step + per_doc]) for i in range(want)]
    return out


def run(cmd, stdin_text):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed: {p.stderr}")
    return p.stdout, time.perf_counter() - t0


def late(args, docs, extra):
    out, secs = run([args.roberta, "embed", "--late-chunking", "--normalize", "--dtype", "fp32", "--model",
                     args.model] + extra, "".join(json.dumps(d) + "\n" for d in docs))
    return [json.loads(l) for l in out.splitlines()], secs


def dense(args, lines):
    assert all("\n" not in t for t in lines)
    out, secs = run([args.roberta, "embed", "--normalize", "--dtype", "fp32", "--model", args.model] + args.extra,
                    "".join(t + "\n" for t in lines))
    return np.array([json.loads(l) for l in out.splitlines()], dtype=np.float32), secs


def scores(queries, chunks, owner, relevant):
    """Accuracy at 1 and MRR at 10; relevant(q, chunk index) says whether a chunk answers query q."""
    sims = queries @ chunks.T
    acc, mrr = 0.0, 0.0
    for q in range(len(queries)):
        order = np.argsort(-sims[q], kind="stable")[:10]
        hits = [r for r, c in enumerate(order) if relevant(q, c)]
        acc += bool(hits) and hits[0] == 0
        mrr += 1.0 / (hits[0] + 1) if hits else 0.0
    return acc / len(queries), mrr / len(queries)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--roberta", required=True)
    ap.add_argument("--model", default=os.path.join(os.path.dirname(__file__), "../models/demo"))
    ap.add_argument("--docs", type=int, default=120)
    ap.add_argument("--paragraphs", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-length", type=int)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    args.extra = ["--max-length", str(args.max_length)] if args.max_length else []
    rng = random.Random(args.seed)
    docs = documents(args.docs, args.paragraphs)

    # The chunks (sentences) of every document, and one query sentence per document.
    plain, _ = late(args, docs, args.extra)
    picks = []
    for d, out in zip(docs, plain):
        ok = [i for i, (s, e) in enumerate(out["spans"]) if i > 0 and len(d[s:e].split()) >= 12]
        picks.append(rng.choice(ok))
    cut_docs, cut_spans = [], []
    for d, out, i in zip(docs, plain, picks):
        s, e = out["spans"][i]
        cut_docs.append(d[:s] + d[e:])
        shift = lambda x: x if x <= s else x - (e - s)
        cut_spans.append([[shift(a), shift(b)] for j, (a, b) in enumerate(out["spans"]) if j != i])
    sentence = [d[slice(*out["spans"][i])] for d, out, i in zip(docs, plain, picks)]
    halves = []
    for t in sentence:
        words = t.split()
        keep = sorted(rng.sample(range(len(words)), len(words) - len(words) // 2))
        halves.append(" ".join(words[k] for k in keep))

    queries, _ = dense(args, [re.sub(r"\s+", " ", q) for q in sentence + halves])
    q_context, q_passage = queries[:len(docs)], queries[len(docs):]
    methods = {"naive": None, "late": [], "late, overlap 0": ["--overlap", "0"]}
    times = {m: {"context": [], "passage": []} for m in methods}
    load = []  # one short line: the model's load and start-up, in every time below
    results = {}
    for r in range(args.runs):
        load.append(dense(args, ["x"])[1])
        for m, extra in methods.items():
            for task, ds, spans in (("context", cut_docs, cut_spans), ("passage", docs, [o["spans"] for o in plain])):
                if extra is None:
                    texts = [re.sub(r"\s+", " ", d[a:b]) for d, sp in zip(ds, spans) for a, b in sp]
                    emb, secs = dense(args, texts)
                else:
                    rows, secs = late(args, [{"text": d, "spans": sp} for d, sp in zip(ds, spans)], args.extra + extra)
                    emb = np.array([v for o in rows for v in o["embeddings"]], dtype=np.float32)
                    tokens = sum(o["tokens"] for o in rows)
                    windows = sum(o["windows"] for o in rows)
                times[m][task].append(secs)
                if r:
                    continue
                owner = np.array([i for i, sp in enumerate(spans) for _ in sp])
                first = np.cumsum([0] + [len(sp) for sp in spans])
                if task == "context":
                    results[m, task] = scores(q_context, emb, owner, lambda q, c: owner[c] == q)
                else:
                    results[m, task] = scores(q_passage, emb, owner, lambda q, c: c == first[q] + picks[q])
                if extra is not None and task == "passage":
                    results[m, "windows"] = (tokens, windows)
    n_chunks = sum(len(o["spans"]) for o in plain)
    print(f"{len(docs)} documents, {n_chunks} sentence chunks, {plain and sum(o['tokens'] for o in plain)} tokens; "
          f"model {os.path.basename(os.path.normpath(args.model))}, seed {args.seed}\n")
    print("| method | context: acc@1 | context: MRR@10 | passage: acc@1 | passage: MRR@10 | time (passage set) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for m in methods:
        c, p = results[m, "context"], results[m, "passage"]
        t = statistics.median(times[m]["passage"])
        print(f"| {m} | {c[0]:.3f} | {c[1]:.3f} | {p[0]:.3f} | {p[1]:.3f} | {t:.2f} s |")
    print(f"\n(times: the `roberta` call on the passage set, median of {args.runs}, load included; "
          f"loading and one short line take {statistics.median(load):.2f} s)")
    for m in ("late", "late, overlap 0"):
        print(f"\n{m}: {results[m, 'windows'][1]} windows for {results[m, 'windows'][0]} document tokens")


if __name__ == "__main__":
    main()
