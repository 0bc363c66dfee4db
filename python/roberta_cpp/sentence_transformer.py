"""SentenceTransformer: sentence-transformers' encode() on roberta.cpp, for local
sentence-transformers folders (modules.json, 1_Pooling, Dense, Normalize, prompts)."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import warnings
from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, Union

import numpy as np

from . import _core, _similarity
from ._checks import check_count, check_text, check_texts
from ._compat import (check_device, check_devices, check_loading, cpu_device, engine_dtype, renamed,
                      resolve_prompt, warn_once)
from ._pool import check_pool, start_pool, stop_pool
from .hub import resolve_model
from .model import _apply_threads
from .quantization import PRECISIONS, Precision, quantize_embeddings
from .tokenizer import Tokenizer, _model_max_length

logger = logging.getLogger("roberta_cpp")

# roberta_cpp.cos_sim: cosine similarities as a numpy array (sentence_transformers.util.cos_sim,
# which returns a torch tensor, is roberta_cpp.util.cos_sim).
cos_sim = _similarity.cos_sim_numpy


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
        >>> emb.shape                        # (2, model.get_embedding_dimension())
        >>> model.similarity(emb, emb)       # (2, 2) cosine similarities

    The folder's modules run as sentence-transformers runs them: the pooling of 1_Pooling
    (mean/cls/max, include_prompt), Dense modules, Normalize, sentence_bert_config.json's
    max_seq_length and do_lower_case, and the prompts of config_sentence_transformers.json.
    Texts are tokenized as given, as sentence-transformers 5.4 and later do (5.3 and earlier
    stripped whitespace at both ends). dtype: "float32" (default), "bfloat16" or "int8" weights.
    threads: the engine's threads (process-wide; default: all cores). There is no device other
    than the CPU and no training.
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
        processor_kwargs: Optional[Dict[str, Any]] = None,
        dtype: str = "float32",
        threads: Optional[int] = None,
    ):
        """sentence-transformers' arguments (by keyword as in version 6; positionally in the order of
        version 5): a Hub id is looked up in the local Hugging Face cache, at `revision`, in
        `cache_folder` if given, and a bare name gets the "sentence-transformers/" prefix as there;
        the token and remote-code ones have no effect; model_kwargs' torch_dtype / dtype float32 or
        bfloat16 picks the weights' precision; tokenizer_kwargs is the old name of processor_kwargs
        (with its warning). Then ours, by keyword: dtype ("float32", "bfloat16", "int8", "auto") and
        threads."""
        if tokenizer_kwargs is not None:
            kw = {"tokenizer_kwargs": tokenizer_kwargs}
            if processor_kwargs is not None:
                kw["processor_kwargs"] = processor_kwargs
            renamed(kw, "tokenizer_kwargs", "processor_kwargs")
            processor_kwargs = kw["processor_kwargs"]
        if use_auth_token is not None:
            warnings.warn("The `use_auth_token` argument is deprecated and will be removed in a future release of "
                          "SentenceTransformers.", FutureWarning, stacklevel=2)
            if token is not None:
                raise ValueError("Both `token` and `use_auth_token` are specified. Please only specify the `token` "
                                 "argument.")
        if model_name_or_path is None:
            raise ValueError("SentenceTransformer needs model_name_or_path: a local sentence-transformers or "
                             "Hugging Face folder, or a Hub id in the local cache (roberta_cpp downloads nothing)")
        if modules is not None:
            hint = (f" (dtype is a keyword argument here: SentenceTransformer(path, dtype={modules!r}))"
                    if isinstance(modules, str) else "")
            raise ValueError("modules=...: roberta_cpp runs the modules a folder's modules.json lists; pass the "
                             "folder instead" + hint)
        check_device(device)
        dtype = check_loading({"model_kwargs": model_kwargs, "processor_kwargs": processor_kwargs,
                               "config_kwargs": config_kwargs}, backend, engine_dtype(dtype))
        _apply_threads(threads)
        path = resolve_model(_hub_name(os.fspath(model_name_or_path)), revision, cache_folder)
        self._embedder = _core.Embedder(path, dtype)
        self.model_path = path
        # As sentence-transformers 6: "query" and "document" always exist; the caller's prompts come
        # first, the folder's fill only the names not given (an empty prompt given disables a saved
        # one); a name still unset is "".
        merged: Dict[str, Optional[str]] = {"query": None, "document": None}
        merged.update(prompts or {})
        for name, text in self._embedder.prompts.items():
            if merged.get(name) is None:
                merged[name] = text
        self.prompts: Dict[str, str] = {k: ("" if v is None else v) for k, v in merged.items()}
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
    def processor(self) -> Tokenizer:
        """The tokenizer (sentence-transformers 6's name for the first module's preprocessor)."""
        return self._tokenizer

    @property
    def device(self) -> Any:
        """torch.device("cpu") ("cpu" without torch)."""
        return cpu_device()

    @property
    def similarity_fn_name(self) -> str:
        """"cosine", "dot", "euclidean" or "manhattan"; unset (None) reads as cosine, as in sentence-transformers."""
        if self._similarity_fn_name is None:
            self._similarity_fn_name = "cosine"
        return self._similarity_fn_name

    @similarity_fn_name.setter
    def similarity_fn_name(self, value: Optional[str]) -> None:
        value = getattr(value, "value", value)  # sentence_transformers.SimilarityFunction members
        if value is not None and value not in _similarity.NAMES:
            raise ValueError(f"SentenceTransformer only supports similarity_fn_name in {_similarity.NAMES}, got "
                             f"{value!r}.")
        self._similarity_fn_name = value

    def get_embedding_dimension(self) -> int:
        """Floats per embedding: the last Dense module's size, else the hidden size (capped at truncate_dim)."""
        dim = int(self._embedder.dimension)
        return min(dim, self.truncate_dim) if self.truncate_dim is not None else dim

    def get_sentence_embedding_dimension(self) -> int:
        """The old name of get_embedding_dimension (with sentence-transformers' FutureWarning)."""
        warnings.warn("The `get_sentence_embedding_dimension` method has been renamed to `get_embedding_dimension`.",
                      FutureWarning, stacklevel=2)
        return self.get_embedding_dimension()

    def get_max_seq_length(self) -> int:
        return self._max_seq_length

    @contextlib.contextmanager
    def truncate_embeddings(self, truncate_dim: Optional[int]) -> Iterator[None]:
        """Within the block, encode() keeps the first truncate_dim dimensions (None: all)."""
        before = self.truncate_dim
        try:
            self.truncate_dim = truncate_dim
            yield
        finally:
            self.truncate_dim = before

    @contextlib.contextmanager
    def truncate_sentence_embeddings(self, truncate_dim: Optional[int]) -> Iterator[None]:
        """The old name of truncate_embeddings (with sentence-transformers' FutureWarning)."""
        warnings.warn("The `truncate_sentence_embeddings` method has been renamed to `truncate_embeddings`.",
                      FutureWarning, stacklevel=3)
        with self.truncate_embeddings(truncate_dim):
            yield

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
        """(len(a), len(b)) similarities with similarity_fn_name (cosine unless the folder says
        otherwise): a float32 torch tensor, as sentence-transformers returns (numpy without torch)."""
        return _similarity.function(self.similarity_fn_name, False)(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Any:
        """(len(a),) similarities of row i of a with row i of b, with similarity_fn_name (a torch
        tensor; numpy without torch)."""
        return _similarity.function(self.similarity_fn_name, True)(embeddings1, embeddings2)

    # ---- multi-process arguments: see _pool
    def start_multi_process_pool(self, target_devices: Optional[List[Any]] = None) -> Dict[str, Any]:
        """A pool for encode(pool=...): CPUs only; the work runs on the engine's threads here."""
        return start_pool(target_devices)

    @staticmethod
    def stop_multi_process_pool(pool: Dict[str, Any]) -> None:
        stop_pool(pool)

    def encode_multi_process(self, sentences: Sequence[str], pool: Dict[str, Any], prompt_name: Optional[str] = None,
                             prompt: Optional[str] = None, batch_size: int = 32, chunk_size: Optional[int] = None,
                             show_progress_bar: Optional[bool] = None, precision: Precision = "float32",
                             normalize_embeddings: bool = False, truncate_dim: Optional[int] = None) -> np.ndarray:
        """encode(sentences, pool=pool, ...), with sentence-transformers' DeprecationWarning."""
        warnings.warn("The `encode_multi_process` method has been deprecated, and its functionality has been "
                      "integrated into `encode`. You can now call `encode` with the same parameters to achieve "
                      "multi-process encoding.", DeprecationWarning, stacklevel=2)
        return self.encode(sentences, prompt_name=prompt_name, prompt=prompt, batch_size=batch_size,
                           show_progress_bar=show_progress_bar, precision=precision,
                           normalize_embeddings=normalize_embeddings, truncate_dim=truncate_dim, pool=pool,
                           chunk_size=chunk_size)

    # ---- encoding
    def encode(
        self,
        inputs: Any = None,
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

        One string gives a 1-D float32 array (dimension,); a list (or tuple, or numpy array of
        strings) gives (len, dimension); an empty list an empty array of shape (0,). Each text is
        cut at max_seq_length tokens. prompt (a string put before each text) wins over prompt_name
        (a key of self.prompts); neither: default_prompt_name's prompt, if any.
        normalize_embeddings L2-normalises after truncate_dim cuts the dimensions (the folder's own
        Normalize module, if any, runs before). precision "int8"/"uint8"/"binary"/"ubinary"
        quantizes as quantize_embeddings does, with ranges from these embeddings.
        output_value="token_embeddings" gives a list of (tokens, hidden) last hidden states (torch
        tensors, as sentence-transformers gives them; numpy arrays without torch), prompt tokens
        included; output_value=None a dict per text of input_ids, attention_mask (all ones),
        prompt_length (with a prompt), token_embeddings and sentence_embedding (unpadded:
        sentence-transformers pads each batch to its longest text; this runs the model twice).
        convert_to_tensor gives a torch tensor; convert_to_numpy=False a list of 1-D tensors (both
        need torch). sentences is the old name of inputs (with its warning). pool, a list of
        devices and chunk_size are accepted (see start_multi_process_pool); show_progress_bar is
        ignored.
        """
        renamed(kwargs, "sentences", "inputs")
        old_name = kwargs.pop("inputs", None)  # (dropped when inputs is given too, as upstream)
        inputs = old_name if inputs is None else inputs
        if kwargs:
            unused = set(kwargs) - {"task"}
            if unused:
                raise ValueError(f"SentenceTransformer.encode() has been called with additional keyword arguments "
                                 f"that this model does not use: {sorted(unused)}.")
        if inputs is None:
            raise TypeError("encode() missing the inputs to embed")
        check_pool(pool)
        check_devices(device)
        batch_size = check_count(batch_size, "batch_size")
        if precision and precision not in PRECISIONS:
            raise ValueError(f"Precision {precision!r} is not supported, must be one of {PRECISIONS}")
        if output_value not in ("sentence_embedding", "token_embeddings", None):
            raise ValueError(f"output_value={output_value!r} is not supported (sentence_embedding, token_embeddings, "
                             f"None)")
        if isinstance(inputs, np.ndarray) and inputs.ndim >= 1 and inputs.dtype.kind in ("U", "O"):
            inputs = inputs.tolist()
        input_was_string = not isinstance(inputs, (list, tuple))
        texts: List[str] = _as_texts([inputs] if input_was_string else list(inputs), "inputs")
        prompt_text = self._resolve_prompt(prompt_name, prompt)
        max_length = self._max_seq_length
        truncate_dim = truncate_dim if truncate_dim is not None else self.truncate_dim
        if output_value == "token_embeddings":
            if precision and precision != "float32":
                raise ValueError("precision applies to sentence embeddings, not token_embeddings")
            tokens = [_tensor(t) for t in self._embedder.encode_tokens(texts, prompt_text, None, batch_size,
                                                                      max_length, strip=False)]
            return tokens[0] if input_was_string else tokens
        if output_value is None:
            outputs = self._all_outputs(texts, prompt_text, batch_size, truncate_dim)
            return outputs[0] if input_was_string else outputs
        if not texts:  # as sentence-transformers: nothing to stack
            if convert_to_tensor:
                import torch

                return torch.tensor([])
            return np.asarray([]) if convert_to_numpy else []

        emb = self._embedder.encode(texts, prompt_text, None, batch_size, max_length, strip=False)
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
        prepared = self._embedder.prepare(texts, prompt_text, None, max_length, strip=False)
        tokens = self._embedder.encode_tokens(texts, prompt_text, None, batch_size, max_length, strip=False)
        emb = self._embedder.encode(texts, prompt_text, None, batch_size, max_length, strip=False) if texts else None
        if truncate_dim and emb is not None:
            emb = emb[:, :truncate_dim]
        prompt_length = self._prompt_length(prompt_text)
        out = []
        for i, (ids, _) in enumerate(prepared):
            d: Dict[str, Any] = {"input_ids": _tensor(np.asarray(ids, dtype=np.int64)),
                                 "attention_mask": _tensor(np.ones(len(ids), dtype=np.int64))}
            if prompt_length is not None:
                d["prompt_length"] = prompt_length
            d["token_embeddings"] = _tensor(tokens[i])
            d["sentence_embedding"] = _tensor(np.ascontiguousarray(emb[i]))
            out.append(d)
        return out

    def _prompt_length(self, prompt_text: str) -> Optional[int]:
        """sentence-transformers' prompt_length: the tokens of the prompt alone, minus its </s>."""
        if not prompt_text:
            return None
        return len(self._embedder.prepare([""], prompt_text, None, self._max_seq_length, strip=False)[0][0]) - 1

    def preprocess(self, inputs: Sequence[str], prompt: Optional[str] = None, **kwargs: Any) -> Dict[str, Any]:
        """sentence-transformers' preprocess: {"input_ids", "attention_mask"} of shape (len(inputs),
        longest), right-padded with <pad>, prompt + text lower-cased when the folder says so and cut
        at max_seq_length as its Transformer module tokenizes, and "prompt_length" with a prompt;
        torch int64 tensors (numpy without torch). Texts only (pairs and dicts are not supported)."""
        if kwargs:
            raise ValueError(f"preprocess() got keyword arguments roberta_cpp does not use: {sorted(kwargs)}")
        items = list(inputs)
        if any(isinstance(t, (tuple, list, dict)) for t in items):
            raise ValueError("preprocess() takes a list of texts; pairs and dicts are not supported by roberta_cpp")
        if not items:
            return {}
        prompt_text = check_text(prompt, "prompt") if prompt else ""
        prepared = self._embedder.prepare(_as_texts(items, "inputs"), prompt_text, None, self._max_seq_length,
                                          strip=False)
        longest = max(len(ids) for ids, _ in prepared)
        input_ids = np.full((len(prepared), longest), self._tokenizer.pad_token_id, dtype=np.int64)
        attention_mask = np.zeros((len(prepared), longest), dtype=np.int64)
        for i, (ids, _) in enumerate(prepared):
            input_ids[i, :len(ids)] = ids
            attention_mask[i, :len(ids)] = 1
        out: Dict[str, Any] = {"input_ids": _tensor(input_ids), "attention_mask": _tensor(attention_mask)}
        if prompt_text:
            out["prompt_length"] = self._prompt_length(prompt_text)
        return out

    def tokenize(self, texts: Sequence[str], **kwargs: Any) -> Dict[str, Any]:
        """preprocess(texts), with sentence-transformers' deprecation warning."""
        warn_once("The `tokenize` method is deprecated, please use `preprocess` instead.")
        return self.preprocess(texts, **kwargs)

    def encode_query(self, inputs: Any = None, prompt_name: Optional[str] = None, prompt: Optional[str] = None,
                     **kwargs: Any) -> Any:
        """encode() with the "query" prompt (empty unless the folder or the caller set one) when no
        prompt is given."""
        renamed(kwargs, "sentences", "inputs")
        if prompt_name is None and prompt is None and "query" in self.prompts:
            prompt_name = "query"
        return self.encode(inputs, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def encode_document(self, inputs: Any = None, prompt_name: Optional[str] = None, prompt: Optional[str] = None,
                        **kwargs: Any) -> Any:
        """encode() with the "document" prompt (empty unless the folder or the caller set one) when no
        prompt is given."""
        renamed(kwargs, "sentences", "inputs")
        if prompt_name is None and prompt is None and "document" in self.prompts:
            prompt_name = "document"
        return self.encode(inputs, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def encode_late_chunks(self, documents: Any, spans: Any = None, chunk_by: str = "sentences",
                           chunk_tokens: int = 0, overlap: Optional[int] = None, prompt_name: Optional[str] = None,
                           prompt: Optional[str] = None, batch_size: int = 32, max_length: Optional[int] = None,
                           normalize_embeddings: Optional[bool] = None) -> Any:
        """Late chunking: each chunk's vector is the mean of its tokens' states in the whole document.

            >>> d = model.encode_late_chunks("Berlin is a city. It has 3.8 million people.")
            >>> d["chunks"], d["embeddings"].shape     # two sentences, (2, dimension)
            >>> model.encode_late_chunks([["Berlin is a city.", "It has 3.8 million people."]])

        A document is a str, cut by chunk_by ("sentences", or "tokens" with chunk_tokens tokens a
        chunk; sentences with chunk_tokens are packed up to that many tokens) unless spans gives its
        chunks as (start, end) character ranges; or a list of chunk texts, joined by a space (Jina
        AI's late_chunking API). A document longer than max_length (default max_seq_length) tokens is
        read in windows sharing `overlap` tokens. The prompt (prompt, else prompt_name, else the
        default) starts every window. normalize_embeddings: default the folder's Normalize module.
        One str gives one dict, a list a list of dicts: {"spans", "chunks" (their texts),
        "embeddings" (chunks, dimension) float32, "tokens", "windows"}.
        """
        from .late_chunking import encode_late_chunks

        return encode_late_chunks(self._embedder, documents, spans, chunk_by, chunk_tokens, overlap,
                                  self._resolve_prompt(prompt_name, prompt), batch_size,
                                  self._max_seq_length if max_length is None else check_count(max_length, "max_length", 3),
                                  normalize_embeddings)

    def _resolve_prompt(self, prompt_name: Optional[str], prompt: Optional[str]) -> str:
        return resolve_prompt(self.prompts, self.default_prompt_name, prompt_name, prompt)

    def __repr__(self) -> str:
        e = self._embedder
        return (f"SentenceTransformer({self.model_path!r}, max_seq_length={self._max_seq_length}, "
                f"pooling={e.pooling!r}, dimension={self.get_embedding_dimension()}, "
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
