"""The similarity functions behind SentenceTransformer.similarity / similarity_pairwise: those of
roberta_cpp.util (torch tensors, as sentence-transformers returns them) when torch is importable,
else the same formulas in numpy (float32 arrays)."""
from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

NAMES = ("cosine", "dot", "euclidean", "manhattan")


def _as_matrix(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=np.float32)
    return a[None, :] if a.ndim == 1 else a


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)


def cos_sim_numpy(a: Any, b: Any) -> np.ndarray:
    """(len(a), len(b)) cosine similarities, float32."""
    return _unit_rows(_as_matrix(a)) @ _unit_rows(_as_matrix(b)).T


def _dot(a: Any, b: Any) -> np.ndarray:
    return _as_matrix(a) @ _as_matrix(b).T


def _euclidean(a: Any, b: Any) -> np.ndarray:
    a, b = _as_matrix(a), _as_matrix(b)
    return -np.sqrt(np.maximum(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1), 0)).astype(np.float32)


def _manhattan(a: Any, b: Any) -> np.ndarray:
    a, b = _as_matrix(a), _as_matrix(b)
    return -np.abs(a[:, None, :] - b[None, :, :]).sum(-1).astype(np.float32)


def _pairs(a: Any, b: Any) -> tuple:
    """Rows of a and b broadcast against each other, as torch broadcasts them."""
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    try:
        return tuple(np.broadcast_arrays(a, b))
    except ValueError:
        raise ValueError(f"similarity_pairwise needs embeddings of broadcastable shapes, got {a.shape} and "
                         f"{b.shape}") from None


def _pairwise_cos(a: Any, b: Any) -> np.ndarray:
    a, b = _pairs(a, b)
    return (_unit_rows(a) * _unit_rows(b)).sum(-1)


def _pairwise_dot(a: Any, b: Any) -> np.ndarray:
    a, b = _pairs(a, b)
    return (a * b).sum(-1)


def _pairwise_euclidean(a: Any, b: Any) -> np.ndarray:
    a, b = _pairs(a, b)
    return -np.sqrt(((a - b) ** 2).sum(-1)).astype(np.float32)


def _pairwise_manhattan(a: Any, b: Any) -> np.ndarray:
    a, b = _pairs(a, b)
    return -np.abs(a - b).sum(-1).astype(np.float32)


_NUMPY: Dict[str, Callable] = {"cosine": cos_sim_numpy, "dot": _dot, "euclidean": _euclidean,
                               "manhattan": _manhattan}
_NUMPY_PAIRWISE: Dict[str, Callable] = {"cosine": _pairwise_cos, "dot": _pairwise_dot,
                                        "euclidean": _pairwise_euclidean, "manhattan": _pairwise_manhattan}


def function(name: str, pairwise: bool) -> Callable:
    """The similarity function named ("cosine", "dot", "euclidean", "manhattan")."""
    try:
        from . import util
    except ImportError:  # no torch
        return (_NUMPY_PAIRWISE if pairwise else _NUMPY)[name]
    if pairwise:
        return {"cosine": util.pairwise_cos_sim, "dot": util.pairwise_dot_score,
                "euclidean": util.pairwise_euclidean_sim, "manhattan": util.pairwise_manhattan_sim}[name]
    return {"cosine": util.cos_sim, "dot": util.dot_score, "euclidean": util.euclidean_sim,
            "manhattan": util.manhattan_sim}[name]
