"""Argument checks shared by the package's classes: a wrong value is a TypeError, ValueError or
InvalidInputError naming the argument, never pybind11's "incompatible function arguments"."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from . import _core


def check_texts(texts: List[Any], what: str) -> List[str]:
    """texts, each a str that UTF-8 can encode (no lone surrogates); else TypeError /
    InvalidInputError naming it: what[i] for a list (a name ending in "s"), else what."""
    for i, t in enumerate(texts):
        where = what if len(texts) == 1 and not what.endswith("s") else f"{what}[{i}]"
        if not isinstance(t, str):
            raise TypeError(f"{where} is {type(t).__name__}, not str")
        try:
            t.encode("utf-8")
        except UnicodeEncodeError as e:
            raise _core.InvalidInputError(f"{where} is not valid Unicode: a lone surrogate "
                                          f"{t[e.start]!r} at character {e.start}") from None
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
