"""CrossEncoder: sentence-transformers' CrossEncoder (predict, rank) on roberta.cpp, for a local
RobertaForSequenceClassification folder (rerankers, NLI models)."""
from __future__ import annotations

import json
import logging
import os
import types
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core
from ._checks import check_count, check_texts
from ._compat import check_device, check_loading, engine_dtype
from .hub import resolve_model
from .model import _apply_threads

logger = logging.getLogger("roberta_cpp")

# sentence-transformers' renamed constructor arguments (cross_encoder/util.py), old -> new.
_RENAMED_INIT = {"model_name": "model_name_or_path", "automodel_args": "model_kwargs", "tokenizer_args":
                 "tokenizer_kwargs", "config_args": "config_kwargs", "cache_dir": "cache_folder",
                 "default_activation_function": "activation_fn"}


def _predict_kwargs(kwargs: Dict[str, Any], method: str) -> Optional[Any]:
    """sentence-transformers' predict / rank decorator: activation_fct is the old activation_fn,
    num_workers has no effect (both with its warning); returns activation_fct's value."""
    activation_fct = kwargs.pop("activation_fct", None)
    if activation_fct is not None:
        logger.warning(f"The CrossEncoder.{method} `activation_fct` argument was renamed and is now deprecated, "
                       "please use `activation_fn` instead.")
    if "num_workers" in kwargs:
        kwargs.pop("num_workers")
        logger.warning(f"The CrossEncoder.{method} `num_workers` argument is deprecated and has no effect.")
    if kwargs:
        raise TypeError(f"CrossEncoder.{method}() got unexpected keyword arguments {sorted(kwargs)}")
    return activation_fct


def _torch_activation(name: str) -> Any:
    """The torch.nn module named (Sigmoid(), Identity(), ...), as sentence-transformers holds its
    activation; the name itself without torch."""
    try:
        import torch
    except ImportError:
        return name
    return torch.nn.Softmax(dim=-1) if name == "Softmax" else getattr(torch.nn, name)()

_ACTIVATIONS = {"Identity", "Sigmoid", "Tanh", "ReLU", "Softmax"}


def _activation_name(fn: Any) -> Optional[str]:
    """A torch activation module or class, or its name, as the name the C++ side takes; None for
    any other callable (applied in Python to the logits, as sentence-transformers applies it)."""
    if fn is None:
        return None
    if isinstance(fn, str):  # a name, or the full one sentence-transformers writes into config.json
        short = fn
        for prefix in ("torch.nn.modules.activation.", "torch.nn.modules.linear.", "torch.nn."):
            short = short[len(prefix):] if short.startswith(prefix) else short
        if short not in _ACTIVATIONS:
            raise ValueError(f"activation_fn {fn!r} is not one of {sorted(_ACTIVATIONS)} (or a callable)")
        return short
    cls = fn if isinstance(fn, type) else type(fn)
    # (a Softmax over another dimension than the labels' is a callable like any other)
    if (cls.__name__ in _ACTIVATIONS and getattr(cls, "__module__", "").startswith("torch.nn")
            and getattr(fn, "dim", -1) in (-1, 1, None)):
        return cls.__name__
    if callable(fn):
        return None
    raise TypeError(f"activation_fn {fn!r} is neither a callable nor one of {sorted(_ACTIVATIONS)}")


def _apply_callable(fn: Any, logits: np.ndarray) -> np.ndarray:
    """fn(logits) as sentence-transformers calls it: on a torch tensor (N, labels); on the numpy
    array where torch is not installed."""
    try:
        import torch
    except ImportError:
        return np.asarray(fn(logits), dtype=np.float32)
    out = fn(torch.from_numpy(np.ascontiguousarray(logits)))
    out = out.detach().cpu().numpy() if hasattr(out, "detach") else np.asarray(out)
    return out.astype(np.float32, copy=False)


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

    def __init__(self, model_name_or_path: Union[str, os.PathLike, None] = None, num_labels: Optional[int] = None,
                 max_length: Optional[int] = None, activation_fn: Any = None, device: Any = None,
                 cache_folder: Optional[str] = None, trust_remote_code: bool = False, revision: Optional[str] = None,
                 local_files_only: bool = False, token: Any = None, model_kwargs: Optional[Dict[str, Any]] = None,
                 tokenizer_kwargs: Optional[Dict[str, Any]] = None, config_kwargs: Optional[Dict[str, Any]] = None,
                 model_card_data: Any = None, backend: str = "torch", *, dtype: str = "float32",
                 threads: Optional[int] = None, **renamed: Any):
        """sentence-transformers' arguments in its order (num_labels must be the checkpoint's own:
        another would need a new, untrained head; activation_fn replaces the folder's activation;
        the hub and cache arguments have no effect on a local folder; its deprecated names
        default_activation_function, model_name, automodel_args, tokenizer_args, config_args,
        cache_dir and classifier_dropout are taken as it takes them), then ours: dtype ("float32",
        "bfloat16", "int8", "auto") and threads."""
        for old, new in _RENAMED_INIT.items():
            if old in renamed:
                value = renamed.pop(old)
                logger.warning(f"The CrossEncoder `{old}` argument was renamed and is now deprecated, please use "
                               f"`{new}` instead.")
                if new == "model_name_or_path" and model_name_or_path is None:
                    model_name_or_path = value
                elif new == "model_kwargs" and model_kwargs is None:
                    model_kwargs = value
                elif new == "tokenizer_kwargs" and tokenizer_kwargs is None:
                    tokenizer_kwargs = value
                elif new == "config_kwargs" and config_kwargs is None:
                    config_kwargs = value
                elif new == "activation_fn" and activation_fn is None:
                    activation_fn = value
        if "classifier_dropout" in renamed:  # dropout: nothing at inference
            renamed.pop("classifier_dropout")
            logger.warning("The CrossEncoder `classifier_dropout` argument is deprecated. Please use "
                           "`config_kwargs={'classifier_dropout': ...}` instead.")
        if renamed:
            raise TypeError(f"CrossEncoder() got unexpected keyword arguments {sorted(renamed)}")
        if model_name_or_path is None:
            raise ValueError("CrossEncoder needs model_name_or_path: a local folder or a Hub id in the local cache "
                             "(roberta_cpp downloads nothing)")
        check_device(device)
        dtype = check_loading({"model_kwargs": model_kwargs, "tokenizer_kwargs": tokenizer_kwargs,
                               "config_kwargs": config_kwargs}, backend, engine_dtype(dtype))
        _apply_threads(threads)
        self.model_path = resolve_model(model_name_or_path, revision, cache_folder)
        self._ce = _core.CrossEncoder(self.model_path, dtype)
        if num_labels is not None:
            if isinstance(num_labels, bool) or not isinstance(num_labels, int):
                raise TypeError(f"num_labels must be an integer, not {type(num_labels).__name__}")
            if num_labels != self.num_labels:
                raise ValueError(f"num_labels={num_labels}: the checkpoint's head has {self.num_labels} labels (another "
                                 f"number would need a new, untrained head)")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 3):
            raise ValueError(f"max_length must be an integer of at least 3, got {max_length!r}")
        self.max_length = int(max_length) if max_length is not None else int(self._ce.max_length)
        _activation_name(activation_fn)  # checked now
        self._activation = activation_fn
        self._config: Optional[types.SimpleNamespace] = None
        self._tokenizer: Any = None

    @property
    def num_labels(self) -> int:
        return int(self._ce.num_labels)

    @property
    def activation_fn(self) -> Any:
        """The activation applied to the logits: the one given (at construction, to predict, or set
        here), else the folder's, as a torch.nn module (Sigmoid(), Identity(), ...; its name
        without torch), as sentence-transformers holds it."""
        if self._activation is None:
            self._activation = _torch_activation(self._ce.default_activation)
        return self._activation

    @activation_fn.setter
    def activation_fn(self, fn: Any) -> None:
        _activation_name(fn)
        self._activation = fn

    @property
    def config(self) -> types.SimpleNamespace:
        """config.json's fields as attributes (id2label with int keys, label2id, num_labels), as
        transformers' config gives them."""
        if self._config is None:
            with open(os.path.join(self.model_path, "config.json"), encoding="utf-8") as f:
                fields = json.load(f)
            fields["id2label"] = dict(enumerate(self._ce.id2label))
            fields["label2id"] = {v: k for k, v in fields["id2label"].items()}
            fields["num_labels"] = self.num_labels
            self._config = types.SimpleNamespace(**fields)
        return self._config

    @property
    def tokenizer(self) -> Any:
        """The folder's tokenizer (roberta_cpp.Tokenizer)."""
        if self._tokenizer is None:
            from .tokenizer import Tokenizer

            self._tokenizer = Tokenizer.from_pretrained(self.model_path)
        return self._tokenizer

    def predict(
        self,
        sentences: Union[Sequence[Sequence[str]], Sequence[str]],
        batch_size: int = 32,
        show_progress_bar: Optional[bool] = None,
        activation_fn: Any = None,
        apply_softmax: Optional[bool] = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Scores of pairs [(a, b), ...]: (N,) float32 for a one-label model, else (N, num_labels);
        one pair (a, b) gives one score (or one row). activation_fn (a torch.nn activation, its
        name, or any callable on the (N, labels) logits) becomes the model's activation from this
        call on, as in sentence-transformers; apply_softmax then takes a softmax over each pair's
        labels (with one label every score is 1, as in sentence-transformers). activation_fct (the
        old name) and num_workers (no effect) are taken with sentence-transformers' warnings."""
        activation_fct = _predict_kwargs(kwargs, "predict")
        if activation_fn is None:
            activation_fn = activation_fct
        single = bool(sentences) and isinstance(sentences[0], str)
        pairs = [tuple(sentences)] if single else [tuple(p) for p in sentences]
        for i, p in enumerate(pairs):
            if len(p) != 2 or not all(isinstance(t, str) for t in p):
                raise ValueError(f"sentences[{i}] is not a pair of strings")
            check_texts(list(p), f"sentences[{i}]")
        batch_size = check_count(batch_size, "batch_size")
        if activation_fn is not None:  # as sentence-transformers: it stays this model's activation
            _activation_name(activation_fn)
            self._activation = activation_fn
        fn = self.activation_fn
        name = _activation_name(fn)
        if fn is not None and name is None:  # a callable: on the logits, then the softmax
            scores = _apply_callable(fn, self._ce.predict(pairs, batch_size, "Identity", False, self.max_length))
            if apply_softmax and scores.ndim == 2:
                e = np.exp(scores - scores.max(axis=1, keepdims=True))
                scores = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
        else:
            scores = self._ce.predict(pairs, batch_size, name, bool(apply_softmax), self.max_length)
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
        **kwargs: Any,
    ) -> List[Dict[str, Any]]:
        """Documents sorted by their score against the query, best first (equal scores keep
        document order): [{"corpus_id": int, "score": np.float32 (a 0-d tensor with
        convert_to_tensor or convert_to_numpy=False), "text": str (with return_documents)}], the
        top_k first (default all). Needs a one-label model."""
        activation_fct = _predict_kwargs(kwargs, "rank")
        if activation_fn is None:
            activation_fn = activation_fct
        if self.num_labels != 1:
            raise ValueError("CrossEncoder.rank() only works for models with num_labels=1. "
                             "Consider using CrossEncoder.predict() with input pairs instead.")
        docs = list(documents)
        scores = self.predict([(query, d) for d in docs], batch_size=batch_size, activation_fn=activation_fn,
                              apply_softmax=apply_softmax, convert_to_numpy=convert_to_numpy,
                              convert_to_tensor=convert_to_tensor)
        results: List[Dict[str, Any]] = []
        for i, s in enumerate(scores):
            results.append({"corpus_id": i, "score": s})
            if return_documents:
                results[-1]["text"] = docs[i]
        results.sort(key=lambda r: r["score"], reverse=True)
        return results[:top_k]

    def __repr__(self) -> str:
        return f"CrossEncoder({self.model_path!r}, num_labels={self.num_labels}, activation={self.activation_fn!r})"
