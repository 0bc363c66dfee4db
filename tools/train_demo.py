#!/usr/bin/python3
"""Pretrain the demo RoBERTa on the shared public-domain corpus, following the RoBERTa recipe.

    /usr/bin/python3 tools/train_demo.py prepare --corpus ../shared/assets/corpus --work W [--tokenizer DIR]
    /usr/bin/python3 tools/train_demo.py train   --work W [--steps N] [--lr LR] [--minutes M] [--resume]
    /usr/bin/python3 tools/train_demo.py export  --work W --out DIR
    /usr/bin/python3 tools/train_demo.py eval    --model DIR (--work W | --corpus C) --masks-out FILE.jsonl

tools/train_demo.sh runs them all, from nothing to the held-out figures; the defaults made models/demo.

prepare: paragraphs (hard-wrapped lines joined) of the corpus; 1% held out in contiguous blocks of
  40 paragraphs spread over the books (block k is held out when k % 100 == 50); a byte-level BPE
  (tools/train_bpe.py) trained on the rest, or --tokenizer's; both parts tokenized into one id
  stream each, books separated by </s>, with the offsets where sentences start.
train: masked language modelling only (no next-sentence prediction); dynamic masking (a new mask
  each time a sequence is seen: 15% of tokens, 80% <mask> / 10% random / 10% unchanged);
  FULL-SENTENCES packing (whole consecutive sentences up to 126 tokens, crossing paragraph and book
  boundaries, right-padded); AdamW (betas 0.9, 0.98, eps 1e-6, weight decay 0.01) with linear
  warm-up over 6% of the steps then linear decay; gradient accumulation (--accum) for a larger
  effective batch; dropout (--dropout). Matrix products run in bfloat16 under autocast (3x faster
  than fp32 here, through oneDNN's AVX512-BF16 kernels); weights, optimiser state, LayerNorms,
  softmax and the loss stay in fp32. Defaults: 8 layers of width 256, steps of 32 sequences, peak
  lr 1e-3, 8000 steps. This budget is a tiny fraction of RoBERTa's, so three choices differ from
  the paper's: small steps (more updates per token), no dropout (the model underfits), and the
  starting point of the first two blocks (positional_init): with the paper's N(0, 0.02) the
  attention stayed uniform and the loss sat at ~6.2-6.7 (word frequencies) for thousands of steps
  in every variant tried, while heads that start out looking at their neighbours reached 5.6 after
  375 steps of 16 sequences. Every --eval-every steps the loss and top-1 accuracy on a fixed sample
  of held-out text are logged. Seeded; a checkpoint (model, optimiser, schedule, RNG and data
  position) every 10 minutes and at the end, and --resume continues from it exactly.
export: a Hugging Face folder (config.json, fp16 model.safetensors with HF's names, tokenizer,
  training_log.json).
eval: held-out masked-LM top-1/top-5 in PyTorch (fp32) over 126-token windows of the held-out
  text; writes the exact masked inputs so that `roberta eval-mlm` scores the very same masks.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

# PyTorch's OpenMP threads must not spin while OpenBLAS works (1.45x faster training here).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from roberta_ref.bpe import BpeTokenizer, bytes_to_unicode  # noqa: E402
from roberta_ref.checkpoints import save_weights  # noqa: E402
from roberta_ref.corpus import paragraphs  # noqa: E402
from roberta_ref.safetensors_io import read_safetensors  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

SHAPE = dict(vocab_size=8192, hidden_size=256, num_hidden_layers=8, num_attention_heads=4, intermediate_size=1024,
             seq_len=128)
PAD, BOS, EOS, UNK = 1, 0, 2, 3


# ---------------------------------------------------------------- prepare

def cmd_prepare(args):
    os.makedirs(args.work, exist_ok=True)
    files, train_paras, held_paras, held = split_corpus(args.corpus)
    with open(os.path.join(args.work, "heldout-paragraphs.txt"), "w") as f:
        f.write("\n".join(map(str, held)) + "\n")
    with open(os.path.join(args.work, "heldout.txt"), "w", encoding="utf-8") as f:
        for hp in held_paras:
            f.write("\n".join(hp) + "\n")
    tok_dir = os.path.join(args.work, "tokenizer")
    if args.tokenizer:
        os.makedirs(tok_dir, exist_ok=True)
        for name in ("vocab.json", "merges.txt", "tokenizer.json"):
            shutil.copy(os.path.join(args.tokenizer, name), os.path.join(tok_dir, name))
    else:
        subprocess.run([sys.executable, os.path.join(HERE, "train_bpe.py"), "--out", tok_dir, "--vocab-size",
                        str(args.vocab_size), "--skip-paragraphs", os.path.join(args.work, "heldout-paragraphs.txt")]
                       + files, check=True)
    tok = BpeTokenizer.from_dir(tok_dir)
    boundaries = SentenceBoundaries(tok_dir)
    for name, books in (("train", train_paras), ("heldout", held_paras)):
        ids, starts = id_stream(tok, books, boundaries)
        np.save(os.path.join(args.work, f"{name}-ids.npy"), np.array(ids, dtype=np.int32))
        np.save(os.path.join(args.work, f"{name}-sentence-starts.npy"), np.array(starts, dtype=np.int64))
        print(f"{name}: {len(ids)} tokens, {len(starts)} sentences, {sum(len(b) for b in books)} paragraphs",
              file=sys.stderr)


def split_corpus(corpus):
    """The corpus files, and per file its training and held-out paragraphs, and the held-out paragraphs'
    numbers: blocks of 40 consecutive paragraphs, block k held out when k % 100 == 50."""
    files = [os.path.join(corpus, f) for f in ("fiction.txt", "nonfiction.txt", "drama-poetry.txt")]
    held, train_paras, held_paras, n = [], [], [], 0
    for path in files:
        tp, hp = [], []
        for para in paragraphs(path):
            (hp if (n // 40) % 100 == 50 else tp).append(para)
            if (n // 40) % 100 == 50:
                held.append(n)
            n += 1
        train_paras.append(tp)
        held_paras.append(hp)
    return files, train_paras, held_paras, held


def id_stream(tok, books, boundaries=None):
    """The books' paragraphs tokenized one after another, each book followed by </s>; and, given
    SentenceBoundaries, where the sentences start in that stream."""
    ids, starts = [], []
    for book in books:
        for para in book:
            para_ids = tok.encode(para, add_special_tokens=False)
            if boundaries:
                starts.extend(len(ids) + i for i in boundaries.starts(para_ids))
            ids.extend(para_ids)
        ids.append(EOS)
    return ids, starts


class SentenceBoundaries:
    """Where sentences start in a paragraph's token ids: at 0, and at a token that begins with a space
    and then (after any opening quotes) a capital letter, right after a token ending in . ! or ?
    (closing quotes allowed) -- unless that token is the dot after a title such as Mr. or St."""

    TITLES = {"mr", "mrs", "dr", "st", "messrs", "mme", "mlle", "capt", "col", "gen", "rev", "prof", "sr", "jr"}

    def __init__(self, tok_dir):
        byte_of = {c: b for b, c in bytes_to_unicode().items()}
        vocab = json.load(open(os.path.join(tok_dir, "vocab.json"), encoding="utf-8"))
        text = {i: bytes(byte_of[c] for c in t if c in byte_of).decode("utf-8", "ignore") for t, i in vocab.items()}
        closers, openers = "\"'\u201d\u2019)]_", "\"'\u201c\u2018(_"
        self.ends = {i for i, t in text.items() if t.rstrip(closers)[-1:] in (".", "!", "?")}
        self.opens = set()
        for i, t in text.items():
            rest = t[1:].lstrip(openers)
            if t[:1] == " " and len(t) > 1 and (rest[:1].isupper() or not rest):
                self.opens.add(i)
        self.dot = vocab.get(".")
        self.titles = {i for i, t in text.items() if t.strip().lower() in self.TITLES}

    def starts(self, ids):
        out = [0] if ids else []
        for j in range(1, len(ids)):
            if ids[j] in self.opens and ids[j - 1] in self.ends and not (
                    ids[j - 1] == self.dot and j >= 2 and ids[j - 2] in self.titles):
                out.append(j)
        return out


# ---------------------------------------------------------------- model

class Roberta(nn.Module):
    def __init__(self, V, H, L, NH, I, P, dropout=0.1):
        super().__init__()
        self.H, self.NH = H, NH
        self.word = nn.Embedding(V, H)
        self.pos = nn.Embedding(P, H)
        self.emb_ln = nn.LayerNorm(H, eps=1e-5)
        self.layers = nn.ModuleList()
        for _ in range(L):
            self.layers.append(nn.ModuleDict(dict(
                qkv=nn.Linear(H, 3 * H), out=nn.Linear(H, H), ln1=nn.LayerNorm(H, eps=1e-5),
                inter=nn.Linear(H, I), out2=nn.Linear(I, H), ln2=nn.LayerNorm(H, eps=1e-5))))
        self.head_dense = nn.Linear(H, H)
        self.head_ln = nn.LayerNorm(H, eps=1e-5)
        self.head_bias = nn.Parameter(torch.zeros(V))
        self.drop = nn.Dropout(dropout)
        for m in self.modules():
            if isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    def forward(self, ids, masked_positions):
        # ids (B, T), right-padded with <pad>: real tokens sit at positions pad + 1 + i as in RoBERTa
        B, T = ids.shape
        pos = torch.arange(T, device=ids.device) + PAD + 1
        x = self.drop(self.emb_ln(self.word(ids) + self.pos(pos)[None]))
        d = self.H // self.NH
        padded = ids == PAD
        key_bias = torch.zeros(B, 1, 1, T).masked_fill(padded[:, None, None, :], float("-inf")) if padded.any() else 0
        for layer in self.layers:
            q, k, v = layer["qkv"](x).view(B, T, 3, self.NH, d).permute(2, 0, 3, 1, 4)
            att = torch.softmax((q @ k.transpose(-1, -2)).float() / math.sqrt(d) + key_bias, dim=-1)
            ctx = (self.drop(att).to(v.dtype) @ v).transpose(1, 2).reshape(B, T, self.H)
            x = layer["ln1"](x + self.drop(layer["out"](ctx)).float())
            x = layer["ln2"](x + self.drop(layer["out2"](F.gelu(layer["inter"](x)))).float())
        h = x[masked_positions]  # (M, H): the MLM head only where tokens were masked
        h = self.head_ln(F.gelu(self.head_dense(h)).float())
        return (h @ self.word.weight.t()).float() + self.head_bias


def build(shape, dropout=0.1):
    return Roberta(shape["vocab_size"], shape["hidden_size"], shape["num_hidden_layers"], shape["num_attention_heads"],
                   shape["intermediate_size"], shape["seq_len"] + PAD + 1, dropout)


def positional_init(model, layers, gen, position_dims=64, position_share=0.5, peak_score=12.0):
    """Start the heads of the first `layers` blocks attending to fixed neighbours (-2, -1, +1, +2 for 4 heads).

    Position embeddings become sinusoids at random frequencies in `position_dims` dimensions (word
    embeddings start at zero there), holding `position_share` of the embedding's variance. A head's
    key reads the sinusoids and its query rotates them by its offset, so query i meets key i + offset
    with score `peak_score` and the others with scores near zero. Everything is trained afterwards;
    only the starting point differs from the paper's N(0, 0.02), whose uniform attention left the
    model predicting word frequencies for thousands of steps.
    """
    H, NH = model.H, model.NH
    d = H // NH
    offsets = [o for o in range(-(NH // 2), NH - NH // 2 + 1) if o != 0][:NH]
    pairs = min(position_dims, d) // 2
    omega = torch.rand(pairs, generator=gen) * (math.pi - 0.2) + 0.2
    word_variance = (H - 2 * pairs) * 0.02 ** 2
    amplitude = math.sqrt(word_variance * position_share / (1 - position_share) / pairs)
    position = torch.arange(model.pos.weight.shape[0], dtype=torch.float32)[:, None]
    # after the embedding LayerNorm each sinusoid pair has squared norm ~ H * share / pairs
    scale = math.sqrt(peak_score * math.sqrt(d) / (H * position_share))
    with torch.no_grad():
        model.word.weight[:, :2 * pairs] = 0
        model.pos.weight.zero_()
        model.pos.weight[:, 0:2 * pairs:2] = amplitude * torch.cos(position * omega)
        model.pos.weight[:, 1:2 * pairs:2] = amplitude * torch.sin(position * omega)
        for layer in model.layers[:layers]:
            qkv = layer["qkv"].weight
            for head, offset in enumerate(offsets):
                q, k = qkv[head * d:(head + 1) * d], qkv[H + head * d:H + (head + 1) * d]
                q.zero_(), k.zero_()
                for f in range(pairs):
                    c, s = math.cos(omega[f] * offset), math.sin(omega[f] * offset)
                    q[2 * f:2 * f + 2, 2 * f:2 * f + 2] = scale * torch.tensor([[c, -s], [s, c]])
                    k[2 * f, 2 * f] = k[2 * f + 1, 2 * f + 1] = scale


# ---------------------------------------------------------------- train

def mask_tokens(ids, vocab_size, mask_id, gen):
    """RoBERTa's dynamic masking: 15% of non-special tokens; 80% <mask>, 10% random, 10% kept."""
    special = (ids == BOS) | (ids == EOS) | (ids == PAD)
    chosen = (torch.rand(ids.shape, generator=gen) < 0.15) & ~special
    labels = ids[chosen]
    r = torch.rand(labels.shape, generator=gen)
    inputs = ids.clone()
    replaced = labels.clone()
    replaced[r < 0.8] = mask_id
    rand = (r >= 0.8) & (r < 0.9)
    replaced[rand] = torch.randint(4, vocab_size - 1, (int(rand.sum()),), generator=gen)
    inputs[chosen] = replaced
    return inputs, chosen, labels


def full_sentence_spans(n_tokens, sentence_starts, body):
    """FULL-SENTENCES packing: consecutive whole sentences, as many as fit in `body` tokens, then the next
    span starts where the last one stopped. A sentence longer than `body` is cut into `body`-token pieces."""
    starts = np.append(sentence_starts[sentence_starts < n_tokens], n_tokens)
    spans, begin, k = [], int(starts[0]), 0
    while begin < n_tokens:
        # the furthest sentence start that still fits after `begin`
        k = int(np.searchsorted(starts, begin + body, side="right")) - 1
        end = int(starts[k]) if starts[k] > begin else min(begin + body, n_tokens)
        spans.append((begin, end))
        begin = end
    return np.array(spans, dtype=np.int64)


class Batches:
    """Packed sequences in a random order, reshuffled every pass. Spans shorter than the sequence are
    right-padded with <pad>. The pass's order and position are saved with checkpoints, so that a resumed
    run sees exactly the batches the uninterrupted run would have seen."""

    def __init__(self, stream, spans, seq_len, batch, gen):
        self.stream, self.spans, self.seq_len, self.batch, self.gen = stream, spans, seq_len, batch, gen
        self.count = len(spans)
        self.order, self.start = None, 0

    def __next__(self):
        if self.order is None or self.start + self.batch > self.count:
            self.order, self.start = torch.randperm(self.count, generator=self.gen), 0
        rows = np.full((self.batch, self.seq_len), PAD, dtype=np.int64)
        for r, i in enumerate(self.order[self.start:self.start + self.batch].tolist()):
            begin, end = self.spans[i]
            rows[r, 0], rows[r, 1:end - begin + 1], rows[r, end - begin + 1] = BOS, self.stream[begin:end], EOS
        self.start += self.batch
        return torch.from_numpy(rows[:, :int((rows != PAD).sum(1).max())])

    def state_dict(self):
        return {"order": self.order, "start": self.start}

    def load_state_dict(self, state):
        self.order, self.start = state["order"], state["start"]


def cmd_train(args):
    torch.set_num_threads(args.threads)
    work = args.work
    vocab = json.load(open(os.path.join(work, "tokenizer", "vocab.json")))
    shape = dict(vocab_size=len(vocab), hidden_size=args.hidden, num_hidden_layers=args.layers,
                 num_attention_heads=args.heads, intermediate_size=args.intermediate, seq_len=args.seq_len)
    mask_id = vocab["<mask>"]
    stream = np.load(os.path.join(work, "train-ids.npy"))
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    model = build(shape, args.dropout)
    if args.positional_layers:
        positional_init(model, args.positional_layers, gen)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98), eps=1e-6)
    warmup = max(1, int(0.06 * args.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (args.steps - s) / max(1, args.steps - warmup))))
    state = {"step": 0, "tokens": 0, "log": [], "seconds": 0.0, "settings": vars(args)}
    spans = full_sentence_spans(len(stream), np.load(os.path.join(work, "train-sentence-starts.npy")), args.seq_len - 2)
    data = Batches(stream, spans, args.seq_len, args.micro_batch, gen)
    heldout = HeldOut(np.load(os.path.join(work, "heldout-ids.npy")), args.seq_len, mask_id, args.eval_sequences)
    ckpt = os.path.join(work, "checkpoint.pt")
    if args.resume and os.path.exists(ckpt):
        c = torch.load(ckpt)
        if c["shape"] != shape:
            sys.exit(f"train: {ckpt} holds a model of shape {c['shape']}, the options ask for {shape}")
        model.load_state_dict(c["model"]), opt.load_state_dict(c["opt"]), sched.load_state_dict(c["sched"])
        data.load_state_dict(c["data"])
        state = c["state"]
        gen.set_state(c["gen"]), torch.set_rng_state(c["torch_rng"])
        print(f"resumed at step {state['step']}", file=sys.stderr)
    elif os.path.exists(ckpt):
        sys.exit(f"train: {ckpt} exists; pass --resume to continue it, or use a new --work folder")
    print(f"{sum(p.numel() for p in model.parameters())} parameters, {len(spans)} sequences per pass",
          file=sys.stderr)

    def save():
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "state": state,
                    "gen": gen.get_state(), "torch_rng": torch.get_rng_state(), "data": data.state_dict(), "shape": shape},
                   ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)

    bf16 = args.precision == "bf16"
    model.train()
    start, last_save = time.time(), time.time()
    base_seconds = state["seconds"]
    while state["step"] < args.steps:
        opt.zero_grad(set_to_none=True)
        loss_sum, masked_sum = 0.0, 0
        for _ in range(args.accum):
            ids = next(data)
            inputs, chosen, labels = mask_tokens(ids, shape["vocab_size"], mask_id, gen)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(inputs, chosen)
            loss = F.cross_entropy(logits, labels, reduction="sum")
            (loss / labels.numel() / args.accum).backward()  # mean over masked tokens and micro-batches
            loss_sum += loss.item()
            masked_sum += labels.numel()
            state["tokens"] += int((ids != PAD).sum())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        state["step"] += 1
        state["seconds"] = base_seconds + time.time() - start
        if state["step"] % 10 == 0 or state["step"] == 1:
            entry = {"step": state["step"], "loss": loss_sum / masked_sum, "lr": sched.get_last_lr()[0],
                     "tokens": state["tokens"], "seconds": round(state["seconds"], 1)}
            if state["step"] % args.eval_every == 0 or state["step"] == args.steps:
                entry.update(heldout.evaluate(model, bf16))
                model.train()
            state["log"].append(entry)
            print(json.dumps(entry), flush=True)
        if time.time() - last_save > 600:
            save()
            last_save = time.time()
        if args.minutes and time.time() - start > args.minutes * 60:
            print("time limit reached", file=sys.stderr)
            break
    save()


def heldout_windows(stream, seq_len, count):
    """Up to `count` consecutive (seq_len - 2)-token windows of the stream, each as <s> window </s>."""
    body = seq_len - 2
    count = min(len(stream) // body, count)
    return np.concatenate([np.full((count, 1), BOS), stream[:count * body].reshape(count, body),
                           np.full((count, 1), EOS)], axis=1).astype(np.int64)


class HeldOut:
    """A fixed sample of the held-out text with fixed masks (every chosen token is <mask>), scored during
    training to watch for over-fitting: loss and top-1 accuracy over the masked tokens."""

    def __init__(self, stream, seq_len, mask_id, sequences, seed=1):
        self.ids = torch.from_numpy(heldout_windows(stream, seq_len, sequences))
        gen = torch.Generator().manual_seed(seed)
        self.chosen = (torch.rand(self.ids.shape, generator=gen) < 0.15)
        self.chosen[:, 0] = self.chosen[:, -1] = False
        self.labels = self.ids[self.chosen]
        self.inputs = self.ids.masked_fill(self.chosen, mask_id)

    def evaluate(self, model, bf16, batch=64):
        model.eval()
        loss = hits = 0.0
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            for b in range(0, len(self.ids), batch):
                chosen = self.chosen[b:b + batch]
                logits = model(self.inputs[b:b + batch], chosen).float()
                labels = self.ids[b:b + batch][chosen]
                loss += F.cross_entropy(logits, labels, reduction="sum").item()
                hits += (logits.argmax(-1) == labels).sum().item()
        return {"heldout_loss": loss / len(self.labels), "heldout_top1": hits / len(self.labels)}


# ---------------------------------------------------------------- export

def hf_state_dict(model, shape):
    sd = {k: v.detach().float() for k, v in model.state_dict().items()}
    H = shape["hidden_size"]
    out = {
        "roberta.embeddings.word_embeddings.weight": sd["word.weight"],
        "roberta.embeddings.position_embeddings.weight": sd["pos.weight"],
        "roberta.embeddings.token_type_embeddings.weight": torch.zeros(1, H),
        "roberta.embeddings.LayerNorm.weight": sd["emb_ln.weight"],
        "roberta.embeddings.LayerNorm.bias": sd["emb_ln.bias"],
    }
    for i in range(shape["num_hidden_layers"]):
        p, l = f"roberta.encoder.layer.{i}.", f"layers.{i}."
        wq, wk, wv = sd[l + "qkv.weight"].chunk(3, dim=0)
        bq, bk, bv = sd[l + "qkv.bias"].chunk(3, dim=0)
        for name, w, b in (("query", wq, bq), ("key", wk, bk), ("value", wv, bv)):
            out[p + f"attention.self.{name}.weight"], out[p + f"attention.self.{name}.bias"] = w, b
        for hf, ours in (("attention.output.dense", "out"), ("attention.output.LayerNorm", "ln1"),
                         ("intermediate.dense", "inter"), ("output.dense", "out2"), ("output.LayerNorm", "ln2")):
            out[p + hf + ".weight"], out[p + hf + ".bias"] = sd[l + ours + ".weight"], sd[l + ours + ".bias"]
    out["lm_head.dense.weight"], out["lm_head.dense.bias"] = sd["head_dense.weight"], sd["head_dense.bias"]
    out["lm_head.layer_norm.weight"], out["lm_head.layer_norm.bias"] = sd["head_ln.weight"], sd["head_ln.bias"]
    out["lm_head.bias"] = sd["head_bias"]  # the decoder is tied to the word embeddings
    return {k: v.contiguous() for k, v in out.items()}


def cmd_export(args):
    c = torch.load(os.path.join(args.work, "checkpoint.pt"))
    shape, st = c["shape"], c["state"]
    model = build(shape)
    model.load_state_dict(c["model"])
    if os.path.exists(os.path.join(args.out, "model.safetensors")):
        sys.exit(f"export: {args.out} already holds a model; give a new folder")
    os.makedirs(args.out, exist_ok=True)
    sd = {k: v.half() for k, v in hf_state_dict(model, shape).items()}
    save_weights(args.out, sd)
    dropout = st.get("settings", {}).get("dropout", 0.1)
    config = {
        "architectures": ["RobertaForMaskedLM"], "model_type": "roberta", "vocab_size": shape["vocab_size"],
        "hidden_size": shape["hidden_size"], "num_hidden_layers": shape["num_hidden_layers"],
        "num_attention_heads": shape["num_attention_heads"], "intermediate_size": shape["intermediate_size"],
        "hidden_act": "gelu", "max_position_embeddings": shape["seq_len"] + PAD + 1, "type_vocab_size": 1,
        "layer_norm_eps": 1e-5, "pad_token_id": PAD, "bos_token_id": BOS, "eos_token_id": EOS,
        "position_embedding_type": "absolute", "hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout,
        "initializer_range": 0.02, "torch_dtype": "float16",
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        shutil.copy(os.path.join(args.work, "tokenizer", name), os.path.join(args.out, name))
    record = {"steps": st["step"], "tokens_seen": st["tokens"], "seconds": st["seconds"],
              "settings": {k: v for k, v in st.get("settings", {}).items() if k not in ("func", "work")},
              "log": st["log"]}
    with open(os.path.join(args.out, "training_log.json"), "w") as f:
        json.dump(record, f)
    print(f"exported step {st['step']} ({st['tokens']} tokens, {st['seconds'] / 60:.0f} min) to {args.out}")


# ---------------------------------------------------------------- eval

def load_hf_model(model_dir):
    """Our training module holding the weights of an exported (Hugging Face layout) model folder."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    shape = dict(SHAPE, vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
                 num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
                 intermediate_size=cfg["intermediate_size"], seq_len=cfg["max_position_embeddings"] - PAD - 1)
    hf = {k: v.float() for k, v in read_safetensors(os.path.join(model_dir, "model.safetensors")).items()}
    model = build(shape)
    ours = {"word.weight": hf["roberta.embeddings.word_embeddings.weight"],
            "pos.weight": hf["roberta.embeddings.position_embeddings.weight"],
            "emb_ln.weight": hf["roberta.embeddings.LayerNorm.weight"], "emb_ln.bias": hf["roberta.embeddings.LayerNorm.bias"],
            "head_dense.weight": hf["lm_head.dense.weight"], "head_dense.bias": hf["lm_head.dense.bias"],
            "head_ln.weight": hf["lm_head.layer_norm.weight"], "head_ln.bias": hf["lm_head.layer_norm.bias"],
            "head_bias": hf["lm_head.bias"]}
    for i in range(shape["num_hidden_layers"]):
        p, l = f"roberta.encoder.layer.{i}.", f"layers.{i}."
        ours[l + "qkv.weight"] = torch.cat([hf[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")])
        ours[l + "qkv.bias"] = torch.cat([hf[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
        for hfn, on in (("attention.output.dense", "out"), ("attention.output.LayerNorm", "ln1"),
                        ("intermediate.dense", "inter"), ("output.dense", "out2"), ("output.LayerNorm", "ln2")):
            ours[l + on + ".weight"], ours[l + on + ".bias"] = hf[p + hfn + ".weight"], hf[p + hfn + ".bias"]
    model.load_state_dict(ours)
    return model, shape


def cmd_eval(args):
    torch.set_num_threads(args.threads)
    vocab = json.load(open(os.path.join(args.model, "vocab.json")))
    model, shape = load_hf_model(args.model)
    model.eval()
    if args.corpus:
        stream = np.array(id_stream(BpeTokenizer.from_dir(args.model), split_corpus(args.corpus)[2])[0], dtype=np.int32)
    else:
        stream = np.load(os.path.join(args.work, "heldout-ids.npy"))
    gen = torch.Generator().manual_seed(args.seed)
    top1 = top5 = total = 0
    mask_id = vocab["<mask>"]
    with open(args.masks_out, "w") as out, torch.no_grad():
        for window in heldout_windows(stream, shape["seq_len"], args.max_sequences):
            ids = torch.from_numpy(window)[None]
            special = (ids == BOS) | (ids == EOS) | (ids == PAD)
            chosen = (torch.rand(ids.shape, generator=gen) < 0.15) & ~special
            if not chosen.any():
                continue
            labels = ids[chosen]
            inputs = ids.clone()
            inputs[chosen] = mask_id  # every chosen position is <mask> for evaluation
            logits = model(inputs, chosen)
            best = logits.topk(5, dim=-1).indices
            top1 += (best[:, 0] == labels).sum().item()
            top5 += (best == labels[:, None]).any(-1).sum().item()
            total += labels.numel()
            out.write(json.dumps({"ids": inputs[0].tolist(), "positions": chosen[0].nonzero()[:, 0].tolist(),
                                  "labels": labels.tolist()}) + "\n")
    print(json.dumps({"top1": top1 / total, "top5": top5 / total, "masked": total}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--corpus", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--vocab-size", type=int, default=SHAPE["vocab_size"])
    p.add_argument("--tokenizer", help="use this folder's vocab.json/merges.txt/tokenizer.json instead of training one")
    p = sub.add_parser("train")
    p.add_argument("--work", required=True)
    p.add_argument("--layers", type=int, default=SHAPE["num_hidden_layers"])
    p.add_argument("--hidden", type=int, default=SHAPE["hidden_size"])
    p.add_argument("--heads", type=int, default=SHAPE["num_attention_heads"])
    p.add_argument("--intermediate", type=int, default=SHAPE["intermediate_size"])
    p.add_argument("--seq-len", type=int, default=SHAPE["seq_len"])
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--minutes", type=float, default=0, help="stop (with a checkpoint) after this long; --resume goes on")
    p.add_argument("--micro-batch", type=int, default=32)
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--positional-layers", type=int, default=2,
                   help="blocks whose heads start attending to fixed neighbours (0: the paper's initialisation)")
    p.add_argument("--precision", choices=("bf16", "fp32"), default="bf16",
                   help="bf16: matrix products in bfloat16 (autocast), weights, optimiser and LayerNorms in fp32")
    p.add_argument("--eval-every", type=int, default=1000, help="steps between held-out evaluations")
    p.add_argument("--eval-sequences", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--resume", action="store_true")
    p = sub.add_parser("export")
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("eval")
    p.add_argument("--model", required=True)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--work", help="a prepared work folder (its heldout-ids.npy)")
    where.add_argument("--corpus", help="the corpus folder: its held-out paragraphs, tokenized with the model's tokenizer")
    p.add_argument("--masks-out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-sequences", type=int, default=1000)
    p.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    {"prepare": cmd_prepare, "train": cmd_train, "export": cmd_export, "eval": cmd_eval}[args.cmd](args)


if __name__ == "__main__":
    main()
