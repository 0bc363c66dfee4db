"""sentence-transformers' multi-process arguments (start_multi_process_pool, encode(pool=...),
encode(device=[...]), chunk_size), mapped onto roberta.cpp's threads: the engine already runs every
batch on all the cores it is given (set_num_threads), so a "pool" is a record of the devices asked
for, checked to be CPUs, and the work runs in this process. Results equal single-process ones."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ._compat import check_device


def start_pool(target_devices: Optional[List[Any]] = None) -> Dict[str, Any]:
    """A pool as sentence-transformers' start_multi_process_pool returns one ({"input", "output",
    "processes"}); target_devices: CPUs only (default: 4 x "cpu", as there without a GPU)."""
    devices = ["cpu"] * 4 if target_devices is None else list(target_devices)
    if not devices:
        raise ValueError("target_devices is empty")
    for d in devices:
        check_device(d, "target_devices")
    return {"input": None, "output": None, "processes": [], "devices": devices, "roberta_cpp": True}


def stop_pool(pool: Dict[str, Any]) -> None:
    check_pool(pool)
    pool["processes"] = []


def check_pool(pool: Any) -> None:
    """None, or a pool made by start_multi_process_pool."""
    if pool is None:
        return
    if not isinstance(pool, dict) or not pool.get("roberta_cpp"):
        raise ValueError("pool must come from this model's start_multi_process_pool() (roberta_cpp encodes on "
                         "threads in this process)")
