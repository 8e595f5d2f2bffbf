#!/usr/bin/env python3
"""Rewrites tests/conformance/<suite>.<backend>.expect from a run of the suite.

The list holds the cases that fail on the backend but not on the reference interpreter
(whose list, <suite>.expect, ctest passes too), each with the error it fails with.
Review the diff before committing: a new failure is a bug to fix, not a line to add.

  tests/conformance/update_expect.py --kiln build-x/kiln --data DATA --suite node --backend tile
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--data", required=True, help="onnx/backend/test/data folder")
    ap.add_argument("--suite", default="node")
    ap.add_argument("--backend", required=True)
    ap.add_argument("--jobs", default="2")
    args = ap.parse_args()
    base = os.path.join(HERE, args.suite + ".expect")
    out = os.path.join(HERE, "%s.%s.expect" % (args.suite, args.backend))
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, "r.json")
        cmd = [args.kiln, "test-onnx", os.path.join(args.data, args.suite), "--quiet",
               "--backend", args.backend, "--jobs", args.jobs, "--json", js, "--expect", base]
        subprocess.run(cmd, stdout=subprocess.DEVNULL)
        results = json.load(open(js))
    lines = []
    for r in results:
        if r["status"] != "fail":
            continue
        reason = " ".join(r["message"].split()).replace("#", "no.")
        lines.append("%s fail %s" % (r["name"], reason[:200]))
    with open(out, "w") as f:
        f.write("# ONNX %s cases that fail with `kiln test-onnx --backend %s` and pass on the\n"
                "# reference interpreter (%s.expect lists those that fail there).\n"
                "# Regenerate with tests/conformance/update_expect.py; reasons are the errors.\n"
                % (args.suite, args.backend, args.suite))
        f.write("".join(l + "\n" for l in lines))
    print("%s: %d cases" % (out, len(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
