"""A small, independent pure-Python byte-level BPE tokenizer (GPT-2 / RoBERTa), for reference
dumps and training scripts. Reads vocab.json + merges.txt; <mask> strips the whitespace before it
and <s> </s> <pad> <unk> <mask> written in text are special tokens, as in RobertaTokenizerFast.

    from roberta_ref.bpe import BpeTokenizer
    tok = BpeTokenizer.from_dir("models/demo")
    tok.encode("Hello world!")   # [0, 31414, 232, 328, 2] with roberta-base's files
"""
import functools
import json
import os

import regex

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class BpeTokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.byte_map = bytes_to_unicode()
        self.special_re = regex.compile(r"\s*<mask>|" + "|".join(regex.escape(s) for s in SPECIALS if s != "<mask>"))

    @classmethod
    def from_dir(cls, d):
        with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        merges = []
        with open(os.path.join(d, "merges.txt"), encoding="utf-8") as f:
            for i, line in enumerate(f.read().split("\n")):
                if line and not (i == 0 and line.startswith("#version")):
                    a, b = line.split(" ")
                    merges.append((a, b))
        return cls(vocab, merges)

    @functools.lru_cache(maxsize=1 << 16)
    def bpe(self, word):
        parts = list(word)
        while len(parts) > 1:
            best = min(range(len(parts) - 1), key=lambda i: self.ranks.get((parts[i], parts[i + 1]), 1 << 30))
            if (parts[best], parts[best + 1]) not in self.ranks:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        return tuple(self.vocab[p] for p in parts)

    def encode_plain(self, text):
        ids = []
        for piece in PATTERN.findall(text):
            ids.extend(self.bpe("".join(self.byte_map[b] for b in piece.encode("utf-8"))))
        return ids

    def encode(self, text, add_special_tokens=True):
        ids, pos = [], 0
        for m in self.special_re.finditer(text):
            ids.extend(self.encode_plain(text[pos:m.start()]))
            ids.append(self.vocab[m.group().lstrip()] if m.group().lstrip() == "<mask>" else self.vocab[m.group()])
            pos = m.end()
        ids.extend(self.encode_plain(text[pos:]))
        return [self.vocab["<s>"]] + ids + [self.vocab["</s>"]] if add_special_tokens else ids
