#!/usr/bin/env bash
# kiln fuzz --merge: shards of one campaign run as separate processes and merged give the
# counts of the unsharded campaign, and the merged summary is the sum of the shards'; failures
# are united by signature (counts summed, earliest graph and its case folder kept), cells
# summed, edge maps by maximum; a malformed or truncated fuzz.json is exit 2 naming the file.
#   tests/cli/test_fuzz_merge.sh KILN
kiln=$1 passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL $*"; }
# json FILE EXPR: prints EXPR evaluated on the parsed file (d)
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ---- a real campaign: 2 shards against the unsharded run ----
# (policy uniform: graph j is the same whatever ran before, so the shards together are exactly
# the unsharded campaign; under the bandit each shard steers its own corpus)
common=(--seed 5 --backend none -q --max-nodes 6 --policy uniform)
"$kiln" fuzz "${common[@]}" --count 8 --shard 0/2 --out "$tmp/s0" >/dev/null || bad "shard 0 failed"
"$kiln" fuzz "${common[@]}" --count 8 --shard 1/2 --out "$tmp/s1" >/dev/null || bad "shard 1 failed"
"$kiln" fuzz "${common[@]}" --count 16 --out "$tmp/all" >/dev/null || bad "unsharded run failed"
for d in s0 s1 all; do [ -f "$tmp/$d/fuzz.json" ] && ok || bad "$d/fuzz.json not written"; done
"$kiln" fuzz --merge "$tmp/s0" "$tmp/s1" --out "$tmp/m" >"$tmp/out" 2>"$tmp/err" && ok ||
  { bad "merge exit $?"; cat "$tmp/err"; }
grep -q "^fuzz: shards 0,1 of 2 (seed 5): 16 graphs" "$tmp/out" && ok || { bad "merge summary"; cat "$tmp/out"; }
for k in tried valid invalid no_inputs; do
  a=$(json "$tmp/all/fuzz.json" "d['graphs']['$k']") m=$(json "$tmp/m/fuzz.json" "d['graphs']['$k']")
  [ "$a" = "$m" ] && ok || bad "merged $k $m, unsharded $a"
done
[ "$(json "$tmp/m/fuzz.json" "d['graphs']['tried']")" = 16 ] && ok || bad "merged tried is not 16"
python3 - "$tmp/s0/fuzz.json" "$tmp/s1/fuzz.json" "$tmp/m/fuzz.json" <<'PY' && ok || bad "merged is not the sum of the shards"
import json, sys
a, b, m = (json.load(open(p)) for p in sys.argv[1:])
for k in a["graphs"]:
    assert m["graphs"][k] == a["graphs"][k] + b["graphs"][k], k
assert m["parts"] == [0, 1] and m["shard"] == -1 and m["shards"] == 2 and m["seed"] == 5
assert abs(m["seconds"] - a["seconds"] - b["seconds"]) < 0.01
# a coverage build records the compiler's edges: the merged map is the maximum of the shards'
def edges(d):
    e = d["edges"] or ""
    return {int(e[k:k + 4], 16): int(e[k + 4:k + 6], 16) for k in range(0, len(e), 6)}
assert (m["edges"] is None) == (a["edges"] is None)
if a["edges"] is not None:
    ea, eb = edges(a), edges(b)
    assert edges(m) == {k: max(ea.get(k, 0), eb.get(k, 0)) for k in set(ea) | set(eb)}
    assert len(edges(m)) > 100
PY
# In a coverage build the edge ids must not depend on where the process was loaded (address
# space randomisation), or the maps of two shard processes could not be merged: the same
# campaign run twice gives the same map.
if [ "$(json "$tmp/s0/fuzz.json" "d['edges'] is None")" = False ]; then
  "$kiln" fuzz "${common[@]}" --count 8 --shard 0/2 --out "$tmp/s0again" >/dev/null
  [ "$(json "$tmp/s0/fuzz.json" "d['edges']")" = "$(json "$tmp/s0again/fuzz.json" "d['edges']")" ] &&
    ok || bad "the edge map of one campaign differs between two processes"
else
  echo "SKIPPED edge map checks: not a KILN_COVERAGE build (fuzz.json has no edges)"
fi
"$kiln" fuzz --merge "$tmp/s0" "$tmp/s0" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "appears twice" "$tmp/err" && ok || bad "a shard merged twice is not refused"
"$kiln" fuzz --merge "$tmp/s0" "$tmp/s1" --out "$tmp/s1/" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "one of the folders merged" "$tmp/err" && [ "$(json "$tmp/s1/fuzz.json" "d['shard']")" = 1 ] &&
  ok || bad "--out into a merged folder is not refused"
"$kiln" fuzz --seed 6 --backend none -q --count 2 --shard 1/2 --out "$tmp/other" >/dev/null
"$kiln" fuzz --merge "$tmp/s0" "$tmp/other" >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "another campaign" "$tmp/err" && ok || bad "another seed is not refused"

# ---- failures, cells and edges: written by hand (a clean compiler finds nothing) ----
summary() { # summary DIR SHARD FAILURES CELLS EDGES
  mkdir -p "$1"
  cat >"$1/fuzz.json" <<JSON
{"format": "kiln-fuzz-summary", "version": 1, "seed": 9, "shard": $2, "shards": 2,
 "seconds": 1.5, "graphs": {"tried": 10, "valid": 9, "invalid": 0, "no_inputs": 1,
 "runner_errors": 0, "compiled": 3}, "failures": [$3], "cells": {$4}, "edges": $5}
JSON
}
summary "$tmp/f0" 0 '{"signature": "cpu|Relu|mismatch", "count": 2, "dir": "aaa", "first_graph": 4},
  {"signature": "tile|Add|\u00e9", "count": 1, "dir": "bbb", "first_graph": 6}' \
  '"op:Relu|f32": 3, "op:Add|i8": 1' '"000102ffff05"'
summary "$tmp/f1" 1 '{"signature": "cpu|Relu|mismatch", "count": 3, "dir": "aaa", "first_graph": 1},
  {"signature": "cpu|Conv|x", "count": 1, "dir": "ccc", "first_graph": 3}' \
  '"op:Relu|f32": 4, "op:Conv|auto_pad=SAME_UPPER|f32": 2' '"000107001001"'
mkdir -p "$tmp/f0/aaa" "$tmp/f0/bbb" "$tmp/f1/aaa/reduced" "$tmp/f1/ccc"
echo shard0 >"$tmp/f0/aaa/case.txt"; echo b >"$tmp/f0/bbb/case.txt"
echo shard1 >"$tmp/f1/aaa/case.txt"; echo r >"$tmp/f1/aaa/reduced/case.txt"
"$kiln" fuzz --merge "$tmp/f0" "$tmp/f1" --out "$tmp/fm" >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] && ok || { bad "merge with failures: exit not 1"; cat "$tmp/err"; }
grep -q "^failures: 3 signatures" "$tmp/out" && grep -q "cpu|Relu|mismatch  x5  .*fm/aaa (first: graph 1)" "$tmp/out" &&
  grep -q "^compiler edges reached: 3 of 65536" "$tmp/out" && ok || { bad "merged failures printed"; cat "$tmp/out"; }
python3 - "$tmp/fm/fuzz.json" <<'PY' && ok || bad "merged failures, cells or edges"
import json, sys
m = json.load(open(sys.argv[1]))
f = {x["signature"]: x for x in m["failures"]}
assert f["cpu|Relu|mismatch"]["count"] == 5 and f["cpu|Relu|mismatch"]["first_graph"] == 1, f
assert f["tile|Add|\u00e9"]["count"] == 1 and f["tile|Add|\u00e9"]["dir"] == "bbb", f
assert m["cells"] == {"op:Relu|f32": 7, "op:Add|i8": 1, "op:Conv|auto_pad=SAME_UPPER|f32": 2}, m["cells"]
assert m["edges"] == "000107001001ffff05", m["edges"]
assert m["graphs"]["tried"] == 20 and m["graphs"]["compiled"] == 6
assert [x["first_graph"] for x in m["failures"]] == [1, 3, 6], "not in the order of first graphs"
PY
[ "$(cat "$tmp/fm/aaa/case.txt")" = shard1 ] && [ -f "$tmp/fm/aaa/reduced/case.txt" ] &&
  [ "$(cat "$tmp/fm/bbb/case.txt")" = b ] && ok || bad "case folders not copied from the earliest graph's shard"
# the merged folder merges again (as one part holding shards 0 and 1)
"$kiln" fuzz --merge "$tmp/fm" -q >/dev/null 2>"$tmp/err"; [ $? = 1 ] && ok || { bad "re-merge"; cat "$tmp/err"; }

# ---- bad files: exit 2, the file named, no crash ----
expect_bad() { # expect_bad WHAT CONTENT
  mkdir -p "$tmp/bad"
  printf '%s' "$2" >"$tmp/bad/fuzz.json"
  "$kiln" fuzz --merge "$tmp/s0" "$tmp/bad" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc = 2 ] && grep -q "bad/fuzz.json" "$tmp/err" && ok || { bad "$1: exit $rc"; cat "$tmp/err"; }
}
full=$(cat "$tmp/s1/fuzz.json")
expect_bad "truncated" "${full:0:60}"
expect_bad "truncated in a string" "${full:0:20}"
expect_bad "empty" ""
expect_bad "not json" "garbage"
expect_bad "another format" '{"format": "x", "version": 1}'
expect_bad "missing keys" '{"format": "kiln-fuzz-summary", "version": 1}'
expect_bad "a negative count" "${full/\"tried\": 8/\"tried\": -8}"
expect_bad "a dir with a slash" '{"format": "kiln-fuzz-summary", "version": 1, "seed": 5, "shard": 1, "shards": 2, "graphs": {}, "failures": [{"signature": "s", "count": 1, "dir": "../x", "first_graph": 0}]}'
expect_bad "bad edges" "${full%\"edges\"*}\"edges\": \"00zz01\"}"
expect_bad "edges out of order" "${full%\"edges\"*}\"edges\": \"000201000101\"}"
expect_bad "deep nesting" "{\"format\": \"kiln-fuzz-summary\", \"x\": $(printf '[%.0s' {1..5000})"
grep -q "nested too deep" "$tmp/err" && ok || bad "deep nesting message"
# every truncation of a summary with failures, cells and edges, and random byte changes:
# exit 2 naming the file for a truncation, and never a crash (a signal) for any change
python3 - "$kiln" "$tmp/f0/fuzz.json" "$tmp" <<'PY' && ok || bad "truncated or changed summaries"
import os, random, subprocess, sys
kiln, good, tmp = sys.argv[1:]
data = open(good, "rb").read()
d = os.path.join(tmp, "cut")
os.makedirs(d, exist_ok=True)
def run(b):
    with open(os.path.join(d, "fuzz.json"), "wb") as f:
        f.write(b)
    return subprocess.run([kiln, "fuzz", "--merge", d], capture_output=True, text=True)
for n in range(data.rindex(b"}")):
    r = run(data[:n])
    assert r.returncode == 2 and "cut/fuzz.json" in r.stderr, (n, r.returncode, r.stderr)
rng = random.Random(12)
for _ in range(300):
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        b[rng.randrange(len(b))] = rng.choice(b'{}[]",:\\0123456789-eu\x00\xff ')
    r = run(bytes(b))
    assert r.returncode in (0, 1, 2), (bytes(b), r.returncode, r.stderr)
PY
rm -rf "$tmp/bad"; mkdir "$tmp/bad"
"$kiln" fuzz --merge "$tmp/bad" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "bad/fuzz.json" "$tmp/err" && ok || bad "a missing fuzz.json"
"$kiln" fuzz --merge >/dev/null 2>&1; [ $? = 2 ] && ok || bad "--merge without folders"
"$kiln" fuzz --merge --help | grep -q "usage: kiln fuzz --merge" && ok || bad "--merge --help"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
