"""Embed the lines of large inputs on a Dask cluster, resumably.

    python3 -m roberta_cpp.dask_embed --model DIR --scheduler local:N --out OUT INPUT...
    python3 -m roberta_cpp.dask_embed --model DIR --scheduler tcp://HOST:8786 --out OUT INPUT...

The input lines (all INPUT files in order, one text per line, as `roberta embed` reads them) are
cut into partitions of --partition-lines lines. Each partition becomes OUT/part-00000.npy,
part-00001.npy, ... (float32, one row per line), so that the concatenation of the parts in name
order is the embeddings of all lines in input order; OUT/_SUCCESS is written when every part is
done. Each part is written to a temporary name and renamed, so a part file is always complete; a
rerun with the same inputs, model and partitioning skips the parts that exist (resume after a
worker or the whole run died). OUT/_manifest.json records what the parts are of, and a rerun
with different inputs or settings is refused.

Each Dask worker process loads the model once (on its first partition) and runs one partition at
a time on its share of the cores: the engine's threads per worker are the host's cores divided by
the workers on that host (and by the worker's Dask threads), unless --threads-per-worker says
otherwise, so workers do not oversubscribe the machine. local:N starts N worker processes on this
machine (one Dask thread each).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import uuid
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

MANIFEST = "_manifest.json"
SUCCESS = "_SUCCESS"

# The model each worker process loaded, by (model dir, dtype, threads): loaded once per process.
_LOADED: Dict[Tuple[str, str, int], object] = {}


def read_lines(paths: Sequence[str]) -> List[str]:
    """The lines of the files in order, split at \\n with a trailing \\r removed (as `roberta embed`)."""
    lines: List[str] = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SystemExit(f"error: {path}: not valid UTF-8 at byte {e.start}")
        parts = text.split("\n")
        if parts and parts[-1] == "":
            parts.pop()
        lines.extend(p[:-1] if p.endswith("\r") else p for p in parts)
    return lines


def part_name(index: int) -> str:
    return f"part-{index:05d}.npy"


def embed_partition(model_dir: str, dtype: str, threads: int, batch_size: int, lines: List[str],
                    out_path: str) -> Tuple[str, int]:
    """Runs on a worker: embeds `lines` and writes them atomically to out_path."""
    from . import SentenceTransformer, set_num_threads

    key = (model_dir, dtype, threads)
    model = _LOADED.get(key)
    if model is None:
        set_num_threads(threads)
        model = _LOADED[key] = SentenceTransformer(model_dir, dtype=dtype)
    emb = model.encode(lines, batch_size=batch_size) if lines else np.zeros(
        (0, model.get_sentence_embedding_dimension()), np.float32)
    tmp = f"{out_path}.tmp-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as f:
            np.save(f, np.ascontiguousarray(emb, dtype=np.float32))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out_path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return out_path, len(lines)


def _part_is_complete(path: str, rows: int) -> bool:
    try:
        a = np.load(path, mmap_mode="r")
        return a.ndim == 2 and a.shape[0] == rows and a.dtype == np.float32
    except (OSError, ValueError):
        return False


def _check_manifest(out: str, manifest: dict) -> None:
    path = os.path.join(out, MANIFEST)
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if old != manifest:
            diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
            raise SystemExit(f"error: {out} holds parts of another run (different {', '.join(diff)}); "
                             "use another --out folder or remove it")
        return
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
    os.replace(tmp, path)


def _threads_per_worker(client, requested: Optional[int]) -> int:
    """The cores of a host divided by the Dask threads of the workers on it (the least over hosts)."""
    if requested:
        return requested
    workers = client.scheduler_info()["workers"]
    cores = client.run(lambda: len(os.sched_getaffinity(0)))
    per_host: Dict[str, int] = {}
    host_cores: Dict[str, int] = {}
    for addr, info in workers.items():
        per_host[info["host"]] = per_host.get(info["host"], 0) + int(info.get("nthreads", 1))
        host_cores[info["host"]] = int(cores.get(addr, os.cpu_count() or 1))
    return max(1, min(host_cores[h] // n for h, n in per_host.items())) if per_host else 1


def _log(msg: str) -> None:
    print(f"dask_embed: {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from dask.distributed import Client, LocalCluster, as_completed

    # By module name, not __main__, so that workers unpickle it from the installed package.
    from roberta_cpp.dask_embed import embed_partition

    model_dir = os.path.abspath(args.model)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    lines = read_lines(args.inputs)
    n = args.partition_lines
    partitions = [(i, lines[s:s + n]) for i, s in enumerate(range(0, len(lines), n))]
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    _check_manifest(out, {"model": model_dir, "dtype": args.dtype, "lines": len(lines), "partition_lines": n,
                          "parts": len(partitions), "input_sha256": digest})
    for name in os.listdir(out):  # temporaries of parts a killed run was writing
        if name.startswith("part-") and ".npy.tmp-" in name:
            os.remove(os.path.join(out, name))
    todo = [(i, part) for i, part in partitions
            if not _part_is_complete(os.path.join(out, part_name(i)), len(part))]
    _log(f"{len(lines)} lines in {len(partitions)} parts; {len(partitions) - len(todo)} already done, "
         f"{len(todo)} to run")

    cluster = None
    if args.scheduler.startswith("local:"):
        workers = int(args.scheduler.split(":", 1)[1])
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(args.scheduler)
    try:
        if todo:
            threads = _threads_per_worker(client, args.threads_per_worker)
            pids = client.run(os.getpid)
            for addr, pid in sorted(pids.items()):
                _log(f"worker {addr} pid {pid} threads {threads}")
            futures = [client.submit(embed_partition, model_dir, args.dtype, threads, args.batch_size, part,
                                     os.path.join(out, part_name(i)), key=f"roberta-embed-{digest[:12]}-{i}",
                                     pure=False, retries=args.retries)
                       for i, part in todo]
            done = 0
            start = time.monotonic()
            for future in as_completed(futures):
                path, rows = future.result()
                done += 1
                _log(f"wrote {os.path.basename(path)} ({rows} rows) [{done}/{len(todo)}, "
                     f"{time.monotonic() - start:.1f} s]")
        missing = [part_name(i) for i, part in partitions
                   if not _part_is_complete(os.path.join(out, part_name(i)), len(part))]
        if missing:
            _log(f"error: parts missing after the run: {', '.join(missing[:5])}")
            return 1
        with open(os.path.join(out, SUCCESS + ".tmp"), "w") as f:
            json.dump({"lines": len(lines), "parts": len(partitions)}, f)
        os.replace(os.path.join(out, SUCCESS + ".tmp"), os.path.join(out, SUCCESS))
        _log(f"done: {len(partitions)} parts in {out}")
        return 0
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def load_parts(out: str) -> np.ndarray:
    """The embeddings of a finished run: its parts concatenated in name order."""
    if not os.path.exists(os.path.join(out, SUCCESS)):
        raise FileNotFoundError(f"{out}: no {SUCCESS}; the run has not finished")
    names = sorted(n for n in os.listdir(out) if n.startswith("part-") and n.endswith(".npy"))
    return np.concatenate([np.load(os.path.join(out, n)) for n in names]) if names else np.zeros((0, 0), np.float32)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m roberta_cpp.dask_embed", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a sentence-transformers (or Hugging Face) model folder")
    p.add_argument("--scheduler", required=True, help="local:N (N worker processes here) or tcp://HOST:PORT")
    p.add_argument("--out", required=True, help="output folder for part-NNNNN.npy, _manifest.json, _SUCCESS")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="text files, one input per line")
    p.add_argument("--partition-lines", type=int, default=10000, help="lines per part (default 10000)")
    p.add_argument("--batch-size", type=int, default=32, help="texts per forward pass (default 32)")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "int8", "auto"])
    p.add_argument("--threads-per-worker", type=int, default=None,
                   help="engine threads per worker (default: the host's cores / its workers' Dask threads)")
    p.add_argument("--retries", type=int, default=1, help="times Dask retries a failed part (default 1)")
    args = p.parse_args(argv)
    if args.partition_lines < 1:
        p.error("--partition-lines must be at least 1")
    if not (args.scheduler.startswith("local:") or "://" in args.scheduler):
        p.error("--scheduler must be local:N or tcp://HOST:PORT")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
