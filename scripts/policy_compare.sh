#!/usr/bin/env bash
# make fuzz-policy: does the learned policy (a bandit over the ops, rewarded by new coverage,
# with a corpus of mutated genomes) reach more than uniform drawing in the same time?
#
#   POLICY_SECONDS=120 POLICY_SEEDS="1 2 3" bash scripts/policy_compare.sh
#
# Builds build-coverage (as `make coverage` does) so that the compiler's own edges count, then
# for each seed runs `kiln fuzz --policy uniform` and `kiln fuzz --policy bandit` at the same
# time (one core each, same seed, same time) and prints, per run, the graphs tried, the
# compiler edges reached (edge-map entries), the coverage cells reached and the enumerated and
# absent attribute cells of the universe reached; then the totals of each policy and their
# ratio. No pass/fail: a measurement (docs/VERIFY.md "Feedback and the learned policy").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COVERAGE_BUILD:-$root/build-coverage}
seconds=${POLICY_SECONDS:-120}
seeds=${POLICY_SEEDS:-1 2 3}
py=${PYTHON:-python3}
out=$build/policy
cmake -S "$root" -B "$build" -DKILN_COVERAGE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG=-O1 >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target kiln_cli >/dev/null
rm -rf "$out"
mkdir -p "$out"
echo "policy: uniform against bandit, $seconds s each, seeds $seeds (runs in $out)"
for s in $seeds; do
  for p in uniform bandit; do
    "$build/kiln" fuzz --time "$seconds" --seed "$s" --policy "$p" -q --out "$out/$p-$s" \
      >"$out/$p-$s.log" 2>&1 &
  done
  wait || true
done
"$py" - "$out" $seeds <<'PY'
import json, os, re, sys
out, seeds = sys.argv[1], sys.argv[2:]
tot = {}
print(f"{'seed':>5} {'policy':8} {'graphs':>7} {'edges':>7} {'cells':>7} {'universe':>9}")
for s in seeds:
    for p in ("uniform", "bandit"):
        d = json.load(open(os.path.join(out, f"{p}-{s}", "fuzz.json")))
        log = open(os.path.join(out, f"{p}-{s}.log")).read()
        m = re.search(r"attribute cells: (\d+) of (\d+)", log)
        uni = int(m.group(1)) if m else 0
        edges = len(d["edges"]) // 6 if d.get("edges") else 0
        row = (d["graphs"]["tried"], edges, len(d["cells"]), uni)
        t = tot.setdefault(p, [0, 0, 0, 0])
        for i, v in enumerate(row): t[i] += v
        print(f"{s:>5} {p:8} {row[0]:>7} {row[1]:>7} {row[2]:>7} {row[3]:>9}")
u, b = tot["uniform"], tot["bandit"]
print(f"{'all':>5} {'uniform':8} {u[0]:>7} {u[1]:>7} {u[2]:>7} {u[3]:>9}")
print(f"{'all':>5} {'bandit':8} {b[0]:>7} {b[1]:>7} {b[2]:>7} {b[3]:>9}")
r = lambda i: b[i] / u[i] if u[i] else float("nan")
print(f"bandit / uniform: edges {r(1):.3f}, cells {r(2):.3f}, universe cells {r(3):.3f}")
PY
