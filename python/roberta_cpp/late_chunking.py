"""Late chunking (SentenceTransformer.encode_late_chunks): each chunk of a document embedded in the
context of the whole document (Jina AI's method; docs/late-chunking.md)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ._checks import check_count, check_text


def _document(doc: Any, i: int) -> Tuple[str, Optional[List[Tuple[int, int]]]]:
    """A str, or a list of chunk texts (Jina AI's API: joined by a space, each its own chunk)."""
    if isinstance(doc, str):
        return check_text(doc, f"documents[{i}]"), None
    if not isinstance(doc, (list, tuple)):
        raise TypeError(f"documents[{i}] is {type(doc).__name__}: a str, or a list of chunk texts")
    text, spans = "", []
    for j, chunk in enumerate(doc):
        check_text(chunk, f"documents[{i}][{j}]")
        if not chunk.strip():
            raise ValueError(f"documents[{i}][{j}] is empty or white space: every chunk needs text")
        if j:
            text += " "
        spans.append((len(text), len(text) + len(chunk)))
        text += chunk
    return text, spans


def _spans(spans: Any, n: int, single: bool) -> List[Optional[List[Tuple[int, int]]]]:
    """One list of (start, end) pairs or None per document; single: spans is the one document's list
    (and named so: spans[j], not spans[0][j])."""
    if spans is None:
        return [None] * n
    if single:
        spans = [spans]
    elif not isinstance(spans, (list, tuple)) or len(spans) != n:
        raise ValueError(f"spans must hold one list of (start, end) pairs (or None) per document: {n}")
    out: List[Optional[List[Tuple[int, int]]]] = []
    for i, lst in enumerate(spans):
        name = "spans" if single else f"spans[{i}]"
        if lst is None:
            out.append(None)
            continue
        if not isinstance(lst, (list, tuple)):
            raise TypeError(f"{name} is {type(lst).__name__}: a list of (start, end) pairs")
        pairs = []
        for j, p in enumerate(lst):
            if not isinstance(p, (list, tuple)) or len(p) != 2:
                raise TypeError(f"{name}[{j}] must be a (start, end) pair")
            pairs.append((check_count(p[0], f"{name}[{j}][0]", 0), check_count(p[1], f"{name}[{j}][1]", 0)))
        out.append(pairs)
    return out


def encode_late_chunks(embedder: Any, documents: Any, spans: Any, chunk_by: str, chunk_tokens: int,
                       overlap: Optional[int], prompt: str, batch_size: int, max_length: int,
                       normalize: Optional[bool]) -> Any:
    """SentenceTransformer.encode_late_chunks' work (see there)."""
    single = isinstance(documents, str)
    try:
        docs = [documents] if single else list(documents)
    except TypeError:
        raise TypeError(f"documents is {type(documents).__name__}: a str, or a list of documents") from None
    texts, given = [], _spans(spans, len(docs), single)
    for i, d in enumerate(docs):
        text, from_list = _document(d, i)
        if from_list is not None:
            if given[i] is not None:
                raise ValueError(f"documents[{i}] is a list of chunks: it takes no spans")
            given[i] = from_list
        texts.append(text)
    if chunk_by not in ("sentences", "tokens"):
        raise ValueError(f"chunk_by must be 'sentences' or 'tokens', not {chunk_by!r}")
    chunk_tokens = check_count(chunk_tokens, "chunk_tokens", 0)
    if chunk_by == "tokens" and not chunk_tokens:
        raise ValueError("chunk_by='tokens' needs chunk_tokens")
    if overlap is not None:
        overlap = check_count(overlap, "overlap", 0)
    # prompt: the resolved one, "" for none (None would let the folder's default_prompt_name in again)
    rows = embedder.late_chunks(texts, given, chunk_by, chunk_tokens, overlap, prompt, None,
                                check_count(batch_size, "batch_size"), max_length, normalize)
    out: List[Dict[str, Any]] = []
    for text, (sp, emb, tokens, windows) in zip(texts, rows):
        out.append({"spans": sp, "chunks": [text[a:b] for a, b in sp], "embeddings": emb, "tokens": tokens,
                    "windows": windows})
    return out[0] if single else out
