#!/usr/bin/python3
"""Convert a pytorch_model.bin checkpoint into model.safetensors without changing a value.

Usage: /usr/bin/python3 tools/convert_checkpoint.py MODEL_DIR [--out FILE] [--force]

Reads MODEL_DIR/pytorch_model.bin, in the zip format of torch >= 1.6 or the legacy pre-1.6
pickle format (the original roberta-base upload), and writes MODEL_DIR/model.safetensors (or
--out). Every tensor keeps its dtype and values; tensors that share storage (tied weights) are
written once under each of their names. Non-tensor entries are skipped with a note. An existing
output file is never overwritten without --force. Exit status: 0 done, 1 error, 2 usage error.
A bge-m3 folder's heads, colbert_linear.pt and sparse_linear.pt (torch.nn.Linear state dicts),
are converted the same way into colbert_linear.safetensors and sparse_linear.safetensors; a folder
that has them but already holds model.safetensors gets only those.
"""
import argparse
import os
import sys

import torch

from roberta_ref.safetensors_io import DTYPE_NAMES, write_safetensors


M3_HEADS = ("colbert_linear", "sparse_linear")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--out")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    src = os.path.join(args.model_dir, "pytorch_model.bin")
    heads = [h for h in M3_HEADS if os.path.isfile(os.path.join(args.model_dir, h + ".pt"))]
    if heads and (not os.path.isfile(src) or os.path.exists(os.path.join(args.model_dir, "model.safetensors"))):
        jobs = []
    else:
        jobs = [(src, args.out or os.path.join(args.model_dir, "model.safetensors"))]
    jobs += [(os.path.join(args.model_dir, h + ".pt"), os.path.join(args.model_dir, h + ".safetensors")) for h in heads]
    for src, dst in jobs:
        status = convert(src, dst, args.force)
        if status:
            return status
    return 0


def convert(src, dst, force):
    if not os.path.isfile(src):
        print(f"error: {src}: not found", file=sys.stderr)
        return 1
    if os.path.exists(dst) and not force:
        print(f"error: {dst}: already exists (use --force to overwrite)", file=sys.stderr)
        return 1
    try:
        try:
            state = torch.load(src, map_location="cpu", weights_only=True)
        except TypeError:  # torch < 1.13 has no weights_only
            state = torch.load(src, map_location="cpu")
    except Exception as e:  # a corrupt or foreign file: say which and why
        print(f"error: {src}: cannot be read as a PyTorch checkpoint: {e}", file=sys.stderr)
        return 1
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        print(f"error: {src}: holds a {type(state).__name__}, not a state dict", file=sys.stderr)
        return 1
    tensors = {}
    for name, value in state.items():
        if not isinstance(value, torch.Tensor):
            print(f"note: skipping non-tensor entry {name!r} ({type(value).__name__})", file=sys.stderr)
            continue
        if value.dtype not in DTYPE_NAMES:
            print(f"error: {src}: tensor {name!r} has unsupported dtype {value.dtype}", file=sys.stderr)
            return 1
        tensors[name] = value.detach().contiguous().clone()  # a copy per name: tied tensors written twice
    write_safetensors(dst, tensors, metadata={"format": "pt", "converted_from": os.path.basename(src)},
                      overwrite=force)
    print(f"wrote {dst}: {len(tensors)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
