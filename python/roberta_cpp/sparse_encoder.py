"""SparseEncoder: sentence-transformers 5's SparseEncoder (MLMTransformer + SpladePooling) on
roberta.cpp, for local folders and plain masked-language models."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._checks import check_count, check_texts
from ._compat import check_device, check_devices, engine_dtype, resolve_prompt
from .hub import resolve_model
from .model import _apply_threads
from .tokenizer import Tokenizer

Pair = Tuple[np.ndarray, np.ndarray]  # (indices int64, values float32)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


class SparseEncoder:
    """sentence-transformers' SparseEncoder for a local folder, on roberta.cpp.

        >>> model = SparseEncoder("path/to/splade-folder")
        >>> emb = model.encode(["The weather is lovely today.", "It is sunny outside."])
        >>> model.similarity(emb, emb)       # (2, 2) dot products
        >>> model.decode(emb[0], top_k=5)    # [(token, weight), ...] heaviest first

    Weights are log1p(relu(MLM logits)) pooled over every token (max or sum, as the folder's
    SpladePooling says; a folder without it: max, as TEI's --pooling splade). Output as
    sentence-transformers gives it where torch is installed: a sparse COO tensor (batch, vocab),
    or a dense one with convert_to_sparse_tensor=False. Without torch: a list of
    (indices int64, values float32) pairs, or a dense numpy array with convert_to_sparse_tensor=False.
    Texts are tokenized as given (no stripping), as the SentenceTransformer class here does.
    dtype: "float32" (default), "bfloat16", "int8" or "auto" weights; threads: the engine's threads.
    """

    def __init__(self, model_name_or_path: Union[str, os.PathLike, None] = None, device: Any = None,
                 prompts: Optional[Dict[str, str]] = None, default_prompt_name: Optional[str] = None,
                 cache_folder: Optional[str] = None, revision: Optional[str] = None,
                 max_active_dims: Optional[int] = None, *, dtype: str = "float32", threads: Optional[int] = None):
        if model_name_or_path is None:
            raise ValueError("SparseEncoder needs model_name_or_path: a local folder, or a Hub id in the local cache "
                             "(roberta_cpp downloads nothing)")
        check_device(device)
        _apply_threads(threads)
        path = resolve_model(os.fspath(model_name_or_path), revision, cache_folder)
        self._engine = _core.SparseEncoder(path, engine_dtype(dtype))
        self.model_path = path
        self.prompts: Dict[str, str] = dict(self._engine.prompts)
        self.prompts.update(prompts or {})
        self.default_prompt_name: Optional[str] = default_prompt_name or self._engine.default_prompt_name
        if self.default_prompt_name is not None and self.default_prompt_name not in self.prompts:
            raise ValueError(f"Default prompt name '{self.default_prompt_name}' not found in the configured prompts "
                             f"dictionary with keys {list(self.prompts.keys())!r}.")
        self.max_active_dims = None if max_active_dims is None else check_count(max_active_dims, "max_active_dims")
        self.max_seq_length = int(self._engine.max_seq_length)
        self.similarity_fn_name = "dot"
        self._tokenizer = Tokenizer(self._engine.tokenizer)

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    @property
    def device(self) -> Any:
        torch = _torch()
        return torch.device("cpu") if torch else "cpu"

    @property
    def splade_pooling_chunk_size(self) -> None:
        return None  # every token's logits are reduced in chunks already

    def get_sentence_embedding_dimension(self) -> int:
        """The vocabulary size: one weight per token id."""
        return int(self._engine.dimension)

    def encode(self, sentences: Union[str, Sequence[str]], prompt_name: Optional[str] = None,
               prompt: Optional[str] = None, batch_size: int = 32, show_progress_bar: Optional[bool] = None,
               convert_to_tensor: bool = True, convert_to_sparse_tensor: bool = True, save_to_cpu: bool = False,
               device: Any = None, max_active_dims: Optional[int] = None, **kwargs: Any) -> Any:
        """Sparse embeddings, as sentence-transformers' SparseEncoder.encode (see the class).

        One string gives one vector (1-D); a list gives (len, vocab), or a list of 1-D vectors with
        convert_to_tensor=False. max_active_dims (else the one given at construction) keeps each
        text's largest weights. prompt wins over prompt_name; neither: default_prompt_name's prompt.
        """
        if kwargs:
            raise ValueError(f"SparseEncoder.encode() has been called with additional keyword arguments that this "
                             f"model does not use: {sorted(kwargs)}.")
        check_devices(device)
        batch_size = check_count(batch_size, "batch_size")
        k = max_active_dims if max_active_dims is not None else self.max_active_dims
        k = 0 if k is None else check_count(k, "max_active_dims")
        input_was_string = isinstance(sentences, str)
        if isinstance(sentences, np.ndarray):
            sentences = sentences.tolist()
        texts: List[str] = check_texts([sentences] if input_was_string else list(sentences), "sentences")
        prompt_text = resolve_prompt(self.prompts, self.default_prompt_name, prompt_name, prompt)
        pairs: List[Pair] = self._engine.encode(texts, prompt_text or None, batch_size, self.max_seq_length,
                                                strip=False, max_active_dims=k)
        return self._output(pairs, input_was_string, convert_to_tensor, convert_to_sparse_tensor)

    def encode_query(self, sentences: Union[str, Sequence[str]], prompt_name: Optional[str] = None,
                     prompt: Optional[str] = None, **kwargs: Any) -> Any:
        """encode() with the "query" prompt when the model has one and none is given."""
        if prompt_name is None and prompt is None and "query" in self.prompts:
            prompt_name = "query"
        return self.encode(sentences, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def encode_document(self, sentences: Union[str, Sequence[str]], prompt_name: Optional[str] = None,
                        prompt: Optional[str] = None, **kwargs: Any) -> Any:
        """encode() with the "document" (else "passage", else "corpus") prompt when the model has one."""
        if prompt_name is None and prompt is None:
            prompt_name = next((n for n in ("document", "passage", "corpus") if n in self.prompts), None)
        return self.encode(sentences, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def _output(self, pairs: List[Pair], single: bool, to_tensor: bool, sparse: bool) -> Any:
        V = self.get_sentence_embedding_dimension()
        torch = _torch()
        if torch is None:
            if sparse:
                return pairs[0] if single else pairs
            dense = np.zeros((len(pairs), V), dtype=np.float32)
            for row, (ids, values) in zip(dense, pairs):
                row[ids] = values
            return dense[0] if single else dense
        vectors = [torch.sparse_coo_tensor(torch.from_numpy(ids).unsqueeze(0), torch.from_numpy(values), (V,))
                   .coalesce() for ids, values in pairs]
        if not sparse:
            vectors = [v.to_dense() for v in vectors]
        if single:
            return vectors[0]
        if not to_tensor:
            return vectors
        if not vectors:
            empty = torch.tensor([])
            return empty.to_sparse() if sparse else empty
        return torch.stack(vectors)

    def decode(self, embeddings: Any, top_k: Optional[int] = None) -> Any:
        """(token, weight) pairs of a vector, heaviest first (top_k of them), or a list of such
        lists for several vectors, as sentence-transformers' SparseEncoder.decode."""
        rows, single = _as_pairs(embeddings)
        out = []
        for ids, values in rows:
            order = np.argsort(-values, kind="stable")
            if top_k is not None:
                order = order[:top_k]
            out.append([(self._tokenizer.convert_ids_to_tokens(int(ids[i])), float(values[i])) for i in order])
        return out[0] if single else out

    def similarity(self, a: Any, b: Any) -> Any:
        """Dot products (len(a), len(b)) of two sets of sparse vectors (a torch tensor where torch
        is installed, else numpy)."""
        ra, _ = _as_pairs(a)
        rb, _ = _as_pairs(b)
        scores = np.zeros((len(ra), len(rb)), dtype=np.float32)
        for i, (ia, va) in enumerate(ra):
            for j, (ib, vb) in enumerate(rb):
                common, xa, xb = np.intersect1d(ia, ib, assume_unique=True, return_indices=True)
                scores[i, j] = float(np.dot(va[xa].astype(np.float64), vb[xb].astype(np.float64)))
        torch = _torch()
        return torch.from_numpy(scores) if torch else scores

    def __repr__(self) -> str:
        return (f"SparseEncoder({self.model_path!r}, pooling_strategy={self._engine.pooling_strategy!r}, "
                f"activation_function={self._engine.activation_function!r})")


def _as_pairs(embeddings: Any) -> Tuple[List[Pair], bool]:
    """(indices, values) pairs of encode()'s outputs (a pair, a list of pairs, a torch tensor
    sparse or dense, 1-D or 2-D, a list of tensors, a numpy array), and whether it was one vector."""
    if isinstance(embeddings, tuple) and len(embeddings) == 2 and isinstance(embeddings[0], np.ndarray):
        return [embeddings], True
    if isinstance(embeddings, list):
        rows = [_as_pairs(e)[0][0] for e in embeddings]
        return rows, False
    torch = _torch()
    if torch is not None and isinstance(embeddings, torch.Tensor):
        dense = embeddings.to_dense().numpy() if embeddings.is_sparse else embeddings.numpy()
        embeddings = dense
    array = np.asarray(embeddings, dtype=np.float32)
    single = array.ndim == 1
    rows = []
    for row in np.atleast_2d(array):
        ids = np.flatnonzero(row)
        rows.append((ids.astype(np.int64), row[ids]))
    return rows, single
