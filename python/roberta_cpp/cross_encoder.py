"""CrossEncoder: sentence-transformers' CrossEncoder (predict, rank) on roberta.cpp, for a local
RobertaForSequenceClassification folder (rerankers, NLI models)."""
from __future__ import annotations

import json
import os
import types
import warnings
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core
from ._checks import check_count, check_texts
from ._compat import (check_device, check_devices, check_loading, cpu_device, engine_dtype, logger, renamed,
                      resolve_prompt, warn_once)
from ._pool import check_pool, start_pool, stop_pool
from .hub import resolve_model
from .model import _apply_threads

# sentence-transformers' renamed constructor arguments (util/decorators.py), old -> new.
_RENAMED_INIT = {"model_name": "model_name_or_path", "automodel_args": "model_kwargs", "tokenizer_args":
                 "processor_kwargs", "tokenizer_kwargs": "processor_kwargs", "config_args": "config_kwargs",
                 "cache_dir": "cache_folder", "default_activation_function": "activation_fn"}
# The arguments version 5.3 and earlier took positionally after the model; keyword-only since 5.4.
_OLD_POSITIONAL = ("num_labels", "max_length", "activation_fn", "device")


def _init_kwargs(args: tuple, kwargs: Dict[str, Any]) -> None:
    """sentence-transformers' CrossEncoder.__init__ decorator: old positional arguments and old
    names move to their keywords, with its warnings."""
    for name, value in zip(_OLD_POSITIONAL, args):
        logger.warning(f"Passing `{name}` as a positional argument to CrossEncoder is deprecated. Please use "
                       f"`{name}={value!r}` as a keyword argument instead.")
        kwargs.setdefault(name, value)
    if len(args) > len(_OLD_POSITIONAL):
        raise TypeError(f"CrossEncoder() takes at most {len(_OLD_POSITIONAL) + 1} positional arguments")
    for old, new in _RENAMED_INIT.items():
        renamed(kwargs, old, new, f"The CrossEncoder `{old}` argument was renamed and is now deprecated. Please use "
                                  f"`{new}` instead.")
    if "classifier_dropout" in kwargs:  # dropout: nothing at inference
        value = kwargs.pop("classifier_dropout")
        logger.warning("The CrossEncoder `classifier_dropout` argument is deprecated. Please use "
                       f"`config_kwargs={{'classifier_dropout': {value}}}` instead.")
        kwargs["config_kwargs"] = {**(kwargs.get("config_kwargs") or {}), "classifier_dropout": value}


def _call_kwargs(kwargs: Dict[str, Any], method: str, dropped: Sequence[str] = ()) -> None:
    """sentence-transformers' predict / rank decorator: sentences -> inputs, activation_fct ->
    activation_fn, num_workers (and rank's convert_to_numpy / convert_to_tensor) dropped, each with
    its warning; any other keyword is a TypeError."""
    renamed(kwargs, "sentences", "inputs")
    renamed(kwargs, "activation_fct", "activation_fn")
    if "num_workers" in kwargs:
        kwargs.pop("num_workers")
        warn_once(f"The CrossEncoder.{method} `num_workers` argument is deprecated and has no effect. It will be "
                  "removed in a future version.")
    for name in dropped:
        if name in kwargs:
            kwargs.pop(name)
            warn_once(f"The CrossEncoder.{method} `{name}` argument is deprecated and has no effect, as `{method}` "
                      "always returns Python floats. It will be removed in a future version.")
    unknown = set(kwargs) - {"inputs", "activation_fn"}
    if unknown:
        raise TypeError(f"CrossEncoder.{method}() got unexpected keyword arguments {sorted(unknown)}")


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


def _is_single_pair(inputs: Any) -> bool:
    """sentence-transformers 6's is_singular_input for pairs: a list or tuple whose first item is
    not itself a list or tuple, or a 1-D array of strings."""
    if isinstance(inputs, np.ndarray) and inputs.dtype.kind in ("U", "O"):
        return inputs.size > 0 and inputs.ndim < 2
    if isinstance(inputs, (list, tuple)):
        return len(inputs) > 0 and not isinstance(inputs[0], (list, tuple, np.ndarray))
    return True


def _folder_prompts(path: str) -> tuple:
    """(prompts, default_prompt_name) of the folder's config_sentence_transformers.json, if any."""
    try:
        with open(os.path.join(path, "config_sentence_transformers.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return {}, None
    prompts = config.get("prompts") if isinstance(config.get("prompts"), dict) else {}
    default = config.get("default_prompt_name")
    return prompts, default if isinstance(default, str) else None


class CrossEncoder:
    """Scores (query, document) pairs, as sentence-transformers' CrossEncoder.

        >>> ce = CrossEncoder("path/to/reranker")
        >>> ce.predict([("How many people live in Berlin?", "Berlin has 3.5 million people.")])
        array([0.97], dtype=float32)
        >>> ce.rank("How many people live in Berlin?", ["Berlin is big.", "Paris."], return_documents=True)
        [{'corpus_id': 0, 'score': 0.71, 'text': 'Berlin is big.'}, ...]

    The activation is the folder's (config.json "sentence_transformers": {"activation_fn"}, or
    the older "sbert_ce_default_activation_function"), else sigmoid for one label and identity for
    several. Pairs longer than max_seq_length are truncated (longest_first).
    """

    def __init__(self, model_name_or_path: Union[str, os.PathLike, None] = None, *args: Any,
                 modules: Any = None, device: Any = None, prompts: Optional[Dict[str, str]] = None,
                 default_prompt_name: Optional[str] = None, cache_folder: Optional[str] = None,
                 trust_remote_code: bool = False, revision: Optional[str] = None, local_files_only: bool = False,
                 token: Any = None, model_kwargs: Optional[Dict[str, Any]] = None,
                 processor_kwargs: Optional[Dict[str, Any]] = None, config_kwargs: Optional[Dict[str, Any]] = None,
                 model_card_data: Any = None, backend: str = "torch", num_labels: Optional[int] = None,
                 max_length: Optional[int] = None, activation_fn: Any = None, dtype: str = "float32",
                 threads: Optional[int] = None, **old: Any):
        """sentence-transformers 6's arguments (a Hub id is looked up in the local Hugging Face
        cache; num_labels must be the checkpoint's own: another would need a new, untrained head;
        max_length caps max_seq_length; activation_fn replaces the folder's activation; the hub,
        token and remote-code ones have no effect), with its deprecated forms taken as it takes them
        (num_labels, max_length, activation_fn and device positionally; model_name, automodel_args,
        tokenizer_args, tokenizer_kwargs, config_args, cache_dir, default_activation_function,
        classifier_dropout). Then ours: dtype ("float32", "bfloat16", "int8", "auto") and threads."""
        unknown = set(old) - set(_RENAMED_INIT) - {"classifier_dropout"}
        if unknown:
            raise TypeError(f"CrossEncoder() got unexpected keyword arguments {sorted(unknown)}")
        # the keywords given (None: not given), then the old forms moved onto them
        kw = {k: v for k, v in (("device", device), ("cache_folder", cache_folder), ("model_kwargs", model_kwargs),
                                ("processor_kwargs", processor_kwargs), ("config_kwargs", config_kwargs),
                                ("num_labels", num_labels), ("max_length", max_length),
                                ("activation_fn", activation_fn)) if v is not None}
        kw.update(old)
        _init_kwargs(args, kw)
        if model_name_or_path is None:
            model_name_or_path = kw.get("model_name_or_path")
        if model_name_or_path is None:
            raise ValueError("CrossEncoder needs model_name_or_path: a local folder or a Hub id in the local cache "
                             "(roberta_cpp downloads nothing)")
        if modules is not None:
            raise ValueError("modules=...: roberta_cpp runs the folder's model; pass the folder instead")
        check_device(kw.get("device"))
        processor = kw.get("processor_kwargs")
        if isinstance(processor, dict) and "model_max_length" in processor:  # what max_length becomes there
            processor = dict(processor)
            kw.setdefault("max_length", processor.pop("model_max_length"))
        dtype = check_loading({"model_kwargs": kw.get("model_kwargs"), "processor_kwargs": processor,
                               "config_kwargs": kw.get("config_kwargs")}, backend, engine_dtype(dtype))
        _apply_threads(threads)
        self.model_path = resolve_model(model_name_or_path, revision, kw.get("cache_folder"))
        self._ce = _core.CrossEncoder(self.model_path, dtype)
        num_labels = kw.get("num_labels")
        if num_labels is not None:
            if isinstance(num_labels, bool) or not isinstance(num_labels, int):
                raise TypeError(f"num_labels must be an integer, not {type(num_labels).__name__}")
            if num_labels != self.num_labels:
                raise ValueError(f"num_labels={num_labels}: the checkpoint's head has {self.num_labels} labels (another "
                                 f"number would need a new, untrained head)")
        max_length = kw.get("max_length")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 3):
            raise ValueError(f"max_length must be an integer of at least 3, got {max_length!r}")
        self._max_seq_length = int(max_length) if max_length is not None else int(self._ce.max_length)
        _activation_name(kw.get("activation_fn"))  # checked now
        self._activation = kw.get("activation_fn")
        # As sentence-transformers: the caller's prompts first, the folder's for names not given.
        saved, saved_default = _folder_prompts(self.model_path)
        self.prompts: Dict[str, str] = dict(prompts or {})
        for name, text in saved.items():
            if self.prompts.get(name) is None and isinstance(text, str):
                self.prompts[name] = text
        self.default_prompt_name: Optional[str] = default_prompt_name or saved_default
        if self.default_prompt_name is not None and self.default_prompt_name not in self.prompts:
            raise ValueError(f"Default prompt name '{self.default_prompt_name}' not found in the configured prompts "
                             f"dictionary with keys {list(self.prompts.keys())!r}.")
        self._config: Optional[types.SimpleNamespace] = None
        self._tokenizer: Any = None

    @property
    def num_labels(self) -> int:
        return int(self._ce.num_labels)

    @property
    def max_seq_length(self) -> int:
        """Tokens per pair (with its special tokens); longer pairs are truncated longest_first."""
        return self._max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 3:
            raise ValueError(f"max_seq_length must be an integer of at least 3, got {value!r}")
        self._max_seq_length = value

    @property
    def max_length(self) -> int:
        """The old name of max_seq_length (with sentence-transformers' DeprecationWarning)."""
        warnings.warn("The `max_length` property was renamed and is now deprecated. Please use `max_seq_length` "
                      "instead.", DeprecationWarning, stacklevel=2)
        return self._max_seq_length

    @max_length.setter
    def max_length(self, value: int) -> None:
        warnings.warn("The `max_length` property was renamed and is now deprecated. Please use `max_seq_length` "
                      "instead.", DeprecationWarning, stacklevel=2)
        self.max_seq_length = value

    @property
    def device(self) -> Any:
        """torch.device("cpu") ("cpu" without torch)."""
        return cpu_device()

    @property
    def activation_fn(self) -> Any:
        """The activation applied to the logits: the one given at construction (or set here), else
        the folder's, as a torch.nn module (Sigmoid(), Identity(), ...; its name without torch), as
        sentence-transformers holds it. An activation_fn given to predict() or rank() applies to
        that call only."""
        if self._activation is None:
            self._activation = _torch_activation(self._ce.default_activation)
        return self._activation

    @activation_fn.setter
    def activation_fn(self, fn: Any) -> None:
        _activation_name(fn)
        self._activation = fn

    @property
    def default_activation_function(self) -> Any:
        """The old name of activation_fn (with sentence-transformers' DeprecationWarning)."""
        warnings.warn("The `default_activation_function` property was renamed and is now deprecated. Please use "
                      "`activation_fn` instead.", DeprecationWarning, stacklevel=2)
        return self.activation_fn

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

    @property
    def processor(self) -> Any:
        """The tokenizer (sentence-transformers 6's name for the model's preprocessor)."""
        return self.tokenizer

    def start_multi_process_pool(self, target_devices: Optional[List[Any]] = None) -> Dict[str, Any]:
        """A pool for predict(pool=...): CPUs only; the work runs on the engine's threads here."""
        return start_pool(target_devices)

    @staticmethod
    def stop_multi_process_pool(pool: Dict[str, Any]) -> None:
        stop_pool(pool)

    def _resolve_prompt(self, prompt_name: Optional[str], prompt: Optional[str]) -> str:
        return resolve_prompt(self.prompts, self.default_prompt_name, prompt_name, prompt)

    def _pairs(self, inputs: Any, prompt: str) -> tuple:
        """(pairs, single): the input pairs checked, the prompt put before each first text."""
        if inputs is None:
            raise TypeError("predict() missing the inputs to score")
        single = _is_single_pair(inputs)
        if isinstance(inputs, np.ndarray):
            inputs = inputs.tolist()
        items = [inputs] if single else list(inputs)
        pairs = []
        for i, p in enumerate(items):
            p = tuple(p) if isinstance(p, (list, tuple)) else (p,)
            if len(p) != 2 or not all(isinstance(t, str) for t in p):
                raise ValueError(f"inputs[{i}] is not a pair of strings")
            check_texts(list(p), f"inputs[{i}]")
            pairs.append((prompt + p[0], p[1]))
        return pairs, single

    def preprocess(self, inputs: Sequence[Any], prompt: Optional[str] = None, **kwargs: Any) -> Dict[str, Any]:
        """The model inputs of pairs, as sentence-transformers' preprocess: input_ids and
        attention_mask, padded to the longest pair and cut longest_first at max_seq_length (torch
        tensors; numpy without torch), with the prompt before each first text."""
        if kwargs:
            raise ValueError(f"preprocess() got keyword arguments roberta_cpp does not use: {sorted(kwargs)}")
        if not inputs:
            return {}
        pairs, _ = self._pairs(list(inputs), prompt or "")
        try:
            import torch  # noqa: F401

            tensors = "pt"
        except ImportError:
            tensors = "np"
        enc = self.tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, truncation="longest_first",
                             max_length=self._max_seq_length, return_tensors=tensors)
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}

    def predict(
        self,
        inputs: Any = None,
        prompt_name: Optional[str] = None,
        prompt: Optional[str] = None,
        batch_size: int = 32,
        show_progress_bar: Optional[bool] = None,
        activation_fn: Any = None,
        apply_softmax: Optional[bool] = False,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: Any = None,
        pool: Any = None,
        chunk_size: Optional[int] = None,
        **kwargs: Any,
    ) -> Any:
        """Scores of pairs [(a, b), ...]: (N,) float32 for a one-label model, else (N, num_labels);
        one pair (a, b) gives one score (or one row). activation_fn (a torch.nn activation, its
        name, or any callable on the (N, labels) logits) applies to this call only, as in
        sentence-transformers 5.4 and later; apply_softmax then takes a softmax over each pair's
        labels (with one label every score is 1, as there). prompt (or prompt_name, a key of
        self.prompts) is put before each pair's first text. sentences and activation_fct (the old
        names) and num_workers (no effect) are taken with sentence-transformers' warnings; pool,
        a list of devices and chunk_size as encode's (see start_multi_process_pool)."""
        if activation_fn is not None:
            kwargs["activation_fn"] = activation_fn
        _call_kwargs(kwargs, "predict")
        inputs = kwargs.get("inputs") if inputs is None else inputs
        activation_fn = kwargs.get("activation_fn")
        check_pool(pool)
        check_devices(device)
        pairs, single = self._pairs(inputs, self._resolve_prompt(prompt_name, prompt))
        batch_size = check_count(batch_size, "batch_size")
        fn = activation_fn if activation_fn is not None else self.activation_fn
        name = _activation_name(fn)
        if fn is not None and name is None:  # a callable: on the logits, then the softmax
            scores = _apply_callable(fn, self._ce.predict(pairs, batch_size, "Identity", False, self._max_seq_length))
            if apply_softmax and scores.ndim == 2:
                e = np.exp(scores - scores.max(axis=1, keepdims=True))
                scores = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
        else:
            scores = self._ce.predict(pairs, batch_size, name, bool(apply_softmax), self._max_seq_length)
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
        prompt_name: Optional[str] = None,
        prompt: Optional[str] = None,
        batch_size: int = 32,
        show_progress_bar: Optional[bool] = None,
        activation_fn: Any = None,
        apply_softmax: bool = False,
        device: Any = None,
        pool: Any = None,
        chunk_size: Optional[int] = None,
        *,
        long_documents: str = "truncate",
        stride: int = 128,
        **kwargs: Any,
    ) -> List[Dict[str, Any]]:
        """Documents sorted by their score against the query, best first (equal scores keep
        document order): [{"corpus_id": int, "score": float, "text": str (with
        return_documents)}], the top_k first (default all). Scores are Python floats, as in
        sentence-transformers 6 (convert_to_numpy / convert_to_tensor are taken with its warning
        and have no effect). Needs a one-label model.
        Ours, by keyword: long_documents "max" or "mean" reads a document whose pair with the query
        is longer than max_seq_length in windows sharing `stride` tokens, each paired with the
        whole query, and scores it by the largest or the mean of its windows' scores ("truncate",
        the default, cuts the pair as sentence-transformers does)."""
        if activation_fn is not None:
            kwargs["activation_fn"] = activation_fn
        _call_kwargs(kwargs, "rank", ("convert_to_numpy", "convert_to_tensor"))
        if long_documents not in ("truncate", "max", "mean"):
            raise ValueError(f"long_documents={long_documents!r}: one of 'truncate', 'max', 'mean'")
        if long_documents != "truncate":
            return self._rank_windows(query, list(documents), top_k, return_documents, prompt_name, prompt,
                                      batch_size, kwargs.get("activation_fn"), apply_softmax, long_documents, stride)
        if "inputs" in kwargs:
            raise TypeError("CrossEncoder.rank() takes query and documents, not inputs")
        if self.num_labels != 1:
            raise ValueError("CrossEncoder.rank() only works for models with num_labels=1. "
                             "Consider using CrossEncoder.predict() with input pairs instead.")
        docs = list(documents)
        scores = self.predict([(query, d) for d in docs], prompt_name=prompt_name, prompt=prompt,
                              batch_size=batch_size, activation_fn=kwargs.get("activation_fn"),
                              apply_softmax=apply_softmax, device=device, pool=pool).tolist()
        results: List[Dict[str, Any]] = []
        for i, s in enumerate(scores):
            results.append({"corpus_id": i, "score": s})
            if return_documents:
                results[-1]["text"] = docs[i]
        results.sort(key=lambda r: r["score"], reverse=True)
        return results[:top_k]

    def _rank_windows(self, query, docs, top_k, return_documents, prompt_name, prompt, batch_size, activation_fn,
                      apply_softmax, long_documents, stride):
        if self.num_labels != 1:
            raise ValueError("CrossEncoder.rank() only works for models with num_labels=1. "
                             "Consider using CrossEncoder.predict() with input pairs instead.")
        fn = activation_fn if activation_fn is not None else self.activation_fn
        name = _activation_name(fn)
        if fn is not None and name is None:
            raise ValueError("long_documents needs a torch.nn activation or its name as activation_fn, not a callable")
        if apply_softmax:
            raise ValueError("long_documents and apply_softmax: with one label every score would be 1")
        pairs, _ = self._pairs([(query, d) for d in docs] or [(query, "")], self._resolve_prompt(prompt_name, prompt))
        scores = self._ce.rank_scores(pairs[0][0], docs, long_documents, check_count(stride, "stride", 0),
                                      check_count(batch_size, "batch_size"), name, self._max_seq_length).tolist()
        results: List[Dict[str, Any]] = [{"corpus_id": i, "score": s} for i, s in enumerate(scores)]
        if return_documents:
            for r in results:
                r["text"] = docs[r["corpus_id"]]
        results.sort(key=lambda r: r["score"], reverse=True)
        return results[:top_k]

    def __repr__(self) -> str:
        return f"CrossEncoder({self.model_path!r}, num_labels={self.num_labels}, activation={self.activation_fn!r})"
