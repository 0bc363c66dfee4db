"""Read and write safetensors files with torch only (no `safetensors` package).

A file is: 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}
(padded with spaces to a multiple of 8), then the raw little-endian tensor data.
load_hf_state_dict reads a Hugging Face folder: model.safetensors or the shards of its index.
"""
import json
import os
import struct

import torch

DTYPE_NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
               torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
               torch.bool: "BOOL"}
NAME_DTYPES = {v: k for k, v in DTYPE_NAMES.items()}


def write_safetensors(path, tensors, metadata=None, overwrite=False):
    """Writes `tensors` (name -> tensor) in the given order. Refuses to overwrite unless asked."""
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} exists (refusing to overwrite)")
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        # bytes in little-endian order, whatever the dtype (bf16 has no numpy type: view as int16)
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in blobs:
            f.write(raw)
    os.replace(tmp, path)


def read_safetensors(path):
    """Returns name -> tensor for one file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    base = 8 + n
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        dtype = NAME_DTYPES[info["dtype"]]
        raw = bytearray(data[base + b:base + e])
        if dtype == torch.bfloat16:
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16) if raw else torch.empty(0, dtype=dtype)
        else:
            t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def load_hf_state_dict(model_dir):
    """The state dict of a Hugging Face folder: model.safetensors or its sharded index."""
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        sd = {}
        for s in shards:
            sd.update(read_safetensors(os.path.join(model_dir, s)))
        return sd
    raise FileNotFoundError(f"{model_dir}: no model.safetensors or model.safetensors.index.json")
