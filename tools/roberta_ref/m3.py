"""bge-m3's three outputs and its scores, transcribed from FlagEmbedding and run on the reference's
last hidden state (tools/dump_reference.py --m3):

- EncoderOnlyEmbedderM3Model (finetune/embedder/encoder_only/m3/modeling.py): _dense_embedding
  with "cls" pooling, _sparse_embedding with return_embedding False (relu(sparse_linear(h))),
  _colbert_embedding (colbert_linear(h[:, 1:]) times the mask), and the truncation and
  normalisation of EncoderOnlyEmbedderM3ModelForInference.forward;
- M3Embedder (inference/embedder/encoder_only/m3.py): encode_single_device's
  _process_token_weights and _process_colbert_vecs, compute_lexical_matching_score, colbert_score,
  and compute_score's weighted sums.
"""
import os
from collections import defaultdict

import numpy as np
import torch
import torch.nn.functional as F


def load_heads(model_dir):
    def load(name):
        return torch.load(os.path.join(model_dir, name + ".pt"), map_location="cpu")
    return load("colbert_linear"), load("sparse_linear")


def process_token_weights(token_weights, input_ids, unused_tokens):
    result = defaultdict(int)
    for w, idx in zip(token_weights, input_ids):
        if idx not in unused_tokens and w > 0:
            idx = str(idx)
            if w > result[idx]:
                result[idx] = w
    return result


def process_colbert_vecs(colbert_vecs, attention_mask):
    tokens_num = np.sum(attention_mask)
    return colbert_vecs[:tokens_num - 1]


@torch.no_grad()
def m3_outputs(model_dir, last_hidden_state, input_ids, attention_mask, unused_tokens, truncate_dim=None,
               normalize=True):
    """{"dense_vecs": [B, D], "lexical_weights": [{str(id): weight}], "colbert_vecs": [[n - 1, C]]}
    of a right-padded batch, as BGEM3FlagModel.encode(return_dense, return_sparse,
    return_colbert_vecs) gives them."""
    colbert, sparse = load_heads(model_dir)
    dense = last_hidden_state[:, 0]
    if truncate_dim is not None:
        dense = dense[..., :truncate_dim]
    token_weights = torch.relu(F.linear(last_hidden_state, sparse["weight"], sparse["bias"]))
    colbert_vecs = F.linear(last_hidden_state[:, 1:], colbert["weight"], colbert["bias"])
    colbert_vecs = colbert_vecs * attention_mask[:, 1:][:, :, None].float()
    if truncate_dim is not None:
        colbert_vecs = colbert_vecs[..., :truncate_dim]
    if normalize:
        dense = F.normalize(dense, dim=-1)
        colbert_vecs = F.normalize(colbert_vecs, dim=-1)
    lexical = [process_token_weights(w, ids, set(unused_tokens))
               for w, ids in zip(token_weights.squeeze(-1).numpy(), input_ids.tolist())]
    vecs = [process_colbert_vecs(v, m) for v, m in zip(colbert_vecs.numpy(), attention_mask.numpy())]
    return {"dense_vecs": dense.numpy(), "lexical_weights": lexical, "colbert_vecs": vecs}


def compute_lexical_matching_score(lw1, lw2):
    scores = 0
    for token, weight in lw1.items():
        if token in lw2:
            scores += weight * lw2[token]
    return scores


def colbert_score(q_reps, p_reps):
    q_reps, p_reps = torch.from_numpy(q_reps), torch.from_numpy(p_reps)
    token_scores = torch.einsum('in,jn->ij', q_reps, p_reps)
    scores, _ = token_scores.max(-1)
    scores = torch.sum(scores) / q_reps.size(0)
    return scores


def compute_score(q, p, weights=(1.0, 1.0, 1.0)):
    """compute_score's five scores of each pair (q's row i with p's row i) from two m3_outputs."""
    out = {"colbert": [], "sparse": [], "dense": [], "sparse+dense": [], "colbert+sparse+dense": []}
    for i in range(len(q["dense_vecs"])):
        d = float(np.dot(q["dense_vecs"][i], p["dense_vecs"][i]))
        s = float(compute_lexical_matching_score(q["lexical_weights"][i], p["lexical_weights"][i]))
        c = float(colbert_score(q["colbert_vecs"][i], p["colbert_vecs"][i]))
        out["dense"].append(d)
        out["sparse"].append(s)
        out["colbert"].append(c)
        out["sparse+dense"].append((s * weights[1] + d * weights[0]) / (weights[1] + weights[0]))
        out["colbert+sparse+dense"].append((c * weights[2] + s * weights[1] + d * weights[0]) / sum(weights))
    return out
