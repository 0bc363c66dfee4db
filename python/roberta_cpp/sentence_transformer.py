"""SentenceTransformer: sentence-transformers' encode() on roberta.cpp, for local
sentence-transformers folders (modules.json, 1_Pooling, Dense, Normalize, prompts)."""
from __future__ import annotations

import json
import logging
import os
from typing import Any, Dict, List, Literal, Optional, Sequence, Union

import numpy as np

from . import _core
from ._checks import check_count, check_text, check_texts
from ._compat import check_device, check_loading, engine_dtype
from .hub import resolve_model
from .model import _apply_threads
from .tokenizer import Tokenizer, _model_max_length

logger = logging.getLogger("roberta_cpp")

Precision = Literal["float32", "int8", "uint8", "binary", "ubinary"]
_PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")


def quantize_embeddings(
    embeddings: np.ndarray,
    precision: Precision,
    ranges: Optional[np.ndarray] = None,
    calibration_embeddings: Optional[np.ndarray] = None,
) -> np.ndarray:
    """Quantizes float embeddings (N, D) as sentence_transformers.quantization.quantize_embeddings:

    - "float32": unchanged (as float32);
    - "uint8" / "int8": each dimension cut into 255 steps between its minimum and maximum, taken
      from ``ranges`` (2, D), else from ``calibration_embeddings``, else from the embeddings
      themselves; int8 is the uint8 bucket minus 128;
    - "ubinary": bits x > 0 packed with np.packbits over the flattened array, then one row per
      embedding (uint8, D / 8 columns); "binary": the same minus 128 as int8.
    """
    if isinstance(embeddings, list) and embeddings and hasattr(embeddings[0], "detach"):  # torch tensors
        embeddings = np.stack([e.detach().cpu().numpy() for e in embeddings])
    elif hasattr(embeddings, "detach"):
        embeddings = embeddings.detach().cpu().numpy()
    embeddings = np.asarray(embeddings)
    if embeddings.dtype in (np.uint8, np.int8):
        raise ValueError("Embeddings to quantize must be float rather than int8 or uint8.")
    if precision == "float32":
        return embeddings.astype(np.float32)
    if precision in ("int8", "uint8"):
        if ranges is None:
            source = embeddings if calibration_embeddings is None else np.asarray(calibration_embeddings)
            if calibration_embeddings is None and embeddings.shape[0] < 100:
                logger.warning("Computing %s quantization buckets based on %d embedding%s. %s quantization is "
                               "more stable with `ranges` calculated from more embeddings or a "
                               "`calibration_embeddings` that can be used to calculate the buckets.",
                               precision, len(embeddings), "" if len(embeddings) == 1 else "s", precision)
            ranges = np.vstack((source.min(axis=0), source.max(axis=0)))
        low = ranges[0, :]
        step = (ranges[1, :] - low) / 255
        buckets = (embeddings - low) / step
        if precision == "uint8":
            return buckets.astype(np.uint8)
        return (buckets - 128).astype(np.int8)
    if precision in ("binary", "ubinary"):
        packed = np.packbits(embeddings > 0).reshape(embeddings.shape[0], -1)
        return packed if precision == "ubinary" else (packed - 128).astype(np.int8)
    raise ValueError(f"Precision {precision!r} is not supported")


def _as_matrix(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    a = np.asarray(x, dtype=np.float32)
    return a[None, :] if a.ndim == 1 else a


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


def cos_sim(a: Any, b: Any) -> np.ndarray:
    """Cosine similarity of every row of a with every row of b: (len(a), len(b)) float32, as
    sentence_transformers.util.cos_sim (which returns a torch tensor; this returns numpy)."""
    return _unit_rows(_as_matrix(a)) @ _unit_rows(_as_matrix(b)).T


def _dot(a: Any, b: Any) -> np.ndarray:
    return _as_matrix(a) @ _as_matrix(b).T


def _euclidean(a: Any, b: Any) -> np.ndarray:
    a, b = _as_matrix(a), _as_matrix(b)
    return -np.sqrt(np.maximum(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1), 0)).astype(np.float32)


def _manhattan(a: Any, b: Any) -> np.ndarray:
    a, b = _as_matrix(a), _as_matrix(b)
    return -np.abs(a[:, None, :] - b[None, :, :]).sum(-1).astype(np.float32)


_SIMILARITY = {"cosine": cos_sim, "dot": _dot, "euclidean": _euclidean, "manhattan": _manhattan}


def _pairs(a: Any, b: Any) -> tuple:
    """Rows of a and b, broadcast against each other as torch broadcasts (a, b) in sentence-transformers'
    pairwise functions: (N, D) with (1, D) compares every row with the one."""
    a, b = _as_matrix(a), _as_matrix(b)
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


# sentence_transformers.util's pairwise_cos_sim, pairwise_dot_score, pairwise_euclidean_sim,
# pairwise_manhattan_sim (row i of a with row i of b), in numpy.
_SIMILARITY_PAIRWISE = {"cosine": _pairwise_cos, "dot": _pairwise_dot, "euclidean": _pairwise_euclidean,
                        "manhattan": _pairwise_manhattan}



# The names sentence-transformers loads without its "sentence-transformers/" prefix (models of no
# organization on the Hub); of its list, the RoBERTa-family ones.
_UNPREFIXED = {"camembert-base", "distilroberta-base", "roberta-base", "roberta-base-openai-detector",
               "roberta-large", "roberta-large-mnli", "roberta-large-openai-detector", "xlm-roberta-base",
               "xlm-roberta-large", "xlm-roberta-large-finetuned-conll02-dutch",
               "xlm-roberta-large-finetuned-conll02-spanish", "xlm-roberta-large-finetuned-conll03-english",
               "xlm-roberta-large-finetuned-conll03-german"}


def _hub_name(name: str) -> str:
    """As sentence-transformers names a model that is not a path: a bare name is one of its own."""
    if os.path.exists(name) or "/" in name or "\\" in name or name.split("@")[0].lower() in _UNPREFIXED:
        return name
    return "sentence-transformers/" + name

class SentenceTransformer:
    """sentence-transformers' SentenceTransformer for a local folder, on roberta.cpp.

        >>> model = SentenceTransformer("path/to/folder")
        >>> emb = model.encode(["The weather is lovely today.", "It is sunny outside."])
        >>> emb.shape                        # (2, model.get_sentence_embedding_dimension())
        >>> model.similarity(emb, emb)       # (2, 2) cosine similarities

    The folder's modules run as sentence-transformers runs them: the pooling of 1_Pooling
    (mean/cls/max, include_prompt), Dense modules, Normalize, sentence_bert_config.json's
    max_seq_length and do_lower_case, and the prompts of config_sentence_transformers.json.
    dtype: "float32" (default), "bfloat16" or "int8" weights. threads: the engine's threads
    (process-wide; default: all cores). Differences from sentence-transformers: similarity()
    returns numpy arrays; there is no device other than the CPU and no training.
    """

    def __init__(
        self,
        model_name_or_path: Union[str, os.PathLike, None] = None,
        modules: Any = None,
        device: Any = None,
        prompts: Optional[Dict[str, str]] = None,
        default_prompt_name: Optional[str] = None,
        similarity_fn_name: Optional[str] = None,
        cache_folder: Optional[str] = None,
        trust_remote_code: bool = False,
        revision: Optional[str] = None,
        local_files_only: bool = False,
        token: Any = None,
        use_auth_token: Any = None,
        truncate_dim: Optional[int] = None,
        model_kwargs: Optional[Dict[str, Any]] = None,
        tokenizer_kwargs: Optional[Dict[str, Any]] = None,
        config_kwargs: Optional[Dict[str, Any]] = None,
        model_card_data: Any = None,
        backend: str = "torch",
        *,
        dtype: str = "float32",
        threads: Optional[int] = None,
    ):
        """sentence-transformers' arguments in its order (a Hub id is looked up in the local Hugging
        Face cache, at `revision`, in `cache_folder` if given, and a bare name gets the
        "sentence-transformers/" prefix as there; the token and remote-code ones have no effect;
        model_kwargs' torch_dtype / dtype float32 or bfloat16 picks the weights' precision), then
        ours, by keyword: dtype ("float32", "bfloat16", "int8", "auto") and threads."""
        if model_name_or_path is None:
            raise ValueError("SentenceTransformer needs model_name_or_path: a local sentence-transformers or "
                             "Hugging Face folder, or a Hub id in the local cache (roberta_cpp downloads nothing)")
        if modules is not None:
            hint = (f" (dtype is a keyword argument here: SentenceTransformer(path, dtype={modules!r}))"
                    if isinstance(modules, str) else "")
            raise ValueError("modules=...: roberta_cpp runs the modules a folder's modules.json lists; pass the "
                             "folder instead" + hint)
        check_device(device)
        dtype = check_loading({"model_kwargs": model_kwargs, "tokenizer_kwargs": tokenizer_kwargs,
                               "config_kwargs": config_kwargs}, backend, engine_dtype(dtype))
        _apply_threads(threads)
        path = resolve_model(_hub_name(os.fspath(model_name_or_path)), revision, cache_folder)
        self._embedder = _core.Embedder(path, dtype)
        self.model_path = path
        # As sentence-transformers 5: "query" and "document" always exist (empty unless set), the
        # given prompts come next, and the folder's fill only the names still empty.
        self.prompts: Dict[str, str] = {"query": "", "document": ""}
        if prompts:
            self.prompts.update(prompts)
        for name, text in self._embedder.prompts.items():
            if not self.prompts.get(name):
                self.prompts[name] = text
        self.default_prompt_name: Optional[str] = default_prompt_name or self._embedder.default_prompt_name
        if self.default_prompt_name is not None and self.default_prompt_name not in self.prompts:
            raise ValueError(f"Default prompt name '{self.default_prompt_name}' not found in the configured prompts "
                             f"dictionary with keys {list(self.prompts.keys())!r}.")
        self.truncate_dim = truncate_dim
        self._max_seq_length = int(self._embedder.max_seq_length)
        self._similarity_fn_name: Optional[str] = None
        self.similarity_fn_name = similarity_fn_name if similarity_fn_name is not None else _folder_similarity(path)
        self._tokenizer = Tokenizer(self._embedder.tokenizer)
        self._tokenizer._model_max_length = _model_max_length(path)
        self._tokenizer.name_or_path = path

    # ---- properties of sentence-transformers' SentenceTransformer
    @property
    def max_seq_length(self) -> int:
        """Tokens per text (including <s> and </s>); longer texts are truncated."""
        return self._max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        value = int(value)
        if value < 3:
            raise ValueError("max_seq_length must be at least 3")
        self._max_seq_length = min(value, int(self._embedder.model_max_length))

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def similarity_fn_name(self) -> str:
        """"cosine", "dot", "euclidean" or "manhattan"; unset (None) reads as cosine, as in sentence-transformers."""
        if self._similarity_fn_name is None:
            self._similarity_fn_name = "cosine"
        return self._similarity_fn_name

    @similarity_fn_name.setter
    def similarity_fn_name(self, value: Optional[str]) -> None:
        value = getattr(value, "value", value)  # sentence_transformers.SimilarityFunction members
        if value is not None and value not in _SIMILARITY:
            raise ValueError(f"similarity_fn_name {value!r} is not one of {list(_SIMILARITY)}")
        self._similarity_fn_name = value

    def get_sentence_embedding_dimension(self) -> int:
        """Floats per embedding: the last Dense module's size, else the hidden size (capped at truncate_dim)."""
        dim = int(self._embedder.dimension)
        return min(dim, self.truncate_dim) if self.truncate_dim is not None else dim

    def get_max_seq_length(self) -> int:
        return self._max_seq_length

    def similarity(self, embeddings1: Any, embeddings2: Any) -> np.ndarray:
        """(len(a), len(b)) similarities with similarity_fn_name (cosine unless the folder says otherwise)."""
        return _SIMILARITY[self.similarity_fn_name](embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> np.ndarray:
        """(len(a),) similarities of row i of a with row i of b, with similarity_fn_name."""
        return _SIMILARITY_PAIRWISE[self.similarity_fn_name](embeddings1, embeddings2)

    # ---- encoding
    def encode(
        self,
        sentences: Union[str, Sequence[str]],
        prompt_name: Optional[str] = None,
        prompt: Optional[str] = None,
        batch_size: int = 32,
        show_progress_bar: Optional[bool] = None,
        output_value: Optional[Literal["sentence_embedding", "token_embeddings"]] = "sentence_embedding",
        precision: Precision = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: Any = None,
        normalize_embeddings: bool = False,
        truncate_dim: Optional[int] = None,
        pool: Any = None,
        chunk_size: Optional[int] = None,
        **kwargs: Any,
    ) -> Any:
        """Sentence embeddings, as sentence-transformers' encode.

        One string gives a 1-D float32 array (dimension,); a list gives (len, dimension); an empty
        list gives an empty array of shape (0,). Each text is stripped of whitespace at both ends
        (with its prompt) and cut at max_seq_length tokens, as sentence-transformers tokenizes it.
        prompt (a string put before each text) wins over prompt_name (a key of self.prompts);
        neither: default_prompt_name's prompt, if any.
        normalize_embeddings L2-normalises after truncate_dim cuts the dimensions (the folder's own
        Normalize module, if any, runs before). precision "int8"/"uint8"/"binary"/"ubinary"
        quantizes as quantize_embeddings does, with ranges from these embeddings.
        output_value="token_embeddings" gives a list of (tokens, hidden) last hidden states (torch
        tensors, as sentence-transformers gives them; numpy arrays without torch), prompt tokens
        included; output_value=None a dict per text of input_ids, attention_mask, prompt_length
        (with a prompt), token_embeddings and sentence_embedding (unpadded: sentence-transformers
        pads each batch to its longest text; this runs the model twice). convert_to_tensor gives a
        torch tensor; convert_to_numpy=False a list of 1-D tensors (both need torch).
        show_progress_bar and chunk_size are accepted and ignored; pool must be None (the engine
        runs on threads in this process).
        """
        if kwargs:
            unused = set(kwargs) - {"task"}
            if unused:
                raise ValueError(f"SentenceTransformer.encode() has been called with additional keyword arguments "
                                 f"that this model does not use: {sorted(unused)}.")
        if pool is not None:
            raise ValueError("pool=...: roberta_cpp encodes on threads in this process (set_num_threads), not in a "
                             "multi-process pool")
        check_device(device)
        if precision and precision not in _PRECISIONS:
            raise ValueError(f"Precision {precision!r} is not supported")
        if output_value not in ("sentence_embedding", "token_embeddings", None):
            raise ValueError(f"output_value={output_value!r} is not supported (sentence_embedding, token_embeddings, "
                             f"None)")
        input_was_string = isinstance(sentences, str) or not hasattr(sentences, "__len__")
        texts: List[str] = _as_texts([sentences] if input_was_string else list(sentences), "sentences")
        batch_size = check_count(batch_size, "batch_size")
        prompt_text = self._resolve_prompt(prompt_name, prompt)
        max_length = self._max_seq_length
        truncate_dim = truncate_dim if truncate_dim is not None else self.truncate_dim
        if output_value == "token_embeddings":
            if precision and precision != "float32":
                raise ValueError("precision applies to sentence embeddings, not token_embeddings")
            tokens = [_tensor(t) for t in self._embedder.encode_tokens(texts, prompt_text, None, batch_size,
                                                                      max_length)]
            return tokens[0] if input_was_string else tokens
        if output_value is None:
            outputs = self._all_outputs(texts, prompt_text, batch_size, truncate_dim)
            return outputs[0] if input_was_string else outputs
        if not texts:  # as sentence-transformers: nothing to stack
            if convert_to_tensor:
                import torch

                return torch.tensor([])
            return np.asarray([]) if convert_to_numpy else []

        emb = self._embedder.encode(texts, prompt_text, None, batch_size, max_length)
        if truncate_dim:
            emb = emb[:, :truncate_dim]
        if normalize_embeddings:
            emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        if precision and precision != "float32":
            emb = quantize_embeddings(emb, precision)
        if convert_to_tensor or not convert_to_numpy:
            import torch

            t = torch.from_numpy(np.ascontiguousarray(emb))
            if convert_to_tensor:
                return t[0] if input_was_string else t
            rows = list(t)
            return rows[0] if input_was_string else rows
        return emb[0] if input_was_string else emb

    def _all_outputs(self, texts: List[str], prompt_text: str, batch_size: int,
                     truncate_dim: Optional[int]) -> List[Dict[str, Any]]:
        """encode(output_value=None): every output of the modules, per text."""
        max_length = self._max_seq_length
        prepared = self._embedder.prepare(texts, prompt_text, None, max_length)
        tokens = self._embedder.encode_tokens(texts, prompt_text, None, batch_size, max_length)
        emb = self._embedder.encode(texts, prompt_text, None, batch_size, max_length) if texts else None
        if truncate_dim and emb is not None:
            emb = emb[:, :truncate_dim]
        # sentence-transformers' prompt_length: the tokens of the prompt alone (stripped as every
        # text), minus its </s>; its Pooling zeroes those positions of attention_mask in place
        # when it leaves the prompt out.
        prompt_length = len(self._embedder.prepare([""], prompt_text, None, max_length)[0][0]) - 1 \
            if prompt_text else None
        out = []
        for i, (ids, _) in enumerate(prepared):
            mask = np.ones(len(ids), dtype=np.int64)
            if prompt_length is not None and not self._embedder.include_prompt:
                mask[:prompt_length] = 0
            d: Dict[str, Any] = {"input_ids": _tensor(np.asarray(ids, dtype=np.int64)), "attention_mask": _tensor(mask)}
            if prompt_length is not None:
                d["prompt_length"] = prompt_length
            d["token_embeddings"] = _tensor(tokens[i])
            d["sentence_embedding"] = _tensor(np.ascontiguousarray(emb[i]))
            out.append(d)
        return out

    def tokenize(self, texts: Sequence[str], **kwargs: Any) -> Dict[str, Any]:
        """sentence-transformers' tokenize: {"input_ids", "attention_mask"} of shape (len(texts),
        longest), right-padded with <pad>, each text stripped, lower-cased when the folder says so
        and cut at max_seq_length as its Transformer module tokenizes; torch int64 tensors (numpy
        without torch). Texts only (pairs and dicts are not supported)."""
        items = list(texts)
        if any(isinstance(t, (tuple, list, dict)) for t in items):
            raise ValueError("tokenize() takes a list of texts; pairs and dicts are not supported by roberta_cpp")
        prepared = self._embedder.prepare(_as_texts(items, "texts"), "", None, self._max_seq_length)
        longest = max((len(ids) for ids, _ in prepared), default=0)
        input_ids = np.full((len(prepared), longest), self._tokenizer.pad_token_id, dtype=np.int64)
        attention_mask = np.zeros((len(prepared), longest), dtype=np.int64)
        for i, (ids, _) in enumerate(prepared):
            input_ids[i, :len(ids)] = ids
            attention_mask[i, :len(ids)] = 1
        return {"input_ids": _tensor(input_ids), "attention_mask": _tensor(attention_mask)}

    def encode_query(self, sentences: Union[str, Sequence[str]], prompt_name: Optional[str] = None,
                     prompt: Optional[str] = None, **kwargs: Any) -> Any:
        """encode() with the "query" prompt (empty unless the folder or the caller set one) when no
        prompt is given."""
        if prompt_name is None and prompt is None and "query" in self.prompts:
            prompt_name = "query"
        return self.encode(sentences, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def encode_document(self, sentences: Union[str, Sequence[str]], prompt_name: Optional[str] = None,
                        prompt: Optional[str] = None, **kwargs: Any) -> Any:
        """encode() with the "document" prompt (empty unless the folder or the caller set one) when no
        prompt is given."""
        if prompt_name is None and prompt is None and "document" in self.prompts:
            prompt_name = "document"
        return self.encode(sentences, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def _resolve_prompt(self, prompt_name: Optional[str], prompt: Optional[str]) -> str:
        if prompt is not None:
            check_text(prompt, "prompt")
            if prompt_name is not None:
                logger.warning("Encode with either a `prompt`, a `prompt_name`, or neither, but not both. "
                               "Ignoring the `prompt_name` in favor of `prompt`.")
            return prompt
        if prompt_name is not None:
            if prompt_name not in self.prompts:
                raise ValueError(f"Prompt name '{prompt_name}' not found in the configured prompts dictionary with "
                                 f"keys {list(self.prompts.keys())!r}.")
            return self.prompts[prompt_name]
        if self.default_prompt_name is not None:
            return self.prompts.get(self.default_prompt_name, "")
        return ""

    def __repr__(self) -> str:
        e = self._embedder
        return (f"SentenceTransformer({self.model_path!r}, max_seq_length={self._max_seq_length}, "
                f"pooling={e.pooling!r}, dimension={self.get_sentence_embedding_dimension()}, "
                f"normalize={e.normalize})")


def _as_texts(items: List[Any], what: str) -> List[str]:
    """Texts only: pairs and dicts, which sentence-transformers routes elsewhere, and other objects,
    which it takes as str(item) or refuses depending on how its batches sort, are TypeErrors."""
    for i, t in enumerate(items):
        if isinstance(t, (tuple, list, dict)):
            raise TypeError(f"{what}[{i}] is {type(t).__name__}: roberta_cpp embeds texts (not pairs or dicts)")
    return check_texts(items, what)


def _tensor(a: np.ndarray) -> Any:
    """a as a torch tensor (sharing its memory), as sentence-transformers returns them; a itself
    without torch."""
    try:
        import torch
    except ImportError:
        return a
    return torch.from_numpy(a)


def _folder_similarity(path: str) -> Optional[str]:
    if not os.path.exists(os.path.join(path, "modules.json")):
        return None  # sentence-transformers reads config_sentence_transformers.json only with modules.json
    try:
        with open(os.path.join(path, "config_sentence_transformers.json")) as f:
            name = json.load(f).get("similarity_fn_name")
        return name if isinstance(name, str) else None
    except (OSError, ValueError):
        return None
