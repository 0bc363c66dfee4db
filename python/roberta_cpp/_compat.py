"""The arguments of sentence-transformers and transformers as those libraries take them: loading
arguments a local folder on the CPU makes moot (hub, cache, device, backend) are accepted, the ones
that would change results and that roberta_cpp cannot honour are errors naming them, never ignored;
renamed arguments move to their new names with the libraries' warnings; prompts resolve as there."""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional

from ._checks import check_text

logger = logging.getLogger("roberta_cpp")

# Keys of model_kwargs / processor_kwargs (formerly tokenizer_kwargs) / config_kwargs that change
# nothing at inference here.
_MOOT_KEYS = {
    "model_kwargs": {"attn_implementation", "low_cpu_mem_usage", "device_map"},
    "processor_kwargs": {"padding_side", "use_fast"},
    "config_kwargs": {"classifier_dropout", "hidden_dropout_prob", "attention_probs_dropout_prob"},
}

# The messages warn_once has logged: as transformers' logger.warning_once, which
# sentence-transformers' deprecation decorators use, each is logged once per process.
_warned: set = set()


def warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logger.warning(message)


def renamed(kwargs: Dict[str, Any], old: str, new: str, message: Optional[str] = None) -> None:
    """sentence-transformers' deprecated_kwargs: kwargs[old] moves to kwargs[new] (dropped when new
    is given too), with its warning (once)."""
    if old in kwargs:
        warn_once(message or f"The `{old}` argument was renamed and is now deprecated. Please use `{new}` instead.")
        value = kwargs.pop(old)
        kwargs.setdefault(new, value)


def resolve_prompt(prompts: Dict[str, str], default_prompt_name: Optional[str], prompt_name: Optional[str],
                   prompt: Optional[str]) -> str:
    """The prompt of a call, as sentence-transformers resolves it: `prompt` wins over `prompt_name`
    (a key of prompts, else a ValueError); neither: the default prompt name's, else none."""
    if prompt is not None:
        check_text(prompt, "prompt")
        if prompt_name is not None:
            logger.warning("Provide either a `prompt`, a `prompt_name`, or neither, but not both. "
                           "Ignoring the `prompt_name` in favor of `prompt`.")
        return prompt
    if prompt_name is not None:
        if prompt_name not in prompts:
            raise ValueError(f"Prompt name '{prompt_name}' not found in the configured prompts dictionary with "
                             f"keys {list(prompts.keys())!r}.")
        return prompts[prompt_name]
    if default_prompt_name is not None:
        return prompts.get(default_prompt_name) or ""
    return ""


def cpu_device() -> Any:
    """torch.device("cpu") as sentence-transformers' `device` gives it; "cpu" without torch."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return torch.device("cpu")


def check_devices(device: Any) -> Any:
    """A device, or a list of them (sentence-transformers' multi-process form), each checked with
    check_device; returns device."""
    for d in (device if isinstance(device, list) else [device]):
        check_device(d)
    return device


def check_device(device: Any, what: str = "device") -> None:
    """None, "cpu", "cpu:N", -1 (transformers' CPU) or a torch.device of type "cpu"; anything else is
    a ValueError: roberta_cpp runs on the CPU."""
    if device is None or (isinstance(device, int) and not isinstance(device, bool) and device == -1):
        return
    kind = getattr(device, "type", device)  # torch.device("cpu").type == "cpu"
    if isinstance(kind, str) and kind.split(":")[0] == "cpu":
        return
    raise ValueError(f"{what}={device!r}: roberta_cpp runs on the CPU only")


def dtype_name(value: Any, what: str) -> Optional[str]:
    """A torch dtype or its name as roberta_cpp's dtype: float32 -> "float32", bfloat16 ->
    "bfloat16"; "auto" and None -> None (keep the default). float16 and others are ValueErrors."""
    if value is None:
        return None
    name = str(value)
    name = name[len("torch."):] if name.startswith("torch.") else name
    if name in ("float32", "float"):
        return "float32"
    if name == "bfloat16":
        return "bfloat16"
    if name == "auto":
        return None
    raise ValueError(f"{what}={value!r} is not supported: roberta_cpp runs float32, bfloat16 or int8 weights "
                     f"(not float16)")


def engine_dtype(value: Any, what: str = "dtype") -> str:
    """roberta_cpp's dtype names as they are ("float32", "fp32", "bfloat16", "bf16", "int8", "auto":
    bf16 where the CPU multiplies it natively), else a torch dtype (dtype_name; torch's "auto"
    keeps float32)."""
    if isinstance(value, str) and value in ("float32", "fp32", "bfloat16", "bf16", "int8", "auto"):
        return value
    return dtype_name(value, what) or "float32"


def check_loading(kwargs_by_name: Dict[str, Optional[Dict[str, Any]]], backend: str = "torch",
                  dtype: str = "float32") -> str:
    """model_kwargs / tokenizer_kwargs / config_kwargs (None or dicts) and backend, as
    sentence-transformers takes them; returns the dtype to load (model_kwargs' torch_dtype / dtype
    when given). Keys that would change results are a ValueError naming them."""
    if backend not in ("torch", "onnx", "openvino"):
        raise ValueError(f"Unsupported backend '{backend}'. `backend` should be `torch`, `onnx`, or `openvino`.")
    for name, value in kwargs_by_name.items():
        if value is None:
            continue
        if not isinstance(value, dict):
            raise TypeError(f"{name} must be a dict, not {type(value).__name__}")
        accepted = _MOOT_KEYS[name] | ({"torch_dtype", "dtype"} if name == "model_kwargs" else set())
        keys = set(value) - accepted
        if keys:
            raise ValueError(f"{name} keys {sorted(keys)} are not supported by roberta_cpp (it accepts "
                             f"{sorted(accepted)})")
        if name == "model_kwargs":
            if value.get("device_map") not in (None, "auto"):
                check_device(value["device_map"], "model_kwargs['device_map']")
            for key in ("torch_dtype", "dtype"):
                chosen = dtype_name(value.get(key), f"model_kwargs[{key!r}]")
                if chosen is not None:
                    dtype = chosen
    return dtype
