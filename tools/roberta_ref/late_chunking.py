"""Late chunking, written from the spec of `roberta embed --late-chunking` (not from the C++ code):
the document is tokenized once, run through the model in overlapping windows that each get the
prefix P (<s>, or <s> + the prompt's tokens) and </s>, every document token takes its last hidden
state from one window (max-context stitching), and each chunk (a span of the text, in code points)
is the mean of its tokens' states, then the folder's sentence-transformers Dense modules and
Normalize.

    spans = sentence_spans(text)                     # or pack_sentences / token_chunks / given spans
    wins = windows(T, W, O)                          # [(s_k, e_k)]
    states, wins = stitched_states(cfg, w, doc_ids, prefix, eos_id, max_length, overlap)
    means = chunk_means(states, [chunk_tokens(offsets, s, e) for s, e in spans])
    vecs = head(model_dir, normalize)(means)

Positions are code points ([start, end), Python str indices); `offsets` are the document tokens'
HF offsets (without the <s> and </s> of the encoding). stitch="drop-overlap" is another rule, Jina
AI's long late chunking (window 0 whole, then every later window without its first O document
tokens), kept only as a negative control.
"""
import json
import os

import torch
import torch.nn.functional as F

from roberta_ref.reference import ST_ACTIVATIONS, forward

# Unicode White_Space (PropList.txt)
WHITE_SPACE = frozenset(map(chr, [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                                  0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))
TERMINATORS = frozenset(".!?\u2026")
CLOSERS = frozenset("\"')]\u201d\u2019")


class LateChunkingError(ValueError):
    pass


def sentence_boundaries(text):
    """The boundary positions of rule 6: (a) after a run of . ! ? … and then zero or more closing
    characters, when the next character is white space or the end of the text; (b) at a blank line
    (a \\n, only white space, another \\n): right after its first \\n."""
    n, cuts = len(text), set()
    for p in range(1, n + 1):
        if p == n or text[p] in WHITE_SPACE:
            q = p
            while q > 0 and text[q - 1] in CLOSERS:
                q -= 1
            if q > 0 and text[q - 1] in TERMINATORS:
                cuts.add(p)
    for i, c in enumerate(text):
        if c == "\n":
            j = i + 1
            while j < n and text[j] in WHITE_SPACE and text[j] != "\n":
                j += 1
            if j < n and text[j] == "\n":
                cuts.add(i + 1)
    return sorted(cuts)


def trim(text, s, e):
    while s < e and text[s] in WHITE_SPACE:
        s += 1
    while e > s and text[e - 1] in WHITE_SPACE:
        e -= 1
    return s, e


def sentence_spans(text):
    """The sentences of text: the pieces between boundaries, trimmed of white space, empty ones skipped."""
    cuts = [0] + sentence_boundaries(text) + [len(text)]
    spans = []
    for s, e in zip(cuts, cuts[1:]):
        s, e = trim(text, s, e)
        if s < e:
            spans.append((s, e))
    return spans


def chunk_tokens(offsets, cs, ce):
    """Rule 5: the document tokens whose offsets (a, b) overlap [cs, ce) (a < ce and b > cs); a token
    with an empty span (a == b) is in no chunk."""
    return [i for i, (a, b) in enumerate(offsets) if a < b and a < ce and b > cs]


def pack_sentences(spans, offsets, budget):
    """Rule 6, sentences with a token budget: consecutive sentences packed greedily while the span
    from the first one's start to the last one's end holds <= budget tokens; a sentence alone above
    the budget is a chunk by itself."""
    out, i = [], 0
    while i < len(spans):
        j = i
        while j + 1 < len(spans) and len(chunk_tokens(offsets, spans[i][0], spans[j + 1][1])) <= budget:
            j += 1
        out.append((spans[i][0], spans[j][1]))
        i = j + 1
    return out


def token_chunks(offsets, n):
    """Rule 6, tokens: groups [0,n), [n,2n), ... of document tokens; a group's span is [min a, max b)
    over its tokens with a < b; a group without such a token is dropped."""
    out = []
    for g in range(0, len(offsets), n):
        real = [(a, b) for a, b in offsets[g:g + n] if a < b]
        if real:
            out.append((min(a for a, _ in real), max(b for _, b in real)))
    return out


def window_size(max_length, prefix_len):
    """W = L - len(P) - 1 document tokens per window."""
    W = max_length - prefix_len - 1
    if W < 1:
        raise LateChunkingError(f"--max-length {max_length} leaves no room for document tokens "
                                f"(prefix of {prefix_len} tokens and </s>)")
    return W


def windows(T, W, O):
    """Rule 3: s_k = k (W - O), e_k = min(s_k + W, T), up to the first window with e_k == T; none for T == 0."""
    if O < 0 or O >= W:
        raise LateChunkingError(f"--overlap {O} must be at least 0 and below the window's {W} document tokens")
    out, k = [], 0
    while T > 0:
        s = k * (W - O)
        e = min(s + W, T)
        out.append((s, e))
        if e == T:
            break
        k += 1
    return out


def max_context_window(t, wins):
    """Rule 4: the window with the largest min(t - s_k, e_k - 1 - t) among those holding t; ties: the earlier."""
    best, score = None, None
    for k, (s, e) in enumerate(wins):
        if s <= t < e:
            c = min(t - s, e - 1 - t)
            if score is None or c > score:
                best, score = k, c
    return best


@torch.no_grad()
def run_windows(cfg, w, doc_ids, prefix, eos_id, wins):
    """The last hidden state [len, H] of each window P + d[s:e] + [</s>], each run alone (unpadded)."""
    outs = []
    for s, e in wins:
        ids = torch.tensor([list(prefix) + list(doc_ids[s:e]) + [eos_id]], dtype=torch.long)
        outs.append(forward(cfg, w, ids, torch.ones_like(ids), heads=False)["last_hidden_state"][0])
    return outs


def stitch(outs, wins, prefix_len, T, H, rule="max-context", overlap=0):
    """The stitched states [T, H] (float32): max-context (rule 4), or drop-overlap (Jina AI's long late
    chunking: window 0 whole, then each later window without its first `overlap` document tokens)."""
    if rule == "max-context":
        states = torch.empty(T, H)
        for t in range(T):
            k = max_context_window(t, wins)
            states[t] = outs[k][prefix_len + t - wins[k][0]]
        return states
    if rule == "drop-overlap":
        parts = []
        for k, ((s, e), out) in enumerate(zip(wins, outs)):
            doc = out[prefix_len:prefix_len + e - s]
            parts.append(doc if k == 0 else doc[overlap:])
        states = torch.cat(parts, 0) if parts else torch.empty(0, H)
        assert states.shape[0] == T, (states.shape, T)
        return states
    raise LateChunkingError(f"unknown stitching rule {rule!r}")


def stitched_states(cfg, w, doc_ids, prefix, eos_id, max_length, overlap=None, rule="max-context"):
    """Returns (states [T, H] float32, windows). overlap None: W // 4."""
    T, W = len(doc_ids), window_size(max_length, len(prefix))
    O = W // 4 if overlap is None else overlap
    wins = windows(T, W, O)
    outs = run_windows(cfg, w, doc_ids, prefix, eos_id, wins)
    return stitch(outs, wins, len(prefix), T, cfg["hidden_size"], rule, O), wins


def chunk_means(states, token_lists):
    """Rule 7's mean: the sum in double of the tokens' stitched states over their count, as float32 [n, H]."""
    if not token_lists:
        return torch.empty(0, states.shape[1])
    return torch.stack([states[idx].double().sum(0) / len(idx) for idx in token_lists]).float()


def head(model_dir, normalize=None):
    """The function applying the folder's sentence-transformers Dense modules (modules.json order)
    and, when normalize (None: the folder has a Normalize module), L2 normalisation."""
    from roberta_ref.safetensors_io import read_safetensors
    dense, has_normalize = [], False
    path = os.path.join(model_dir, "modules.json")
    if os.path.exists(path):
        with open(path) as f:
            modules = json.load(f)
        for m in modules:
            kind, folder = m["type"].rsplit(".", 1)[-1], os.path.join(model_dir, m["path"])
            if kind == "Dense":
                with open(os.path.join(folder, "config.json")) as f:
                    c = json.load(f)
                sd = {k: v.float() for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
                if c["activation_function"] not in ST_ACTIVATIONS:
                    raise LateChunkingError(f"{folder}: activation {c['activation_function']} not supported")
                dense.append((sd["linear.weight"], sd.get("linear.bias"), ST_ACTIVATIONS[c["activation_function"]]))
            elif kind == "Normalize":
                has_normalize = True
    norm = has_normalize if normalize is None else normalize

    @torch.no_grad()
    def apply(x):
        for weight, bias, act in dense:
            x = act(F.linear(x, weight, bias))
        return F.normalize(x, p=2, dim=1) if norm and x.shape[0] else x
    return apply


def cut_at_spaces(text, parts):
    """text cut at single spaces (no white space on either side) into `parts` pieces of about equal
    length, so that " ".join(pieces) == text: inputs of Jina AI's late_chunking API for a test."""
    cuts = [p for p in range(1, len(text) - 1)
            if text[p] == " " and not text[p - 1].isspace() and not text[p + 1].isspace()]
    chosen = sorted({min(cuts, key=lambda p: abs(p - len(text) * q // parts)) for q in range(1, parts)})
    pieces = [text[a + (1 if a else 0):b] for a, b in zip([0] + chosen, chosen + [len(text)])]
    assert " ".join(pieces) == text and len(pieces) == parts, pieces
    return pieces


def joined_spans(pieces):
    """The [start, end) of each piece in " ".join(pieces), in code points."""
    out, at = [], 0
    for p in pieces:
        out.append([at, at + len(p)])
        at += len(p) + 1
    return out
