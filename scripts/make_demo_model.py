#!/usr/bin/env python3
"""Writes the small demo model used by `make demo`, in the ONNX test-case layout:

    OUT/model.onnx
    OUT/test_data_set_0/input_0.pb, output_0.pb

A little CNN on 1x3x32x32 images: Conv+Relu+MaxPool, twice, then Flatten, Gemm,
Relu, Gemm and Softmax over 10 classes. Random weights (fixed seed); the
expected output is PyTorch's. Needs torch only (the .pb files are written by
scripts/tensorproto.py).

    python3 scripts/make_demo_model.py --out build/demo
"""

import argparse
import io
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorproto  # noqa: E402


class TinyCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10),
            nn.Softmax(dim=1))

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (the test case)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    model = TinyCnn().eval()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(args.seed + 1))
    with torch.no_grad():
        y = model(x)
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), buf, opset_version=17, do_constant_folding=True,
                              input_names=["image"], output_names=["probs"])
    data = os.path.join(args.out, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(args.out, "model.onnx"), "wb") as f:
        f.write(buf.getvalue())
    tensorproto.write_tensor(os.path.join(data, "input_0.pb"), x.numpy(), "image")
    tensorproto.write_tensor(os.path.join(data, "output_0.pb"), y.numpy(), "probs")
    print("wrote %s (%d bytes)" % (os.path.join(args.out, "model.onnx"), len(buf.getvalue())))


if __name__ == "__main__":
    main()
