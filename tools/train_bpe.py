#!/usr/bin/python3
"""Train a GPT-2/RoBERTa-style byte-level BPE and save it in Hugging Face's format.

Usage: /usr/bin/python3 tools/train_bpe.py --out DIR --vocab-size 8192 TEXT_FILE...

Words are the GPT-2 pre-tokenizer's pieces of each paragraph (lines of a paragraph joined by a
space); merges are learned on word counts, the most frequent pair first (ties: the pair that
sorts first), as in the original BPE. Writes vocab.json, merges.txt and tokenizer.json with
ids <s>=0 <pad>=1 </s>=2 <unk>=3, the 256 byte tokens, the merges in order, and <mask> last.
"""
import argparse
import collections
import heapq
import json
import os
import sys

from roberta_ref.bpe import PATTERN, bytes_to_unicode
from roberta_ref.corpus import paragraphs


def train(word_counts, num_merges):
    byte_map = bytes_to_unicode()
    words = [[byte_map[b] for b in w.encode("utf-8")] for w in word_counts]
    counts = list(word_counts.values())
    pair_counts = collections.Counter()
    where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_counts[a, b] += counts[i]
            where[a, b].add(i)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < num_merges and heap:
        neg, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -neg or -neg <= 0:
            continue  # stale entry
        merges.append(pair)
        merged = pair[0] + pair[1]
        changed = collections.Counter()
        for i in list(where.pop(pair, ())):
            w = words[i]
            if len(w) < 2:
                continue
            for a, b in zip(w, w[1:]):
                changed[a, b] -= counts[i]
            out, k = [], 0
            while k < len(w):
                if k + 1 < len(w) and w[k] == pair[0] and w[k + 1] == pair[1]:
                    out.append(merged)
                    k += 2
                else:
                    out.append(w[k])
                    k += 1
            words[i] = out
            for a, b in zip(out, out[1:]):
                changed[a, b] += counts[i]
                where[a, b].add(i)
        for p, delta in changed.items():
            if delta:
                pair_counts[p] += delta
                if pair_counts[p] > 0:
                    heapq.heappush(heap, (-pair_counts[p], p))
                else:
                    pair_counts.pop(p)
        pair_counts.pop(pair, None)
    return merges


def tokenizer_json(vocab, merges):
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False,
              "normalized": t != "<mask>", "special": True} for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": [f"{a} {b}" for a, b in merges]},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab-size", type=int, default=8192)
    ap.add_argument("--skip-paragraphs", help="file of held-out paragraph numbers (one per line) to leave out")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    skip = set()
    if args.skip_paragraphs:
        skip = {int(x) for x in open(args.skip_paragraphs).read().split()}
    word_counts = collections.Counter()
    n = 0
    for path in args.files:
        for para in paragraphs(path):
            if n not in skip:
                word_counts.update(PATTERN.findall(para))
            n += 1
    print(f"{n} paragraphs, {len(word_counts)} distinct words", file=sys.stderr)
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    num_merges = args.vocab_size - len(specials) - 256 - 1
    merges = train(word_counts, num_merges)
    byte_map = bytes_to_unicode()
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[byte_map[b]] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<mask>"] = len(vocab)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(args.out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges), f, ensure_ascii=False)
    print(f"vocab {len(vocab)} ({len(merges)} merges) written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
