#!/usr/bin/env python3
"""Line and branch coverage of Kiln's sources from the gcov counters of a KILN_COVERAGE build.

    scripts/coverage_report.py --build build-coverage --src src --json OUT.json [--campaign F]

Runs gcc's own gcov (`gcov --json-format --stdout`, no other tool, no network) on every .gcno
of the stage libraries (kiln_<stage>), so that a source file that never ran counts with all
its lines uncovered. Prints, for each folder of src/, line and branch coverage, then the 15
lowest-covered functions of at least 10 lines of the compiler folders; writes the same figures
as JSON. A line shared by several objects (an inline function of a header) counts once, with
its counts summed. A branch is covered when it was taken at least once (gcov's "taken").
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

COMPILER = ("passes", "lower", "tile", "codegen", "runtime")
MIN_FUNCTION_LINES = 10
LOWEST = 15


def gcno_files(build):
    out = []
    base = os.path.join(os.path.abspath(build), "CMakeFiles")
    for d in sorted(os.listdir(base)):
        if not (d.startswith("kiln_") and d.endswith(".dir")) or d == "kiln_cli.dir":
            continue
        for root, _, files in os.walk(os.path.join(base, d)):
            out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".gcno")]
    return out


def run_gcov(files, gcov):
    """One JSON document per object file, from gcov's stdout (in chunks of 40 files)."""
    docs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(0, len(files), 40):
            r = subprocess.run([gcov, "--json-format", "--stdout", "--branch-probabilities"]
                               + files[i:i + 40], cwd=tmp, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("coverage_report: gcov failed: " + r.stderr.strip()[-2000:])
            docs += [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    return docs


def collect(docs, src):
    """{file: {line: [count, [branch counts], function]}} for the files under src."""
    files = {}
    src = os.path.realpath(src) + os.sep
    for doc in docs:
        cwd = doc.get("current_working_directory", "")
        for f in doc["files"]:
            path = os.path.realpath(os.path.join(cwd, f["file"]))
            if not path.startswith(src):
                continue
            lines = files.setdefault(path[len(src):], {})
            for ln in f["lines"]:
                entry = lines.setdefault(ln["line_number"], [0, [], ln.get("function_name", "")])
                entry[0] += ln["count"]
                counts = [b["count"] for b in ln["branches"]]
                if len(entry[1]) < len(counts):
                    entry[1] += [0] * (len(counts) - len(entry[1]))
                for k, c in enumerate(counts):
                    entry[1][k] += c
    return files


def ratio(hit, total):
    return round(100.0 * hit / total, 1) if total else None


def folder_figures(files):
    folders = {}
    for path, lines in files.items():
        folder = "src/" + path.split("/")[0] if "/" in path else "src"
        f = folders.setdefault(folder, {"lines": 0, "lines_hit": 0, "branches": 0,
                                        "branches_hit": 0, "files": 0})
        f["files"] += 1
        for count, branches, _ in lines.values():
            f["lines"] += 1
            f["lines_hit"] += count > 0
            f["branches"] += len(branches)
            f["branches_hit"] += sum(1 for b in branches if b > 0)
    for f in folders.values():
        f["line_pct"] = ratio(f["lines_hit"], f["lines"])
        f["branch_pct"] = ratio(f["branches_hit"], f["branches"])
    return dict(sorted(folders.items()))


def lowest_functions(files):
    funcs = {}
    for path, lines in files.items():
        if path.split("/")[0] not in COMPILER:
            continue
        for line, (count, _, fn) in lines.items():
            f = funcs.setdefault((path, fn), {"file": "src/" + path, "function": fn,
                                              "line": line, "lines": 0, "lines_hit": 0})
            f["line"] = min(f["line"], line)
            f["lines"] += 1
            f["lines_hit"] += count > 0
    big = [f for f in funcs.values() if f["lines"] >= MIN_FUNCTION_LINES and f["function"]]
    for f in big:
        f["line_pct"] = ratio(f["lines_hit"], f["lines"])
    big.sort(key=lambda f: (f["line_pct"], -f["lines"], f["file"], f["line"]))
    return big[:LOWEST]


def fmt_pct(p):
    return "   -  " if p is None else "%5.1f%%" % p


def print_report(folders, lowest, title):
    print(title)
    print("%-16s %7s %17s %8s %17s" % ("folder", "lines", "(hit/total)", "branches",
                                       "(hit/total)"))
    for name, f in folders.items():
        print("%-16s %7s %17s %8s %17s" % (
            name, fmt_pct(f["line_pct"]), "%d/%d" % (f["lines_hit"], f["lines"]),
            fmt_pct(f["branch_pct"]), "%d/%d" % (f["branches_hit"], f["branches"])))
    print("\nlowest-covered functions of %s (at least %d lines):"
          % (", ".join("src/" + c for c in COMPILER), MIN_FUNCTION_LINES))
    for f in lowest:
        print("  %6s  %4d/%-4d  %s:%d %s" % (fmt_pct(f["line_pct"]), f["lines_hit"], f["lines"],
                                            f["file"], f["line"], f["function"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the KILN_COVERAGE build folder")
    ap.add_argument("--src", required=True, help="the src/ folder of the checkout")
    ap.add_argument("--json", required=True, help="where to write the figures")
    ap.add_argument("--campaign", help="the merged fuzz.json of the campaign (copied in)")
    ap.add_argument("--title", default="coverage")
    ap.add_argument("--gcov", default=os.environ.get("GCOV", "gcov"))
    a = ap.parse_args()
    gcnos = gcno_files(a.build)
    if not gcnos:
        sys.exit("coverage_report: no .gcno under %s: not a KILN_COVERAGE build" % a.build)
    files = collect(run_gcov(gcnos, a.gcov), a.src)
    folders = folder_figures(files)
    lowest = lowest_functions(files)
    print_report(folders, lowest, a.title)
    doc = {"title": a.title, "folders": folders, "lowest_functions": lowest}
    if a.campaign and os.path.exists(a.campaign):
        with open(a.campaign) as f:
            c = json.load(f)
        doc["campaign"] = {k: c.get(k) for k in ("seed", "shards", "parts", "seconds", "graphs")}
        doc["campaign"]["failures"] = len(c.get("failures", []))
    tmp = a.json + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.json)
    print("\nwritten: %s" % a.json)


if __name__ == "__main__":
    main()
