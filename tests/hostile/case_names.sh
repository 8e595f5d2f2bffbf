# Names from a model are data, never code: a model whose every name is hostile (comment
# closers, quotes, backslashes, newlines, control bytes, '..', '/', 5000 bytes, non-ASCII,
# format directives, line splices, names of emitted symbols and files; tests/hostile/models.py
# names and names-more) goes through every emitter: the compiled
# artifact and its report, the standalone C program (built and run, with and without input
# files, with -o), CUDA C with its launch manifest and report, the IR printer and `kiln
# verify`. Nothing runs that the model wrote (no file PWNED appears), nothing is written
# outside the chosen folders, every line-based file keeps one record per line, the outputs
# match the interpreter and the printed IR reads back to the same text.
CC=${CC:-cc}
in=$tmp/in
mkdir -p "$in" "$tmp/cwd"
model inputs "$in" || { bad "models.py inputs failed"; return; }
no_pwned() { # DESCRIPTION
  local found
  found=$(find "$tmp" -name PWNED 2>/dev/null | head -3)
  [ -z "$found" ] && ok || { bad "$1: code from a name ran ($found)"; find "$tmp" -name PWNED -delete; }
}
# lines FILE REGEX DESCRIPTION: every line of FILE matches REGEX (one record per line)
lines() {
  local odd
  odd=$(grep -vcE -- "$2" "$1")
  [ "$odd" -eq 0 ] && ok || { bad "$3: $odd lines of $1 are not records"; grep -vE -- "$2" "$1" | head -3; }
}
cd "$tmp/cwd" || return # whatever ran, it ran here
for run in "names 0" "names 1" "names 2" "names 3" "names-more 0" "names-more 1" "names-more 2"; do
  kind=${run% *} seed=${run#* }
  w=$tmp/$kind$seed m=$tmp/$kind$seed/names.onnx
  mkdir -p "$w/o/a/b"
  model "$kind" "$m" --seed "$seed" || { bad "$run: models.py failed"; continue; }
  seed="$kind $seed" # names the run in the messages below
  # the artifact, its report, the standalone sources
  expect 0 "seed $seed: compile -o --emit-c" "$kiln" compile "$m" -o "$w/art" --emit-c "$w/sa" --report
  no_pwned "seed $seed: compile"
  lines "$w/art/report.txt" "^(backend cpu: |graph '|kernels: |  kernel |  fallback |schedules:$|  k[0-9]+_[A-Za-z0-9_]* [a-z_]+=|memory: |compile time: )" \
    "seed $seed: report.txt"
  mapfile -d '' args < <(model expect-args "$m" "$w/o/a/b" "$in/good.npy")
  # the standalone program: builds, runs, writes its outputs only inside -o, right
  if (cd "$w/sa" && $CC -std=c11 -O1 main.c model.c -lm -o prog) >"$tmp/out" 2>&1; then
    ok
    expect 0 "seed $seed: standalone without inputs" "$w/sa/prog" -w "$w/sa/model.bin"
    expect 0 "seed $seed: standalone with an input and -o" "$w/sa/prog" -w "$w/sa/model.bin" \
      -o "$w/o/a/b" "$in/good.npy"
    no_pwned "seed $seed: standalone"
    grep -q $'\x1b' "$tmp/out" && bad "seed $seed: a name wrote a terminal escape" || ok
    expect 0 "seed $seed: standalone outputs match the interpreter" "$kiln" run "$m" "${args[@]}" \
      --rtol 1e-6 --atol 1e-6
    expect 0 "seed $seed: the artifact agrees" "$kiln" run "$w/art" "${args[@]}" --rtol 1e-6 --atol 1e-6
    [ "$(find "$w/o" -type f | wc -l)" -eq 2 ] && [ "$(ls -A "$w/o/a/b" | wc -l)" -eq 2 ] && ok ||
      { bad "seed $seed: files outside -o or extra files:"; find "$w/o" | head; }
    [ -z "$(ls -A "$tmp/cwd")" ] && ok || bad "seed $seed: the standalone program wrote into its cwd"
    expect 2 "seed $seed: standalone rejects an i32 input" "$w/sa/prog" -w "$w/sa/model.bin" \
      "$in/i32.npy"
  else
    bad "seed $seed: the standalone C does not build"; head -20 "$tmp/out"
  fi
  # CUDA C: the manifest and report keep one record per line; the source compiles
  expect 0 "seed $seed: --emit-cuda" "$kiln" compile "$m" --emit-cuda "$w/cu"
  no_pwned "seed $seed: emit-cuda"
  lines "$w/cu/launch.txt" '^(# |step [0-9]+ )' "seed $seed: launch.txt"
  sed '/^NVRTC/,$d' "$w/cu/report.txt" >"$w/cu/report_records.txt" # NVRTC's own log may follow
  lines "$w/cu/report_records.txt" '^(CUDA kernels: |steps: |  [a-z ]+ k[0-9]+_[A-Za-z0-9_]* \(|  fallback |schedules:$|  k[0-9]+_[A-Za-z0-9_]* [a-z_]+=|time: )' \
    "seed $seed: CUDA report.txt"
  if command -v nvcc >/dev/null 2>&1; then
    # model.cu is written for NVRTC (its own fixed-width typedefs); nvcc gets <stdint.h>'s
    { echo '#include <stdint.h>'
      grep -vE '^(typedef (signed |unsigned )?(long long|int|short|char) u?int(8|16|32|64)_t;|#define U?INT64_(C\(x\)|MIN) .*)$' "$w/cu/model.cu"
    } >"$w/cu/check.cu"
    expect 0 "seed $seed: nvcc compiles model.cu" nvcc -c --fmad=false "$w/cu/check.cu" -o "$w/cu/check.o"
    no_pwned "seed $seed: nvcc"
  elif [ "$seed" = "names 0" ]; then
    echo "SKIPPED nvcc compile check of model.cu: nvcc is not on PATH"
  fi
  # the IR printer: the text reads back to the same text
  expect 0 "seed $seed: print" "$kiln" print "$m"
  cp "$tmp/out" "$w/p1.kiln"
  expect 0 "seed $seed: print the printed IR" "$kiln" print "$w/p1.kiln"
  expect_same "$w/p1.kiln" "$tmp/out" "seed $seed: printed IR round-trips"
  # verify runs every layer on the hostile names; a case folder, if any, stays in --repro
  expect 0 "seed $seed: verify" "$kiln" verify "$m" -q --repro "$w/case"
  no_pwned "seed $seed: verify"
  [ -z "$(ls -A "$tmp/cwd")" ] && ok || bad "seed $seed: verify wrote into its cwd"
done
cd "$tmp" || true

# JSON outputs stay valid JSON whatever the names and paths hold
model names "$tmp/we\"ird\\.onnx" --seed 0
for c in "info --json" "bench --json --iters 2 --warmup 0"; do
  expect 0 "$c on hostile names" "$kiln" $c "$tmp/we\"ird\\.onnx"
  "$PYTHON" -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/out" && ok || bad "$c: not valid JSON"
done
