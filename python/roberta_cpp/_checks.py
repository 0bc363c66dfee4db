"""Argument checks shared by the package's classes: a wrong value is a TypeError, ValueError,
OverflowError or InvalidInputError naming the argument, never pybind11's "incompatible function
arguments"."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from . import _core


def check_text(text: Any, what: str) -> str:
    """text, a str that UTF-8 can encode (no lone surrogates); else TypeError / InvalidInputError
    naming it as `what`."""
    if not isinstance(text, str):
        raise TypeError(f"{what} is {type(text).__name__}, not str")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _core.InvalidInputError(f"{what} is not valid Unicode: a lone surrogate {text[e.start]!r} at "
                                      f"character {e.start}") from None
    return text


def check_texts(texts: List[Any], what: str) -> List[str]:
    """Every item checked as check_text, named what[i]."""
    for i, t in enumerate(texts):
        check_text(t, f"{what}[{i}]")
    return texts


def check_count(value: Any, what: str, minimum: int = 1) -> int:
    """value as an int >= minimum (bools refused); else TypeError / ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{what} must be at least {minimum}, got {value}")
    return int(value)


def check_batch_size(batch_size: Any) -> Optional[int]:
    return None if batch_size is None else check_count(batch_size, "batch_size")


def check_ids(ids: Any, what: str) -> List[int]:
    """Token ids for decoding, as tokenizers takes them (u32): an int below 0 or from 2^32 is an
    OverflowError, as there; ids from 2^31, which no vocabulary has, are left out (tokenizers skips
    unknown ids)."""
    if hasattr(ids, "tolist"):  # numpy arrays, torch tensors
        ids = ids.tolist()
    elif not isinstance(ids, list):
        ids = list(ids)
    try:  # the common case at C speed: ints only, all in range
        if set(map(type, ids)) <= {int} and (not ids or (min(ids) >= 0 and max(ids) < 2**31)):
            return ids
    except TypeError:
        pass
    out = []
    for i, x in enumerate(ids):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"{what}[{i}] is {type(x).__name__}, not int")
        if x < 0 or x >= 2**32:
            raise OverflowError(f"{what}[{i}] = {x} is not a token id (0 to 2^32 - 1)")
        if x < 2**31:
            out.append(int(x))
    return out
