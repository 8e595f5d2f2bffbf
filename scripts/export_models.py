#!/usr/bin/env python3
"""Exports reference models to ONNX in the ONNX backend test-case layout.

    OUT/<name>/model.onnx
    OUT/<name>/test_data_set_0/input_0.pb, output_0.pb

Weights are random (fixed seed; no download), inputs are random normal (fixed
seed), and the expected outputs are PyTorch's. Run with a python that has torch
and torchvision (e.g. Debian's python3-torch); the `onnx` package is not needed:
the .pb tensors are written by scripts/tensorproto.py.

    python3 scripts/export_models.py --out build/models
    python3 scripts/export_models.py --out DIR --models resnet18,bert_tiny --seed 1
"""

import argparse
import io
import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorproto  # noqa: E402

OPSET = 17  # torch 1.13 exports up to 17; LayerNorm becomes LayerNormalization


class BertTiny(torch.nn.Module):
    """A small BERT-style encoder: token + position embedding, a post-norm
    TransformerEncoder, and a linear head on the first token."""

    def __init__(self, vocab=100, seq=16, d_model=64, heads=4, layers=2, classes=8):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d_model)
        self.pos = torch.nn.Parameter(torch.randn(1, seq, d_model) * 0.02)
        self.norm = torch.nn.LayerNorm(d_model)
        layer = torch.nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=4 * d_model, dropout=0.0, activation="gelu",
            batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d_model, classes)

    def forward(self, ids):
        x = self.norm(self.tok(ids) + self.pos)
        x = self.encoder(x)
        return self.head(torch.tanh(x[:, 0]))


def build_cnn(name):
    import torchvision.models as tvm

    ctor = {
        "resnet18": tvm.resnet18,
        "resnet50": tvm.resnet50,
        "mobilenet_v2": tvm.mobilenet_v2,
        "squeezenet1_1": tvm.squeezenet1_1,
    }[name]
    return ctor(weights=None)


def randomize_batchnorm(model, gen):
    """Fresh BatchNorm statistics are mean 0 / var 1, which makes BN an identity
    and hides folding bugs; give them random, realistic values."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
    # Trained residual networks keep their residual branches small; with random weights the
    # activations of ResNet-50 would otherwise grow to ~1e2 by the last stage.
    from torchvision.models.resnet import BasicBlock, Bottleneck

    for m in model.modules():
        if isinstance(m, (BasicBlock, Bottleneck)):
            last_bn = m.bn3 if isinstance(m, Bottleneck) else m.bn2
            with torch.no_grad():
                last_bn.weight.mul_(0.2)


def make_case(name, seed):
    """Returns (model, input tensor, input name)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    if name == "bert_tiny":
        model = BertTiny()
        x = torch.randint(0, 100, (2, 16), generator=gen, dtype=torch.int64)
        return model.eval(), x, "input_ids"
    model = build_cnn(name)
    randomize_batchnorm(model, gen)
    x = torch.randn(1, 3, 224, 224, generator=gen)
    return model.eval(), x, "input"


MODELS = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "bert_tiny"]


def export(name, seed, out_dir):
    model, x, input_name = make_case(name, seed)
    # Grad mode stays on: under no_grad torch 1.13 routes TransformerEncoderLayer to a fused
    # fast path (aten::_transformer_encoder_layer_fwd) that has no ONNX export.
    y = model(x).detach()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buf, opset_version=OPSET, do_constant_folding=True,
                          input_names=[input_name], output_names=["output"])
    case = os.path.join(out_dir, name)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(case, "model.onnx"), "wb") as f:
        f.write(buf.getvalue())
    tensorproto.write_tensor(os.path.join(data, "input_0.pb"), x.numpy(), input_name)
    tensorproto.write_tensor(os.path.join(data, "output_0.pb"), y.numpy(), "output")
    return len(buf.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error("unknown model(s): " + ", ".join(unknown))
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    torch.use_deterministic_algorithms(True)
    for name in names:
        t = time.time()
        size = export(name, args.seed, args.out)
        print("%-14s %8.1f MB  %5.1f s" % (name, size / 1e6, time.time() - t), flush=True)


if __name__ == "__main__":
    main()
