"""pipeline(task, model=path): transformers' pipelines on roberta.cpp, returning what transformers
returns (lists of dicts with the same keys, Python floats and ints; one input gives one result,
a list gives a list).

Each task is one entry of SUPPORTED_TASKS: the pipeline class, the head the checkpoint needs, and
the C++ class of _core it runs on. Tasks whose C++ class this build lacks raise NotImplementedError.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Type, Union

from . import _core
from .model import Model, _apply_threads
from .tokenizer import Tokenizer, _model_max_length

logger = logging.getLogger("roberta_cpp")


class Pipeline:
    """Base of the pipelines: holds the model and tokenizer, keeps the keyword arguments given at
    construction as defaults of every call (as transformers does), and maps one input to one
    result and a list to a list."""

    task: str = ""

    def __init__(self, model: Model, tokenizer: Tokenizer, task: str = "", **kwargs: Any):
        self.model = model
        self.tokenizer = tokenizer
        self.task = task or self.task
        self._defaults = self._check_parameters(kwargs)

    def _check_parameters(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        unknown = set(kwargs) - set(self._parameters)
        if unknown:
            raise TypeError(f"{type(self).__name__} got unexpected keyword arguments {sorted(unknown)}; "
                            f"it takes {list(self._parameters)}")
        return dict(kwargs)

    _parameters: Sequence[str] = ()

    def __call__(self, inputs: Union[str, Sequence[str]], *args: Any, batch_size: Optional[int] = None,
                 num_workers: Optional[int] = None, **kwargs: Any) -> Any:
        if args:
            if isinstance(inputs, str):
                inputs = [inputs, *args]
            else:
                raise TypeError("pass several inputs as one list")
        params = {**self._defaults, **self._check_parameters(kwargs)}
        single = isinstance(inputs, str)
        texts = [inputs] if single else list(inputs)
        results = self._run(texts, batch_size=batch_size or 32, **params)
        return results[0] if single else results

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

    def __call__(self, inputs: Union[str, Sequence[str]], *args: Any, **kwargs: Any) -> Any:
        outputs = super().__call__(inputs, *args, **kwargs)
        if isinstance(inputs, list) and len(inputs) == 1:
            return outputs[0]
        return outputs

    def _run(self, texts: List[str], batch_size: int, top_k: int = 5, targets: Any = None,
             tokenizer_kwargs: Optional[dict] = None) -> List[Any]:
        if tokenizer_kwargs:
            raise ValueError(f"tokenizer_kwargs {sorted(tokenizer_kwargs)} are not supported by roberta_cpp's fill-mask")
        target_list: List[str] = []
        if targets is not None:
            target_list = [targets] if isinstance(targets, str) else list(targets)
            ids, notes = self._fill.target_ids(target_list)
            for note in notes:
                logger.warning(note)
            if not ids:
                raise ValueError("At least one target must be provided when passed.")
        results = self._fill(texts, int(top_k), target_list)
        return [masks[0] if len(masks) == 1 else masks for masks in results]


class FeatureExtractionPipeline(Pipeline):
    """transformers' FeatureExtractionPipeline: the last hidden state of every token.

    Each result is a nested list of Python floats of shape [1, tokens, hidden] (tokens include
    <s> and </s>), or with return_tensors=True a float32 numpy array (1, tokens, hidden) (where
    transformers gives a torch tensor). truncation=True cuts texts to the model's maximum;
    otherwise a longer text raises InvalidInputError. tokenize_kwargs may hold "truncation".
    """

    task = "feature-extraction"
    _parameters = ("truncation", "tokenize_kwargs", "return_tensors")

    def _run(self, texts: List[str], batch_size: int, truncation: Optional[bool] = None,
             tokenize_kwargs: Optional[dict] = None, return_tensors: Optional[bool] = None) -> List[Any]:
        tokenize_kwargs = dict(tokenize_kwargs or {})
        if truncation is not None:
            if "truncation" in tokenize_kwargs:
                raise ValueError("truncation parameter defined twice (given as keyword argument as well as in "
                                 "tokenize_kwargs)")
            tokenize_kwargs["truncation"] = truncation
        unknown = set(tokenize_kwargs) - {"truncation"}
        if unknown:
            raise ValueError(f"tokenize_kwargs {sorted(unknown)} are not supported by roberta_cpp's feature-extraction")
        states = _core.token_states(self.model._model, self.tokenizer, texts,
                                    bool(tokenize_kwargs.get("truncation", False)), batch_size)
        if return_tensors:
            return [s[None, :, :] for s in states]
        return [[s.tolist()] for s in states]


@dataclass(frozen=True)
class Task:
    """One entry of SUPPORTED_TASKS."""

    pipeline_class: Optional[Type[Pipeline]]
    head: Optional[str] = None     # the head the checkpoint must have (Model.has_head)
    cpp_class: Optional[str] = None  # the _core class the task runs on, when it needs one
    default: Dict[str, Any] = None  # type: ignore[assignment]


SUPPORTED_TASKS: Dict[str, Task] = {
    "fill-mask": Task(FillMaskPipeline, head="masked_lm", cpp_class="FillMask"),
    "feature-extraction": Task(FeatureExtractionPipeline),
    # Their C++ pipelines (roberta::TextClassifier, ZeroShotClassifier, TokenClassifier,
    # QuestionAnswerer) are not in this build yet; each becomes one pipeline class here.
    "text-classification": Task(None, head="sequence_classification", cpp_class="TextClassifier"),
    "zero-shot-classification": Task(None, head="sequence_classification", cpp_class="ZeroShotClassifier"),
    "token-classification": Task(None, head="token_classification", cpp_class="TokenClassifier"),
    "question-answering": Task(None, head="question_answering", cpp_class="QuestionAnswerer"),
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
    dtype: str = "float32",
    threads: Optional[int] = None,
    device: Any = None,
    framework: Optional[str] = None,
    **kwargs: Any,
) -> Pipeline:
    """transformers.pipeline for roberta.cpp: ``pipeline("fill-mask", model="models/demo")``.

    task: "fill-mask" or "feature-extraction" (the classification, zero-shot, NER and QA tasks
    raise NotImplementedError until their C++ pipelines are in this build); None infers it from
    config.json's architectures. model: a local folder (or a loaded Model, with tokenizer then
    required); tokenizer: a folder or Tokenizer (default: the model's folder). dtype: "float32",
    "bfloat16" or "int8" weights. threads: the engine's threads (process-wide). Other keyword
    arguments (top_k, targets, truncation, ...) become defaults of every call.
    """
    if model is None:
        raise ValueError("pipeline() needs model= (a local model folder); roberta_cpp downloads nothing")
    if device not in (None, -1, "cpu"):
        raise ValueError(f"device={device!r}: roberta_cpp runs on the CPU only")
    if framework not in (None, "pt", "np"):
        raise ValueError(f"framework={framework!r} is not supported")
    path = None if isinstance(model, Model) else os.fspath(model)
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
    return entry.pipeline_class(loaded, tok, task=name, **kwargs)
