#!/usr/bin/python3
"""Run a RoBERTa checkpoint in PyTorch with Hugging Face's semantics and dump every output as .npy.

Usage:
  /usr/bin/python3 tools/dump_reference.py --model DIR --ids IDS.json --out DUMP [--padding right|left]
  /usr/bin/python3 tools/dump_reference.py --model DIR --ids-npy IDS.npy [--mask-npy MASK.npy] --out DUMP
  /usr/bin/python3 tools/dump_reference.py --model DIR --text-file TEXTS.txt --out DUMP
  any of them with --type-ids TYPES.npy (int64 [B,L], in the padded layout) for token type ids
  --text-file with --prompt TEXT and --strip: the texts as sentence-transformers' encode(prompt=TEXT)
  tokenizes them (prompt + text, then str.strip() as its Transformer.tokenize does), and a Pooling
  module with include_prompt false leaves the prompt's tokens out (SentenceTransformer.
  _get_prompt_length: the tokens of the prompt, stripped the same way, minus the final </s>)

Writes input_ids.npy and attention_mask.npy (int64 [B,L]), hidden_states_0.npy (embedding output)
... hidden_states_N.npy (float32 [B,L,H]), logits.npy (float32 [B,L,V]) when the model has an LM
head, pooler_output.npy (float32 [B,H]) when it has a pooler, and meta.json. With those heads:
sequence_logits.npy (float32 [B,labels]), token_logits.npy (float32 [B,L,labels]),
start_logits.npy and end_logits.npy (float32 [B,L]); with --type-ids, token_type_ids.npy (int64
[B,L]); for roberta-prelayernorm, last_hidden_state.npy (float32 [B,L,H], the final LayerNorm of
hidden_states_N); for a sentence-transformers folder (modules.json), sentence_embedding.npy
(float32 [B,D]); for a sentence-transformers SparseEncoder folder (SpladePooling), or any MLM model
with --splade, sparse_embedding.npy (float32 [B,V], dense); with --m3, m3.json (bge-m3's outputs,
roberta_ref/m3.py). See roberta_ref/reference.py for the model kinds covered.
The forward pass is written here from the math with torch.nn.functional (independent of the C++
engine): word + position + token-type embeddings and LayerNorm, post-LN blocks with scaled
dot-product attention and the extended attention mask (1 - mask) * finfo.min, the activation named
by hidden_act, the MLM head (dense, erf-GELU, LayerNorm, decoder tied to the word embeddings when
lm_head.decoder.weight is absent) and the pooler tanh(dense(h[:, 0])). Computed in float32.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

from roberta_ref.reference import Weights, forward, sentence_embedding, sparse_embedding
from roberta_ref.safetensors_io import load_hf_state_dict


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--ids", help="JSON list of token-id lists")
    src.add_argument("--ids-npy")
    src.add_argument("--text-file", help="one text per line, tokenized with the model's tokenizer")
    ap.add_argument("--mask-npy")
    ap.add_argument("--prompt", default="", help="put before each text of --text-file (sentence-transformers' prompt)")
    ap.add_argument("--strip", action="store_true", help="str.strip() each text of --text-file (after its prompt)")
    ap.add_argument("--type-ids", help="token type ids, int64 [B,L] .npy in the padded layout")
    ap.add_argument("--padding", choices=["right", "left"], default="right")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-logits", action="store_true")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--m3", action="store_true",
                    help="write m3.json: bge-m3's dense, lexical and ColBERT outputs (roberta_ref/m3.py) from the "
                    "folder's colbert_linear.pt and sparse_linear.pt")
    ap.add_argument("--m3-truncate-dim", type=int)
    ap.add_argument("--splade", action="store_true",
                    help="write sparse_embedding.npy for a folder without SpladePooling too (TEI's --pooling splade)")
    args = ap.parse_args()
    torch.set_num_threads(2)
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    pad = cfg.get("pad_token_id", 1)
    prompt_length = None
    if args.ids_npy:
        ids = torch.from_numpy(np.load(args.ids_npy)).long()
        mask = torch.from_numpy(np.load(args.mask_npy)).long() if args.mask_npy else (ids != pad).long()
    else:
        if args.ids:
            with open(args.ids) as f:
                seqs = json.load(f)
        else:
            from roberta_ref.bpe import BpeTokenizer
            tok = BpeTokenizer.from_dir(args.model)
            with open(args.text_file, encoding="utf-8") as f:
                texts = [args.prompt + line for line in f.read().split("\n")[:-1]]
            if args.strip:
                texts = [t.strip() for t in texts]
            seqs = [tok.encode(t) for t in texts]
            if args.prompt:
                prompt_length = len(tok.encode(args.prompt.strip() if args.strip else args.prompt)) - 1
        L = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), L), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), L), dtype=torch.long)
        for b, s in enumerate(seqs):
            sl = slice(0, len(s)) if args.padding == "right" else slice(L - len(s), L)
            ids[b, sl] = torch.tensor(s, dtype=torch.long)
            mask[b, sl] = 1
    if os.path.exists(args.out) and os.listdir(args.out) and not args.force:
        sys.exit(f"error: {args.out} exists and is not empty (use --force)")
    os.makedirs(args.out, exist_ok=True)
    type_ids = None
    if args.type_ids:
        type_ids = torch.from_numpy(np.load(args.type_ids)).long()
        if type_ids.shape != ids.shape:
            sys.exit(f"error: --type-ids shape {tuple(type_ids.shape)} is not the inputs' {tuple(ids.shape)}")
        if int(type_ids.min()) < 0 or int(type_ids.max()) >= cfg.get("type_vocab_size", 2):
            sys.exit(f"error: --type-ids values must be in [0, type_vocab_size = {cfg.get('type_vocab_size', 2)})")
    out = forward(cfg, Weights(load_hf_state_dict(args.model)), ids, mask, token_type_ids=type_ids)
    np.save(os.path.join(args.out, "input_ids.npy"), ids.numpy().astype(np.int64))
    np.save(os.path.join(args.out, "attention_mask.npy"), mask.numpy().astype(np.int64))
    for i, h in enumerate(out["hidden"]):
        np.save(os.path.join(args.out, f"hidden_states_{i}.npy"), h.numpy().astype(np.float32))
    if "logits" in out and not args.no_logits:
        np.save(os.path.join(args.out, "logits.npy"), out["logits"].numpy().astype(np.float32))
    if "pooler" in out:
        np.save(os.path.join(args.out, "pooler_output.npy"), out["pooler"].numpy().astype(np.float32))
    for key in ("sequence_logits", "token_logits", "start_logits", "end_logits"):
        if key in out:
            np.save(os.path.join(args.out, f"{key}.npy"), out[key].numpy().astype(np.float32))
    if type_ids is not None:
        np.save(os.path.join(args.out, "token_type_ids.npy"), type_ids.numpy().astype(np.int64))
    if cfg.get("model_type") == "roberta-prelayernorm":
        np.save(os.path.join(args.out, "last_hidden_state.npy"), out["last_hidden_state"].numpy().astype(np.float32))
    emb = sentence_embedding(args.model, out["last_hidden_state"], mask, prompt_length)
    if emb is not None:
        np.save(os.path.join(args.out, "sentence_embedding.npy"), emb.numpy().astype(np.float32))
    if "logits" in out:
        sparse = sparse_embedding(args.model, out["logits"], mask, default_splade=args.splade)
        if sparse is not None:
            np.save(os.path.join(args.out, "sparse_embedding.npy"), sparse.numpy().astype(np.float32))
    if args.m3:
        from roberta_ref.m3 import m3_outputs
        with open(os.path.join(args.model, "vocab.json")) as f:
            vocab = json.load(f)
        unused = [vocab[t] for t in ("<s>", "</s>", "<pad>", "<unk>") if t in vocab]  # cls, eos, pad, unk
        m3 = m3_outputs(args.model, out["last_hidden_state"], ids, mask, unused, args.m3_truncate_dim)
        with open(os.path.join(args.out, "m3.json"), "w") as f:
            json.dump({"dense_vecs": m3["dense_vecs"].tolist(),
                       "lexical_weights": [{k: float(v) for k, v in d.items()} for d in m3["lexical_weights"]],
                       "colbert_vecs": [v.tolist() for v in m3["colbert_vecs"]]}, f)
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump({"model": os.path.abspath(args.model), "num_layers": cfg["num_hidden_layers"],
                   "padding": args.padding, "torch": torch.__version__}, f, indent=2)


if __name__ == "__main__":
    main()
