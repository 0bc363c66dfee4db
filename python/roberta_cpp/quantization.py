"""quantize_embeddings as sentence-transformers 6 has it (sentence_transformers.util.quantization,
formerly sentence_transformers.quantization): ``from roberta_cpp.quantization import
quantize_embeddings`` replaces either import."""
from __future__ import annotations

import logging
from typing import Any, List, Literal, Optional, Union

import numpy as np

logger = logging.getLogger("roberta_cpp")

Precision = Literal["float32", "int8", "uint8", "binary", "ubinary"]
PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")

__all__ = ["quantize_embeddings"]


def _numpy(a: Any) -> np.ndarray:
    return a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)


def quantize_embeddings(
    embeddings: Any,
    precision: Precision,
    ranges: Optional[np.ndarray] = None,
    calibration_embeddings: Optional[np.ndarray] = None,
) -> Union[np.ndarray, List[np.ndarray]]:
    """Float embeddings (N, D) (numpy, torch, or a list of rows) in a lower precision:

    - "float32": as float32;
    - "uint8" / "int8": each dimension cut into 255 steps between its minimum and maximum, taken
      from ``ranges`` (2, D), else from ``calibration_embeddings``, else from the embeddings
      themselves; values outside the range clip to the first or last bucket, and a dimension whose
      range is a single value gets a step of 1; int8 is the uint8 bucket minus 128;
    - "ubinary": the bits x > 0 packed eight to a byte along each row (D / 8 rounded up columns);
      "binary": the same minus 128, as int8.

    A list of (tokens, D) matrices (multi-vector output) gives a list of quantized matrices that
    share one set of buckets (from all their rows unless ranges or calibration are given).
    """
    if isinstance(embeddings, list):
        if not embeddings:
            return []
        items = [_numpy(e) for e in embeddings]
        if items[0].ndim == 2:
            if precision.endswith("int8") and ranges is None and calibration_embeddings is None:
                calibration_embeddings = np.concatenate(items, axis=0)
            return [quantize_embeddings(m, precision, ranges, calibration_embeddings) for m in items]
        embeddings = np.array(items)
    embeddings = _numpy(embeddings)
    if embeddings.dtype in (np.uint8, np.int8):
        raise ValueError("Embeddings to quantize must be float rather than int8 or uint8.")
    if embeddings.ndim == 2 and embeddings.shape[0] == 0:  # nothing to calibrate or pack
        dim = embeddings.shape[1]
        signed = precision in ("int8", "binary")
        if precision in ("int8", "uint8", "binary", "ubinary"):
            width = dim if precision.endswith("int8") else (dim + 7) // 8
            return np.zeros((0, width), dtype=np.int8 if signed else np.uint8)
    if precision == "float32":
        return embeddings.astype(np.float32)
    if precision in ("int8", "uint8"):
        if ranges is None:
            source = embeddings if calibration_embeddings is None else _numpy(calibration_embeddings)
            if calibration_embeddings is None and embeddings.shape[0] < 100:
                logger.warning("Computing %s quantization buckets based on %d embedding%s. %s quantization is "
                               "more stable with `ranges` calculated from more embeddings or a "
                               "`calibration_embeddings` that can be used to calculate the buckets.",
                               precision, len(embeddings), "" if len(embeddings) == 1 else "s", precision)
            ranges = np.vstack((source.min(axis=0), source.max(axis=0)))
        ranges = _numpy(ranges)
        low = ranges[0, :]
        step = (ranges[1, :] - low) / 255
        step = np.where(step == 0, 1, step)
        buckets = np.clip(np.floor((embeddings - low) / step), 0, 255)
        return buckets.astype(np.uint8) if precision == "uint8" else (buckets - 128).astype(np.int8)
    if precision in ("binary", "ubinary"):
        packed = np.packbits(embeddings > 0, axis=-1).reshape(embeddings.shape[0], -1)
        return packed if precision == "ubinary" else (packed - 128).astype(np.int8)
    raise ValueError(f"Precision {precision!r} is not supported")
