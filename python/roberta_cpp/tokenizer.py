"""The tokenizer: Hugging Face tokenizers' API (encode, encode_batch, decode -> Encoding objects)
and transformers' ``tokenizer(text, ...)`` call returning input_ids / attention_mask."""
from __future__ import annotations

import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from .hub import resolve_model
from ._checks import check_count, check_ids, check_text, check_texts

TextInput = Union[str, Tuple[str, str]]


class CharSpan(NamedTuple):
    """transformers' CharSpan: [start, end) in the original text."""

    start: int
    end: int


class TokenSpan(NamedTuple):
    """transformers' TokenSpan: [start, end) in the tokens."""

    start: int
    end: int


def _batch_and_index(batch_or_index: int, index: Optional[int]) -> Tuple[int, int]:
    """transformers' convention: one number is an index of input 0, two are (input, index)."""
    return (0, batch_or_index) if index is None else (batch_or_index, index)


class BatchEncoding(dict):
    """What ``Tokenizer.__call__`` returns, as transformers' BatchEncoding: a dict of
    ``input_ids``, ``attention_mask`` (and ``token_type_ids``, ``special_tokens_mask``,
    ``offset_mapping``, ``length`` on request), plus the Encoding objects in ``.encodings``."""

    def __init__(self, data: Dict[str, Any], encodings: List[_core.Encoding]):
        super().__init__(data)
        self.encodings = encodings

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def tokens(self, batch_index: int = 0) -> List[str]:
        """The token strings of one input."""
        return self.encodings[batch_index].tokens

    def word_ids(self, batch_index: int = 0) -> List[Optional[int]]:
        """The word of each token of one input (None for special tokens)."""
        return self.encodings[batch_index].word_ids

    def sequence_ids(self, batch_index: int = 0) -> List[Optional[int]]:
        return self.encodings[batch_index].sequence_ids

    @property
    def n_sequences(self) -> Optional[int]:
        """1 for texts, 2 for pairs (None for an empty batch), as transformers' BatchEncoding."""
        return self.encodings[0].n_sequences if self.encodings else None

    # transformers' alignment methods: (batch_index, index) or just (index) for input 0; spans as
    # its CharSpan / TokenSpan named tuples, None where there is none (where transformers'
    # word_to_chars fails on a word that has no tokens). The Encoding's methods take indices as
    # tokenizers' do: a negative one is an OverflowError.

    def token_to_sequence(self, batch_or_token_index: int, token_index: Optional[int] = None) -> Optional[int]:
        b, i = _batch_and_index(batch_or_token_index, token_index)
        return self.encodings[b].token_to_sequence(i)

    def token_to_word(self, batch_or_token_index: int, token_index: Optional[int] = None) -> Optional[int]:
        b, i = _batch_and_index(batch_or_token_index, token_index)
        return self.encodings[b].token_to_word(i)

    def token_to_chars(self, batch_or_token_index: int, token_index: Optional[int] = None) -> Optional[CharSpan]:
        b, i = _batch_and_index(batch_or_token_index, token_index)
        span = self.encodings[b].token_to_chars(i)
        return CharSpan(*span) if span is not None else None

    def word_to_tokens(self, batch_or_word_index: int, word_index: Optional[int] = None,
                       sequence_index: int = 0) -> Optional[TokenSpan]:
        b, i = _batch_and_index(batch_or_word_index, word_index)
        span = self.encodings[b].word_to_tokens(i, sequence_index)
        return TokenSpan(*span) if span is not None else None

    def word_to_chars(self, batch_or_word_index: int, word_index: Optional[int] = None,
                      sequence_index: int = 0) -> Optional[CharSpan]:
        b, i = _batch_and_index(batch_or_word_index, word_index)
        span = self.encodings[b].word_to_chars(i, sequence_index)
        return CharSpan(*span) if span is not None else None

    def char_to_token(self, batch_or_char_index: int, char_index: Optional[int] = None,
                      sequence_index: int = 0) -> Optional[int]:
        b, i = _batch_and_index(batch_or_char_index, char_index)
        return self.encodings[b].char_to_token(i, sequence_index)

    def char_to_word(self, batch_or_char_index: int, char_index: Optional[int] = None,
                     sequence_index: int = 0) -> Optional[int]:
        b, i = _batch_and_index(batch_or_char_index, char_index)
        return self.encodings[b].char_to_word(i, sequence_index)


class Tokenizer(_core.Tokenizer):
    """roberta.cpp's tokenizer (RoBERTa's byte-level BPE, XLM-R's Unigram, or a BERT-style WordPiece,
    cased or not, as some checkpoints ship), with Hugging Face's results (ids, tokens, offsets, pairs, truncation,
    padding, decode).

        >>> tok = Tokenizer.from_pretrained("models/demo")
        >>> e = tok.encode("Hello world!")
        >>> e.ids, e.tokens, e.offsets, e.attention_mask
        >>> tok("Hello world!")            # {'input_ids': [...], 'attention_mask': [...]}
        >>> tok.decode(e.ids)              # 'Hello world!'

    ``encode``/``encode_batch``/``decode`` follow the ``tokenizers`` package (decode skips special
    tokens by default); calling the tokenizer follows transformers' tokenizers.
    """

    @classmethod
    def from_pretrained(cls, path: Union[str, os.PathLike], revision: Optional[str] = None,
                        cache_dir: Optional[Union[str, os.PathLike]] = None) -> "Tokenizer":
        """Loads the tokenizer of a local model folder, or of a Hub id's snapshot in the local
        Hugging Face cache (see roberta_cpp.hub): tokenizer.json, else vocab.json + merges.txt.
        model_max_length comes from tokenizer_config.json, else from config.json."""
        folder = resolve_model(path, revision, cache_dir)
        tok = cls(folder)
        tok._model_max_length = _model_max_length(folder)
        tok.name_or_path = os.fspath(path)
        return tok

    # transformers' names for the special tokens (RoBERTa's <s> is both bos and cls, </s> both eos
    # and sep; BERT's [CLS] and [SEP]) and for id <-> token conversion.
    name_or_path: str = ""
    is_fast = True

    @property
    def bos_token(self) -> Optional[str]:
        return self.id_to_token(self.bos_token_id)

    @property
    def eos_token(self) -> Optional[str]:
        return self.id_to_token(self.eos_token_id)

    @property
    def pad_token(self) -> Optional[str]:
        return self.id_to_token(self.pad_token_id)

    @property
    def mask_token(self) -> Optional[str]:
        return None if self.mask_token_id is None else self.id_to_token(self.mask_token_id)

    @property
    def unk_token(self) -> Optional[str]:
        return None if self.unk_token_id is None else self.id_to_token(self.unk_token_id)

    cls_token = bos_token
    sep_token = eos_token

    @property
    def cls_token_id(self) -> int:
        return self.bos_token_id

    @property
    def sep_token_id(self) -> int:
        return self.eos_token_id

    @property
    def vocab_size(self) -> int:
        return self.get_vocab_size()

    def __len__(self) -> int:
        return self.get_vocab_size()

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> Any:
        """One id gives its token, a list of ids a list of tokens (special ones left out with
        skip_special_tokens), as transformers' tokenizers."""
        if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
            return self.id_to_token(int(ids))
        return [self.id_to_token(int(i)) for i in ids if not (skip_special_tokens and self.is_special(int(i)))]

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        """One token gives its id (the <unk> id when it is not in the vocabulary), a list a list."""
        if isinstance(tokens, str):
            found = self.token_to_id(tokens)
            return found if found is not None else self.unk_token_id
        return [self.convert_tokens_to_ids(t) for t in tokens]

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "Tokenizer":
        """Loads a tokenizer.json file, with its "truncation" and "padding" settings, which encode and
        encode_batch then apply, as the ``tokenizers`` package does."""
        import json

        tok = cls(_core.Tokenizer.from_file(os.fspath(path)))
        with open(os.fspath(path), encoding="utf-8") as f:
            spec = json.load(f)
        where = os.fspath(path)
        trunc, pad = spec.get("truncation"), spec.get("padding")
        try:
            if trunc is not None:
                tok.enable_truncation(int(trunc["max_length"]), int(trunc.get("stride", 0)),
                                      _snake(trunc.get("strategy", "LongestFirst")),
                                      str(trunc.get("direction", "Right")).lower())
            if pad is not None:
                strategy = pad.get("strategy", "BatchLongest")
                length = int(strategy["Fixed"]) if isinstance(strategy, dict) else None
                tok.enable_padding(str(pad.get("direction", "Right")).lower(), int(pad.get("pad_id", tok.pad_token_id)),
                                   int(pad.get("pad_type_id", 0)), str(pad.get("pad_token", tok.pad_token)), length,
                                   pad.get("pad_to_multiple_of"))
        except (KeyError, TypeError, ValueError) as e:
            raise _core.ModelError(f"{where}: truncation / padding: {e}") from None
        return tok

    # The tokenizers package's truncation and padding settings, applied by encode and encode_batch
    # (not by calling the tokenizer, which takes transformers' arguments).
    def enable_truncation(self, max_length: int, stride: int = 0, strategy: str = "longest_first",
                          direction: str = "right") -> None:
        if strategy not in ("longest_first", "only_first", "only_second"):
            raise ValueError(f"strategy {strategy!r}: not one of longest_first, only_first, only_second")
        if direction not in ("left", "right"):
            raise ValueError(f"direction {direction!r}: not left or right")
        self._truncation = {"max_length": check_count(max_length, "max_length"),
                            "stride": check_count(stride, "stride", 0), "strategy": strategy, "direction": direction}

    def no_truncation(self) -> None:
        self._truncation = None

    @property
    def truncation(self) -> Optional[Dict[str, Any]]:
        return dict(self._truncation) if getattr(self, "_truncation", None) else None

    def enable_padding(self, direction: str = "right", pad_id: Optional[int] = None, pad_type_id: int = 0,
                       pad_token: Optional[str] = None, length: Optional[int] = None,
                       pad_to_multiple_of: Optional[int] = None) -> None:
        """As tokenizers' enable_padding; the padding token is always the tokenizer's own (<pad>, or
        [PAD] for a WordPiece tokenizer), which pad_id / pad_token default to."""
        pad_id = self.pad_token_id if pad_id is None else pad_id
        pad_token = self.id_to_token(self.pad_token_id) if pad_token is None else pad_token
        if direction not in ("left", "right"):
            raise ValueError(f"direction {direction!r}: not left or right")
        if pad_id != self.pad_token_id or pad_token != self.id_to_token(self.pad_token_id) or pad_type_id != 0:
            raise ValueError(f"padding with {pad_token!r} (id {pad_id}, type {pad_type_id}): only the tokenizer's "
                             f"{self.id_to_token(self.pad_token_id)!r} (id {self.pad_token_id}, type 0) is supported")
        self._padding = {"length": None if length is None else check_count(length, "length"),
                         "pad_to_multiple_of": None if pad_to_multiple_of is None
                         else check_count(pad_to_multiple_of, "pad_to_multiple_of"),
                         "pad_id": pad_id, "pad_type_id": pad_type_id, "pad_token": pad_token, "direction": direction}

    def no_padding(self) -> None:
        self._padding = None

    @property
    def padding(self) -> Optional[Dict[str, Any]]:
        return dict(self._padding) if getattr(self, "_padding", None) else None

    def _with_truncation(self, kwargs: Dict[str, Any], positional: int) -> Dict[str, Any]:
        t = getattr(self, "_truncation", None)
        if t and positional < 2 and "max_length" not in kwargs:
            kwargs = {**kwargs, "max_length": t["max_length"], "truncation_strategy": t["strategy"],
                      "truncation_side": t["direction"]}
        return kwargs

    def _padded(self, encodings: List[_core.Encoding]) -> List[_core.Encoding]:
        p = getattr(self, "_padding", None)
        if not p or not encodings:
            return encodings
        return self.pad(encodings, p["length"], p["pad_to_multiple_of"], p["direction"])

    # The C++ methods behind argument checks that name the argument (TypeError, InvalidInputError
    # for a lone surrogate, OverflowError for an id tokenizers' u32 cannot hold).
    # tokenizers' signatures: encode(sequence, pair=None, is_pretokenized=False, add_special_tokens=True),
    # encode_batch(input, is_pretokenized=False, add_special_tokens=True); with is_pretokenized a
    # sequence is a list of words, each tokenized on its own (word_ids: the words' indices, offsets
    # into each word). Also max_length / truncation_strategy / truncation_side as keywords.
    def encode(self, sequence: Any, pair: Any = None, is_pretokenized: bool = False, add_special_tokens: bool = True,
               **kwargs: Any) -> _core.Encoding:
        kwargs = self._with_truncation(kwargs, 0)
        if _check_flag(is_pretokenized, "is_pretokenized"):
            words = _check_words(sequence, "sequence")
            e = super().encode_words(words, None if pair is None else _check_words(pair, "pair"), add_special_tokens,
                                     **kwargs)
        else:
            check_text(sequence, "sequence")
            if pair is not None:
                check_text(pair, "pair")
            e = super().encode(sequence, pair, add_special_tokens, **kwargs)
        return self._padded([e])[0]

    def encode_batch(self, inputs: Sequence[Any], is_pretokenized: bool = False, add_special_tokens: bool = True,
                     **kwargs: Any) -> List[_core.Encoding]:
        inputs = list(inputs)
        kwargs = self._with_truncation(kwargs, 0)
        if _check_flag(is_pretokenized, "is_pretokenized"):
            checked = [_words_input(x, f"inputs[{i}]") for i, x in enumerate(inputs)]
            return self._padded(super().encode_words_batch(checked, add_special_tokens, **kwargs))
        _check_inputs(inputs, "inputs")
        return self._padded(super().encode_batch(inputs, add_special_tokens, **kwargs))

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return super().decode(check_ids(ids, "ids"), skip_special_tokens)

    def decode_batch(self, sequences: Any, skip_special_tokens: bool = True) -> List[str]:
        return super().decode_batch([check_ids(s, f"sequences[{i}]") for i, s in enumerate(sequences)],
                                    skip_special_tokens)

    @property
    def model_max_length(self) -> Optional[int]:
        return getattr(self, "_model_max_length", None)

    def __call__(
        self,
        text: Union[str, Sequence[str]],
        text_pair: Union[str, Sequence[str], None] = None,
        add_special_tokens: bool = True,
        padding: Union[bool, str] = False,
        truncation: Union[bool, str, None] = None,
        max_length: Optional[int] = None,
        pad_to_multiple_of: Optional[int] = None,
        return_tensors: Optional[str] = None,
        return_token_type_ids: Optional[bool] = None,
        return_attention_mask: Optional[bool] = None,
        return_special_tokens_mask: bool = False,
        return_offsets_mapping: bool = False,
        return_length: bool = False,
        is_split_into_words: bool = False,
    ) -> BatchEncoding:
        """Tokenizes one text (lists of ints) or a batch (lists of lists), as transformers'
        ``tokenizer(...)``: keys input_ids and attention_mask (RoBERTa's model inputs; a WordPiece
        tokenizer's also token_type_ids, as BertTokenizer's), plus token_type_ids /
        special_tokens_mask / offset_mapping / length when asked.

        padding: False, True or "longest" (to the longest of the batch), "max_length" (to
        max_length). truncation: True / "longest_first" / "only_first" / "only_second" cut to
        max_length (default: the model's maximum when known). return_tensors: None (lists), "np"
        (int64 arrays) or "pt" (torch tensors, if torch is installed). is_split_into_words: text (and
        text_pair) are lists of words, or batches of such lists; each word is tokenized on its own.
        """
        if is_split_into_words:
            return self._call_words(text, text_pair, add_special_tokens, padding, truncation, max_length,
                                    pad_to_multiple_of, return_tensors, return_token_type_ids, return_attention_mask,
                                    return_special_tokens_mask, return_offsets_mapping, return_length)
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if single:
            check_text(text, "text")
        else:
            _check_inputs(texts, "text")  # texts, or (transformers' batch of pairs) (text, pair)s
        if text_pair is not None:
            pairs = [check_text(text_pair, "text_pair")] if isinstance(text_pair, str) else check_texts(
                list(text_pair), "text_pair")
            if len(pairs) != len(texts):
                raise ValueError(f"text_pair has {len(pairs)} entries but text has {len(texts)}")
            inputs: List[TextInput] = [(a, b) for a, b in zip(texts, pairs)]
        else:
            inputs = list(texts)
        strategy, limit = self._call_truncation(truncation, max_length)
        # (checked above; transformers' call ignores the tokenizers-style settings of enable_truncation /
        # enable_padding and the file's, as it does)
        encodings = _core.Tokenizer.encode_batch(self, inputs, add_special_tokens=add_special_tokens, max_length=limit,
                                                 truncation_strategy=strategy)
        return self._batch_encoding(encodings, single, padding, max_length, pad_to_multiple_of, return_tensors,
                                    return_token_type_ids, return_attention_mask, return_special_tokens_mask,
                                    return_offsets_mapping, return_length)

    def _call_truncation(self, truncation: Any, max_length: Optional[int]) -> Tuple[str, Optional[int]]:
        """transformers' truncation argument as (strategy, max_length or None)."""
        strategy = "longest_first"
        limit = None
        if truncation not in (None, False, "do_not_truncate"):
            if isinstance(truncation, str) and truncation != "longest_first":
                strategy = truncation
            limit = max_length if max_length is not None else self.model_max_length
            if limit is None:
                raise ValueError("truncation needs max_length (the tokenizer does not know the model's maximum)")
        return strategy, limit

    def _call_words(self, text: Any, text_pair: Any, add_special_tokens: bool, padding: Any, truncation: Any,
                    max_length: Optional[int], pad_to_multiple_of: Optional[int], return_tensors: Optional[str],
                    return_token_type_ids: Optional[bool], return_attention_mask: Optional[bool],
                    return_special_tokens_mask: bool, return_offsets_mapping: bool,
                    return_length: bool) -> BatchEncoding:
        """__call__ with is_split_into_words=True: as transformers, a list of lists is a batch."""
        if not isinstance(text, (list, tuple)):
            raise TypeError(f"text is {type(text).__name__}; with is_split_into_words=True it must be a list of words "
                            "or a list of such lists")
        batched = bool(text) and isinstance(text[0], (list, tuple))
        texts = list(text) if batched else [text]
        if text_pair is None:
            inputs: List[Any] = texts
        else:
            if batched and not (isinstance(text_pair, (list, tuple)) and all(
                    isinstance(p, (list, tuple)) for p in text_pair)):
                raise TypeError("text_pair: with a batch of word lists, text_pair must be a list of word lists")
            pairs = list(text_pair) if batched else [text_pair]
            if len(pairs) != len(texts):
                raise ValueError(f"text_pair has {len(pairs)} entries but text has {len(texts)}")
            inputs = [(a, b) for a, b in zip(texts, pairs)]
        strategy, limit = self._call_truncation(truncation, max_length)
        checked = [_words_input(x, f"text[{i}]" if batched else "text") for i, x in enumerate(inputs)]
        encodings = _core.Tokenizer.encode_words_batch(self, checked, add_special_tokens=add_special_tokens,
                                                       max_length=limit, truncation_strategy=strategy)
        return self._batch_encoding(encodings, not batched, padding, max_length, pad_to_multiple_of, return_tensors,
                                    return_token_type_ids, return_attention_mask, return_special_tokens_mask,
                                    return_offsets_mapping, return_length)

    def _batch_encoding(self, encodings: List[_core.Encoding], single: bool, padding: Any, max_length: Optional[int],
                        pad_to_multiple_of: Optional[int], return_tensors: Optional[str],
                        return_token_type_ids: Optional[bool], return_attention_mask: Optional[bool],
                        return_special_tokens_mask: bool, return_offsets_mapping: bool,
                        return_length: bool) -> BatchEncoding:
        if padding in (True, "longest", "max_length"):
            length = max_length if padding == "max_length" else None
            if padding == "max_length" and length is None:
                length = self.model_max_length
            encodings = self.pad(encodings, length=length, pad_to_multiple_of=pad_to_multiple_of)
        elif padding not in (False, None, "do_not_pad"):
            raise ValueError(f"padding={padding!r} is not one of False, True, 'longest', 'max_length'")

        data: Dict[str, Any] = {"input_ids": [e.ids for e in encodings]}
        # transformers' model_input_names: RobertaTokenizer's leave token_type_ids out, BertTokenizer's
        # (a WordPiece tokenizer) have them
        if return_token_type_ids or (return_token_type_ids is None and self.is_wordpiece):
            data["token_type_ids"] = [e.type_ids for e in encodings]
        if return_attention_mask is None or return_attention_mask:
            data["attention_mask"] = [e.attention_mask for e in encodings]
        if return_special_tokens_mask:
            data["special_tokens_mask"] = [e.special_tokens_mask for e in encodings]
        if return_offsets_mapping:
            data["offset_mapping"] = [e.offsets for e in encodings]
        if return_length:
            data["length"] = [len(e) for e in encodings]
        if return_tensors is not None:
            data = {k: _as_tensor(k, v, return_tensors) for k, v in data.items()}
        elif single:
            data = {k: v[0] for k, v in data.items()}
        return BatchEncoding(data, encodings)


def _snake(name: str) -> str:
    """tokenizer.json's "LongestFirst" as the Python API's "longest_first"."""
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _check_words(words: Any, what: str) -> List[str]:
    """A pre-tokenized sequence: a list, tuple or 1-D numpy array of str (as tokenizers takes)."""
    if isinstance(words, np.ndarray) and words.ndim == 1:
        words = words.tolist()
    if not isinstance(words, (list, tuple)):
        raise TypeError(f"{what} is {type(words).__name__}; a pre-tokenized sequence is a list of words (str)")
    return check_texts([str(w) if isinstance(w, np.str_) else w for w in words], what)


def _words_input(x: Any, what: str) -> Tuple[List[str], Optional[List[str]]]:
    """One pre-tokenized input of a batch: a list of words, or a pair of them (two lists), as
    tokenizers' PreTokenizedEncodeInput."""
    if isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(p, (list, tuple, np.ndarray)) for p in x):
        return _check_words(x[0], f"{what}[0]"), _check_words(x[1], f"{what}[1]")
    return _check_words(x, what), None


def _check_flag(value: Any, what: str) -> bool:
    """A bool argument (tokenizers' own take bools only): the 3rd positional argument of encode is
    is_pretokenized there, not add_special_tokens, so anything else is a TypeError."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be a bool, not {type(value).__name__}")
    return bool(value)


def _check_inputs(inputs: List[Any], what: str) -> None:
    """Each a text, or a (text, pair) as a tuple, list or numpy row; pairs become tuples in place."""
    for i, x in enumerate(inputs):
        if not isinstance(x, (str, bytes)) and hasattr(x, "__len__") and len(x) == 2:
            inputs[i] = tuple(check_texts([str(t) if isinstance(t, np.str_) else t for t in x], f"{what}[{i}]"))
        else:
            check_text(x, f"{what}[{i}]")


def _model_max_length(folder: str) -> Optional[int]:
    import json

    try:
        with open(os.path.join(folder, "tokenizer_config.json")) as f:
            n = json.load(f).get("model_max_length")
        if isinstance(n, int) and n < 10**9:
            return n
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(folder, "config.json")) as f:
            c = json.load(f)
        return int(c["max_position_embeddings"]) - int(c.get("pad_token_id", 1)) - 1
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _as_tensor(key: str, rows: list, kind: str) -> Any:
    if kind not in ("np", "pt"):
        raise ValueError(f"return_tensors={kind!r} is not one of None, 'np', 'pt'")
    if len({len(r) if not isinstance(r, int) else 0 for r in rows}) > 1:
        raise ValueError(f"{key}: the sequences have different lengths; pass padding=True to make a tensor")
    array = np.asarray(rows, dtype=np.int64)
    if kind == "pt":
        import torch

        return torch.from_numpy(array)
    return array
