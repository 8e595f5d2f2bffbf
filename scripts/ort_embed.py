"""Regenerates src/verify/oracle/ort_script.c (the embedded copy of scripts/ort_oracle.py).

Usage: python3 scripts/ort_embed.py   (from the repository root)
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    with open(os.path.join(ROOT, "scripts", "ort_oracle.py")) as f:
        src = f.read()
    out = ["/* scripts/ort_oracle.py, embedded (the ONNX Runtime server of ort.c); test_verify_ort "
           "checks",
           " * that the two stay the same. Regenerate with scripts/ort_embed.py. */",
           '#include "ort.h"', "", "/* clang-format off */", "const char kiln_ort_script[] ="]
    for line in src.split("\n")[:-1]:
        out.append('    "%s\\n"' % line.replace("\\", "\\\\").replace('"', '\\"'))
    out[-1] += ";"
    out.append("/* clang-format on */")
    with open(os.path.join(ROOT, "src", "verify", "oracle", "ort_script.c"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
