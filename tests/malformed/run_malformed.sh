#!/usr/bin/env bash
# Runs the malformed-model corpus through `kiln info`, `kiln print` and `kiln run`.
#
#   tests/malformed/run_malformed.sh BUILD_DIR OUT_DIR [CASE_GLOB]
#
# Generates the corpus into OUT_DIR (with $PYTHON, default python3, which needs the
# onnx package), then checks every case against its expect.txt:
#   ok       info, print and run exit 0
#   load     info, print and run all exit 2 (bad input)
#   check    info and print exit 0 or 2 (the same); run exits 2
#   run      info and print exit 0 or 2 (the same); run exits 1 or 2
#   nocrash  every command exits 0, 1 or 2
# and, for every case, that no command crashed (signal, exit >= 128), hung (timeout
# $KILN_TIMEOUT seconds, default 30) or printed a sanitizer report. Prints one line
# per failing case and ends with "N passed, N failed". Stderr of every command is
# kept in OUT_DIR/_logs/. Environment: JOBS (parallel cases, default nproc),
# SKIP_GEN=1 (reuse an existing corpus).
set -u

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [CASE_GLOB]" >&2
  exit 2
fi
build=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" || exit 2
out=$(cd "$2" && pwd)
glob=${3:-*}
kiln="$build/kiln"
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$kiln" ]; then
  echo "$0: $kiln not found" >&2
  exit 2
fi

if [ "${SKIP_GEN:-0}" != 1 ]; then
  "${PYTHON:-python3}" "$here/gen_malformed.py" --out "$out/corpus" || exit 2
fi
rm -rf "$out/_logs" "$out/_runs" "$out/_results"
mkdir -p "$out/_logs" "$out/_runs" "$out/_results"

# Sanitizer deaths exit 99 (UBSan and ASan default to 1, which looks like "work failed");
# allocations over 8 GiB fail (return NULL) instead of aborting.
export ASAN_OPTIONS="allocator_may_return_null=1:max_allocation_size_mb=8192:detect_leaks=1:${ASAN_OPTIONS:-}:exitcode=99"
export UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}:exitcode=99"
export KILN_TIMEOUT=${KILN_TIMEOUT:-30}

# check_case CASE_DIR: runs the three commands, writes one result line to _results/CASE.
check_case() {
  local dir=$1 case expect rc_info rc_print rc_run why="" log args=() name file
  case=$(basename "$dir")
  expect=$(cat "$dir/expect.txt")
  log="$OUT/_logs/$case"
  timeout -k 5 "$KILN_TIMEOUT" "$KILN" info "$dir/model.onnx" >/dev/null 2>"$log.info.err"
  rc_info=$?
  timeout -k 5 "$KILN_TIMEOUT" "$KILN" print "$dir/model.onnx" >/dev/null 2>"$log.print.err"
  rc_print=$?
  if [ -f "$dir/inputs.txt" ]; then
    while IFS=$'\t' read -r name file; do
      args+=(--input "$name=$dir/$file")
    done <"$dir/inputs.txt"
  fi
  timeout -k 5 "$KILN_TIMEOUT" "$KILN" run "$dir/model.onnx" "${args[@]}" \
    --output-dir "$OUT/_runs/$case" >/dev/null 2>"$log.run.err"
  rc_run=$?
  rm -rf "$OUT/_runs/$case"

  local cmd rc
  for cmd in info print run; do
    eval "rc=\$rc_$cmd"
    if grep -qE 'Sanitizer|runtime error:' "$log.$cmd.err"; then
      why="$why $cmd: sanitizer report;"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      why="$why $cmd: timeout;"
    elif [ "$rc" -ge 128 ]; then
      why="$why $cmd: killed by signal $((rc - 128));"
    elif [ "$rc" -gt 2 ]; then
      why="$why $cmd: exit $rc;"
    fi
  done
  if [ -z "$why" ]; then
    case $expect in
    ok) [ "$rc_info$rc_print$rc_run" = 000 ] || why="expected 0 from all" ;;
    load) [ "$rc_info$rc_print$rc_run" = 222 ] || why="expected exit 2 from info, print and run" ;;
    check)
      { [ "$rc_info" = 0 ] || [ "$rc_info" = 2 ]; } && [ "$rc_print" = "$rc_info" ] &&
        [ "$rc_run" = 2 ] || why="expected run to exit 2 (info/print 0 or 2)" ;;
    run)
      { [ "$rc_info" = 0 ] || [ "$rc_info" = 2 ]; } && [ "$rc_print" = "$rc_info" ] &&
        { [ "$rc_run" = 1 ] || [ "$rc_run" = 2 ]; } || why="expected run to exit 1 or 2" ;;
    nocrash) ;;
    esac
  fi
  if [ -n "$why" ]; then
    local first
    first=$(cat "$log.info.err" "$log.print.err" "$log.run.err" | grep -m1 -E 'Sanitizer|runtime error:|.' | cut -c1-200)
    printf 'FAIL %s [%s] info=%s print=%s run=%s: %s | %s | %s\n' "$case" "$expect" \
      "$rc_info" "$rc_print" "$rc_run" "$why" "$(cat "$dir/desc.txt")" "$first" \
      >"$OUT/_results/$case"
  else
    printf 'pass %s\n' "$case" >"$OUT/_results/$case"
  fi
}
export -f check_case
export OUT="$out" KILN="$kiln"

jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
find "$out/corpus" -mindepth 1 -maxdepth 1 -type d -name "$glob" -print0 | sort -z |
  xargs -0 -P "$jobs" -I{} bash -c 'check_case "$1"' _ {}

# Known gaps (tests/malformed/known_gaps.txt, "CASE REASON"): a listed case that fails is
# reported as XFAIL and not counted as failed; a listed case that passes is a failure,
# so that the list shrinks as the gaps are closed.
gaps="$here/known_gaps.txt"
for f in "$out"/_results/*; do
  [ -e "$f" ] || continue
  case_name=$(basename "$f")
  reason=$(grep -E "^$case_name " "$gaps" 2>/dev/null | cut -d' ' -f2-)
  [ -n "$reason" ] || continue
  if grep -q '^FAIL' "$f"; then printf 'xfail %s: known gap: %s\n' "$case_name" "$reason" >"$f"
  else printf 'FAIL %s: passes but is listed in known_gaps.txt\n' "$case_name" >"$f"; fi
done
cat "$out"/_results/* 2>/dev/null | grep -E '^(FAIL|xfail)' | sort
passed=$(cat "$out"/_results/* 2>/dev/null | grep -c '^pass')
failed=$(cat "$out"/_results/* 2>/dev/null | grep -c '^FAIL')
xfail=$(cat "$out"/_results/* 2>/dev/null | grep -c '^xfail')
echo "($xfail known gaps)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
