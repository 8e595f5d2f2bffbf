#!/usr/bin/env python3
"""Generates a corpus of malformed ONNX models, one folder per case:

    OUT/<case>/model.onnx
    OUT/<case>/desc.txt          one line: what is wrong
    OUT/<case>/expect.txt        ok | load | check | run | nocrash (see common.py)
    OUT/<case>/inputs.txt        "NAME<TAB>test_data_set_0/input_N.pb" per line, if any
    OUT/<case>/test_data_set_0/  input_N.pb files for `kiln run`

Needs the `onnx` package (to build the models; the corruption is done by
tests/malformed/wire.py). Deterministic for a given --seed.

    python3 tests/malformed/gen_malformed.py --out build/malformed
"""

import argparse
import collections
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases_graph  # noqa: E402
import cases_ops  # noqa: E402
import cases_wire  # noqa: E402
from common import Corpus  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (emptied first)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    c = Corpus(args.out, args.seed)
    for module in (cases_wire, cases_graph, cases_ops):
        module.generate(c)
    counts = collections.Counter()
    for name in c.names:
        with open(os.path.join(args.out, name, "expect.txt")) as f:
            counts[f.read().strip()] += 1
    print("%d cases in %s (%s)" % (len(c.names), args.out,
                                   ", ".join("%s %d" % kv for kv in sorted(counts.items()))))


if __name__ == "__main__":
    main()
