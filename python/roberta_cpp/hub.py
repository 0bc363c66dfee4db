"""Models named by Hugging Face Hub id ("org/name"), found in the local Hugging Face cache.

roberta_cpp downloads nothing: an id resolves to its snapshot folder in the cache that
huggingface_hub fills (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub), at the
commit its `revision` names (a branch or tag through the cache's refs/, or a commit hash; "main"
by default; "org/name@revision" also names one). A folder that exists is used as it is.

    >>> resolve_model("FacebookAI/roberta-base")  # doctest: +SKIP
    '/root/.cache/huggingface/hub/models--FacebookAI--roberta-base/snapshots/e2da8e2f...'
"""
from __future__ import annotations

import os
from typing import Optional, Union

from . import _core


def resolve_model(name_or_path: Union[str, bytes, os.PathLike], revision: Optional[str] = None,
                  cache_folder: Optional[Union[str, os.PathLike]] = None) -> Union[str, bytes]:
    """The folder `name_or_path` names: itself when it exists, else the Hub id's snapshot folder in
    the cache (`cache_folder`, sentence-transformers' name for huggingface_hub's cache_dir).
    NotFoundError (a FileNotFoundError) when the id is not in the cache, naming what was looked for."""
    name = os.fspath(name_or_path)
    if isinstance(name, bytes) or os.path.exists(name):  # a path (a Hub id is text)
        return name
    return _core.resolve_model(name, revision or "", os.fspath(cache_folder) if cache_folder is not None else "")
