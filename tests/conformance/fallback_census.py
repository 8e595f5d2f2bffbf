#!/usr/bin/env python3
"""Fallback census: which nodes of the ONNX node suite are not lowered to tile kernels.

For every case folder (model.onnx + test_data_set_0/input_K.pb) runs
`kiln run MODEL --backend tile --report` with the case's inputs (symbolic dims take the
extents of the inputs, as the CLI does) and collects the program's fallback steps. Prints
the totals grouped by op and by op + reason, most common first.

usage: fallback_census.py KILN NODE_DIR [--jobs N] [--timeout S] [--json FILE] [--filter S]
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys

import onnx

FALLBACK = re.compile(r"^\s*\d+: fallback (.*?): (.*)$")


def case_inputs(case):
    """NAME=FILE arguments for the case's graph inputs (in order, initializers excluded)."""
    model = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    args = []
    for k, name in enumerate(names):
        path = os.path.join(case, "test_data_set_0", "input_%d.pb" % k)
        if not os.path.exists(path):
            return None
        args += ["--input", "%s=%s" % (name, path)]
    return args


def op_of(label):
    """The op type of a node label ('name (Op)', 'Op' or 'name: Op')."""
    m = re.search(r"\(([A-Za-z0-9_]+)\)\s*$", label)
    if m:
        return m.group(1)
    return label.split(":")[-1].strip().split()[0] if label.strip() else "?"


def census_one(kiln, case, timeout):
    name = os.path.basename(case.rstrip("/"))
    try:
        args = case_inputs(case)
    except Exception as e:  # noqa: BLE001 - an unreadable model is one line of the census
        return name, "error", [("?", "model not readable: %s" % e)]
    if args is None:
        return name, "skipped", []
    cmd = [kiln, "run", os.path.join(case, "model.onnx"), "--backend", "tile", "--report"] + args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return name, "timeout", []
    fbs = []
    for line in p.stdout.splitlines():
        m = FALLBACK.match(line)
        if m:
            fbs.append((op_of(m.group(1)), m.group(2).strip()))
    status = "ok" if p.returncode == 0 else "error"
    return name, status, fbs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kiln")
    ap.add_argument("node_dir")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--json")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    a = ap.parse_args()
    cases = sorted(
        os.path.join(a.node_dir, d)
        for d in os.listdir(a.node_dir)
        if a.filter in d and os.path.exists(os.path.join(a.node_dir, d, "model.onnx"))
    )
    results = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for r in ex.map(lambda c: census_one(a.kiln, c, a.timeout), cases):
            results.append(r)
    by_op = collections.Counter()
    by_reason = collections.Counter()
    cases_with = collections.defaultdict(set)
    status = collections.Counter()
    for name, st, fbs in results:
        status[st] += 1
        for op, reason in fbs:
            by_op[op] += 1
            # numbers in reasons (shapes, ids) would split one reason into many
            by_reason[(op, re.sub(r"\d+", "N", reason))] += 1
            cases_with[op].add(name)
    total = sum(by_op.values())
    with_fb = sum(1 for _, _, f in results if f)
    print("cases: %d (%s)" % (len(results), ", ".join("%s %d" % kv for kv in sorted(status.items()))))
    print("fallback nodes: %d in %d cases" % (total, with_fb))
    print("\nby op (nodes, cases):")
    for op, n in by_op.most_common():
        print("  %-28s %4d %4d" % (op, n, len(cases_with[op])))
    print("\nby op and reason:")
    for (op, reason), n in by_reason.most_common():
        print("  %4d  %s: %s" % (n, op, reason))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{"case": n, "status": s, "fallbacks": f} for n, s, f in results], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
