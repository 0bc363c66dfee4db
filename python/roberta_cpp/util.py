"""sentence_transformers.util's similarity and search functions, so that ``from roberta_cpp import
util`` replaces ``from sentence_transformers import util``: the same names, arguments and results
(torch tensors; inputs may be lists, numpy arrays or tensors). Needs torch, as those do."""
from __future__ import annotations

import heapq
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch

from .quantization import quantize_embeddings

__all__ = ["cos_sim", "pytorch_cos_sim", "dot_score", "euclidean_sim", "manhattan_sim", "pairwise_cos_sim",
           "pairwise_dot_score", "pairwise_euclidean_sim", "pairwise_manhattan_sim", "normalize_embeddings",
           "semantic_search", "paraphrase_mining", "paraphrase_mining_embeddings", "community_detection",
           "truncate_embeddings", "quantize_embeddings"]


def _tensor(a: Any) -> torch.Tensor:
    """a as a tensor; half-precision floats as float32 (sentence-transformers 6 scores those in
    float32: half precision ties too many scores)."""
    if isinstance(a, torch.Tensor):
        t = a
    elif isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
        t = torch.stack(a)
    else:
        t = torch.as_tensor(np.asarray(a))
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


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


def truncate_embeddings(embeddings: Any, truncate_dim: Optional[int]) -> Any:
    """The first truncate_dim dimensions of each embedding (numpy or torch; None keeps them all)."""
    return embeddings[..., :truncate_dim]


def paraphrase_mining(model: Any, sentences: List[str], show_progress_bar: bool = False, batch_size: int = 32,
                      query_chunk_size: int = 5000, corpus_chunk_size: int = 100000, max_pairs: int = 500000,
                      top_k: int = 100, score_function: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = cos_sim,
                      truncate_dim: Optional[int] = None, prompt_name: Optional[str] = None,
                      prompt: Optional[str] = None) -> List[List[Any]]:
    """The most similar pairs of sentences, [[score, i, j], ...] best first (i < j): the sentences
    are encoded by model (a roberta_cpp.SentenceTransformer) and mined with
    paraphrase_mining_embeddings."""
    embeddings = model.encode(sentences, show_progress_bar=show_progress_bar, batch_size=batch_size,
                              convert_to_tensor=True, truncate_dim=truncate_dim, prompt_name=prompt_name,
                              prompt=prompt)
    return paraphrase_mining_embeddings(embeddings, query_chunk_size=query_chunk_size,
                                        corpus_chunk_size=corpus_chunk_size, max_pairs=max_pairs, top_k=top_k,
                                        score_function=score_function)


def paraphrase_mining_embeddings(embeddings: Any, query_chunk_size: int = 5000, corpus_chunk_size: int = 100000,
                                 max_pairs: int = 500000, top_k: int = 100,
                                 score_function: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = cos_sim,
                                 ) -> List[List[Any]]:
    """The most similar pairs of rows, [[score, i, j], ...] best first (i < j), as
    sentence_transformers.util.paraphrase_mining_embeddings finds them: each row's top_k others per
    block of query_chunk_size rows by corpus_chunk_size rows, kept in a min-heap of at most
    max_pairs candidates (once full, each new candidate drops the lowest and raises the bar to its
    score); a pair found in both directions counts once."""
    embeddings = _batch(embeddings)
    keep = top_k + 1  # each row's best match is itself
    heap: List[tuple] = []
    bar, added = -1.0, 0
    n = len(embeddings)
    for c0 in range(0, n, corpus_chunk_size):
        for q0 in range(0, n, query_chunk_size):
            scores = score_function(embeddings[q0:q0 + query_chunk_size], embeddings[c0:c0 + corpus_chunk_size])
            values, idx = torch.topk(scores, min(keep, len(scores[0])), dim=1, largest=True, sorted=False)
            for row, (vals, cols) in enumerate(zip(values.tolist(), idx.tolist())):
                i = q0 + row
                for value, col in zip(vals, cols):
                    j = c0 + col
                    if i == j or not value > bar:
                        continue
                    heapq.heappush(heap, (value, i, j))
                    added += 1
                    if added >= max_pairs:
                        bar = heapq.heappop(heap)[0]
    seen = set()
    pairs: List[List[Any]] = []
    while heap:  # lowest first: of a pair's two directions the lower score stays
        score, i, j = heapq.heappop(heap)
        key = (min(i, j), max(i, j))
        if key not in seen:
            seen.add(key)
            pairs.append([score, key[0], key[1]])
    pairs.sort(key=lambda p: p[0], reverse=True)
    return pairs


def community_detection(embeddings: Any, threshold: float = 0.75, min_community_size: int = 10,
                        batch_size: int = 1024, show_progress_bar: bool = False) -> List[List[int]]:
    """Groups of rows whose cosine similarity to a central row is at least threshold, as
    sentence_transformers.util.community_detection finds them: every row with min_community_size
    rows (itself included) above the threshold starts a candidate community (its neighbours by
    decreasing similarity, the row itself first); candidates are taken largest first, each keeping
    the rows no earlier community took, and kept when at least min_community_size rows remain.
    Returns the communities, largest first, as lists of row indices."""
    emb = embeddings if isinstance(embeddings, torch.Tensor) else torch.tensor(np.asarray(embeddings))
    emb = normalize_embeddings(emb)
    bound = torch.tensor(threshold)
    n = len(emb)
    min_size = min(min_community_size, n)
    window = min(max(2 * min_size, 50), n)  # neighbours read per row; widened while all pass
    candidates: List[np.ndarray] = []
    for start in range(0, n, batch_size):
        scores = emb[start:start + batch_size] @ emb.T
        nth_best, _ = scores.topk(k=min_size, largest=True)
        for row in range(len(nth_best)):
            if not nth_best[row][-1] >= bound:
                continue
            vals, idx = scores[row].topk(k=window, largest=True)
            while vals[-1] >= bound and window < n:
                window = min(2 * window, n)
                vals, idx = scores[row].topk(k=window, largest=True)
            candidates.append(idx[vals >= bound].numpy().astype(np.uint32))
    candidates.sort(key=len, reverse=True)
    taken = np.zeros(n, dtype=bool)
    communities = []
    for c in candidates:
        rest = c[~taken[c]]
        if len(rest) >= min_size:
            communities.append(rest)
            taken[rest] = True
    communities.sort(key=len, reverse=True)
    return [c.tolist() for c in communities]
