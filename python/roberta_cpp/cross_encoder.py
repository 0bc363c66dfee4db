"""CrossEncoder: sentence-transformers' CrossEncoder (predict, rank) on roberta.cpp, for a local
RobertaForSequenceClassification folder (rerankers, NLI models)."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core
from .model import _apply_threads

_ACTIVATIONS = {"Identity", "Sigmoid", "Tanh", "ReLU", "Softmax"}


def _activation_name(fn: Any) -> Optional[str]:
    """A torch activation module or class, or its name, as the name the C++ side takes."""
    if fn is None:
        return None
    if isinstance(fn, str):
        return fn
    cls = fn if isinstance(fn, type) else type(fn)
    if cls.__name__ in _ACTIVATIONS:
        return cls.__name__
    raise ValueError(f"activation_fn {fn!r} is not supported (torch.nn Identity, Sigmoid, Tanh, ReLU, Softmax)")


class CrossEncoder:
    """Scores (query, document) pairs, as sentence-transformers' CrossEncoder.

        >>> ce = CrossEncoder("path/to/reranker")
        >>> ce.predict([("How many people live in Berlin?", "Berlin has 3.5 million people.")])
        array([0.97], dtype=float32)
        >>> ce.rank("How many people live in Berlin?", ["Berlin is big.", "Paris."], return_documents=True)
        [{'corpus_id': 0, 'score': 0.71, 'text': 'Berlin is big.'}, ...]

    The activation is the folder's (config.json "sentence_transformers": {"activation_fn"}, or
    the older "sbert_ce_default_activation_function"), else sigmoid for one label and identity for
    several. Pairs longer than max_length are truncated (longest_first).
    """

    def __init__(self, model_name_or_path: Union[str, os.PathLike], dtype: str = "float32",
                 threads: Optional[int] = None, max_length: Optional[int] = None, device: Optional[str] = None):
        if device not in (None, "cpu"):
            raise ValueError(f"device={device!r}: roberta_cpp runs on the CPU only")
        _apply_threads(threads)
        self.model_path = os.fspath(model_name_or_path)
        self._ce = _core.CrossEncoder(self.model_path, dtype)
        self.max_length = int(max_length) if max_length is not None else int(self._ce.max_length)

    @property
    def num_labels(self) -> int:
        return int(self._ce.num_labels)

    @property
    def activation_fn(self) -> str:
        """The default activation's name: Identity, Sigmoid, Tanh, ReLU or Softmax."""
        return self._ce.default_activation

    def predict(
        self,
        sentences: Union[Sequence[Sequence[str]], Sequence[str]],
        batch_size: int = 32,
        show_progress_bar: Optional[bool] = None,
        activation_fn: Any = None,
        apply_softmax: Optional[bool] = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
    ) -> Any:
        """Scores of pairs [(a, b), ...]: (N,) float32 for a one-label model, else (N, num_labels);
        one pair (a, b) gives one score (or one row). activation_fn replaces the default for this
        call (a torch.nn activation or its name); apply_softmax then takes a softmax over each
        pair's labels (with one label every score is 1, as in sentence-transformers)."""
        single = bool(sentences) and isinstance(sentences[0], str)
        pairs = [tuple(sentences)] if single else [tuple(p) for p in sentences]
        for i, p in enumerate(pairs):
            if len(p) != 2 or not all(isinstance(t, str) for t in p):
                raise ValueError(f"sentences[{i}] is not a pair of strings")
        scores = self._ce.predict(pairs, int(batch_size), _activation_name(activation_fn), bool(apply_softmax),
                                  self.max_length)
        if self.num_labels == 1:
            scores = scores[:, 0]
        if convert_to_tensor or not convert_to_numpy:
            import torch

            t = torch.from_numpy(np.ascontiguousarray(scores))
            out: Any = t if convert_to_tensor else list(t)
        else:
            out = scores
        return out[0] if single else out

    def rank(
        self,
        query: str,
        documents: Sequence[str],
        top_k: Optional[int] = None,
        return_documents: bool = False,
        batch_size: int = 32,
        show_progress_bar: Optional[bool] = None,
        activation_fn: Any = None,
        apply_softmax: bool = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
    ) -> List[Dict[str, Any]]:
        """Documents sorted by their score against the query, best first (equal scores keep
        document order): [{"corpus_id": int, "score": float, "text": str (with return_documents)}],
        the top_k first (default all). Needs a one-label model."""
        if self.num_labels != 1:
            raise ValueError("CrossEncoder.rank() only works for models with num_labels=1. "
                             "Consider using CrossEncoder.predict() with input pairs instead.")
        docs = list(documents)
        scores = self.predict([(query, d) for d in docs], batch_size=batch_size, activation_fn=activation_fn,
                              apply_softmax=apply_softmax)
        results: List[Dict[str, Any]] = []
        for i, s in enumerate(scores.tolist()):
            results.append({"corpus_id": i, "score": s})
            if return_documents:
                results[-1]["text"] = docs[i]
        results.sort(key=lambda r: r["score"], reverse=True)
        return results[:top_k]

    def __repr__(self) -> str:
        return f"CrossEncoder({self.model_path!r}, num_labels={self.num_labels}, activation={self.activation_fn!r})"
