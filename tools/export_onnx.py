#!/usr/bin/python3
"""Export a Hugging Face RoBERTa folder to ONNX (last hidden state) for speed comparisons.

Usage: /usr/bin/python3 tools/export_onnx.py --model DIR --out model.onnx

The graph is tools/dump_reference.py's forward pass (input_ids, attention_mask -> last hidden
state), traced by torch.onnx.export with opset 14 and dynamic batch and sequence axes.
"""
import argparse
import json
import os

import torch

from roberta_ref.reference import Weights, forward
from roberta_ref.safetensors_io import load_hf_state_dict


class Encoder(torch.nn.Module):
    def __init__(self, model_dir):
        super().__init__()
        self.cfg = json.load(open(os.path.join(model_dir, "config.json")))
        self.w = Weights(load_hf_state_dict(model_dir))

    def forward(self, input_ids, attention_mask):
        return forward(self.cfg, self.w, input_ids, attention_mask, heads=False)["last_hidden_state"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    model = Encoder(args.model).eval()
    ids = torch.randint(4, 1000, (2, 16))
    mask = torch.ones_like(ids)
    torch.onnx.export(model, (ids, mask), args.out, opset_version=14, input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                                    "last_hidden_state": {0: "batch", 1: "sequence"}})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
