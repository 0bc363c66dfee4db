#!/usr/bin/python3
"""Pretrain the demo RoBERTa on the shared public-domain corpus, following the RoBERTa recipe.

    /usr/bin/python3 tools/train_demo.py prepare --corpus ../shared/assets/corpus --work W
    /usr/bin/python3 tools/train_demo.py train   --work W [--minutes 80] [--resume]
    /usr/bin/python3 tools/train_demo.py export  --work W --out models/demo
    /usr/bin/python3 tools/train_demo.py eval    --model models/demo --work W --masks-out W/heldout-masks.jsonl

prepare: paragraphs (hard-wrapped lines joined) of the corpus; 1% held out in contiguous blocks of
  40 paragraphs spread over the books (block k is held out when k % 100 == 50); a byte-level BPE
  (tools/train_bpe.py) trained on the rest; both parts tokenized into one id stream each, books
  separated by </s>.
train: masked language modelling only (no next-sentence prediction); FULL-SENTENCES packing of
  contiguous text into 128-token sequences (<s> ... </s>); dynamic masking (a new mask each time
  a sequence is seen: 15% of tokens, 80% <mask> / 10% random / 10% unchanged); AdamW (betas 0.9,
  0.98, eps 1e-6, weight decay 0.01) with linear warm-up over 6% of the steps then linear decay;
  gradient accumulation (--accum) for a larger effective batch; dropout (--dropout). The defaults
  are what trained models/demo: steps of 16 sequences, peak lr 1e-3, no dropout, 9000 steps (18.4M
  tokens, 1.6 passes over the data), about 70 minutes on 2 cores. This budget is a tiny fraction of
  RoBERTa's, so three choices differ from the paper's: small steps without accumulation (more
  updates per token), no dropout (the model underfits), and the starting point of the first two
  blocks (positional_init): with the paper's N(0, 0.02) the attention stayed uniform and the loss
  sat at ~6.2-6.7 (word frequencies) for thousands of steps in every variant tried, while heads
  that start out looking at their neighbours reached 5.6 after 375 steps of 16 sequences. Seeded; a
  checkpoint (model, optimiser, schedule, RNG and data position) every 10 minutes and at the end,
  and --resume continues from it.
export: a Hugging Face folder (config.json, fp16 model.safetensors with HF's names, tokenizer).
eval: held-out masked-LM top-1/top-5 in PyTorch; writes the exact masked inputs so that
  `roberta eval-mlm` scores the very same masks.
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bpe_tokenizer import BpeTokenizer  # noqa: E402
from st_io import read_safetensors, write_safetensors  # noqa: E402
from train_bpe import paragraphs  # noqa: E402

SHAPE = dict(vocab_size=8192, hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
             seq_len=128)
PAD, BOS, EOS, UNK = 1, 0, 2, 3


# ---------------------------------------------------------------- prepare

def cmd_prepare(args):
    os.makedirs(args.work, exist_ok=True)
    files = [os.path.join(args.corpus, f) for f in ("fiction.txt", "nonfiction.txt", "drama-poetry.txt")]
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
    with open(os.path.join(args.work, "heldout-paragraphs.txt"), "w") as f:
        f.write("\n".join(map(str, held)) + "\n")
    with open(os.path.join(args.work, "heldout.txt"), "w", encoding="utf-8") as f:
        for hp in held_paras:
            f.write("\n".join(hp) + "\n")
    tok_dir = os.path.join(args.work, "tokenizer")
    subprocess.run([sys.executable, os.path.join(HERE, "train_bpe.py"), "--out", tok_dir, "--vocab-size",
                    str(args.vocab_size), "--skip-paragraphs", os.path.join(args.work, "heldout-paragraphs.txt")] + files,
                   check=True)
    tok = BpeTokenizer.from_dir(tok_dir)
    for name, books in (("train", train_paras), ("heldout", held_paras)):
        ids = []
        for book in books:
            for para in book:
                ids.extend(tok.encode(para, add_special_tokens=False))
            ids.append(EOS)  # document separator between books
        np.save(os.path.join(args.work, f"{name}-ids.npy"), np.array(ids, dtype=np.int32))
        print(f"{name}: {len(ids)} tokens from {sum(len(b) for b in books)} paragraphs", file=sys.stderr)


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
        # ids (B, T) without padding: positions are pad + 1 + i as in RoBERTa
        B, T = ids.shape
        pos = torch.arange(T, device=ids.device) + PAD + 1
        x = self.drop(self.emb_ln(self.word(ids) + self.pos(pos)[None]))
        d = self.H // self.NH
        for layer in self.layers:
            q, k, v = layer["qkv"](x).view(B, T, 3, self.NH, d).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
            ctx = (self.drop(att) @ v).transpose(1, 2).reshape(B, T, self.H)
            x = layer["ln1"](x + self.drop(layer["out"](ctx)))
            x = layer["ln2"](x + self.drop(layer["out2"](F.gelu(layer["inter"](x)))))
        h = x[masked_positions]  # (M, H): the MLM head only where tokens were masked
        h = self.head_ln(F.gelu(self.head_dense(h)))
        return h @ self.word.weight.t() + self.head_bias


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


class Batches:
    """FULL-SENTENCES packing: contiguous (seq_len - 2)-token windows of the stream in a random order,
    reshuffled every pass. The pass's order and position are saved with checkpoints, so that a
    resumed run sees exactly the batches the uninterrupted run would have seen."""

    def __init__(self, stream, seq_len, batch, gen):
        self.stream, self.body, self.batch, self.gen = stream, seq_len - 2, batch, gen
        self.count = len(stream) // self.body
        self.order, self.start = None, 0

    def __next__(self):
        if self.order is None or self.start + self.batch > self.count:
            self.order, self.start = torch.randperm(self.count, generator=self.gen), 0
        rows = [np.concatenate(([BOS], self.stream[i * self.body:(i + 1) * self.body], [EOS]))
                for i in self.order[self.start:self.start + self.batch].tolist()]
        self.start += self.batch
        return torch.from_numpy(np.stack(rows).astype(np.int64))

    def state_dict(self):
        return {"order": self.order, "start": self.start}

    def load_state_dict(self, state):
        self.order, self.start = state["order"], state["start"]


def cmd_train(args):
    torch.set_num_threads(args.threads)
    work = args.work
    shape = dict(SHAPE, vocab_size=len(json.load(open(os.path.join(work, "tokenizer", "vocab.json")))))
    mask_id = json.load(open(os.path.join(work, "tokenizer", "vocab.json")))["<mask>"]
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
    state = {"step": 0, "tokens": 0, "log": [], "seconds": 0.0}
    ckpt = os.path.join(work, "checkpoint.pt")
    if args.resume and os.path.exists(ckpt):
        c = torch.load(ckpt)
        model.load_state_dict(c["model"]), opt.load_state_dict(c["opt"]), sched.load_state_dict(c["sched"])
        state = c["state"]
        gen.set_state(c["gen"]), torch.set_rng_state(c["torch_rng"])
        print(f"resumed at step {state['step']}", file=sys.stderr)
    data = Batches(stream, args.seq_len or shape["seq_len"], args.micro_batch, gen)
    if args.resume and os.path.exists(ckpt) and "data" in c:
        data.load_state_dict(c["data"])

    def save():
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "state": state,
                    "gen": gen.get_state(), "torch_rng": torch.get_rng_state(), "data": data.state_dict(), "shape": shape},
                   ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)

    model.train()
    start, last_save = time.time(), time.time()
    base_seconds = state["seconds"]
    while state["step"] < args.steps:
        opt.zero_grad(set_to_none=True)
        loss_sum, masked_sum = 0.0, 0
        for _ in range(args.accum):
            ids = next(data)
            inputs, chosen, labels = mask_tokens(ids, shape["vocab_size"], mask_id, gen)
            logits = model(inputs, chosen)
            loss = F.cross_entropy(logits, labels, reduction="sum")
            (loss / labels.numel() / args.accum).backward()  # mean over masked tokens and micro-batches
            loss_sum += loss.item()
            masked_sum += labels.numel()
            state["tokens"] += ids.numel()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        state["step"] += 1
        state["seconds"] = base_seconds + time.time() - start
        if state["step"] % 10 == 0 or state["step"] == 1:
            entry = {"step": state["step"], "loss": loss_sum / masked_sum, "lr": sched.get_last_lr()[0],
                     "tokens": state["tokens"], "seconds": round(state["seconds"], 1)}
            state["log"].append(entry)
            print(json.dumps(entry), flush=True)
        if time.time() - last_save > 600:
            save()
            last_save = time.time()
        if args.minutes and time.time() - start > args.minutes * 60:
            print("time limit reached", file=sys.stderr)
            break
    save()


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
    shape = c["shape"]
    model = build(shape)
    model.load_state_dict(c["model"])
    os.makedirs(args.out, exist_ok=True)
    sd = {k: v.half() for k, v in hf_state_dict(model, shape).items()}
    write_safetensors(os.path.join(args.out, "model.safetensors"), sd, metadata={"format": "pt"}, overwrite=True)
    config = {
        "architectures": ["RobertaForMaskedLM"], "model_type": "roberta", "vocab_size": shape["vocab_size"],
        "hidden_size": shape["hidden_size"], "num_hidden_layers": shape["num_hidden_layers"],
        "num_attention_heads": shape["num_attention_heads"], "intermediate_size": shape["intermediate_size"],
        "hidden_act": "gelu", "max_position_embeddings": shape["seq_len"] + PAD + 1, "type_vocab_size": 1,
        "layer_norm_eps": 1e-5, "pad_token_id": PAD, "bos_token_id": BOS, "eos_token_id": EOS,
        "position_embedding_type": "absolute", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02, "torch_dtype": "float16",
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        shutil.copy(os.path.join(args.work, "tokenizer", name), os.path.join(args.out, name))
    st = c["state"]
    with open(os.path.join(args.out, "training_log.json"), "w") as f:
        json.dump({"steps": st["step"], "tokens_seen": st["tokens"], "seconds": st["seconds"], "log": st["log"]}, f)
    print(f"exported step {st['step']} ({st['tokens']} tokens, {st['seconds'] / 60:.0f} min) to {args.out}")


# ---------------------------------------------------------------- eval

def cmd_eval(args):
    torch.set_num_threads(args.threads)
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    vocab = json.load(open(os.path.join(args.model, "vocab.json")))
    shape = dict(SHAPE, vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
                 num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
                 intermediate_size=cfg["intermediate_size"], seq_len=cfg["max_position_embeddings"] - PAD - 1)
    hf = {k: v.float() for k, v in read_safetensors(os.path.join(args.model, "model.safetensors")).items()}
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
    model.eval()
    stream = np.load(os.path.join(args.work, "heldout-ids.npy"))
    body = shape["seq_len"] - 2
    gen = torch.Generator().manual_seed(args.seed)
    top1 = top5 = total = 0
    mask_id = vocab["<mask>"]
    with open(args.masks_out, "w") as out, torch.no_grad():
        for s in range(min(len(stream) // body, args.max_sequences)):
            ids = torch.tensor(np.concatenate(([BOS], stream[s * body:(s + 1) * body], [EOS])), dtype=torch.int64)[None]
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
    p = sub.add_parser("train")
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=9000)
    p.add_argument("--minutes", type=float, default=0)
    p.add_argument("--micro-batch", type=int, default=16)
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--positional-layers", type=int, default=2,
                   help="blocks whose heads start attending to fixed neighbours (0: the paper's initialisation)")
    p.add_argument("--seq-len", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--resume", action="store_true")
    p = sub.add_parser("export")
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("eval")
    p.add_argument("--model", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--masks-out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-sequences", type=int, default=1000)
    p.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    {"prepare": cmd_prepare, "train": cmd_train, "export": cmd_export, "eval": cmd_eval}[args.cmd](args)


if __name__ == "__main__":
    main()
