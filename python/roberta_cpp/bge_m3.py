"""BGEM3FlagModel: FlagEmbedding's bge-m3 model (M3Embedder) on roberta.cpp, its dense, lexical and
ColBERT outputs from one forward pass, and its scores."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._checks import check_count, check_texts
from ._compat import check_devices, engine_dtype
from .hub import resolve_model
from .model import _apply_threads
from .tokenizer import Tokenizer

LexicalWeights = Dict[str, np.float32]


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


class BGEM3FlagModel:
    """FlagEmbedding's BGEM3FlagModel for a local bge-m3 folder, on roberta.cpp.

        >>> model = BGEM3FlagModel("path/to/bge-m3")
        >>> out = model.encode(["What is BGE M3?"], return_dense=True, return_sparse=True, return_colbert_vecs=True)
        >>> out["dense_vecs"].shape, out["lexical_weights"][0], out["colbert_vecs"][0].shape

    The folder needs colbert_linear.safetensors and sparse_linear.safetensors, which
    tools/convert_checkpoint.py writes from the .pt files bge-m3 ships. Outputs are FlagEmbedding's:
    dense_vecs (the <s> state, normalised), lexical_weights ({token id as a string: weight}, <s>
    </s> <pad> <unk> left out) and colbert_vecs (one normalised vector per token after <s>). Runs in
    float32 (FlagEmbedding's use_fp16 applies to GPUs; on the CPU it runs float32 too) unless
    dtype (ours, by keyword) says "bfloat16" or "int8".
    """

    def __init__(self, model_name_or_path: Union[str, os.PathLike], normalize_embeddings: bool = True,
                 use_fp16: bool = True, use_bf16: bool = False, query_instruction_for_retrieval: Optional[str] = None,
                 query_instruction_format: str = "{}{}", devices: Any = None, pooling_method: str = "cls",
                 trust_remote_code: bool = False, cache_dir: Optional[str] = None, colbert_dim: int = -1,
                 batch_size: int = 256, query_max_length: int = 512, passage_max_length: int = 512,
                 return_dense: bool = True, return_sparse: bool = False, return_colbert_vecs: bool = False,
                 truncate_dim: Optional[int] = None, *, dtype: str = "float32", threads: Optional[int] = None,
                 **kwargs: Any):
        if pooling_method != "cls":
            raise ValueError(f"pooling_method={pooling_method!r}: bge-m3's dense vector is its <s> state ('cls')")
        if colbert_dim != -1:
            raise ValueError("colbert_dim: the ColBERT dimension is colbert_linear's; leave it -1")
        check_devices(devices)
        _apply_threads(threads)
        path = resolve_model(os.fspath(model_name_or_path), None, cache_dir)
        self._engine = _core.M3Embedder(path, engine_dtype(dtype))
        self.model_path = path
        self.normalize_embeddings = normalize_embeddings
        self.query_instruction_for_retrieval = query_instruction_for_retrieval
        self.query_instruction_format = query_instruction_format
        self.batch_size = check_count(batch_size, "batch_size")
        self.query_max_length = check_count(query_max_length, "query_max_length")
        self.passage_max_length = check_count(passage_max_length, "passage_max_length")
        self.return_dense, self.return_sparse, self.return_colbert_vecs = return_dense, return_sparse, return_colbert_vecs
        self.truncate_dim = None if truncate_dim is None else check_count(truncate_dim, "truncate_dim")
        self.kwargs = kwargs  # passage_instruction_for_retrieval / _format, as FlagEmbedding reads them
        self.tokenizer = Tokenizer(self._engine.tokenizer)

    # ---------------------------------------------------------------- encoding

    def encode(self, sentences: Union[str, Sequence[str]], batch_size: Optional[int] = None,
               max_length: Optional[int] = None, return_dense: Optional[bool] = None,
               return_sparse: Optional[bool] = None, return_colbert_vecs: Optional[bool] = None,
               instruction: Optional[str] = None, instruction_format: Optional[str] = None,
               **kwargs: Any) -> Dict[str, Any]:
        """{"dense_vecs", "lexical_weights", "colbert_vecs"}, each None unless asked for (the
        constructor's return_* by default); one string gives one of each, a list a list (dense: a
        (N, dim) array)."""
        kwargs.pop("convert_to_numpy", None)
        if kwargs:
            raise ValueError(f"encode() does not take {sorted(kwargs)}")
        dense = self.return_dense if return_dense is None else return_dense
        sparse = self.return_sparse if return_sparse is None else return_sparse
        colbert = self.return_colbert_vecs if return_colbert_vecs is None else return_colbert_vecs
        if not (dense or sparse or colbert):
            raise ValueError("Must choose one or more from `return_colbert_vecs`, `return_sparse`, `return_dense` "
                             "to set `True`!")
        single = isinstance(sentences, str)
        texts = check_texts([sentences] if single else list(sentences), "sentences")
        if instruction is not None:
            form = (instruction_format or "{}{}").replace("\\n", "\n")
            texts = [form.format(instruction, t) for t in texts]
        d, lexical, vecs = self._engine.encode(
            texts, check_count(batch_size or self.batch_size, "batch_size"),
            check_count(max_length or self.passage_max_length, "max_length"), dense, sparse, colbert,
            self.truncate_dim or 0, self.normalize_embeddings)
        weights = None
        if lexical is not None:  # FlagEmbedding's keys: token ids as strings, float32 weights
            weights = [{str(int(i)): w for i, w in zip(ids, values)} for ids, values in lexical]
        if single:
            d = None if d is None else d[0]
            weights = None if weights is None else weights[0]
            vecs = None if vecs is None else vecs[0]
        return {"dense_vecs": d, "lexical_weights": weights, "colbert_vecs": vecs}

    def encode_queries(self, queries: Union[str, Sequence[str]], batch_size: Optional[int] = None,
                       max_length: Optional[int] = None, **kwargs: Any) -> Dict[str, Any]:
        """encode() at query_max_length, with query_instruction_for_retrieval when set."""
        return self.encode(queries, batch_size=batch_size, max_length=max_length or self.query_max_length,
                           instruction=self.query_instruction_for_retrieval,
                           instruction_format=self.query_instruction_format, **kwargs)

    def encode_corpus(self, corpus: Union[str, Sequence[str]], batch_size: Optional[int] = None,
                      max_length: Optional[int] = None, **kwargs: Any) -> Dict[str, Any]:
        """encode() at passage_max_length, with the passage_instruction_for_retrieval keyword when given."""
        return self.encode(corpus, batch_size=batch_size, max_length=max_length or self.passage_max_length,
                           instruction=self.kwargs.get("passage_instruction_for_retrieval"),
                           instruction_format=self.kwargs.get("passage_instruction_format", "{}{}"), **kwargs)

    # ---------------------------------------------------------------- scores

    def convert_id_to_token(self, lexical_weights: Union[LexicalWeights, List[LexicalWeights]]) -> Any:
        """The weights keyed by each token's decoded text, as FlagEmbedding's."""
        items = [lexical_weights] if isinstance(lexical_weights, dict) else lexical_weights
        out = [{self.tokenizer.decode([int(i)]): w for i, w in item.items()} for item in items]
        return out[0] if len(out) == 1 else out

    @staticmethod
    def compute_lexical_matching_score(lexical_weights_1: Any, lexical_weights_2: Any) -> Any:
        """The sum of the products of the weights of the tokens both hold; for two lists, an array."""
        def one(lw1, lw2):
            return sum((w * lw2[t] for t, w in lw1.items() if t in lw2), 0)
        if isinstance(lexical_weights_1, dict) and isinstance(lexical_weights_2, dict):
            return one(lexical_weights_1, lexical_weights_2)
        if isinstance(lexical_weights_1, list) and isinstance(lexical_weights_2, list):
            return np.array([[one(a, b) for b in lexical_weights_2] for a in lexical_weights_1])
        raise ValueError("The input format of lexical_weights is not correct.")

    @staticmethod
    def colbert_score(q_reps: np.ndarray, p_reps: np.ndarray) -> Any:
        """Each query vector's largest dot product with a passage vector, averaged (a torch scalar
        where torch is installed, as FlagEmbedding's; else a numpy float32)."""
        scores = (np.asarray(q_reps, np.float32) @ np.asarray(p_reps, np.float32).T).max(-1)
        value = np.float32(scores.sum() / np.float32(len(q_reps)))
        torch = _torch()
        return torch.tensor(value) if torch is not None else value

    def compute_score(self, sentence_pairs: Union[Tuple[str, str], List[Tuple[str, str]]],
                      batch_size: Optional[int] = None, max_query_length: Optional[int] = None,
                      max_passage_length: Optional[int] = None,
                      weights_for_different_modes: Optional[List[float]] = None, **kwargs: Any) -> Any:
        """FlagEmbedding's five scores, "colbert", "sparse", "dense", "sparse+dense" and
        "colbert+sparse+dense" (weights: dense, sparse, colbert; default 1, 1, 1): lists, or
        floats for one pair."""
        if isinstance(sentence_pairs, list) and not sentence_pairs:
            return []
        one_pair = isinstance(sentence_pairs[0], str)
        pairs = [tuple(sentence_pairs)] if one_pair else [tuple(p) for p in sentence_pairs]
        for i, p in enumerate(pairs):
            if len(p) != 2:
                raise ValueError(f"sentence_pairs[{i}] is not a (query, passage) pair")
            check_texts(list(p), f"sentence_pairs[{i}]")
        weights = [1.0, 1.0, 1.0] if weights_for_different_modes is None else list(weights_for_different_modes)
        if len(weights) != 3:
            raise ValueError("weights_for_different_modes must hold 3 weights: dense, sparse, colbert")
        rows = self._engine.compute_score(pairs, weights, max_query_length or self.query_max_length,
                                          max_passage_length or self.passage_max_length,
                                          batch_size or self.batch_size)
        names = ("dense", "sparse", "colbert", "sparse+dense", "colbert+sparse+dense")
        out = {n: [float(np.float32(r[k])) for r in rows] for k, n in enumerate(names)}
        out = {n: out[n] for n in ("colbert", "sparse", "dense", "sparse+dense", "colbert+sparse+dense")}
        return {k: v[0] for k, v in out.items()} if one_pair else out

    def __repr__(self) -> str:
        return f"BGEM3FlagModel({self.model_path!r})"
