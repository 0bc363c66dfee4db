#!/usr/bin/python3
"""The PyTorch reference of `roberta embed --late-chunking` (roberta_ref/late_chunking.py, written from
the spec), writing the same JSON lines as the CLI.

Usage:
  /usr/bin/python3 tools/late_chunking_reference.py --model DIR --docs DOCS.jsonl
      --goldens tests/data/hf/late_chunking.jsonl --max-length L [--overlap O]
      [--chunk-by sentences|tokens] [--chunk-tokens N] [--prompt TEXT | --prompt-ids-from-golden]
      [--normalize | --no-normalize] [--stitch max-context|drop-overlap] --out REF.jsonl

DOCS.jsonl: the CLI's input, one JSON string (the document) or {"text": ..., "spans": [[s,e],...]}
a line (an object without "spans" is chunked as the options say). The reference does not tokenize:
it takes the ids and offsets of the golden record (Hugging Face's tokenizer) whose "text" equals the
document (an error if there is none), and with a prompt the ids of the golden "prompt" record
(without its final </s>). Output, one line per document in input order:
  {"spans": [[s,e],...], "embeddings": [[f,...],...], "tokens": T, "windows": K}
Each window is run as its own unpadded sequence. --stitch drop-overlap (Jina AI's long late chunking)
is a different rule, for a negative control only. An input error names its line and exits 1.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

from roberta_ref.late_chunking import (LateChunkingError, chunk_means, chunk_tokens, head, pack_sentences,
                                       sentence_spans, stitched_states, token_chunks, window_size, windows)
from roberta_ref.reference import Weights
from roberta_ref.safetensors_io import load_hf_state_dict


def parse_doc(line):
    doc = json.loads(line)
    if isinstance(doc, str):
        return doc, None
    if not isinstance(doc, dict) or not isinstance(doc.get("text"), str):
        raise LateChunkingError('expected a JSON string or an object with a "text" string')
    spans = doc.get("spans")
    if spans is None:
        return doc["text"], None
    n = len(doc["text"])
    if not isinstance(spans, list):
        raise LateChunkingError('"spans" must be a list of [start, end] pairs')
    out = []
    for sp in spans:
        if (not isinstance(sp, list) or len(sp) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in sp)):
            raise LateChunkingError(f"span {json.dumps(sp)} is not a pair of integers")
        if not 0 <= sp[0] < sp[1] <= n:
            raise LateChunkingError(f"span {sp} is not within 0 <= start < end <= {n} (the text's code points)")
        out.append((sp[0], sp[1]))
    return doc["text"], out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--goldens", required=True)
    ap.add_argument("--max-length", type=int, required=True)
    ap.add_argument("--overlap", type=int, help="default: W // 4")
    ap.add_argument("--chunk-by", choices=["sentences", "tokens"], default="sentences")
    ap.add_argument("--chunk-tokens", type=int)
    ap.add_argument("--prompt", help="the prompt; its ids come from the golden prompt record with this text")
    ap.add_argument("--prompt-ids-from-golden", action="store_true",
                    help="use the golden prompt record's ids (the only one, or the one of --prompt)")
    norm = ap.add_mutually_exclusive_group()
    norm.add_argument("--normalize", dest="normalize", action="store_true", default=None)
    norm.add_argument("--no-normalize", dest="normalize", action="store_false")
    ap.add_argument("--stitch", choices=["max-context", "drop-overlap"], default="max-context")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.chunk_by == "tokens" and args.chunk_tokens is None:
        sys.exit("error: --chunk-by tokens needs --chunk-tokens N")
    if args.chunk_tokens is not None and args.chunk_tokens < 1:
        sys.exit("error: --chunk-tokens must be at least 1")

    goldens = [json.loads(l) for l in open(args.goldens, encoding="utf-8") if l.strip()]
    by_text = {g["text"]: g for g in goldens if "text" in g}
    prefix = [0]
    if args.prompt is not None or args.prompt_ids_from_golden:
        prompts = [g for g in goldens if "prompt" in g and (args.prompt is None or g["prompt"] == args.prompt)]
        if len(prompts) != 1:
            sys.exit(f"error: {len(prompts)} golden prompt records for {args.prompt!r} in {args.goldens}")
        prefix = prompts[0]["ids"][:-1]

    try:
        W = window_size(args.max_length, len(prefix))
        windows(0, W, W // 4 if args.overlap is None else args.overlap)  # checks the overlap
    except LateChunkingError as e:
        sys.exit(f"error: {e}")
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    w = Weights(load_hf_state_dict(args.model))
    apply_head = head(args.model, args.normalize)
    rows = []
    with open(args.docs, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        try:
            try:
                text, spans = parse_doc(line)
            except json.JSONDecodeError as e:
                raise LateChunkingError(f"not JSON: {e}")
            g = by_text.get(text)
            if g is None:
                raise LateChunkingError("no golden record has this text")
            ids, offsets = g["ids"][1:-1], [tuple(o) for o in g["offsets"][1:-1]]
            if spans is None:
                if args.chunk_by == "tokens":
                    spans = token_chunks(offsets, args.chunk_tokens)
                else:
                    spans = sentence_spans(text)
                    if args.chunk_tokens is not None:
                        spans = pack_sentences(spans, offsets, args.chunk_tokens)
            token_lists = [chunk_tokens(offsets, s, e) for s, e in spans]
            for (s, e), toks in zip(spans, token_lists):
                if not toks:
                    raise LateChunkingError(f"chunk [{s}, {e}) holds no token")
            states, wins = stitched_states(cfg, w, ids, prefix, g["ids"][-1], args.max_length, args.overlap,
                                           args.stitch)
            vecs = apply_head(chunk_means(states, token_lists))
        except LateChunkingError as e:
            sys.exit(f"error: {args.docs} line {n}: {e}")
        rows.append(json.dumps({"spans": [[s, e] for s, e in spans],
                                "embeddings": [[float(v) for v in r] for r in vecs.numpy().astype(np.float32)],
                                "tokens": len(ids), "windows": len(wins)}))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("".join(r + "\n" for r in rows))


if __name__ == "__main__":
    main()
