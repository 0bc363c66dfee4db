"""The encoder: Model.from_pretrained(path).forward(input_ids, attention_mask) -> dict of arrays."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import numpy as np

from . import _core
from .hub import resolve_model

_HEAD_OUTPUTS = {
    "masked_lm": ("logits",),
    "pooler": ("pooler_output",),
    "sequence_classification": ("sequence_logits",),
    "token_classification": ("token_logits",),
    "question_answering": ("start_logits", "end_logits"),
}


def _apply_threads(threads: Optional[int]) -> None:
    if threads is not None:
        if int(threads) < 0:
            raise ValueError("threads must be >= 0 (0: all cores)")
        _core.set_num_threads(int(threads))


def _int_array(name: str, value: Any) -> np.ndarray:
    a = np.asarray(value)
    if a.dtype.kind not in "iub" and a.size:
        raise TypeError(f"{name} must hold integers, not {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (batch, length) array, got shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.int64)


class Config(dict):
    """config.json's fields, read as a dict (config["id2label"]) or as attributes (config.id2label,
    as transformers' PretrainedConfig)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"config has no field {name!r}") from None


class Model:
    """A RoBERTa-family encoder (RobertaModel / ForMaskedLM / ForSequenceClassification /
    ForTokenClassification / ForQuestionAnswering checkpoints, data2vec-text, prelayernorm).

        >>> model = Model.from_pretrained("models/demo")
        >>> out = model.forward(np.array([[0, 133, 812, 2]]), output_hidden_states=True)
        >>> out["last_hidden_state"].shape, len(out["hidden_states"])

    Immutable after loading: share one Model between threads.
    """

    def __init__(self, core: _core.Model):
        self._model = core

    @classmethod
    def from_pretrained(cls, path: Union[str, os.PathLike], dtype: str = "float32",
                        threads: Optional[int] = None, revision: Optional[str] = None,
                        cache_dir: Optional[Union[str, os.PathLike]] = None) -> "Model":
        """Loads config.json and model.safetensors (sharded or not; F32/F16/BF16 stored) of a local
        folder. dtype: "float32" (default), "bfloat16" (bf16 matrices, about 3 significant digits)
        or "int8" (dynamic int8 quantization), or "auto" (bfloat16 where the CPU multiplies it
        natively, AVX512-BF16 or AMX; float32 elsewhere: what the command line uses by default).
        threads: set the engine's threads (process-wide). A Hub id ("org/name") is its snapshot in
        the local Hugging Face cache (`revision`, `cache_dir` as transformers' from_pretrained takes
        them; see roberta_cpp.hub)."""
        _apply_threads(threads)
        return cls(_core.Model(resolve_model(path, revision, cache_dir), dtype))

    @property
    def config(self) -> "Config":
        """The config.json fields the engine uses (hidden_size, id2label, pad_token_id, ...), as a
        dict and as attributes (model.config.id2label, as transformers' config reads)."""
        return Config(self._model.config)

    def has_head(self, head: str) -> bool:
        """masked_lm, pooler, sequence_classification, token_classification or question_answering."""
        return self._model.has_head(head)

    @property
    def heads(self) -> list:
        """The heads this checkpoint has."""
        return [h for h in _HEAD_OUTPUTS if self._model.has_head(h)]

    def num_parameters(self) -> int:
        return self._model.parameter_count()

    def forward(
        self,
        input_ids: Any,
        attention_mask: Any = None,
        token_type_ids: Any = None,
        output_hidden_states: bool = False,
        heads: Optional[list] = None,
    ) -> Dict[str, Any]:
        """Runs the model on padded integer ids (B, L).

        Returns a dict of float32 arrays: ``last_hidden_state`` (B, L, H) with zeros at padding;
        ``hidden_states`` (a tuple of num_layers + 1 arrays (B, L, H): the embedding output, then
        each layer's) when output_hidden_states; and the outputs of the model's heads:
        ``logits`` (B, L, vocab), ``pooler_output`` (B, H), ``sequence_logits`` (B, num_labels),
        ``token_logits`` (B, L, num_labels), ``start_logits`` / ``end_logits`` (B, L).
        ``heads`` restricts which heads run (default: all the checkpoint has; [] for none).

        attention_mask may be 0 only where the id is pad_token_id (positions are computed from the
        ids as Hugging Face does); anything else raises ValueError. Padding may be on either side.
        """
        ids = _int_array("input_ids", input_ids)
        mask = None if attention_mask is None else _int_array("attention_mask", attention_mask)
        types = None if token_type_ids is None else _int_array("token_type_ids", token_type_ids)
        wanted = self.heads if heads is None else list(heads)
        for h in wanted:
            if h not in _HEAD_OUTPUTS:
                raise ValueError(f"head {h!r} is not one of {', '.join(_HEAD_OUTPUTS)}")
            if not self._model.has_head(h):
                raise ValueError(f"{self._model.dir}: the checkpoint has no {h} head")
        return self._model.forward(
            ids, mask, types,
            hidden_states=output_hidden_states,
            logits="masked_lm" in wanted,
            pooler="pooler" in wanted,
            sequence_logits="sequence_classification" in wanted,
            token_logits="token_classification" in wanted,
            span_logits="question_answering" in wanted,
        )

    __call__ = forward

    def __repr__(self) -> str:
        c = self.config
        return (f"Model({self._model.dir!r}, layers={c['num_hidden_layers']}, hidden={c['hidden_size']}, "
                f"heads={self.heads})")
