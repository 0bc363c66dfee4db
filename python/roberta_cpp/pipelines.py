"""pipeline(task, model=path): transformers' pipelines on roberta.cpp, returning what transformers
returns (dicts with the same keys, Python floats and ints; one input gives one result, a list gives
a list, with transformers' exceptions to that rule kept).

Each task is one entry of SUPPORTED_TASKS: the pipeline class, the head the checkpoint needs, and
the C++ class of _core it runs on (roberta::FillMask, TextClassifier, ZeroShotClassifier,
TokenClassifier, QuestionAnswerer). A task whose C++ class a build lacks raises NotImplementedError.
"""
from __future__ import annotations

import collections.abc
import enum
import json
import logging
import os
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Type, Union

from . import _core
from .hub import resolve_model
from ._checks import check_batch_size as _check_batch_size
from ._checks import check_count as _check_count
from ._checks import check_text as _check_text
from ._checks import check_texts as _check_texts
from ._compat import check_device, check_loading, dtype_name, engine_dtype
from .model import Model, _apply_threads
from .tokenizer import Tokenizer, _model_max_length

logger = logging.getLogger("roberta_cpp")


class Pipeline:
    """Base of the pipelines: holds the model and tokenizer, keeps the keyword arguments given at
    construction as defaults of every call (as transformers does), and maps one input to one
    result and a list to a list."""

    task: str = ""

    def __init__(self, model: Model, tokenizer: Tokenizer, task: str = "", batch_size: Optional[int] = None,
                 num_workers: Optional[int] = None, **kwargs: Any):
        self.model = model
        self.tokenizer = tokenizer
        self.task = task or self.task
        # transformers' batch_size (inputs a forward pass; default 32 here) and num_workers (its
        # DataLoader's workers: accepted and unused, the engine's threads do that work).
        self._batch_size = _check_batch_size(batch_size)
        self._defaults = self._check_parameters(kwargs)

    def _check_parameters(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        unknown = set(kwargs) - set(self._parameters)
        if unknown:
            raise TypeError(f"{type(self).__name__} got unexpected keyword arguments {sorted(unknown)}; "
                            f"it takes {list(self._parameters)}")
        return dict(kwargs)

    _parameters: Sequence[str] = ()
    framework = "pt"  # what transformers' pipelines report; the engine is C++ on the CPU

    @property
    def device(self) -> Any:
        """The CPU (a torch.device where torch is installed, as transformers gives it)."""
        try:
            import torch
        except ImportError:
            return "cpu"
        return torch.device("cpu")

    def predict(self, X: Any) -> Any:
        """transformers' scikit-learn style alias of calling the pipeline."""
        return self(X)

    def __call__(self, inputs: Union[str, Sequence[str]], *args: Any, batch_size: Optional[int] = None,
                 num_workers: Optional[int] = None, **kwargs: Any) -> Any:
        if args:
            if isinstance(inputs, str):
                inputs = [inputs, *args]
            else:
                raise TypeError("pass several inputs as one list")
        params = {**self._defaults, **self._check_parameters(kwargs)}
        return self._call(inputs, self._call_batch_size(batch_size), params)

    def _call(self, inputs: Any, batch_size: int, params: Dict[str, Any]) -> Any:
        single = isinstance(inputs, str)
        texts = [_check_text(inputs, "inputs")] if single else _check_texts(list(inputs), "inputs")
        results = self._run(texts, batch_size=batch_size, **params)
        return results[0] if single else results

    def _call_batch_size(self, batch_size: Optional[int]) -> int:
        return _check_batch_size(batch_size) or self._batch_size or 32

    def _run(self, texts: List[str], batch_size: int, **params: Any) -> List[Any]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(task={self.task!r}, model={self.model!r})"


class FillMaskPipeline(Pipeline):
    """transformers' FillMaskPipeline: the likeliest tokens for each <mask>.

    Each result is a list of dicts {"score": float, "token": int, "token_str": str,
    "sequence": str}, best first; a text with several masks gives one such list per mask. A list
    of texts gives a list of results, except a list of one text, which gives that text's result
    (as transformers does). top_k (default 5) and targets (a word or a list: score only these;
    a word that is not one token uses its first token, with a warning) as in transformers. A text
    without <mask> raises InvalidInputError (a ValueError).
    """

    task = "fill-mask"
    _parameters = ("top_k", "targets", "tokenizer_kwargs")

    def __init__(self, model: Model, tokenizer: Tokenizer, task: str = "", **kwargs: Any):
        super().__init__(model, tokenizer, task, **kwargs)
        self._fill = _core.FillMask(model._model, tokenizer)

    def _check_parameters(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        # transformers' _sanitize_parameters: None for these means "not given" (the value given at
        # construction, else the default, stays)
        return super()._check_parameters({k: v for k, v in kwargs.items() if v is not None})

    def __call__(self, inputs: Union[str, Sequence[str]], *args: Any, **kwargs: Any) -> Any:
        outputs = super().__call__(inputs, *args, **kwargs)
        if isinstance(inputs, list) and len(inputs) == 1:
            return outputs[0]
        return outputs

    def _run(self, texts: List[str], batch_size: int, top_k: Optional[int] = 5, targets: Any = None,
             tokenizer_kwargs: Optional[dict] = None) -> List[Any]:
        unknown = set(tokenizer_kwargs or {}) - {"truncation"}
        if unknown:
            raise ValueError(f"tokenizer_kwargs {sorted(unknown)} are not supported by roberta_cpp's fill-mask "
                             f"(it takes truncation)")
        truncation = (tokenizer_kwargs or {}).get("truncation", False)
        if truncation not in (True, False, "longest_first", "do_not_truncate"):
            raise ValueError(f"tokenizer_kwargs truncation={truncation!r}: fill-mask takes True, False, "
                             f"'longest_first' or 'do_not_truncate'")
        target_list: List[str] = []
        if targets is not None:
            target_list = ([_check_text(targets, "targets")] if isinstance(targets, str)
                           else _check_texts(list(targets), "targets"))
            ids, notes = self._fill.target_ids(target_list)
            for note in notes:
                logger.warning(note)
            if not ids:
                raise ValueError("At least one target must be provided when passed.")
        # (transformers: top_k=None leaves the default of 5; top_k=0 checks the inputs and answers
        # an empty list for each mask)
        k = _check_count(5 if top_k is None else top_k, "top_k", 0)
        results = self._fill(texts, max(k, 1), target_list, truncation in (True, "longest_first"), batch_size)
        if k == 0:
            results = [[[] for _ in masks] for masks in results]
        return [masks[0] if len(masks) == 1 else masks for masks in results]


class FeatureExtractionPipeline(Pipeline):
    """transformers' FeatureExtractionPipeline: the last hidden state of every token.

    Each result is a nested list of Python floats of shape [1, tokens, hidden] (tokens include
    <s> and </s>), or with return_tensors=True a float32 numpy array (1, tokens, hidden) (where
    transformers gives a torch tensor). truncation=True (or "longest_first" / "only_first") cuts
    texts to the model's maximum, or to tokenize_kwargs' max_length (which alone also truncates, as
    the tokenizer does); otherwise a longer text raises InvalidInputError. tokenize_kwargs may hold
    "truncation", "max_length" and "padding" (accepted: each text's states come unpadded, where
    transformers pads a batch of several to its longest).
    """

    task = "feature-extraction"
    _parameters = ("truncation", "tokenize_kwargs", "return_tensors")

    def _check_parameters(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        # transformers' _sanitize_parameters, on the construction's and each call's arguments on
        # their own: None is "not given", truncation joins the tokenize_kwargs given beside it, and
        # those become the tokenizer's arguments one by one (a call's replace the construction's
        # of the same name only): kept here as "tokenize_kwargs.NAME" entries
        kwargs = super()._check_parameters({k: v for k, v in kwargs.items() if v is not None})
        tokenize_kwargs = kwargs.pop("tokenize_kwargs", None) or {}
        if not isinstance(tokenize_kwargs, collections.abc.Mapping):
            raise TypeError(f"tokenize_kwargs must be a dict, not {type(tokenize_kwargs).__name__}")
        tokenize_kwargs = dict(tokenize_kwargs)
        truncation = kwargs.pop("truncation", None)
        if truncation is not None:
            if "truncation" in tokenize_kwargs:
                raise ValueError("truncation parameter defined twice (given as keyword argument as well as in "
                                 "tokenize_kwargs)")
            tokenize_kwargs["truncation"] = truncation
        kwargs.update({f"tokenize_kwargs.{k}": v for k, v in tokenize_kwargs.items()})
        return kwargs

    def _run(self, texts: List[str], batch_size: int, return_tensors: Optional[bool] = None,
             **tokenizer_arguments: Any) -> List[Any]:
        tokenize_kwargs = {k.split(".", 1)[1]: v for k, v in tokenizer_arguments.items()}
        unknown = set(tokenize_kwargs) - {"truncation", "max_length", "padding"}
        if unknown:
            raise ValueError(f"tokenize_kwargs {sorted(unknown)} are not supported by roberta_cpp's feature-extraction "
                             f"(it takes truncation, max_length, padding)")
        # the tokenizer's strategies: a single text truncates the same way under each of them
        cut = tokenize_kwargs.get("truncation", False)
        if cut not in (True, False, None, "longest_first", "only_first", "do_not_truncate"):
            raise ValueError(f"truncation={cut!r}: not one of True, False, 'longest_first', 'only_first', "
                             f"'do_not_truncate'")
        max_length = tokenize_kwargs.get("max_length")
        max_length = 0 if max_length is None else _check_count(max_length, "max_length", 3)
        # (transformers' tokenizer: max_length without truncation or padding truncates, longest_first)
        cut = cut not in (False, None, "do_not_truncate") or (
            max_length > 0 and tokenize_kwargs.get("truncation") is None and not tokenize_kwargs.get("padding", False))
        states = _core.token_states(self.model._model, self.tokenizer, texts, bool(cut), batch_size, max_length)
        if return_tensors:
            return [s[None, :, :] for s in states]
        return [[s.tolist()] for s in states]


class TextClassificationPipeline(Pipeline):
    """transformers' TextClassificationPipeline ("text-classification", "sentiment-analysis").

    Inputs: a text, {"text": ..., "text_pair": ...}, or a list of either (and transformers' legacy
    pair form: [[[text, pair]]] is one pair; [[text, pair]] is refused, as there). Without top_k the result
    is the best label as {"label": str, "score": float} (and a single text gives a one-element
    list of it, as transformers does); with top_k=k a list of the k best, with top_k=None every
    label, best first. function_to_apply: "default" (regression: none; one label or
    multi-label: sigmoid; else softmax), "softmax", "sigmoid", "none". return_all_scores (deprecated
    in transformers): every label in label order. truncation=True (or "longest_first", "only_first",
    "only_second", the tokenizer's strategies) cuts over-long texts, at max_length when given;
    padding is accepted (it does not change results).
    """

    task = "text-classification"
    _parameters = ("top_k", "function_to_apply", "return_all_scores", "truncation", "max_length", "padding")

    def __init__(self, model: Model, tokenizer: Tokenizer, task: str = "", **kwargs: Any):
        super().__init__(model, tokenizer, task, **kwargs)
        self._classify = _core.TextClassifier(model._model, tokenizer)

    def _check_parameters(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        # transformers' _sanitize_parameters (4.x, where return_all_scores still was), on the
        # construction's and each call's arguments on their own: function_to_apply and
        # return_all_scores None are "not given" (the construction's value stays); top_k (None:
        # every label) ends the legacy form; else return_all_scores sets top_k (None or 1) and
        # keeps the legacy form (every label in label order); the tokenizer's arguments pass as
        # they are (None included)
        kwargs = super()._check_parameters({k: v for k, v in kwargs.items()
                                            if v is not None or k not in ("function_to_apply", "return_all_scores")})
        all_scores = kwargs.pop("return_all_scores", None)
        if "top_k" in kwargs:
            kwargs["_legacy"] = False
        elif all_scores is not None:
            warnings.warn("`return_all_scores` is now deprecated,  if want a similar functionality use `top_k=None` "
                          "instead of `return_all_scores=True` or `top_k=1` instead of `return_all_scores=False`.",
                          UserWarning)
            kwargs["top_k"] = None if all_scores else 1
        return kwargs

    def __call__(self, inputs: Any, batch_size: Optional[int] = None, num_workers: Optional[int] = None,
                 **kwargs: Any) -> Any:
        params = {**self._defaults, **self._check_parameters(kwargs)}
        self._call_batch_size(batch_size)  # checked; the classifier runs passes of up to 16,384 tokens
        if _is_stream(inputs):  # a generator or dataset of inputs: answered as a list
            inputs = _streamed(inputs)
        single = not isinstance(inputs, list)
        items = [inputs] if single else list(inputs)
        pairs = []
        for i, item in enumerate(items):
            if isinstance(item, collections.abc.Mapping):
                if "text" not in item:
                    raise ValueError(f"inputs[{i}] is a dict without \"text\"")
                text, pair = item["text"], item.get("text_pair")
                _check_text(text, f"inputs[{i}][\"text\"]")
                if pair is not None:
                    _check_text(pair, f"inputs[{i}][\"text_pair\"]")
                pairs.append((text, pair))
            elif isinstance(item, str):
                pairs.append((_check_text(item, f"inputs[{i}]"), None))
            elif (isinstance(item, list) and len(item) == 1 and isinstance(item[0], list) and len(item[0]) == 2
                  and all(isinstance(t, str) for t in item[0])):
                # transformers' legacy pair form [[text, pair]] as one input ([[[a, b]]] as a call);
                # a plain [a, b] input is refused there as here
                _check_texts(list(item[0]), f"inputs[{i}]")
                pairs.append((item[0][0], item[0][1]))
            else:
                raise ValueError('The pipeline received invalid inputs, if you are trying to send text pairs, you can '
                                 'try to send a dictionary `{"text": "My text", "text_pair": "My pair"}` in order to '
                                 'send a text pair.')
        legacy = params.get("_legacy", True)
        top_k: Optional[int] = params.get("top_k", 1)
        function = params.get("function_to_apply") or "default"
        # transformers' tokenizer: max_length without truncation (and without padding) truncates longest_first
        truncation = params.get("truncation")
        if truncation is None:
            truncation = params.get("max_length") is not None and not params.get("padding", False)
        strategies = {True: "longest_first", "longest_first": "longest_first", "only_first": "only_first",
                      "only_second": "only_second", False: None, None: None, "do_not_truncate": None}
        if isinstance(truncation, (bool, str, type(None))) and truncation in strategies:
            strategy = strategies[truncation]
        else:
            raise ValueError(f"truncation={truncation!r}: not one of True, False, 'longest_first', 'only_first', "
                             f"'only_second', 'do_not_truncate'")
        max_length = params.get("max_length")
        max_length = 0 if max_length is None else _check_count(max_length, "max_length")
        if top_k is not None:
            top_k = _check_count(top_k, "top_k", 0)  # (0: an empty list, as transformers' [:0])
        results = self._classify(pairs, top_k=None if top_k is None else max(top_k, 1),
                                 return_all_scores=bool(legacy and top_k is None), function_to_apply=str(function),
                                 truncation=strategy is not None, truncation_strategy=strategy or "longest_first",
                                 max_length=max_length)
        shaped = [r[0] if (legacy and top_k == 1) else [] if top_k == 0 else r for r in results]
        if single:
            return [shaped[0]] if isinstance(inputs, str) and "top_k" not in kwargs else shaped[0]
        return shaped


class ZeroShotClassificationPipeline(Pipeline):
    """transformers' ZeroShotClassificationPipeline on an NLI checkpoint (a label starting with
    "entail"; without one the last label is taken as entailment, with a warning, as there).
    ``zs(sequences, candidate_labels, hypothesis_template="This example is {}.", multi_label=False)`` gives {"sequence", "labels", "scores"} per sequence, best label first;
    candidate_labels may be one comma-separated string."""

    task = "zero-shot-classification"
    _parameters = ("candidate_labels", "hypothesis_template", "multi_label", "multi_class")

    def __init__(self, model: Model, tokenizer: Tokenizer, task: str = "", **kwargs: Any):
        super().__init__(model, tokenizer, task, **kwargs)
        self._zero_shot = _core.ZeroShotClassifier(model._model, tokenizer)
        if self._zero_shot.warning:  # transformers logs it as a warning too
            logger.warning(self._zero_shot.warning)

    def _check_parameters(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        kwargs = super()._check_parameters(kwargs)
        # transformers' _sanitize_parameters, on the construction's and each call's arguments on
        # their own: a multi_class that is not None replaces multi_label given beside it
        multi_class = kwargs.pop("multi_class", None)
        if multi_class is not None:
            logger.warning("The `multi_class` argument has been deprecated and renamed to `multi_label`. "
                           "`multi_class` will be removed in a future version of Transformers.")
            kwargs["multi_label"] = multi_class
        return kwargs

    def __call__(self, sequences: Union[str, Sequence[str]], *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and "candidate_labels" not in kwargs:
            kwargs["candidate_labels"] = args[0]
        elif args:
            raise ValueError(f"Unable to understand extra arguments {args}")
        return super().__call__(sequences, **kwargs)

    def _run(self, texts: List[str], batch_size: int, candidate_labels: Any = None,
             hypothesis_template: str = "This example is {}.", multi_label: Optional[bool] = None) -> List[Any]:
        if candidate_labels is None:
            raise ValueError("You must include at least one label.")
        labels = (_core.parse_candidate_labels(_check_text(candidate_labels, "candidate_labels"))
                  if isinstance(candidate_labels, str) else _check_texts(list(candidate_labels), "candidate_labels"))
        _check_text(hypothesis_template, "hypothesis_template")
        return self._zero_shot(texts, labels, hypothesis_template, bool(multi_label))


class TokenClassificationPipeline(Pipeline):
    """transformers' TokenClassificationPipeline ("token-classification", "ner").

    Per text a list of entities: without aggregation {"entity", "score", "index", "word",
    "start", "end"} per token; with aggregation_strategy "simple" / "first" / "average" / "max"
    {"entity_group", "score", "word", "start", "end"} per group. ignore_labels (default ["O"]);
    stride reads long texts in windows that overlap by that many tokens (without an aggregation a
    token read by two windows is listed once, the higher score; as transformers, a stride given with
    aggregation_strategy="none" in the same call is a ValueError).

    is_split_into_words=True takes lists of words (one list, or a list of lists) instead of texts,
    as transformers: each word is tokenized on its own, start / end index the words joined by
    `delimiter` (default " "), and one list gives a list holding one result, as there."""

    task = "token-classification"
    _parameters = ("aggregation_strategy", "ignore_labels", "stride", "is_split_into_words", "delimiter")

    def __init__(self, model: Model, tokenizer: Tokenizer, task: str = "", **kwargs: Any):
        super().__init__(model, tokenizer, task, **kwargs)
        self._ner = _core.TokenClassifier(model._model, tokenizer)
        # transformers' __call__ sets is_split_into_words (default False) and, for words, the
        # delimiter (default " ") on every call, so the construction's never count
        ignored = [k for k in ("is_split_into_words", "delimiter") if self._defaults.pop(k, None) is not None]
        if ignored:
            logger.warning(f"{', '.join(ignored)} given at construction is ignored, as in transformers: "
                           f"pass it with each call")

    def _check_parameters(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        # transformers' _sanitize_parameters, which sees the construction's and each call's
        # arguments on their own: None for these means "not given" (the construction's value
        # stays), and a stride with an explicit "none" among the same ones is refused (without an
        # aggregation_strategy there, the stride reads windows). The message shows the enum as
        # transformers' f-string does on the running Python.
        kwargs = {k: v for k, v in kwargs.items()
                  if v is not None or k not in ("aggregation_strategy", "ignore_labels", "stride")}
        strategy = kwargs.get("aggregation_strategy")
        if kwargs.get("stride") is not None and strategy is not None and \
                str(getattr(strategy, "value", strategy)).lower() == "none":
            none = enum.Enum("AggregationStrategy", {"NONE": "none"}, type=str).NONE  # formatted as this Python does
            raise ValueError(f'`stride` was provided to process all the text but `aggregation_strategy="{none}"`, '
                             "please select another one instead.")
        return super()._check_parameters(kwargs)

    def _call(self, inputs: Any, batch_size: int, params: Dict[str, Any]) -> Any:
        split = params.pop("is_split_into_words", False)
        delimiter = params.pop("delimiter", None)
        if not split:  # (transformers ignores a delimiter then)
            return super()._call(inputs, batch_size, params)
        if delimiter is None:
            delimiter = " "
        _check_text(delimiter, "delimiter")
        if isinstance(inputs, (list, tuple)) and not inputs:
            raise ValueError("At least one input is required.")
        # transformers: a list of lists is a batch; anything else is one input, wrapped in a list
        batched = isinstance(inputs, list) and all(isinstance(x, list) for x in inputs)
        batch = list(inputs) if batched else [inputs]
        for i, words in enumerate(batch):
            what = f"inputs[{i}]" if batched else "inputs"
            if not isinstance(words, list):
                raise ValueError(f"{what}: when `is_split_into_words=True`, `sentence` must be a list of tokens, "
                                 f"not {type(words).__name__}")
            _check_texts(words, what)
        strategy, labels, stride = self._options(**params)
        return self._ner.words(batch, delimiter, strategy, labels, stride)

    def _options(self, aggregation_strategy: Any = "none", ignore_labels: Optional[Sequence[str]] = None,
                 stride: Optional[int] = None) -> tuple:
        strategy = _check_text(getattr(aggregation_strategy, "value", aggregation_strategy) or "none",
                               "aggregation_strategy")
        labels = ["O"] if ignore_labels is None else _check_texts(list(ignore_labels), "ignore_labels")
        return str(strategy).lower(), labels, None if stride is None else _check_count(stride, "stride", 0)

    def _run(self, texts: List[str], batch_size: int, **params: Any) -> List[Any]:
        return self._ner(texts, *self._options(**params))


class QuestionAnsweringPipeline(Pipeline):
    """transformers' QuestionAnsweringPipeline (extractive QA).

    ``qa(question="...", context="...")``, ``qa({"question": ..., "context": ...})``,
    ``qa(question, context)`` or lists of them. Each answer is {"score", "start", "end",
    "answer"} (start/end: character offsets into the context); top_k > 1 gives a list. Options
    as transformers: top_k=1, doc_stride=128, max_answer_len=15, max_seq_len=384,
    max_question_len=64, handle_impossible_answer=False, align_to_words=True."""

    task = "question-answering"
    _parameters = ("top_k", "doc_stride", "max_answer_len", "max_seq_len", "max_question_len",
                   "handle_impossible_answer", "align_to_words", "topk", "padding")

    def _check_parameters(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        # transformers' _sanitize_parameters, on the construction's and each call's arguments on
        # their own: None is "not given" (the construction's value, else the default, stays), the
        # deprecated topk counts where top_k is not given beside it, and padding changes no answer
        kwargs = super()._check_parameters({k: v for k, v in kwargs.items() if v is not None})
        kwargs.pop("padding", None)
        topk = kwargs.pop("topk", None)
        if topk is not None and "top_k" not in kwargs:
            warnings.warn("topk parameter is deprecated, use top_k instead", UserWarning)
            kwargs["top_k"] = topk
        return kwargs

    def __init__(self, model: Model, tokenizer: Tokenizer, task: str = "", **kwargs: Any):
        super().__init__(model, tokenizer, task, **kwargs)
        self._qa = _core.QuestionAnswerer(model._model, tokenizer)

    def __call__(self, *args: Any, question: Any = None, context: Any = None, batch_size: Optional[int] = None,
                 num_workers: Optional[int] = None, **kwargs: Any) -> Any:
        examples, single = _qa_examples(args, question, context)
        for i, (q, c) in enumerate(examples):
            _check_text(q, f"question[{i}]" if len(examples) > 1 else "question")
            _check_text(c, f"context[{i}]" if len(examples) > 1 else "context")
        self._call_batch_size(batch_size)  # checked; an example's windows run in passes of up to 16,384 tokens
        params = {**self._defaults, **self._check_parameters(kwargs)}
        top_k = _check_count(params.get("top_k", 1), "top_k")
        doc_stride, max_seq_len = params.get("doc_stride"), params.get("max_seq_len")
        results = self._qa(examples, top_k=top_k,
                           doc_stride=None if doc_stride is None else _check_count(doc_stride, "doc_stride", 0),
                           max_answer_len=_check_count(params.get("max_answer_len", 15), "max_answer_len"),
                           max_seq_len=None if max_seq_len is None else _check_count(max_seq_len, "max_seq_len"),
                           max_question_len=_check_count(params.get("max_question_len", 64), "max_question_len"),
                           handle_impossible_answer=bool(params.get("handle_impossible_answer", False)),
                           align_to_words=bool(params.get("align_to_words", True)))
        shaped = [r[0] if len(r) == 1 else r for r in results]  # transformers: one answer is a dict, whatever top_k
        return shaped[0] if single else shaped


def _qa_examples(args: tuple, question: Any, context: Any) -> tuple:
    """(list of (question, context), whether one example was given), as transformers'
    QuestionAnsweringArgumentHandler accepts them."""
    if question is not None or context is not None:
        if args or question is None or context is None:
            raise ValueError("pass both question= and context= (and no positional inputs)")
        if isinstance(question, str) and isinstance(context, str):
            return [(question, context)], True
        qs = [question] * len(context) if isinstance(question, str) else list(question)
        cs = [context] * len(qs) if isinstance(context, str) else list(context)
        if len(qs) != len(cs):
            raise ValueError("Questions and contexts don't have the same lengths")
        # (transformers: exactly one example gives its answer, not a list of one)
        return list(zip(qs, cs)), len(qs) == 1
    if len(args) == 2 and all(isinstance(a, str) for a in args):
        return [(args[0], args[1])], True
    if len(args) != 1:
        raise ValueError("pass question= and context=, a {'question', 'context'} dict or a list of them")
    item = args[0]
    streamed = _is_stream(item)
    if streamed:  # a generator or dataset of examples: answered as a list
        item = _streamed(item)
    items = item if isinstance(item, (list, tuple)) else [item]
    examples = []
    for x in items:
        if not isinstance(x, dict) or "question" not in x or "context" not in x:
            raise ValueError("each input must be a dict with 'question' and 'context'")
        examples.append((x["question"], x["context"]))
    single = not streamed and (not isinstance(item, (list, tuple)) or len(items) == 1)
    return examples, single


def _is_stream(inputs: Any) -> bool:
    """A generator, iterator or dataset of inputs (what transformers' pipelines stream, map-style
    datasets such as KeyDataset too), as opposed to one input (a str, a mapping, a tuple) or a list."""
    if isinstance(inputs, (str, bytes, tuple, list, collections.abc.Mapping)):
        return False
    return hasattr(inputs, "__iter__") or (hasattr(inputs, "__getitem__") and hasattr(inputs, "__len__"))


def _streamed(inputs: Any) -> List[Any]:
    """The items of a stream (_is_stream): iterated, or indexed 0 .. len - 1."""
    if hasattr(inputs, "__iter__"):
        return list(inputs)
    return [inputs[i] for i in range(len(inputs))]


@dataclass(frozen=True)
class Task:
    """One entry of SUPPORTED_TASKS."""

    pipeline_class: Optional[Type[Pipeline]]
    head: Optional[str] = None     # the head the checkpoint must have (Model.has_head)
    cpp_class: Optional[str] = None  # the _core class the task runs on, when it needs one


SUPPORTED_TASKS: Dict[str, Task] = {
    "fill-mask": Task(FillMaskPipeline, head="masked_lm", cpp_class="FillMask"),
    "feature-extraction": Task(FeatureExtractionPipeline),
    # A new task: its pipeline class above, the _core binding of its C++ class, one entry here.
    "text-classification": Task(TextClassificationPipeline, head="sequence_classification", cpp_class="TextClassifier"),
    "zero-shot-classification": Task(ZeroShotClassificationPipeline, head="sequence_classification",
                                     cpp_class="ZeroShotClassifier"),
    "token-classification": Task(TokenClassificationPipeline, head="token_classification", cpp_class="TokenClassifier"),
    "question-answering": Task(QuestionAnsweringPipeline, head="question_answering", cpp_class="QuestionAnswerer"),
}
TASK_ALIASES = {"sentiment-analysis": "text-classification", "ner": "token-classification"}

_ARCHITECTURE_TASKS = [
    ("ForMaskedLM", "fill-mask"),
    ("ForSequenceClassification", "text-classification"),
    ("ForTokenClassification", "token-classification"),
    ("ForQuestionAnswering", "question-answering"),
]


def _infer_task(path: str) -> str:
    try:
        with open(os.path.join(path, "config.json")) as f:
            architectures = json.load(f).get("architectures") or []
    except (OSError, ValueError):
        architectures = []
    for arch in architectures:
        for suffix, task in _ARCHITECTURE_TASKS:
            if str(arch).endswith(suffix):
                return task
    return "feature-extraction"


def pipeline(
    task: Optional[str] = None,
    model: Union[str, os.PathLike, Model, None] = None,
    tokenizer: Union[str, os.PathLike, Tokenizer, None] = None,
    *,
    dtype: Any = "float32",
    threads: Optional[int] = None,
    device: Any = None,
    framework: Optional[str] = None,
    torch_dtype: Any = None,
    model_kwargs: Optional[Dict[str, Any]] = None,
    device_map: Any = None,
    config: Any = None,
    revision: Optional[str] = None,
    use_fast: bool = True,
    token: Any = None,
    trust_remote_code: Optional[bool] = None,
    **kwargs: Any,
) -> Pipeline:
    """transformers.pipeline for roberta.cpp: ``pipeline("fill-mask", model="models/demo")``.

    task: "fill-mask", "feature-extraction", "text-classification" ("sentiment-analysis"),
    "zero-shot-classification", "token-classification" ("ner") or "question-answering"; None
    infers it from config.json's architectures (a task whose C++ class a build lacks raises
    NotImplementedError). model: a local folder (or a loaded Model, with tokenizer then
    required); tokenizer: a folder or Tokenizer (default: the model's folder). dtype: "float32",
    "bfloat16", "int8" or "auto" (roberta_cpp's: bf16 where the CPU multiplies it natively, not
    transformers' checkpoint dtype) weights, or torch.float32 / torch.bfloat16 as transformers'
    dtype and torch_dtype (also in model_kwargs) take them (torch_dtype="auto" keeps float32).
    threads: the engine's threads
    (process-wide). A Hub id ("org/name", or "org/name@revision", or with revision=) is its
    snapshot in the local Hugging Face cache (roberta_cpp.hub). use_fast, token and
    trust_remote_code have no effect; device and device_map must name the CPU; config must be
    None (the folder's is read).
    Other keyword arguments (top_k, targets, truncation, ...) become defaults of every call.
    """
    if model is None:
        raise ValueError("pipeline() needs model= (a local model folder); roberta_cpp downloads nothing")
    check_device(device)
    if device_map not in (None, "auto"):
        check_device(device_map, "device_map")
    if config is not None:
        raise ValueError("config=...: roberta_cpp reads the model folder's config.json")
    if torch_dtype is not None and model_kwargs and ("torch_dtype" in model_kwargs or "dtype" in model_kwargs):
        raise ValueError("You cannot use both pipeline(..., torch_dtype=...) and model_kwargs={'torch_dtype': ...}; "
                         "give it once")
    dtype = engine_dtype(dtype)
    dtype = check_loading({"model_kwargs": model_kwargs}, "torch", dtype_name(torch_dtype, "torch_dtype") or dtype)
    if framework not in (None, "pt", "np"):
        raise ValueError(f"framework={framework!r} is not supported")
    path = None if isinstance(model, Model) else resolve_model(model, revision)
    if task is None:
        if path is None:
            raise ValueError("pass task= when model is a loaded Model")
        task = _infer_task(path)
    name = TASK_ALIASES.get(task, task)
    if name not in SUPPORTED_TASKS:
        raise KeyError(f"Unknown task {task!r}, available tasks are {sorted([*SUPPORTED_TASKS, *TASK_ALIASES])}")
    entry = SUPPORTED_TASKS[name]
    if entry.pipeline_class is None or (entry.cpp_class and not hasattr(_core, entry.cpp_class)):
        raise NotImplementedError(
            f"task {name!r} needs the C++ pipeline roberta::{entry.cpp_class}, which this build of roberta_cpp does "
            f"not include yet; available tasks: {[t for t, e in SUPPORTED_TASKS.items() if e.pipeline_class]}")
    _apply_threads(threads)
    loaded = model if isinstance(model, Model) else Model.from_pretrained(path, dtype=dtype)
    if tokenizer is None:
        if path is None:
            raise ValueError("pass tokenizer= when model is a loaded Model")
        tokenizer = path
    tok = tokenizer if isinstance(tokenizer, Tokenizer) else Tokenizer.from_pretrained(tokenizer)
    if entry.head and not loaded.has_head(entry.head):
        raise _core.ModelError(f"{path or 'the model'}: the checkpoint has no {entry.head} head, so it cannot run "
                               f"the {name} pipeline")
    return entry.pipeline_class(loaded, tok, task=task, **kwargs)
