#!/usr/bin/python3
"""Writes the committed seed corpora of the libFuzzer targets into tests/fuzz/corpus/.

Usage: /usr/bin/python3 tools/make_fuzz_seeds.py [SHARED_DIR]
"""
import json
import os
import struct
import sys

import numpy as np

shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "shared")
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# tokenizer: every 12th test case, and a few hostile strings
lines = open(os.path.join(shared, "assets", "tokenizer-cases.txt"), encoding="utf-8").read().split("\n")
for i, line in enumerate(lines[::12]):
    put("fuzz_tokenizer", f"case{i:03d}", line)
put("fuzz_tokenizer", "invalid-utf8", b"caf\xc3 \xff\xfe <mask>\xed\xa0\x80 \xf4\x90\x80\x80")
put("fuzz_tokenizer", "specials", "<s><mask></s><pad><unk> <mask>\t<mask>\u3000<mask>")

# tokenizer files: a small byte-level BPE
def byte_chars():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for b, c in sorted(zip(bs, cs))]

chars = byte_chars()
vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
for c in chars:
    vocab[c] = len(vocab)
merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a")]
for a, b in merges:
    vocab[a + b] = len(vocab)
vocab["<mask>"] = len(vocab)
doc = json.load(open(os.path.join(shared, "assets", "roberta-base-tokenizer", "tokenizer.json"), encoding="utf-8"))
doc["model"]["vocab"] = vocab
doc["model"]["merges"] = [f"{a} {b}" for a, b in merges]
doc["added_tokens"][-1]["id"] = vocab["<mask>"]
put("fuzz_tokenizer_files", "tokenizer.json", json.dumps(doc, ensure_ascii=False))
put("fuzz_tokenizer_files", "vocab-nul-merges",
    json.dumps(vocab, ensure_ascii=False) + "\0#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))

# tokenizer files: SentencePiece Unigram ones (tests/data/hf): the byte-fallback one as it is, and
# a small one with the graphemes' charsmap, every normalizer and WhitespaceSplit + Metaspace
hf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "hf")
with open(os.path.join(hf, "unigram_byte_fallback", "tokenizer.json"), encoding="utf-8") as f:
    put("fuzz_tokenizer_files", "unigram-byte-fallback-tokenizer.json", f.read())
with open(os.path.join(hf, "unigram", "tokenizer.json"), encoding="utf-8") as f:
    doc = json.load(f)
with open(os.path.join(hf, "precompiled_graphemes.json"), encoding="utf-8") as f:
    charsmap = json.load(f)["charsmap"]
doc["model"]["vocab"] = doc["model"]["vocab"][:300] + [["<mask>", 0.0]]
doc["added_tokens"][-1]["id"] = 300
doc["normalizer"] = {"type": "Sequence", "normalizers": [
    {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
    {"type": "Precompiled", "precompiled_charsmap": charsmap}, {"type": "Strip", "strip_left": True, "strip_right": True},
    {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}, {"type": "Prepend", "prepend": "\u2581"}]}
doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
    {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]}
put("fuzz_tokenizer_files", "unigram-tokenizer.json", json.dumps(doc, ensure_ascii=False))
put("fuzz_tokenizer", "unigram", "\uff46ull  \u00e9\u0301 \uff45\u0301 \u2581x a\u200db \u2122\u001e [K] \U0001F600\u200d\U0001F600 \r\n")

# safetensors: one valid file with F32, F16 and BF16 tensors
def safetensors(tensors):
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data

put("fuzz_safetensors", "valid", safetensors([
    ("a.weight", "F32", [2, 3], np.arange(6, dtype="<f4").tobytes()),
    ("b", "F16", [4], np.array([1, -2, 0.5, 65504], dtype="<f2").tobytes()),
    ("c", "BF16", [2], struct.pack("<HH", 0x3F80, 0xC0A0)),
    ("d", "I64", [1, 2], np.array([[0, 1]], dtype="<i8").tobytes()),
]))

# config.json
put("fuzz_config", "roberta-base", open(os.path.join(shared, "assets", "roberta-base-tokenizer", "config.json")).read())
put("fuzz_config", "small", json.dumps({"model_type": "roberta", "vocab_size": 300, "hidden_size": 32,
                                        "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
                                        "max_position_embeddings": 66, "hidden_act": "gelu_new",
                                        "layer_norm_eps": 1e-12, "position_embedding_type": "absolute"}))

# npy
import io
for name, arr in (("f4", np.arange(6, dtype="<f4").reshape(2, 3)), ("i8", np.array([[0, 31414, 2]], dtype="<i8")),
                  ("f8", np.array([1.5], dtype="<f8"))):
    buf = io.BytesIO()
    np.save(buf, arr)
    put("fuzz_npy", name, buf.getvalue())
print("seeds written to", os.path.normpath(out))
