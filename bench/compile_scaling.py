#!/usr/bin/env python3
"""Compile-time scaling: `kiln compile` on generated transformer-style graphs of 2k..20k nodes.

For each size it writes the model (scripts/gen_transformer_graph.py), compiles it once to warm
the kernel cache (the layers repeat, so a handful of unique kernels), then REPEAT more times,
and prints the compile time without the C compiler (passes + lowering + codegen + plan +
load, from the --report stage times; the best of the runs), the C compiler time apart, the
peak resident memory of the compile process (wait4's ru_maxrss, the largest run), and per
step the growth of each against the growth of the node count: time and memory ratios
scaled to one doubling of N, 2.0 for linear growth, 4.0 for quadratic. No pass or fail.

usage: compile_scaling.py --kiln build/kiln [--sizes 2000,5000,10000,20000] [--repeat 3]
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "scripts", "gen_transformer_graph.py")
STAGES = re.compile(r"compile time: [0-9.]+ s \((.*)\)")


def stage_times(kiln, model, env):
    """{stage: seconds} from the report of one `kiln compile --report`."""
    proc = subprocess.run([kiln, "compile", model, "--report", "--threads", "1"],
                          capture_output=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"kiln compile {model} failed ({proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
    m = STAGES.search(proc.stdout.decode())
    if not m:
        sys.exit(f"no 'compile time:' line in the report of {model}")
    return {k: float(v) for k, v in (p.split() for p in m.group(1).split(", "))}


def measure(kiln, model, repeat, env):
    """(best compile time without the C compiler, that run's C compiler time)."""
    stage_times(kiln, model, env)  # warms the kernel cache
    runs = []
    for _ in range(repeat):
        stages = stage_times(kiln, model, env)
        runs.append((sum(v for k, v in stages.items() if k != "cc"), stages.get("cc", 0.0)))
    return min(runs)


def peak_rss_mib(kiln, model, env):
    """Peak RSS of one compile, from the kernel's accounting of the finished child."""
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execve(kiln, [kiln, "compile", model, "--threads", "1"], env)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"kiln compile {model} failed (status {status})")
    return usage.ru_maxrss / 1024.0


def per_doubling(a, b, na, nb):
    """The ratio b/a scaled to one doubling of the size (2.0: linear, 4.0: quadratic)."""
    if a <= 0 or b <= 0:
        return float("nan")
    return 2.0 ** (math.log(b / a) / math.log(nb / na))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--sizes", default="2000,5000,10000,20000")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    kiln = os.path.abspath(a.kiln)
    with tempfile.TemporaryDirectory(prefix="kiln-bench-compile-") as tmp:
        env = dict(os.environ, KILN_CACHE_DIR=os.path.join(tmp, "cache"))
        rows = []
        for n in sizes:
            model = os.path.join(tmp, f"t{n}.onnx")
            subprocess.run([sys.executable, GEN, str(n), model], check=True)
            t, cc = measure(kiln, model, a.repeat, env)
            rss = peak_rss_mib(kiln, model, env)
            rows.append((n, t, cc, rss))
    print(f"{'nodes':>7} {'compile s':>10} {'(cc s)':>8} {'peak MiB':>9} "
          f"{'time/doubling':>14} {'mem/doubling':>13}")
    for i, (n, t, cc, rss) in enumerate(rows):
        tg = mg = ""
        if i:
            p = rows[i - 1]
            tg = f"{per_doubling(p[1], t, p[0], n):.2f}"
            mg = f"{per_doubling(p[3], rss, p[0], n):.2f}"
        print(f"{n:>7} {t:>10.3f} {cc:>8.3f} {rss:>9.1f} {tg:>14} {mg:>13}")
    print("compile s: passes + lowering + codegen + plan + load (best run; the C compiler apart);"
          " per doubling: 2.00 linear, 4.00 quadratic")


if __name__ == "__main__":
    main()
