"""sentence_transformers.util's similarity and search functions, so that ``from roberta_cpp import
util`` replaces ``from sentence_transformers import util``: the same names, arguments and results
(torch tensors; inputs may be lists, numpy arrays or tensors). Needs torch, as those do."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np
import torch

__all__ = ["cos_sim", "pytorch_cos_sim", "dot_score", "euclidean_sim", "manhattan_sim", "pairwise_cos_sim",
           "pairwise_dot_score", "pairwise_euclidean_sim", "pairwise_manhattan_sim", "normalize_embeddings",
           "semantic_search"]


def _tensor(a: Any) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a
    if isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
        return torch.stack(a)
    return torch.as_tensor(np.asarray(a))


def _batch(a: Any) -> torch.Tensor:
    t = _tensor(a)
    return t.unsqueeze(0) if t.dim() == 1 else t


def normalize_embeddings(embeddings: torch.Tensor) -> torch.Tensor:
    """Each row scaled to unit L2 norm (rows of zeros stay zero)."""
    return torch.nn.functional.normalize(embeddings, p=2, dim=1)


def cos_sim(a: Any, b: Any) -> torch.Tensor:
    """(len(a), len(b)): cosine similarity of every row of a with every row of b."""
    return torch.mm(normalize_embeddings(_batch(a)), normalize_embeddings(_batch(b)).transpose(0, 1))


pytorch_cos_sim = cos_sim


def dot_score(a: Any, b: Any) -> torch.Tensor:
    """(len(a), len(b)): dot product of every row of a with every row of b."""
    return torch.mm(_batch(a), _batch(b).transpose(0, 1))


def euclidean_sim(a: Any, b: Any) -> torch.Tensor:
    """(len(a), len(b)): minus the Euclidean distance of every pair of rows."""
    return -torch.cdist(_batch(a), _batch(b), p=2.0)


def manhattan_sim(a: Any, b: Any) -> torch.Tensor:
    """(len(a), len(b)): minus the Manhattan distance of every pair of rows."""
    return -torch.cdist(_batch(a), _batch(b), p=1.0)


def pairwise_dot_score(a: Any, b: Any) -> torch.Tensor:
    """Row i of a with row i of b (broadcast as torch broadcasts)."""
    return (_tensor(a) * _tensor(b)).sum(dim=-1)


def pairwise_cos_sim(a: Any, b: Any) -> torch.Tensor:
    return pairwise_dot_score(normalize_embeddings(_tensor(a)), normalize_embeddings(_tensor(b)))


def pairwise_euclidean_sim(a: Any, b: Any) -> torch.Tensor:
    return -torch.sqrt(torch.sum((_tensor(a) - _tensor(b)) ** 2, dim=-1))


def pairwise_manhattan_sim(a: Any, b: Any) -> torch.Tensor:
    return -torch.sum(torch.abs(_tensor(a) - _tensor(b)), dim=-1)


def semantic_search(query_embeddings: Any, corpus_embeddings: Any, query_chunk_size: int = 100,
                    corpus_chunk_size: int = 500000, top_k: int = 10,
                    score_function: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = cos_sim,
                    ) -> List[List[Dict[str, Any]]]:
    """For each query, the top_k corpus entries by score_function (cosine by default), best first:
    [[{"corpus_id": int, "score": float}, ...], ...], as sentence_transformers.util.semantic_search
    returns them. Scores are computed a chunk of queries by a chunk of the corpus at a time."""
    queries, corpus = _batch(query_embeddings), _batch(corpus_embeddings)
    results: List[List[Dict[str, Any]]] = []
    for q0 in range(0, len(queries), query_chunk_size):
        q = queries[q0:q0 + query_chunk_size]
        best_scores, best_ids = None, None
        for c0 in range(0, len(corpus), corpus_chunk_size):
            scores = score_function(q, corpus[c0:c0 + corpus_chunk_size])
            values, ids = torch.topk(scores, min(top_k, scores.shape[1]), dim=1, largest=True, sorted=True)
            ids = ids + c0
            if best_scores is None:
                best_scores, best_ids = values, ids
            else:  # the best of the chunks so far and this one
                both, both_ids = torch.cat([best_scores, values], 1), torch.cat([best_ids, ids], 1)
                best_scores, order = torch.topk(both, min(top_k, both.shape[1]), dim=1, largest=True, sorted=True)
                best_ids = torch.gather(both_ids, 1, order)
        for i in range(len(q)):
            if best_scores is None:
                results.append([])
                continue
            results.append([{"corpus_id": int(c), "score": float(s)}
                            for s, c in zip(best_scores[i].tolist(), best_ids[i].tolist())])
    return results
