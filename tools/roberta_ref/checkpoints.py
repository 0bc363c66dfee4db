"""Writing a state dict into a Hugging Face model folder, in the layouts real checkpoints use.

    from roberta_ref.checkpoints import save_weights
    save_weights(out_dir, sd)                                # model.safetensors
    save_weights(out_dir, sd, shards=3)                      # model-0000k-of-00003.safetensors + index
    save_weights(out_dir, sd, weight_format="bin-legacy")    # pytorch_model.bin, pre-1.6 pickle

config.json and the tokenizer files are the caller's business.
"""
import json
import os

import torch

from roberta_ref.safetensors_io import write_safetensors

WEIGHT_FORMATS = ["safetensors", "bin-zip", "bin-legacy"]


def save_weights(out_dir, sd, weight_format="safetensors", shards=1):
    """Writes `sd` (name -> tensor, in order) into out_dir: model.safetensors; or, with shards > 1,
    that many model-0000k-of-0000n.safetensors files of consecutive tensors (ceil(n / shards) each)
    and model.safetensors.index.json; or pytorch_model.bin (bin-zip: torch >= 1.6 zip format,
    bin-legacy: the older pickle format). Safetensors files carry the metadata {"format": "pt"}."""
    if weight_format != "safetensors":
        torch.save(sd, os.path.join(out_dir, "pytorch_model.bin"),
                   _use_new_zipfile_serialization=weight_format == "bin-zip")
    elif shards <= 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), sd, metadata={"format": "pt"})
    else:
        names = list(sd)
        per = (len(names) + shards - 1) // shards
        weight_map, total = {}, 0
        for s in range(shards):
            part = names[s * per:(s + 1) * per]
            fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            write_safetensors(os.path.join(out_dir, fname), {k: sd[k] for k in part}, metadata={"format": "pt"})
            for k in part:
                weight_map[k] = fname
                total += sd[k].numel() * sd[k].element_size()
        with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
